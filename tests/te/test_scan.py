"""te.scan: cumulative sums, multi-step inits, the two-state LSTM recurrence, schedules and errors."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import DSLError, LoweringError, ScheduleError


def _nan(shape, dtype="float32"):
    return tvm.nd.array(np.full(shape, np.nan, dtype))


def _cumsum():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = tvm.te.scan(s_init, s_update, s_state, inputs=[X])
    return X, s_init, s_update, s_scan


@pytest.mark.parametrize("shape", [(1, 5), (7, 1), (13, 21)])
def test_cumsum_tutorial_default_schedule(rng, shape):
    X, _, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    text = str(tvm.lower(s, [X, s_scan], simple_mode=True))
    assert "scan.idx" in text           # the update runs inside the time loop without compute_at
    f = tvm.build(s, [X, s_scan])
    x = rng.random(shape).astype("float32")
    out = _nan(shape)
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=0), rtol=1e-5)


def test_cumsum_with_scheduled_update_and_init(rng):
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=8)
    s[s_update].vectorize(xi)
    io, ii = s[s_init].split(s_init.op.axis[1], factor=3)
    s[s_init].unroll(ii)
    s[s_update].compute_at(s[s_scan], s_scan.op.scan_axis)     # its default place, stated explicitly
    f = tvm.build(s, [X, s_scan])
    x = rng.random((9, 19)).astype("float32")                  # 19 columns: a vector tail
    out = _nan((9, 19))
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=0), rtol=1e-5)


def test_two_step_init_and_a_consumer_of_the_scan(rng):
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    init = te.compute((2, n), lambda t, i: X[t, i], name="init")
    upd = te.compute((m, n), lambda t, i: st[t - 1, i] + st[t - 2, i] * 0.5 + X[t, i], name="upd")
    sc = te.scan(init, upd, st, inputs=[X], name="fib")
    D = te.compute((m, n), lambda t, i: sc[t, i] * 2, name="D")
    s = te.create_schedule(D.op)
    s[D].parallel(D.op.axis[0])
    f = tvm.build(s, [X, D])
    x = rng.random((9, 5)).astype("float32")
    ref = x.astype("float64")
    for t in range(2, 9):
        ref[t] = ref[t - 1] + 0.5 * ref[t - 2] + x[t]
    d = _nan((9, 5))
    f(tvm.nd.array(x), d)
    np.testing.assert_allclose(d.numpy(), 2 * ref, rtol=1e-5)


def _lstm(num_step, num_input, num_hidden, batch_size):
    """The multi-state recurrence of TVM's test_te_schedule_lstm (h and c), written anew."""
    X = te.placeholder((num_step - 1, batch_size, num_input), name="X")
    Wi2h = te.placeholder((4, num_hidden, num_input), name="Wi2h")
    Wh2h = te.placeholder((4, num_hidden, num_hidden), name="Wh2h")
    s_state_h = te.placeholder((num_step, batch_size, num_hidden), name="state_h")
    s_state_c = te.placeholder((num_step, batch_size, num_hidden), name="state_c")
    s_init_c = te.compute((1, batch_size, num_hidden), lambda *i: 0.0, name="init_c")
    s_init_h = te.compute((1, batch_size, num_hidden), lambda *i: 0.0, name="init_h")
    k = te.reduce_axis((0, num_input), name="ki2h")
    s_i2h = te.compute((num_step, 4, batch_size, num_hidden),
                       lambda t, x, i, j: te.sum(X[t - 1, i, k] * Wi2h[x, j, k], axis=k), name="s_i2h")
    k2 = te.reduce_axis((0, num_hidden), name="kh2h")
    s_h2h = te.compute((num_step, 4, batch_size, num_hidden),
                       lambda t, x, i, j: te.sum(s_state_h[t - 1, i, k2] * Wh2h[x, j, k2], axis=k2), name="s_h2h")
    gates = te.compute(s_i2h.shape, lambda *i: s_i2h(*i) + s_h2h(*i), name="gates")
    gshape = (num_step, batch_size, num_hidden)
    in_gate = te.compute(gshape, lambda t, i, j: te.sigmoid(gates[t, 0, i, j]), name="in_gate")
    in_transform = te.compute(gshape, lambda t, i, j: te.tanh(gates[t, 1, i, j]), name="in_transform")
    forget_gate = te.compute(gshape, lambda t, i, j: te.sigmoid(gates[t, 2, i, j]), name="forget_gate")
    out_gate = te.compute(gshape, lambda t, i, j: te.sigmoid(gates[t, 3, i, j]), name="out_gate")
    next_c = te.compute(gshape, lambda t, i, j: forget_gate[t, i, j] * s_state_c[t - 1, i, j]
                        + in_gate[t, i, j] * in_transform[t, i, j], name="next_c")
    next_h = te.compute(gshape, lambda t, i, j: out_gate[t, i, j] * te.tanh(next_c[t, i, j]), name="next_h")
    update_c = te.compute(gshape, lambda *i: next_c(*i), name="update_c")
    update_h = te.compute(gshape, lambda *i: next_h(*i), name="update_h")
    scan_h, scan_c = te.scan([s_init_h, s_init_c], [update_h, update_c], [s_state_h, s_state_c],
                             inputs=[X], name="lstm_scan")
    stages = dict(gates=gates, in_gate=in_gate, in_transform=in_transform, forget_gate=forget_gate,
                  out_gate=out_gate, s_h2h=s_h2h, s_i2h=s_i2h, next_c=next_c, next_h=next_h,
                  update_h=update_h, update_c=update_c)
    return (X, Wi2h, Wh2h, scan_h, scan_c), stages


