"""TVM TE/TIR programs, written as TVM's own unit tests write them, that tvmlab runs unchanged."""
import pickle

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te


def _run(s, args, shapes, rng):
    f = tvm.build(s, args, "llvm")
    dev = tvm.cpu(0)
    ins = [rng.standard_normal(sh).astype("float32") for sh in shapes[:-1]]
    out = np.full(shapes[-1], np.nan, dtype="float32")
    nd = [tvm.nd.array(x, dev) for x in ins] + [tvm.nd.array(out, dev)]
    f(*nd)
    return ins, nd[-1].numpy()


@pytest.mark.parametrize("how", ["factor", "nparts"])
def test_split_part_larger_than_constant_extent_shrinks_to_it(how):
    n = 7
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3.0, name="B")
    C = te.compute((n,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], **{how: 16})
    s[B].compute_at(s[C], xo)
    bounds = tvm.te.schedule.InferBound(s)
    small = xi if how == "factor" else xo
    assert bounds[small].extent.value == n
    (a,), c = _run(s, [A, C], [(n,), (n,)], np.random.default_rng(0))
    np.testing.assert_allclose(c, a * 3.0 + 1.0, rtol=1e-6)


def test_split_part_larger_than_symbolic_extent_keeps_factor_and_guards():
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] - 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    assert tvm.te.schedule.InferBound(s)[xi].extent.value == 16
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.default_rng(1).standard_normal(5).astype("float32")
    b = tvm.nd.array(np.full(5, np.nan, "float32"))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a - 2.0)


def test_attach_type_compares_equal_to_tvm_codes_and_pickles():
    A = te.placeholder((4, 3), name="A")
    B = te.compute((4, 3), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((4, 3), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    assert s[B].attach_type == 1 and s[B].attach_type == "root"
    s[B].compute_at(s[C], C.op.axis[0])
    assert s[B].attach_type == 4 and s[B].attach_type != 1
    s[B].compute_inline()
    assert s[B].attach_type == 2 and s[B].attach_type == "inline"
    assert int(s[B].attach_type) == 2
    s2 = pickle.loads(pickle.dumps(s))
    assert s2[s2.outputs[0]].attach_type == 1


def test_auto_inline_broadcast_inlines_broadcasts_only():
    m, n = 5, 6
    A = te.placeholder((1,), name="A")
    B = te.placeholder((m, n), name="B")
    R = te.placeholder((n,), name="R")
    T1 = te.compute((m, n), lambda i, j: A(0) * B(i, j), name="T1")
    T2 = te.compute((m, n), lambda i, j: R(j) + T1(i, j), name="T2")
    Tt = te.compute((n, m), lambda j, i: T2(i, j), name="Tt")  # a transpose: not a broadcast
    D = te.compute((n, m), lambda j, i: Tt(j, i) - 1.0, name="D")
    s = te.create_schedule(D.op)
    tvm.te.schedule.AutoInlineBroadcast(s)
    assert s[T1].attach_type == 2 and s[T2].attach_type == 2
    assert s[Tt].attach_type == 1
    (a, b, r), d = _run(s, [A, B, R, D], [(1,), (m, n), (n,), (n, m)], np.random.default_rng(2))
    np.testing.assert_allclose(d, (r[None, :] + a[0] * b).T - 1.0, rtol=1e-6)


def test_auto_inline_broadcast_refuses_a_foreign_object():
    with pytest.raises(tvm.error.TVMError):
        tvm.te.schedule.AutoInlineBroadcast("not a schedule")


def test_te_tensor_module_names_the_tensor_class():
    m = te.size_var("m")
    A = te.placeholder((m, 3), name="A")
    k = te.reduce_axis((0, 3), "k")
    C = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="C")
    loaded = tvm.ir.load_json(tvm.ir.save_json(C))
    assert isinstance(loaded, te.tensor.Tensor) and isinstance(C, te.tensor.Tensor)
    assert str(loaded) == str(C)


def test_flat_stores_and_loads_answer_to_tvm_buffer_names():
    n = te.var("n")
    ib = tvm.tir.ir_builder.create()
    A = ib.pointer("float32", name="A")
    with ib.for_range(0, n) as i:
        with ib.for_range(0, 4, kind="vectorize") as j:
            A[i * 4 + j] = A[i * 4 + j] + 1.0
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([A, n], ib.get()))
    body = tvm.tir.transform.VectorizeLoop()(mod)["main"].body
    assert isinstance(body, tvm.tir.For)
    store = body.body
    assert isinstance(store, tvm.tir.BufferStore)
    assert len(store.indices) == 1 and isinstance(store.indices[0], tvm.tir.Ramp)
    load = store.value.a
    assert isinstance(load, tvm.tir.BufferLoad) and load.indices == (load.index,)
    assert load.dtype == "float32x4"


