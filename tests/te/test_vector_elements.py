"""Tensors of vector elements (dtype "float32x2"): shapes count vectors, memory holds their lanes
side by side, and a vectorized loop over k elements of l lanes is one k*l-lane access."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import BuildError, DSLError, RuntimeArgError
from tvmlab.ir.expr import Load, Ramp
from tvmlab.ir.functor import post_order_visit


def _vector_array(rng, n, dtype):
    lanes = int(dtype.split("x")[1])
    host = rng.standard_normal((n, lanes)) * 8
    return tvm.nd.empty((n,), dtype).copyfrom(host)


def _out(n, dtype, poison):
    return poison(tvm.nd.empty((n,), dtype))


def _ramps(stmt):
    found = []
    post_order_visit(stmt, lambda x: found.append(x.index.lanes) if isinstance(x, Load)
                     and isinstance(x.index, Ramp) else None)
    return found


def _tvm_schedule(n, dtype):
    """TVM's test_in_bounds_vectorize_llvm: a copy computed at the parallel outer loop, both
    stages vectorized over two elements."""
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[i], name="B")
    C = te.compute((n,), lambda i: B[i] + tvm.tir.const(1, A.dtype), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], nparts=2)
    _, xi = s[C].split(xi, factor=2)
    s[C].parallel(xo)
    s[C].vectorize(xi)
    s[B].compute_at(s[C], xo)
    _, bi = s[B].split(B.op.axis[0], factor=2)
    s[B].vectorize(bi)
    return s, A, C


@pytest.mark.parametrize("n,dtype", [(512, "float32x2"), (37, "float32x2"), (64, "float32x4")])
@pytest.mark.parametrize("checked", [False, True])
def test_parallel_compute_at_vectorized(rng, poison, n, dtype, checked):
    """37: neither split divides the extent; with bound checkers every access is checked
    against the buffer's lanes too."""
    s, A, C = _tvm_schedule(n, dtype)
    lanes = int(dtype.split("x")[1])
    with tvm.transform.PassContext(config={"tir.instrument_bound_checkers": checked}):
        if n % 4 == 0:        # two elements per vector access, lanes each
            assert set(_ramps(tvm.lower(s, [A, C])["main"].body)) == {2 * lanes}
        f = tvm.build(s, [A, C], "llvm")
    a = _vector_array(rng, n, dtype)
    c = _out(n, dtype, poison)
    f(a, c)
    assert a.numpy().shape == (n, lanes) and c.shape == (n,)
    np.testing.assert_allclose(c.numpy(), a.numpy() + 1, rtol=1e-6)


def test_symbolic_extent_and_elementwise_math(rng, poison):
    n = te.var("n")
    A = te.placeholder((n,), name="A", dtype="float32x4")
    B = te.placeholder((n,), name="B", dtype="float32x4")
    C = te.compute((n,), lambda i: te.exp(A[i] * 0.125) + te.max(B[i], A[n - 1 - i]) * 2, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    f = tvm.build(s, [A, B, C, n], "llvm")
    for m in (1, 13, 64):
        a, b = _vector_array(rng, m, "float32x4"), _vector_array(rng, m, "float32x4")
        c = _out(m, "float32x4", poison)
        f(a, b, c, m)
        an, bn = a.numpy(), b.numpy()
        np.testing.assert_allclose(c.numpy(), np.exp(an * 0.125) + np.maximum(bn, an[::-1]) * 2, rtol=1e-5)


def test_integer_elements_and_2d_shape(rng, poison):
    A = te.placeholder((5, 6), name="A", dtype="int32x2")
    C = te.compute((5, 6), lambda i, j: A[i, j] * 3 - A[4 - i, j], name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    f = tvm.build(s, [A, C], "llvm")
    host = rng.integers(-1000, 1000, (5, 6, 2)).astype("int32")
    a = tvm.nd.array(host, dtype="int32x2")
    c = poison(tvm.nd.empty((5, 6), "int32x2"))
    f(a, c)
    np.testing.assert_array_equal(c.numpy(), host * 3 - host[::-1])


def test_arguments_are_checked_by_lanes_and_shape_in_elements():
    A = te.placeholder((8,), name="A", dtype="float32x2")
    C = te.compute((8,), lambda i: A[i] * 2, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C], "llvm")
    c = tvm.nd.empty((8,), "float32x2")
    with pytest.raises(RuntimeArgError, match="expected dtype float32x2, got float32"):
        f(tvm.nd.array(np.ones((8, 2), "float32")), c)
    with pytest.raises(RuntimeArgError, match="expected dtype float32x2, got float32x4"):
        f(tvm.nd.empty((8,), "float32x4"), c)
    with pytest.raises(RuntimeArgError, match=r"shape\[0\] = 8, got 9"):
        f(tvm.nd.empty((9,), "float32x2"), c)


def test_reductions_and_gpu_targets_refuse_vector_elements():
    A = te.placeholder((16,), name="A", dtype="float32x2")
    k = te.reduce_axis((0, 16), "k")
    with pytest.raises(DSLError, match=r"compute 'S': reductions over vector elements \(float32x2\)"):
        te.compute((1,), lambda i: te.sum(A[k], axis=k), name="S")
    C = te.compute((16,), lambda i: A[i] + tvm.tir.const(1, "float32x2"), name="C")
    for target in ("cuda", "opencl"):
        s = te.create_schedule(C.op)
        s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
        with pytest.raises(BuildError, match=f"tensor A has vector elements \\(float32x2\\), which the {target}"):
            tvm.build(s, [A, C], target)
    with pytest.raises(BuildError, match="which the opengl target"):
        tvm.build(te.create_schedule(C.op), [A, C], "opengl")

