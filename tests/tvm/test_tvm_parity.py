"""TVM parity: the seed walkthrough's steps and TE programs TVM accepts, run with tvmlab's names.

Modelled on TVM's own tests (bound inference, tir.transform passes, schedule
primitives, IR containers); every program is checked against numpy on random
data with NaN-poisoned outputs.
"""
import json

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import DSLError, LoweringError, ScheduleError, TVMLabError

import gpu_programs

T = tvm.tir.transform


def run(f, inputs, out_shapes, dtype="float32"):
    """Call ``f`` on ``inputs`` (numpy) and NaN-poisoned outputs; returns the outputs as numpy."""
    outs = [tvm.nd.array(np.full(s, np.nan, dtype)) for s in out_shapes]
    f(*[tvm.nd.array(x) for x in inputs], *outs)
    return [o.numpy() for o in outs]


def vadd(n=1024, factor=64):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    return s, A, B, C


# ------------------------------------------------------------------ the walkthrough
def test_infer_bound_and_schedule_ops_as_in_the_walkthrough():
    s, A, B, C = vadd()
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s = s.normalize()
    bounds = tvm.te.schedule.InferBound(s)
    assert isinstance(bounds, dict)
    assert bounds[xo].extent.value == 16 and bounds[xi].extent.value == 64
    assert bounds[C.op.axis[0]].extent.value == 1024
    stmt = tvm.te.schedule.ScheduleOps(s, bounds)
    assert isinstance(stmt, tvm.tir.Stmt)
    text = str(stmt)
    assert "for i.outer in range(16)" in text and "for i.inner in range(64)" in text


def test_infer_bound_of_a_stage_computed_at_a_split():
    """TVM's test_bound1: A1 computed at A2's outer axis covers one tile."""
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    A1 = te.compute((m,), lambda i: A[i] * 2, name="A1")
    A2 = te.compute((m,), lambda i: A1[i] + 3, name="A2")
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(A2.op.axis[0], 8)
    s[A1].compute_at(s[A2], xo)
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[A1.op.axis[0]].extent.value == 8


def _schedule_for_passes(n=1000):
    s, A, B, C = vadd(n)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    xio, xii = s[C].split(xi, factor=8)
    s[C].vectorize(xii)
    s[C].unroll(xio)
    return s, [A, B, C]


def test_passes_one_by_one_give_the_ast3_of_lower():
    # 1024 leaves no guarded tail: where a guard differs between lanes, VectorizeLoop keeps
    # TVM's serial loop and tvm.lower a masked store (tests/lower/test_vectorize_forms.py)
    s, args = _schedule_for_passes(1024)
    mod = tvm.driver.build_module.schedule_to_module(s, args)
    assert isinstance(mod, tvm.IRModule)
    for p in (T.StorageFlatten(64), T.LoopPartition(), T.VectorizeLoop(), T.UnrollLoop(),
              T.Simplify(), T.RemoveNoOp()):
        mod = p(mod)
    tvm.ir.assert_structural_equal(mod, tvm.lower(s, args))
    assert list(mod.history)[-1] == "tir.RemoveNoOp"


def test_sequential_under_pass_context_config_matches_lower():
    s, args = _schedule_for_passes()
    seq = tvm.transform.Sequential([T.StorageFlatten(64), T.LoopPartition(), T.VectorizeLoop(),
                                    T.UnrollLoop(), T.Simplify(), T.RemoveNoOp()])
    mod = tvm.driver.build_module.schedule_to_module(s, args)
    vec = seq(mod)
    assert "T.ramp" in str(vec) or "ramp" in str(vec).lower()
    with tvm.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
        plain = seq(mod)
        lowered = tvm.lower(s, args)
    tvm.ir.assert_structural_equal(plain, lowered)
    assert "ramp" not in str(plain).lower()
    assert not tvm.ir.structural_equal(plain, vec)
    # VectorizeLoop(enable=False) is the same as the config key
    off = tvm.transform.Sequential([T.StorageFlatten(64), T.LoopPartition(),
                                    T.VectorizeLoop(enable=False), T.UnrollLoop(), T.Simplify(),
                                    T.RemoveNoOp()])(mod)
    tvm.ir.assert_structural_equal(off, plain)


def test_lower_sequence_interleaves_virtual_threads_as_lower_does():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    vo, vi = s[B].split(B.op.axis[0], nparts=4)
    s[B].bind(vo, te.thread_axis("vthread"))
    mod = T.lower_sequence()(tvm.driver.build_module.schedule_to_module(s, [A, B], name="f"))
    tvm.ir.assert_structural_equal(mod, tvm.lower(s, [A, B], name="f"))
    assert "vthread" not in str(mod)


def test_symbolic_shape_passes_match_lower(rng):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 3 + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=4)
    s[B].vectorize(xi)
    mod = T.lower_sequence()(tvm.driver.build_module.schedule_to_module(s, [A, B], name="f"))
    tvm.ir.assert_structural_equal(mod, tvm.lower(s, [A, B], name="f"))
    f = tvm.build(mod, target="llvm")
    a = rng.standard_normal(37).astype("float32")
    (got,) = run(f, [a], [(37,)])
    np.testing.assert_allclose(got, a * 3 + 1, rtol=1e-6)
    # an AST2 module or a PrimFunc builds too (lowered first)
    for m in (tvm.driver.build_module.schedule_to_module(s, [A, B], name="f"), mod["f"]):
        np.testing.assert_allclose(run(tvm.build(m, target="llvm"), [a], [(37,)])[0], a * 3 + 1,
                                   rtol=1e-6)


def test_unroll_config_and_add_lower_pass(rng):
    A = te.placeholder((6, 5), name="A")
    B = te.compute((6, 5), lambda i, j: A[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    seen = []

    def count(func):
        seen.append(func.name)
        return func
    with tvm.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": 8},
                                           "tir.add_lower_pass": [(1, count), (3, T.Simplify())]}):
        mod = tvm.lower(s, [A, B])
        f = tvm.build(s, [A, B])
    assert seen == ["main", "default_function"]
    assert "for j" not in str(mod)          # the 5-iteration inner loop is unrolled
    assert "phase3.tir.Simplify" in mod.history
    a = rng.standard_normal((6, 5)).astype("float32")
    np.testing.assert_allclose(run(f, [a], [(6, 5)])[0], a + 1, rtol=1e-6)
    with pytest.raises(LoweringError, match="unknown keys"):
        with tvm.transform.PassContext(config={"tir.UnrollLoop": {"max_steps": 8}}):
            tvm.lower(s, [A, B])


