"""TE behaviours TVM's own tests exercise: rfactor of a reduction with init=, tir.popcount, the
schedule graph helpers."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor_of_a_reduction_with_init_adds_the_init_once(rng, factor_axis):
    n = 37
    A = te.placeholder((n, n), name="A")
    C = te.placeholder((n, n), name="C")
    I = te.placeholder((n, n), name="I")
    k = te.reduce_axis((0, n))
    B = te.compute((n, n), lambda i, j: te.sum(A[i, k] * C[k, j], axis=k, init=I[i, j]), name="B")
    s = te.create_schedule(B.op)
    kf, ki = s[B].split(k, nparts=4)                 # 4 does not divide 37
    BF = s.rfactor(B, kf, factor_axis)
    s[BF].parallel(BF.op.axis[0])
    f = tvm.build(s, [A, C, I, B], "llvm")
    a, c, ii = (rng.standard_normal((n, n)).astype("float32") for _ in range(3))
    b = tvm.nd.array(np.full((n, n), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(c), tvm.nd.array(ii), b)
    np.testing.assert_allclose(b.numpy(), ii + a @ c, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint8"])
def test_popcount(rng, dtype):
    n = te.var("n")
    A = te.placeholder((n,), dtype, name="A")
    B = te.compute((n,), lambda i: tvm.tir.popcount(A[i]), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B], "llvm")
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 29, dtype=dtype, endpoint=True)
    b = tvm.nd.array(np.zeros(29, dtype))
    f(tvm.nd.array(a), b)
    want = [bin(int(x) & ((1 << (8 * a.itemsize)) - 1)).count("1") for x in a]
    np.testing.assert_array_equal(b.numpy(), want)
    with pytest.raises(tvm.TVMLabError):
        tvm.tir.popcount(tvm.tir.const(1.0))


def test_read_graph_post_order_and_scan_body():
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    g = tvm.te.schedule.CreateReadGraph([A2.op])
    assert g[A2.op] == [A1] and g[A1.op] == [A]
    assert tvm.te.schedule.PostDFSOrder([A2.op], g) == [A.op, A1.op, A2.op]
    x = te.placeholder((m, l), name="x")
    state = te.placeholder((m, l), name="state")
    init = te.compute((1, l), lambda _, i: x[0, i], name="init")
    up1 = te.compute((m, l), lambda t, i: state[t - 1, i] + 1, name="up1")
    update = te.compute((m, l), lambda t, i: up1[t, i] + x[t, i], name="update")
    scan = te.scan(init, update, state)
    assert set(tvm.te.schedule.ScanGetBody(scan.op)) == {scan.op, update.op, up1.op}
    with pytest.raises(tvm.TVMLabError):
        tvm.te.schedule.ScanGetBody(A2.op)


def test_cache_write_of_a_reduction_whose_range_depends_on_the_output_axis(rng):
    X = te.placeholder((10,), name="x")

    def prefix(n):                       # y[n] = sum of x[0:n], clipped below at n by the combiner
        rv = te.reduce_axis((0, n))
        init = lambda dtype: tvm.tir.Select(n > 1, tvm.tir.const(0, dtype), n.astype(dtype))  # noqa: E731
        red = te.comm_reducer(lambda a, b: tvm.te.max(a + b, n.astype("float32")), init, name="red")
        return red(X[rv], axis=rv)
    Y = te.compute(X.shape, prefix, name="y")
    s = te.create_schedule([Y.op])
    s.cache_write(Y, "local")
    f = tvm.build(s, [X, Y])
    x = rng.standard_normal(10).astype("float32")
    y = tvm.nd.array(np.full(10, np.nan, "float32"))
    f(tvm.nd.array(x), y)
    want = []
    for n in range(10):
        acc = 0.0 if n > 1 else float(n)
        for r in range(n):
            acc = max(acc + float(x[r]), float(n))
        want.append(acc)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)


def test_bounds_of_local_and_warp_stages_inside_thread_loops(rng):
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    A1 = te.compute((m,), lambda i: A[i] * 2.0, name="A1")
    A2 = te.compute((m,), lambda i: A1[i] + 2.0, name="A2")
    A3 = te.compute((m,), lambda i: A2[i] + 3.0, name="A3")
    s = te.create_schedule(A3.op)
    s[A2].set_scope("shared")
    s[A1].set_scope("local")
    tx = te.thread_axis("threadIdx.x")
    bx, t = s[A3].split(A3.op.axis[0], factor=32)
    s[A3].bind(bx, te.thread_axis("blockIdx.x"))
    s[A3].bind(t, tx)
    s[A2].compute_at(s[A3], t)
    _, xi = s[A2].split(A2.op.axis[0], nparts=1)
    s[A2].bind(xi, tx)
    s[A1].compute_at(s[A3], t)
    bounds = tvm.te.schedule.InferBound(s.normalize())
    assert bounds[A1.op.axis[0]].extent.value == 1          # each thread its own element
    assert bounds[A2.op.axis[0]].extent.value == 32         # shared by the block's threads
    if tvm.opencl(0).exist:                                   # and the kernel computes the right thing
        f = tvm.build(s, [A, A3], "opencl")
        a = rng.standard_normal(77).astype("float32")
        out = tvm.nd.array(np.full(77, np.nan, "float32"), tvm.opencl(0))
        f(tvm.nd.array(a, tvm.opencl(0)), out)
        np.testing.assert_allclose(out.numpy(), a * 2.0 + 5.0, rtol=1e-6)

    B = te.placeholder((m, 8), name="B")
    B1 = te.compute((m, 8), lambda i, j: B[i, j], name="B1")
    B2 = te.compute((m, 8), lambda i, j: B1[i, j] + 3, name="B2")
    s = te.create_schedule(B2.op)
    s[B1].set_scope("warp")
    xo, xi = s[B2].split(B2.op.axis[0], 32)
    xi0, xi1 = s[B2].split(xi, factor=16)
    s[B2].bind(xi1, tx)
    s[B2].bind(xi0, te.thread_axis("threadIdx.y"))
    s[B1].compute_at(s[B2], B2.op.axis[1])
    _, wi = s[B1].split(s[B1].op.axis[0], factor=16)
    s[B1].bind(wi, tx)
    assert tvm.te.schedule.InferBound(s)[B1.op.axis[0]].extent.value == 16   # a warp's lanes share it


def test_nested_groups_compute_at_inside_each_other(rng):
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: tvm.tir.const(1, "float32") * i + j, name="x")
    x1 = te.compute(x.shape, lambda *i: x(*i) + 1, name="x1")
    x2 = te.compute(x.shape, lambda *i: x1(*i) + 2, name="x2")
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x)                         # {x1}
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)    # {x, g1}: g1 nests in g2
    assert s[x].group is g2 and s[x1].group is g1 and g1.group is g2
    assert g2.num_child_stages == 2 and g1.num_child_stages == 1

    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x, inputs=x, include_inputs=True)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x].group is g1 and s[x1].group is g2 and g1.group is g2
    g2.compute_at(s[x2], x2.op.axis[0])
    g1.compute_at(s[x1], s[x1].op.axis[1])
    bounds = tvm.te.schedule.InferBound(s.normalize())
    assert bounds[x.op.axis[0]].extent.value == 1 and bounds[x.op.axis[1]].extent.value == 1
    assert bounds[x1.op.axis[0]].extent.value == 1
    f = tvm.build(s, [x2, m, n], "llvm")
    out = tvm.nd.array(np.full((4, 5), np.nan, "float32"))
    f(out, 4, 5)
    i, j = np.meshgrid(np.arange(4), np.arange(5), indexing="ij")
    np.testing.assert_allclose(out.numpy(), i + j + 3.0)
    g2.compute_root()                                                 # g1 stays inside x1
    assert s[x1].attach_type == "root" and s[x].attach_stage is s[x1]

    s = te.create_schedule(x2.op)
    s.create_group(outputs=x1, inputs=x, include_inputs=True)         # {x, x1}
    with pytest.raises(tvm.TVMLabError, match="nests only whole"):
        s.create_group(outputs=x2, inputs=x)                          # {x1, x2} would split {x, x1}


def test_scalar_on_the_left_of_a_whole_tensor_is_element_wise(rng):
    """``n + B`` is B's element-wise compute, as ``B + n`` is (a 0-d tensor too, outside a compute body)."""
    n = te.var("n", dtype="float32")
    B = te.placeholder((5, 3), name="B")
    outs = [n + B, n - B, n * B, n / B]
    assert all(isinstance(o, te.Tensor) and tuple(o.shape) == (5, 3) for o in outs)
    s = te.create_schedule([o.op for o in outs])
    f = tvm.build(s, [B, n, *outs])
    b = rng.uniform(1, 2, (5, 3)).astype("float32")
    got = [tvm.nd.array(np.full((5, 3), np.nan, "float32")) for _ in outs]
    f(tvm.nd.array(b), 2.5, *got)
    for g, want in zip(got, [2.5 + b, 2.5 - b, 2.5 * b, 2.5 / b]):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)
    z = te.placeholder((), name="z")
    assert isinstance(n + z, te.Tensor) and (n + z).shape == ()


