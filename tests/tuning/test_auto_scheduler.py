"""The template-free auto-scheduler: sketches, search, records, apply_best / print_best, Dask."""
import json
import random
import time
import warnings

import numpy as np
import pytest

import tvmlab
from tvmlab import auto_scheduler, te, topi
from tvmlab.autotvm.measure import Builder, BuildResult, MeasureResult, Runner
from tvmlab.auto_scheduler.sketch import SketchError, random_state
from tvmlab.errors import TVMLabError


@auto_scheduler.register_workload
def as_matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]


@auto_scheduler.register_workload
def as_matmul_bias_relu(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    bias = te.placeholder((M,), name="bias", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    mm = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")
    add = te.compute((N, M), lambda i, j: mm[i, j] + bias[j], name="add")
    out = te.compute((N, M), lambda i, j: te.max(add[i, j], te.const(0.0, dtype)), name="relu")
    return [A, B, bias, out]


@auto_scheduler.register_workload
def as_conv2d(N, C, H, W, F, K):
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((F, C, K, K), name="kernel")
    out = topi.nn.conv2d_nchw(data, kernel, 1, 1, 1)
    return [data, kernel, out]


def _reference(name, arrays):
    if name == "as_matmul":
        return arrays[0] @ arrays[1]
    if name == "as_matmul_bias_relu":
        return np.maximum(arrays[0] @ arrays[1] + arrays[2], 0)
    d, w = arrays
    n, c, h, wd = d.shape
    f, _, k, _ = w.shape
    pad = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, f, h, wd), "float32")
    for y in range(k):
        for x in range(k):
            out += np.einsum("nchw,fc->nfhw", pad[:, :, y:y + h, x:x + wd], w[:, :, y, x])
    return out


def _run(s, args, rng):
    f = tvmlab.build(s, args, "llvm")
    ins = [rng.uniform(-1, 1, [int(d) for d in a.shape]).astype("float32") for a in args[:-1]]
    out = tvmlab.nd.array(np.full([int(d) for d in args[-1].shape], np.nan, "float32"))
    f(*[tvmlab.nd.array(x) for x in ins], out)
    return ins, out.numpy()


CASES = [(as_matmul, (12, 18, 20, "float32")), (as_matmul_bias_relu, (14, 9, 24, "float32")),
         (as_conv2d, (1, 4, 6, 5, 6, 3))]


@pytest.mark.parametrize("func,args", CASES, ids=["matmul", "matmul_bias_relu", "conv2d"])
def test_every_sketch_with_random_annotations_is_correct(func, args):
    task = auto_scheduler.SearchTask(func=func, args=args, target="llvm")
    sketches = task.dag.sketches()
    modes = {m for sk in sketches for m in sk.values()}
    assert modes == ({"tile", "cache_write", "fuse"} if func is as_matmul_bias_relu else {"tile", "cache_write"})
    rng, nrng = random.Random(1), np.random.default_rng(0)
    for sk in sketches:
        for _ in range(2):
            state = random_state(task.dag, sk, rng)
            s, targs = task.instantiate(state)
            ins, got = _run(s, targs, nrng)
            np.testing.assert_allclose(got, _reference(func.__name__, ins), rtol=1e-4, atol=1e-4)
            # the schedule is an ordinary trace: it replays on fresh tensors
            assert any(st.primitive == "split" for st in s.trace)
    if func is as_matmul_bias_relu:
        assert task.dag.inlined == ["add"] and task.dag.fusable == {"mm": "relu"}