def test_prim_func_pass_and_lower_of_a_module(rng):
    s, A, B, C = vadd(100)

    @T.prim_func_pass(opt_level=0)
    def double_output(func, mod, ctx):
        from tvmlab.ir.functor import IRMutator
        from tvmlab.ir.stmt import Store

        class M(IRMutator):
            def visit_Store(self, st):
                return Store(st.buffer_var, st.value * 2, st.index, st.predicate)
        return func.with_body(M().visit(func.body))
    mod = double_output(tvm.lower(tvm.driver.build_module.schedule_to_module(s, [A, B, C])))
    assert "double_output" in mod.history
    f = tvm.get_global_func("codegen.build_llvm")(mod, "llvm")
    a, b = rng.standard_normal((2, 100)).astype("float32")
    np.testing.assert_allclose(run(f, [a, b], [(100,)])[0], 2 * (a + b), rtol=1e-6)


def test_storage_flatten_needs_bindings_and_thread_sync_scope():
    s, A, B, C = vadd(16)
    with pytest.raises(LoweringError, match="schedule_to_module"):
        T.StorageFlatten(64)(tvm.lower(s, [A, B, C]))
    with pytest.raises(LoweringError, match="shared"):
        T.ThreadSync("global")
    with pytest.raises(TVMLabError, match="IRModule"):
        T.Simplify()(s)


def test_gpu_passes_and_split_host_device():
    n = 256
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    mod = tvm.driver.build_module.schedule_to_module(s, [A, B])
    seq = tvm.transform.Sequential([T.StorageFlatten(64), T.InjectVirtualThread(), T.VectorizeLoop(),
                                    T.UnrollLoop(), T.LowerThreadAllreduce(), T.Simplify(),
                                    T.RemoveNoOp(), T.ThreadSync("shared"), T.SplitHostDevice()])
    out = seq(mod)
    assert len(out.functions) == 2 and out.device_split.kernels
    ref = tvm.lower(s, [A, B], target="cuda")
    tvm.ir.assert_structural_equal(out.device_split.kernels[0].body, ref.device_split.kernels[0].body,
                                   map_free_vars=True)


def test_global_function_registry_and_codegen_builders(rng):
    assert "codegen.build_llvm" in tvm.list_global_func_names()
    assert "codegen.build_cuda" in tvm.list_global_func_names()

    @tvm.register_func("parity.twice", override=True)
    def twice(x):
        return 2 * x
    assert tvm.get_global_func("parity.twice")(21) == 42
    with pytest.raises(TVMLabError, match="not registered"):
        tvm.get_global_func("parity.nothing")
    assert tvm.get_global_func("parity.nothing", allow_missing=True) is None
    s, A, B, C = vadd(64)
    f = tvm.get_global_func("codegen.build_llvm")(tvm.lower(s, [A, B, C]), tvm.target.Target("llvm"))
    a, b = rng.standard_normal((2, 64)).astype("float32")
    np.testing.assert_allclose(run(f, [a, b], [(64,)])[0], a + b, rtol=1e-6)


# ------------------------------------------------------------------ IR containers
def test_constants_as_python_numbers_and_convert():
    A = te.placeholder((7, 3), name="A")
    assert int(A.shape[0]) == 7 and [int(x) for x in A.shape] == [7, 3]
    assert float(tvm.tir.const(1.5)) == 1.5 and int(tvm.tir.const(2.9)) == 2
    assert bool(tvm.tir.const(1) < 2) is True and bool(tvm.tir.const(0)) is False
    with pytest.raises(DSLError, match="Python bool"):
        bool(te.var("x") < 2)
    c = tvm.runtime.convert([1, 2.5, "s"])
    assert isinstance(c[0], tvm.tir.IntImm) and isinstance(c[1], tvm.tir.FloatImm)
    assert isinstance(c[2], tvm.tir.StringImm) and c[2].value == "s"


def test_structural_equal_matches_bound_variables_by_position():
    x, y = te.var("x"), te.var("y")
    assert tvm.ir.structural_equal(x + 1, x + 1)
    assert not tvm.ir.structural_equal(x + 1, y + 1)            # free vars differ
    assert tvm.ir.structural_equal(x + 1, y + 1, map_free_vars=True)
    assert not tvm.ir.structural_equal(x + x, x + y, map_free_vars=True)
    assert not tvm.ir.structural_equal(x + 1, x + 2)
    from tvmlab.ir.stmt import Evaluate, For
    a, b = te.var("i"), te.var("j")
    la = For(a, tvm.tir.const(0), tvm.tir.const(4), "serial", Evaluate(a * 2))
    lb = For(b, tvm.tir.const(0), tvm.tir.const(4), "serial", Evaluate(b * 2))
    assert tvm.ir.structural_equal(la, lb)                      # bound by the loop
    assert tvm.ir.structural_hash(la) == tvm.ir.structural_hash(lb)
    lc = For(b, tvm.tir.const(0), tvm.tir.const(5), "serial", Evaluate(b * 2))
    assert not tvm.ir.structural_equal(la, lc)
    with pytest.raises(TVMLabError, match="extent"):
        tvm.ir.assert_structural_equal(la, lc)


def test_structural_equal_of_two_lowerings_and_reductions():
    def make(extent):
        n = te.var("n")
        A = te.placeholder((n, extent), name="A")
        k = te.reduce_axis((0, extent), name="k")
        B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
        s = te.create_schedule(B.op)
        return B, tvm.lower(s, [A, B])
    B1, m1 = make(8)
    B2, m2 = make(8)
    _, m3 = make(9)
    assert tvm.ir.structural_equal(m1, m2)
    assert tvm.ir.structural_hash(m1) == tvm.ir.structural_hash(m2)
    assert not tvm.ir.structural_equal(m1, m3)
    assert tvm.ir.structural_hash(m1) != tvm.ir.structural_hash(m3)
    # the Reduce bodies: reduce axes are bound, the placeholder is free
    assert tvm.ir.structural_equal(B1.op.body[0], B2.op.body[0], map_free_vars=True)
    assert not tvm.ir.structural_equal(B1.op.body[0], B2.op.body[0])


