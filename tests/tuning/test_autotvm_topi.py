"""topi.schedule_matmul / schedule_conv2d_nchw as AutoTVM templates: the hand-written schedule is the
fallback, and inside apply_history_best the tuned knobs are used."""
import numpy as np

import tvmlab as tvm
from tvmlab import autotvm, te, topi
from tvmlab.autotvm import topi_templates
from tvmlab.topi.testing import conv2d_nchw_python


def _matmul(m, k, n):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    return A, B, topi.matmul(A, B)


def _hand_written(schedule, out):
    mod = topi_templates._module("matmul" if schedule is topi.schedule_matmul else "conv2d")
    hook, mod.config_hook = mod.config_hook, None
    try:
        return schedule(out).trace.as_python()
    finally:
        mod.config_hook = hook


def _tune_checked(task, log, n, seed, number=1):
    """``n`` random configs of ``task`` tuned into ``log``, each checked against the fallback's outputs;
    every one must measure without error.  Returns the records."""
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=30),
                                 runner=autotvm.LocalRunner(timeout=30, number=number, repeat=1,
                                                            check_correctness=True))
    tuner = autotvm.tuner.RandomTuner(task, seed=seed)
    tuner.tune(n_trial=n, measure_option=opt, callbacks=[autotvm.callback.log_to_file(str(log))])
    opt["runner"].close()
    recs = list(autotvm.record.load_from_file(str(log)))
    assert len(recs) == n and all(r.error_no == 0 for _, r in recs)
    return recs


