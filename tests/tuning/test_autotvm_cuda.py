"""topi.cuda's dense / batch_matmul / conv2d schedules as AutoTVM templates (dense.cuda, batch_matmul.cuda,
conv2d_nchw.cuda): TVM's knobs, the hand-written schedule as the fallback, random configs checked thread by
thread against numpy (and on a GPU where there is one), measurement, task extraction and relay.build."""
import importlib
import re
import time

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import autotvm, relay, te, topi
from tvmlab.autotvm import cuda_templates, topi_templates
from tvmlab.autotvm.space import ConfigError, SplitEntity
from tvmlab.topi.testing import conv2d_nchw_python

cuda_dense = importlib.import_module("tvmlab.topi.cuda.dense")
cuda_conv2d = importlib.import_module("tvmlab.topi.cuda.conv2d")

DENSE = ("dense.cuda", (100, 70, 50, "float32"))                      # nothing divides 64 x 64 tiles
SMALL = ("dense.cuda", (3, 40, 70, "float32"))                        # few rows: the matrix-vector knobs
BMM = ("batch_matmul.cuda", (2, 33, 20, 17, "float32"))
CONV7 = ("conv2d_nchw.cuda", (1, 6, 7, 7, 10, 3, 3, 1, 1, 1, "float32"))      # a 7 x 7 output
CONV_S2 = ("conv2d_nchw.cuda", (2, 3, 11, 13, 9, 3, 3, 2, 1, 1, "float32"))   # stride 2, odd sizes
PRODUCT_KNOBS = ["tile_y", "tile_x", "tile_k", "auto_unroll_max_step", "unroll_explicit"]
CONV_KNOBS = ["tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "auto_unroll_max_step",
              "unroll_explicit"]


def _task(spec):
    return autotvm.task.create(spec[0], args=spec[1], target="cuda")


def _source(f):
    return f.imported_modules[0].get_source()


def _reference(name, args, arrays):
    if name == "conv2d_nchw.cuda":
        stride, padding = args[7], args[8]
        return conv2d_nchw_python(arrays[0], arrays[1], stride, padding)
    a, w = arrays
    return a @ np.swapaxes(w, -1, -2)


def _hook_off(monkeypatch):
    monkeypatch.setattr(cuda_dense, "config_hook", None)
    monkeypatch.setattr(cuda_conv2d, "config_hook", None)


@pytest.mark.parametrize("spec,knobs", [(DENSE, PRODUCT_KNOBS), (BMM, PRODUCT_KNOBS), (CONV7, CONV_KNOBS),
                                        (SMALL, ["tile_k", "tile_x", "auto_unroll_max_step", "unroll_explicit"])])
def test_spaces_have_tvms_knobs_and_hold_the_hand_written_point(spec, knobs):
    task = _task(spec)
    space = task.config_space
    assert list(space.space_map) == knobs
    assert 100 < len(space) < 10 ** 8
    assert [e.val for e in space.space_map["auto_unroll_max_step"].entities] == [0, 512, 1500]
    assert [e.val for e in space.space_map["unroll_explicit"].entities] == [0, 1]
    for name, knob in space.space_map.items():
        if name.startswith("tile_") and knob.num_output == 4:
            # 4-way splits: block, virtual thread, thread, per thread; one axis' threads within its limit
            assert all(e.size[0] == -1 and e.size[1] <= cuda_templates.MAX_VTHREAD for e in knob.entities)
            assert all(e.size[2] <= (64 if name == "tile_f" else 1024) for e in knob.entities)
    fb = topi_templates.fallback_config(task)
    assert not fb.is_fallback and fb["auto_unroll_max_step"].val == 0 and fb["unroll_explicit"].val == 1
    if spec is DENSE:
        assert fb["tile_y"] == SplitEntity([-1, 1, 16, 4]) and fb["tile_x"] == SplitEntity([-1, 1, 16, 4])
    if spec is SMALL:
        assert fb["tile_k"] == SplitEntity([-1, 32]) and fb["tile_x"] == SplitEntity([-1, 8])
    flop = {DENSE: 2 * 100 * 70 * 50, BMM: 2 * 2 * 33 * 20 * 17, CONV7: 2 * 10 * 7 * 7 * 6 * 9, SMALL: 2 * 3 * 40 * 70}
    assert task.flop == flop[spec]