def test_save_json_round_trips_expressions_statements_and_modules(rng):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.max(A[k] * 2.0, axis=k), name="B")
    s = te.create_schedule(B.op)
    e = te.max(te.var("x") * 3, te.var("y")) // 2
    for node in (e, B.op.body[0], tvm.te.schedule.ScheduleOps(s, tvm.te.schedule.InferBound(s)),
                 tvm.lower(s, [A, B])["main"]):
        text = tvm.ir.save_json(node)
        json.loads(text)
        tvm.ir.assert_structural_equal(tvm.ir.load_json(text), node, map_free_vars=True)
    mod = tvm.ir.load_json(tvm.ir.save_json(tvm.lower(s, [A, B])))
    tvm.ir.assert_structural_equal(mod, tvm.lower(s, [A, B]))
    f = tvm.build(mod, target="llvm")
    a = rng.standard_normal(29).astype("float32")
    np.testing.assert_allclose(run(f, [a], [(1,)])[0], [2 * a.max()], rtol=1e-6)
    nan = tvm.ir.load_json(tvm.ir.save_json(tvm.tir.const(float("nan"))))
    assert np.isnan(nan.value)
    from tvmlab.ir.serialize import JSONError
    for bad in ("not json", "[1, 2]", json.dumps({"format": "other"}),
                json.dumps({"format": "tvmlab.ir/1", "root": {"type": "os.system"}})):
        with pytest.raises(JSONError):
            tvm.ir.load_json(bad)
    with pytest.raises(JSONError, match="cannot write"):
        tvm.ir.save_json(object())


# ------------------------------------------------------------------ item 6: legal TVM programs
def test_compute_at_onto_a_consumers_consumer(rng):
    """The cache_read shared -> local chain of TVM's GPU GEMM / opt_conv_cuda."""
    n, m = 37, 29
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2 + 1, name="B")
    for order in ("AL first", "AA first"):
        s = te.create_schedule(B.op)
        AA = s.cache_read(A, "shared", [B])
        AL = s.cache_read(AA, "local", [B])
        i, j = B.op.axis
        jo, ji = s[B].split(j, 8)
        if order == "AL first":
            s[AL].compute_at(s[B], ji)
            s[AA].compute_at(s[B], i)
        else:                                       # opt_conv_cuda's order
            s[AA].compute_at(s[B], i)
            s[AL].compute_at(s[B], ji)
        f = tvm.build(s, [A, B])
        a = rng.standard_normal((n, m)).astype("float32")
        np.testing.assert_allclose(run(f, [a], [(n, m)])[0], a * 2 + 1, rtol=1e-6)
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "shared", [B])
    s.cache_read(AA, "local", [B])
    s[AA].compute_at(s[B], B.op.axis[1])
    with pytest.raises(LoweringError, match="outside that loop"):
        tvm.lower(s, [A, B])                        # its reader AL stayed at the root


def test_compute_at_then_inline_of_the_other_reader(rng):
    n = 19
    A = te.placeholder((n,), name="A")
    A1 = te.compute((n,), lambda i: A[i] + 1, name="A1")
    A2 = te.compute((n,), lambda i: A1[i] * 2, name="A2")
    B = te.compute((n,), lambda i: A1[i] + A2[i], name="B")
    s = te.create_schedule(B.op)
    s[A1].compute_at(s[B], B.op.axis[0])
    s[A2].compute_inline()
    f = tvm.build(s, [A, B])
    a = rng.standard_normal(n).astype("float32")
    np.testing.assert_allclose(run(f, [a], [(n,)])[0], (a + 1) * 3, rtol=1e-6)
    with pytest.raises(ScheduleError, match="does not read"):
        C = te.compute((n,), lambda i: A[i] * 5, name="C")
        D = te.compute((n,), lambda i: A1[i] + C[i], name="D")
        s2 = te.create_schedule(D.op)
        s2[A1].compute_at(s2[C], C.op.axis[0])


