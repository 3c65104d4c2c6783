"""Measurement on a Dask cluster: DaskExecutor and autotvm.DaskRunner on a LocalCluster."""
import json

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from tvmlab import autotvm, te  # noqa: E402
from tvmlab.tuning.executor import DaskExecutor, ExecutorError  # noqa: E402
from tvmlab.tuning.measure import MeasureErrorNo  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _job(x):
    if x == "raise":
        raise KeyError("nope")
    return x + 1


def test_dask_executor_keeps_order_and_reports_errors(client):
    ex = DaskExecutor(client)
    base = 10
    res = ex.run(lambda x: x * base, [(1,), (2,), (3,)], timeout=60)      # a closure travels too
    assert [r.value for r in res] == [10, 20, 30] and all(r.ok for r in res)
    res = ex.run(_job, [(1,), ("raise",), (5,)], timeout=60)
    assert [r.status for r in res] == ["ok", "error", "ok"]
    assert "KeyError" in res[1].message and res[2].value == 6
    with pytest.raises(ExecutorError, match="Client or a scheduler address"):
        DaskExecutor(42)
    # by address, as for a real cluster: the executor owns (and closes) its client
    with DaskExecutor(client.scheduler.address) as by_address:
        assert [r.value for r in by_address.run(_job, [(7,)], timeout=60)] == [8]
    assert by_address.client.status in ("closed", "closing")


@autotvm.template("test/dask_add")
def dask_add(n):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i] * 3.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", C.op.axis[0], num_outputs=2, policy="power2", max_factor=16)
    cfg.define_knob("wrong", [0, 1])
    xo, xi = cfg["tile"].apply(s, C, C.op.axis[0])
    cfg.define_annotate("ann", [xi], policy="try_vec")
    cfg["ann"].apply(s, C, [xi])
    if cfg["wrong"].val:                 # a schedule bug stand-in: changes the result
        C2 = te.compute((n,), lambda i: A[i] + B[i] * 3.0 + 1.0, name="C")
        return te.create_schedule(C2.op), [A, B, C2]
    return s, [A, B, C]


def test_dask_runner_tunes_with_correctness_checks(client, tmp_path):
    task = autotvm.task.create("test/dask_add", args=(1000,), target="llvm")
    log = tmp_path / "dask.log"
    runner = autotvm.DaskRunner(client, timeout=60, number=2, repeat=2, check_correctness=True)
    assert runner.n_parallel == 1
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=30, n_parallel=2), runner=runner)
    tuner = autotvm.tuner.GridSearchTuner(task)
    tuner.tune(n_trial=len(task.config_space), measure_option=opt,
               callbacks=[autotvm.callback.log_to_file(str(log))])
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == len(task.config_space) == 5 * 2 * 2
    for r in rows:
        wrong = dict((e[0], e[2]) for e in r["config"]["entity"])["wrong"]
        assert r["result"][1] == (MeasureErrorNo.WRONG_ANSWER if wrong else MeasureErrorNo.NO_ERROR), r
        if not wrong:
            assert all(c > 0 for c in r["result"][0])
    assert tuner.best_config["wrong"].val == 0
    with autotvm.apply_history_best(str(log)):
        s, args = dask_add(1000)
    import tvmlab as tvm
    f = tvm.build(s, args, "llvm")
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, 1000).astype("float32") for _ in range(2))
    c = tvm.nd.array(np.full(1000, np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a + b * 3.0, rtol=1e-5, atol=1e-6)    # FMA rounding
