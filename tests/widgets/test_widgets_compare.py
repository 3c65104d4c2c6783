"""tvmlab.compare: two schedules of one computation, diffed, checked and timed side by side."""
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import ScheduleError


def two_schedules(n=None):
    n = te.var("n") if n is None else n
    A = te.placeholder((n, 33), name="A")
    B = te.compute((n, 33), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s1 = te.create_schedule(B.op)
    s2 = te.create_schedule(B.op)
    f = s2[B].fuse(*B.op.axis)
    fo, fi = s2[B].split(f, factor=8)
    s2[B].vectorize(fi)
    s2[B].parallel(fo)
    return s1, s2, [A, B]


def test_compare_diffs_checks_and_times_both_sides():
    s1, s2, args = two_schedules()
    c = tvm.compare(s1, s2, args, sizes={"n": 100})
    assert len(c.records) == 2 and {r["side"] for r in c.records} == {"A", "B"}
    assert all(r["status"] == "ok" and r["max_abs_error"] is not None for r in c.records)
    assert c.speedup() == pytest.approx(c.records[0]["time_ms"] / c.records[1]["time_ms"])
    ta, tb = c.traces
    assert "fuse" not in ta and "fuse" in tb and "vectorize" in tb
    page = c._repr_html_()
    assert "i.j.fused.outer" in page and "parallel" in page      # the AST3 diff
    assert "data:image/png;base64," in page                       # both benchmarks, one plot
    pts = c.roofline_points()
    assert {p["label"] for p in pts} == {"A", "B"}
    assert pts[0]["intensity"] == pytest.approx(pts[1]["intensity"])   # same flops, same bytes
    assert c.plot_png()[:4] == b"\x89PNG"


def test_compare_without_benchmark_and_bad_input():
    s1, s2, args = two_schedules(n=40)
    c = tvm.compare(s1, s2, args, benchmark=False)
    assert c.records == [] and c.speedup() is None
    assert "AST3: A → B" in c.html()
    with pytest.raises(ScheduleError, match="two different schedules"):
        tvm.compare(s1, s1, args)
    with pytest.raises(ScheduleError, match="schedule from te.create_schedule"):
        tvm.compare(s1, "s2", args)
    A = te.placeholder((4,), name="A")
    Z = te.compute((4,), lambda i: A[i] + 1.0, name="Z")
    with pytest.raises(tvm.TVMLabError, match="not a tensor of this schedule"):
        tvm.compare(s1, te.create_schedule(Z.op), args)