def test_cache_write_and_rfactor_keep_the_reduce_axes(rng):
    n = 24
    A = te.placeholder((n, n), name="A")
    Bm = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * Bm[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    ko, ki = s[CC].split(k, factor=5)
    s[CC].reorder(ko, *CC.op.axis, ki)
    s[CC].compute_at(s[C], C.op.axis[0])
    f = tvm.build(s, [A, Bm, C])
    a, b = rng.standard_normal((2, n, n)).astype("float32")
    np.testing.assert_allclose(run(f, [a, b], [(n, n)])[0], a @ b, rtol=1e-4, atol=1e-4)

    m = 70
    X = te.placeholder((m,), name="X")
    r = te.reduce_axis((0, m), name="r")
    Y = te.compute((1,), lambda i: te.sum(X[r], axis=r), name="Y")
    s = te.create_schedule(Y.op)
    k1, k2 = s[Y].split(r, factor=16)
    YF = s.rfactor(Y, k1)
    k2o, k2i = s[YF].split(k2, 4)                   # the k2 of Y's split, as in TVM
    s[YF].reorder(k2o, YF.op.axis[0], k2i)
    f = tvm.build(s, [X, Y])
    x = rng.standard_normal(m).astype("float32")
    np.testing.assert_allclose(run(f, [x], [(1,)])[0], [x.sum()], rtol=1e-5)


def test_fuse_data_parallel_with_reduce_axis(rng):
    n, K = 13, 7
    A = te.placeholder((n, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    for inner_first in (False, True):
        s = te.create_schedule(B.op)
        if inner_first:
            s[B].reorder(k, B.op.axis[0])
            f = s[B].fuse(k, B.op.axis[0])
        else:
            f = s[B].fuse(B.op.axis[0], k)
        assert f.iter_type == "reduce"
        s[B].split(f, 5)                             # 91 = 5 * 18 + 1: a tail
        fn = tvm.build(s, [A, B])
        a = rng.standard_normal((n, K)).astype("float32")
        np.testing.assert_allclose(run(fn, [a], [(n,)])[0], a.sum(1), rtol=1e-5)
        with pytest.raises(ScheduleError, match="reduction"):
            s[B].parallel(s[B].leaf_iter_vars[0])


def test_two_placeholders_with_the_default_name(rng):
    n = 16
    A = te.placeholder((n,))
    B = te.placeholder((n,))
    C = te.compute((n,), lambda i: A[i] - B[i])
    D = te.compute((n,), lambda i: C[i] * 2)
    s = te.create_schedule(D.op)
    text = str(tvm.lower(s, [A, B, D]))
    assert "placeholder_1" in text
    f = tvm.build(s, [A, B, D])
    a, b = rng.standard_normal((2, n)).astype("float32")
    np.testing.assert_allclose(run(f, [a, b], [(n,)])[0], 2 * (a - b), rtol=1e-6)


def test_symbolic_split_factor_is_recorded_and_replayed(rng):
    n = 50
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 4, name="B")
    s = te.create_schedule(B.op)
    fac = te.var("f")
    s[B].split(B.op.axis[0], factor=fac)
    assert s.trace.steps[-1]["factor"] == {"var": "f", "dtype": "int32"}
    assert "factor=f)" in s.trace.as_python()
    f = tvm.build(s, [A, B, fac])
    a = rng.standard_normal(n).astype("float32")
    for factor in (7, 50, 64):
        out = tvm.nd.array(np.full(n, np.nan, "float32"))
        f(tvm.nd.array(a), out, factor)
        np.testing.assert_allclose(out.numpy(), a * 4, rtol=1e-6)
    from tvmlab.schedule import Trace
    s2 = Trace.from_json(s.trace.to_json()).replay([B.op], symbols={"f": fac})
    tvm.ir.assert_structural_equal(tvm.lower(s2, [A, B, fac]), tvm.lower(s, [A, B, fac]))
    with pytest.raises(ScheduleError, match="symbols="):
        Trace.from_json(s.trace.to_json()).replay([B.op])


def test_placeholder_alone_and_vector_element_dtypes():
    A = te.placeholder((16,), name="A")
    f = tvm.build(te.create_schedule(A.op), [A])
    a = tvm.nd.array(np.arange(16, dtype="float32"))
    f(a)
    np.testing.assert_array_equal(a.numpy(), np.arange(16, dtype="float32"))
    W = te.compute((16,), lambda i: A[i].astype("float32x4"), name="W")     # a tensor of vectors
    f = tvm.build(te.create_schedule(W.op), [A, W])
    w = tvm.nd.empty((16,), "float32x4")
    f(a, w)
    np.testing.assert_array_equal(w.numpy(), np.repeat(np.arange(16, dtype="float32")[:, None], 4, 1))
    with pytest.raises(DSLError, match="vector handles"):
        te.placeholder((16,), name="V", dtype="handlex2")


def test_build_with_positional_target_host():
    n = 128
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "cuda", "llvm", name="myadd")       # compiled by NVRTC
    assert "myadd" in f.imported_modules[0].get_source()
    with pytest.raises(tvm.error.BuildError, match="CPU target"):
        tvm.build(s, [A, B], "cuda", "cuda")
    g = tvm.build(te.create_schedule(B.op), [A, B], "llvm", "llvm", name="plain")
    assert g.entry_name == "plain"


def test_devices_of_other_backends_do_not_exist():
    for kind, fn in (("vulkan", tvm.vulkan), ("metal", tvm.metal), ("rocm", tvm.rocm)):
        dev = tvm.device(kind, 0)
        assert dev.exist is False and dev == fn(0)
        with pytest.raises(tvm.error.DeviceError):
            tvm.nd.array(np.zeros(3, "float32"), dev)
    assert tvm.device("cl").device_type == "opencl" and tvm.device("cl") == tvm.opencl(0)


def test_chained_indexing_binary_min_max_and_floor_ops(rng):
    n = 12
    A = te.placeholder((n, n), dtype="int32", name="A")
    B = te.compute((n, n), lambda i, j: te.max(A[i][j], 3) + te.min(A[j][i], -2)
                   + te.floordiv(A[i][j], 4) * 100 + te.floormod(A[i, j], 5) * 1000, name="B")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B])
    a = rng.integers(-50, 50, (n, n)).astype("int32")
    out = tvm.nd.array(np.full((n, n), -12345, "int32"))
    f(tvm.nd.array(a), out)
    want = np.maximum(a, 3) + np.minimum(a.T, -2) + (a // 4) * 100 + (a % 5) * 1000
    np.testing.assert_array_equal(out.numpy(), want)
    with pytest.raises(DSLError, match="indexed with 1"):
        te.compute((n,), lambda i: A[i] + 1)
    x, y = te.var("x"), te.var("y")
    assert isinstance(te.max(x, y), tvm.tir.Max) and isinstance(te.min(x, 2), tvm.tir.Min)
    assert te.indexdiv is te.floordiv


def test_arithmetic_on_whole_tensors(rng):
    A = te.placeholder((3, 1), name="A")
    B = te.placeholder((1, 4), name="B")
    C = A + B
    D = (C * 2 - A) / B
    E = 1 - D
    s = te.create_schedule(E.op)
    f = tvm.build(s, [A, B, E])
    a = rng.standard_normal((3, 1)).astype("float32")
    b = rng.uniform(1, 2, (1, 4)).astype("float32")
    np.testing.assert_allclose(run(f, [a, b], [(3, 4)])[0], 1 - ((a + b) * 2 - a) / b, rtol=1e-5)
    assert E.op.tag == "elemwise" and C.op.tag == "broadcast" and C.op.name == "T_add"
    n = te.var("n")
    P = te.placeholder((n,), name="P")
    Q = te.placeholder((n,), name="Q")
    R = P * Q + 2
    f = tvm.build(te.create_schedule(R.op), [P, Q, R])
    p, q = rng.standard_normal((2, 9)).astype("float32")
    np.testing.assert_allclose(run(f, [p, q], [(9,)])[0], p * q + 2, rtol=1e-6)
    with pytest.raises(DSLError, match="broadcast"):
        te.placeholder((3,), name="X") + te.placeholder((4,), name="Y")


def test_errors_are_runtime_errors_as_in_tvm():
    assert issubclass(TVMLabError, RuntimeError)
    assert tvm.error.TVMError is TVMLabError and tvm.TVMError is TVMLabError
    assert issubclass(ScheduleError, ValueError) and issubclass(DSLError, TypeError)
    s, A, B, C = vadd(16)
    try:
        s[C].split(C.op.axis[0], factor=0)
    except RuntimeError as e:                 # what code written for TVM catches
        assert isinstance(e, ScheduleError)
    else:
        raise AssertionError("split by 0 was accepted")


def test_cache_write_after_split_on_the_same_stage(rng):
    """TVM relayouts the cache by the stage's leaf axes; the stage becomes a plain copy."""
    n, m = 30, 11
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], 4)            # 30 = 4 * 7 + 2: the cache is padded
    s[B].reorder(xi, xo)
    BL = s.cache_write(B, "local")
    assert [int(d) for d in BL.shape] == [4, 8, 11] and s[B].relations == []
    xo2, _ = s[B].split(B.op.axis[0], 8)
    s[BL].compute_at(s[B], xo2)
    f = tvm.build(s, [A, B])
    a = rng.standard_normal((n, m)).astype("float32")
    np.testing.assert_allclose(run(f, [a], [(n, m)])[0], a * 2 + 1, rtol=1e-6)

    N = 20
    X = te.placeholder((N, N), name="X")
    Y = te.placeholder((N, N), name="Y")
    k = te.reduce_axis((0, N), name="k")
    Z = te.compute((N, N), lambda i, j: te.sum(X[i, k] * Y[k, j], axis=k), name="Z")
    s = te.create_schedule(Z.op)
    io, ii = s[Z].split(Z.op.axis[0], 6)
    s[Z].fuse(ii, Z.op.axis[1])
    s[Z].split(k, 3)
    ZL = s.cache_write(Z, "local")
    assert len(ZL.op.reduce_axis) == 1 and ZL.op.reduce_axis[0] is k
    f = tvm.build(s, [X, Y, Z])
    x, y = rng.standard_normal((2, N, N)).astype("float32")
    np.testing.assert_allclose(run(f, [x, y], [(N, N)])[0], x @ y, rtol=1e-4, atol=1e-4)
    s2 = te.create_schedule(Z.op)
    s2[Z].vectorize(Z.op.axis[1])
    with pytest.raises(ScheduleError, match="before marking"):
        s2.cache_write(Z, "local")