def test_zero_d_tensor_arithmetic_makes_tensors_outside_compute_bodies(rng):
    """Outside a compute body a 0-d tensor in arithmetic is a whole tensor, as in TVM: tensor with
    tensor is tagged "broadcast", tensor with scalar "elemwise"."""
    n = te.var("n", dtype="float32")
    A = te.placeholder((), name="A")
    B = te.placeholder((5, 3), name="B")
    B2 = B[0, 0]
    for e in (1 + A, A * 2, n - A, A / n, A + A, B2 + A, A - B2):
        assert isinstance(e, te.Tensor) and e.shape == ()
    assert not isinstance(B2 + n, te.Tensor) and not isinstance(B2 * B2, te.Tensor)
    assert (A + B).op.tag == (B - A).op.tag == (A + A).op.tag == (B * B).op.tag == "broadcast"
    assert (A + 1).op.tag == (n * A).op.tag == (B + n).op.tag == (B2 + A).op.tag == "elemwise"
    outs = [A + B, B / A, 3 - A, A * A + n, B2 - A]
    shapes = [(5, 3), (5, 3), (), (), ()]
    assert [tuple(int(d) for d in o.shape) for o in outs] == shapes
    s = te.create_schedule([o.op for o in outs])
    f = tvm.build(s, [A, B, n, *outs])
    a = np.array(rng.uniform(1, 2), "float32")
    b = rng.uniform(1, 2, (5, 3)).astype("float32")
    got = [tvm.nd.array(np.full(sh, np.nan, "float32")) for sh in shapes]
    f(tvm.nd.array(a), tvm.nd.array(b), 0.5, *got)
    for g, want in zip(got, [a + b, b / a, 3 - a, a * a + 0.5, b[0, 0] - a]):
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)


