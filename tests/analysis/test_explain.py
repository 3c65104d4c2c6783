"""explain(): InferBound replayed in sentences, with the same numbers as infer_bound."""
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.analysis.explain import explain
from tvmlab.errors import ScheduleError
from tvmlab.schedule.bound import infer_bound


def stencil(factor=8, n=None):
    n = te.var("n") if n is None else n
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n - 2,), lambda i: B[i] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=factor)
    s[B].compute_at(s[C], xo)
    return s, [A, C]


def test_ranges_match_infer_bound_and_reads_are_derived():
    s, args = stencil()
    e = explain(s, args, "B")
    dom = infer_bound(s)
    B = next(st for st in s.stages if st.name == "B")
    iv = B.op.axis[0]
    assert e.root_ranges["i"] == (tvm.ir.printer.astext(dom[iv].min),
                                  tvm.ir.printer.astext(dom[iv].extent))
    assert e.root_ranges["i"] == ("i.outer * 8", "10")
    kinds = [st.kind for st in e.steps]
    assert kinds[:1] == ["where"] and kinds.count("read") == 2 and "union" in kinds
    text = str(e)
    assert "computed at C.i.outer" in text and "relaxed (over their whole range): i.inner" in text
    assert "i + 2 = i.outer * 8 + i.inner + 2  with i.inner ∈ [0, 8)  →  [i.outer * 8 + 2, " \
           "i.outer * 8 + 9]" in text
    assert "the union is [i.outer * 8, i.outer * 8 + 9]" in text
    assert "guard" in text and "likely(i < n)" in text
    assert "realized over [i.outer * 8, i.outer * 8 + 10)" in text
    assert "allocation of 10 float32" in text


def test_guard_names_the_split_and_partition_cuts_it():
    s, args = stencil()
    e = explain(s, args, "C")
    guards = [st for st in e.steps if st.kind == "guard" and st.level == "AST2"]
    assert len(guards) == 1
    assert "likely(i.outer * 8 + i.inner < n - 2)" in guards[0].text
    assert "the split of i by factor 8" in guards[0].text
    part = [st for st in e.steps if st.kind == "partition"]
    assert part and part[0].level == "AST3" and "cut" in part[0].text
    assert "for i.outer in [0, T.max((n - 2) // 8, 0)): guards remain inside" in part[0].math
    assert e.leaf_ranges == {"i.outer": ("0", "(n + 5) // 8"), "i.inner": ("0", "8")}


def test_dividing_split_needs_no_guard_and_html_renders():
    s, args = stencil(factor=4, n=66)
    e = explain(s, args, "C")
    assert any("divides the extent" in st.text for st in e.steps)
    assert any(st.kind == "guard" and st.text.startswith("No guard") for st in e.steps)
    assert "<ol" in e._repr_html_() and "tvmlab-explain" in e._repr_html_()


def test_axis_filter_fuse_and_parallel_partition():
    A = te.placeholder((30, 20), name="A")
    C = te.compute((30, 20), lambda i, j: A[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    fo, fi = s[C].split(f, factor=64)
    s[C].parallel(fo)
    e = explain(s, [A, C], "C")
    text = str(e)
    assert "fuse i and j into one loop i.j.fused of 600 iterations" in text
    assert "i.j.fused ∈ [0, 30 * 20) = [0, 600)" in text
    assert "i.j.fused.outer is parallel, so it is not cut" in text
    only = explain(s, [A, C], "C", axis="i.j.fused.inner")
    assert all(not st.axes or "i.j.fused.inner" in st.axes for st in only.steps)
    assert any(st.kind == "relation" and "split i.j.fused" in st.text for st in only.steps)
    assert not any("fuse i and j" in st.text for st in only.steps)


def test_inlined_and_input_stages_and_bad_input():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    assert "inlined" in explain(s, None, "B").steps[0].text
    assert "placeholder" in explain(s, None, "A").steps[0].text
    assert explain(s).stage == "C"            # default: the last computed stage
    with pytest.raises(ScheduleError, match="no stage named 'Z'"):
        explain(s, None, "Z")
    with pytest.raises(ScheduleError, match="has no axis 'k'"):
        explain(s, None, "C", axis="k")
    with pytest.raises(ScheduleError, match="expects a schedule"):
        explain("s")


def test_gpu_shared_cache_relaxes_thread_axes():
    n = 64
    A = te.placeholder((n, n), name="A")
    C = te.compute((n, n), lambda i, j: A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    bx, tx = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[C], tx)
    e = explain(s, None, "A.shared")
    text = str(e)
    assert "Storage scope: shared" in text
    assert "lives in shared memory" in text and "i.inner (threadIdx.x)" in text
    # shared storage is shared by the threads of a block: threadIdx is relaxed, the tile is 16 rows
    first = next(iter(e.root_ranges))
    assert e.root_ranges[first] == ("i.outer * 16", "16"), e.root_ranges
    assert "threadIdx.x" not in e.root_ranges[first][0]