def _lstm_ref(x, wi, wh, num_step):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    shape = (num_step, x.shape[1], wh.shape[1])
    H, C = np.zeros(shape), np.zeros(shape)
    for t in range(1, num_step):
        g = np.einsum("ik,xjk->xij", x[t - 1], wi) + np.einsum("ik,xjk->xij", H[t - 1], wh)
        C[t] = sig(g[2]) * C[t - 1] + sig(g[0]) * np.tanh(g[1])
        H[t] = sig(g[3]) * np.tanh(C[t])
    return H, C


@pytest.mark.parametrize("scheduled", [False, True])
def test_lstm_two_states(rng, scheduled):
    num_step, num_input, num_hidden, batch = 6, 5, 12, 3
    (X, Wi2h, Wh2h, scan_h, scan_c), st = _lstm(num_step, num_input, num_hidden, batch)
    s = te.create_schedule(scan_h.op)
    for name in ("gates", "in_gate", "in_transform", "forget_gate", "out_gate"):
        s[st[name]].compute_inline()
    if scheduled:
        h2h = st["s_h2h"]
        jo, ji = s[h2h].split(h2h.op.axis[3], factor=8)          # 12 is not a multiple of 8
        s[h2h].vectorize(ji)
        nh = st["next_h"]                                         # read only by update_h
        s[nh].compute_at(s[st["update_h"]], st["update_h"].op.axis[1])
        s[st["s_i2h"]].parallel(st["s_i2h"].op.axis[1])
    f = tvm.build(s, [X, Wi2h, Wh2h, scan_h, scan_c])
    x = rng.standard_normal((num_step - 1, batch, num_input)).astype("float32")
    wi = (rng.standard_normal((4, num_hidden, num_input)) * 0.5).astype("float32")
    wh = (rng.standard_normal((4, num_hidden, num_hidden)) * 0.5).astype("float32")
    gshape = (num_step, batch, num_hidden)
    h, c = _nan(gshape), _nan(gshape)
    f(tvm.nd.array(x), tvm.nd.array(wi), tvm.nd.array(wh), h, c)
    H, C = _lstm_ref(x.astype("float64"), wi.astype("float64"), wh.astype("float64"), num_step)
    np.testing.assert_allclose(h.numpy(), H, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.numpy(), C, rtol=1e-4, atol=1e-5)


def test_lstm_lowers_with_stages_inside_the_time_loop():
    args, st = _lstm(4, 3, 4, 2)
    s = te.create_schedule(args[3].op)
    assert s[st["s_h2h"]].attach_stage is s[args[3]]        # reads the state: computed at the scan axis
    assert s[st["s_i2h"]].attach_type == "root"             # does not: computed once, before the scan
    ast2 = tvm.lower(s, list(args)).history["AST2"]
    text = str(ast2)
    assert text.index("lstm_scan.idx") < text.index("s_h2h")