def test_zero_d_tensor_in_a_compute_body_reads_its_element(rng):
    """Inside a compute body ``A * 2`` of a 0-d A is the scalar ``A() * 2`` (TVM would refuse a tensor
    there), so bodies written that way keep one stage."""
    A = te.placeholder((), name="A")
    B = te.placeholder((4, 6), name="B")
    C = te.compute((4, 6), lambda i, j: B[i, j] + A * 2 - (1 - A), name="C")
    D = te.compute((), lambda: A + A * A, name="D")
    assert C.op.input_tensors == [B, A] and D.op.input_tensors == [A]
    s = te.create_schedule([C.op, D.op])
    f = tvm.build(s, [A, B, C, D])
    a = np.array(rng.uniform(1, 2), "float32")
    b = rng.uniform(1, 2, (4, 6)).astype("float32")
    c, d = tvm.nd.array(np.full((4, 6), np.nan, "float32")), tvm.nd.array(np.full((), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c, d)
    np.testing.assert_allclose(c.numpy(), b + a * 2 - (1 - a), rtol=1e-6)
    np.testing.assert_allclose(d.numpy(), a + a * a, rtol=1e-6)


def test_which_reductions_a_compute_accepts():
    """A reduction is the whole body (of every output of a multi-output compute, with one reducer
    and the same axes); anything else is refused with a TVMError (``tvm._ffi.base.TVMError``)."""
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    k2 = te.reduce_axis((0, m - 1), "k2")
    te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    te.compute((n,), lambda i: A[i, 0] + 1, name="B")
    bad = [lambda i: te.sum(A[i, k], axis=k) + 1,
           lambda i: A[i, 0] * (te.sum(A[i, k], axis=k) + 1),
           lambda i: (te.sum(A[i, k], axis=k), A[i, 0] + 1),
           lambda i: (te.sum(A[i, k], axis=k), te.sum(A[i, k2], axis=k2))]
    for f in bad:
        with pytest.raises(tvm._ffi.base.TVMError):
            te.compute((n,), f, name="B")


@pytest.mark.parametrize("prim", ["split", "fuse"])
def test_split_or_fuse_of_a_compute_at_axis_moves_the_attached_stage(rng, prim):
    """A stage computed at an axis that is then split (fused) is computed at the inner part (the
    fused axis), as TVM legalizes it; the result is unchanged."""
    A = te.placeholder((10, 7), name="A")
    B = te.compute((10, 7), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((10, 7), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    if prim == "split":
        jo, ji = s[C].split(C.op.axis[1], 3)            # 3 does not divide 7
        assert s[B].attach_ivar is ji
    else:
        fused = s[C].fuse(C.op.axis[0], C.op.axis[1])
        assert s[B].attach_ivar is fused
    assert "B[0] = " in str(tvm.lower(s, [A, C], simple_mode=True))     # one element per inner step
    f = tvm.build(s, [A, C])
    a = rng.standard_normal((10, 7)).astype("float32")
    c = tvm.nd.array(np.full((10, 7), np.nan, "float32"))
    f(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 2.0 + 1.0, rtol=1e-6)


def test_stage_at_a_split_of_a_fused_axis_covers_one_tile_row(rng):
    """A stage computed at the outer part of a fused-then-split axis covers the rows of that tile;
    where the split factor divides the row, only the tile's own columns."""
    m, l = te.var("m"), 6
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j] * 3.0, name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3.0, name="A2")
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(s[A2].fuse(*A2.op.axis), 3)
    s[A1].compute_at(s[A2], xo)
    bounds = tvm.te.schedule.InferBound(s)
    at = {xo.var: tvm.tir.const(5, "int32")}
    ana = tvm.arith.Analyzer()
    got = [int(ana.simplify(tvm.tir.stmt_functor.substitute(e, at)))
           for iv in A1.op.axis for e in (bounds[iv].min, bounds[iv].extent)]
    assert got == [2, 1, 3, 3]                     # row 15 // 6, columns 15 % 6 .. 17 % 6
    f = tvm.build(s, [A, A2, m])
    for rows in (1, 5):
        a = rng.standard_normal((rows, l)).astype("float32")
        c = tvm.nd.array(np.full((rows, l), np.nan, "float32"))
        f(tvm.nd.array(a), c, rows)
        np.testing.assert_allclose(c.numpy(), a * 3.0 + 3.0, rtol=1e-6)


def _local_stage(tag, scope):
    A = te.placeholder((2, 3, 2), name="A")
    B = te.compute(A.shape, lambda i, j, k: A[i, j, k] * 2.0, name="B")
    C = te.compute(A.shape, lambda i, j, k: B[i, j, k] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].set_scope(scope)
    _, bi = s[B].split(B.op.axis[1], 3)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    t = te.thread_axis(tag)
    s[C].bind(C.op.axis[1], t)
    s[B].bind(bi, t)
    return s, A, C


@pytest.mark.parametrize("tag, scope", [("threadIdx.x", "local"), ("vthread", "local"),
                                        ("blockIdx.y", "shared")])
def test_thread_bound_axis_of_a_per_thread_stage_computes_the_threads_own_copy(rng, tag, scope):
    """A stage whose storage the threads of its bound axis do not share (threadIdx of "local",
    blockIdx of "shared") already has the consumer's thread index in its bounds: each thread
    computes its own copy, with no guard (before, threads past the first read unwritten memory)."""
    s, A, C = _local_stage(tag, scope)
    body = tvm.lower(s, [A, C])["main"].body
    found = []
    tvm.tir.stmt_functor.post_order_visit(body, lambda x: found.append(isinstance(x, tvm.tir.IfThenElse)))
    assert not any(found)
    f = tvm.build(s, [A, C], "cuda")
    a = rng.standard_normal((2, 3, 2)).astype("float32")
    c = np.full((2, 3, 2), np.nan, "float32")
    tvm.testing.simulate(f, a, c)                 # raises on a read of unwritten memory
    np.testing.assert_allclose(c, a * 2.0 + 1.0, rtol=1e-6)


def test_local_cache_read_bound_to_threads_loads_each_threads_elements(rng):
    A = te.placeholder((128,), name="A")
    B = te.compute((128,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((128,), lambda i: B[i] + 2.0, name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [B])
    s[B].set_scope("shared")
    tx = te.thread_axis((0, 32), "threadIdx.x")
    oc, ic = s[C].split(C.op.axis[0], factor=64)
    ooc, ioc = s[C].split(oc, factor=2)
    _, iic = s[C].split(ic, factor=32)
    s[C].bind(ooc, te.thread_axis("blockIdx.x"))
    s[C].bind(iic, tx)
    s[B].compute_at(s[C], ioc)
    s[B].bind(s[B].split(B.op.axis[0], factor=32)[1], tx)
    s[AA].compute_at(s[C], ooc)
    s[AA].bind(s[AA].split(AA.op.axis[0], factor=32)[1], tx)
    body = tvm.lower(s, [A, C])["main"].body
    found = []
    tvm.tir.stmt_functor.post_order_visit(body, lambda x: found.append(
        "if" if isinstance(x, tvm.tir.IfThenElse) else
        x.extents[0].value if isinstance(x, tvm.tir.Allocate) and x.scope == "local" else None))
    assert "if" not in found and 97 in found      # 3 * 32 + 1 elements from this thread's first
    f = tvm.build(s, [A, C], "cuda")
    a = rng.standard_normal(128).astype("float32")
    c = np.full(128, np.nan, "float32")
    tvm.testing.simulate(f, a, c)
    np.testing.assert_allclose(c, a + 3.0, rtol=1e-6)
