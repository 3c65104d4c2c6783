"""Lowering passes (AST2 -> AST3): structure of the output and semantics on random data.

Each program is written by hand as AST2, run by the reference interpreter in
``ast3_interp`` before and after the passes, and the results compared (and, for
the simple ones, compared with numpy too).
"""
import numpy as np
import pytest

from tvmlab.analysis.interp import Interpreter, run_ast2, run_ast3
from tvmlab.errors import LoweringError
from tvmlab.ir import dtype as dt
from tvmlab.ir import op
from tvmlab.ir.expr import (Add, Broadcast, Call, FloatImm, IntImm, Load, Max, ProducerLoad, Ramp,
                            Select, SizeVar, Var)
from tvmlab.ir.function import Buffer, PrimFunc
from tvmlab.ir.functor import contains, post_order_visit
from tvmlab.ir.stmt import (Allocate, AssertStmt, AttrStmt, Evaluate, For, IfThenElse,
                            LetStmt, ProducerRealize, ProducerStore, SeqStmt, Store, is_no_op, seq)
from tvmlab.ir.tensor import IterVar, PlaceholderOp, Range
from tvmlab.lower import pipeline
from tvmlab.lower.loop_partition import loop_partition
from tvmlab.lower.remove_no_op import remove_no_op
from tvmlab.lower.storage_flatten import storage_flatten
from tvmlab.lower.unroll import unroll
from tvmlab.lower.vectorize import vectorize


# ---------------------------------------------------------------------- helpers
def tensor(name, shape, dtype="float32"):
    return PlaceholderOp(name, shape, dtype).output(0)


def binds_of(*tensors):
    return {t: Buffer(t.name, t.shape, t.dtype) for t in tensors}


def nodes(stmt, cls):
    out = []
    post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def loop(var, mn, extent, kind, body, annotations=()):
    return For(var, op.convert(mn), op.convert(extent), kind, body, annotations)


def likely(c):
    return op.likely(c)


def random_arrays(tensors, env, seed=0):
    rng = np.random.default_rng(seed)
    it = Interpreter(env=env)
    out = {}
    for t in tensors:
        shape = tuple(int(it.eval(op.convert(s))) for s in t.shape)
        if dt.is_float(t.dtype):
            out[t] = rng.standard_normal(shape).astype(dt.to_numpy(t.dtype))
        else:
            out[t] = rng.integers(-50, 50, shape).astype(dt.to_numpy(t.dtype))
    return out


def run_both(ast2, ast3, binds, env=None, seed=0):
    """Run AST2 and its lowered form on the same random inputs; return (inputs, AST2 results)."""
    env = env or {}
    arrays = random_arrays(list(binds), env, seed)
    a2 = {t: a.copy() for t, a in arrays.items()}
    a3 = {t: a.copy() for t, a in arrays.items()}
    run_ast2(ast2, a2, env)
    run_ast3(ast3, binds, a3, env)
    for t in binds:
        np.testing.assert_array_equal(a3[t], a2[t], err_msg=f"tensor {t.name} differs")
    return arrays, a2


def vadd(n, factor, kind="vectorized"):
    """C[i] = A[i] + 2 * B[i], i split by ``factor`` with a guard."""
    A, B, C = tensor("A", (n,)), tensor("B", (n,)), tensor("C", (n,))
    io, ii = Var("i.outer"), Var("i.inner")
    i = io * factor + ii
    body = ProducerStore(C, A[i] + B[i] * 2.0, (i,))
    inner = loop(ii, 0, factor, kind, IfThenElse(likely(i < n), body))
    outer = loop(io, 0, op.floordiv(op.add(n, factor - 1), factor), "serial", inner)
    return outer, (A, B, C), (io, ii)


def rowsum(m, n):
    """C[i] = sum_k A[i, k] with the init store before the k loop."""
    A, C = tensor("A", (m, n)), tensor("C", (m,))
    i, k = Var("i"), Var("k")
    update = ProducerStore(C, C[i] + A[i, k], (i,))
    body = seq(ProducerStore(C, op.const(0.0), (i,)), loop(k, 0, n, "serial", update))
    return loop(i, 0, m, "serial", body), (A, C)


# ---------------------------------------------------------------------- storage_flatten
@pytest.mark.parametrize("n_value,symbolic", [(37, False), (64, False), (37, True)])
def test_flatten_vadd_matches_numpy(n_value, symbolic):
    n = SizeVar("n") if symbolic else n_value
    ast2, (A, B, C), _ = vadd(n, 8, kind="serial")
    binds = binds_of(A, B, C)
    ast3 = storage_flatten(ast2, binds)
    assert not nodes(ast3, (ProducerStore, ProducerLoad))
    stores = nodes(ast3, Store)
    assert len(stores) == 1 and stores[0].buffer_var is binds[C].data
    env = {n: n_value} if symbolic else {}
    arrays, out = run_both(ast2, ast3, binds, env)
    np.testing.assert_allclose(out[C], arrays[A] + 2 * arrays[B], rtol=1e-6)


def test_flatten_realize_tile_is_indexed_relative_to_its_bounds():
    """B is realized per row i (bounds [i, i+1) x [0, n)); the Allocate holds n elements."""
    m, n = 5, 7
    A, B, C = tensor("A", (m, n)), tensor("B", (m, n)), tensor("C", (m, n))
    i, j, j2 = Var("i"), Var("j"), Var("j")
    produce = loop(j, 0, n, "serial", ProducerStore(B, A[i, j] * 3.0, (i, j)))
    consume = loop(j2, 0, n, "serial", ProducerStore(C, B[i, j2] + 1.0, (i, j2)))
    realize = ProducerRealize(B, (Range(i, op.const(1)), Range(op.const(0), op.const(n))),
                              op.const(True), seq(produce, consume), "local")
    ast2 = loop(i, 0, m, "serial", realize)
    binds = binds_of(A, C)
    ast3 = storage_flatten(ast2, binds)
    (alloc,) = nodes(ast3, Allocate)
    assert alloc.scope == "local" and alloc.dtype == "float32"
    assert alloc.buffer_var.name == "B" and alloc.buffer_var.dtype == "handle"
    assert len(alloc.extents) == 1 and alloc.extents[0].value == n
    arrays, out = run_both(ast2, ast3, binds)
    np.testing.assert_allclose(out[C], arrays[A] * 3 + 1, rtol=1e-6)


