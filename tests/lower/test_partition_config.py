"""Loop partitioning under TVM's ``tir.LoopPartition`` config, and the block-scope branch a GPU
kernel of symbolic size gets: each checked on its IR and by running the code against numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.testing import poison
from tvmlab.tir import stmt_functor


def _nodes(stmt, cls):
    found = []
    stmt_functor.post_order_visit(stmt, lambda x: found.append(x) if isinstance(x, cls) else None)
    return found


def _rows_and_cols(n):
    """C = A * 2 + 1 over (n, 13): rows split by 4 (symbolic when n is), columns by 5 (constant)."""
    A = te.placeholder((n, 13), name="A")
    C = te.compute((n, 13), lambda i, j: A[i, j] * 2.0 + 1.0, name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 5)
    return s, A, C


def _check(s, A, C, rng, rows):
    f = tvm.build(s, [A, C], "llvm")
    for nv in rows:
        a = rng.standard_normal((nv, 13)).astype("float32")
        c = tvm.nd.array(poison(np.empty((nv, 13), "float32")))
        f(tvm.nd.array(a), c)
        np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


def test_partition_const_loop_false_partitions_only_symbolic_loops(rng):
    n = te.size_var("n")
    s, A, C = _rows_and_cols(n)
    mod = tvm.driver.build_module.schedule_to_module(s, [A, C])
    with tvm.transform.PassContext(config={"tir.LoopPartition": {"partition_const_loop": False}}):
        body = tvm.tir.transform.LoopPartition()(mod)["main"].body
        _check(s, A, C, rng, (0, 3, 9))
    loops = [x for x in _nodes(body, tvm.tir.For) if x.loop_var.name == "i.outer"]
    assert len(loops) == 2                # the row loop (symbolic extent) is cut: main and tail
    (main,) = [x for x in loops if isinstance(x.min, tvm.tir.IntImm) and x.min.value == 0]
    # ... but the column loop (constant extent) is not: the main rows keep only the column guard
    conds = [str(x.condition) for x in _nodes(main, tvm.tir.IfThenElse)]
    assert conds and all("j.outer" in c and "i.outer" not in c for c in conds)
    # tvmlab's default partitions the constant loop too: no guard left in the main rows
    default = tvm.tir.transform.LoopPartition()(mod)["main"].body
    assert len(_nodes(default, tvm.tir.IfThenElse)) < len(_nodes(body, tvm.tir.IfThenElse))
    _check(s, A, C, rng, (0, 3, 9))
    # a constant shape is left alone under partition_const_loop False
    s, A, C = _rows_and_cols(10)
    with tvm.transform.PassContext(config={"tir.LoopPartition": {"partition_const_loop": False}}):
        f = tvm.lower(s, [A, C])["main"]
        _check(s, A, C, rng, (10,))
    assert not _nodes(f.body, tvm.tir.SeqStmt) and _nodes(f.body, tvm.tir.IfThenElse)


def test_no_unroll_loop_with_extent_one_keeps_unit_loops(rng):
    A = te.placeholder((21,), name="A")
    B = te.placeholder((21,), name="B")
    T = te.compute((21,), lambda i: A[i] + B[i], name="T")
    s = te.create_schedule(T.op)
    s[T].split(T.op.axis[0], factor=4)
    cfg = {"tir.LoopPartition": {"partition_const_loop": True, "no_unroll_loop_with_extent_one": True}}
    with tvm.transform.PassContext(config=cfg):
        kept = tvm.lower(s, [A, B, T])["main"].body
        f = tvm.build(s, [A, B, T], "llvm")
    folded = tvm.lower(s, [A, B, T])["main"].body
    assert len(_nodes(kept, tvm.tir.For)) == 4      # main 5 x 4, and the tail row as a loop of one
    assert len(_nodes(folded, tvm.tir.For)) == 2    # by default the tail row is a plain statement
    a, b = rng.standard_normal((2, 21)).astype("float32")
    t = tvm.nd.array(poison(np.empty(21, "float32")))
    f(tvm.nd.array(a), tvm.nd.array(b), t)
    np.testing.assert_allclose(t.numpy(), a + b, rtol=1e-6)
    with pytest.raises(tvm.TVMLabError, match="no_unroll_loop_with_extent_one"):
        with tvm.transform.PassContext(config={"tir.LoopPartition": {"bogus": True}}):
            tvm.lower(s, [A, B, T])


def _gpu_axpy(n, vectorize=True):
    """C = A + B * 3 in blocks of 128 elements (32 threads x 4, vectorized or a loop)."""
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i] * 3.0, name="C")
    s = te.create_schedule(C.op)
    bx, x = s[C].split(C.op.axis[0], factor=128)
    tx, x = s[C].split(x, nparts=32)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    if vectorize:
        s[C].vectorize(x)
    return s, [A, B, C]


def test_symbolic_grid_branches_on_the_block_index(rng):
    n = te.size_var("n")
    s, args = _gpu_axpy(n)
    func = tvm.lower(s, args)["main"]
    (branch,) = [x for x in _nodes(func.body, tvm.tir.IfThenElse) if isinstance(x.else_case, tvm.tir.Stmt)
                 and "blockIdx" in str(x.condition)]
    # the condition names the block only (the same for all its threads), inside the thread scopes
    assert "threadIdx" not in str(branch.condition) and "i.inner" not in str(branch.condition)
    full = branch.then_case
    assert not _nodes(full, tvm.tir.IfThenElse) and _nodes(full, tvm.tir.Ramp)
    assert all(x.predicate is None for x in _nodes(full, tvm.tir.Store))
    # built for a GPU (no vector types there: a loop of 4 per thread), on the simulator
    s, args = _gpu_axpy(n, vectorize=False)
    for target in ("cuda", "opengl -compute"):
        f = tvm.build(tvm.lower(s, args), target=target)
        for nv in (1, 128, 300, 513):
            a, b = rng.standard_normal((2, nv)).astype("float32")
            c = poison(np.empty(nv, "float32"))
            tvm.testing.simulate(f, a, b, c)
            np.testing.assert_allclose(c, a + b * 3, rtol=1e-5, atol=1e-6)


def test_constant_grid_has_no_block_branch():
    s, args = _gpu_axpy(1000)
    func = tvm.lower(s, args)["main"]
    assert not [x for x in _nodes(func.body, tvm.tir.IfThenElse) if "blockIdx" in str(x.condition)
                and "threadIdx" not in str(x.condition)]
