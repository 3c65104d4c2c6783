"""te.hybrid: scripts parsed into HybridOps, built, scheduled, emulated and written back as scripts."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import HybridScriptError, LoweringError, ScheduleError

N = 8


@te.hybrid.script
def outer(a, b):
    c = output_tensor((a.shape[0], b.shape[0]), a.dtype)  # noqa: F821 - hybrid intrinsics
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            c[i, j] = a[i] * b[j]
    return c


@te.hybrid.script
def constructs(a, b):
    """Every statement form: loops of each kind, if/else, a scalar, a buffer, const_range."""
    c = output_tensor((16,), "float32")  # noqa: F821
    d = output_tensor((16,), "int32")  # noqa: F821
    tmp = allocate((16,), "float32")  # noqa: F821
    scale = 0.5
    for i in parallel(16):  # noqa: F821
        tmp[i] = a[i] * scale
    for i in vectorize(16):  # noqa: F821
        c[i] = tmp[i] + b[i]
    for i in unroll(4):  # noqa: F821
        c[i] = -c[i] if a[i] > 0.0 else c[i] * 2.0
    for i in range(2, 16):
        acc = 0.0
        for k in const_range(3):  # noqa: F821
            acc += a[i - k]
        if i % 3 == 0 and acc > 0.0:
            c[i] = acc
        elif 1 <= i < 5 or not (b[i] < 0.0):
            c[i] = sqrt(abs(acc)) + max(a[i], b[i])  # noqa: F821
        else:
            c[i] = exp(min(acc, 1.0)) - sigmoid(b[i])  # noqa: F821
    for i in range(16):
        d[i] = int32(a[i] * 10.0) // 3 + popcount(i) % 4  # noqa: F821
    return c, d


def _np_constructs(a, b):
    c = np.empty(16, "float32")
    tmp = a * np.float32(0.5)
    c[:] = tmp + b
    for i in range(4):
        c[i] = -c[i] if a[i] > 0 else c[i] * 2
    for i in range(2, 16):
        acc = np.float32(a[i] + a[i - 1] + a[i - 2])
        if i % 3 == 0 and acc > 0:
            c[i] = acc
        elif 1 <= i < 5 or not b[i] < 0:
            c[i] = np.sqrt(abs(acc)) + max(a[i], b[i])
        else:
            c[i] = np.exp(min(acc, 1.0)) - 1 / (1 + np.exp(-b[i]))
    d = (np.trunc(a * 10).astype("int32") // 3 + np.array([bin(i).count("1") % 4 for i in range(16)])).astype("int32")
    return c, d


def test_every_construct_matches_numpy_and_emulation(check_build):
    a = te.placeholder((16,), name="a")
    b = te.placeholder((16,), name="b")
    c, d = constructs(a, b)
    assert isinstance(c.op, te.HybridOp) and d.op is c.op
    s = te.create_schedule(c.op)
    _, res = check_build(s, [a, b, c, d], _np_constructs)
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-2, 2, 16).astype("float32"), rng.uniform(-2, 2, 16).astype("float32")
    ec, ed = constructs(x, y)                   # emulation: the same function as Python
    rc, rd = _np_constructs(x, y)
    np.testing.assert_allclose(ec, rc, rtol=1e-5)
    np.testing.assert_array_equal(ed, rd)


def test_ir_shape_of_a_script():
    n = te.size_var("n")
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    c = outer(a, b)
    loop = c.op.body
    assert isinstance(loop, tvm.tir.For) and loop.loop_var.name == "i" and loop.extent is n
    store = loop.body.body
    assert isinstance(store, tvm.tir.ProducerStore) and store.producer.op.name == "c"
    assert [iv.var.name for iv in c.op.axis] == ["i", "j"]
    assert c.op.input_tensors == [a, b]


def test_symbolic_shape_and_offset_loops(check_build):
    @te.hybrid.script
    def window(a):
        b = output_tensor((a.shape[0] - 2,), a.dtype)  # noqa: F821
        for i in range(2, a.shape[0]):
            s = 0.0
            for j in range(i - 2, i + 1):
                s += a[j]
            b[i - 2] = s / 3.0
        return b

    n = te.size_var("n")
    a = te.placeholder((n,), name="a")
    b = window(a)
    s = te.create_schedule(b.op)
    ref = lambda x: np.convolve(x, np.ones(3, "float32"), "valid") / 3  # noqa: E731
    check_build(s, [a, b], ref, env={"n": 37})
    check_build(s, [a, b], window, env={"n": 11})


def test_scheduled_split_reorder_fuse(check_build):
    a = te.placeholder((13,), name="a")
    b = te.placeholder((10,), name="b")
    c = outer(a, b)
    i, j = c.op.axis
    s = te.create_schedule(c.op)
    io, ii = s[c].split(i, factor=4)           # 13 is not a multiple of 4
    jo, ji = s[c].split(j, nparts=3)
    s[c].reorder(jo, ii, io, ji)
    s[c].parallel(jo)
    s[c].unroll(ji)
    body = tvm.lower(s, [a, b, c])["main"].body
    assert isinstance(body, tvm.tir.AttrStmt) and body.attr_key == "extern_scope"
    ast2 = te.schedule.ScheduleOps(s, te.schedule.InferBound(s))
    loops = _loops(ast2)
    assert [f.loop_var.name for f in loops] == ["j.outer", "i.inner", "i.outer", "j.inner"]
    assert [f.kind for f in loops] == ["parallel", "serial", "serial", "unrolled"]
    check_build(s, [a, b, c], np.outer)

    s = te.create_schedule(c.op)
    f = s[c].fuse(*c.op.axis)
    fo, fi = s[c].split(f, factor=16)
    s[c].vectorize(fi)
    check_build(s, [a, b, c], np.outer)


def _loops(s):
    out = []
    tvm.tir.stmt_functor.post_order_visit(s, lambda x: out.append(x) if isinstance(x, tvm.tir.For) else None)
    return out[::-1]


def test_composes_with_compute(check_build):
    @te.hybrid.script
    def scaled(a):
        b = output_tensor((20,), "float32")  # noqa: F821
        for i in range(20):
            b[i] = a[i] * i
        return b

    x = te.placeholder((20,), name="x")
    y = te.placeholder((20,), name="y")
    up = te.compute((20,), lambda i: x[i] + y[i], name="up")
    mid = scaled(up)
    down = te.compute((20,), lambda i: mid[i] + 1.0, name="down")
    s = te.create_schedule(down.op)
    check_build(s, [x, y, down], lambda x, y: (x + y) * np.arange(20) + 1)
    s[up].compute_inline()                        # the producer's expression goes into the script
    check_build(s, [x, y, down], lambda x, y: (x + y) * np.arange(20) + 1)
    s = te.create_schedule(down.op)
    s.cache_read(up, "local", [mid.op])          # the script reads a copy
    s[mid].split(mid.op.axis[0], factor=8)
    check_build(s, [x, y, down], lambda x, y: (x + y) * np.arange(20) + 1)


def test_calls_captures_and_lists(check_build):
    offsets = (1, (2, 3))

    @te.hybrid.script
    def twice(a):
        b = output_tensor(a.shape, a.dtype)  # noqa: F821
        for i in range(a.shape[0]):
            b[i] = a[i] * 2.0 + offsets[1][0]
        return b

    @te.hybrid.script
    def caller(a, ws):
        c = output_tensor(a.shape, a.dtype)  # noqa: F821
        t = twice(a)
        for i in range(a.shape[0]):
            c[i] = t[i]
            for k in const_range(len(ws)):  # noqa: F821
                w = ws[k]                        # a constant, declared again in each unrolled copy
                c[i] += w * a[i]
        return c

    a = te.placeholder((N,), name="a")
    c = caller(a, [1.5, 2.5])
    ref = lambda x: x * 2 + 2 + 4 * x  # noqa: E731
    check_build(te.create_schedule(c.op), [a, c], ref)
    check_build(te.create_schedule(c.op), [a, c], lambda x: caller(x, np.array([1.5, 2.5])))


def test_build_writes_a_script_that_round_trips(tmp_path, check_build):
    n = te.size_var("n")
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    c = outer(a, b)
    s = te.create_schedule(c.op)
    io, ii = s[c].split(c.op.axis[0], factor=3)
    s[c].unroll(ii)
    mod = te.hybrid.build(s, [n, a, b], [c])
    assert "for i_outer in range(" in mod.get_source() and "unroll(3)" in mod.get_source()
    mod.save(str(tmp_path / "m"))
    loaded = te.hybrid.HybridModule()
    loaded.load(str(tmp_path / "m.py"))
    x, y = np.random.default_rng(2).uniform(size=(2, 5)).astype("float32")
    np.testing.assert_allclose(loaded(5, x, y), np.outer(x, y), rtol=1e-6)
    c2 = loaded(n, a, b)                         # parsed again: a new operation from the script
    check_build(te.create_schedule(c2.op), [a, b, c2], np.outer, env={"n": 9})


def test_cuda_bound_script(cuda_run):
    @te.hybrid.script
    def rowsum(a):
        c = output_tensor((a.shape[0],), a.dtype)  # noqa: F821
        shared = allocate((a.shape[0],), a.dtype, "shared")  # noqa: F821
        total = allocate((1,), a.dtype, "local")  # noqa: F821
        for i in bind("threadIdx.x", a.shape[0]):  # noqa: F821
            total[0] = 0.0
            for k in const_range(a.shape[1]):  # noqa: F821
                total[0] += a[i, k]
            shared[i] = total[0]
        for i in bind("threadIdx.x", a.shape[0]):  # noqa: F821
            c[i] = shared[i] * 2.0
        return c

    a = te.placeholder((32, 4), name="a")
    c = rowsum(a)
    f = tvm.build(te.create_schedule(c.op), [a, c], "cuda")
    assert "threadIdx.x" in f.imported_modules[0].get_source()
    x = np.random.default_rng(4).uniform(size=(32, 4)).astype("float32")
    got = cuda_run(f, x, tvm.testing.poison(np.empty(32, "float32")))[1]
    np.testing.assert_allclose(got, rowsum(x), rtol=1e-5)

    @te.hybrid.script
    def add(a, b):
        c = output_tensor((1000,), "float32")  # noqa: F821
        for i in range(1000):
            c[i] = a[i] + b[i]
        return c

    a = te.placeholder((1000,), name="a")
    b = te.placeholder((1000,), name="b")
    c = add(a, b)
    s = te.create_schedule(c.op)
    bx, tx = s[c].split(c.op.axis[0], factor=128)       # 1000 = 7 * 128 + 104: guarded
    s[c].bind(bx, te.thread_axis("blockIdx.x"))
    s[c].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [a, b, c], "cuda")
    x, y = np.random.default_rng(5).uniform(size=(2, 1000)).astype("float32")
    got = cuda_run(f, x, y, tvm.testing.poison(np.empty(1000, "float32")))[2]
    np.testing.assert_allclose(got, x + y, rtol=1e-6)


def test_te_hybrid_is_one_module():
    import sys

    import tvmlab.hybrid
    from tvmlab.te.hybrid import runtime, script
    from tvmlab.te.hybrid.runtime import HYBRID_GLOBALS
    assert te.hybrid is tvmlab.hybrid is sys.modules["tvmlab.te.hybrid"]
    assert script is te.hybrid.script and runtime is tvmlab.hybrid.runtime
    x = np.arange(4, dtype="float32")
    outer(x, x)
    assert not set(HYBRID_GLOBALS) & set(outer.__wrapped__.__globals__)    # emulation cleans up


def _script_error(fn, *args):
    with pytest.raises(HybridScriptError) as e:
        fn(*args)
    return str(e.value)


def test_script_errors_name_the_line():
    a = te.placeholder((N,), name="a")

    @te.hybrid.script
    def writes_argument(a):
        b = output_tensor((8,), "float32")  # noqa: F821
        a = b  # noqa: F841 - the error under test
        return b

    @te.hybrid.script
    def uses_while(a):
        b = output_tensor((8,), "float32")  # noqa: F821
        while a[0] > 0.0:
            b[0] = a[0]
        return b

    @te.hybrid.script
    def bad_index(a):
        b = output_tensor((8,), "float32")  # noqa: F821
        b[0, 1] = a[0]
        return b

    @te.hybrid.script
    def returns_input(a):
        return a

    line = writes_argument.__wrapped__.__code__.co_firstlineno      # the decorator's line
    msg = _script_error(writes_argument, a)
    assert "'writes_argument'" in msg and "cannot assign to 'a'" in msg and f"test_hybrid.py, line {line + 3}" in msg
    assert "unsupported statement `while" in _script_error(uses_while, a)
    assert "indexed with 2" in _script_error(bad_index, a)
    assert "not declared with output_tensor" in _script_error(returns_input, a)
    assert "takes 2 arguments" in _script_error(outer, a)


def test_schedule_errors_leave_stage_usable():
    @te.hybrid.script
    def tri(a):
        b = output_tensor((8,), "float32")  # noqa: F821
        for i in range(8):
            for j in range(i, 8):
                b[j] = a[i]
        return b

    a = te.placeholder((8,), name="a")
    b = tri(a)
    s = te.create_schedule(b.op)
    with pytest.raises(ScheduleError, match="hybrid script"):
        s[b].compute_inline()
    i, j = b.op.axis
    s[b].reorder(j, i)
    with pytest.raises(LoweringError, match="range of loop j depends on i"):
        tvm.lower(s, [a, b])
    s = te.create_schedule(b.op)
    s[b].fuse(i, j)
    with pytest.raises(LoweringError, match="range of j depends on i"):
        tvm.lower(s, [a, b])