def test_split_part_feeding_a_thread_keeps_its_extent():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bo, bi = s[B].split(B.op.axis[0], factor=64)
    tx, bi2 = s[B].split(bi, nparts=8)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[bi].extent.value == 64 and bounds[tx].extent.value == 8
    src = tvm.lower(s, [A, B])
    assert "threadIdx.x" in str(src)


def test_bound_buffers_stand_for_their_tensors_in_args():
    m = te.size_var("m")
    A = te.placeholder((m, 6), name="A")
    A1 = te.compute((m, 6), lambda i, j: A[i, j] * 2.0, name="A1")
    A2 = te.compute((m, 6), lambda i, j: A1[i, j] + 3.0, name="A2")
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(A2.op.axis[0], 4)
    s[A1].compute_at(s[A2], xo)
    Ab = tvm.tir.decl_buffer(A.shape, A.dtype, name="Ab")
    A2b = tvm.tir.decl_buffer(A2.shape, A2.dtype, name="A2b")
    mod = tvm.driver.build_module.schedule_to_module(s, [Ab, A2b], binds={A: Ab, A2: A2b})
    mod = tvm.tir.transform.StorageFlatten(64)(mod)
    assert isinstance(mod["main"], tvm.tir.PrimFunc)
    f = tvm.build(s, [Ab, A2b], "llvm", binds={A: Ab, A2: A2b})
    a = np.random.default_rng(3).standard_normal((7, 6)).astype("float32")
    out = tvm.nd.array(np.full((7, 6), np.nan, "float32"))
    f(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2.0 + 3.0, rtol=1e-6)


def test_an_unbound_buffer_argument_is_a_clear_error():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    stray = tvm.tir.decl_buffer((4,), "float32", name="stray")
    with pytest.raises(tvm.errors.LoweringError, match="stray"):
        tvm.lower(s, [A, stray, B])
    with pytest.raises(tvm.error.TVMError):
        tvm.build(s, [stray, B], "llvm")


def test_buffer_store_and_load_built_as_tvm_writes_them():
    n = te.size_var("n")
    i = te.var("i")
    Ab = tvm.tir.decl_buffer((n,), "int64", name="Ab")
    store = tvm.tir.BufferStore(Ab, tvm.tir.BufferLoad(Ab, [i]) + 1, [i + 1])
    assert isinstance(store, tvm.tir.BufferStore) and isinstance(store, tvm.tir.Store)
    assert store.buffer_var is Ab.data and store.value.dtype == "int64"
    nop = tvm.tir.Evaluate(0)
    mod = tvm.IRModule.from_expr(
        tvm.tir.PrimFunc([Ab], tvm.tir.SeqStmt([nop, tvm.tir.SeqStmt([store, nop])])))
    assert tvm.tir.transform.RemoveNoOp()(mod)["main"].body == store
    empty = tvm.tir.For(i, 0, 0, tvm.tir.ForKind.SERIAL, store)
    assert empty.extent.value == 0 and empty.extent.dtype == "int32"
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([Ab], empty))
    assert isinstance(tvm.tir.transform.RemoveNoOp()(mod)["main"].body, tvm.tir.Evaluate)


