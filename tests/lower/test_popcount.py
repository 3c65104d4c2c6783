"""tir.popcount / te.popcount: bits set in an integer's own width, on every backend that has integers."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.analysis.interp import Interpreter
from tvmlab.errors import DSLError
from tvmlab.ir import expr as E

RNG = np.random.default_rng(7)


def popcount_ref(a):
    """Bits set in each element, as the element's dtype (numpy; two's complement for signed types)."""
    u8 = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1)
    return np.unpackbits(u8, axis=1).sum(axis=1).reshape(a.shape).astype(a.dtype)


def random_ints(n, dtype):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def popcount_stage(dtype, n=None):
    n = te.var("n") if n is None else n
    A = te.placeholder((n,), dtype, "A")
    B = te.compute((n,), lambda i: tvm.tir.popcount(A[i]), "B")
    return A, B


def test_api():
    assert te.popcount is tvm.tir.popcount
    x = te.var("x", "uint8")
    e = tvm.tir.popcount(x)
    assert isinstance(e, E.Call) and e.op == "popcount" and e.dtype == "uint8"
    assert tvm.tir.popcount(tvm.tir.const(-1, "int32")).value == 32      # folded in the type's width
    assert tvm.tir.popcount(tvm.tir.const(-2, "int8")).value == 7
    assert tvm.tir.popcount(tvm.tir.const(2**40 + 3, "int64")).value == 3
    with pytest.raises(DSLError, match="popcount needs integer operands, got float32"):
        tvm.tir.popcount(te.var("f", "float32"))


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint8", "int8", "uint16"])
@pytest.mark.parametrize("vectorized", [False, True])
def test_llvm_against_numpy(dtype, vectorized):
    A, B = popcount_stage(dtype)
    s = te.create_schedule(B.op)
    if vectorized:                                   # llvm.ctpop on vectors; 37 leaves a tail
        _, xi = s[B].split(B.op.axis[0], 8)
        s[B].vectorize(xi)
    f = tvm.build(s, [A, B], "llvm")
    assert ("@llvm.ctpop.v8i" if vectorized else "@llvm.ctpop.") in f.get_source("ll")
    a = random_ints(37, dtype)
    b = tvm.nd.array(tvm.testing.poison(np.empty(37, dtype)))
    f(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), popcount_ref(a))


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint8"])
def test_interpreter_against_numpy(dtype):
    A, B = popcount_stage(dtype)
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], 5)
    func = tvm.lower(s, [A, B])["main"]
    a, out = random_ints(23, dtype), np.full(23, 77, dtype)
    bufs = {func.buffer_map[p].data: arr for p, arr in zip(func.params, (a, out))}
    Interpreter(buffers=bufs, env={func.params[2]: 23}).run(func.body)
    np.testing.assert_array_equal(out, popcount_ref(a))


@pytest.mark.parametrize("dtype, call", [("int32", "__popc((unsigned int)"), ("uint32", "__popc((unsigned int)"),
                                         ("int64", "__popcll((unsigned long long)"),
                                         ("uint8", "__popc((unsigned char)")])
def test_cuda_source_compiles_with_nvrtc(dtype, call):
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    A, B = popcount_stage(dtype)
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], 64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "cuda -arch=sm_80")
    kmod = f.imported_modules[0]
    assert call in kmod.get_source()
    assert "popc" in kmod.get_source("ptx")                # NVRTC compiled the intrinsic
    if tvm.cuda(0).exist:
        dev = tvm.cuda(0)
        a = random_ints(300, dtype)
        b = tvm.nd.array(tvm.testing.poison(np.empty(300, dtype)), dev)
        f(tvm.nd.array(a, dev), b)
        np.testing.assert_array_equal(b.numpy(), popcount_ref(a))


@pytest.mark.skipif(not tvm.runtime.enabled("opengl"), reason="no OpenGL (EGL) context on this machine")
@pytest.mark.parametrize("dtype", ["int32", "uint32"])
@pytest.mark.parametrize("mode", ["fragment", "compute"])
def test_opengl_against_numpy(dtype, mode):
    A, B = popcount_stage(dtype, 100)
    s = te.create_schedule(B.op)
    if mode == "fragment":
        s[B].opengl()
        f = tvm.build(s, [A, B], "opengl")
    else:
        bx, tx = s[B].split(B.op.axis[0], 32)
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(tx, te.thread_axis("threadIdx.x"))
        f = tvm.build(s, [A, B], "opengl -compute")
    assert "tl_popcount(" in f.get_source()
    dev = tvm.opengl(0)
    a = random_ints(100, dtype)
    b = tvm.nd.array(np.full(100, 77, dtype), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_array_equal(b.numpy(), popcount_ref(a))
