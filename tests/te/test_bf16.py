"""bfloat16 (storage, float32 arithmetic) and float16 across the CPU, OpenCL and CUDA C backends."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16


def _program(n):
    A = te.placeholder((n,), "bfloat16", name="A")
    B = te.placeholder((n,), "bfloat16", name="B")
    C = te.compute((n,), lambda i: A[i] * B[i] + A[i] - 1.5, name="C")
    D = te.compute((n,), lambda i: te.if_then_else(C[i] > 0, C[i], B[i] * 2.0), name="D")
    return A, B, C, D


def _reference(a, b):
    af, bf = a.astype("float32"), b.astype("float32")
    c = (af * bf + af - 1.5).astype(BF16).astype("float32")       # one rounding per stage
    return np.where(c > 0, c, (bf * 2.0).astype(BF16).astype("float32")).astype(BF16)


def _data(rng, size):
    return (rng.standard_normal(size).astype(BF16), rng.standard_normal(size).astype(BF16))


def test_bfloat16_on_the_cpu_symbolic_shape(rng):
    A, B, C, D = _program(te.var("n"))
    s = te.create_schedule(D.op)
    xo, xi = s[D].split(D.op.axis[0], factor=8)
    s[D].vectorize(xi)
    lowered = tvm.lower(s, [A, B, D])
    assert "bf16_legalize" in lowered.history and "bfloat16" not in str(lowered["main"].body)
    f = tvm.build(s, [A, B, D], "llvm")
    for size in (37, 8, 1):
        a, b = _data(rng, size)
        out = tvm.nd.array(np.full(size, 0xFFFF, "uint16"), dtype="bfloat16")   # NaN bits
        f(tvm.nd.array(a), tvm.nd.array(b), out)
        assert out.dtype == "bfloat16" and out.numpy().dtype == np.uint16
        np.testing.assert_array_equal(out.numpy(), _reference(a, b).view(np.uint16))


def test_bfloat16_rounds_to_nearest_even_and_keeps_nan_inf():
    n = 6
    A = te.placeholder((n,), "float32", name="A")
    B = te.compute((n,), lambda i: A[i].astype("bfloat16"), name="B")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B])
    a = np.array([1.00390625, 1.01171875, -3.3e38, np.inf, np.nan, 1e-40], "float32")
    out = tvm.nd.empty((n,), "bfloat16")
    f(tvm.nd.array(a), out)
    got, want = out.numpy().view(BF16).astype("float32"), a.astype(BF16).astype("float32")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[:4], want[:4])


def test_bfloat16_numpy_interop_and_errors():
    bits = np.array([0x3FC0, 0xC000], "uint16")                         # 1.5, -2
    x = tvm.nd.array(bits, dtype="bfloat16")
    assert x.dtype == "bfloat16" and x.numpy().tolist() == [0x3FC0, 0xC000]
    y = tvm.nd.array(np.array([1.5, -2.0], BF16))
    np.testing.assert_array_equal(y.numpy(), bits)
    z = tvm.nd.empty((2,), "bfloat16")
    z.copyfrom(np.array([1.5, -2.0], BF16))
    np.testing.assert_array_equal(z.numpy(), bits)
    with pytest.raises(tvm.TVMLabError, match="dtype"):
        z.copyfrom(np.zeros(2, "float32"))
    A = te.placeholder((2,), "bfloat16", name="A")
    B = te.compute((2,), lambda i: A[i] + A[i], name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(tvm.TVMLabError, match="bfloat16"):
        f(tvm.nd.array(np.zeros(2, "uint16")), tvm.nd.empty((2,), "bfloat16"))   # uint16, not bfloat16


def test_bf16_passes_one_by_one():
    A, B, C, D = _program(16)
    s = te.create_schedule(D.op)
    mod = tvm.driver.build_module.schedule_to_module(s, [A, B, D])
    mod = tvm.tir.transform.StorageFlatten(64)(mod)
    promoted = tvm.tir.transform.BF16Promote()(mod)
    text = str(promoted["main"].body)
    assert "float32" in text and "bfloat16" in text
    lowered = tvm.tir.transform.BF16TypeLowering()(tvm.tir.transform.BF16CastElimination()(promoted))
    assert "bfloat16" not in str(lowered["main"].body) and "reinterpret" in str(lowered["main"].body)
    tvm.ir.assert_structural_equal(lowered["main"].body, tvm.tir.transform.BF16Legalize()(mod)["main"].body)


def test_bf16_legalize_before_flattening_gives_uint16_tensors_that_run(rng):
    """As in TVM, BF16Legalize on AST2 turns bfloat16 tensors and buffers into uint16 ones: the
    function then takes the bits, and computes as the bfloat16 program does."""
    A, B, C, D = _program(37)
    s = te.create_schedule(D.op)
    xo, _ = s[D].split(D.op.axis[0], factor=8)
    s[C].compute_at(s[D], xo)
    mod = tvm.tir.transform.BF16Legalize()(tvm.driver.build_module.schedule_to_module(s, [A, B, D]))
    func = mod["main"]
    assert "bfloat16" not in str(func)
    assert sorted(b.dtype for b in func.buffer_map.values()) == ["uint16"] * 3
    f = tvm.build(mod, target="llvm")
    a, b = _data(rng, 37)
    out = tvm.nd.array(np.full(37, 0xFFFF, "uint16"))
    f(tvm.nd.array(a.view("uint16")), tvm.nd.array(b.view("uint16")), out)
    np.testing.assert_array_equal(out.numpy().view(BF16).astype("float32"),
                                  _reference(a, b).astype("float32"))


def test_two_schedules_built_alike_give_equal_statements():
    """Tensors are storage, defined where first seen (TVM's Buffers): structural equality maps them."""
    def body(dtype):
        A = te.placeholder((10,), dtype, name="A")
        B = te.compute((10,), lambda i: A[i] + A[9 - i], name="B")
        return tvm.driver.build_module.schedule_to_module(te.create_schedule(B.op), [A, B])["main"].body
    tvm.ir.assert_structural_equal(body("float32"), body("float32"))
    assert tvm.ir.structural_hash(body("float32")) == tvm.ir.structural_hash(body("float32"))
    assert not tvm.ir.structural_equal(body("float32"), body("float16"))
    A = te.placeholder((10,), name="A")
    B = te.placeholder((10,), name="B")
    C = te.compute((10,), lambda i: A[i] + B[i], name="C")
    D = te.compute((10,), lambda i: A[i] + A[i], name="D")
    assert not tvm.ir.structural_equal(C.op.body[0], D.op.body[0])   # A is matched to A, not to B
    # passes looking for a repeated condition or index compare tensors by identity
    from tvmlab.ir.structural import same_value
    assert tvm.ir.structural_equal(A[0] > 0, B[0] > 0) and not same_value(A[0] > 0, B[0] > 0)
    assert same_value(A[0] > 0, A[0] > 0)


def _gpu_schedule(n):
    A, B, C, D = _program(n)
    s = te.create_schedule(D.op)
    s[C].compute_inline()
    bx, tx = s[D].split(D.op.axis[0], factor=32)
    s[D].bind(bx, te.thread_axis("blockIdx.x"))
    s[D].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, D]