# ------------------------------------------------------------------ TVM's test_te_schedule shapes
def test_schedule_save_json_and_pickle():
    import pickle
    m, n, l = te.size_var("m"), te.size_var("n"), te.size_var("l")
    A = te.placeholder((m, l), name="A")
    B = te.placeholder((n, l), name="B")
    AA = te.compute((m, l), lambda i, j: A[i, j])
    T = te.compute((m, n, l), lambda i, j, k: AA(i, k) * B(j, k))
    s = te.create_schedule(T.op)
    s[AA].set_scope("shared")
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    s[AA].compute_at(s[T], xi1)
    s[AA].split(AA.op.axis[0], factor=10)
    s[T].reorder(xi2, xi1)
    assert T.op.axis[1] in s[T].leaf_iter_vars
    for loaded in (tvm.ir.load_json(tvm.ir.save_json(s)), pickle.loads(pickle.dumps(s))):
        assert isinstance(loaded, tvm.te.schedule.Schedule)
        assert str(loaded.outputs[0].body) == str(s.outputs[0].body)
        assert [st.name for st in loaded.stages] == [st.name for st in s.stages]
        assert [str(st.leaf_iter_vars) for st in loaded.stages] == \
            [str(st.leaf_iter_vars) for st in s.stages]
        assert loaded.stages[1].attach_stage is loaded.stages[3]
        assert loaded.stages[1].scope == "shared" and str(loaded.trace) == str(s.trace)


def test_relations_iter_types_and_pragmas_as_tvm_reports_them():
    m, n = te.size_var("m"), te.size_var("n")
    A = te.placeholder((m, n), name="A")
    T = te.compute((m, n), lambda i, j: A[i, j])
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(T.op.axis[0], T.op.axis[1], x_factor=10, y_factor=5)
    fused = s[T].fuse(xo, yo)
    assert any(isinstance(r, tvm.te.schedule.Fuse) for r in s[T].relations)
    assert any(isinstance(r, tvm.te.schedule.Split) for r in s[T].relations)
    assert tuple(s[T].leaf_iter_vars) == (fused, xi, yi)
    s[T].vectorize(yi)
    s[T].unroll(xi)
    s[T].pragma(fused, "pragma1")
    IV = tvm.te.schedule.IterVar
    assert s[T].iter_var_attrs[xi].iter_type == IV.Unrolled
    assert s[T].iter_var_attrs[yi].iter_type == IV.Vectorized
    assert s[T].iter_var_attrs[fused].pragma_keys[0].value == "pragma1"
    s2 = te.create_schedule(T.op)
    s2[T].fuse()
    assert any(isinstance(r, tvm.te.schedule.Singleton) for r in s2[T].relations)


def test_rfactor_axes_as_in_tvm():
    n = te.size_var("n")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    BF = s.rfactor(B, k1)
    assert len(BF.shape) == 2 and BF.op.body[0].axis[0] is k2 and len(BF.op.body[0].axis) == 1
    assert len(s[B].all_iter_vars) == 2
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k1, factor=4)
    s[B].split(B.op.axis[0], factor=8)
    BF = s.rfactor(B, ki, 1)
    assert BF.shape[0] is n and BF.shape[1].value == 4
    assert BF.op.body[0].axis[0] is k2 and BF.op.body[0].axis[1].var is ko.var
    assert s[B].op.body[0].axis[0].dom.extent.value == 4


def test_arith_analyzer_stmt_functor_and_range():
    x = te.var("x")
    ana = tvm.arith.Analyzer()
    ana.bind(x, tvm.ir.Range(0, 8))
    assert int(ana.simplify(x // 8)) == 0 and int(ana.canonical_simplify(x % 8 - x)) == 0
    b = ana.const_int_bound(x + 1)
    assert (b.min_value, b.max_value) == (1, 8)
    assert ana.const_int_bound(te.var("y")).max_value == tvm.arith.ConstIntBound.POS_INF
    r = tvm.ir.Range(2, 8)
    assert isinstance(r, tvm.ir.Range) and int(r.min) == 2 and int(r.extent) == 6
    assert int(tvm.ir.Range(5).extent) == 5
    n = 16
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], 4)
    body = tvm.lower(s, [A, B])["main"].body
    loops = []
    tvm.tir.stmt_functor.post_order_visit(body, lambda nd: loops.append(nd.loop_var.name)
                                          if isinstance(nd, tvm.tir.For) else None)
    assert loops == ["i.inner", "i.outer"]
    out = tvm.tir.stmt_functor.ir_transform(
        body, None, lambda nd: tvm.tir.For(nd.loop_var, nd.min, nd.extent, "unrolled", nd.body),
        ["tir.For"])
    kinds = []
    tvm.tir.stmt_functor.post_order_visit(out, lambda nd: kinds.append(nd.kind)
                                          if isinstance(nd, tvm.tir.For) else None)
    assert kinds == ["unrolled", "unrolled"]
    with pytest.raises(LoweringError, match="callback returned"):
        tvm.tir.stmt_functor.ir_transform(body, lambda nd: object(), None)