def test_a_built_buffer_store_runs():
    B2 = tvm.tir.decl_buffer((3, 4), "float32", name="B2")
    i, j = te.var("i"), te.var("j")
    body = tvm.tir.For(i, 0, 3, tvm.tir.ForKind.SERIAL, tvm.tir.For(
        j, 0, 4, tvm.tir.ForKind.SERIAL,
        tvm.tir.BufferStore(B2, tvm.tir.BufferLoad(B2, [i, j]) * 2.0 + 1.0, [i, j])))
    f = tvm.build(tvm.tir.PrimFunc([B2], body).with_attr("global_symbol", "twice"), target="llvm")
    b = np.random.default_rng(4).standard_normal((3, 4)).astype("float32")
    nd = tvm.nd.array(b)
    f(nd)
    np.testing.assert_allclose(nd.numpy(), b * 2.0 + 1.0, rtol=1e-6)


def test_buffer_store_refuses_bad_arguments():
    Ab = tvm.tir.decl_buffer((4,), "float32", name="Ab")
    with pytest.raises(tvm.errors.DSLError, match="Buffer"):
        tvm.tir.BufferStore(Ab.data, 1.0, [0])
    with pytest.raises(tvm.errors.DSLError, match="int32"):
        tvm.tir.BufferStore(Ab, tvm.tir.const(1, "int32"), [0])
    with pytest.raises(tvm.errors.DSLError, match="2"):
        tvm.tir.BufferLoad(tvm.tir.decl_buffer((2, 2, 2), name="C"), [0, 1])


def test_analyzer_update_with_const_int_bounds():
    CIB = tvm.arith.ConstIntBound
    ana = tvm.arith.Analyzer()
    x, y = te.var("x"), te.var("y")
    ana.update(x, CIB(-3, 4))
    ana.update(y, CIB(-8, 2))
    bd = ana.const_int_bound(x * y)
    assert (bd.min_value, bd.max_value) == (-32, 24)
    ana.update(x, CIB(1, CIB.POS_INF), override=True)
    ana.update(y, CIB(4, 10), override=True)
    bd = ana.const_int_bound(te.floormod(x, y))
    assert (bd.min_value, bd.max_value) == (0, 9)
    bd = ana.const_int_bound(x - y)
    assert (bd.min_value, bd.max_value) == (-9, CIB.POS_INF)


def test_analyzer_update_refuses_bad_input_and_changes_nothing():
    CIB = tvm.arith.ConstIntBound
    ana = tvm.arith.Analyzer()
    x = te.var("x")
    ana.update(x, CIB(0, 7))
    with pytest.raises(tvm.errors.DSLError, match="override"):
        ana.update(x, CIB(0, 100))
    with pytest.raises(tvm.errors.DSLError, match="ConstIntBound"):
        ana.update(x, (0, 3), override=True)
    with pytest.raises(tvm.errors.DSLError, match="empty"):
        ana.update(x, CIB(5, 2), override=True)
    assert ana.const_int_bound(x).max_value == 7