def _check_matmul(s, A, B, C, m, k, n):
    f = tvm.build(s, [A, B, C], "llvm")
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (m, k)).astype("float32")
    b = rng.uniform(-1, 1, (k, n)).astype("float32")
    c = tvm.nd.array(np.full((m, n), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_outside_a_context_the_hand_written_schedule_is_unchanged(tmp_path):
    A, B, C = _matmul(50, 70, 90)
    hand = _hand_written(topi.schedule_matmul, C)
    assert topi.schedule_matmul(C).trace.as_python() == hand
    # a log without this workload: the fallback is the hand-written schedule too
    log = tmp_path / "other.log"
    log.write_text("")
    with autotvm.apply_history_best(str(log)):
        assert topi.schedule_matmul(C).trace.as_python() == hand
    # explicit options are never overridden by a config
    cfg = autotvm.task.create("matmul.x86", args=(50, 70, 90, "float32"), target="llvm").config_space.get(3)
    with autotvm.task.ApplyConfig(cfg):
        s1 = topi.schedule_matmul(C, rows=2, row_block=4)
        s2 = topi.schedule_matmul(C)
    assert s1.trace.as_python() == _hand_written(lambda c: topi.schedule_matmul(c, rows=2, row_block=4), C)
    assert s2.trace.as_python() != hand


def test_matmul_template_space_contains_the_fallback():
    task = autotvm.task.create("matmul.x86", args=(50, 70, 90, "float32"), target="llvm")
    space = task.config_space
    assert list(space.space_map) == ["rows", "row_mult", "col_panels", "k_chunk"]
    assert task.flop == 2 * 50 * 70 * 90
    fb = autotvm.FallbackConfigEntity()
    with autotvm.task.ApplyConfig(fb):
        s_fb, _ = topi_templates.matmul_x86.template_func(50, 70, 90, "float32")
    assert fb.is_fallback and space.index_of(dict(fb._entity_map)) is not None
    A, B, C = _matmul(50, 70, 90)
    assert s_fb.trace.as_python() == _hand_written(topi.schedule_matmul, C)
    # the same choices as a point of the space: measuring it makes a log never worse than the fallback
    fb_cfg = topi_templates.fallback_config(task)
    assert not fb_cfg.is_fallback
    with autotvm.task.ApplyConfig(fb_cfg):
        assert topi.schedule_matmul(C).trace.as_python() == _hand_written(topi.schedule_matmul, C)


def test_tuned_matmul_is_used_by_schedule_matmul(tmp_path):
    m, k, n = 50, 70, 90            # nothing divides: guarded tails everywhere
    task = autotvm.task.create("matmul.x86", args=(m, k, n, "float32"), target="llvm")
    log = tmp_path / "mm.log"
    recs = _tune_checked(task, log, 4, seed=5, number=2)
    best = min(recs, key=lambda p: np.mean(p[1].costs))[0].config
    A, B, C = _matmul(m, k, n)
    with autotvm.apply_history_best(str(log)):
        s = topi.schedule_matmul(C)
    with autotvm.task.ApplyConfig(best):
        want = topi.schedule_matmul(C).trace.as_python()
    assert s.trace.as_python() == want
    _check_matmul(s, A, B, C, m, k, n)
    # every knob combination computes the product
    for index in (0, len(task.config_space) - 1):
        with autotvm.task.ApplyConfig(task.config_space.get(index)):
            s = topi.schedule_matmul(C)
        _check_matmul(s, A, B, C, m, k, n)


def test_tuned_conv2d_is_used_by_schedule_conv2d(tmp_path):
    args = (1, 5, 11, 13, 20, 3, 3, 2, 1, "float32")     # odd sizes, stride 2
    task = autotvm.task.create("conv2d_nchw.x86", args=args, target="llvm")
    assert list(task.config_space.space_map) == ["width", "unroll_kw"]
    log = tmp_path / "conv.log"
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=30),
                                 runner=autotvm.LocalRunner(timeout=30, number=2, repeat=1, check_correctness=True))
    tuner = autotvm.tuner.RandomTuner(task, seed=0)
    tuner.tune(n_trial=4, measure_option=opt,
               callbacks=[autotvm.callback.log_to_file(str(log))])
    opt["runner"].close()
    recs = list(autotvm.record.load_from_file(str(log)))
    assert all(r.error_no == 0 for _, r in recs), [r for _, r in recs if r.error_no]
    best = min(recs, key=lambda p: np.mean(p[1].costs))[0].config
    data = te.placeholder((1, 5, 11, 13), name="data")
    kernel = te.placeholder((20, 5, 3, 3), name="kernel")
    out = topi.conv2d_nchw(data, kernel, 2, 1)
    with autotvm.apply_history_best(str(log)):
        s = topi.schedule_conv2d_nchw(out)
    assert s.trace.as_python() == _hand_written(
        lambda o: topi.schedule_conv2d_nchw(o, width=best["width"].val, unroll_kw=best["unroll_kw"].val), out)
    f = tvm.build(s, [data, kernel, out], "llvm")
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (1, 5, 11, 13)).astype("float32")
    w = rng.uniform(-1, 1, (20, 5, 3, 3)).astype("float32")
    y = tvm.nd.array(np.full((1, 20, 6, 7), np.nan, "float32"))
    f(tvm.nd.array(x), tvm.nd.array(w), y)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 20, 6, 7), "float32")
    for oy in range(6):
        for ox in range(7):
            patch = xp[:, :, oy * 2:oy * 2 + 3, ox * 2:ox * 2 + 3]
            ref[:, :, oy, ox] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)


def _write_log(path, task, configs):
    # records as a tune writes them, the first config the fastest
    from tvmlab.autotvm.measure import MeasureInput, MeasureResult
    lines = [autotvm.record.encode(MeasureInput(task.target, task, cfg), MeasureResult((1e-3 * (k + 1),), 0, 0.1, 0))
             for k, cfg in enumerate(configs)]
    path.write_text("\n".join(lines) + "\n")


