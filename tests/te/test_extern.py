"""tir.call_extern / call_pure_extern: a C function by name, on the CPU, in CUDA C and in GLSL."""
import os

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tvmlab as tvm  # noqa: E402
from tvmlab import te  # noqa: E402
from tvmlab.errors import BuildError, DSLError  # noqa: E402
from tvmlab.runtime import opengl_context as glc  # noqa: E402


def _exp_of(fname, dtype="float32", pure=True):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    call = tvm.tir.call_pure_extern if pure else tvm.tir.call_extern
    B = te.compute((n,), lambda i: call(dtype, fname, A[i]) + 1, name="B")
    return A, B


@pytest.mark.parametrize("dtype,fname", [("float32", "expf"), ("float64", "exp")])
@pytest.mark.parametrize("vectorized", [False, True])
def test_llvm_links_libm(dtype, fname, vectorized, check_build):
    A, B = _exp_of(fname, dtype)
    s = te.create_schedule(B.op)
    if vectorized:            # no vector form: the call is made once per lane
        xo, xi = s[B].split(B.op.axis[0], factor=8)
        s[B].vectorize(xi)
    check_build(s, [A, B], lambda a: np.exp(a) + 1, env={"n": 37}, ranges={"A": (-3, 3)})


def test_two_arguments_and_impure_call(check_build):
    A = te.placeholder((50,), name="A")
    B = te.placeholder((50,), name="B")
    C = te.compute((50,), lambda i: tvm.tir.call_extern("float32", "atan2f", A[i], B[i]), name="C")
    check_build(te.create_schedule(C.op), [A, B, C], np.arctan2)


def test_printed_with_its_dtype():
    A, B = _exp_of("expf")
    text = str(tvm.lower(te.create_schedule(B.op), [A, B], simple_mode=True))
    assert 'T.call_pure_extern("float32", "expf", A[i])' in text


def test_unknown_symbol_fails_the_build():
    A, B = _exp_of("no_such_function_anywhere")
    with pytest.raises(BuildError, match="no_such_function_anywhere"):
        tvm.build(te.create_schedule(B.op), [A, B], "llvm")


@pytest.mark.parametrize("args,match", [
    (("float32", "bad name", 1.0), "C identifier"),
    (("float32", 7, 1.0), "C identifier"),
    (("floaty", "expf", 1.0), "dtype 'floaty'"),
    (("float32", "expf", object()), "argument 0"),
])
def test_bad_arguments(args, match):
    with pytest.raises(DSLError, match=match):
        tvm.tir.call_extern(*args)


def _gpu_schedule(B):
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s


def test_cuda_calls_the_device_function():
    A, B = _exp_of("__expf")
    dev = tvm.build(_gpu_schedule(B), [A, B], "cuda").imported_modules[0]
    assert "__expf(A[" in dev.get_source()
    assert "ex2.approx" in dev.get_source("ptx")          # NVRTC resolved the fast intrinsic


@pytest.mark.skipif(not glc.available(), reason="no OpenGL context on this machine")
def test_glsl_calls_the_builtin():
    A, B = _exp_of("exp")
    f = tvm.build(_gpu_schedule(B), [A, B], "opengl -compute")
    assert "exp(A[" in f.get_source()
    dev = tvm.opengl(0)
    a = np.random.default_rng(3).uniform(-3, 3, 100).astype("float32")
    b = tvm.nd.array(np.full(100, np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), np.exp(a) + 1, rtol=1e-5)


def test_impure_call_is_made_once_per_lane():
    """rand() has no arguments, so the same in every lane: vectorised it must still run once per element."""
    A = te.placeholder((64,), name="A", dtype="int32")
    B = te.compute((64,), lambda i: A[i] + tvm.tir.call_extern("int32", "rand") % 2, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B], "llvm")
    a = np.zeros(64, "int32")
    b = tvm.nd.array(np.full(64, -1, "int32"))
    f(tvm.nd.array(a), b)
    got = b.numpy()
    assert set(np.unique(got)) <= {0, 1}
    assert any(0 < got[k:k + 16].sum() < 16 for k in range(0, 64, 16)), got   # lanes differ within a vector