# ------------------------------------------------------------ misuse
def test_scan_shape_and_count_errors():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    upd = te.compute((m, n), lambda t, i: st[t - 1, i] + X[t, i], name="upd")
    bad_upd = te.compute((m, n + 1), lambda t, i: X[t, 0], name="bad")
    with pytest.raises(DSLError, match=r"update\[0\] \(bad\) has shape \[m, n \+ 1\], expected the state's \[m, n\]"):
        te.scan(init, bad_upd, st)
    bad_init = te.compute((1, n, 2), lambda _, i, j: X[0, i], name="bad_init")
    with pytest.raises(DSLError, match=r"init\[0\] \(bad_init\) has shape"):
        te.scan(bad_init, upd, st)
    with pytest.raises(DSLError, match="one tensor per state"):
        te.scan([init], [upd, upd], [st])
    st64 = te.placeholder((m, n), name="st64", dtype="float64")
    with pytest.raises(DSLError, match="dtypes"):
        te.scan(init, upd, st64)


def test_scan_schedule_errors():
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    with pytest.raises(ScheduleError, match="only compute_at and compute_root apply"):
        s[s_scan].split(s_scan.op.scan_axis, factor=2)
    s[s_update].compute_root()
    with pytest.raises(LoweringError, match="is an init or update of scan scan but is computed outside its time loop"):
        tvm.lower(s, [X, s_scan])
    s = te.create_schedule(s_scan.op)
    s[s_update].compute_inline()
    with pytest.raises(LoweringError, match="cannot be inlined"):
        tvm.lower(s, [X, s_scan])
    s = te.create_schedule(s_scan.op)
    with pytest.raises(ScheduleError, match="cache_read of compute"):
        s.cache_read(s_update, "global", [s_scan])
    assert len(s.stages) == len(te.create_schedule(s_scan.op).stages)      # left as it was


def test_cache_read_in_the_update_normalize_and_infer_bound(rng):
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    Y = te.compute((m, n), lambda i, j: X[i, j] * 2, name="Y")
    s_state = te.placeholder((m, n), name="state")
    s_init = te.compute((1, n), lambda _, i: Y[0, i], name="init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + Y[t, i], name="update")
    s_scan = te.scan(s_init, s_update, s_state, name="scan")
    s = te.create_schedule(s_scan.op)
    YY = s.cache_read(Y, "local", s_update)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=4)
    s[YY].compute_at(s[s_update], xo)
    s = s.normalize()
    bounds = tvm.te.schedule.InferBound(s)
    assert bounds[YY.op.axis[1]].extent.value == 4                 # one tile of one step
    assert bounds[YY.op.axis[0]].extent.value == 1
    assert bounds[s_scan.op.scan_axis].min.value == 1              # normalize keeps the scan's start
    f = tvm.build(s, [X, s_scan])
    x = rng.random((7, 10)).astype("float32")
    out = _nan((7, 10))
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), np.cumsum(2 * x, axis=0), rtol=1e-5)


def _gpu_cumsum():
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    for st in (s_init, s_update):
        xo, xi = s[st].split(st.op.axis[1], factor=256)
        s[st].bind(xo, te.thread_axis("blockIdx.x"))
        s[st].bind(xi, te.thread_axis("threadIdx.x"))
    return X, s_scan, tvm.build(s, [X, s_scan], "cuda", name="myscan")


def test_gpu_scan_tutorial_compiles_and_launches_the_update_once_per_step():
    X, s_scan, f = _gpu_cumsum()                       # NVRTC compiles it; no GPU needed
    src = f.imported_modules[0].get_source()
    assert "scan_idx" in src                           # the time index reaches the update's kernel
    fn = f.get_function("myscan")

    class Fake:
        _ptr = 4096
    calls = []
    fn.run_host({"m": 5, "n": 300}, {p: Fake() for p in fn.buffers},
                lambda ln, grid, block, kargs: calls.append((ln.name, grid, block, [v for v, _ in kargs])))
    assert [c[0] for c in calls] == ["myscan_kernel0"] + ["myscan_kernel1"] * 4
    assert all(c[1] == (2, 1, 1) and c[2] == (256, 1, 1) for c in calls)
    assert [c[3][-1] for c in calls[1:]] == [1, 2, 3, 4]          # scan.idx, step by step


