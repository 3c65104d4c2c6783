"""Vector types in the CUDA backend: a vectorized loop in a GPU schedule becomes float4 / half2 / ... accesses
where the code generator can print it so.  Every kernel compiles with NVRTC (the PTX must hold the wide
accesses) and runs against numpy on the thread-level simulator (and on a GPU where there is one)."""
import re

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.lower.gpu_vectorize import uniform_bounds, why_serial
from tvmlab.testing import poison
from tvmlab.testing.gpu_schedules import opt_conv_hwcn


def _wide(ptx):
    """The vector memory instructions of a PTX text as "ld.global.v4.32" (lanes and bits; PTX spells a
    float4 copy ld.global.nc.v4.u32 or .f32, as it likes)."""
    found = re.findall(r"\b(ld|st)\.(global|shared|local)(?:\.nc)?\.(v\d)\.[a-z](\d+)\b", ptx)
    return {".".join(x) for x in found}


def _build(s, args):
    f = tvm.build(s, args, "cuda")
    dev = f.imported_modules[0]
    return f, dev.get_source(), dev.get_source("ptx")


def _elementwise(n, lanes=4, dtype="float32", fn=lambda x: x * 2 + 1, threads=32):
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=lanes)
    bx, tx = s[B].split(xo, factor=threads)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].vectorize(xi)
    return s, [A, B]


def _data(rng, shape, dtype):
    if dtype.startswith("float"):
        return rng.uniform(-2, 2, shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


@pytest.mark.parametrize("n", [1000, 1001])
def test_elementwise_float4(cuda_run, rng, n):
    """B[ramp] = A[ramp] * 2 + 1 as one float4 load and store per thread; 1001 (not a multiple of the 4 lanes)
    keeps a per-lane guard, so that loop stays serial."""
    f, src, ptx = _build(*_elementwise(n))
    if n % 4 == 0:
        assert "float4 A_v = *(float4*)(A + " in src and "*(float4*)(B + " in src and "make_float4(" in src
        assert {"ld.global.v4.32", "st.global.v4.32"} <= _wide(ptx)
    else:
        assert "float4" not in src and not _wide(ptx)
    a = _data(rng, n, "float32")
    _, b = cuda_run(f, a, poison(np.empty(n, "float32")))
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


@pytest.mark.parametrize("dtype,lanes,ctype,ptx_op", [
    ("float32", 2, "float2", "v2.32"), ("int32", 4, "int4", "v4.32"), ("float64", 2, "double2", "v2.64"),
    ("float16", 2, "half2", None), ("int8", 4, "char4", None), ("int16", 4, "short4", "v4.16")])
def test_vector_types(cuda_run, rng, dtype, lanes, ctype, ptx_op):
    """Each CUDA vector type: 64/128-bit accesses (half2 and char4 are one 32-bit word, which PTX loads
    with a scalar ld.b32 / ld.u32)."""
    n = 256
    s, args = _elementwise(n, lanes, dtype, fn=lambda x: x * x + x)
    f, src, ptx = _build(s, args)
    assert f"{ctype} A_v = *({ctype}*)(A + " in src and f"*({ctype}*)(B + " in src
    if ptx_op:
        assert f"ld.global.{ptx_op}" in _wide(ptx) and f"st.global.{ptx_op}" in _wide(ptx), _wide(ptx)
    a = _data(rng, n, dtype)
    _, b = cuda_run(f, a, poison(np.empty(n, dtype)))
    want = (a * a + a).astype(dtype)
    # x * x + x is one fused multiply-add on a GPU (NVRTC contracts, as nvcc does): a rounding fewer than
    # numpy's, so float64 differs in the last bit (H100: 9e-16)
    tol = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-14}.get(dtype, 0)
    np.testing.assert_allclose(b.astype("float64"), want.astype("float64"), rtol=tol, atol=tol)