@pytest.mark.parametrize("div,pyop", [(te.floordiv, lambda a, b: a // b),
                                      (tvm.tir.truncdiv, lambda a, b: int(a / b))])
def test_division_bound_leaves_out_a_zero_divisor(div, pyop):
    CIB = tvm.arith.ConstIntBound
    ana = tvm.arith.Analyzer()
    x, y = te.var("x"), te.var("y")
    ana.update(x, CIB(-9, 4))
    ana.update(y, CIB(-2, 0))
    bd = ana.const_int_bound(div(x, y))
    exact = [pyop(a, b) for a in range(-9, 5) for b in (-2, -1)]
    assert (bd.min_value, bd.max_value) == (min(exact), max(exact))
    ana.update(y, CIB(-2, 1), override=True)       # zero inside: no finite bound
    assert ana.const_int_bound(div(x, y)).min_value <= -9


def test_shift_and_bitwise_and_bounds_cover_every_value():
    CIB = tvm.arith.ConstIntBound
    ana = tvm.arith.Analyzer()
    x, y = te.var("x"), te.var("y")
    ana.update(x, CIB(-9, 11))
    ana.update(y, CIB(2, 10))
    cases = [(x >> y, lambda a, b: a >> b), (x & y, lambda a, b: a & b),
             (x << (y - 2), lambda a, b: a << (b - 2))]
    for expr, pyop in cases:
        bd = ana.const_int_bound(expr)
        vals = [pyop(a, b) for a in range(-9, 12) for b in range(2, 11)]
        assert (bd.min_value, bd.max_value) == (min(vals), max(vals)), expr
    ana.update(y, CIB(-1, 3), override=True)      # a negative shift amount: no bound
    assert ana.const_int_bound(x >> y).max_value == CIB.POS_INF


def test_python_numbers_beside_an_expr_become_constants_of_its_type():
    i = te.var("i", "int64")
    e = tvm.tir.EQ(i, 5)
    assert isinstance(e.b, tvm.tir.IntImm) and e.b.dtype == "int64" and e.b.value == 5
    s = tvm.tir.Add(2, te.var("x"))
    assert s.a.dtype == "int32" and s.dtype == "int32"
    ib = tvm.tir.ir_builder.create()
    A = ib.pointer("int32", name="A")
    with ib.for_range(0, 10, "k") as k:
        A[k] = tvm.tir.Select(tvm.tir.EQ(k, 5), 1, 0)
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([A], ib.get()).with_attr("global_symbol", "eq5"))
    f = tvm.build(mod, target="llvm")
    out = tvm.nd.array(np.full(10, -7, "int32"))
    f(out)
    np.testing.assert_array_equal(out.numpy(), (np.arange(10) == 5).astype("int32"))


def test_float_size_var_is_a_scalar_parameter():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    scale = te.size_var("scale", dtype="float32")
    C = te.compute(A.shape, lambda i: A[i] * scale, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].vectorize(xi)
    f = tvm.build(s, [A, C, scale], "llvm")
    a = np.random.default_rng(6).standard_normal(10).astype("float32")
    c = tvm.nd.array(np.full(10, np.nan, "float32"))
    f(tvm.nd.array(a), c, 1.5)
    np.testing.assert_allclose(c.numpy(), a * 1.5, rtol=1e-6)
    with pytest.raises(tvm.errors.DSLError, match="integer"):
        te.size_var("h", dtype="handle")


def test_rfactor_keeps_a_custom_init_for_the_final_reduction():
    """TVM's test_rfactor_init: the partial sums start at zero, ``init`` seeds the total once."""
    n = 37
    A = te.placeholder((n, n), name="A")
    C = te.placeholder((n, n), name="C")
    I = te.placeholder((n, n), name="I")
    k = te.reduce_axis((0, n))
    B = te.compute((n, n), lambda i, j: te.sum(A[i, k] * C[k, j], axis=k, init=I[i, j]), name="B")
    s = te.create_schedule(B.op)
    kf, _ = s[B].split(k, nparts=4)
    BF = s.rfactor(B, kf, 1)
    s[BF].parallel(BF.op.axis[0])
    f = tvm.build(s, [A, C, I, B], "llvm")
    rng = np.random.default_rng(3)
    a, c, ii = (rng.standard_normal((n, n)).astype("float32") for _ in range(3))
    b = tvm.nd.array(np.full((n, n), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(c), tvm.nd.array(ii), b)
    np.testing.assert_allclose(b.numpy(), ii + a @ c, rtol=1e-4, atol=1e-4)