def test_workload_keys_and_errors():
    key = auto_scheduler.make_workload_key(as_matmul, (8, 8, 8, "float32"))
    assert json.loads(key) == ["as_matmul", 8, 8, 8, "float32"]
    task = auto_scheduler.SearchTask(workload_key=key, target="llvm")
    assert task.flop == 2 * 8 * 8 * 8
    with pytest.raises(TVMLabError, match="not registered"):
        auto_scheduler.SearchTask(workload_key=json.dumps(["nope", 1]), target="llvm")
    with pytest.raises(TVMLabError, match="JSON list"):
        auto_scheduler.SearchTask(workload_key="{", target="llvm")
    with pytest.raises(TVMLabError, match="num_measure_trials"):
        auto_scheduler.TuningOptions(num_measure_trials=-1)
    with pytest.raises(TVMLabError, match="unknown SketchPolicy params"):
        auto_scheduler.SketchPolicy(task, params={"population": 3})
    state = random_state(task.dag, task.dag.sketches()[0], random.Random(0))
    state["tiles"]["C"]["S"][0] = [3, 1, 1]         # 3 does not divide 8
    with pytest.raises(SketchError, match="do not divide"):
        task.instantiate(state)
    with pytest.raises(SketchError, match="not an auto-scheduler state"):
        task.instantiate({"sketch": {"C": "tile"}})
    # tensors given directly: keyed by a hash of the computation; symbolic shapes are refused
    A = te.placeholder((6, 4), name="A")
    B = te.compute((6, 4), lambda i, j: A[i, j] * 2.0, name="B")
    dag = auto_scheduler.ComputeDAG([A, B])
    assert json.loads(dag.workload_key)[1:] == [[6, 4], [6, 4]]
    assert auto_scheduler.ComputeDAG([A, B]).workload_key == dag.workload_key
    plain = auto_scheduler.SearchTask(compute_dag=dag, target="llvm")
    assert plain.dag.tiled == [] and plain.dag.sketches() == [{}]
    s, args = plain.instantiate(random_state(plain.dag, {}, random.Random(0)))
    f = tvmlab.build(s, args, "llvm")
    a = np.random.default_rng(0).uniform(-1, 1, (6, 4)).astype("float32")
    out = tvmlab.nd.array(np.full((6, 4), np.nan, "float32"))
    f(tvmlab.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a * 2)
    n = te.var("n")
    X = te.placeholder((n, 4), name="X")
    k = te.reduce_axis((0, 4), name="k")
    Y = te.compute((n,), lambda i: te.sum(X[i, k], axis=k), name="Y")
    with pytest.raises(TVMLabError, match="constant shapes; X has shape"):
        auto_scheduler.ComputeDAG([X, Y])
    with pytest.raises(TVMLabError, match="CPU .llvm. and CUDA"):
        auto_scheduler.SearchTask(compute_dag=dag, target="opengl")


# ---------------------------------------------------------------- search against a fake runner
def _fake_cost(state):
    """A cost with a known best: register tile 4 x 16, inner k 8, 2 parallel loops, vectorized, unrolled."""
    t, a = state["tiles"]["C"], state["ann"]["C"]
    (i1, i2, i3), (j1, j2, j3) = t["S"]
    (k1,) = t["R"][0]
    c = abs(np.log2(i3) - 2) + abs(np.log2(j3) - 4) + abs(np.log2(k1) - 3) + abs(np.log2(j2 * i2) - 2)
    c += 0.5 * (a["parallel"] != 2) + 0.5 * (not a["vectorize"]) + 0.25 * (a["unroll"] != 64)
    c += 0.5 * (state["sketch"]["C"] != "cache_write")
    return 1e-3 * (1 + c)


class FakeBuilder(Builder):
    def build(self, inputs):
        return [BuildResult("", [], None, 0.0) for _ in inputs]


class FakeRunner(Runner):
    def run(self, inputs, build_results):
        return [MeasureResult((_fake_cost(i.state),), 0, 0.0, time.time()) for i in inputs]


def _search(model, seed, trials=96):
    task = auto_scheduler.SearchTask(func=as_matmul, args=(64, 64, 64, "float32"), target="llvm")
    policy = auto_scheduler.SketchPolicy(task, model, params={"population_size": 96, "num_generations": 3},
                                         seed=seed, verbose=0)
    opts = auto_scheduler.TuningOptions(num_measure_trials=trials, num_measures_per_round=16,
                                        builder=FakeBuilder(), runner=FakeRunner())
    task.tune(opts, search_policy=policy)
    assert len(policy.history) == trials
    return policy.best_cost


def test_search_guided_by_the_cost_model_beats_random():
    guided = [_search(auto_scheduler.XGBModel(num_warmup_sample=16, seed=s), s) for s in range(2)]
    rand = [_search(auto_scheduler.RandomModel(seed=s), s) for s in range(2)]
    assert np.mean(guided) < np.mean(rand), (guided, rand)


def test_early_stopping_stops_a_search():
    task = auto_scheduler.SearchTask(func=as_matmul, args=(16, 16, 16, "float32"), target="llvm")
    policy = auto_scheduler.SketchPolicy(task, auto_scheduler.RandomModel(seed=0), seed=0, verbose=0,
                                         params={"population_size": 32, "num_generations": 1})

    class Flat(Runner):
        def run(self, inputs, build_results):
            return [MeasureResult((1e-3,), 0, 0.0, time.time()) for _ in inputs]
    opts = auto_scheduler.TuningOptions(num_measure_trials=200, num_measures_per_round=8, early_stopping=10,
                                        builder=FakeBuilder(), runner=Flat())
    task.tune(opts, search_policy=policy)
    assert len(policy.history) < 200


def test_search_progress_is_a_tqdm_bar(capsys):
    pytest.importorskip("tqdm")
    task = auto_scheduler.SearchTask(func=as_matmul, args=(16, 16, 16, "float32"), target="llvm")
    policy = auto_scheduler.SketchPolicy(task, auto_scheduler.RandomModel(seed=0), seed=0, verbose=1,
                                         params={"population_size": 16, "num_generations": 1})
    opts = auto_scheduler.TuningOptions(num_measure_trials=12, num_measures_per_round=4,
                                        builder=FakeBuilder(), runner=FakeRunner())
    task.tune(opts, search_policy=policy)
    out = capsys.readouterr()
    assert "auto_scheduler: 100%" in out.err and "12/12" in out.err and "GFLOP/s" in out.err
    assert "[auto_scheduler]" not in out.out          # no printed line per round beside the bar