def test_gpu_scan_runs(rng, cuda_run):
    X, s_scan, f = _gpu_cumsum()
    a_np = rng.random((10, 1000)).astype("float32")
    _, b = cuda_run(f, a_np, np.full((10, 1000), np.nan, "float32"))
    np.testing.assert_allclose(b, np.cumsum(a_np, axis=0), rtol=1e-5)


def test_reduction_update_matrix_recurrence(rng):
    T, n = 7, 24
    W = te.placeholder((n, n), name="W")
    X = te.placeholder((T, n), name="X")
    h = te.placeholder((T, n), name="h")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    k = te.reduce_axis((0, n), name="k")
    upd = te.compute((T, n), lambda t, i: te.sum(h[t - 1, k] * W[k, i], axis=k), name="upd")
    sc = te.scan(init, upd, h, inputs=[X, W], name="rnn")
    s = te.create_schedule(sc.op)
    ko, ki = s[upd].split(k, factor=5)                       # 24 is not a multiple of 5
    io, ii = s[upd].split(upd.op.axis[1], factor=8)
    s[upd].reorder(io, ko, ki, ii)
    s[upd].vectorize(ii)
    f = tvm.build(s, [X, W, sc])
    x = rng.random((T, n)).astype("float32")
    w = ((rng.random((n, n)) - 0.5) * 0.3).astype("float32")
    out = _nan((T, n))
    f(tvm.nd.array(x), tvm.nd.array(w), out)
    ref = np.zeros((T, n))
    ref[0] = x[0]
    for t in range(1, T):
        ref[t] = ref[t - 1] @ w
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-6)


def test_update_reading_the_current_step_is_refused():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    mid = te.compute((m, n), lambda t, i: st[t, i] * 2, name="mid")
    upd = te.compute((m, n), lambda t, i: mid[t, i] + X[t, i], name="upd")
    with pytest.raises(DSLError, match=r"stage mid reads state st at step t, which is not computed yet"):
        te.scan(init, upd, st)


def test_save_json_round_trip_builds_the_same_scan(rng):
    X, _, _, s_scan = _cumsum()
    loaded = tvm.ir.load_json(tvm.ir.save_json(s_scan.op))
    assert isinstance(loaded, te.ScanOp) and loaded.scan_axis.var.name == "scan.idx"
    out = loaded.output(0)
    X2 = loaded.inputs[0]
    f = tvm.build(te.create_schedule(loaded), [X2, out])
    x = rng.random((6, 9)).astype("float32")
    o = _nan((6, 9))
    f(tvm.nd.array(x), o)
    np.testing.assert_allclose(o.numpy(), np.cumsum(x, axis=0), rtol=1e-5)


def test_init_computed_outside_the_scan_is_refused():
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    s[s_init].compute_root()
    with pytest.raises(LoweringError, match="is an init or update of scan scan but is computed outside its time"):
        tvm.lower(s, [X, s_scan])


def test_reader_of_the_state_computed_outside_the_scan_is_refused():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    s1 = te.compute((m, n), lambda t, i: st[t - 1, i] * 2, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    sc = te.scan(init, s2, st, inputs=[X])
    s = te.create_schedule(sc.op)
    s[s1].compute_root()
    with pytest.raises(LoweringError, match="stage s1 reads the state of scan scan but is computed outside"):
        tvm.lower(s, [X, sc])


def test_scan_computed_at_its_consumer(rng):
    m, n = 6, 5
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n), name="st")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    upd = te.compute((m, n), lambda t, i: st[t - 1, i] + X[t, i], name="upd")
    sc = te.scan(init, upd, st, name="sc")
    D = te.compute((m, n), lambda t, i: sc[t, i] * 2, name="D")
    s = te.create_schedule(D.op)
    s[sc].compute_at(s[D], D.op.axis[0])          # the whole scan per row of D: storage inside the loop
    f = tvm.build(s, [X, D])
    x = rng.random((m, n)).astype("float32")
    d = _nan((m, n))
    f(tvm.nd.array(x), d)
    np.testing.assert_allclose(d.numpy(), 2 * np.cumsum(x, axis=0), rtol=1e-5)