def test_tir_transform_on_ir_builder_functions():
    """TVM's test_tir_transform_vectorize / unroll_loop: PrimFunc(params, body) and from_expr."""
    n = te.var("n")
    ib = tvm.tir.ir_builder.create()
    A = ib.pointer("float32", name="A")
    with ib.for_range(0, n) as i:
        with ib.for_range(0, 4, kind="vectorize") as j:
            A[j] = tvm.tir.const(1, A.dtype)
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([A, n], ib.get()))
    stmt = tvm.tir.transform.VectorizeLoop()(mod)["main"].body
    assert isinstance(stmt, tvm.tir.For) and not isinstance(stmt.body, tvm.tir.For)
    assert isinstance(stmt.body.index, tvm.tir.Ramp) and stmt.body.index.lanes == 4

    ib = tvm.tir.ir_builder.create()
    m = te.size_var("m")
    Ab = tvm.tir.decl_buffer((m,), "int64")
    Aptr = ib.buffer_ptr(Ab)
    with ib.for_range(m, m + 2, name="i") as i:
        with ib.for_range(0, 8, name="i", kind="unroll") as j:
            Aptr[j + 1] = Aptr[i] + 1
    stmt = ib.get()
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([Ab], stmt))
    assert mod["main"].buffer_map[mod["main"].params[0]] is Ab
    with tvm.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": 16}}):
        assert not isinstance(tvm.tir.transform.UnrollLoop()(mod)["main"].body, tvm.tir.For)
    with tvm.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": 15}}):
        assert isinstance(tvm.tir.transform.UnrollLoop()(mod)["main"].body, tvm.tir.For)
    with tvm.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": 16,
                                                              "explicit_unroll": False}}):
        ret = tvm.tir.transform.UnrollLoop()(mod)["main"].body
        assert isinstance(ret, tvm.tir.For) and ret.kind == tvm.tir.ForKind.UNROLLED
    f = tvm.tir.PrimFunc([Ab], stmt).with_attr("global_symbol", "g")
    assert f.name == "g" and f.attrs["global_symbol"] == "g"


def test_intrinsic_rules_as_in_the_intrin_math_tutorial(rng):
    from tvmlab.lower import intrin_rules

    def to_extern(op):
        assert isinstance(op, tvm.tir.Call) and op.op.name.startswith("tir.")
        return tvm.tir.call_pure_extern("float32", "%sf" % op.op.name[4:].replace("parity_", ""),
                                        op.args[0])
    try:
        tvm.target.register_intrin_rule("cuda", "exp", to_extern, level=99)
        tvm.ir.register_op_attr("tir.parity_log", "TCallEffectKind", tvm.tir.CallEffectKind.Pure)
        tvm.target.register_intrin_rule("llvm", "parity_log", to_extern, level=99)
        tvm.target.register_intrin_rule("cuda", "parity_log", to_extern, level=99)
        with pytest.raises(LoweringError, match="already registered"):
            tvm.target.register_intrin_rule("llvm", "parity_log", to_extern, level=99)
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        B = te.compute(A.shape, lambda i: tvm.tir.call_intrin("float32", "tir.parity_log", A[i])
                       + te.exp(A[i]), name="B")
        s = te.create_schedule(B.op)
        f = tvm.build(s, [A, B], "llvm")
        a = rng.uniform(0.5, 2.0, 33).astype("float32")
        np.testing.assert_allclose(run(f, [a], [(33,)])[0], np.log(a) + np.exp(a), rtol=1e-5)
        sg = te.create_schedule(B.op)
        bx, tx = sg[B].split(B.op.axis[0], factor=64)
        sg[B].bind(bx, te.thread_axis("blockIdx.x"))
        sg[B].bind(tx, te.thread_axis("threadIdx.x"))
        fc = tvm.build(sg, [A, B], "cuda", name="mylog")
        src = fc.imported_modules[0].get_source()
        assert "logf(" in src and "expf(" in src
    finally:
        for key in (("cuda", "exp"), ("llvm", "parity_log"), ("cuda", "parity_log")):
            intrin_rules._RULES.pop(key, None)
    C = te.compute((4,), lambda i: tvm.tir.call_intrin("float32", "tir.parity_nothing", 1.0), name="C")
    with pytest.raises(TVMLabError):
        tvm.build(te.create_schedule(C.op), [C], "llvm")


def test_opt_conv_cuda_schedule_builds():
    """TVM's opt_conv_cuda tutorial (small sizes): shared/local cache_read chains computed at a
    cache_write stage, virtual threads, vectorized shared-memory copies (loops in each thread)."""
    s, (A, W, B), ref = gpu_programs.opt_conv_hwcn(8, 16, 32, 6)
    f = tvm.build(s, [A, W, B], "cuda")
    src = f.imported_modules[0].get_source()
    assert "__shared__" in src and "__syncthreads()" in src
    rng = np.random.default_rng(6)
    a = rng.standard_normal([int(d) for d in A.shape]).astype("float32")
    w = rng.standard_normal([int(d) for d in W.shape]).astype("float32")
    b = np.full([int(d) for d in B.shape], np.nan, "float32")
    tvm.testing.simulate(f, a, w, b)                      # thread by thread: no race, no divergent barrier
    np.testing.assert_allclose(b, ref(a, w), rtol=1e-4, atol=1e-4)


def test_bound_inference_as_in_tvm_tests():
    """TVM's test_te_schedule_bound_inference: tiles, threads, divisible splits, fuse then split."""
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    xo, yo, xi, yi = s[A2].tile(A2.op.axis[0], A2.op.axis[1], 8, 8)
    s.normalize()
    s[A1].compute_at(s[A2], yo)
    bounds = tvm.te.schedule.InferBound(s)
    assert isinstance(bounds, tvm.container.Map)
    assert bounds[A1.op.axis[0]].extent.value == 8 and bounds[A1.op.axis[1]].extent.value == 8

    s = te.create_schedule(A2.op)
    s[A1].set_scope("shared")
    xo, xi = s[A2].split(A2.op.axis[0], 32)
    xi0, xi1 = s[A2].split(xi, nparts=16)
    s[A2].bind(xi0, te.thread_axis("threadIdx.x"))
    yo, yi = s[A2].split(A2.op.axis[1], 16)
    s[A2].reorder(xo, xi0, yo, xi1, yi)
    s[A1].compute_at(s[A2], yo)
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[A1.op.axis[0]].extent.value == 32 and bounds[A1.op.axis[1]].extent.value == 16

    B8 = te.placeholder((8 * m, l), name="B8")
    C8 = te.compute((8 * m, l), lambda i, j: B8[i, j], name="C8")
    s = te.create_schedule(C8.op)
    xo, xi = s[C8].split(C8.op.axis[0], 8)
    bounds = tvm.te.schedule.InferBound(s)
    tvm.testing.assert_prim_expr_equal(bounds[xo].extent, m)
    assert bounds[xi].extent.value == 8

    split1 = te.var("s")
    s = te.create_schedule(A2.op)
    fused = s[A2].fuse(A2.op.axis[0], A2.op.axis[1])
    xo, xi = s[A2].split(fused, split1)
    s[A1].compute_at(s[A2], xo)
    bounds = tvm.te.schedule.InferBound(s)
    tvm.testing.assert_prim_expr_equal(bounds[A1.op.axis[0]].min, tvm.tir.indexdiv(xo * split1, l))
    tvm.testing.assert_prim_expr_equal(bounds[A1.op.axis[1]].extent, l)
    with pytest.raises(ValueError, match="not equal"):
        tvm.testing.assert_prim_expr_equal(m, l)


