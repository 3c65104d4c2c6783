"""MergeDynamicSharedMemoryAllocations, ir_builder allocations indexed per dimension, and the
storage scope on a pointer's type: checked on the IR and by running the merged kernel."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.analysis.interp import Interpreter
from tvmlab.driver.build_module import schedule_to_module
from tvmlab.tir import stmt_functor


def _passes(s, args, merge=True):
    seq = [tvm.tir.transform.StorageFlatten(64), tvm.tir.transform.Simplify(),
           tvm.tir.transform.StorageRewrite()]
    if merge:
        seq.append(tvm.tir.transform.MergeDynamicSharedMemoryAllocations())
    return tvm.transform.Sequential(seq)(schedule_to_module(s, args))["main"]


def _allocs(stmt):
    found = []
    stmt_functor.post_order_visit(stmt, lambda n: found.append(n) if isinstance(n, tvm.tir.Allocate) else None)
    return found


def _run(func, arrays):
    it = Interpreter(buffers={p: a for p, a in zip(func.params, arrays)})
    it.run(func.body)


def _staged(n, dtypes):
    """out[t] = sum of the inputs, each staged through its own shared.dyn buffer, then through a
    shared.dyn buffer of the output's type: the staging buffers are dead when the last one is
    written, one statement later."""
    ins = [te.placeholder((n,), name=f"A{k}", dtype=d) for k, d in enumerate(dtypes)]

    def ir(inputs, out):
        ib = tvm.tir.ir_builder.create()
        tx = te.thread_axis("threadIdx.x")
        ib.scope_attr(tx, "thread_extent", n)
        sh = [ib.allocate(b.dtype, (n,), name=f"S{k}", scope="shared.dyn") for k, b in enumerate(inputs)]
        acc = ib.allocate("int32", (1,), name="acc", scope="local")
        res = ib.allocate(out.dtype, (n,), name="R", scope="shared.dyn")
        ptrs = [ib.buffer_ptr(b) for b in inputs]
        o = ib.buffer_ptr(out)
        for s_, p in zip(sh, ptrs):
            s_[tx] = p[tx]
        acc[0] = 0
        for s_ in sh:
            acc[0] = acc[0] + s_[tx].astype("int32")
        res[tx] = acc[0]
        o[tx] = res[tx] * 2
        return ib.get()

    out = te.extern((n,), ins, lambda i, o: ir(i, o[0]), name="staged", dtype="int32")
    return ins, out


def test_merge_reuses_dead_buffers_and_computes_the_same():
    n = 64
    ins, out = _staged(n, ["int8", "int16"])
    s = te.create_schedule(out.op)
    func = _passes(s, ins + [out])
    dyn = [a for a in _allocs(func.body) if a.buffer_var.type_annotation.storage_scope == "shared.dyn"]
    assert len(dyn) == 1 and dyn[0].dtype == "uint8"
    # S0 (64 B) and S1 (128 B) live together; R (256 B) comes after both died and takes their room
    assert int(dyn[0].extents[0]) == 256
    rng = np.random.default_rng(0)
    a0 = rng.integers(-100, 100, n).astype("int8")
    a1 = rng.integers(-1000, 1000, n).astype("int16")
    res = np.full(n, -7, "int32")
    _run(func, [a0, a1, res])
    np.testing.assert_array_equal(res, (a0.astype("int32") + a1) * 2)


def test_merge_never_reuses_inside_the_reading_statement():
    """The last reads of S0/S1 and the first write of R in one statement: other threads may still
    read the old bytes there, so R gets room of its own."""
    n = 32
    A = te.placeholder((n,), name="A", dtype="int16")

    def ir(a, out):
        ib = tvm.tir.ir_builder.create()
        tx = te.thread_axis("threadIdx.x")
        ib.scope_attr(tx, "thread_extent", n)
        s0 = ib.allocate("int16", (n,), name="S0", scope="shared.dyn")
        r = ib.allocate("int32", (n,), name="R", scope="shared.dyn")
        ap, op = ib.buffer_ptr(a), ib.buffer_ptr(out)
        s0[tx] = ap[tx]
        r[tx] = s0[tx].astype("int32") + 1
        op[tx] = r[tx]
        return ib.get()

    out = te.extern((n,), [A], lambda i, o: ir(i[0], o[0]), name="shift", dtype="int32")
    func = _passes(te.create_schedule(out.op), [A, out])
    (dyn,) = [a for a in _allocs(func.body) if a.scope == "shared.dyn"]
    assert int(dyn.extents[0]) == n * 2 + n * 4
    a = np.random.default_rng(1).integers(-999, 999, n).astype("int16")
    res = np.full(n, -7, "int32")
    _run(func, [a, res])
    np.testing.assert_array_equal(res, a.astype("int32") + 1)


def test_merge_loop_keeps_buffers_live_and_symbolic_sizes_follow():
    """A buffer used in a loop stays live through the loop; a symbolic-size buffer goes after the
    constant part; two-index access into a 2-d allocation."""
    n = te.size_var("n")
    A = te.placeholder((n,), name="A", dtype="float32")

    def ir(a, out):
        ib = tvm.tir.ir_builder.create()
        tx = te.thread_axis("threadIdx.x")
        ib.scope_attr(tx, "thread_extent", 4)
        t = ib.allocate("float32", (4, 4), name="T", scope="shared.dyn")
        v = ib.allocate("float32", (a.shape[0],), name="V", scope="shared.dyn")
        ap, op = ib.buffer_ptr(a), ib.buffer_ptr(out)
        with ib.for_range(0, 4, name="k") as k:
            t[tx, k] = ap[tx * 4 + k] * 2.0
        with ib.for_range(0, n, name="j") as j:
            v[j] = ap[j]
        with ib.for_range(0, 4, name="k") as k:
            op[tx * 4 + k] = t[tx, k] + v[tx]
        return ib.get()

    out = te.extern((n,), [A], lambda i, o: ir(i[0], o[0]), name="mix", dtype="float32")
    func = _passes(te.create_schedule(out.op), [A, out])
    (dyn,) = [a for a in _allocs(func.body) if a.scope == "shared.dyn"]
    assert "n" in str(dyn.extents[0])
    m = 16
    a = np.random.default_rng(2).uniform(-1, 1, m).astype("float32")
    res = np.full(m, np.nan, "float32")
    it = Interpreter(buffers={func.params[0]: a, func.params[1]: res}, env={func.params[2]: m})
    it.run(func.body)
    np.testing.assert_allclose(res, a * 2 + np.repeat(a[:4], 4), rtol=1e-6)


def test_merge_outside_kernel_is_an_error():
    ib = tvm.tir.ir_builder.create()
    buf = ib.allocate("float32", (4,), name="X", scope="shared.dyn")
    buf[0] = 1.0
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([], ib.get()))
    with pytest.raises(tvm.TVMLabError, match="outside any thread_extent"):
        tvm.tir.transform.MergeDynamicSharedMemoryAllocations()(mod)


def test_pointer_type_records_scope_and_lowering_keeps_shared():
    ib = tvm.tir.ir_builder.create()
    x = ib.allocate("float16", (2, 3), name="X", scope="local")
    x[1, 2] = tvm.tir.const(1.0, "float16")
    stmt = ib.get()
    ann = stmt.buffer_var.type_annotation
    assert ann.storage_scope == "local" and ann.element_type.dtype == "float16"
    assert isinstance(ann, tvm.ir.PointerType)
    assert str(stmt.body.index) == "5"
    with pytest.raises(tvm.TVMLabError, match="3 dimensions, indexed with 2"):
        ib2 = tvm.tir.ir_builder.create()
        y = ib2.allocate("float32", (2, 3, 4), name="Y")
        y[0, 1] = 1.0
    # tvm.lower's own pipeline puts "shared.dyn" buffers in static shared memory
    n = 64
    ins, out = _staged(n, ["int8"])
    lowered = tvm.lower(te.create_schedule(out.op), ins + [out])["main"]
    scopes = {a.buffer_var.type_annotation.storage_scope for a in _allocs(lowered.body)}
    assert "shared.dyn" not in scopes and "shared" in scopes


# ------------------------------------------------------------------ te.create_prim_func
def test_create_prim_func_builds_in_argument_order():
    m = 11
    A = te.placeholder((m,), name="A")
    idx = te.placeholder((m,), name="I", dtype="int32")
    B = te.compute((m,), lambda i: A[idx[i]] * 2.0, name="B")
    C = te.compute((m,), lambda i: B[i] + 1.0, name="C")
    func = te.create_prim_func([C, A, idx])
    assert [p.name for p in func.params] == ["C", "A", "I"] and func.attrs["tir.noalias"]
    f = tvm.build(func)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, m).astype("float32")
    i = rng.permutation(m).astype("int32")
    c = tvm.nd.array(np.full(m, np.nan, "float32"))
    f(c, tvm.nd.array(a), tvm.nd.array(i))
    np.testing.assert_allclose(c.numpy(), a[i] * 2 + 1, rtol=1e-6)


def test_create_prim_func_errors():
    X = te.placeholder((4, 3), name="X")
    s_state = te.placeholder((4, 3))
    init = te.compute((1, 3), lambda _, i: X[0, i])
    upd = te.compute((4, 3), lambda t, i: s_state[t - 1, i] + X[t, i])
    scan = te.scan(init, upd, s_state, inputs=[X])
    with pytest.raises(TypeError, match="Unsupported Operation: ScanOp"):
        te.create_prim_func([X, scan])
    B = te.compute((4, 3), lambda i, j: X[i, j] + 1, name="B")
    with pytest.raises(tvm.TVMLabError, match="placeholder 'X' is read but not among the arguments"):
        te.create_prim_func([B])


def test_thread_sync_separates_a_hand_off_between_merged_buffers():
    """S0 (int8) and R (int32) share offset 0: ``R[tx]`` is not the bytes of ``S0[tx]``, so the
    write waits for every thread's read."""
    n = 64
    A = te.placeholder((n,), name="A", dtype="int8")

    def ir(a, out):
        ib = tvm.tir.ir_builder.create()
        tx = te.thread_axis("threadIdx.x")
        ib.scope_attr(tx, "thread_extent", n)
        s0 = ib.allocate("int8", (n,), name="S0", scope="shared.dyn")
        acc = ib.allocate("int32", (1,), name="acc", scope="local")
        r = ib.allocate("int32", (n,), name="R", scope="shared.dyn")
        ap, op = ib.buffer_ptr(a), ib.buffer_ptr(out)
        s0[tx] = ap[tx]
        acc[0] = s0[tx].astype("int32")
        r[tx] = acc[0] + 1
        op[tx] = r[tx]
        return ib.get()

    out = te.extern((n,), [A], lambda i, o: ir(i[0], o[0]), name="hand", dtype="int32")
    func = _passes(te.create_schedule(out.op), [A, out])
    text = str(func)
    assert text.count("buf_dyn_shmem[threadIdx.x] =") == 2       # both at offset 0
    synced = str(tvm.tir.transform.ThreadSync("shared")(tvm.IRModule.from_expr(func))["main"])
    body = synced[synced.index("acc[0] = "):]
    assert body.index("tvm_storage_sync") < body.index("buf_dyn_shmem[threadIdx.x] = acc[0]")