def test_conv2d_arguments_have_one_spelling():
    a = autotvm.task.create("conv2d_nchw.cuda", args=(1, 4, 9, 9, 8, 3, 3, (1, 1), (1, 1, 1, 1), 1, "float32"),
                            target="cuda")
    b = autotvm.task.create("conv2d_nchw.cuda", args=(1, 4, 9, 9, 8, 3, 3, 1, 1, (1, 1), "float32"), target="cuda")
    assert a.workload == b.workload == ("conv2d_nchw.cuda", 1, 4, 9, 9, 8, 3, 3, 1, 1, 1, "float32")


def _dense_group(M, N, K):
    A, W, b = te.placeholder((M, K), name="A"), te.placeholder((N, K), name="W"), te.placeholder((N,), name="b")
    with tvm.target.Target("cuda"):
        D = topi.nn.relu(topi.nn.dense(A, W, b))
    return lambda: topi.cuda.schedule_dense([D])


def _conv_group(N, C, H, W, O, K, S, P):
    X, Wt = te.placeholder((N, C, H, W), name="X"), te.placeholder((O, C, K, K), name="W")
    with tvm.target.Target("cuda"):
        Y = topi.nn.relu(topi.nn.conv2d_nchw(X, Wt, S, P, 1))
    return lambda: topi.cuda.schedule_conv2d_nchw([Y])


@pytest.mark.parametrize("group,task_args", [
    (lambda: _dense_group(100, 70, 50), ("dense.cuda", (100, 70, 50, "float32"))),
    (lambda: _dense_group(3, 40, 70), ("dense.cuda", (3, 40, 70, "float32"))),
    (lambda: _conv_group(2, 5, 10, 12, 70, 3, 2, 1),
     ("conv2d_nchw.cuda", (2, 5, 10, 12, 70, 3, 3, 2, 1, 1, "float32"))),
])
def test_the_fallback_is_todays_schedule(monkeypatch, tmp_path, group, task_args):
    """Outside a context, inside one without a record, and at the fallback point of the space: the schedule is
    the hand-written one, step for step (so its CUDA C is too)."""
    monkeypatch.setattr(cuda_conv2d, "MIN_BLOCKS", 1)       # tile this small convolution as a big one is
    schedule = group()
    with monkeypatch.context() as m:
        _hook_off(m)
        hand = schedule().trace.as_python()
    assert schedule().trace.as_python() == hand
    log = tmp_path / "empty.log"
    log.write_text("")
    with autotvm.apply_history_best(str(log)):
        assert schedule().trace.as_python() == hand
    with autotvm.task.ApplyConfig(topi_templates.fallback_config(autotvm.task.create(*task_args, target="cuda"))):
        assert schedule().trace.as_python() == hand


def _per_thread(cfg):
    """Outputs a thread computes (its register tile, virtual threads included) and its reduction step."""
    n, step = 1, 1
    for name, e in cfg._entity_map.items():
        if isinstance(e, SplitEntity) and len(e.size) == 4:
            n *= e.size[1] * e.size[3]
        elif isinstance(e, SplitEntity) and name in ("tile_k", "tile_rc"):
            step = e.size[1]
    return n, step