def test_shipped_configs_apply_by_default_and_a_users_log_comes_first(tmp_path, monkeypatch):
    from tvmlab.autotvm import tophub
    m, k, n = 50, 70, 90
    task = autotvm.task.create("matmul.x86", args=(m, k, n, "float32"), target="llvm")
    shipped, mine = task.config_space.get(3), task.config_space.get(len(task.config_space) - 2)
    folder = tmp_path / "tophub"
    folder.mkdir()
    _write_log(folder / f"{tophub.device_key('llvm')}.log", task, [shipped])
    A, B, C = _matmul(m, k, n)
    hand = _hand_written(topi.schedule_matmul, C)
    traces = {}
    for name, cfg in (("shipped", shipped), ("mine", mine)):
        with autotvm.task.ApplyConfig(cfg):
            traces[name] = topi.schedule_matmul(C).trace.as_python()
    assert len({hand, traces["shipped"], traces["mine"]}) == 3

    monkeypatch.setenv("TOPHUB_LOCATION", str(folder))
    s = topi.schedule_matmul(C)                 # no context: the shipped config of this CPU
    assert s.trace.as_python() == traces["shipped"]
    _check_matmul(s, A, B, C, m, k, n)
    assert autotvm.FallbackContext.root().query(tvm.target.Target("llvm"), task.workload).to_json_dict() == \
        shipped.to_json_dict()
    mylog = tmp_path / "mine.log"
    _write_log(mylog, task, [mine])
    with autotvm.apply_history_best(str(mylog)):
        assert topi.schedule_matmul(C).trace.as_python() == traces["mine"]
    other = tmp_path / "other.log"
    other.write_text("")
    with autotvm.apply_history_best(str(other)):      # the user's log lacks it: the shipped one answers
        assert topi.schedule_matmul(C).trace.as_python() == traces["shipped"]
    with tophub.context("llvm", extra_files=[str(mylog)]):   # TVM's form: both, the best record wins
        assert topi.schedule_matmul(C).trace.as_python() == traces["shipped"]
    # another CPU has no log, and TOPHUB_LOCATION=NONE turns the shipped configs off
    assert tophub.shipped_log("llvm -mcpu=x86-64") is None
    monkeypatch.setenv("TOPHUB_LOCATION", "NONE")
    assert topi.schedule_matmul(C).trace.as_python() == hand
    assert tophub.location() is None


def test_tophub_device_keys():
    from tvmlab.autotvm import tophub
    assert tophub.device_key("cuda -arch=sm_90") == "cuda_sm_90"
    assert tophub.device_key("llvm -mcpu=skylake-avx512") == "llvm_skylake-avx512"
    assert tophub.device_key("llvm").startswith("llvm_")
    assert tophub.device_key("opengl") is None


