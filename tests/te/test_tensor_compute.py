"""te.compute whose body is a tensor intrinsic applied to tensor regions (TVM's TensorComputeOp):
its outer axes schedule as loops around the intrinsic's statements; the code is checked against numpy."""
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
    assert len(C.op.axis) == 2 and isinstance(C.op, te.TensorComputeOp)
    s = te.create_schedule(C.op)
    assert len(s.trace) == 0 and len(s[C].leaf_iter_vars) == 1      # the tile is not a loop
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


def _run(fn, arrays, out_shape):
    out = tvm.nd.array(np.full(out_shape, np.nan, "float32"))
    fn(*[tvm.nd.array(a) for a in arrays], out)
    return out.numpy()


def test_regions_at_offsets_with_cache_read_cache_write_and_compute_at(rng):
    rows, f = 10, 16
    A = te.placeholder((rows, f + 3), name="A")
    B = te.placeholder((rows, f), name="B")
    saxpy = _saxpy_intrin(f)
    C = te.compute((rows, f), lambda i: saxpy(A[i, 3:3 + f], B[i, 0:f]), name="C")
    s = te.create_schedule(C.op)
    AL = s.cache_read(A, "local", C)
    CL = s.cache_write(C, "local")
    assert isinstance(s[CL].op, te.TensorComputeOp) and isinstance(s[C].op, te.ComputeOp)
    io, ii = s[C].split(C.op.axis[0], 4)                  # 4 does not divide 10
    s[CL].compute_at(s[C], io)
    s[AL].compute_at(s[CL], s[CL].op.axis[0])
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[s[AL].op.axis[0]].extent.value == 1    # one row of A per call
    assert bounds[s[AL].op.axis[1]].extent.value == f    # the region, not A's whole row
    fn = tvm.build(s, [A, B, C], "llvm")
    a = rng.standard_normal((rows, f + 3)).astype("float32")
    b = rng.standard_normal((rows, f)).astype("float32")
    np.testing.assert_allclose(_run(fn, [a, b], (rows, f)), a[:, 3:] + 2.0 * b, rtol=1e-6)


def test_bound_inference_takes_the_hull_of_each_region():
    A = te.placeholder((20, 20), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j], name="B")
    m = te.var("m")
    x = te.placeholder((m, 20), name="x")
    z = te.compute((1, 20), lambda i, j: x[0, j] + x[1, j], name="z")
    sums = te.decl_tensor_intrin(z.op, lambda ins, outs: tvm.tir.call_extern(
        "int32", "rowsum", outs[0].access_ptr("w"), ins[0].access_ptr("r")),
        default_buffer_params={"offset_factor": 1})
    C = te.compute((10, 20), lambda i: sums(B[i:10, 0:20]), name="C")   # rows i..9 for row i
    s = te.create_schedule(C.op)
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[B.op.axis[0]].extent.value == 10 and bounds[B.op.axis[1]].extent.value == 20


def test_scalar_params_take_values_of_the_call(rng):
    n = 8
    x = te.placeholder((n,), name="x")
    v = te.var("v", "float32")
    w = te.var("w")
    z = te.compute((n,), lambda i: x[i] * v + w.astype("float32"), name="z")

    def intrin_func(ins, outs, sp):
        assert list(sp) == [v, w]
        ib = tvm.tir.ir_builder.create()
        xx, zz = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, "t") as t:
            zz[t] = xx[t] * sp[0] + sp[1].astype("float32")
        return ib.get()
    axpb = te.decl_tensor_intrin(z.op, intrin_func, scalar_params=[v, w],
                                 default_buffer_params={"offset_factor": 1})
    assert axpb.scalar_params == [v, w]
    A = te.placeholder((5, n), name="A")
    S0 = te.placeholder((5,), name="S0")
    S = te.compute((5,), lambda i: S0[i] * 3.0, name="S")           # a computed scalar source
    C = te.compute((5, n), lambda i: axpb(S[i] * 2.0, A[i, 0:n], i + 1), name="C")
    s = te.create_schedule(C.op)
    fn = tvm.build(s, [A, S0, C], "llvm")
    a = rng.standard_normal((5, n)).astype("float32")
    s0 = rng.standard_normal(5).astype("float32")
    want = a * (6.0 * s0)[:, None] + (np.arange(5) + 1.0)[:, None]
    np.testing.assert_allclose(_run(fn, [a, s0], (5, n)), want, rtol=1e-5)
    with pytest.raises(tvm.TVMLabError, match="2 scalar values"):
        te.compute((5, n), lambda i: axpb(A[i, 0:n], 1.0))


def test_outer_reduction_without_reset_runs_the_body_first(rng):
    n, blocks, l = 4, 3, 8
    X = te.placeholder((n, blocks, l), name="X")
    x = te.placeholder((l,), name="x")
    k = te.reduce_axis((0, l), name="k")
    z = te.compute((1,), lambda i: te.sum(x[k] * 2.0, axis=k), name="z")

    def intrin_func(ins, outs):
        def step(first):
            ib = tvm.tir.ir_builder.create()
            xx, zz = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
            if first:
                zz[0] = 0.0
            with ib.for_range(0, l, "t") as t:
                zz[0] = zz[0] + xx[t] * 2.0
            return ib.get()
        return step(True), None, step(False)
    dsum = te.decl_tensor_intrin(z.op, intrin_func, default_buffer_params={"offset_factor": 1})
    r = te.reduce_axis((0, blocks), name="r")
    Y = te.compute((n, 1), lambda i: dsum(X[i, r, 0:l], reduce_axis=r), name="Y")
    s = te.create_schedule(Y.op)
    ro, ri = s[Y].split(r, 2)                             # 2 does not divide 3
    s[Y].reorder(ro, Y.op.axis[0], ri)
    fn = tvm.build(s, [X, Y], "llvm")
    xv = rng.standard_normal((n, blocks, l)).astype("float32")
    np.testing.assert_allclose(_run(fn, [xv], (n, 1))[:, 0], 2.0 * xv.sum(axis=(1, 2)), rtol=1e-5)


def test_schedule_errors_on_an_intrinsic_stage():
    A = te.placeholder((4, 16), name="A")
    saxpy = _saxpy_intrin(16)
    B = te.compute((4, 16), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 16), lambda i: saxpy(A[i, 0:16], B[i, 0:16]), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(tvm.TVMLabError, match="inside the tile of tensor intrinsic"):
        s[C].split(C.op.axis[1], 4)
    with pytest.raises(tvm.TVMLabError, match="computed by tensor intrinsic"):
        s[C].tensorize(C.op.axis[0], saxpy)
    with pytest.raises(tvm.TVMLabError, match="computed by tensor intrinsic"):
        s[C].compute_inline()
    assert len(s.trace) == 0 and s[C].attach_type == "root"
    s[B].compute_inline()
    with pytest.raises(tvm.TVMLabError, match="cannot be inlined"):
        tvm.lower(s, [A, C])
    with pytest.raises(tvm.TVMLabError, match="reduce_axis given"):
        te.compute((4, 16), lambda i: saxpy(A[i, 0:16], A[i, 0:16], reduce_axis=te.reduce_axis((0, 2))))