def _random_configs(task, n, seed):
    """``n`` configs of the space that instantiate, drawn at random among those with small register tiles and
    reduction steps (their code builds quickly); a draw over the GPU's limits is refused."""
    rng = np.random.default_rng(seed)
    space = task.config_space
    out = []
    while len(out) < n:
        cfg = space.get(int(rng.integers(len(space))))
        regs, step = _per_thread(cfg)
        if regs > 8 or step > 8 or cfg["auto_unroll_max_step"].val > 512:
            continue
        try:
            out.append((cfg, task.instantiate(cfg)))
        except ConfigError as e:
            assert "invalid config for this GPU" in str(e)
    return out


@pytest.mark.parametrize("spec,seed,n", [(DENSE, 0, 2), (SMALL, 1, 2), (BMM, 2, 1), (CONV7, 6, 2), (CONV_S2, 4, 1)])
def test_random_configs_compute_the_operator(cuda_run, rng, spec, seed, n):
    task = _task(spec)
    for cfg, (s, args) in _random_configs(task, n, seed):
        f = tvm.build(s, args, "cuda")
        arrays = [rng.standard_normal([int(d) for d in a.shape]).astype("float32") for a in args[:-1]]
        want = _reference(spec[0], spec[1], arrays)
        *_, got = cuda_run(f, *arrays, np.full(want.shape, np.nan, "float32"))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


def _config(task, **knobs):
    fb = topi_templates.fallback_config(task)
    entities = dict(fb._entity_map)
    for name, value in knobs.items():
        entities[name] = SplitEntity(value) if isinstance(value, list) else autotvm.space.OtherOptionEntity(value)
    index = task.config_space.index_of(entities)
    assert index is not None, knobs
    return task.config_space.get(index)


def test_invalid_configs_are_refused_clearly():
    task = _task(("dense.cuda", (1024, 1024, 1024, "float32")))
    too_many = _config(task, tile_y=[-1, 1, 64, 1], tile_x=[-1, 1, 32, 1])
    with pytest.raises(ConfigError, match=r"threads per block \(tile_y x tile_x threads\) is 2048, more than "
                                          r"the device's 1024"):
        task.instantiate(too_many)
    too_big = _config(task, tile_y=[-1, 4, 16, 2], tile_x=[-1, 4, 16, 2], tile_k=[-1, 64])
    with pytest.raises(ConfigError, match=r"shared memory per block \(bytes\) is 135168, more than the device's "
                                          r"49152"):
        task.instantiate(too_big)
    conv = _task(("conv2d_nchw.cuda", (1, 64, 56, 56, 64, 3, 3, 1, 1, 1, "float32")))
    with pytest.raises(ConfigError, match="tile_f x tile_y x tile_x threads"):
        conv.instantiate(_config(conv, tile_f=[-1, 1, 64, 1], tile_y=[-1, 1, 8, 1], tile_x=[-1, 1, 8, 1]))
    # a smaller GPU's limit from the target prunes the space: no axis gets more than 128 threads
    small = autotvm.task.create("dense.cuda", args=(1024, 1024, 1024, "float32"),
                                target="cuda -max_thread_x=128 -max_thread_y=128")
    assert max(e.size[2] for e in small.config_space.space_map["tile_x"].entities) == 128


def test_a_tune_builds_with_nvrtc_and_records_every_config(tmp_path):
    """The builder compiles CUDA configs in its workers; the runner times them on cuda(0), or where there is no
    GPU records each as a RUNTIME_DEVICE error saying so."""
    task = _task(("dense.cuda", (4, 24, 40, "float32")))        # matrix-vector knobs: small kernels
    log = tmp_path / "tune.log"
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=60, n_parallel=2),
                                 runner=autotvm.LocalRunner(timeout=30, number=2, repeat=1))
    tuner = autotvm.tuner.RandomTuner(task, seed=3)
    try:
        tuner.tune(n_trial=3, measure_option=opt, callbacks=[autotvm.callback.log_to_file(str(log))])
    finally:
        opt["runner"].close()
    recs = list(autotvm.record.load_from_file(str(log)))
    assert len(recs) == 3 and all(str(inp.target).startswith("cuda") for inp, _ in recs)
    built = [r for _, r in recs if r.error_no != autotvm.MeasureErrorNo.INSTANTIATION_ERROR]
    assert built
    if tvm.cuda(0).exist:
        assert all(r.error_no == 0 and r.costs[0] > 0 for r in built)
    else:
        for r in built:
            assert r.error_no == autotvm.MeasureErrorNo.RUNTIME_DEVICE and "no CUDA device" in str(r.costs[0])


