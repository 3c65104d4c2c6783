"""topi.cuda's dense / matmul / batch_matmul schedules: shared-memory and register tiling, double buffered,
and a warp-per-output schedule for few rows; checked thread by thread (and on a GPU where there is one)."""
import re

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay, te, topi


def _dense(M, N, K, tail=True):
    A, W = te.placeholder((M, K), name="A"), te.placeholder((N, K), name="W")
    b = te.placeholder((N,), name="b")
    with tvm.target.Target("cuda"):
        D = topi.nn.dense(A, W, b if tail else None)
        if tail:
            D = topi.nn.relu(D)
        s = topi.cuda.schedule_dense([D])
    return s, ([A, W, b, D] if tail else [A, W, D])


@pytest.mark.parametrize("M,N,K", [(70, 50, 20), (128, 96, 40)])
def test_tiled_dense_with_bias_and_relu(cuda_run, rng, M, N, K):
    """Tiles of 64 the shapes do not divide, a reduction not a multiple of the step, the tail fused."""
    s, args = _dense(M, N, K)
    f = tvm.build(s, args, "cuda")
    src = f.imported_modules[0].get_source()
    assert "__shared__" in src and re.search(r"float T_dense\w*\[16\];", src) and src.count("__syncthreads()") >= 2
    a, w, b = (rng.standard_normal(sh).astype("float32") for sh in ((M, K), (N, K), (N,)))
    out = np.full((M, N), np.nan, "float32")
    *_, got = cuda_run(f, a, w, b, out)
    np.testing.assert_allclose(got, np.maximum(a @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_register_tile_stays_in_registers():
    """Each thread keeps a 4 x 4 tile of outputs in registers (no local-memory array of the tile's span)."""
    s, args = _dense(256, 256, 64, tail=False)
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "float T_dense_local[16];" in src


def test_few_rows_reduce_over_a_warp(cuda_run, rng):
    """Batch-1 style dense: the reduction over a warp's lanes, combined with shuffles."""
    M, N, K = 3, 40, 70
    s, args = _dense(M, N, K)
    f = tvm.build(s, args, "cuda")
    assert "__shfl_down_sync" in f.imported_modules[0].get_source()
    a, w, b = (rng.standard_normal(sh).astype("float32") for sh in ((M, K), (N, K), (N,)))
    out = np.full((M, N), np.nan, "float32")
    *_, got = cuda_run(f, a, w, b, out)
    np.testing.assert_allclose(got, np.maximum(a @ w.T + b, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("K,wide", [(384, True), (100, False)])
def test_few_rows_read_4_consecutive_elements_a_lane(cuda_run, rng, K, wide):
    """Where K is a whole number of warps x 4, each lane reads 4 consecutive elements of the row and the
    weight at once (one float4 each into registers); else one at a time."""
    M, N = 3, 40
    s, args = _dense(M, N, K)
    f = tvm.build(s, args, "cuda")
    src = f.imported_modules[0].get_source()
    assert ("*(float4*)(W + " in src and "*(float4*)(A + " in src) == wide
    a, w, b = (rng.standard_normal(sh).astype("float32") for sh in ((M, K), (N, K), (N,)))
    *_, got = cuda_run(f, a, w, b, np.full((M, N), np.nan, "float32"))
    np.testing.assert_allclose(got, np.maximum(a @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_batch_matmul(cuda_run, rng):
    B, M, N, K = 3, 70, 50, 30
    A, W = te.placeholder((B, M, K), name="A"), te.placeholder((B, N, K), name="W")
    with tvm.target.Target("cuda"):
        C = topi.nn.batch_matmul(A, W)
        s = topi.cuda.schedule_batch_matmul([C])
    f = tvm.build(s, [A, W, C], "cuda")
    assert "blockIdx.z" in f.imported_modules[0].get_source()
    a, w = rng.standard_normal((B, M, K)).astype("float32"), rng.standard_normal((B, N, K)).astype("float32")
    out = np.full((B, M, N), np.nan, "float32")
    *_, got = cuda_run(f, a, w, out)
    np.testing.assert_allclose(got, a @ w.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("B,M,N,K", [(0, 70, 50, 36), (2, 40, 72, 24), (2, 40, 72, 26)])
def test_cooperative_fetch_is_vectorized(cuda_run, rng, B, M, N, K):
    """Each thread fetches 4 consecutive elements of a row with one float4 load where the rows are a multiple
    of 4 long (K = 26 is not: one element at a time); the shared rows keep their one-word padding, so the
    stores into shared memory are per lane.  M, N are not multiples of the 64 x 64 tiles."""
    shape_a, shape_w = ((B, M, K), (B, N, K)) if B else ((M, K), (N, K))
    A, W = te.placeholder(shape_a, name="A"), te.placeholder(shape_w, name="W")
    with tvm.target.Target("cuda"):
        C = topi.nn.batch_matmul(A, W) if B else topi.nn.dense(A, W)
        s = (topi.cuda.schedule_batch_matmul if B else topi.cuda.schedule_dense)([C])
    f = tvm.build(s, [A, W, C], "cuda")
    src, ptx = f.imported_modules[0].get_source(), f.imported_modules[0].get_source("ptx")
    wide = re.search(r"ld\.global\.nc\.v4\.[fu]32", ptx) is not None
    assert wide == (K % 4 == 0) and ("float4 A_v = *(float4*)(A + " in src) == (K % 4 == 0)
    a, w = rng.standard_normal(shape_a).astype("float32"), rng.standard_normal(shape_w).astype("float32")
    out_shape = (B, M, N) if B else (M, N)
    *_, got = cuda_run(f, a, w, np.full(out_shape, np.nan, "float32"))
    want = a @ np.swapaxes(w, -1, -2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_tile_checks_and_target():
    s, args = _dense(64, 64, 16, tail=False)
    A, W = args[:2]
    D = topi.nn.dense(A, W)
    with pytest.raises(tvm.TVMLabError, match="CUDA schedule"):
        topi.cuda.schedule_dense([D], target="llvm")
    with pytest.raises(tvm.TVMLabError, match=r"tile 40 must be a multiple of threads \(16\)"):
        topi.cuda.schedule_product([D], tile=40)


def test_relay_dense_group_uses_the_tiled_schedule(rng):
    """relay.build for cuda schedules a dense group (dense + bias + relu) with the tiled schedule."""
    x = relay.var("x", shape=(40, 24))
    w = relay.const(rng.standard_normal((36, 24)).astype("float32"))
    b = relay.const(rng.standard_normal(36).astype("float32"))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    try:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="cuda")
    except tvm.TVMLabError as e:
        if "NVRTC" in str(e) or "nvcc" in str(e):
            pytest.skip(f"no CUDA compiler here: {e}")
        raise
    assert "__shared__" in lib.get_lib().get_source()
    xv = rng.standard_normal((40, 24)).astype("float32")
    (got,) = tvm.testing.simulate_graph(lib, x=xv)
    want = np.maximum(xv @ w.data.numpy().T + b.data.numpy(), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _ptx(f):
    return f.imported_modules[0].get_source("ptx")


def _matmul(M, N, K, transpose_b):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((N, K) if transpose_b else (K, N), name="B")
    with tvm.target.Target("cuda"):
        C = topi.nn.matmul(A, B, transpose_b=transpose_b)
        s = topi.cuda.schedule_matmul([C])
    return tvm.build(s, [A, B, C], "cuda"), tuple(int(x) for x in B.shape)


@pytest.mark.parametrize("transpose_b", [True, False])
def test_operands_are_stored_k_outermost_and_read_as_float4(cuda_run, rng, transpose_b):
    """Each operand slice sits in shared memory as rows of k (A, and dense's weight, transposed by the
    copy: a float4 read from global, four words stored), so a thread's 4 consecutive rows or columns for
    one k are one float4 read; one barrier a step, none inside the copy.  matmul's B (k already outer)
    is copied as it is.  Where the 64 x 64 tiles divide the shape the reads are unguarded and wide; the
    results are checked on a shape they do not divide."""
    f, _ = _matmul(128, 192, 64, transpose_b)
    src, ptx = f.imported_modules[0].get_source(), _ptx(f)
    assert re.search(r"float4 A_v\w* = \*\(float4\*\)\(A \+ ", src)
    assert re.search(r"A_shared\[[^\]]*\] = A_v\w*\.y;", src)          # the transposing stores, per lane
    assert src.count("__syncthreads()") == 2
    assert re.search(r"ld\.shared\.v4\.f32", ptx) and not re.search(r"ld\.shared\.f32", ptx)
    M, N, K = 70, 90, 52
    f, b_shape = _matmul(M, N, K, transpose_b)
    assert f.imported_modules[0].get_source().count("__syncthreads()") == 2
    a, b = rng.standard_normal((M, K)).astype("float32"), rng.standard_normal(b_shape).astype("float32")
    *_, got = cuda_run(f, a, b, np.full((M, N), np.nan, "float32"))
    np.testing.assert_allclose(got, a @ (b.T if transpose_b else b), rtol=1e-4, atol=1e-4)


def test_large_products_take_128_by_128_tiles(cuda_run, rng, monkeypatch):
    """Where 128 x 128 tiles still make LARGE_BLOCKS blocks, each thread keeps 8 x 8 outputs (two runs of
    4 each way, 64 apart): 16 FMAs per shared read, in registers.  Checked at a forced small size, and
    on a shape the tiles do not divide."""
    from tvmlab.topi.cuda import dense as cuda_dense
    A, W = te.placeholder((2048, 2048), name="A"), te.placeholder((2048, 2048), name="W")
    big = cuda_dense.hand_written(topi.nn.dense(A, W))
    assert big["y"] == big["x"] == (2, 16, 4) and big["tile_k"] == 16
    small = cuda_dense.hand_written(topi.nn.dense(te.placeholder((1024, 1024)), te.placeholder((1024, 1024))))
    assert small["y"] == (1, 16, 4)
    monkeypatch.setattr(cuda_dense, "LARGE_BLOCKS", 2)
    s, args = _dense(256, 256, 64, tail=False)
    f = tvm.build(s, args, "cuda")
    src, ptx = f.imported_modules[0].get_source(), _ptx(f)
    assert re.search(r"float T_dense\w*\[64\];", src)
    fma, loads = len(re.findall(r"fma\.rn\.f32", ptx)), len(re.findall(r"ld\.shared\.v4\.f32", ptx))
    assert loads and fma / loads >= 16 and not re.search(r"ld\.shared\.f32", ptx)
    M, N, K = 200, 150, 40
    s, args = _dense(M, N, K)
    f = tvm.build(s, args, "cuda")
    a, w, b = (rng.standard_normal(sh).astype("float32") for sh in ((M, K), (N, K), (N,)))
    *_, got = cuda_run(f, a, w, b, np.full((M, N), np.nan, "float32"))
    np.testing.assert_allclose(got, np.maximum(a @ w.T + b, 0), rtol=1e-4, atol=1e-4)
