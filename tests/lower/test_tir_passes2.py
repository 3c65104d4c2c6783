"""tir.transform passes beyond the basic pipeline: each checked on its IR and by running the
lowered code against numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.tir import stmt_functor


def _run(s, args, inputs, out_shape, dtype="float32", extra=()):
    f = tvm.build(s, args, "llvm")
    out = tvm.nd.array(np.full(out_shape, np.nan, dtype=dtype))
    f(*[tvm.nd.array(x) for x in inputs], out, *extra)
    return out.numpy()


# ------------------------------------------------------------------ HoistIfThenElse
def _kernel_with_invariant_if(p):
    """B = A * 2 where p > 2, else A + 1, with the test inside both loops."""
    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        n, m = ins[0].shape
        with ib.for_range(0, n, "i") as i:
            with ib.for_range(0, m, "j") as j:
                with ib.if_scope(p > 2):
                    b[i * m + j] = a[i * m + j] * 2.0
                with ib.else_scope():
                    b[i * m + j] = a[i * m + j] + 1.0
        return ib.get()
    return fcompute


def _outer_if(func):
    """The If statements whose branches are loops (hoisted ones), outermost first."""
    found = []

    def visit(n):
        if isinstance(n, tvm.tir.IfThenElse) and isinstance(n.then_case, tvm.tir.For):
            found.append(n)
    stmt_functor.post_order_visit(func.body, visit)
    return found


@pytest.mark.parametrize("pval", [1, 5])
def test_hoist_if_then_else_in_lower_runs_both_branches(rng, pval):
    n, m = te.var("n"), 7
    p = te.var("p")
    A = te.placeholder((n, m), name="A")
    B = te.extern((n, m), [A], _kernel_with_invariant_if(p), name="B", dtype="float32")
    s = te.create_schedule(B.op)
    lowered = tvm.lower(s, [A, B, p])
    assert "hoist_if_then_else" in lowered.history
    hoisted = _outer_if(lowered["main"])
    assert len(hoisted) == 1 and isinstance(hoisted[0].else_case, tvm.tir.For)
    a = rng.standard_normal((5, m)).astype("float32")
    f = tvm.build(s, [A, B, p], "llvm")
    out = tvm.nd.array(np.full((5, m), np.nan, "float32"))
    f(tvm.nd.array(a), out, pval)
    np.testing.assert_allclose(out.numpy(), a * 2.0 if pval > 2 else a + 1.0, rtol=1e-6)


def test_hoist_if_then_else_stops_at_loop_vars_sequences_and_threads():
    ib = tvm.tir.ir_builder.create()
    data = ib.pointer("float32", name="data")
    n = te.var("n")
    tx = te.thread_axis("threadIdx.x")
    ib.scope_attr(tx, "thread_extent", 8)
    with ib.for_range(0, 4, "i") as i:
        with ib.for_range(0, 4, "j") as j:
            data[i * 4 + j] = data[i * 4 + j] + 1.0          # a sequence: nothing rises above j
            with ib.for_range(0, 4, "k") as k:
                with ib.if_scope(tvm.tir.all(i < 2, n > 1)):
                    data[i * 16 + j * 4 + k] = 0.0
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([n], ib.get()))
    out = tvm.tir.transform.HoistIfThenElse()(mod)["main"].body
    hoisted = []
    stmt_functor.post_order_visit(out, lambda x: hoisted.append(x) if isinstance(x, tvm.tir.IfThenElse) else None)
    assert len(hoisted) == 1 and isinstance(hoisted[0].then_case, tvm.tir.For)
    assert hoisted[0].then_case.loop_var.name == "k"
    # a condition on the thread index stays inside its scope unless block scope hoisting is asked for
    ib = tvm.tir.ir_builder.create()
    data = ib.pointer("float32", name="data")
    ib.scope_attr(tx, "thread_extent", 8)
    with ib.for_range(0, 4, "i") as i:
        with ib.if_scope(n > 3):
            data[i] = 1.0
    stmt = ib.get()
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([n], stmt))
    plain = tvm.tir.transform.HoistIfThenElse()(mod)["main"].body
    assert isinstance(plain.body, tvm.tir.IfThenElse)      # above the loop, inside the thread scope
    with tvm.transform.PassContext(config={"tir.HoistIfThenElse": {"support_block_scope_hosting": True}}):
        block = tvm.tir.transform.HoistIfThenElse()(mod)["main"].body
    assert isinstance(block, tvm.tir.IfThenElse) and isinstance(block.then_case, tvm.tir.AttrStmt)
    with pytest.raises(tvm.TVMLabError):
        with tvm.transform.PassContext(config={"tir.HoistIfThenElse": {"bogus": 1}}):
            tvm.tir.transform.HoistIfThenElse()(mod)


def test_hoist_if_then_else_keeps_conditions_reading_memory_the_loop_writes(rng):
    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        b = ib.buffer_ptr(outs[0])
        a = ib.buffer_ptr(ins[0])
        with ib.for_range(0, 8, "i") as i:
            b[i] = a[i]
            with ib.for_range(0, 8, "j"):
                with ib.if_scope(b[0] > 0.0):        # b[0] is written in the i loop
                    b[i] = b[i] + 1.0
        return ib.get()
    A = te.placeholder((8,), name="A")
    B = te.extern((8,), [A], fcompute, name="B", dtype="float32")
    s = te.create_schedule(B.op)
    a = rng.standard_normal(8).astype("float32")
    a[0] = 1.0
    got = _run(s, [A, B], [a], (8,))
    np.testing.assert_allclose(got, a + 8.0, rtol=1e-6)


def _kernel_rebinding_threads(inner_extent, sibling_extent=None):
    """threadIdx.x launched with 32, and bound again with ``inner_extent`` inside the loops; with
    ``sibling_extent`` a second kernel after it binds the same axis with that extent."""
    ib = tvm.tir.ir_builder.create()
    data = ib.pointer("float32", name="data")
    n = te.var("n")
    tx = te.thread_axis("threadIdx.x")
    with ib.new_scope():
        ib.scope_attr(tx, "thread_extent", 32)
        with ib.for_range(0, n, "i") as i:
            ib.scope_attr(tx, "thread_extent", inner_extent)
            with ib.if_scope(tx < 3):
                data[i * 32 + tx] = 1.0
    if sibling_extent is not None:
        ib.scope_attr(tx, "thread_extent", sibling_extent)
        data[tx] = 2.0
    return tvm.IRModule.from_expr(tvm.tir.PrimFunc([n], ib.get()))


def test_thread_axis_rebound_with_another_extent_is_an_error():
    mod = _kernel_rebinding_threads(33)
    block_scope = {"tir.HoistIfThenElse": {"support_block_scope_hosting": True}}
    for cfg in ({}, block_scope):
        with tvm.transform.PassContext(config=cfg):
            with pytest.raises(tvm.error.LoweringError, match="inconsistent thread_extent: thread axis "
                                                              "threadIdx.x is bound with extent 32.*33"):
                tvm.tir.transform.HoistIfThenElse()(mod)
    with pytest.raises(tvm.error.LoweringError, match="inconsistent thread_extent"):
        tvm.tir.transform.Simplify()(mod)
    # the same extent again, or another extent in another kernel, is fine
    for ok in (_kernel_rebinding_threads(32), _kernel_rebinding_threads(32, sibling_extent=16)):
        tvm.tir.transform.Simplify()(ok)
        with tvm.transform.PassContext(config=block_scope):
            tvm.tir.transform.HoistIfThenElse()(ok)


# ------------------------------------------------------------------ StorageRewrite
def _allocs(func):
    out = []
    stmt_functor.post_order_visit(func.body, lambda n: out.append(n) if isinstance(n, tvm.tir.Allocate) else None)
    return out


def test_storage_rewrite_reuses_dead_intermediates(rng):
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    def stage(prev, t):
        return te.compute((m, n), lambda i, j: prev[i, j] * 0.5 + (t + 1), name=f"S{t}")
    B = A
    for t in range(5):
        B = stage(B, t)
    s = te.create_schedule(B.op)
    lowered = tvm.lower(s, [A, B])
    assert len(_allocs(lowered["main"])) == 1        # four intermediates, one buffer (in place)
    with tvm.transform.PassContext(config={"tir.disable_storage_rewrite": True}):
        assert len(_allocs(tvm.lower(s, [A, B])["main"])) == 4
    a = rng.standard_normal((5, 7)).astype("float32")
    want = a
    for t in range(5):
        want = want * 0.5 + (t + 1)
    np.testing.assert_allclose(_run(s, [A, B], [a], (5, 7)), want, rtol=1e-5)


def test_storage_rewrite_keeps_live_buffers_apart(rng):
    n = 33
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((n,), lambda i: C[i] + B[n - 1 - i], name="D")    # B still live while C is made
    E = te.compute((n,), lambda i: D[i] - C[0], name="E")
    s = te.create_schedule(E.op)
    allocs = _allocs(tvm.lower(s, [A, E])["main"])       # B, C, D all live at D's statement
    assert len(allocs) == 3 and len({a.buffer_var for a in allocs}) == 3
    a = rng.standard_normal(n).astype("float32")
    b = a + 1.0
    c = b * 2.0
    np.testing.assert_allclose(_run(s, [A, E], [a], (n,)), c + b[::-1] - c[0], rtol=1e-5)


def test_storage_rewrite_packs_a_tagged_memory_with_mixed_types(rng):
    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        f = ib.allocate("float32", 16, name="f", scope="global.scratch")
        h = ib.allocate("int16", 16, name="h", scope="global.scratch")
        with ib.for_range(0, 16, "i") as i:
            f[i] = a[i] * 3.0
            h[i] = (a[i] * 100.0).astype("int16")
        with ib.for_range(0, 16, "i") as i:
            b[i] = f[i] + h[i].astype("float32")
        return ib.get()
    A = te.placeholder((16,), name="A")
    B = te.extern((16,), [A], fcompute, name="B", dtype="float32")
    s = te.create_schedule(B.op)
    allocs = _allocs(tvm.lower(s, [A, B])["main"])
    assert len(allocs) == 1 and allocs[0].extents[0].value == 16 + 8 and allocs[0].scope == "global"
    a = rng.uniform(-3, 3, 16).astype("float32")
    want = a * 3.0 + (a * 100.0).astype("int16").astype("float32")
    np.testing.assert_allclose(_run(s, [A, B], [a], (16,)), want, rtol=1e-5)


def test_storage_rewrite_memory_info_limits_a_tagged_memory():
    @tvm.register_func("tvm.info.mem.local.tiny", override=True)
    def _info():
        return tvm.ir.make_node("MemoryInfo", unit_bits=16, max_simd_bits=32, max_num_bits=256,
                                head_address=None)
    ib = tvm.tir.ir_builder.create()
    x = ib.allocate("float32", 16, name="x", scope="local.tiny")     # 512 bits
    x[0] = 1.0
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([], ib.get()))
    with pytest.raises(tvm.TVMLabError, match="local.tiny"):
        tvm.tir.transform.StorageRewrite()(mod)
    with pytest.raises(tvm.TVMLabError, match="MemoryInfo"):
        tvm.ir.make_node("Nope")


def test_storage_rewrite_hoists_allocations_to_the_parallel_loop(rng):
    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, 4, "i", kind="parallel") as i:
            with ib.for_range(0, 8, "j") as j:
                t = ib.allocate("float32", 8, name="t")
                with ib.for_range(0, 8, "k") as k:
                    t[k] = a[i * 64 + j * 8 + k] * 2.0
                with ib.for_range(0, 8, "k") as k:
                    b[i * 64 + j * 8 + k] = t[7 - k]
        return ib.get()
    A = te.placeholder((256,), name="A")
    B = te.extern((256,), [A], fcompute, name="B", dtype="float32")
    s = te.create_schedule(B.op)
    body = tvm.lower(s, [A, B])["main"].body
    par = []
    stmt_functor.post_order_visit(body, lambda n: par.append(n) if isinstance(n, tvm.tir.For)
                                  and n.kind == tvm.tir.ForKind.PARALLEL else None)
    assert isinstance(par[0].body, tvm.tir.Allocate)
    a = rng.standard_normal(256).astype("float32")
    want = (a.reshape(32, 8)[:, ::-1] * 2.0).reshape(-1)
    np.testing.assert_allclose(_run(s, [A, B], [a], (256,)), want, rtol=1e-6)


# ------------------------------------------------------------------ LowerIntrin
@pytest.mark.parametrize("dtype", ["int32", "int64", "int16"])
def test_lower_intrin_floor_division_matches_numpy(rng, dtype):
    x, y = te.var("x", dtype), te.var("y", dtype)
    cases = [tvm.tir.floordiv(x, y), tvm.tir.floormod(x, y), tvm.tir.floordiv(x, tvm.tir.const(8, dtype)),
             tvm.tir.floormod(x, tvm.tir.const(8, dtype))]
    n = 64
    a = rng.integers(-100, 100, n).astype(dtype)
    b = rng.integers(1, 9, n).astype(dtype) * rng.choice([-1, 1], n).astype(dtype)
    refs = [a // b, a % b, a // 8, a % 8]
    for expr, ref in zip(cases, refs):
        func = tvm.tir.PrimFunc([x, y], tvm.tir.Evaluate(expr)).with_attr("target", tvm.target.Target("llvm"))
        lowered = tvm.tir.transform.LowerIntrin()(tvm.IRModule.from_expr(func))["main"].body.value
        found = []
        stmt_functor.post_order_visit(lowered, lambda e: found.append(e) if isinstance(
            e, (tvm.tir.FloorDiv, tvm.tir.FloorMod)) else None)
        assert not found
        A = te.placeholder((n,), dtype, name="A")
        B = te.placeholder((n,), dtype, name="B")
        C = te.compute((n,), lambda i: tvm.tir.Let(x, A[i], tvm.tir.Let(y, B[i], lowered)), name="C")
        s = te.create_schedule(C.op)
        f = tvm.build(s, [A, B, C], "llvm")
        c = tvm.nd.array(np.zeros(n, dtype))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_array_equal(c.numpy(), ref)


def test_lower_intrin_default_rule_and_missing_target(rng):
    def rule(call):
        return call.args[0] * 3.0 + 1.0
    tvm.ir.register_intrin_lowering("tir.tvmlab_test_affine", target="default", f=rule, level=99)
    n = 17
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: tvm.tir.call_intrin("float32", "tir.tvmlab_test_affine", A[i]), name="B")
    s = te.create_schedule(B.op)
    a = rng.standard_normal(n).astype("float32")
    np.testing.assert_allclose(_run(s, [A, B], [a], (n,)), a * 3.0 + 1.0, rtol=1e-5, atol=1e-6)
    func = tvm.tir.PrimFunc([], tvm.tir.Evaluate(tvm.tir.const(0)))
    with pytest.raises(tvm.TVMLabError, match="target"):
        tvm.tir.transform.LowerIntrin()(tvm.IRModule.from_expr(func))


# ------------------------------------------------------------------ NarrowDataType
def _loop_dtypes(func):
    out = []
    stmt_functor.post_order_visit(
        func.body, lambda n: out.append(n.loop_var.dtype) if isinstance(n, tvm.tir.For) else None)
    return out


def test_narrow_datatype_in_lower_runs_int64_loops_as_int32(rng):
    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, tvm.tir.const(12, "int64"), "i") as i:
            with ib.for_range(0, tvm.tir.const(9, "int64"), "j") as j:
                b[i * 9 + j] = a[i * 9 + (8 - j)] * 2.0
        return ib.get()
    A = te.placeholder((108,), name="A")
    B = te.extern((108,), [A], fcompute, name="B", dtype="float32")
    s = te.create_schedule(B.op)
    lowered = tvm.lower(s, [A, B])
    assert "narrow_datatype" in lowered.history
    assert _loop_dtypes(lowered["main"]) == ["int32", "int32"]
    a = rng.standard_normal(108).astype("float32")
    np.testing.assert_allclose(_run(s, [A, B], [a], (108,)), (a.reshape(12, 9)[:, ::-1] * 2.0).reshape(-1),
                               rtol=1e-6)


def test_narrow_datatype_keeps_what_does_not_fit_and_never_widens():
    def nest(m, n, dtype=None):
        ib = tvm.tir.ir_builder.create()
        data = ib.pointer("float32", name="data")
        with ib.for_range(0, m, "i", dtype=dtype) as i:
            with ib.for_range(0, n, "j", dtype=dtype) as j:
                data[i * n + j] = 1.0
        return tvm.IRModule.from_expr(tvm.tir.PrimFunc([], ib.get()))
    c64 = lambda v: tvm.tir.const(v, "int64")  # noqa: E731
    narrow = lambda mod, bits: _loop_dtypes(tvm.tir.transform.NarrowDataType(bits)(mod)["main"])  # noqa: E731
    assert narrow(nest(c64(2**16), c64(2**15)), 32) == ["int32", "int32"]    # i * n + j < 2**31
    assert narrow(nest(c64(2**16), c64(2**16)), 32) == ["int64", "int64"]    # 2**32 does not fit
    assert narrow(nest(2, 2), 16) == ["int16", "int16"]
    assert narrow(nest(2**16, 2**16), 32) == ["int32", "int32"]              # int32 stays, never int64
    m = te.size_var("m", "int64")
    assert narrow(nest(m, c64(4)), 32) == ["int64", "int64"]                 # unknown bound
    with pytest.raises(tvm.TVMLabError):
        tvm.tir.transform.NarrowDataType(12)


def test_narrow_datatype_thread_index_follows_an_int64_extent_where_int32_overflows():
    def kernel(m, n):
        ib = tvm.tir.ir_builder.create()
        data = ib.pointer("float32", name="data")
        bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(bx, "thread_extent", m)
        ib.scope_attr(tx, "thread_extent", n)
        data[bx * n + tx] = 1.0
        return tvm.IRModule.from_expr(tvm.tir.PrimFunc([], ib.get()))
    c64 = lambda v: tvm.tir.const(v, "int64")  # noqa: E731

    def dtypes(mod):
        body = tvm.tir.transform.NarrowDataType(32)(mod)["main"].body
        return body.node.var.dtype, body.body.node.var.dtype, body.body.body
    assert dtypes(kernel(c64(2), c64(32)))[:2] == ("int32", "int32")
    bx, tx, store = dtypes(kernel(c64(2**30), c64(32)))     # bx * 32 + tx reaches 2**35
    assert (bx, tx) == ("int64", "int64")
    assert "Cast" not in repr(store.index) and store.index.dtype == "int64"
    assert dtypes(kernel(2**30, 32))[:2] == ("int32", "int32")   # int32 extents: never widened


# ------------------------------------------------------------------ InstrumentBoundCheckers
def _checked_build(s, args):
    with tvm.transform.PassContext(config={"tir.instrument_bound_checkers": True}):
        return tvm.lower(s, args), tvm.build(s, args, "llvm")


@pytest.mark.parametrize("offset", [1, -1, 1000])
def test_bound_checkers_raise_naming_the_buffer(offset):
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i + offset] + B[i], name="C")
    s = te.create_schedule(C.op)
    _, f = _checked_build(s, [A, B, C])
    x = tvm.nd.array(np.ones(16, "float32"))
    with pytest.raises(tvm.TVMLabError, match="out of bounds: buffer 'A'"):
        f(x, x, tvm.nd.empty((16,), "float32"))


def test_bound_checkers_pass_in_bounds_code_padding_vectors_and_splits(rng):
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    P = te.compute((n + 2,), lambda i: te.if_then_else(tvm.tir.all(i >= 1, i <= n), A[i - 1], 0.0),
                   name="P")                                 # reads A[-1] / A[n] only where discarded
    C = te.compute((n,), lambda i: P[i] + P[i + 1] + P[i + 2], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    lowered, f = _checked_build(s, [A, C])
    asserts = []
    stmt_functor.post_order_visit(lowered["main"].body,
                                  lambda x: asserts.append(x) if isinstance(x, tvm.tir.AssertStmt) else None)
    assert asserts
    for size in (21, 3):
        a = rng.standard_normal(size).astype("float32")
        out = tvm.nd.array(np.full(size, np.nan, "float32"))
        f(tvm.nd.array(a), out)
        p = np.concatenate([[0.0], a, [0.0]])
        np.testing.assert_allclose(out.numpy(), p[:-2] + p[1:-1] + p[2:], rtol=1e-5)
    with tvm.transform.PassContext(config={"tir.instrument_bound_checkers": False}):
        plain = tvm.lower(s, [A, C])
    found = []
    stmt_functor.post_order_visit(plain["main"].body,
                                  lambda x: found.append(x) if isinstance(x, tvm.tir.AssertStmt) else None)
    assert not found


def test_instrument_bound_checkers_pass_on_allocations(rng):
    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        t = ib.allocate("float32", 4, name="tmp")
        with ib.for_range(0, 8, "i") as i:
            t[i % 5] = a[i]                                  # tmp[4] is one past its end
            b[i] = t[i % 4]
        return ib.get()
    A = te.placeholder((8,), name="A")
    B = te.extern((8,), [A], fcompute, name="B", dtype="float32")
    s = te.create_schedule(B.op)
    _, f = _checked_build(s, [A, B])
    with pytest.raises(tvm.TVMLabError, match="buffer 'tmp' written"):
        f(tvm.nd.array(rng.standard_normal(8).astype("float32")), tvm.nd.empty((8,), "float32"))


# ------------------------------------------------------------------ Simplify: conditions decided by enclosing ifs
def test_simplify_decides_an_if_its_enclosing_if_decided():
    from tvmlab.analysis.interp import Interpreter
    ib = tvm.tir.ir_builder.create()
    A = ib.pointer("float32", name="A")
    n, m = te.size_var("n"), te.size_var("m")
    with ib.for_range(0, 8, name="i") as i:
        with ib.if_scope(tvm.tir.all(ib.likely(i < n), i > m)):
            with ib.if_scope(i < n):           # a conjunct of the outer condition: true here
                A[i] = 1.0
            with ib.if_scope(A[i] > 0.5):      # reads memory: never decided
                with ib.if_scope(A[i] > 0.5):
                    A[i] = A[i] + 1.0
        with ib.else_scope():
            with ib.if_scope(tvm.tir.all(i < n, i > m)):     # the else of the same condition: false
                A[i] = -5.0
            A[i] = 0.0
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([A, n, m], ib.get()))
    out = tvm.tir.transform.Simplify()(mod)["main"]
    text = str(out)
    assert "-5.0" not in text
    assert text.count("0.5 < A[i]") == 2
    assert text.count("if ") == 3
    a = np.full(8, np.nan, "float32")
    Interpreter(buffers={out.params[0]: a}, env={out.params[1]: 6, out.params[2]: 1}).run(out.body)
    np.testing.assert_array_equal(a, [0, 0, 2, 2, 2, 2, 0, 0])