def test_cuda_candidates_run_in_the_runner_worker_and_a_device_error_replaces_it(tmp_path, monkeypatch):
    """A CUDA candidate is timed in the runner's worker itself (its GPU context lives for the whole tune,
    no child is forked per candidate); a device error on a present GPU asks for a new worker, a missing
    GPU does not (every candidate would start an interpreter for nothing)."""
    from tvmlab.autotvm import measure
    from tvmlab.tuning import executor, forked
    from tvmlab.tuning.measure import build_candidate

    task = _task(SMALL)
    out = build_candidate(lambda: task.instantiate(topi_templates.fallback_config(task)), "cuda -arch=sm_80",
                          str(tmp_path))
    assert out["path"].endswith(".cuda.pkl")

    def no_fork(*a, **k):
        raise AssertionError("a CUDA candidate must not run in a forked child")
    monkeypatch.setattr(forked, "call_forked", no_fork)
    runner = autotvm.LocalRunner(timeout=7, number=1, repeat=1)
    fn, job, timeout = runner.job_of(measure.BuildResult(out["path"], out["args"], None, 0.0))
    assert timeout == 12 and job[2] is None               # the pool's timeout ends a hang; no kill_after
    if tvm.cuda(0).exist:
        res = fn(*job)
        assert res[0] == "ok" and res[1][0] > 0
        return
    res = fn(*job)
    assert res[0] == "error" and res[1] == autotvm.MeasureErrorNo.RUNTIME_DEVICE and res[-1] != measure.RESTART

    # a GPU that is there but fails the launch: the result carries RESTART, and the runner drops its worker
    monkeypatch.setattr(measure, "_cuda_present", lambda: True)
    again = build_candidate(lambda: task.instantiate(topi_templates.fallback_config(task)), "cuda -arch=sm_80",
                            str(tmp_path))
    res = fn((again["path"],) + job[0][1:], job[1], job[2])
    assert res[-1] == measure.RESTART

    class Pool:
        closed = 0

        def close(self):
            Pool.closed += 1
    runner._exec = Pool()
    r = runner.result_of(measure.BuildResult(None, out["args"], None, 0.0), executor.JobResult("ok", res, "", 0.1))
    assert Pool.closed == 1 and r.error_no == autotvm.MeasureErrorNo.RUNTIME_DEVICE
    runner.result_of(measure.BuildResult(None, out["args"], None, 0.0),
                     executor.JobResult("ok", ("ok", [1e-3]), "", 0.1))
    assert Pool.closed == 1                                # a good result keeps the worker
    runner._exec = None


def _model(rng):
    x = relay.var("x", shape=(2, 4, 9, 9))
    w1, w2 = relay.var("w1", shape=(8, 4, 3, 3)), relay.var("w2", shape=(20, 648))
    y = relay.nn.relu(relay.nn.conv2d(x, w1, padding=(1, 1)))
    y = relay.nn.dense(relay.nn.batch_flatten(y), w2)
    params = {"w1": rng.standard_normal((8, 4, 3, 3)).astype("float32") * 0.3,
              "w2": rng.standard_normal((20, 648)).astype("float32") * 0.1}
    return tvm.IRModule.from_expr(relay.Function([x, w1, w2], y)), params


