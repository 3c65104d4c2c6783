"""Real tuning: build and measure in worker processes; crashing, hanging and failing configs give error
records and the tune goes on; a small matmul tuned end to end drives apply_history_best."""
import json
import os
import time

import numpy as np
import pytest

pytest.importorskip("xgboost")

import tvmlab as tvm  # noqa: E402
from tvmlab import autotvm, te, tir  # noqa: E402
from tvmlab.autotvm import record  # noqa: E402
from tvmlab.bench.tune import TEMPLATE, matmul_template  # noqa: E402  (TVM's tutorial template)
from tvmlab.tuning.measure import MeasureErrorNo  # noqa: E402

MODES = ["ok", "segv", "hang", "raise", "wrong", "build_segv", "build_hang", "ok2"]


@autotvm.template("test/trouble")
def trouble(n):
    import ctypes
    cfg = autotvm.get_config()
    cfg.define_knob("mode", MODES)
    mode = cfg["mode"].val
    A = te.placeholder((n,), name="A")
    if mode == "raise":
        raise ValueError("this config cannot be instantiated")
    if mode == "build_segv":
        ctypes.string_at(0)
    if mode == "build_hang":
        time.sleep(600)
    if mode == "segv":            # raise(SIGSEGV) when the code runs
        B = te.compute((n,), lambda i: A[i] + tir.call_extern("int32", "raise", 11).astype("float32") * 0.0,
                       name="B")
    elif mode == "hang":          # sleep(600) when the code runs
        B = te.compute((n,), lambda i: A[i] + tir.call_extern("uint32", "sleep", 600).astype("float32") * 0.0,
                       name="B")
    elif mode == "wrong":
        B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    else:
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    if mode == "ok2":
        s[B].vectorize(s[B].split(B.op.axis[0], factor=8)[1])
    return s, [A, B]


def test_failures_become_error_records_and_the_tune_goes_on(tmp_path):
    task = autotvm.task.create("test/trouble", args=(100,), target="llvm")
    log = tmp_path / "trouble.log"
    # the timeouts leave room for a busy machine: the hanging configs cost them once each
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=6, n_parallel=2),
                                 runner=autotvm.LocalRunner(timeout=6, number=2, repeat=1, check_correctness=True))
    tuner = autotvm.tuner.GridSearchTuner(task)
    tuner.tune(n_trial=len(MODES), measure_option=opt, callbacks=[autotvm.callback.log_to_file(str(log))])
    opt["runner"].close()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    codes = {r["config"]["entity"][0][2]: r["result"][1] for r in rows}
    assert codes == {
        "ok": MeasureErrorNo.NO_ERROR,
        "segv": MeasureErrorNo.RUNTIME_DEVICE,
        "hang": MeasureErrorNo.RUN_TIMEOUT,
        "raise": MeasureErrorNo.INSTANTIATION_ERROR,
        "wrong": MeasureErrorNo.WRONG_ANSWER,
        "build_segv": MeasureErrorNo.COMPILE_HOST,
        "build_hang": MeasureErrorNo.BUILD_TIMEOUT,
        "ok2": MeasureErrorNo.NO_ERROR,
    }
    by_mode = {r["config"]["entity"][0][2]: r for r in rows}
    assert "this config cannot be instantiated" in by_mode["raise"]["result"][0][0]
    assert all(c > 0 for c in by_mode["ok2"]["result"][0])
    assert tuner.best_config["mode"].val in ("ok", "ok2")
    # the log loads back; error records are never picked
    with autotvm.apply_history_best(str(log)):
        s, args = trouble(100)
    f = tvm.build(s, args, "llvm")
    a = np.random.default_rng(0).uniform(-1, 1, 100).astype("float32")
    b = tvm.nd.array(np.full(100, np.nan, "float32"))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 2.0, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("feature_type", ["itervar", "curve"])
def test_small_tune_end_to_end(tmp_path, feature_type):
    # 60 does not divide by most factors of the other axes: guards everywhere
    task = autotvm.task.create(TEMPLATE, args=(64, 60, 64, "float32"), target="llvm")
    assert task.flop == 2 * 64 * 60 * 64
    log = tmp_path / "mm.log"
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=20),
                                 runner=autotvm.LocalRunner(timeout=20, number=3, repeat=2, check_correctness=True))
    tuner = autotvm.tuner.XGBTuner(task, plan_size=8, feature_type=feature_type, seed=0, feature_budget=80)
    seen = []
    tuner.tune(n_trial=16, measure_option=opt,
               callbacks=[autotvm.callback.log_to_file(str(log)), lambda t, i, r: seen.extend(r)])
    opt["runner"].close()
    assert len(seen) == 16
    assert all(r.error_no == 0 for r in seen), [r for r in seen if r.error_no]
    assert tuner.train_ct >= 1 and tuner.cost_model.trained
    assert tuner.best_flops > 0
    recs = list(record.load_from_file(str(log)))
    best_inp, best_res = min(recs, key=lambda p: np.mean(p[1].costs))
    assert best_inp.config == tuner.best_config
    with autotvm.apply_history_best(str(log)):
        s, args = matmul_template(64, 60, 64, "float32")
    assert s.trace.as_python() == task.instantiate(best_inp.config)[0].trace.as_python()
    f = tvm.build(s, args, "llvm")
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (64, 60)).astype("float32")
    b = rng.uniform(-1, 1, (60, 64)).astype("float32")
    c = tvm.nd.array(np.full((64, 64), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)

    # transfer learning: a new tuner fits its model on the log before its first trial
    tuner2 = autotvm.tuner.XGBTuner(task, plan_size=8, feature_type=feature_type, seed=1, feature_budget=80)
    assert tuner2.load_history(record.load_from_file(str(log)), min_seed_records=10)
    assert tuner2.cost_model.trained and len(tuner2.trials) == 8
    assert not tuner2.load_history([], min_seed_records=1)


def test_builder_leaves_no_files_and_no_workers(tmp_path):
    task = autotvm.task.create("test/trouble", args=(16,), target="llvm")
    builder = autotvm.LocalBuilder(timeout=10, n_parallel=2)
    runner = autotvm.LocalRunner(timeout=10, number=1, repeat=1)
    tuner = autotvm.tuner.RandomTuner(task, range_idx=(0, 0))
    tuner.tune(n_trial=1, measure_option=autotvm.measure_option(builder=builder, runner=runner))
    assert os.listdir(builder.tmp_dir) == []
    runner.close()
    out = os.popen(f"ps --ppid {os.getpid()} -o pid=,stat=,args=").read().split("\n")
    assert not [line for line in out if "tvmlab.tuning.worker" in line or " Z" in line], out