def test_flatten_symbolic_realize_extent_and_offset():
    """A realize over [2, 2+n) x [0, 3) of a 2-D tensor with symbolic n."""
    n = SizeVar("n")
    A, C = tensor("A", (op.add(n, 2), 3)), tensor("C", (op.add(n, 2), 3))
    T = tensor("T.local", (op.add(n, 2), 3))
    i, j, i2, j2 = Var("i"), Var("j"), Var("i"), Var("j")
    produce = loop(i, 2, n, "serial", loop(j, 0, 3, "serial",
                                         ProducerStore(T, A[i, j] - 1.0, (i, j))))
    consume = loop(i2, 2, n, "serial", loop(j2, 0, 3, "serial",
                                          ProducerStore(C, T[i2, j2] * T[i2, 2 - j2], (i2, j2))))
    ast2 = ProducerRealize(T, (Range(op.const(2), n), Range(op.const(0), op.const(3))),
                           op.const(True), seq(produce, consume), "")
    binds = binds_of(A, C)
    ast3 = storage_flatten(ast2, binds)
    alloc = ast3
    assert isinstance(alloc, Allocate) and alloc.scope == "global"
    assert alloc.buffer_var.name == "T.local"
    env = {n: 6}
    assert Interpreter(env=env).eval(alloc.extents[0]) == 18
    # C rows 0, 1 are never written: compare everything (both runs leave them as input)
    run_both(ast2, ast3, binds, env)


