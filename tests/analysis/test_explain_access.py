"""Access analyses: who writes each element, in which order, cache lines and reuse, roofline counts."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.analysis.access import AnalysisError, reuse_distances, trace_accesses
from tvmlab.analysis.roofline import RooflinePoint, kernel_counts, measure_bandwidth, memory_bandwidth


def tiled(n=None):
    n = te.var("n") if n is None else n
    A = te.placeholder((n, n), name="A")
    C = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[C].reorder(io, jo, ii, ji)
    s[C].parallel(io)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    return s, [A, C]


def test_owner_maps_follow_the_loop_kinds_on_a_size_splits_do_not_divide():
    s, args = tiled()
    tr = trace_accesses(s, args, {"n": 10})
    assert tr.who_kinds() == ["parallel", "vectorized", "unrolled"]
    i, j = np.indices((10, 10))
    np.testing.assert_array_equal(tr.owner_map("parallel"), i // 4)
    np.testing.assert_array_equal(tr.owner_map("unrolled"), i % 4)
    np.testing.assert_array_equal(tr.owner_map("vectorized"), j % 4)
    np.testing.assert_array_equal(tr.write_counts(), np.ones((10, 10)))
    order = tr.order_map()
    assert sorted(order.ravel().tolist()) == list(range(100))
    # tile by tile: the first 4x4 tile is written first, row by row inside it
    assert order[:4, :4].max() == 15 and order[0, 4] == 16
    with pytest.raises(AnalysisError, match="unknown kind"):
        tr.owner_map("warp")


def test_gpu_thread_map_and_reduction_write_counts():
    n = 12
    A = te.placeholder((n, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=5)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    tr = trace_accesses(s, [A, C])
    assert tr.who_kinds() == ["blockIdx", "threadIdx"]
    np.testing.assert_array_equal(tr.owner_map("blockIdx"), np.arange(n) // 5)
    np.testing.assert_array_equal(tr.owner_map("threadIdx"), np.arange(n) % 5)
    np.testing.assert_array_equal(tr.write_counts(), np.full(n, 7))    # init + 6 updates


def test_reuse_distance_and_cache_report():
    assert reuse_distances(["a", "b", "a", "c", "b", "b"]) == [-1, -1, 1, -1, 2, 0]
    # A row-major walk over A reads each 64-byte line 16 times in a row; a column walk
    # touches a new line every access and, with 512 rows of 64 floats, misses a 16-line "L1".
    n = 64
    A = te.placeholder((n, n), name="A")
    Ct = te.compute((n, n), lambda i, j: A[j, i] + 1.0, name="C")
    s = te.create_schedule(Ct.op)
    tr = trace_accesses(s, [A, Ct])
    rep = tr.cache_report("i", l1_bytes=16 * 64)
    a, c = rep["buffers"]["A"], rep["buffers"]["C"]
    assert rep["loop"] == "i" and a["iterations"] == n
    assert a["lines_per_iteration"] == n and c["lines_per_iteration"] == n * 4 / 64
    assert c["l1_misses"] == c["cold_misses"] == n * n * 4 // 64
    assert a["cold_misses"] == n * n * 4 // 64 and a["l1_misses"] == n * n    # every read misses
    assert a["l2_misses"] == a["cold_misses"]
    with pytest.raises(AnalysisError, match="no loop named"):
        tr.cache_report("zz")


def test_too_big_and_bad_sizes_are_clear_errors():
    s, args = tiled()
    with pytest.raises(AnalysisError, match="more than 100 accesses"):
        trace_accesses(s, args, {"n": 20}, max_events=100)
    with pytest.raises(AnalysisError, match="positive int"):
        trace_accesses(s, args, {"n": 0})


def test_kernel_counts_match_the_math():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    c = kernel_counts(tvm.lower(s, [A, B, C]), [A, B, C], {"n": 1001})
    assert 1001 <= c.flops < 1001 + 8                 # masked tail lanes count
    assert c.bytes_by_buffer == {"A": 4004, "B": 4004, "C": 4004}
    M = 40
    A = te.placeholder((M, 24), name="A")
    B = te.placeholder((24, M), name="B")
    k = te.reduce_axis((0, 24), name="k")
    C = te.compute((M, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=16)
    s[C].vectorize(ji)
    c = kernel_counts(tvm.lower(s, [A, B, C]), [A, B, C])
    assert c.flops == 2 * M * M * 24
    assert c.bytes == (M * 24 * 2 + M * M) * 4
    assert c.intensity == pytest.approx(2 * M * M * 24 / ((M * 24 * 2 + M * M) * 4))
    p = RooflinePoint("x", c.flops, c.bytes, seconds=1e-3)
    assert p.gflops == pytest.approx(c.flops / 1e-3 / 1e9)
    assert p.bound(100.0, 10.0) == pytest.approx(min(100.0, 10.0 * p.intensity))


def test_bandwidth_is_measured_or_overridden(monkeypatch):
    gbs = measure_bandwidth(elements=1 << 18, rounds=1)
    assert np.isfinite(gbs) and gbs > 0
    monkeypatch.setenv("TVMLAB_BANDWIDTH_GBS", "12.5")
    assert memory_bandwidth() == (12.5, "TVMLAB_BANDWIDTH_GBS")
    monkeypatch.setenv("TVMLAB_BANDWIDTH_GBS", "fast")
    with pytest.raises(AnalysisError, match="must be a number"):
        memory_bandwidth()


def test_default_size_shows_a_tail_tile():
    from tvmlab.analysis.access import suggested_size
    s, args = tiled()
    assert suggested_size(s) == 16                 # factors of 4: the minimum
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s2 = te.create_schedule(C.op)
    s2[C].split(C.op.axis[0], factor=16)
    assert suggested_size(s2) == 24
    tr = trace_accesses(s2, [A, C])
    assert tr.sizes == {"n": 24} and tr.shapes["C"] == (24,)


def test_three_d_output_maps_and_pictures():
    pytest.importorskip("matplotlib")
    from tvmlab.widgets.analysis_views import cache_html, map_png, order_png, owner_png
    A = te.placeholder((3, 5, 6), name="A")
    C = te.compute((3, 5, 6), lambda b, i, j: A[b, i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    jo, ji = s[C].split(C.op.axis[2], factor=4)
    s[C].vectorize(ji)
    tr = trace_accesses(s, [A, C])
    np.testing.assert_array_equal(tr.owner_map("parallel"), np.indices((3, 5, 6))[0])
    np.testing.assert_array_equal(tr.owner_map("vectorized"), np.indices((3, 5, 6))[2] % 4)
    for png in (owner_png(tr, "parallel"), order_png(tr), map_png(np.arange(7), "1-D")):
        assert png[:4] == b"\x89PNG"
    assert "lines / iteration" in cache_html(tr.cache_report())