def test_fuse_then_symbolic_split_runs(rng):
    m, l, f = te.var("m"), te.var("l"), te.var("f")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j] * 2, name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    xo, xi = s[A2].split(s[A2].fuse(A2.op.axis[0], A2.op.axis[1]), f)
    s[A1].compute_at(s[A2], xo)
    fn = tvm.build(s, [A, A2, f])
    a = rng.standard_normal((5, 7)).astype("float32")
    for factor in (3, 7, 40):
        out = tvm.nd.array(np.full((5, 7), np.nan, "float32"))
        fn(tvm.nd.array(a), out, factor)
        np.testing.assert_allclose(out.numpy(), a * 2 + 3, rtol=1e-6)


def test_schedule_post_proc_and_auto_inline(rng):
    """TVM's test_te_schedule_ops: ScheduleOps -> SchedulePostProcToPrimFunc -> passes; AutoInline*."""
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((m, l), name="A")
    A1 = te.compute((m, l), lambda i, j: A[i, j] * 2, name="A1")
    A2 = te.compute((m, l), lambda i, j: A1[i, j] + 1, name="A2")
    k = te.reduce_axis((0, l), name="k")
    A3 = te.compute((m,), lambda i: te.sum(A2[i, k], axis=k), name="A3")
    A4 = te.compute((m,), lambda i: A3[(i + 1) % m] * 3, name="A4")
    s = te.create_schedule(A4.op)
    stmt = tvm.te.schedule.ScheduleOps(s, tvm.te.schedule.InferBound(s))
    func = tvm.te.schedule.SchedulePostProcToPrimFunc([A, A4], stmt, None)
    assert isinstance(func, tvm.tir.PrimFunc)
    mod = T.lower_sequence()(tvm.IRModule.from_expr(func))
    tvm.ir.assert_structural_equal(mod, tvm.lower(s, [A, A4]))
    tvm.te.schedule.AutoInlineElemWise(s)
    assert [s[t].attach_type for t in (A1, A2, A3)] == ["inline", "inline", "root"]
    s2 = te.create_schedule(A4.op)
    tvm.te.schedule.AutoInlineInjective(s2)
    assert s2[A3].attach_type == "root" and s2[A1].attach_type == "inline"
    f = tvm.build(s, [A, A4])
    a = rng.standard_normal((6, 5)).astype("float32")
    want = np.roll((a * 2 + 1).sum(1), -1) * 3
    np.testing.assert_allclose(run(f, [a], [(6,)])[0], want, rtol=1e-5)
    with pytest.raises(LoweringError, match="argument 1"):
        tvm.te.schedule.SchedulePostProcToPrimFunc([A, 3], stmt)


def test_cache_relayout_as_in_tvm_schedule_ops_tests(rng):
    """test_schedule_cache_relayout2..4 and test_schedule_middle_cache, built and run."""
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m * 4, n), name="A")
    B = te.placeholder((m * 4, n), name="B")
    a, b = rng.standard_normal((2, 12, 5)).astype("float32")

    C = te.compute(A.shape, lambda i, j: A(i, j) * B(i, j), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].reorder(xo, C.op.axis[1], xi)
    s.cache_write(C, "global")
    f = tvm.build(s.normalize(), [A, B, C, m])
    out = tvm.nd.array(np.full((12, 5), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), out, 3)
    np.testing.assert_allclose(out.numpy(), a * b, rtol=1e-6)

    k = te.reduce_axis((0, n), "x")
    R = te.compute((A.shape[0],), lambda i: te.sum(A(i, k) * B(i, k), axis=k), name="R")
    s = te.create_schedule(R.op)
    s[R].split(R.op.axis[0], factor=8)
    s.cache_write(R, "global")
    f = tvm.build(s.normalize(), [A, B, R, m])
    out = tvm.nd.array(np.full(12, np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), out, 3)
    np.testing.assert_allclose(out.numpy(), (a * b).sum(1), rtol=1e-5)

    C1, C2 = te.compute(A.shape, lambda i, j: (A(i, j) + 1, B(i, j) / 2), name="T")
    s = te.create_schedule([C1.op, C2.op])
    s[C1].split(C1.op.axis[0], factor=8)
    s.cache_write([C1, C2], "local")
    f = tvm.build(s.normalize(), [A, B, C1, C2, m])
    o1, o2 = (tvm.nd.array(np.full((12, 5), np.nan, "float32")) for _ in range(2))
    f(tvm.nd.array(a), tvm.nd.array(b), o1, o2, 3)
    np.testing.assert_allclose(o1.numpy(), a + 1, rtol=1e-6)
    np.testing.assert_allclose(o2.numpy(), b / 2, rtol=1e-6)

    P = te.placeholder((m, n), name="P")
    Q = te.placeholder((m, n), name="Q")
    C = te.compute((m, n), lambda i, j: P(i, j) * Q(i, j), name="C")
    D = te.compute((m, n), lambda i, j: C(i, j), name="D")
    s = te.create_schedule(D.op)
    s.cache_read(P, "local", readers=[C])
    s.cache_read(Q, "local", readers=[C])
    s.cache_read(C, "local", readers=[D])
    s.cache_write(D, "local")
    f = tvm.build(s, [P, Q, D])
    np.testing.assert_allclose(run(f, [a, b], [(12, 5)])[0], a * b, rtol=1e-6)