def test_gpu_lstm_compiles_with_the_step_kernels_in_the_time_loop():
    args, st = _lstm(6, 5, 32, 4)
    s = te.create_schedule(args[3].op)
    for name in ("gates", "in_gate", "in_transform", "forget_gate", "out_gate"):
        s[st[name]].compute_inline()

    def bind(t, axes):
        fused = s[t].fuse(*axes) if len(axes) > 1 else axes[0]
        xo, xi = s[t].split(fused, factor=32)
        s[t].bind(xo, te.thread_axis("blockIdx.x"))
        s[t].bind(xi, te.thread_axis("threadIdx.x"))
    for name in ("s_h2h", "next_c", "next_h", "update_h", "update_c"):
        bind(st[name], st[name].op.axis[1:])              # per step: everything but the time axis
    for t in [st["s_i2h"]] + list(args[3].op.init):
        bind(t, t.op.axis)
    f = tvm.build(s, list(args), "cuda")
    fn = f.get_function("default_function")

    class Fake:
        _ptr = 4096
    calls = []
    fn.run_host({}, {v: Fake() for v in fn.buffers} | {v: Fake() for v, _, _ in fn.temps},
                lambda ln, grid, block, kargs: calls.append(ln.name[-1]))
    assert calls == ["0", "1", "2"] + ["3", "4", "5", "6", "7"] * 5     # i2h, two inits, then 5 steps


def test_scan_body_is_a_group_that_nested_groups_stay_inside(rng):
    """Every scan's body stages form a group computed at its time axis (as in TVM); a group made
    of some of them nests inside it and can be computed at another body stage."""
    m, n = te.size_var("m"), te.size_var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    u1 = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: u1[t, i] * 2.0, name="u2")
    u3 = te.compute((m, n), lambda t, i: u2[t, i] + 1.0, name="u3")
    res = tvm.te.scan(init, u3, state, inputs=[X])
    s = te.create_schedule(res.op)
    g = s[u1].group
    assert g is not None and s[u2].group is g and s[u3].group is g and s[init].group is None
    with pytest.raises(ScheduleError, match="step of scan"):
        g.compute_root()
    s[u1].compute_at(s[u2], u2.op.axis[1])
    g2 = s.create_group(outputs=u2, inputs=[state, X])
    assert g2.group is g and s[u1].group is g2 and s[u2].group is g2
    g2.compute_at(s[u3], u3.op.axis[1])
    assert g2.attach_stage is s[u3]
    f = tvm.build(s, [X, res])
    x = rng.standard_normal((6, 5)).astype("float32")
    want = np.empty_like(x)
    want[0] = x[0]
    for t in range(1, 6):
        want[t] = (want[t - 1] + x[t]) * 2.0 + 1.0
    out = _nan((6, 5))
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


def test_scan_fix_point_analysis_finds_the_step_local_axes():
    """ScanFixPointAnalysis: 1 for a spatial axis whose element i of a step reads only element i of
    the earlier steps, 0 where the body transposes it, reads it at a fixed index, or mixes two."""
    m, n, l = te.var("m"), te.var("n"), te.var("l")
    x = te.placeholder((l, m, n), name="x")
    state = te.placeholder((l, m, n))
    init = te.compute((1, m, n), lambda _, i, j: x[0, i, j])

    def fix(update):
        scan = tvm.te.scan(init, update, state)
        got = tvm.te.schedule.ScanFixPointAnalysis(scan.op)
        return [got[ax].value for ax in scan.op.spatial_axis_]
    assert fix(te.compute((l, m, n), lambda t, i, j: x[t, j, i] + state[t - 1, i, j])) == [1, 1]
    assert fix(te.compute((l, m, n), lambda t, i, j: x[t, j, i] + state[t - 1, j, i])) == [0, 0]
    h1 = te.compute((l, n, m), lambda t, j, i: state[t - 1, i, j], name="h1")
    h2 = te.compute((l, m, n), lambda t, i, j: state[t - 1, i, 10] * 2, name="h2")
    assert fix(te.compute((l, m, n), lambda t, i, j: h1[t, j, i] + h2[t, i, j])) == [1, 0]
    h3 = te.compute((l, n, m), lambda t, j, i: state[t - 1, j, j], name="h3")
    h4 = te.compute((l, m, n), lambda t, i, j: state[t - 1, i, j] * 2, name="h4")
    assert fix(te.compute((l, m, n), lambda t, i, j: h3[t, j, i] + h4[t, i, j])) == [0, 0]
    with pytest.raises(ScheduleError, match="expected a scan"):
        tvm.te.schedule.ScanFixPointAnalysis(init.op)
