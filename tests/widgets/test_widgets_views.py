"""The explorer's analysis tabs: Explain, Iteration space, Roofline, A/B, HTML export, sessions."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("graphviz")

import tvmlab  # noqa: E402
from tvmlab import te  # noqa: E402
from tvmlab.errors import ScheduleError, TVMLabError  # noqa: E402

TABS = ["AST1", "AST2", "AST3", "Code", "Benchmark", "Explain", "Iteration space", "Roofline", "A/B"]


def stencil():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + 1.0, name="C")
    return te.create_schedule(C.op), [A, C]


def opened(targets=(), **kw):
    """An explorer three steps in; no code panes unless ``targets`` (each build costs time)."""
    s, args = stencil()
    ex = tvmlab.explore(s, args, targets=list(targets), benchmark=False, sizes={"n": 70}, **kw)
    ex.apply("split", stage="C", axis="i", factor=8)
    ex.apply("compute_at", stage="B", parent="C", axis="i.outer")
    ex.apply("parallel", stage="C", axis="i.outer")
    return ex, args


def test_explain_tab_and_api():
    ex, _ = opened()
    e = ex.explain("B")
    assert "computed at C.i.outer" in str(e) and e.root_ranges["i"] == ("i.outer * 8", "8")
    assert "tvmlab-explain" in ex.explain_view.value
    ex._tabs.selected_index = TABS.index("Explain")
    assert ex.controls["explain_stage"].options == ("B", "C")
    ex.controls["explain_stage"].value = "C"
    assert "Bounds of stage C" in ex.explain_view.value
    ex.controls["explain_axis"].value = "i.inner"
    assert "split i" in ex.explain_view.value
    ex.apply("unroll", stage="C", axis="i.inner")          # the open tab follows the new step
    assert "Bounds of stage C" in ex.explain_view.value
    with pytest.raises(ScheduleError, match="no stage named"):
        ex.explain("Q")


def test_iteration_space_tab():
    ex, _ = opened()
    r = ex.iteration_space({"n": 10})
    tr = r["trace"]
    np.testing.assert_array_equal(tr.owner_map("parallel"), np.indices((10, 10))[0] // 8)
    assert r["kind"] == "parallel" and r["loop"] == "i.outer"
    assert r["cache"]["buffers"]["A"]["iterations"] == 2
    assert ex.iter_view.value.count("data:image/png;base64,") == 2 and "tvmlab-cache" in \
        ex.iter_view.value
    ex.controls["iter_sizes"].value = "n=12"
    ex._tabs.selected_index = TABS.index("Iteration space")
    assert ex.last_iteration_space["trace"].sizes == {"n": 12}
    ex.controls["iter_loop"].value = "i.inner"
    assert ex.last_iteration_space["loop"] == "i.inner"
    ex.controls["iter_sizes"].value = "n=twelve"
    ex.controls["iter_loop"].value = "i.outer"
    assert "not drawn" in ex.iter_view.value and "name=int" in ex.iter_view.value


def test_iteration_space_shows_the_gpu_check():
    """A schedule that binds GPU threads is also run on the simulator: clean here, and a planted race
    (every thread copies into one shared element, then reads it) is named with its threads."""
    A = te.placeholder((32,), name="A")
    B = te.compute((32,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    ex = tvmlab.explore(s, [A, B], targets=[], benchmark=False)
    ex.apply("split", stage="B", axis="i", factor=8)
    ex.apply("bind", stage="B", axis="i.outer", thread="blockIdx.x")
    ex.apply("bind", stage="B", axis="i.inner", thread="threadIdx.x")
    r = ex.iteration_space()
    assert r["gpu"].report.ok and "no race, no divergent barrier" in ex.iter_view.value
    assert "Memory traffic" in ex.iter_view.value and "every global access coalesced" in ex.iter_view.value
    # neighbouring threads 8 elements apart: each uses one word of its sector, and the view says so
    ex2 = tvmlab.explore(te.create_schedule(B.op), [A, B], targets=[], benchmark=False)
    ex2.apply("split", stage="B", axis="i", factor=8)
    ex2.apply("bind", stage="B", axis="i.inner", thread="blockIdx.x")
    ex2.apply("bind", stage="B", axis="i.outer", thread="threadIdx.x")
    assert ex2.iteration_space()["gpu"].report.ok
    assert "12% of each sector used" in ex2.iter_view.value

    from tvmlab.analysis.gpusim import Finding, ScheduleCheck, SimReport
    from tvmlab.widgets.gpu_check_view import block_map, element_map, gpu_check_html
    rep = SimReport("main")
    rep.add(Finding("race", "k0", "S[0] = A[threadIdx.x]", "two write S[0]", "B", 5,
                    (((0, 0, 0), (0, 0, 0)), ((1, 0, 0), (0, 0, 0))), (8, 1, 1)))
    rep.add(Finding("divergent barrier", "k0", "sync", "4 of 8 arrive", None, None, (((0, 0, 0), (0, 0, 0)),),
                    (4, 2, 1), ((0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)),
                    ((0, 1, 0), (1, 1, 0), (2, 1, 0), (3, 1, 0))))
    page = gpu_check_html(ScheduleCheck(rep, {"n": 8}, {"B": np.zeros((2, 4), "float32")}))
    assert "1 race, 1 divergent barrier" in page and page.count("data:image/png;base64,") == 2
    assert "threadIdx=(0,0,0) blockIdx=(0,0,0), threadIdx=(1,0,0) blockIdx=(0,0,0)" in page
    np.testing.assert_array_equal(block_map(rep.findings[1]), [[1, 1, 1, 1], [2, 2, 2, 2]])
    np.testing.assert_array_equal(element_map(rep.findings[0], (2, 4)), [[0, 0, 0, 0], [0, 1, 0, 0]])


def test_roofline_pin_and_compare(monkeypatch):
    monkeypatch.setenv("TVMLAB_BANDWIDTH_GBS", "10")
    monkeypatch.setenv("TVMLAB_PEAK_GFLOPS", "100")
    ex, _ = opened(["llvm"])
    assert ex.roofline() == [] and "no measured step" in ex.roofline_view.value
    ex.controls["measure"].click()
    ex.wait()
    pts = ex.roofline()
    assert len(pts) == 1 and pts[0]["label"] == "3" and pts[0]["flops"] == 2 * 70 * 70
    assert pts[0]["bytes"] == 2 * 70 * 70 * 4 and pts[0]["gflops"] > 0
    # B, a tile computed at C.i.outer, stays in cache: it moves no bytes to memory
    assert pts[0]["bytes_by_buffer"] == {"A": 70 * 70 * 4, "B": 0, "C": 70 * 70 * 4}
    assert "distinct bytes per buffer" in ex.roofline_view.value and "A 19 KiB" in \
        ex.roofline_view.value
    assert "data:image/png;base64," in ex.roofline_view.value
    with pytest.raises(ScheduleError, match="nothing is pinned"):
        ex.compare_pinned()
    ex.controls["pin"].click()
    ex.apply("vectorize", stage="C", axis="j")
    c = ex.compare_pinned(benchmark=False)
    assert c.labels == ("pinned (step 3)", "current (step 4)")
    assert "tvmlab-compare" in ex.compare_view.value and "vectorize" in ex.compare_view.value


def test_export_html_is_standalone(tmp_path):
    ex, _ = opened()
    path = tmp_path / "x.html"
    page = ex.export_html(str(path))
    assert path.read_text(encoding="utf-8") == page
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert not re.search(r"(src|href)=\"https?://", page)         # nothing fetched
    for title in ("Trace", "Stages", "AST1", "AST2", "AST3", "Code", "Benchmark", "Explain",
                  "Iteration space", "Roofline", "Session"):
        assert f'data-title="{title}' in page, title
    assert "s[C].parallel" in page or "parallel(" in page
    assert "data:image/png;base64," in page and "tvmlab-session" in page


def test_save_and_load_session(tmp_path):
    ex, args = opened()
    ex.pin()
    path = tmp_path / "s.json"
    text = ex.save_session(str(path))
    data = json.loads(text)
    assert data["format"] == "tvmlab-session" and len(data["steps"]) == 3
    assert data["targets"] == [] and data["sizes"] == {"n": 70} and len(data["pinned"]) == 3
    ex2 = tvmlab.explore(tvmlab.te.create_schedule(args[-1].op), args, targets=[],
                         benchmark=False)
    ex2.load_session(str(path))
    assert ex2.trace.steps == ex.trace.steps and ex2.text("AST3") == ex.text("AST3")
    assert ex2.analysis_panel.pinned == data["pinned"]
    before = list(ex2.trace.steps)
    bad = dict(data, steps=data["steps"] + [{"primitive": "split", "stage": "C", "axis": "zz",
                                              "factor": 2}])
    with pytest.raises(TVMLabError):
        ex2.load_session(bad)
    assert list(ex2.trace.steps) == before and "nothing was changed" in ex2._status.value
    with pytest.raises(ScheduleError, match="this is not"):
        ex2.load_session("{broken")
    with pytest.raises(ScheduleError, match="format 'tvmlab-session'"):
        ex2.load_session({"steps": []})
    with pytest.raises(ScheduleError, match="saved for arguments"):
        ex2.load_session(dict(data, args=["X", "Y"]))
    with pytest.raises(ScheduleError, match="no session file"):
        ex2.load_session(str(tmp_path / "missing.json"))


def test_new_in_this_step_marks_only_changed_statements_and_layouts_are_cached():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    ex = tvmlab.explore(te.create_schedule(C.op), [A, C], targets=[], benchmark=False)
    ex.apply("split", stage="C", axis="i", factor=8)
    ex.apply("vectorize", stage="C", axis="i.inner")
    src = ex.graph("AST2").source
    outlined = [line for line in src.splitlines() if "penwidth" in line]
    # only the loop whose kind changed; the guard and the store inside it are unchanged
    assert len(outlined) == 1 and "i.inner" in outlined[0] and "vectorized" in outlined[0]
    assert ex.wait_graphs()
    st = ex.session.current
    first = ex.session.svg("AST2")
    if first[0] is not None:
        ex.undo()
        ex.redo()
        assert ex.session.current is st and ex.session.svg("AST2") is first   # no new layout


def test_benchmark_runs_in_a_worker_process_and_newer_steps_cancel_older():
    import os
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    ex = tvmlab.explore(te.create_schedule(C.op), [A, B, C], sizes={"n": 1001})
    ex.apply("split", stage="C", axis="i", factor=64)     # step 0 is still starting: cancelled
    ex.apply("vectorize", stage="C", axis="i.inner")
    recs = ex.benchmarks
    assert [r["step"] for r in recs] == [2] and recs[0]["status"] == "ok", recs
    assert recs[0]["worker_pid"] != os.getpid()
    assert ex.bench_panel.benchmarker.cancelled >= 2
    assert ex.last_timings["code"] < 50                  # no build on the apply path
    ex.bench_panel.benchmarker.close()


def test_idle_benchmark_worker_exits_and_restarts(monkeypatch):
    import time

    from tvmlab.widgets import bench_worker
    monkeypatch.setattr(bench_worker, "IDLE_EXIT_S", 0.3)
    monkeypatch.setenv("TVMLAB_PEAK_GFLOPS", "100")
    monkeypatch.setenv("TVMLAB_BANDWIDTH_GBS", "10")
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 3.0, name="C")
    ex = tvmlab.explore(te.create_schedule(C.op), [A, C], targets=["llvm"])
    ex.wait()
    b = ex.bench_panel.benchmarker
    deadline = time.monotonic() + 30
    while (b.peak is None or b._proc is not None) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert b.peak[0] == 100.0 and b.bandwidth == (10.0, "TVMLAB_BANDWIDTH_GBS")
    assert b._proc is None                                  # the idle worker exited
    ex.apply("split", stage="C", axis="i", factor=8)
    assert [r["step"] for r in ex.benchmarks][-1] == 1      # a new worker measured the step
    b.close()


def test_iteration_space_choices_left_from_another_step_fall_back():
    ex, _ = opened()
    ex.iteration_space({"n": 10}, loop="i.inner")
    ex.undo()
    ex.undo()
    ex.undo()                                  # back to the default schedule: loops i and j
    ex._tabs.selected_index = TABS.index("Iteration space")
    assert ex.last_iteration_space["loop"] in ("i", "j") and "not drawn" not in ex.iter_view.value
    with pytest.raises(TVMLabError, match="no loop named"):
        ex.iteration_space({"n": 10}, loop="i.inner")