def test_unaligned_access_is_per_lane(cuda_run, rng):
    """B[i] = A[i + 1]: the load's base is not a multiple of the lanes, so its lanes are scalar loads; the
    store stays wide."""
    n = 256
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n,), lambda i: A[i + 1] - A[i], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    bx, tx = s[B].split(xo, factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].vectorize(xi)
    f, src, ptx = _build(s, [A, B])
    assert "*(float4*)(B + " in src and "st.global.v4.32" in _wide(ptx)
    assert "*(float4*)(A + " in src and "A[" in src       # A[i] wide, A[i + 1] lane by lane
    a = _data(rng, n + 1, "float32")
    _, b = cuda_run(f, a, poison(np.empty(n, "float32")))
    np.testing.assert_allclose(b, a[1:] - a[:-1], rtol=1e-6)


def test_broadcast_select_and_uniform_guard(cuda_run, rng):
    """A scalar per row broadcast over the lanes, a lane-wise select, and a pad guard on the row (one
    condition for every lane: a ternary of whole vectors, the load only in its arm)."""
    R, C = 9, 32
    A = te.placeholder((R, C), name="A")
    w = te.placeholder((R,), name="w")
    P = te.compute((R + 1, C), lambda i, j: tvm.tir.if_then_else(i >= 1, A[i - 1, j], 0.0), name="P")
    B = te.compute((R + 1, C), lambda i, j: tvm.tir.Select(P[i, j] > 0, P[i, j] * w[i % R], P[i, j]), name="B")
    s = te.create_schedule(B.op)
    s[P].compute_inline()
    jo, ji = s[B].split(B.op.axis[1], factor=4)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(jo, te.thread_axis("threadIdx.x"))
    s[B].vectorize(ji)
    f, src, ptx = _build(s, [A, w, B])
    assert "? *(float4*)(A + " in src and "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" in src
    assert {"ld.global.v4.32", "st.global.v4.32"} <= _wide(ptx)
    a, wv = _data(rng, (R, C), "float32"), _data(rng, R, "float32")
    *_, b = cuda_run(f, a, wv, poison(np.empty((R + 1, C), "float32")))
    p = np.concatenate([np.zeros((1, C), "float32"), a])
    np.testing.assert_allclose(b, np.where(p > 0, p * wv[np.arange(R + 1) % R][:, None], p), rtol=1e-6)


def test_what_stays_serial():
    """Lanes CUDA has no type for (float32 x 8), a shape the lanes do not divide, and a gather keep their
    loops serial, each with its reason; they still run as loops."""
    s, args = _elementwise(1000, lanes=8)
    mod = tvm.lower(s, args, target="cuda")
    assert "float32x8" not in str(mod.device_split.kernels[0])
    for lanes, n, why in ((8, 1000, "no vector type for float32x8"), (4, 1001, "masked")):
        s, args = _elementwise(n, lanes=lanes)
        ast2 = tvm.lower(s, args, target="cuda").history["inject_virtual_thread"].body
        assert any(why in r for _, r in why_serial(ast2, "cuda")), why_serial(ast2, "cuda")
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[(i * 3) % 64], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(xo, te.thread_axis("threadIdx.x"))
    s[B].vectorize(xi)
    ast2 = tvm.lower(s, [A, B], target="cuda").history["inject_virtual_thread"].body
    assert any("not consecutive" in r for _, r in why_serial(ast2, "cuda"))
    assert "for (int i_inner" in tvm.build(s, [A, B], "cuda").imported_modules[0].get_source()


def test_disable_vectorize_and_opencl_keep_loops():
    s, args = _elementwise(256)
    with tvm.transform.PassContext(config={"tir.disable_vectorize": True}):
        src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "float4" not in src
    k = tvm.lower(s, args, target="opencl").device_split.kernels[0]
    assert "x4" not in str(k)


def test_uniform_bounds():
    """i = 4 q + v < n is one test for all four lanes exactly when n is a multiple of 4."""
    from tvmlab.ir.functor import collect_vars
    from tvmlab.ir.stmt import For, IfThenElse, Store
    q, v, n = te.var("q"), te.var("v"), te.var("n")
    buf = te.var("B", "handle")

    def loop(cond):
        body = Store(buf, tvm.tir.const(1.0), 4 * q + v, None)
        return For(v, tvm.tir.const(0), tvm.tir.const(4), "vectorized", IfThenElse(cond, body, None))
    for bound, uniform in ((1000, True), (1001, False), (4 * n, True), (n, False)):
        cond = uniform_bounds(loop(4 * q + v < bound)).body.condition
        assert (v not in collect_vars(cond)) == uniform, (bound, cond)
    # 4 q + 3 - v >= 0 (the lanes in reverse) is uniform too; a stride of 2 is not
    assert v not in collect_vars(uniform_bounds(loop(4 * q + 3 - v >= 0)).body.condition)
    assert v in collect_vars(uniform_bounds(loop(4 * q + 2 * v < 1000)).body.condition)