def test_tasks_of_a_model_and_relay_build_with_tuned_configs(tmp_path, rng):
    mod, params = _model(rng)
    tasks = autotvm.task.extract_from_program(mod["main"], params, target="cuda")
    assert [t.workload for t in tasks] == [("conv2d_nchw.cuda", 2, 4, 9, 9, 8, 3, 3, 1, 1, 1, "float32"),
                                           ("dense.cuda", 2, 20, 648, "float32")]
    only = autotvm.task.extract_from_program(mod["main"], params, target="cuda", ops=[relay.op.get("nn.dense")])
    assert [t.name for t in only] == ["dense.cuda"]
    conv, dense = tasks
    picks = [_config(conv, tile_f=[-1, 2, 4, 1], tile_y=[-1, 1, 3, 3], tile_x=[-1, 1, 9, 1], tile_rc=[-1, 2],
                     tile_ry=[-1, 1], auto_unroll_max_step=512),
             _config(dense, tile_k=[-1, 16], tile_x=[-1, 4])]
    log = tmp_path / "model.log"
    autotvm.record.save_to_file([(autotvm.MeasureInput(t.target, t, c),
                                  autotvm.MeasureResult((1e-5,), 0, 0.1, time.time())) for t, c in zip(tasks, picks)],
                                 str(log))
    with autotvm.apply_history_best(str(log)):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="cuda", params=params)
    src = lib.get_lib().get_source()
    bounds = sorted(int(b) for b in re.findall(r"__launch_bounds__\((\d+)\)", src))
    assert 4 * 3 * 9 in bounds and 16 * 4 in bounds      # the records' threads per block
    xv = rng.standard_normal((2, 4, 9, 9)).astype("float32")
    h = np.maximum(conv2d_nchw_python(xv, params["w1"], 1, 1), 0).reshape(2, -1)
    (got,) = tvm.testing.simulate_graph(lib, x=xv)
    np.testing.assert_allclose(got, h @ params["w2"].T, rtol=1e-4, atol=1e-4)
    with tvm.transform.PassContext(opt_level=3):
        plain = relay.build(mod, target="cuda", params=params).get_lib().get_source()
    assert sorted(int(b) for b in re.findall(r"__launch_bounds__\((\d+)\)", plain)) != bounds


def test_tuned_configs_fetch_float4(cuda_run, rng):
    """A config of dense.cuda (not the fallback) fetches its shared slices with float4 loads, as the
    hand-written schedule does, where the rows (K = 48) and the config's tile_k are multiples of 4."""
    task = _task(("dense.cuda", (72, 40, 48, "float32")))
    cfg = _config(task, tile_k=[-1, 8], auto_unroll_max_step=512)
    assert not cfg.is_fallback
    s, args = task.instantiate(cfg)
    f = tvm.build(s, args, "cuda")
    assert "float4 A_v = *(float4*)(A + " in _source(f)
    assert re.search(r"ld\.global\.nc\.v4\.[fu]32", f.imported_modules[0].get_source("ptx"))
    a, w = rng.standard_normal((72, 48)).astype("float32"), rng.standard_normal((40, 48)).astype("float32")
    *_, got = cuda_run(f, a, w, np.full((72, 40), np.nan, "float32"))
    np.testing.assert_allclose(got, a @ w.T, rtol=1e-4, atol=1e-4)


def test_bench_tune_cuda_reports_the_rate():
    """``python -m tvmlab.bench.tune --cuda N``: trials per second on a GPU; without one, the build rate."""
    import io

    from tvmlab.bench import tune as bench_tune
    out = io.StringIO()
    rate = bench_tune.run_cuda(size=64, n_trial=6, seed=1, out=out)
    text = out.getvalue()
    if tvm.cuda(0).exist:
        assert rate > 0 and "trials/s" in text and "hand-written" in text
    else:
        assert rate is None and "no CUDA device here" in text
        built = int(re.search(r"(\d+) built,", text).group(1))
        assert 0 < built <= 6 and re.search(r"[\d.]+ builds/s", text) and "CPU s per build" in text