def test_conv2d_unroll_kw_option_unrolls_the_kernel_columns_and_computes_the_same():
    import pytest
    data = te.placeholder((1, 6, 9, 10), name="data")
    kernel = te.placeholder((16, 6, 3, 5), name="kernel")
    out = topi.conv2d_nchw(data, kernel, 1, 1)
    rng = np.random.default_rng(4)
    x = rng.uniform(-1, 1, (1, 6, 9, 10)).astype("float32")
    w = rng.uniform(-1, 1, (16, 6, 3, 5)).astype("float32")
    results = []
    for unroll_kw in (False, True):
        s = topi.schedule_conv2d_nchw(out, width=3, unroll_kw=unroll_kw)
        text = str(tvm.lower(s, [data, kernel, out], simple_mode=True))
        assert ("for rx in range(5)" in text) != unroll_kw      # unrolled: no loop left
        f = tvm.build(s, [data, kernel, out], "llvm")
        y = tvm.nd.array(np.full([int(d) for d in out.shape], np.nan, "float32"))
        f(tvm.nd.array(x), tvm.nd.array(w), y)
        results.append(y.numpy())
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = results[0].shape[2:]
    ref = np.zeros_like(results[0])
    for oy in range(oh):
        for ox in range(ow):
            ref[:, :, oy, ox] = np.tensordot(xp[:, :, oy:oy + 3, ox:ox + 5], w, axes=([1, 2, 3], [1, 2, 3]))
    for r in results:
        np.testing.assert_allclose(r, ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(tvm.TVMLabError, match="unroll_kw"):
        topi.schedule_conv2d_nchw(out, unroll_kw=2)


def test_conv2d_nchwc_template_tunes_the_kernel_relay_builds(tmp_path):
    # relay.build (AlterOpLayout at opt_level 3) runs conv2d_NCHWc: extraction finds its task, and a record of
    # that task sets the kernel's register tile
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    from tvmlab.topi.x86 import conv2d as cv
    rng = np.random.default_rng(3)
    wnp = rng.uniform(-1, 1, (32, 16, 3, 3)).astype("float32")
    x = relay.var("x", shape=(1, 16, 14, 14))
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(wnp), padding=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    tasks = autotvm.task.extract_from_program(mod, {}, "llvm")
    assert [(t.name, t.args) for t in tasks] == [("conv2d_NCHWc.x86", (1, 16, 14, 14, 32, 3, 3, 1, 1, "float32"))]
    with tvm.transform.PassContext(opt_level=2):     # inside a context, its level: no AlterOpLayout
        assert [t.name for t in autotvm.task.extract_from_program(mod, {}, "llvm")] == ["conv2d_nchw.x86"]
    task = tasks[0]
    fb = topi_templates.fallback_config(task)
    other = next(c for c in map(task.config_space.get, range(len(task.config_space)))
                 if c["width"].val != fb["width"].val)
    log = tmp_path / "conv.log"
    _write_log(log, task, [other])
    ic, oc = cv.nchwc_blocks(16, 32)
    D = te.placeholder((1, 16 // ic, 14, 14, ic), name="D")
    K = te.placeholder((32 // oc, 16 // ic, 3, 3, ic, oc), name="K")
    with tvm.target.Target("llvm"):
        conv = topi.nn.conv2d_NCHWc(D, K, 1, 1, 1, f"NCHW{ic}c", f"NCHW{oc}c")
    plain = topi.x86.schedule_conv2d_NCHWc([conv]).trace.as_python()
    with autotvm.apply_history_best(str(log)):
        tuned = topi.x86.schedule_conv2d_NCHWc([conv]).trace.as_python()
        expect = topi.x86.schedule_conv2d_NCHWc([conv], width=other["width"].val).trace.as_python()
    assert tuned == expect and tuned != plain
    # the template's own build computes the convolution; the model built under the log too
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=30),
                                 runner=autotvm.LocalRunner(timeout=30, number=1, repeat=1, check_correctness=True))
    tuner = autotvm.tuner.GridSearchTuner(task, range_idx=(other.index, other.index))
    tuner.tune(n_trial=1, measure_option=opt)
    opt["runner"].close()
    assert tuner.best_flops > 0
    xs = rng.uniform(-1, 1, (1, 16, 14, 14)).astype("float32")
    with autotvm.apply_history_best(str(log)), tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", xs)
    g.run()
    want = np.maximum(conv2d_nchw_python(xs, wnp, 1, 1), 0)
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


def test_a_conv_with_fewer_channels_than_a_vector_is_a_task_too(tmp_path):
    """TVM's test_tuning_cpu: a 3 -> 3 channel 5x5 convolution (blocks of all 3 channels, narrower than a
    vector) is a conv2d_NCHWc.x86 task; its configs build, time and check, and relay.build uses the best."""
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    rng = np.random.default_rng(5)
    x = relay.var("x", shape=(1, 3, 32, 32))
    w = relay.var("w", shape=(3, 3, 5, 5))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.conv2d(x, w)))
    (task,) = autotvm.task.extract_from_program(mod, {}, "llvm")
    assert (task.name, task.args) == ("conv2d_NCHWc.x86", (1, 3, 32, 32, 3, 5, 5, 1, 0, "float32"))
    assert len(task.config_space) > 1
    log = tmp_path / "small.log"
    _tune_checked(task, log, 3, seed=2)
    xs = rng.uniform(-1, 1, (1, 3, 32, 32)).astype("float32")
    ws = rng.uniform(-1, 1, (3, 3, 5, 5)).astype("float32")
    with autotvm.apply_history_best(str(log)), tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", xs)
    g.set_input("w", ws)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), conv2d_nchw_python(xs, ws, 1, 0), rtol=1e-4, atol=1e-4)
