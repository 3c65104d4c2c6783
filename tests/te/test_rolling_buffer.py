"""rolling_buffer: a tile computed inside a sliding consumer keeps the rows it already holds.

Checked against numpy on random data (outputs poisoned with NaN), with tiles that do not
divide the shapes; the realize shrinks to one window along the rolling axis and fewer
elements are computed; the primitive is recorded in the trace and refused clearly on misuse."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.analysis.interp import Interpreter
from tvmlab.driver.build_module import schedule_to_module
from tvmlab.errors import LoweringError, ScheduleError
from tvmlab.ir.stmt import AttrStmt, ProducerRealize
from tvmlab.schedule.trace import Trace
from tvmlab.tir.stmt_functor import post_order_visit


def _window(X, kh, kw, name, dtype="float32"):
    """Y[i, j] = sum of X over the kh x kw window at (i, j): a valid (unpadded) box filter."""
    h, w = (int(d) for d in X.shape)
    rh, rw = te.reduce_axis((0, kh), "rh"), te.reduce_axis((0, kw), "rw")
    return te.compute((h - kh + 1, w - kw + 1),
                      lambda i, j: te.sum(X[i + rh, j + rw], axis=[rh, rw]), name=name)


def _np_window(x, kh, kw):
    h, w = x.shape[0] - kh + 1, x.shape[1] - kw + 1
    return sum(x[a:a + h, b:b + w] for a in range(kh) for b in range(kw))


def _two_windows(h=13, w=11):
    A = te.placeholder((h, w), name="A")
    B = _window(A, 3, 3, "B")
    C = _window(B, 3, 2, "C")
    return A, B, C


def _tiled(C, th, tw):
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], th)
    jo, ji = s[C].split(C.op.axis[1], tw)
    s[C].reorder(io, jo, ii, ji)
    return s, io, jo


def _run(s, args, ref):
    f = tvm.build(s, args)
    rng = np.random.default_rng(7)
    ins = [rng.uniform(-1, 1, size=[int(d) for d in t.shape]).astype(t.dtype) for t in args[:-1]]
    out = tvm.nd.array(np.full([int(d) for d in args[-1].shape], np.nan, args[-1].dtype))
    f(*[tvm.nd.array(x) for x in ins], out)
    np.testing.assert_allclose(out.numpy(), ref(*ins), rtol=1e-5, atol=1e-5)


def _nodes(stmt, cls):
    out = []
    post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


@pytest.mark.parametrize("th,tw", [(4, 9), (3, 4), (5, 3), (2, 2), (4, 20)])
def test_rolling_buffer_matches_numpy(th, tw):
    A, B, C = _two_windows()
    s, io, jo = _tiled(C, th, tw)
    s[B].compute_at(s[C], jo)
    s[B].rolling_buffer()
    _run(s, [A, C], lambda a: _np_window(_np_window(a, 3, 3), 3, 2))


def test_three_stages_both_rolling_and_row_by_row():
    A = te.placeholder((14, 12), name="A")
    B = _window(A, 3, 3, "B")
    C = _window(B, 2, 3, "C")
    D = _window(C, 3, 3, "D")
    s, io, jo = _tiled(D, 3, 5)
    for x in (C, B):
        s[x].compute_at(s[D], jo)
        s[x].rolling_buffer()
    ref = lambda a: _np_window(_np_window(_np_window(a, 3, 3), 2, 3), 3, 3)  # noqa: E731
    _run(s, [A, D], ref)
    # one row at a time: the rows loop itself slides the window (TVM's implied split)
    s = te.create_schedule(D.op)
    jo, ji = s[D].split(D.op.axis[1], 4)
    s[C].compute_at(s[D], jo)
    s[C].rolling_buffer()
    s[B].compute_at(s[D], jo)
    _run(s, [A, D], ref)


def test_upscale_reads_half_rows():
    A = te.placeholder((9, 8), name="A")
    B = te.compute((9, 8), lambda i, j: A[i, j] * 2 + 1, name="B")
    C = te.compute((18, 16), lambda i, j: B[i // 2, j // 2] + B[(i + 1) // 2 % 9, j // 2], name="C")
    s, io, jo = _tiled(C, 5, 6)
    s[B].compute_at(s[C], jo)
    s[B].rolling_buffer()

    def ref(a):
        b = a * 2 + 1
        i, j = np.meshgrid(np.arange(18), np.arange(16), indexing="ij")
        return b[i // 2, j // 2] + b[(i + 1) // 2 % 9, j // 2]
    _run(s, [A, C], ref)


def test_int8_max_pools_like_tvm():
    from tvmlab import topi
    A = te.placeholder((1, 12, 12, 4), name="A", dtype="int8")
    pa = topi.nn.pool2d(A, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), "max", layout="NHWC")
    pb = topi.nn.pool2d(pa, (3, 3), (1, 1), (1, 1), (0, 0, 0, 0), "max", layout="NHWC")
    s = te.create_schedule(pb.op)
    ho, hi = s[pb].split(pb.op.axis[1], 3)
    s[pa].compute_at(s[pb], ho)
    s[pa].rolling_buffer()
    f = tvm.build(s, [A, pb])
    a = np.random.default_rng(3).integers(-100, 100, size=(1, 12, 12, 4)).astype("int8")
    out = tvm.nd.array(np.zeros((1, 8, 8, 4), "int8"))
    f(tvm.nd.array(a), out)

    def mp(x):
        h, w = x.shape[1] - 2, x.shape[2] - 2
        return np.max([x[:, p:p + h, q:q + w] for p in range(3) for q in range(3)], axis=0)
    np.testing.assert_array_equal(out.numpy(), mp(mp(a)))


def _stores(s, args):
    """(element stores into intermediate buffers, allocation sizes) running AST3 on the interpreter,
    whose fresh allocations hold garbage; the output is checked against numpy."""
    f = tvm.lower(s, args)["main"]
    rng = np.random.default_rng(5)
    arrays = [rng.uniform(-1, 1, size=[int(d) for d in t.shape]).astype(t.dtype) for t in args]
    arrays[-1][:] = np.nan
    params = [f.buffer_map[p].data for p in f.params if p in f.buffer_map]
    count = [0]

    def on_store(var, idx, mask, frames):
        if var not in params:
            count[0] += 1
    Interpreter(buffers=dict(zip(params, arrays)), on_store=on_store).run(f.body)
    np.testing.assert_allclose(arrays[-1], _np_window(_np_window(arrays[0], 3, 3), 3, 2), rtol=1e-5)
    from tvmlab.ir.stmt import Allocate
    return count[0], [int(np.prod([int(e) for e in a.extents])) for a in _nodes(f.body, Allocate)]


def test_realize_is_one_window_and_fewer_elements_are_computed():
    A, B, C = _two_windows(9, 7)
    s, io, jo = _tiled(C, 2, 20)
    s[B].compute_at(s[C], jo)
    plain_stores, plain_alloc = _stores(s, [A, C])
    s[B].rolling_buffer()
    mod = tvm.tir.transform.InjectRollingBuffer()(schedule_to_module(s, [A, C]))
    (realize,) = _nodes(mod["main"].body, ProducerRealize)
    assert [(int(r.min), int(r.extent)) for r in realize.bounds] == [(0, 4), (0, 5)]   # 4 of B's 7 rows
    assert not [a for a in _nodes(mod["main"].body, AttrStmt) if a.attr_key == "rolling_buffer_scope"]
    stores, alloc = _stores(s, [A, C])
    assert alloc == plain_alloc == [20]
    # B is 7 x 5, each element an init and 3 x 3 updates; tiles of 4 rows (the last clipped to 3)
    # start 2 rows apart, so without the rolling buffer rows are computed twice
    assert plain_stores == (4 + 4 + 3) * 5 * 10
    assert stores == 7 * 5 * 10


def test_symbolic_width():
    n = te.var("n")
    A = te.placeholder((12, n), name="A")
    B = te.compute((10, n), lambda i, j: A[i, j] + A[i + 1, j] * 2 + A[i + 2, j], name="B")
    C = te.compute((8, n), lambda i, j: B[i, j] - B[i + 2, j] * B[i + 1, j], name="C")
    s, io, jo = _tiled(C, 3, 5)
    s[B].compute_at(s[C], jo)
    s[B].rolling_buffer()
    f = tvm.build(s, [A, C])
    for w in (1, 7, 13):
        a = np.random.default_rng(w).uniform(-1, 1, size=(12, w)).astype("float32")
        out = tvm.nd.array(np.full((8, w), np.nan, "float32"))
        f(tvm.nd.array(a), out)
        b = a[:10] + a[1:11] * 2 + a[2:12]
        np.testing.assert_allclose(out.numpy(), b[:8] - b[2:10] * b[1:9], rtol=1e-5)


def test_user_phase0_pass_sees_the_mark_and_can_drop_it():
    A, B, C = _two_windows()
    s, io, jo = _tiled(C, 4, 4)
    s[B].compute_at(s[C], jo)
    s[B].rolling_buffer()
    seen = []

    @tvm.tir.transform.prim_func_pass(opt_level=0)
    def drop(func, mod, ctx):
        seen.extend(a.node.name for a in _nodes(func.body, AttrStmt) if a.attr_key == "rolling_buffer_scope")
        return func.with_body(tvm.tir.stmt_functor.ir_transform(
            func.body, None, lambda n: n.body if n.attr_key == "rolling_buffer_scope" else None,
            only_enable=["tir.AttrStmt"]))
    with tvm.transform.PassContext(config={"tir.add_lower_pass": [(0, drop)]}):
        plain = tvm.lower(s, [A, C])
    rolled = tvm.lower(s, [A, C])
    assert seen == ["B"]
    assert "% 6" not in str(plain) and "% 6" in str(rolled)     # B's window: 4 + 2 rows, folded


def test_recorded_in_the_trace_and_replayed():
    A, B, C = _two_windows()
    s, io, jo = _tiled(C, 4, 5)
    s[B].compute_at(s[C], jo)
    s[B].rolling_buffer()
    assert s.trace.steps[-1]["primitive"] == "rolling_buffer"
    assert "s[B].rolling_buffer()" in s.trace.as_python()
    want = str(tvm.lower(s, [A, C]))
    s2 = Trace.from_json(s.trace.to_json()).replay([C])
    assert str(tvm.lower(s2, [A, C])) == want
    ns = {"te": te, "tvmlab": tvm, "A": A, "B": B, "C": C}
    exec(s.trace.as_python(), ns)
    assert str(tvm.lower(ns["s"], [A, C])) == want


def test_misuse_is_refused_and_changes_nothing():
    A, B, C = _two_windows()
    s, io, jo = _tiled(C, 4, 5)
    n = len(s.trace.steps)
    for stage, what in ((s[C], "output"), (s[A], "rolling_buffer")):
        with pytest.raises(ScheduleError, match=what):
            stage.rolling_buffer()
    s[B].double_buffer()
    with pytest.raises(ScheduleError, match="double buffered"):
        s[B].rolling_buffer()
    assert len(s.trace.steps) == n + 1 and not s[B].rolling_buffer_scope


def test_a_buffer_that_does_not_slide_is_a_lowering_error():
    A, B, C = _two_windows()
    s, io, jo = _tiled(C, 4, 5)
    s[B].rolling_buffer()                        # computed at the root: nothing slides
    with pytest.raises(LoweringError, match="rolling_buffer of B: its region does not move"):
        tvm.lower(s, [A, C])
    s[B].compute_at(s[C], jo)
    s[C].parallel(io)
    with pytest.raises(LoweringError, match="rolling_buffer of B: loop .* is parallel"):
        tvm.lower(s, [A, C])