# ---------------------------------------------------------------- real measurement and records
@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    log = str(tmp_path_factory.mktemp("as") / "mm.json")
    task = auto_scheduler.SearchTask(func=as_matmul_bias_relu, args=(16, 12, 24, "float32"), target="llvm")
    runner = auto_scheduler.LocalRunner(number=1, repeat=1, min_repeat_ms=0)
    opts = auto_scheduler.TuningOptions(num_measure_trials=8, num_measures_per_round=4, verbose=0,
                                        builder=auto_scheduler.LocalBuilder(n_parallel=2), runner=runner,
                                        measure_callbacks=[auto_scheduler.RecordToFile(log)])
    try:
        task.tune(opts)
    finally:
        runner.close()
    return task, log


def test_records_round_trip_and_bad_lines_are_skipped(tuned):
    task, log = tuned
    lines = open(log).read().splitlines()
    assert len(lines) == 8
    row = json.loads(lines[0])
    assert row["v"] == "v0.6" and row["i"][0] == [task.workload_key, "llvm"] and len(row["r"]) == 4
    recs = auto_scheduler.load_records(log)
    assert len(recs) == 8 and all(r.error_no == 0 and r.costs[0] > 0 for _, r in recs)
    inp, _ = recs[0]
    assert inp.state == row["i"][1] and inp.task.workload_key == task.workload_key
    with open(log, "a") as f:
        f.write("not json\n")
        f.write('{"i": [["[\\"x\\"]", "llvm -keys=cpu", [], 0], [[], []]], "r": [[0.1], 0, 0.2, 1], "v": "v0.6"}\n')
        f.write("__import__('os').system('false')\n")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert len(auto_scheduler.load_records(log)) == 8
    assert sum("skipped" in str(x.message) for x in w) == 3
    assert any(":9:" in str(x.message) for x in w)


def test_apply_best_is_correct_and_print_best_rebuilds_it(tuned, capsys):
    task, log = tuned
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, args = task.apply_best(log)
        code = task.print_best(log)
    assert "s = te.create_schedule" in capsys.readouterr().out
    rng = np.random.default_rng(3)
    ins, got = _run(s, args, rng)
    np.testing.assert_allclose(got, _reference("as_matmul_bias_relu", ins), rtol=1e-4, atol=1e-4)
    # the printed Python rebuilds the schedule from fresh tensors named as the stages
    fresh = as_matmul_bias_relu(16, 12, 24, "float32")
    names = {}
    stack = list(fresh)
    while stack:
        t = stack.pop()
        names[t.op.name] = t
        stack += list(t.op.input_tensors)
    ns = dict(names, te=te)
    exec(code, ns)
    assert [st for st in ns["s"].trace] == [st for st in s.trace]
    ins, got = _run(ns["s"], fresh, rng)
    np.testing.assert_allclose(got, _reference("as_matmul_bias_relu", ins), rtol=1e-4, atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with auto_scheduler.ApplyHistoryBest(log) as ctx:
            assert auto_scheduler.ApplyHistoryBest.current is ctx
            assert ctx.query(task.workload_key, "llvm") == task.best_record(log)[0]
        assert auto_scheduler.ApplyHistoryBest.current is None
    other = auto_scheduler.SearchTask(func=as_matmul, args=(8, 8, 8, "float32"), target="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TVMLabError, match="no successful record"):
            other.apply_best(log)
    with pytest.raises(TVMLabError, match="print_mode"):
        task.print_best(log, print_mode="cuda")


def test_dask_runner_on_a_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    try:
        log = str(tmp_path / "dask.json")
        task = auto_scheduler.SearchTask(func=as_matmul, args=(8, 16, 8, "float32"), target="llvm")
        runner = auto_scheduler.DaskRunner(client, number=1, repeat=1, min_repeat_ms=0, timeout=60)
        opts = auto_scheduler.TuningOptions(num_measure_trials=3, num_measures_per_round=3, verbose=0,
                                            builder=auto_scheduler.LocalBuilder(n_parallel=1), runner=runner,
                                            measure_callbacks=[auto_scheduler.RecordToFile(log)])
        task.tune(opts)
        recs = auto_scheduler.load_records(log)
        assert len(recs) == 3 and all(r.error_no == 0 for _, r in recs)
        s, args = task.apply_best(log)
        ins, got = _run(s, args, np.random.default_rng(0))
        np.testing.assert_allclose(got, ins[0] @ ins[1], rtol=1e-4, atol=1e-4)
    finally:
        client.close()
        cluster.close()
