"""The OpenCL backend: tests/gpu_programs.py's GPU schedules built for "opencl" and run through
pyopencl (pocl's CPU device where there is no GPU) against numpy."""
import sys
from pathlib import Path

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te

sys.path.insert(0, str(Path(__file__).parents[1]))
import gpu_programs as P  # noqa: E402

pytestmark = pytest.mark.skipif(not tvm.opencl(0).exist,
                                reason="no OpenCL device (Debian's pocl-opencl-icd gives a CPU one)")


def _run(s, args, inputs, out_shape, dtype="float32", extra=()):
    dev = tvm.opencl(0)
    f = tvm.build(s, args, "opencl")
    out = tvm.nd.array(np.full(out_shape, np.nan, dtype), dev)
    f(*[tvm.nd.array(x, dev) for x in inputs], out, *extra)
    return f, out.numpy()


@pytest.mark.parametrize("size", [1000, 64, 1])
def test_vector_add_symbolic_size(rng, size):
    s, args, ref = P.vector_add()
    a, b = (rng.standard_normal(size).astype("float32") for _ in range(2))
    f, got = _run(s, args, [a, b], (size,))
    np.testing.assert_allclose(got, ref(a, b), rtol=1e-6)
    src = f.imported_modules[0].get_source()
    assert "__kernel void" in src and "get_group_id(0)" in src and "get_local_id(0)" in src


def test_tiled_matmul_local_memory_and_barriers_non_dividing(rng):
    s, args, ref = P.tiled_matmul(N=37, M=45, K=29)
    a = rng.standard_normal((37, 29)).astype("float32")
    b = rng.standard_normal((29, 45)).astype("float32")
    f, got = _run(s, args, [a, b], (37, 45))
    np.testing.assert_allclose(got, ref(a, b), rtol=1e-4, atol=1e-4)
    src = f.imported_modules[0].get_source()
    assert "__local float A_shared" in src and "barrier(CLK_LOCAL_MEM_FENCE);" in src


@pytest.mark.parametrize("prog", ["rfactor_sum", "rfactor_max", "serial_reduce"])
def test_reductions(rng, prog):
    if prog == "rfactor_sum":
        s, args, ref = P.rfactor_sum()            # symbolic n, m
        shape = (13, 77)
    else:
        s, args, ref = getattr(P, prog)()
        shape = tuple(int(d) for d in args[0].shape)
    a = rng.standard_normal(shape).astype("float32")
    _, got = _run(s, args, [a], (shape[0],))
    np.testing.assert_allclose(got, ref(a), rtol=1e-4, atol=1e-4)


def test_conv2d_vthreads_and_the_opt_conv_tutorial(rng):
    s, args, ref = P.conv2d()
    x = rng.standard_normal((1, 4, 10, 10)).astype("float32")
    w = rng.standard_normal((8, 4, 3, 3)).astype("float32")
    _, got = _run(s, args, [x, w], (1, 8, 8, 8))
    np.testing.assert_allclose(got, ref(x, w), rtol=1e-4, atol=1e-4)
    s, args, ref = P.vthread_add(n=256)
    a = rng.standard_normal(256).astype("float32")
    _, got = _run(s, args, [a], (256,))
    np.testing.assert_allclose(got, ref(a), rtol=1e-6)
    s, args, ref = P.opt_conv_hwcn(batch=2, in_channel=4, out_channel=8, in_size=5)
    ins = [rng.standard_normal(tuple(int(d) for d in t.shape)).astype("float32") for t in args[:2]]
    _, got = _run(s, args, ins, tuple(int(d) for d in args[2].shape))
    np.testing.assert_allclose(got, ref(*ins), rtol=1e-4, atol=1e-4)


def test_integer_math_float64_and_scalars(rng):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype="int32")
    D = te.placeholder((n,), name="D", dtype="float64")
    k = te.var("k")
    B = te.compute((n,), lambda i: tvm.tir.floordiv(A[i], 3) * k + tvm.tir.floormod(A[i], 3), name="B")
    E = te.compute((n,), lambda i: te.exp(D[i]) + B[i].astype("float64"), name="E")
    s = te.create_schedule(E.op)
    s[B].compute_inline()
    bx, tx = s[E].split(E.op.axis[0], factor=32)
    s[E].bind(bx, te.thread_axis("blockIdx.x"))
    s[E].bind(tx, te.thread_axis("threadIdx.x"))
    a = rng.integers(-50, 50, 45).astype("int32")
    d = rng.standard_normal(45)
    _, got = _run(s, [A, D, E, k, n], [a, d], (45,), "float64", extra=(7, 45))
    np.testing.assert_allclose(got, np.exp(d) + (a // 3) * 7 + a % 3, rtol=1e-12)


def test_arrays_devices_and_errors(rng):
    dev = tvm.device("opencl", 0)
    assert dev == tvm.opencl(0) and dev.exist
    x = rng.standard_normal((3, 4)).astype("float32")
    arr = tvm.nd.array(x, dev)
    assert arr.device == dev and arr.shape == (3, 4)
    np.testing.assert_array_equal(arr.numpy(), x)
    s, args, _ = P.vector_add()
    f = tvm.build(s, args, "opencl")
    with pytest.raises(tvm.TVMLabError, match="opencl"):
        f(tvm.nd.array(x[0]), tvm.nd.array(x[0]), tvm.nd.array(x[0]))   # CPU arrays
    with pytest.raises(tvm.TVMLabError, match="dtype"):
        f(tvm.nd.array(x[0], dev), tvm.nd.array(x[0], dev), tvm.nd.array(x[0].astype("float64"), dev))
    with pytest.raises(tvm.TVMLabError, match="unknown option"):
        tvm.build(s, args, "opencl -bogus=1")