def test_flatten_realize_covers_the_consumer_that_follows_it():
    """ScheduleOps realizes an attached producer around the consumer code that reads it,
    so flattening gives one allocation holding both the producer's and the consumer's stores."""
    import tvmlab
    from tvmlab import te
    from tvmlab.schedule.bound import canonical_tensor
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * A[i], name="B")
    C = te.compute((6,), lambda i: B[i] - 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    ast2 = tvmlab.lower(s, [A, C], simple_mode=True).history["AST2"]
    (realize,) = nodes(ast2.body, ProducerRealize)
    assert len(nodes(realize.body, ProducerStore)) == 2
    binds = {canonical_tensor(s, t): buf for t, buf in zip((A, C), ast2.buffer_map.values())}
    ast3 = storage_flatten(ast2.body, binds)
    (alloc,) = nodes(ast3, Allocate)
    assert len(nodes(alloc.body, Store)) == 2
    arrays = random_arrays([A, C], {})
    a = {A: arrays[A].copy(), C: arrays[C].copy()}
    run_ast3(ast3, binds, a)
    np.testing.assert_allclose(a[C], arrays[A] ** 2 - 1, rtol=1e-6)


def test_flatten_uses_buffer_strides():
    A, C = tensor("A", (3, 4)), tensor("C", (3, 4))
    i, j = Var("i"), Var("j")
    ast2 = loop(i, 0, 3, "serial", loop(j, 0, 4, "serial", ProducerStore(C, A[i, j], (i, j))))
    bufA = Buffer("A", (3, 4), "float32", strides=(1, 3))   # column-major A
    bufC = Buffer("C", (3, 4), "float32")
    ast3 = storage_flatten(ast2, {A: bufA, C: bufC})
    a = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    c = np.zeros((3, 4), "float32")
    a_colmajor = np.ascontiguousarray(a.T)   # memory laid out column-major
    Interpreter(buffers={bufA.data: a_colmajor, bufC.data: c}).run(ast3)
    np.testing.assert_array_equal(c, a)


def test_flatten_realize_of_bound_tensor_uses_its_buffer():
    A, C = tensor("A", (4,)), tensor("C", (4,))
    i = Var("i")
    ast2 = ProducerRealize(C, (Range(op.const(0), op.const(4)),), op.const(True),
                           loop(i, 0, 4, "serial", ProducerStore(C, A[i] + 1.0, (i,))), "")
    binds = binds_of(A, C)
    ast3 = storage_flatten(ast2, binds)
    assert not nodes(ast3, Allocate)
    run_both(ast2, ast3, binds)


def test_flatten_unknown_tensor_is_an_error_naming_it():
    A, C, W = tensor("A", (4,)), tensor("C", (4,)), tensor("Weights", (4,))
    i = Var("i")
    ast2 = loop(i, 0, 4, "serial", ProducerStore(C, A[i] + W[i], (i,)))
    with pytest.raises(LoweringError, match="Weights"):
        storage_flatten(ast2, binds_of(A, C))
    ast2 = loop(i, 0, 4, "serial", ProducerStore(W, A[i], (i,)))
    with pytest.raises(LoweringError, match="Weights"):
        storage_flatten(ast2, binds_of(A, C))


def test_flatten_keeps_thread_bindings():
    A, C = tensor("A", (64,)), tensor("C", (64,))
    tx = IterVar(Range(op.const(0), op.const(64)), Var("threadIdx.x"), "thread", "threadIdx.x")
    ast2 = AttrStmt(tx, "thread_extent", op.const(64),
                    ProducerStore(C, A[tx.var] * 2.0, (tx.var,)))
    binds = binds_of(A, C)
    ast3 = storage_flatten(ast2, binds)
    assert isinstance(ast3, AttrStmt) and ast3.node is tx
    assert isinstance(ast3.body, Store)
    run_both(ast2, ast3, binds)


# ---------------------------------------------------------------------- vectorize
def test_vectorize_contiguous_store_and_load():
    ast2, (A, B, C), (io, ii) = vadd(64, 8)
    binds = binds_of(A, B, C)
    flat = storage_flatten(ast2, binds)
    # drop the guard (64 divides by 8) to get a clean vector body
    flat = _strip_guards(flat)
    out = vectorize(flat)
    assert not [f for f in nodes(out, For) if f.kind == "vectorized"]
    (st,) = nodes(out, Store)
    assert isinstance(st.index, Ramp) and st.index.lanes == 8
    assert st.value.dtype == "float32x8"
    loads = nodes(out, Load)
    assert loads and all(ld.dtype == "float32x8" and isinstance(ld.index, Ramp) for ld in loads)
    run_both(ast2, out, binds)


def _strip_guards(stmt):
    from tvmlab.ir.functor import IRMutator

    class M(IRMutator):
        def visit_IfThenElse(self, s):
            return self.visit(s.then_case)
    return M().visit(stmt)


def test_vectorize_loop_invariant_load_stays_scalar_and_is_broadcast():
    A, S, C = tensor("A", (4, 16)), tensor("S", (4,)), tensor("C", (4, 16))
    i, j = Var("i"), Var("j")
    ast2 = loop(i, 0, 4, "serial",
               loop(j, 0, 16, "vectorized", ProducerStore(C, A[i, j] * S[i], (i, j))))
    binds = binds_of(A, S, C)
    out = vectorize(storage_flatten(ast2, binds))
    scalar_loads = [ld for ld in nodes(out, Load) if ld.dtype == "float32"]
    assert len(scalar_loads) == 1 and scalar_loads[0].buffer_var is binds[S].data
    assert any(isinstance(b, Broadcast) and b.value is scalar_loads[0]
               for b in nodes(out, Broadcast))
    (st,) = nodes(out, Store)
    assert isinstance(st.index, Ramp) and st.value.dtype == "float32x16"
    run_both(ast2, out, binds)


@pytest.mark.parametrize("n_value,symbolic", [(37, False), (37, True), (3, True)])
def test_vectorize_lane_varying_guard_becomes_predicated_store(n_value, symbolic):
    n = SizeVar("n") if symbolic else n_value
    ast2, (A, B, C), _ = vadd(n, 8)
    binds = binds_of(A, B, C)
    out = vectorize(storage_flatten(ast2, binds))
    assert [f.kind for f in nodes(out, For)] == ["serial"] and not nodes(out, IfThenElse)
    (st,) = nodes(out, Store)
    assert isinstance(st.index, Ramp) and st.predicate.dtype == "boolx8"
    loads = nodes(out, Load)
    assert len(loads) == 2 and all(ld.predicate is not None for ld in loads)
    run_both(ast2, out, binds, {n: n_value} if symbolic else {})


@pytest.mark.parametrize("case", ["else_branch", "int_division", "let_under_mask"])
def test_vectorize_lane_varying_guard_fallbacks(case):
    A, C = tensor("A", (20,), "int32"), tensor("C", (20,), "int32")
    i, t = Var("i"), Var("t")
    store = ProducerStore(C, A[i] + 1, (i,))
    if case == "else_branch":
        body = IfThenElse(i < 13, store, ProducerStore(C, A[i] * 2, (i,)))
    elif case == "int_division":   # masked lanes would divide by A[i] == 0
        body = IfThenElse(A[i] != 0, ProducerStore(C, op.floordiv(100, A[i]), (i,)))
    else:
        body = IfThenElse(i < 13, LetStmt(t, A[i], ProducerStore(C, t, (i,))))
    ast2 = loop(i, 0, 16, "vectorized", body)
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    assert isinstance(out, For) and out.kind == "serial" and not nodes(out, Ramp)
    for seed in range(3):
        run_both(ast2, out, binds, seed=seed)


def test_vectorize_if_then_else_padding_masks_both_branches():
    """C[i] = A[i-2] if 2 <= i < 18 else -A[0]: masked lanes must not read A out of bounds."""
    A, C = tensor("A", (16,)), tensor("C", (24,))
    io, ii = Var("io"), Var("ii")
    i = io * 8 + ii
    inside = op.logical_and(i >= 2, i < 18)
    val = op.if_then_else(inside, A[i - 2], -A[op.const(0)] * 1.5)
    ast2 = loop(io, 0, 3, "serial", loop(ii, 0, 8, "vectorized", ProducerStore(C, val, (i,))))
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    assert not nodes(out, Call) and len(nodes(out, Ramp)) >= 2
    (st,) = nodes(out, Store)
    assert st.predicate is None and st.value.dtype == "float32x8"
    assert all(ld.predicate is not None for ld in nodes(out, Load))
    arrays, res = run_both(ast2, out, binds)
    expect = np.concatenate([np.full(2, -1.5 * arrays[A][0]), arrays[A],
                             np.full(6, -1.5 * arrays[A][0])]).astype("float32")
    np.testing.assert_array_equal(res[C], expect)


def test_vectorize_keeps_uniform_guard_scalar():
    """A guard that does not depend on the vector lane (outer < n) stays a scalar if."""
    n = SizeVar("n")
    A, C = tensor("A", (n, 8)), tensor("C", (n, 8))
    io, j = Var("io"), Var("j")
    guard = IfThenElse(likely(io < n), ProducerStore(C, op.exp(A[io, j]), (io, j)))
    ast2 = loop(io, 0, op.add(n, 3), "serial", loop(j, 0, 8, "vectorized", guard))
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    (ite,) = nodes(out, IfThenElse)
    assert ite.condition.dtype == "bool"
    (st,) = nodes(out, Store)
    assert isinstance(st.index, Ramp) and st.value.dtype == "float32x8"
    assert st.value.op == "exp"
    run_both(ast2, out, binds, {n: 5})


def test_vectorize_reduction_with_inner_loop_and_nonzero_min():
    """Vectorize i in [2, 10) of C[i] = sum_k A[i, k]: the k loop stays, its body is vector."""
    A, C = tensor("A", (12, 5)), tensor("C", (12,))
    i, k = Var("i"), Var("k")
    update = ProducerStore(C, C[i] + A[i, k], (i,))
    body = seq(ProducerStore(C, op.const(0.0), (i,)), loop(k, 0, 5, "serial", update))
    ast2 = loop(i, 2, 8, "vectorized", body)
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    (lp,) = nodes(out, For)
    assert lp.loop_var is k
    stores = nodes(out, Store)
    assert all(isinstance(s.index, Ramp) and s.index.lanes == 8 for s in stores)
    assert isinstance(stores[0].index.base, IntImm) and stores[0].index.base.value == 2
    arrays, res = run_both(ast2, out, binds)
    np.testing.assert_allclose(res[C][2:10], arrays[A][2:10].sum(axis=1), rtol=1e-5)


def test_vectorize_reduce_axis_is_scalarised():
    """k vectorized: every lane adds into C[i], so the loop must stay serial."""
    A, C = tensor("A", (3, 8)), tensor("C", (3,))
    i, k = Var("i"), Var("k")
    body = seq(ProducerStore(C, op.const(0.0), (i,)),
               loop(k, 0, 8, "vectorized", ProducerStore(C, C[i] + A[i, k], (i,))))
    ast2 = loop(i, 0, 3, "serial", body)
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    assert [f.kind for f in nodes(out, For)] == ["serial", "serial"]
    run_both(ast2, out, binds)


@pytest.mark.parametrize("case", ["symbolic_extent", "allocate", "gather_store"])
def test_vectorize_fallbacks_stay_correct(case):
    n = SizeVar("n")
    A, C = tensor("A", (16,)), tensor("C", (16,))
    i = Var("i")
    binds = binds_of(A, C)
    env = {n: 16}
    if case == "symbolic_extent":
        ast2 = loop(i, 0, n, "vectorized", ProducerStore(C, A[i] + 1.0, (i,)))
    elif case == "allocate":
        T = tensor("T", (1,))
        body = ProducerRealize(T, (Range(op.const(0), op.const(1)),), op.const(True),
                               seq(ProducerStore(T, A[i] * 2.0, (op.const(0),)),
                                   ProducerStore(C, T[0] + 1.0, (i,))), "local")
        ast2 = loop(i, 0, 16, "vectorized", body)
    else:  # C[i // 2] = A[i]: lanes would collide
        ast2 = loop(i, 0, 16, "vectorized", ProducerStore(C, A[i], (op.floordiv(i, 2),)))
    out = vectorize(storage_flatten(ast2, binds))
    assert [f.kind for f in nodes(out, For)] == ["serial"]
    assert not nodes(out, Ramp)
    run_both(ast2, out, binds, env)


def test_vectorize_call_without_vector_form_is_scalarised():
    A, C = tensor("A", (16,)), tensor("C", (16,))
    i, j = Var("i"), Var("j")
    binds = binds_of(A, C)
    plain = loop(i, 0, 16, "vectorized", ProducerStore(C, A[i], (i,)))
    opaque = loop(j, 0, 16, "vectorized",
                 ProducerStore(C, Call("float32", "my_extern", (A[j],)), (j,)))
    out = vectorize(storage_flatten(seq(plain, opaque), binds))
    assert [type(x).__name__ for x in out.seq] == ["Store", "For"]
    assert out.seq[1].kind == "serial" and not nodes(out.seq[1], Ramp)


def test_vectorize_select_cast_let_and_gather_load():
    A, C = tensor("A", (32,)), tensor("I", (16,), "int32")
    i = Var("i")
    x = Var("x", "float32")
    val = op.select(A[i] > 0.0, op.cast("int32", A[op.floordiv(i, 2)] * 10.0), i)
    ast2 = loop(i, 0, 16, "vectorized",
               LetStmt(x, A[i + 16], ProducerStore(C, val + op.cast("int32", x), (i,))))
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    assert not nodes(out, For)
    (let,) = nodes(out, LetStmt)
    assert let.var.dtype == "float32x16"
    gathers = [ld for ld in nodes(out, Load) if not isinstance(ld.index, Ramp)]
    assert len(gathers) == 1 and gathers[0].dtype == "float32x16"
    run_both(ast2, out, binds)


def test_vectorize_reversed_and_strided_indices():
    """C[15 - i] = A[2 * i + 1]: Ramps with stride -1 and 2 (a scatter and a gather)."""
    A, C = tensor("A", (32,)), tensor("C", (16,))
    i = Var("i")
    ast2 = loop(i, 0, 16, "vectorized", ProducerStore(C, A[i * 2 + 1], (15 - i,)))
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    (st,) = nodes(out, Store)
    assert isinstance(st.index, Ramp) and (st.index.base.value, st.index.stride.value) == (15, -1)
    (ld,) = nodes(out, Load)
    assert isinstance(ld.index, Ramp) and (ld.index.base.value, ld.index.stride.value) == (1, 2)
    arrays, res = run_both(ast2, out, binds)
    np.testing.assert_array_equal(res[C], arrays[A][1::2][::-1])


def test_vectorize_extent_one_substitutes():
    A, C = tensor("A", (4,)), tensor("C", (4,))
    i, j = Var("i"), Var("j")
    ast2 = loop(i, 0, 4, "serial", loop(j, 0, 1, "vectorized",
                                      ProducerStore(C, A[i + j], (i + j,))))
    binds = binds_of(A, C)
    out = vectorize(storage_flatten(ast2, binds))
    assert len(nodes(out, For)) == 1
    run_both(ast2, out, binds)


# ---------------------------------------------------------------------- unroll
def test_unroll_explicit_loop_replicates_body():
    ast2, (A, B, C), (io, ii) = vadd(37, 4, kind="unrolled")
    binds = binds_of(A, B, C)
    out = unroll(storage_flatten(ast2, binds))
    (lp,) = nodes(out, For)
    assert lp.loop_var is io
    assert isinstance(lp.body, SeqStmt) and len(lp.body) == 4
    assert len(nodes(out, Store)) == 4
    run_both(ast2, out, binds)


def test_unroll_keeps_only_the_branch_a_copy_takes():
    """A table indexed by the unrolled variable (a chain of selects on it): each copy holds its own entry."""
    A, C = tensor("A", (4, 5)), tensor("C", (4, 5))
    i, j = Var("i"), Var("j")
    table = [A[i, j] * float(k + 2) for k in range(4)]
    value = table[-1]
    for k in range(2, -1, -1):
        value = Select(i == k, table[k], value)
    ast2 = loop(j, 0, 5, "serial", loop(i, 0, 4, "unrolled", ProducerStore(C, value, (i, j))))
    binds = binds_of(A, C)
    out = unroll(storage_flatten(ast2, binds))
    assert len(nodes(out, Store)) == 4 and not nodes(out, Select)
    run_both(ast2, out, binds)


def test_unroll_symbolic_extent_stays_serial_with_hint():
    n = SizeVar("n")
    A, C = tensor("A", (n,)), tensor("C", (n,))
    i = Var("i")
    ast2 = loop(i, 0, n, "unrolled", ProducerStore(C, A[i], (i,)))
    binds = binds_of(A, C)
    out = unroll(storage_flatten(ast2, binds))
    assert isinstance(out, For) and out.kind == "serial"
    assert out.annotation("unroll_hint") is True
    run_both(ast2, out, binds, {n: 9})


def test_unroll_auto_max_step_pragma_on_outer_loop():
    """pragma_auto_unroll_max_step=16 on i: the j loop (4 x 2 stores = 8 steps) unrolls."""
    A, B, C = tensor("A", (3, 4)), tensor("B", (3, 4)), tensor("C", (3, 4))
    i, j = Var("i"), Var("j")
    body = seq(ProducerStore(B, A[i, j] + 1.0, (i, j)), ProducerStore(C, B[i, j] * 2.0, (i, j)))
    ast2 = loop(i, 0, 3, "serial", loop(j, 0, 4, "serial", body),
               (("pragma_auto_unroll_max_step", 16),))
    binds = binds_of(A, B, C)
    out = unroll(storage_flatten(ast2, binds))
    (lp,) = nodes(out, For)
    assert lp.loop_var is i and len(nodes(out, Store)) == 8
    run_both(ast2, out, binds)
    # a limit below the step count leaves the loop alone
    small = ast2.replace(annotations=(("pragma_auto_unroll_max_step", 7),))
    assert len(nodes(unroll(storage_flatten(small, binds)), For)) == 2
    # the same limit given globally also unrolls i (3 * 8 = 24 steps <= 32)
    out = unroll(storage_flatten(small.replace(annotations=()), binds), auto_max_step=32)
    assert not nodes(out, For) and len(nodes(out, Store)) == 24
    run_both(ast2, out, binds)
    # 20 steps: j (8 steps) unrolls, i (3 x 8 = 24 steps) does not
    out = unroll(storage_flatten(small.replace(annotations=()), binds), auto_max_step=20)
    assert [f.loop_var.name for f in nodes(out, For)] == ["i"]
    run_both(ast2, out, binds)


def test_unroll_not_explicit_keeps_unrolled_loop_for_backend():
    A, C = tensor("A", (3, 4)), tensor("C", (3, 4))
    i, j = Var("i"), Var("j")
    ast2 = loop(i, 0, 3, "serial", loop(j, 0, 4, "serial", ProducerStore(C, A[i, j], (i, j))),
               (("pragma_auto_unroll_max_step", 8), ("pragma_unroll_explicit", False)))
    binds = binds_of(A, C)
    out = unroll(storage_flatten(ast2, binds))
    kinds = {f.loop_var.name: f.kind for f in nodes(out, For)}
    assert kinds == {"i": "serial", "j": "unrolled"}
    run_both(ast2, out, binds)


def test_unroll_depth_limit_and_attr_hint():
    A, C = tensor("A", (2, 2, 2)), tensor("C", (2, 2, 2))
    i, j, k = Var("i"), Var("j"), Var("k")
    nest = loop(i, 0, 2, "serial", loop(j, 0, 2, "serial", loop(k, 0, 2, "serial", ProducerStore(
        C, A[i, j, k] - 1.0, (i, j, k)))))
    binds = binds_of(A, C)
    out = unroll(storage_flatten(nest, binds), auto_max_step=100, auto_max_depth=1)
    assert [f.loop_var.name for f in nodes(out, For)] == ["i"]
    run_both(nest, out, binds)
    wrapped = AttrStmt(Var("scope"), "pragma_auto_unroll_max_step", op.const(100), nest)
    out = unroll(storage_flatten(wrapped, binds))
    assert not nodes(out, For) and len(nodes(out, Store)) == 8
    run_both(wrapped, out, binds)


# ---------------------------------------------------------------------- remove_no_op
def test_remove_no_op_drops_empty_constructs_and_self_copies():
    buf = Var("X", "handle")
    i, j = Var("i"), Var("j")
    keep = Store(buf, FloatImm("float32", 1.0), j)
    self_copy = Store(buf, Load("float32", buf, i + 1), i + 1)
    shift = Store(buf, Load("float32", buf, i + 1), i)
    stmt = seq(
        loop(i, 0, 4, "serial", self_copy),
        loop(i, 0, 0, "serial", keep),
        IfThenElse(i < 3, Evaluate(op.const(0)), Evaluate(op.const(0))),
        LetStmt(Var("t"), op.const(3), Evaluate(Var("t") + 1)),
        Allocate(Var("tmp", "handle"), "float32", (op.const(4),), op.const(True),
                 SeqStmt((Evaluate(op.const(0)), Evaluate(op.const(0))))),
        loop(j, 0, 2, "serial", keep),
        loop(i, 0, 3, "serial", shift),
        AssertStmt(j < 5, "j too big", Evaluate(op.const(0))),
    )
    out = remove_no_op(stmt)
    assert isinstance(out, SeqStmt) and len(out) == 3
    assert isinstance(out[0], For) and out[0].body is keep
    assert isinstance(out[1], For) and out[1].body is shift
    assert isinstance(out[2], AssertStmt)


def test_remove_no_op_drops_stores_masked_off_in_every_lane():
    buf = Var("X", "handle")
    i = Var("i")
    never = Store(buf, Broadcast(FloatImm("float32", 1.0), 4), Ramp(i * 4, op.const(1), 4),
                  Broadcast(op.const(False), 4))
    some = Store(buf, Broadcast(FloatImm("float32", 2.0), 4), Ramp(i * 4, op.const(1), 4),
                 Ramp(i, op.const(1), 4) < Broadcast(op.const(9), 4))
    out = remove_no_op(loop(i, 0, 3, "serial", seq(never, some)))
    assert isinstance(out, For) and out.body is some


def test_simplify_drops_predicates_true_in_every_lane_and_broadcasts_uniform_loads():
    from tvmlab.lower.simplify import simplify_stmt
    buf, src = Var("X", "handle"), Var("Y", "handle")
    i = Var("i")
    true4 = Broadcast(op.const(True), 4)
    gather = Load("float32x4", src, Broadcast(i + 1, 4), true4)      # one address, masked by a guard
    row = Load("float32x4", src, Ramp(i * 4, op.const(1), 4), Broadcast(i < 100, 4))
    st = Store(buf, gather + row, Ramp(i * 4, op.const(1), 4), true4)
    out = simplify_stmt(loop(i, 0, 8, "serial", st))
    (store,) = nodes(out, Store)
    assert store.predicate is None
    assert all(ld.predicate is None for ld in nodes(out, Load))
    assert any(isinstance(b, Broadcast) and isinstance(b.value, Load) and b.value.dtype == "float32"
               for b in nodes(out, Broadcast))


def _masked_tail(kind, n=30):
    """A private 32-float scratch filled four lanes at a time under ``lane < n``, then copied out."""
    src, out, tmp = Var("S", "handle"), Var("O", "handle"), Var("T", "handle")
    i, j = Var("i"), Var("j")
    ramp = Ramp(i * 4, op.const(1), 4)
    mask = ramp < Broadcast(op.const(n), 4)
    fill = loop(i, 0, 8, kind, Store(tmp, Load("float32x4", tmp, ramp, mask) + Load("float32x4", src, ramp, mask)
                                     * Load("float32x4", src, Broadcast(i * 4, 4), mask), ramp, mask))
    zero = loop(i, 0, 8, "serial", Store(tmp, Broadcast(FloatImm("float32", 0.0), 4), ramp, mask))
    copy = loop(j, 0, n, "serial", Store(out, Load("float32", tmp, j), j))
    return Allocate(tmp, "float32", (op.const(32),), op.const(True), seq(zero, fill, copy)), src, out


def test_simplify_unmasks_a_private_scratch_and_keeps_results():
    from tvmlab.lower.simplify import simplify_stmt
    stmt, src, out = _masked_tail("serial")
    new = simplify_stmt(stmt)
    stores = [st for st in nodes(new, Store) if st.buffer_var.name == "T"]
    assert stores and all(st.predicate is None and isinstance(st.value, Select) for st in stores)
    loads = nodes(new, Load)
    assert all(ld.predicate is None for ld in loads if ld.buffer_var.name == "T")
    # the uniform load's lane 0 (i * 4 < 30 for i < 8) always runs: a plain broadcast scalar load
    assert any(ld.dtype == "float32" and ld.buffer_var.name == "S" and ld.predicate is None for ld in loads)
    # a row of S past the mask may be out of bounds: that load keeps its mask
    assert any(ld.dtype == "float32x4" and ld.buffer_var.name == "S" and ld.predicate is not None for ld in loads)
    rng = np.random.default_rng(5)
    data = rng.standard_normal(32).astype("float32")
    got, want = np.full(30, np.nan, "float32"), np.full(30, np.nan, "float32")
    Interpreter(buffers={src: data.copy(), out: want}).run(stmt)
    Interpreter(buffers={src: data.copy(), out: got}).run(new)
    np.testing.assert_array_equal(got, want)


def test_simplify_keeps_masks_where_other_threads_may_write():
    from tvmlab.lower.simplify import simplify_stmt
    stmt, _, _ = _masked_tail("parallel")      # the scratch is shared by the parallel loop's threads
    new = simplify_stmt(stmt)
    fill = [st for st in nodes(new, Store) if st.buffer_var.name == "T" and isinstance(st.value, Add)]
    assert fill and all(st.predicate is not None for st in fill)


def test_simplify_unmasking_needs_both_ends_of_a_ramp_in_bounds():
    """A stride of unknown sign: neither end alone bounds the lanes, so the masks stay."""
    from tvmlab.lower.simplify import simplify_stmt
    tmp, out, st = Var("T", "handle"), Var("O", "handle"), Var("s")
    ramp = Ramp(op.const(6), st, 4)
    mask = ramp < Broadcast(op.const(8), 4)
    body = seq(Store(tmp, Broadcast(FloatImm("float32", 1.0), 4), ramp, mask),
               Store(out, Load("float32x4", tmp, ramp, mask), Ramp(st * 4 + 8, op.const(1), 4), mask))
    stmt = Allocate(tmp, "float32", (op.const(8),), op.const(True), loop(st, -2, 5, "serial", body))
    new = simplify_stmt(stmt)
    assert all(x.predicate is not None for x in nodes(new, Store) + nodes(new, Load))
    Interpreter(buffers={out: np.zeros(32, "float32")}).run(new)      # no access out of bounds


def test_simplify_nested_allocations_of_one_buffer_variable():
    from tvmlab.lower.simplify import simplify_stmt
    tmp, out = Var("T", "handle"), Var("O", "handle")
    inner = Allocate(tmp, "float32", (op.const(4),), op.const(True), Store(tmp, FloatImm("float32", 1.0), op.const(0)))
    outer = Allocate(tmp, "float32", (op.const(8),), op.const(True),
                     seq(inner, Store(out, Load("float32", tmp, op.const(0)), op.const(0))))
    assert len(nodes(simplify_stmt(outer), Allocate)) == 2


def test_simplify_broadcast_load_read_by_the_last_lane():
    """``k <= j`` over a ramp of j: the last lane is the one surely active; the load loses its mask."""
    from tvmlab.lower.simplify import simplify_stmt
    src, out, k = Var("S", "handle"), Var("O", "handle"), Var("k")
    mask = Broadcast(k, 8) <= Ramp(op.const(0), op.const(1), 8)
    st = Store(out, Load("float32x8", src, Broadcast(k, 8), mask), Ramp(op.const(0), op.const(1), 8), mask)
    new = simplify_stmt(loop(k, 0, 8, "serial", st))
    assert all(ld.predicate is None for ld in nodes(new, Load))


def test_remove_no_op_keeps_side_effects_and_else_branch():
    buf = Var("X", "handle")
    i = Var("i")
    call = Evaluate(Call("int32", "my_print", (i,)))
    other = Store(buf, FloatImm("float32", 2.0), i)
    stmt = loop(i, 0, 4, "serial", seq(IfThenElse(i < 2, Evaluate(op.const(0)), other), call))
    out = remove_no_op(stmt)
    ite, kept = out.body.seq
    assert kept is call
    assert isinstance(ite, IfThenElse) and ite.else_case is None and ite.then_case is other
    x = np.zeros(4, "float32")
    Interpreter(buffers={buf: x}).run(loop(i, 0, 4, "serial", ite))
    np.testing.assert_array_equal(x, [0, 0, 2, 2])
    assert is_no_op(remove_no_op(loop(i, 0, 4, "serial", Evaluate(i * 2))))


# ---------------------------------------------------------------------- loop_partition


def _value(e, env=None):
    return int(Interpreter(env=env or {}).eval(e))


def test_partition_constant_split_main_and_tail():
    ast2, (A, B, C), (io, ii) = vadd(37, 8, kind="serial")
    binds = binds_of(A, B, C)
    out = loop_partition(storage_flatten(ast2, binds))
    assert isinstance(out, SeqStmt) and len(out) == 2
    main, tail = out.seq
    assert main.loop_var is io and not nodes(main, IfThenElse)
    assert (_value(main.min), _value(main.extent)) == (0, 4)
    assert (_value(tail.min), _value(tail.extent)) == (4, 1)
    # the tail row's columns past 37 fail the guard everywhere: that part is gone, no guard is left
    assert not nodes(tail, IfThenElse) and tail.loop_var is not io
    run_both(ast2, out, binds)


def test_partition_of_a_parallel_loop_branches_inside_it():
    """Cutting a parallel loop would run its tail on one thread after the rest: the body branches."""
    ast2, (A, B, C), (io, ii) = vadd(37, 8, kind="serial")
    ast2 = ast2.replace(kind="parallel")
    binds = binds_of(A, B, C)
    out = loop_partition(storage_flatten(ast2, binds))
    assert isinstance(out, For) and out.kind == "parallel" and out.loop_var is io
    assert (_value(out.min), _value(out.extent)) == (0, 5)
    branch = out.body
    assert isinstance(branch, IfThenElse) and not nodes(branch.then_case, IfThenElse)
    # the guarded copy (one iteration: io is 4 there) is partitioned along i.inner: its columns past 37
    # (guard false) are gone, and io, a constant in it, is too
    (inner,) = nodes(branch.else_case, For)
    assert _value(inner.extent) == 5 and not nodes(branch.else_case, IfThenElse)
    assert not contains(branch.else_case, lambda n: n is io)
    assert [_value(branch.condition, {io: v}) for v in range(5)] == [1, 1, 1, 1, 0]
    run_both(ast2, out, binds)


def test_partition_of_a_parallel_loop_keeps_a_guarded_range_of_several_iterations():
    """Tiles of 8 over 37 elements, the loop running two tiles past the last full one: both are guarded, and
    there the index stays a variable."""
    ast2, (A, B, C), (io, ii) = vadd(37, 8, kind="serial")
    ast2 = ast2.replace(kind="parallel", extent=IntImm("int32", 6))     # rows 40..47 too: guard false there
    binds = binds_of(A, B, C)
    out = loop_partition(storage_flatten(ast2, binds))
    assert contains(out.body.else_case, lambda n: n is io)
    run_both(ast2, out, binds)


@pytest.mark.parametrize("factor", [8, 5])
def test_partition_symbolic_n(factor):
    n = SizeVar("n")
    ast2, (A, B, C), (io, ii) = vadd(n, factor, kind="serial")
    binds = binds_of(A, B, C)
    out = loop_partition(storage_flatten(ast2, binds))
    main, tail = out.seq
    # the tail row runs its in-range columns only: the guard became the inner loop's extent
    assert not nodes(main, IfThenElse) and not nodes(tail, IfThenElse)
    for nv in (0, 1, factor - 1, factor, 37, 64):
        env = {n: nv}
        assert _value(main.extent, env) == nv // factor
        assert _value(tail.min, env) + _value(tail.extent, env) == -(-nv // factor)
    for nv in (0, 3, 37, 40):
        run_both(ast2, out, binds, {n: nv}, seed=nv)


def test_partition_then_vectorize_main_loop():
    n = SizeVar("n")
    ast2, (A, B, C), (io, ii) = vadd(n, 8)
    binds = binds_of(A, B, C)
    out = vectorize(loop_partition(storage_flatten(ast2, binds)))
    main, tail = out.seq
    (st,) = nodes(main, Store)
    assert isinstance(st.index, Ramp) and st.value.dtype == "float32x8"
    assert st.predicate is None and all(ld.predicate is None for ld in nodes(main, Load))
    (tail_st,) = nodes(tail, Store)    # the tail's guard became a mask
    assert isinstance(tail_st.index, Ramp) and tail_st.predicate is not None
    for nv in (5, 37, 64):
        run_both(ast2, out, binds, {n: nv}, seed=nv)


def test_partition_lower_and_upper_guards_give_three_loops():
    """Padding-like guards 3 <= i < 17 over i in [0, 20): pre, main [3, 17), post."""
    A, C = tensor("A", (20,)), tensor("C", (20,))
    i = Var("i")
    guard = op.logical_and(i >= 3, i < 17)
    ast2 = loop(i, 0, 20, "serial",
                IfThenElse(likely(guard), ProducerStore(C, A[i] * 2.0, (i,))))
    binds = binds_of(A, C)
    out = loop_partition(storage_flatten(ast2, binds))
    # the guard fails on the whole of [0, 3) and [17, 20) and has no else: only [3, 17) is left
    assert isinstance(out, For) and (_value(out.min), _value(out.extent)) == (3, 14)
    assert not nodes(out, IfThenElse)
    run_both(ast2, out, binds)


def test_partition_drops_likely_conditions_of_selects_and_equalities():
    """A ``likely`` condition counts wherever it stands (Select, if_then_else), and ``i == 5``
    cuts the loop around one point: each piece is left with the values it takes."""
    A, C = tensor("A", (16,)), tensor("C", (16,))
    i = Var("i")
    value = op.select(likely(i == 5), A[i] * 2.0,
                      op.if_then_else(likely(i < 13), A[i] + 1.0, op.const(-1.0)))
    ast2 = loop(i, 0, 16, "serial", ProducerStore(C, value, (i,)))
    binds = binds_of(A, C)
    out = loop_partition(storage_flatten(ast2, binds))
    pieces = out.seq
    spans = [(_value(f.min), _value(f.min) + _value(f.extent)) for f in pieces]
    assert spans[0][0] == 0 and spans[-1][1] == 16
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    (at5,) = [f for f, sp in zip(pieces, spans) if sp == (5, 6)]
    assert not nodes(at5, Select) and not nodes(at5, Call)      # i == 5 and i < 13 both hold
    run_both(ast2, out, binds)


@pytest.mark.parametrize("p_value", [-4, 2, 5, 11, 30])
def test_partition_cut_points_are_clamped_into_the_loop(p_value):
    """i in [5, 25) guarded by p <= i < 17 with symbolic p: every piece stays inside."""
    p = Var("p")
    A, C = tensor("A", (25,)), tensor("C", (25,))
    i = Var("i")
    guard = op.logical_and(i >= p, i < 17)
    ast2 = loop(i, 5, 20, "serial",
                IfThenElse(likely(guard), ProducerStore(C, A[i] + 3.0, (i,))))
    binds = binds_of(A, C)
    out = loop_partition(storage_flatten(ast2, binds))
    # i < 17 fails on the whole post part, which goes; p <= i may hold below the cut (p < 5)
    pre, main = out.seq
    assert not nodes(main, IfThenElse) and nodes(pre, IfThenElse)
    env = {p: p_value}
    bounds = [(_value(f.min, env), _value(f.min, env) + _value(f.extent, env)) for f in out.seq]
    assert bounds[0][0] == 5 and bounds[1][1] == max(17, min(max(p_value, 5), 25))
    assert bounds[0][1] == bounds[1][0]
    assert all(a <= b for a, b in bounds)
    run_both(ast2, out, binds, env)


def test_partition_relaxes_threads_and_knows_nonnegative_shapes():
    """Guard x*4 + threadIdx.x < n inside a thread binding; n a plain Var declared >= 0."""
    n = Var("n")
    A, C = tensor("A", (n,)), tensor("C", (n,))
    x = Var("x")
    tx = IterVar(Range(op.const(0), op.const(4)), Var("threadIdx.x"), "thread", "threadIdx.x")
    idx = x * 4 + tx.var
    body = AttrStmt(tx, "thread_extent", op.const(4),
                    IfThenElse(likely(idx < n), ProducerStore(C, A[idx] * 0.5, (idx,))))
    ast2 = loop(x, 0, op.floordiv(n + 3, 4), "serial", body)
    binds = binds_of(A, C)
    flat = storage_flatten(ast2, binds)
    plain = loop_partition(flat)
    known = loop_partition(flat, nonneg=(n,))
    for out in (plain, known):
        main, tail = out.seq
        assert not nodes(main, IfThenElse) and nodes(tail, IfThenElse)
        for nv in (0, 6, 9):
            assert _value(main.extent, {n: nv}) == nv // 4
            run_both(ast2, out, binds, {n: nv}, seed=nv)
    assert nodes(plain.seq[0].extent, Max) and not nodes(known.seq[0].extent, Max)


def test_partition_keeps_conjuncts_it_cannot_prove():
    """likely(i < 13 and j % 2 == 0): the i conjunct goes, the other stays in the main loop."""
    A, C = tensor("A", (16, 4)), tensor("C", (16, 4))
    i, j = Var("i"), Var("j")
    cond = op.logical_and(i < 13, op.floormod(j, 2) == 0)
    ast2 = loop(i, 0, 16, "serial", loop(j, 0, 4, "serial", IfThenElse(
        likely(cond), ProducerStore(C, A[i, j] + 1.0, (i, j)))))
    binds = binds_of(A, C)
    out = loop_partition(storage_flatten(ast2, binds))
    main, tail = out.seq
    (g,) = nodes(main, IfThenElse)
    assert i not in _vars(g.condition) and j in _vars(g.condition)
    run_both(ast2, out, binds)


def _vars(e):
    from tvmlab.ir.functor import collect_vars
    return collect_vars(e)


@pytest.mark.parametrize("case", ["nonlinear", "let", "never", "always"])
def test_partition_leaves_or_simplifies_other_loops(case):
    A, C = tensor("A", (16,)), tensor("C", (16,))
    i, t = Var("i"), Var("t")
    store = ProducerStore(C, A[i] - 1.0, (i,))
    if case == "nonlinear":
        body = IfThenElse(likely(op.floormod(i, 3) < 2), store)
    elif case == "let":
        body = LetStmt(t, i * 2, IfThenElse(likely(t < 9), store))
    elif case == "never":
        body = IfThenElse(likely(i < -1), store)
    else:
        body = IfThenElse(likely(i < 100), store)
    ast2 = loop(i, 0, 16, "serial", body)
    binds = binds_of(A, C)
    flat = storage_flatten(ast2, binds)
    out = loop_partition(flat)
    if case == "always":
        assert isinstance(out, For) and not nodes(out, IfThenElse)
        assert _value(out.extent) == 16
    else:
        assert out is flat
    run_both(ast2, out, binds)


def test_partition_2d_tiles_and_reduction():
    """C[i, j] = sum_k A[i, k] * B[k, j] tiled 4x4 over 10x7: guards on i and j."""
    M, N, K = 10, 7, 3
    A, B, C = tensor("A", (M, K)), tensor("B", (K, N)), tensor("C", (M, N))
    io, jo, ii, ji, k = Var("i.outer"), Var("j.outer"), Var("i.inner"), Var("j.inner"), Var("k")
    i, j = io * 4 + ii, jo * 4 + ji
    gi, gj = i < M, j < N
    init = IfThenElse(likely(gj), ProducerStore(C, op.const(0.0), (i, j)))
    upd = loop(k, 0, K, "serial", IfThenElse(likely(gj), ProducerStore(
        C, C[i, j] + A[i, k] * B[k, j], (i, j))))
    inner = loop(ii, 0, 4, "serial", IfThenElse(likely(gi), loop(ji, 0, 4, "vectorized",
                                                                  seq(init, upd))))
    ast2 = loop(io, 0, 3, "serial", loop(jo, 0, 2, "serial", inner))
    binds = binds_of(A, B, C)
    out = loop_partition(storage_flatten(ast2, binds))
    main_i, tail_i = out.seq
    assert _value(main_i.extent) == 2
    main_j, tail_j = main_i.body.seq
    assert not nodes(main_j, IfThenElse) and _value(main_j.extent) == 1
    assert nodes(tail_j, IfThenElse)
    # the tail of i is partitioned along j too: its main j loop keeps only the guard on i
    tail_main_j, tail_tail_j = tail_i.body.seq
    assert _value(tail_main_j.extent) == 1 and _value(tail_tail_j.min) == 1
    assert all("j.outer" not in str(g.condition) for g in nodes(tail_main_j, IfThenElse))
    arrays, res = run_both(ast2, out, binds)
    np.testing.assert_allclose(res[C], arrays[A] @ arrays[B], rtol=1e-5, atol=1e-6)
    vec = vectorize(out)
    assert any(isinstance(s.index, Ramp) for s in nodes(vec, Store))
    run_both(ast2, vec, binds)


# ---------------------------------------------------------------------- pipeline
def _func(ast2, tensors, scalars=()):
    binds = binds_of(*tensors)
    params = [binds[t].data for t in tensors] + list(scalars)
    return PrimFunc("f", params, {binds[t].data: binds[t] for t in tensors}, ast2), binds


@pytest.mark.parametrize("simple_mode", [False, True])
def test_pipeline_history_and_result(simple_mode):
    n = SizeVar("n")
    ast2, (A, B, C), _ = vadd(n, 8)
    func, binds = _func(ast2, (A, B, C), (n,))
    out, history = pipeline.run_passes(func, binds, simple_mode=simple_mode)
    expected = ["AST2"] + [p for p in pipeline.PASSES        # no stage marked rolling_buffer: no step
                           if not (simple_mode and p == "loop_partition") and p != "inject_rolling_buffer"]
    assert list(history) == expected
    assert history["AST2"] is func and history[pipeline.PASSES[-1]] is out
    assert out.params == func.params and out.buffer_map == func.buffer_map
    assert not nodes(out.body, (ProducerStore, ProducerLoad, ProducerRealize))
    stores = nodes(out.body, Store)
    assert all(isinstance(st.index, Ramp) for st in stores)
    # simple_mode: one masked vector store; else an unmasked main loop and a masked tail
    assert [st.predicate is None for st in stores] == ([False] if simple_mode else [True, False])
    for nv in (0, 13, 64):
        run_both(ast2, out.body, binds, {n: nv}, seed=nv)
    _, none = pipeline.run_passes(func, binds, keep_history=False)
    assert none == {}


def test_pipeline_unroll_config_and_extra_pass():
    ast2, (A, C) = rowsum(6, 4)
    func, binds = _func(ast2, (A, C))
    out, _ = pipeline.run_passes(func, binds, config={"unroll": {"auto_max_step": 8}})
    assert [f.loop_var.name for f in nodes(out.body, For)] == ["i"]
    arrays, res = run_both(ast2, out.body, binds)
    np.testing.assert_allclose(res[C], arrays[A].sum(axis=1), rtol=1e-5)
    seen = []
    pipeline.PIPELINE.append(("count", lambda s, ctx: seen.append(s) or s))
    try:
        _, history = pipeline.run_passes(func, binds)
    finally:
        pipeline.PIPELINE.pop()
    assert list(history)[-1] == "count" and len(seen) == 1


def test_contains_stops_at_the_first_match():
    """``contains(tree, pred)``: whether a node matches, without walking the rest of the tree."""
    x, y = Var("x", "int32"), Var("y", "int32")
    e = Add(Add(x, IntImm("int32", 3)), Max(y, IntImm("int32", 7)))
    seen = []

    def pred(n):
        seen.append(n)
        return isinstance(n, Var)
    assert contains(e, pred)
    assert not any(n is y for n in seen)                       # stopped at x
    assert not contains(e, lambda n: isinstance(n, IntImm) and n.value == 5)
    assert contains(e, lambda n: isinstance(n, Max) and n.a is y)
