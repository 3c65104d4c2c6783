"""te.compute whose body is a tensor intrinsic applied to tensor regions (TVM's TensorComputeOp):
the stage comes tensorized, and the lowered code is checked against numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te


def _saxpy_intrin(n):
    """z = x + 2 * y over n elements, written as an ir_builder loop over the bound buffers."""
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i] * 2.0, name="z")

    def intrin_func(ins, outs):
        ib = tvm.tir.ir_builder.create()
        xx, yy, zz = ib.buffer_ptr(ins[0]), ib.buffer_ptr(ins[1]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, "t") as t:
            zz[t] = xx[t] + yy[t] * 2.0
        return ib.get()
    return te.decl_tensor_intrin(z.op, intrin_func, default_buffer_params={"offset_factor": 1})


def _dot_intrin(l):
    """z[0] = sum_k x[k] * w[k], with reset and update statements for an outer reduction."""
    x = te.placeholder((l,), name="x")
    w = te.placeholder((l,), name="w")
    k = te.reduce_axis((0, l), name="k")
    z = te.compute((1,), lambda i: te.sum(x[k] * w[k], axis=k), name="z")

    def intrin_func(ins, outs):
        def accumulate(reset):
            ib = tvm.tir.ir_builder.create()
            xx, ww, zz = ib.buffer_ptr(ins[0]), ib.buffer_ptr(ins[1]), ib.buffer_ptr(outs[0])
            if reset:
                zz[0] = 0.0
                return ib.get()
            with ib.for_range(0, l, "t") as t:
                zz[0] = zz[0] + xx[t] * ww[t]
            return ib.get()
        return None, accumulate(True), accumulate(False)
    return te.decl_tensor_intrin(z.op, intrin_func, default_buffer_params={"offset_factor": 1})


def test_tensor_intrinsic_compute_on_regions_symbolic_rows(rng):
    m = te.var("m")
    f = 16
    A = te.placeholder((m, f), name="A")
    B = te.placeholder((m, f), name="B")
    saxpy = _saxpy_intrin(f)
    C = te.compute((m, f), lambda i: saxpy(A[i, 0:f], B[i, 0:f]), name="C")
    assert len(C.op.axis) == 2
    s = te.create_schedule(C.op)
    assert len(s.trace) == 0                         # tensorized by its definition, not by a step
    io, ii = s[C].split(C.op.axis[0], factor=3)      # outer axes schedule as usual (3 does not divide)
    fn = tvm.build(s, [A, B, C], "llvm")
    for rows in (7, 1):
        a = rng.standard_normal((rows, f)).astype("float32")
        b = rng.standard_normal((rows, f)).astype("float32")
        c = tvm.nd.array(np.full((rows, f), np.nan, "float32"))
        fn(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a + 2.0 * b, rtol=1e-6)


def test_tensor_intrinsic_compute_with_an_outer_reduction(rng):
    n, blocks, l = 5, 3, 8
    X = te.placeholder((n, blocks, l), name="X")
    W = te.placeholder((blocks, l), name="W")
    dot = _dot_intrin(l)
    r = te.reduce_axis((0, blocks), name="r")
    Y = te.compute((n, 1), lambda i: dot(X[i, r, 0:l], W[r, 0:l], reduce_axis=r), name="Y")
    s = te.create_schedule(Y.op)
    fn = tvm.build(s, [X, W, Y], "llvm")
    x = rng.standard_normal((n, blocks, l)).astype("float32")
    w = rng.standard_normal((blocks, l)).astype("float32")
    y = tvm.nd.array(np.full((n, 1), np.nan, "float32"))
    fn(tvm.nd.array(x), tvm.nd.array(w), y)
    np.testing.assert_allclose(y.numpy()[:, 0], np.einsum("nbl,bl->n", x, w), rtol=1e-5)


def test_tensor_intrinsic_call_errors():
    A = te.placeholder((4, 16), name="A")
    saxpy = _saxpy_intrin(16)
    with pytest.raises(tvm.TVMLabError, match="takes 2 regions"):
        te.compute((4, 16), lambda i: saxpy(A[i, 0:16]))
    with pytest.raises(tvm.TVMLabError, match="intrinsic"):
        te.compute((4, 8), lambda i: saxpy(A[i, 0:8], A[i, 0:8]))
    with pytest.raises(tvm.TVMLabError, match="regions"):
        te.compute((4, 16), lambda i: saxpy(A[i, 0:16], 1.0))