def _tvm_dense(M, N, K, tile=32, threads=8, step=8):
    """A TVM-style dense (TVM's dense_int8 schedule, in float32): each shared copy's last axis split by 4
    and vectorized, the rest fused and spread over the threads."""
    A = te.placeholder((M, K), name="A")
    W = te.placeholder((N, K), name="W")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * W[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA, WW = s.cache_read(A, "shared", [C]), s.cache_read(W, "shared", [C])
    CL = s.cache_write(C, "local")
    i, j = C.op.axis
    by, yi = s[C].split(i, factor=tile)
    bx, xi = s[C].split(j, factor=tile)
    ty, yi = s[C].split(yi, nparts=threads)
    tx, xi = s[C].split(xi, nparts=threads)
    s[C].reorder(by, bx, ty, tx, yi, xi)
    for ax, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[C].bind(ax, te.thread_axis(tag))
    s[CL].compute_at(s[C], tx)
    ko, _ = s[CL].split(s[CL].op.reduce_axis[0], factor=step)
    for X in (AA, WW):
        s[X].compute_at(s[CL], ko)
        outer, inner = s[X].split(s[X].op.axis[-1], factor=4)
        s[X].vectorize(inner)
        fused = s[X].fuse(s[X].op.axis[0], outer)
        fused, t_x = s[X].split(fused, factor=threads)
        fused, t_y = s[X].split(fused, factor=threads)
        s[X].bind(t_x, te.thread_axis("threadIdx.x"))
        s[X].bind(t_y, te.thread_axis("threadIdx.y"))
    return s, [A, W, C]


@pytest.mark.parametrize("M,N,K", [(64, 64, 32), (40, 50, 36)])
def test_tvm_style_dense_vectorized_fetch(cuda_run, rng, M, N, K):
    """Cooperative fetches of float4 into __shared__ arrays aligned for them; 40 x 50 is not a multiple of
    the 32 x 32 tiles (guards on the rows, one per group of lanes)."""
    s, args = _tvm_dense(M, N, K)
    f, src, ptx = _build(s, args)
    assert "__shared__ __align__(16) float A_shared[" in src
    assert {"ld.global.v4.32", "st.shared.v4.32"} <= _wide(ptx), _wide(ptx)
    a, w = _data(rng, (M, K), "float32"), _data(rng, (N, K), "float32")
    *_, c = cuda_run(f, a, w, poison(np.empty((M, N), "float32")))
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch", [64, 96, 40])
def test_opt_conv_cuda_vectorized_fetch(cuda_run, rng, batch):
    """TVM's opt_conv_cuda tutorial schedule (tvmlab.testing.gpu_schedules): float4 loads of the padded input
    (a ternary on the pad, one condition for every lane) and of the weights, float4 stores into shared
    memory.  Batch 96 is not a multiple of the 64 a block covers (a guard per group of 4 lanes); with
    batch 40 each thread's 5 elements do not split into groups of 4, so the input's fetch stays a loop."""
    s, args, ref = opt_conv_hwcn(batch, in_channel=8, out_channel=64, in_size=4)
    f, src, ptx = _build(s, args)
    assert "*(float4*)(W_shared + " in src and "st.shared.v4.32" in _wide(ptx)
    if batch % 32 == 0:
        assert "? *(float4*)(A + " in src
        assert {"ld.global.v4.32", "st.shared.v4.32"} <= _wide(ptx), _wide(ptx)
    else:
        assert "*(float4*)(A + " not in src
    a, w = _data(rng, (4, 4, 8, batch), "float32"), _data(rng, (3, 3, 8, 64), "float32")
    *_, b = cuda_run(f, a, w, poison(np.empty((4, 4, 64, batch), "float32")))
    np.testing.assert_allclose(b, ref(a, w), rtol=1e-4, atol=1e-4)