def test_lower_and_build_with_binds(rng):
    n, m, s1 = te.var("n"), te.var("m"), te.var("s1")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    Ab = tvm.tir.decl_buffer((n, m), "float32", name="Ab", strides=[s1, 1])
    text = str(tvm.lower(s, [A, B], binds={A: Ab}))
    assert "Ab[i * s1 + j]" in text
    f = tvm.build(s, [A, B], binds={A: Ab})
    a = rng.standard_normal((6, 7)).astype("float32")
    np.testing.assert_allclose(run(f, [a], [(6, 7)])[0], a * 2, rtol=1e-6)
    with pytest.raises(LoweringError, match="not in the argument list"):
        tvm.lower(s, [B], binds={A: Ab})
    with pytest.raises(LoweringError, match="does not match"):
        tvm.lower(s, [A, B], binds={A: tvm.tir.decl_buffer((n,), "float32")})


def test_tuple_inputs_tutorial(rng):
    """TVM's tuple_inputs tutorial: a two-output compute, an argmax reducer, compute_at of a tuple op."""
    def fcombine(x, y):
        lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
        rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), tvm.te.min_value(t1)
    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    f = tvm.build(s, [idx, val, T0, T1])
    iv = np.tile(np.arange(9, dtype="int32"), (4, 1))
    vv = rng.permutation(36).reshape(4, 9).astype("int32")
    o0, o1 = (tvm.nd.array(np.full(4, -7, "int32")) for _ in range(2))
    f(tvm.nd.array(iv), tvm.nd.array(vv), o0, o1)
    np.testing.assert_array_equal(o0.numpy(), vv.argmax(1))
    np.testing.assert_array_equal(o1.numpy(), vv.max(1))

    A0 = te.placeholder((m, n), name="A0")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A0[i, j] * 3), name="B")
    A1 = te.placeholder((m, n), name="A1")
    C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    f = tvm.build(s, [A0, A1, C])
    a0, a1 = rng.standard_normal((2, 3, 8)).astype("float32")
    np.testing.assert_allclose(run(f, [a0, a1], [(3, 8)])[0], a1 + a0 + 2, rtol=1e-6)


def test_pass_context_config_keys_are_checked():
    s, A, B, C = vadd(16)
    with tvm.transform.PassContext(config={"tir.noalias": True, "tir.disable_assert": True}):
        mod = tvm.lower(s, [A, B, C])
    assert mod.astext() == str(mod) and mod["main"].astext() == str(mod["main"])
    with pytest.raises(LoweringError, match="tir.disable_vectorise"):
        with tvm.transform.PassContext(config={"tir.disable_vectorise": True}):
            tvm.lower(s, [A, B, C])


def test_target_codegen_build_module(rng):
    s, A, B, C = vadd(40)
    f = tvm.target.codegen.build_module(tvm.lower(s, [A, B, C], name="add"), "llvm")
    a, b = rng.standard_normal((2, 40)).astype("float32")
    np.testing.assert_allclose(run(f["add"], [a, b], [(40,)])[0], a + b, rtol=1e-6)


def test_loop_partition_config_as_tvm_defaults():
    """TVM's test_split_uneven_unique_likely: without partitioning the guard stays in the loop."""
    a = te.placeholder((16, 16))
    b = te.placeholder((16, 16))
    c = te.compute((16, 16), lambda x, y: a[x, y] + b[x, y])
    sch = te.create_schedule(c.op)
    sch[c].split(c.op.axis[0], 5)
    with tvm.transform.PassContext(config={"tir.LoopPartition": {"partition_const_loop": False}}):
        stmt = tvm.lower(sch, [a, b, c])["main"].body
        mod = T.LoopPartition()(tvm.driver.build_module.schedule_to_module(sch, [a, b, c]))
    assert isinstance(stmt.body.body, tvm.tir.IfThenElse)
    assert "loop_partition" not in tvm.lower(sch, [a, b, c], simple_mode=True).history
    assert isinstance(tvm.lower(sch, [a, b, c])["main"].body, tvm.tir.SeqStmt)   # partitioned
    assert "tir.LoopPartition" in mod.history
    with pytest.raises(LoweringError, match="partition_const_loop"):
        with tvm.transform.PassContext(config={"tir.LoopPartition": True}):
            tvm.lower(sch, [a, b, c])


def test_testing_helpers():
    targets = dict(tvm.testing.enabled_targets())
    assert targets["llvm"] == tvm.cpu(0)
    assert ("cuda" in targets) == tvm.cuda(0).exist

    @tvm.testing.requires_cuda
    def needs_gpu():
        pass
    skip = [m for m in needs_gpu.pytestmark if m.name == "skipif"]
    assert skip and skip[0].args == (not tvm.cuda(0).exist,)
    assert {"cuda", "gpu"} <= {m.name for m in needs_gpu.pytestmark}     # markers to select GPU tests by
    assert tvm.testing.requires_llvm(needs_gpu) is needs_gpu


def test_pass_instruments_see_the_passes_of_lower(capsys):
    s, A, B, C = vadd(100)
    s[C].split(C.op.axis[0], 8)
    timing = tvm.instrument.PassTimingInstrument()

    @tvm.instrument.pass_instrument
    class Names:
        def __init__(self):
            self.names = []

        def run_before_pass(self, mod, info):
            self.names.append(info.name)
    names = Names()
    assert isinstance(names, tvm.instrument.PassInstrument)
    with tvm.transform.PassContext(instruments=[timing, names],
                                   config={"tir.add_lower_pass": [(1, lambda f: f)]}):
        mod = tvm.lower(s, [A, B, C])
    tvm.ir.assert_structural_equal(mod, tvm.lower(s, [A, B, C]))
    # phase 1 runs right after flattening (and narrowing), where tvm.lower without instruments runs it
    assert names.names == ["tir.lower", "tir.InjectRollingBuffer", "tir.StorageFlatten", "tir.BF16Legalize",
                           "tir.NarrowDataType", "phase1.<lambda>",
                           "tir.InjectVirtualThread", "tir.LoopPartition", "tir.VectorizeLoop",
                           "tir.StorageRewrite", "tir.UnrollLoop", "tir.Simplify", "tir.RemoveNoOp",
                           "tir.HoistIfThenElse", "tir.InstrumentBoundCheckers"]
    text = timing.render()
    assert text.startswith("Total: ") and "\n  tir.lower: " in text and "\n    tir.Simplify: " in text
    with tvm.transform.PassContext(instruments=[tvm.instrument.PrintAfterAll()]):
        T.Simplify()(tvm.driver.build_module.schedule_to_module(s, [A, B, C]))
    assert "After Running Pass" in capsys.readouterr().out
