"""Memory traffic on the GPU simulator: global coalescing and shared-memory bank conflicts per statement."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te, topi
from tvmlab.analysis.gpusim import run_kernel, simulate
from tvmlab.analysis.gpusim.traffic import shared_cost, totals
from tvmlab.bench import gpu as bench_gpu


def _row(report, scope, op, buffer):
    rows = [r for r in report.traffic() if (r.scope, r.op, r.buffer) == (scope, op, buffer)]
    assert len(rows) == 1, [(r.scope, r.op, r.buffer) for r in report.traffic()]
    return rows[0]


def _gather(stride, rng, n=1024):
    A = te.placeholder((n * stride,), name="A")
    B = te.compute((n,), lambda i: A[i * stride], name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=128)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "cuda")
    a = rng.standard_normal(n * stride).astype("float32")
    b = np.full(n, np.nan, "float32")
    report = simulate(f, a, b, traffic=True)
    np.testing.assert_array_equal(b, a[::stride])
    return report


def test_coalesced_and_strided_global_loads(rng):
    dense = _gather(1, rng)
    load = _row(dense, "global", "load", "A")
    assert load.requests == 1024 // 32 and load.bytes == 4096
    assert load.sectors == 4096 // 32 and load.efficiency == 1.0
    strided = _row(_gather(8, rng), "global", "load", "A")          # lanes 32 bytes apart: a sector each
    assert strided.requests == 32 and strided.sectors == 1024 and strided.efficiency == pytest.approx(0.125)
    assert _row(_gather(8, rng), "global", "store", "B").efficiency == 1.0


def _transpose(rng, align=None):
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    i, j = B.op.axis
    io, ii = s[B].split(i, 32)
    jo, ji = s[B].split(j, 32)
    s[B].reorder(io, jo, ii, ji)
    s[B].bind(io, te.thread_axis("blockIdx.y"))
    s[B].bind(jo, te.thread_axis("blockIdx.x"))
    ty, tx = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.x")
    iio, _ = s[B].split(ii, nparts=8)
    s[B].bind(iio, ty)
    s[B].bind(ji, tx)
    s[AS].compute_at(s[B], jo)
    a0, a1 = AS.op.axis
    if align is not None:
        s[AS].storage_align(a0, *align)
    a0o, _ = s[AS].split(a0, nparts=8)
    s[AS].bind(a0o, ty)
    s[AS].bind(a1, tx)
    f = tvm.build(s, [A, B], "cuda")
    a = rng.standard_normal((n, n)).astype("float32")
    b = np.full((n, n), np.nan, "float32")
    report = simulate(f, a, b, traffic=True)
    np.testing.assert_array_equal(b, a.T)
    return report


@pytest.mark.parametrize("align, ways", [(None, 32.0), ((32, 1), 1.0), ((33, 1), 2.0)])
def test_shared_bank_conflicts_of_a_transpose(rng, align, ways):
    # a warp reads a column of the 32 x 32 tile: rows of 32 words put it all in one bank; padded rows
    # of 33 words spread it over the 32 banks, rows of 34 over 16
    report = _transpose(rng, align)
    load = _row(report, "shared", "load", "A.shared")
    assert load.conflict == pytest.approx(ways)
    assert _row(report, "shared", "store", "A.shared").conflict == 1.0
    assert _row(report, "global", "load", "A").efficiency == 1.0
    eff, conflict = totals(report.traffic())
    assert eff == 1.0 and conflict == pytest.approx((ways + 1) / 2)
    assert "A.shared" in report.traffic_table()


def test_phases_of_wide_accesses():
    # 16-byte accesses: 8 lanes per 128-byte phase; consecutive vectors are conflict-free, vectors
    # 128 bytes apart put a phase's 8 lanes in the same four banks
    lanes = np.arange(32)
    phase = lanes // 8
    words = (lanes[:, None] * 4 + np.arange(4)).reshape(-1)
    assert shared_cost(np.repeat(phase, 4), words) == (4, 4)
    far = (lanes[:, None] * 32 + np.arange(4)).reshape(-1)
    assert shared_cost(np.repeat(phase, 4), far) == (32, 4)
    # every lane on one word is a broadcast, not a conflict
    assert shared_cost(np.zeros(32, np.int64), np.zeros(32, np.int64)) == (1, 1)


def test_unaligned_vectors_count_lane_by_lane(rng):
    n = 256
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n,), lambda i: A[i + 1] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    bx, tx = s[B].split(xo, factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B], "cuda")
    a = rng.standard_normal(n + 1).astype("float32")
    b = np.full(n, np.nan, "float32")
    report = simulate(f, a, b, traffic=True)
    np.testing.assert_allclose(b, a[1:] * 2)
    assert _row(report, "global", "store", "B").requests == 2          # float4 stores: one per warp
    assert _row(report, "global", "load", "A").requests == 2 * 4       # A + 1 is not 16-byte aligned


def test_tensorcore_tiles_are_padded_against_bank_conflicts(rng, monkeypatch):
    from tvmlab.topi.cuda import tensorcore

    def run():
        X = te.placeholder((64, 64), "float16", name="X")
        W = te.placeholder((64, 64), "float16", name="W")
        C = topi.cuda.dense_tensorcore(X, W, out_dtype="float32")
        s = topi.cuda.schedule_dense_tensorcore([C])
        f = tvm.build(s, [X, W, C], "cuda -arch=sm_80")
        x = rng.standard_normal((64, 64)).astype("float16")
        w = rng.standard_normal((64, 64)).astype("float16")
        c = np.full((64, 64), np.nan, "float32")
        report = simulate(f, x, w, c, traffic=True)
        np.testing.assert_allclose(c, x.astype("float32") @ w.astype("float32").T, rtol=2e-2, atol=2e-2)
        return report, f
    report, f = run()
    for buf in ("X.shared", "W.shared"):
        assert _row(report, "shared", "load", buf).conflict == 1.0      # the fragment loads
        assert _row(report, "shared", "store", buf).conflict == 1.0
        assert _row(report, "global", "load", buf.split(".")[0]).efficiency == 1.0
    assert "*(uint4*)" in f.imported_modules[0].get_source()            # 8 halves per thread at once
    monkeypatch.setattr(tensorcore, "PAD", 0)                          # rows of 128 bytes: 8 rows, one bank group
    assert _row(run()[0], "shared", "load", "X.shared").conflict == 8.0


def test_run_kernel_counts_traffic_and_report_without_it(rng):
    n = 64
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    mod = tvm.lower(s, [A, B], target="cuda")
    kernel = mod.device_split.kernels[0]
    a = rng.standard_normal(n).astype("float32")
    b = np.full(n, np.nan, "float32")
    report = run_kernel(kernel, 1, n, a, b, traffic=True)
    assert _row(report, "global", "load", "A").requests == 2
    plain = run_kernel(kernel, 1, n, a, b)
    assert plain.traffic() == [] and "traffic=True" in plain.traffic_table()


def test_bench_simulate_prints_traffic():
    import io
    out = io.StringIO()
    assert bench_gpu.main(["--simulate", "--traffic", "--rows", "add,tensorcore"], out=out) == 0
    text = out.getvalue()
    assert "global 100% of bytes moved used, shared 1.00-way" in text
    assert text.count("simulated: matches numpy") >= 3
