"""Vectorize: TVM's form for lane-varying conditions (tir.transform.VectorizeLoop), vectors of
vectors, and the while-loop error; every rewritten program is checked on random data."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import LoweringError
from tvmlab.ir import op
from tvmlab.ir.arith import simplify
from tvmlab.ir.expr import Ramp, SizeVar, Var
from tvmlab.ir.stmt import For, IfThenElse, ProducerStore, SeqStmt, Store, seq
from tvmlab.lower.storage_flatten import storage_flatten
from tvmlab.lower.vectorize import vectorize

from test_passes import binds_of, loop, nodes, run_both, tensor


def _flat(ast2, *tensors):
    binds = binds_of(*tensors)
    return storage_flatten(ast2, binds), binds


# ---------------------------------------------------------------------- TVM's form
def test_lane_varying_if_runs_as_a_serial_loop_of_its_own():
    """C[i] = 2 A[i]; if i < 13: D[i] = A[i] + 1 -- only the if becomes ``for i.s``."""
    A, C, D = tensor("A", (16,)), tensor("C", (16,)), tensor("D", (16,))
    i = Var("i")
    body = seq(ProducerStore(C, A[i] * 2.0, (i,)),
               IfThenElse(i < 13, ProducerStore(D, A[i] + 1.0, (i,))))
    ast2 = loop(i, 0, 16, "vectorized", body)
    flat, binds = _flat(ast2, A, C, D)
    out = vectorize(flat, masks=False)
    assert isinstance(out, SeqStmt)
    first, second = out.seq
    assert isinstance(first, Store) and isinstance(first.index, Ramp) and first.index.lanes == 16
    assert isinstance(second, For) and second.kind == "serial" and second.loop_var.name == "i.s"
    assert isinstance(second.body, IfThenElse) and not nodes(second, Ramp)
    for seed in range(3):
        run_both(ast2, out, binds, seed=seed)
    # tvm.lower's form: one masked store, no loop
    masked = vectorize(flat)
    assert not nodes(masked, For)
    assert [st.predicate is not None for st in nodes(masked, Store)] == [False, True]
    run_both(ast2, masked, binds)


@pytest.mark.parametrize("n_value", [3, 9, 20])
def test_uniform_if_keeps_a_vector_then_branch_and_a_serial_else(n_value):
    """if x < n: C[i] = A[i] + 1 else: if i < n: C[i] = if_then_else(i > 2, A[i], -A[i])."""
    n, x = SizeVar("n"), SizeVar("x")
    A, C = tensor("A", (8,)), tensor("C", (8,))
    i = Var("i")
    other = IfThenElse(i < n, ProducerStore(C, op.if_then_else(i > 2, A[i], -A[i]), (i,)))
    ast2 = loop(i, 0, 8, "vectorized", IfThenElse(x < n, ProducerStore(C, A[i] + 1.0, (i,)), other))
    flat, binds = _flat(ast2, A, C)
    out = vectorize(flat, masks=False)
    assert isinstance(out, IfThenElse) and out.condition.dtype == "bool"
    assert isinstance(out.then_case, Store) and out.then_case.value.dtype == "float32x8"
    assert isinstance(out.else_case, For) and out.else_case.kind == "serial"
    for x_value in (n_value - 1, n_value + 1):
        run_both(ast2, out, binds, {n: n_value, x: x_value})


def test_lane_varying_if_then_else_scalarises_its_store():
    A, C = tensor("A", (16,)), tensor("C", (16,))
    io, ii = Var("io"), Var("ii")
    i = io * 4 + ii
    val = op.if_then_else(ii > 0, A[i] + 1.0, A[i])
    ast2 = loop(io, 0, 4, "serial", loop(ii, 0, 4, "vectorized", ProducerStore(C, val, (i,))))
    flat, binds = _flat(ast2, A, C)
    out = vectorize(flat, masks=False)
    assert [f.loop_var.name for f in nodes(out, For)] == ["ii.s", "io"]
    arrays, res = run_both(ast2, out, binds)
    a = arrays[A]
    expect = np.where(np.arange(16) % 4 > 0, a + 1, a)
    np.testing.assert_allclose(res[C], expect, rtol=1e-6)


def test_shared_address_keeps_the_whole_loop_serial():
    """if i < 13: S[0] = A[i]; C[i] = S[0] + 1 -- running the if for every lane first would
    make every C read A[12], so the loop stays serial as a whole."""
    A, S, C = tensor("A", (16,)), tensor("S", (1,)), tensor("C", (16,))
    i = Var("i")
    body = seq(IfThenElse(i < 13, ProducerStore(S, A[i], (op.const(0),))),
               ProducerStore(C, S[0] + 1.0, (i,)))
    ast2 = loop(i, 0, 16, "vectorized", body)
    flat, binds = _flat(ast2, A, S, C)
    out = vectorize(flat, masks=False)
    assert isinstance(out, For) and out.loop_var is i and out.kind == "serial"
    assert not nodes(out, Ramp)
    arrays, res = run_both(ast2, out, binds)
    a = arrays[A]
    expect = np.concatenate([a[:13], np.full(3, a[12])]) + 1
    np.testing.assert_allclose(res[C], expect, rtol=1e-6)


def _guarded_split(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.exp(A[i]) * 2.0, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    return s, [A, B]


@pytest.mark.parametrize("symbolic", [False, True])
def test_pass_sequence_and_lower_both_run_right(symbolic, rng):
    """The tir.transform sequence gives TVM's serial guard loop, tvm.lower a masked store;
    both builds compute the same numbers."""
    n = te.var("n") if symbolic else 37
    s, args = _guarded_split(n)
    T = tvm.tir.transform
    mod = tvm.driver.build_module.schedule_to_module(s, args)
    with tvm.transform.PassContext(config={"tir.LoopPartition": {"partition_const_loop": False}}):
        mod = tvm.transform.Sequential([T.StorageFlatten(64), T.VectorizeLoop(), T.Simplify()])(mod)
        lowered = tvm.lower(s, args)
    assert any(f.loop_var.name.endswith(".s") for f in nodes(mod["main"].body, For))
    assert any(st.predicate is not None for st in nodes(lowered["main"].body, Store))
    a = rng.standard_normal(37).astype("float32")
    for f in (tvm.build(mod, target="llvm"), tvm.build(s, args, "llvm")):
        b = tvm.nd.array(np.full(37, np.nan, "float32"))
        f(tvm.nd.array(a), b)
        np.testing.assert_allclose(b.numpy(), np.exp(a) * 2, rtol=1e-5)


# ---------------------------------------------------------------------- vectors of vectors
def test_nested_vectorized_loops_merge_into_one_ramp():
    A, C = tensor("A", (16,)), tensor("C", (16,))
    i, j = Var("i"), Var("j")
    inner = loop(j, 0, 4, "vectorized", ProducerStore(C, A[i * 4 + j] * 2.0, (i * 4 + j,)))
    ast2 = loop(i, 0, 4, "vectorized", inner)
    flat, binds = _flat(ast2, A, C)
    for masks in (True, False):
        out = vectorize(flat, masks=masks)
        assert isinstance(out, Store) and isinstance(out.index, Ramp) and out.index.lanes == 16
        assert out.value.dtype == "float32x16"
        arrays, res = run_both(ast2, out, binds)
        np.testing.assert_allclose(res[C], arrays[A] * 2, rtol=1e-6)


def test_nested_vectorized_loops_that_would_interleave_keep_the_outer_loop():
    """C[j * 4 + i]: the lanes of i and j interleave, so only the inner loop is vector code."""
    A, C = tensor("A", (16,)), tensor("C", (16,))
    i, j = Var("i"), Var("j")
    inner = loop(j, 0, 4, "vectorized", ProducerStore(C, A[j * 4 + i] + 1.0, (j * 4 + i,)))
    ast2 = loop(i, 0, 4, "vectorized", inner)
    flat, binds = _flat(ast2, A, C)
    out = vectorize(flat)
    assert isinstance(out, For) and out.loop_var is i and out.kind == "serial"
    (st,) = nodes(out, Store)
    assert st.index.lanes == 4
    run_both(ast2, out, binds)


def test_vector_element_pointer_is_vectorized_over_its_lanes(rng, poison):
    """A float32x4 pointer: element k is the four floats 4k..4k+3, so a vectorized loop over
    four elements stores one 16-lane vector."""
    n = te.var("n")
    ib = tvm.tir.ir_builder.create()
    A = ib.pointer("float32x4", name="A")
    B = ib.pointer("float32x4", name="B")
    with ib.for_range(0, n) as i:
        with ib.for_range(0, 4, kind="vectorize") as j:
            B[i * 4 + j] = A[i * 4 + j] * tvm.tir.const(2, "float32x4") + tvm.tir.const(1, "float32x4")
    func = tvm.tir.PrimFunc([A, B, n], ib.get()).with_attr("global_symbol", "f")
    mod = tvm.tir.transform.VectorizeLoop()(tvm.IRModule.from_expr(func))
    (st,) = nodes(mod["main"].body, Store)
    assert isinstance(st.index, Ramp) and st.index.lanes == 16 and st.value.dtype == "float32x16"
    a = rng.standard_normal(3 * 16).astype("float32")
    for built in (tvm.build(func, target="llvm"), tvm.build(mod, target="llvm")):
        b = tvm.nd.array(poison(np.empty_like(a)))
        built(tvm.nd.array(a), b, 3)
        np.testing.assert_allclose(b.numpy(), a * 2 + 1, rtol=1e-6)



def test_tensor_of_vector_elements_flattens_to_lane_ramps_that_vectorize_widens():
    """A float32x2 tensor: element k is the lanes Ramp(k * 2, 1, 2) of flat memory, and a
    vectorized loop over four elements reads and writes one contiguous 8-lane ramp."""
    A, C = tensor("A", (16,), "float32x2"), tensor("C", (16,), "float32x2")
    i = Var("i")
    ast2 = loop(i, 0, 4, "vectorized",
                ProducerStore(C, A[i + 4] * tvm.tir.const(2, "float32x2"), (i + 4,)))
    flat, _ = _flat(ast2, A, C)
    (st,) = nodes(flat, Store)
    assert isinstance(st.index, Ramp) and st.index.lanes == 2
    tvm.ir.assert_structural_equal(st.index.base, (i + 4) * 2)
    (st,) = nodes(vectorize(flat), Store)
    assert isinstance(st.index, Ramp) and st.index.lanes == 8 and st.value.dtype == "float32x8"
    assert simplify(st.index.base).value == 8 and st.index.stride.value == 1

# ---------------------------------------------------------------------- while
def _while_in_vectorized_loop(n=16, num_iter=5):
    def ir(a, b, c):
        ib = tvm.tir.ir_builder.create()
        a, b, c = ib.buffer_ptr(a), ib.buffer_ptr(b), ib.buffer_ptr(c)
        it = ib.allocate("int32", (1,), name="it", scope="local")
        it[0] = 0
        with ib.for_range(0, n) as j:
            c[j] = 0.0
        with ib.for_range(0, n, kind="vectorize") as j:
            with ib.while_loop(it[0] < num_iter):
                c[j] += a[j] + b[j]
                it[0] += 1
        return ib.get()

    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.extern((n,), [A, B], lambda ins, outs: ir(ins[0], ins[1], outs[0]), name="C")
    return te.create_schedule(C.op), [A, B, C]


def test_while_inside_a_vectorized_loop_is_an_error(rng):
    s, args = _while_in_vectorized_loop()
    with pytest.raises(LoweringError, match="A while loop inside a vectorized loop not supported"):
        tvm.lower(s, args)
    mod = tvm.driver.build_module.schedule_to_module(s, args)
    mod = tvm.tir.transform.StorageFlatten(64)(mod)
    with pytest.raises(LoweringError, match=r"loop j .*while \(it\[0\] < 5\)"):
        tvm.tir.transform.VectorizeLoop()(mod)
    # as a serial loop it runs: the first iteration of j does all the while's rounds
    with tvm.transform.PassContext(config={"tir.disable_vectorize": True}):
        f = tvm.build(s, args, "llvm")
    a, b = (rng.standard_normal(16).astype("float32") for _ in range(2))
    c = tvm.nd.array(np.full(16, np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    expect = np.zeros(16, "float32")
    expect[0] = 5 * (a[0] + b[0])
    np.testing.assert_allclose(c.numpy(), expect, rtol=1e-5)


# ---------------------------------------------------------------------- divided ramps
def test_ramp_divided_by_a_multiple_of_its_lanes_stays_contiguous():
    """C[q, 4 j + v] = A[(4 (q * 6 + j) + v) // 8, (4 (q * 6 + j) + v) % 8]: the 4 lanes share one
    quotient, so both accesses are one ramp (a reshape read by a vectorized inner axis)."""
    A, C = tensor("A", (9, 8)), tensor("C", (3, 24))
    q, j, v = Var("q"), Var("j"), Var("v")
    flat = (q * 6 + j) * 4 + v
    body = ProducerStore(C, A[op.floordiv(flat, 8), op.floormod(flat, 8)], (q, j * 4 + v))
    ast2 = loop(q, 0, 3, "serial", loop(j, 0, 6, "serial", loop(v, 0, 4, "vectorized", body)))
    flat3, binds = _flat(ast2, A, C)
    out = vectorize(flat3)
    stores = nodes(out, Store)
    assert len(stores) == 1 and isinstance(stores[0].index, Ramp)
    (load,) = [x for x in nodes(out, tvm.ir.expr.Load)]
    assert isinstance(load.index, Ramp), load.index
    run_both(ast2, out, binds)


def test_ramp_divided_across_a_block_edge_is_not_a_ramp():
    """Lanes starting at 2 (not a multiple of 4) straddle a block of 8: no single quotient."""
    A, C = tensor("A", (40,)), tensor("C", (8, 4))
    q, v = Var("q"), Var("v")
    body = ProducerStore(C, A[op.floordiv(q * 4 + v + 2, 8) * 8 + op.floormod(q * 4 + v + 2, 8)], (q, v))
    ast2 = loop(q, 0, 8, "serial", loop(v, 0, 4, "vectorized", body))
    flat3, binds = _flat(ast2, A, C)
    out = vectorize(flat3)
    run_both(ast2, out, binds)
