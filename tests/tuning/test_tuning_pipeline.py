"""The measurement pipeline: persistent worker pools that can be paused, forked candidates that end when
too slow, and a tune whose builds overlap its timings while keeping TVM's records and trial counts."""
import ctypes
import json
import os
import signal
import time

import pytest

from tvmlab import autotvm, te
from tvmlab.tuning.executor import ExecutorError, WorkerPool
from tvmlab.tuning.forked import call_forked
from tvmlab.tuning.measure import MeasureErrorNo

from test_tuning_executor import children


def work(x):
    if x == "segv":
        ctypes.string_at(0)
    if x == "hang":
        time.sleep(600)
    if x == "raise":
        raise ValueError("bad job")
    if isinstance(x, float):
        time.sleep(x)
        return x
    return x * 2


def _drain(pool, n, wait_s=30):
    out = {}
    t0 = time.monotonic()
    while len(out) < n and time.monotonic() - t0 < wait_s:
        out.update(pool.collect(wait_s=1.0))
    return out


def test_worker_pool_keeps_jobs_in_flight_and_survives_failures():
    pool = WorkerPool(2, method="fork")
    try:
        got = {}
        for pair in ((3, "segv"), ("raise", "hang")):
            tickets = {pool.submit(work, (x,), 3): x for x in pair}
            with pytest.raises(ExecutorError, match="busy"):
                pool.submit(work, (1,), 3)
            got.update({tickets[t]: jr for t, jr in _drain(pool, 2).items()})
        assert got[3].value == 6 and got["raise"].status == "error" and "bad job" in got["raise"].message
        assert got["segv"].status == "crash" and got["segv"].value == -signal.SIGSEGV
        assert "SIGSEGV" in got["segv"].message
        assert got["hang"].status == "timeout"
        # the crashed and timed-out workers were replaced
        assert [r.value for r in pool.run(work, [(5,), (6,), (7,)], timeout=10)] == [10, 12, 14]
    finally:
        pool.close()
    assert not [c for c in children() if "Z" in c[1]], children()


def test_paused_workers_make_no_progress_and_their_clock_stops():
    pool = WorkerPool(1, method="fork")
    try:
        pool.run(work, [(0,)], 30)                  # the worker exists before the pause
        pool.pause()
        t = pool.submit(work, (0.3,), 1.0)           # a job submitted while paused waits too
        assert pool.collect(wait_s=1.5) == []        # 1.5 s > its timeout, yet no timeout while paused
        pool.resume()
        (ticket, jr), = _drain(pool, 1).items()
        assert ticket == t and jr.ok and jr.value == 0.3
    finally:
        pool.close()


def test_call_forked_reports_each_outcome():
    assert call_forked(work, (4,), 10).value == 8
    assert call_forked(work, ("raise",), 10).status == "error"
    crash = call_forked(work, ("segv",), 10)
    assert crash.status == "crash" and crash.value == -signal.SIGSEGV
    assert call_forked(work, ("hang",), 0.5).status == "timeout"
    assert not [c for c in children() if "Z" in c[1]], children()


@autotvm.template("test/pipeline_matmul")
def matmul(N, L, M, hang_at=0):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile_x", C.op.axis[1], num_outputs=2, policy="verbose")
    if cfg["tile_x"].size[-1] == hang_at:
        time.sleep(600)                   # this config's build never ends
    xo, xi = cfg["tile_x"].apply(s, C, C.op.axis[1])
    s[C].vectorize(xi)
    return s, [A, B, C]


def test_pipelined_tune_keeps_trial_counts_records_and_callbacks(tmp_path):
    # 29 columns: most tile sizes do not divide them
    task = autotvm.task.create("test/pipeline_matmul", args=(23, 19, 29), target="llvm")
    log = tmp_path / "mm.log"
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=4, n_parallel=2),
                                 runner=autotvm.LocalRunner(timeout=10, number=2, repeat=2, check_correctness=True))
    n = min(len(task.config_space), 7)
    seen = []
    tuner = autotvm.tuner.GridSearchTuner(task)
    tuner.tune(n_trial=n, measure_option=opt, callbacks=[autotvm.callback.log_to_file(str(log)),
                                                         lambda t, i, r: seen.append(len(i))])
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    # exactly n_trial records (correct outputs), in the order proposed, one callback call per batch
    assert len(rows) == n == tuner.trials_done == sum(seen) and max(seen) <= 2
    assert [r["config"]["index"] for r in rows] == list(range(n))
    assert all(r["result"][1] == MeasureErrorNo.NO_ERROR for r in rows)
    # a build that never ends is a BUILD_TIMEOUT; the configs after it are timed meanwhile
    task = autotvm.task.create("test/pipeline_matmul", args=(23, 19, 28, 7), target="llvm")
    hang = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
                if c["tile_x"].size[-1] == 7)
    last = min(hang.index + 5, len(task.config_space) - 1)
    tuner = autotvm.tuner.GridSearchTuner(task, range_idx=(hang.index, last))
    log2 = tmp_path / "hang.log"
    tuner.tune(n_trial=last - hang.index + 1, measure_option=opt,
               callbacks=[autotvm.callback.log_to_file(str(log2))])
    rows = [json.loads(line) for line in log2.read_text().splitlines()]
    assert len(rows) == last - hang.index + 1 >= 3
    assert rows[0]["config"]["index"] == hang.index and rows[0]["result"][1] == MeasureErrorNo.BUILD_TIMEOUT
    assert all(r["result"][1] == MeasureErrorNo.NO_ERROR for r in rows[1:])
    assert all(r["result"][3] < rows[0]["result"][3] for r in rows[1:])
    opt["runner"].close()
    assert not os.listdir(opt["builder"].tmp_dir)          # every library was removed
    assert not [c for c in children() if "Z" in c[1]], children()


def test_stop_and_early_stopping_drop_batches_in_flight(tmp_path):
    task = autotvm.task.create("test/pipeline_matmul", args=(16, 8, 16), target="llvm")
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=10, n_parallel=2),
                                 runner=autotvm.LocalRunner(timeout=10, number=1, repeat=1))
    tuner = autotvm.tuner.RandomTuner(task, seed=1)
    calls = []

    def stop_after_two(t, inputs, results):
        calls.append(len(inputs))
        if len(calls) == 2:
            t.stop()

    log = tmp_path / "stop.log"
    tuner.tune(n_trial=20, measure_option=opt,
               callbacks=[stop_after_two, autotvm.callback.log_to_file(str(log))])
    assert len(calls) == 2 and tuner.trials_done == sum(calls) == len(log.read_text().splitlines())
    tuner = autotvm.tuner.GridSearchTuner(task)
    tuner.tune(n_trial=20, measure_option=opt, early_stopping=1)
    assert tuner.trials_done <= tuner.best_iter + 1 + 2      # stops at the first batch without a new best
    opt["runner"].close()
    assert not os.listdir(opt["builder"].tmp_dir)
    assert not [c for c in children() if "tvmlab.tuning.worker" in c[2] or "Z" in c[1]], children()