@pytest.mark.skipif(not tvm.opencl(0).exist, reason="no OpenCL device")
def test_bfloat16_on_opencl(rng):
    s, args = _gpu_schedule(te.var("n"))
    f = tvm.build(s, args, "opencl")
    assert "ushort" in f.imported_modules[0].get_source()
    dev = tvm.opencl(0)
    a, b = _data(rng, 77)
    out = tvm.nd.array(np.full(77, 0xFFFF, "uint16"), dev, dtype="bfloat16")
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), out)
    np.testing.assert_array_equal(out.numpy(), _reference(a, b).view(np.uint16))


def test_float16_and_bfloat16_cuda_c_compiles_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    s, args = _gpu_schedule(te.var("n"))
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "#include <cuda_bf16.h>" in src and "__nv_bfloat16* __restrict__ A" in src
    H = te.placeholder((64,), "float16", name="H")
    G = te.compute((64,), lambda i: H[i] * H[i] + tvm.tir.const(0.5, "float16"), name="G")
    s2 = te.create_schedule(G.op)
    bx, tx = s2[G].split(G.op.axis[0], factor=32)
    s2[G].bind(bx, te.thread_axis("blockIdx.x"))
    s2[G].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s2, [H, G], "cuda")
    assert "#include <cuda_fp16.h>" in f.imported_modules[0].get_source()
    assert ".f16" in f.imported_modules[0].get_source("ptx") or "cvt" in f.imported_modules[0].get_source("ptx")
