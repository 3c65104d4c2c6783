"""The auto-scheduler for target cuda: GPU sketches, random states checked thread by thread against numpy
(on a GPU where there is one), states over the GPU's limits refused, a search measured through AutoTVM's
CUDA path, records and ApplyHistoryBest."""
import json
import math
import random
import time
import warnings

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import auto_scheduler, te
from tvmlab.auto_scheduler.sketch import SketchError
from tvmlab.auto_scheduler.sketch_gpu import MAX_VTHREAD, random_state
from tvmlab.tuning.measure import MeasureErrorNo


@auto_scheduler.register_workload
def gpu_matmul(N, L, M):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    return [A, B, te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")]


@auto_scheduler.register_workload
def gpu_matmul_relu(N, L, M):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    bias = te.placeholder((M,), name="bias")
    k = te.reduce_axis((0, L), name="k")
    mm = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="mm")
    add = te.compute((N, M), lambda i, j: mm[i, j] + bias[j], name="add")
    return [A, B, bias, te.compute((N, M), lambda i, j: te.max(add[i, j], te.const(0.0)), name="relu")]


@auto_scheduler.register_workload
def gpu_conv2d(N, C, H, W, F, K):
    """A direct convolution, padding 1: the padding stage is inlined into the input's shared copy."""
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((F, C, K, K), name="kernel")
    pad = te.compute((N, C, H + 2, W + 2), lambda n, c, y, x: te.if_then_else(
        te.all(y >= 1, y < H + 1, x >= 1, x < W + 1), data[n, c, y - 1, x - 1], 0.0), name="pad")
    rc, ry, rx = (te.reduce_axis((0, e), name=nm) for e, nm in ((C, "rc"), (K, "ry"), (K, "rx")))
    out = te.compute((N, F, H - K + 3, W - K + 3), lambda n, f, y, x: te.sum(
        pad[n, rc, y + ry, x + rx] * kernel[f, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    return [data, kernel, out]


@auto_scheduler.register_workload
def gpu_rowsum(N, K):
    A = te.placeholder((N, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    return [A, te.compute((N,), lambda i: te.sum(A[i, k], axis=k), name="R")]


@auto_scheduler.register_workload
def gpu_add_relu(N, M):
    A = te.placeholder((N, M), name="A")
    B = te.placeholder((N, M), name="B")
    s = te.compute((N, M), lambda i, j: A[i, j] + B[i, j], name="sum")
    return [A, B, te.compute((N, M), lambda i, j: te.max(s[i, j], te.const(0.0)), name="out")]


def _conv_ref(d, w):
    n, c, h, wd = d.shape
    f, _, k, _ = w.shape
    p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = h - k + 3, wd - k + 3
    out = np.zeros((n, f, oh, ow), "float32")
    for y in range(k):
        for x in range(k):
            out += np.einsum("nchw,fc->nfhw", p[:, :, y:y + oh, x:x + ow], w[:, :, y, x])
    return out


REFS = {"gpu_matmul": lambda a, b: a @ b, "gpu_matmul_relu": lambda a, b, c: np.maximum(a @ b + c, 0),
        "gpu_conv2d": _conv_ref, "gpu_rowsum": lambda a: a.sum(1), "gpu_add_relu": lambda a, b: np.maximum(a + b, 0)}

# small shapes, mostly primes: the tiles do not divide them
CASES = {"matmul": (gpu_matmul, (13, 37, 21)), "matmul_relu": (gpu_matmul_relu, (9, 20, 14)),
         "conv2d": (gpu_conv2d, (1, 3, 7, 6, 5, 3)), "reduction": (gpu_rowsum, (5, 300)),
         "elementwise": (gpu_add_relu, (7, 45))}


def _task(name, target="cuda"):
    func, args = CASES[name]
    return auto_scheduler.SearchTask(func=func, args=args, target=target)


def _inputs(args, rng):
    return [rng.uniform(-1, 1, [int(d) for d in a.shape]).astype("float32") for a in args if not a.op.input_tensors]


def _check(run, task, s, args, rng):
    """Build ``s`` for CUDA (NVRTC), run it on NaN-poisoned outputs, compare with numpy; returns the source."""
    f = tvm.build(s, args, "cuda")
    ins = _inputs(args, rng)
    want = REFS[json.loads(task.workload_key)[0]](*ins)
    *_, got = run(f, *ins, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return f.imported_modules[0].get_source()


def _simulate(f, *arrays):
    tvm.testing.simulate(f, *arrays)
    return arrays


def test_sketches_follow_the_gpu_rules():
    mm = _task("matmul")
    assert mm.dag.sketches() == [{"C": "cache_write"}] and mm.dag.inlined == []
    fused = _task("matmul_relu")
    assert fused.dag.sketches() == [{"mm": "cache_write"}, {"mm": "fuse"}] and fused.dag.inlined == ["add"]
    conv = _task("conv2d")
    assert conv.dag.sketches() == [{"conv": "cache_write"}] and conv.dag.inlined == ["pad"]
    red = _task("reduction")          # no reuse: bound as it is, or reduced across threads
    assert red.dag.sketches() == [{"R": "simple"}, {"R": "cross_thread"}]
    ew = _task("elementwise")
    assert ew.dag.sketches() == [{}] and ew.dag.plain_outputs({}) == ["out"] and ew.dag.inlined == ["sum"]
    # a product with few outputs and a long reduction may also reduce across threads
    thin = auto_scheduler.SearchTask(func=gpu_matmul, args=(4, 512, 4), target="cuda")
    assert thin.dag.sketches() == [{"C": "cache_write"}, {"C": "cross_thread"}]
    rng = random.Random(0)
    for _ in range(50):
        st = random_state(mm.dag, {"C": "cache_write"}, rng)
        S = st["tiles"]["C"]["S"]
        assert math.prod(f[1] for f in S) <= 1024 and math.prod(f[0] for f in S) <= MAX_VTHREAD
        assert st["ann"]["C"]["unroll"] in (0, 16, 64, 512, 1024) and st["ann"]["C"]["vector"] in (1, 2, 4)


@pytest.mark.parametrize("name,n", [("matmul", 2), ("matmul_relu", 1), ("conv2d", 2), ("reduction", 1),
                                    ("elementwise", 1)])
def test_random_states_build_and_compute(cuda_run, name, n):
    task = _task(name)
    rng, nrng = random.Random(11), np.random.default_rng(0)
    undivided = 0
    for sk in task.dag.sketches():
        done = 0
        while done < n:
            state = random_state(task.dag, sk, rng)
            try:
                task.check_state(state)
            except SketchError:
                continue
            s, args = task.instantiate(state)
            src = _check(cuda_run, task, s, args, nrng)
            done += 1
            tiled = [m for m in sk.values() if m in ("cache_write", "fuse")]
            if tiled:
                # operands in shared memory, fetched by the block's threads between barriers
                assert "__shared__" in src and "__syncthreads()" in src
                t = next(iter(state["tiles"].values()))
                exts = [e for e in task.dag.spatial(next(iter(state["tiles"])))]
                undivided += any(e % math.prod(f) for e, f in zip(exts, t["S"]))
                threads = math.prod(f[1] for f in t["S"])
                assert f"__launch_bounds__({threads})" in src
            if "cross_thread" in sk.values():
                assert "__shfl" in src or "__shared__" in src
    if name == "matmul":
        assert undivided


def _state(S, R, unroll=0, vector=1):
    return {"sketch": {"C": "cache_write"}, "tiles": {"C": {"S": S, "R": R}},
            "ann": {"C": {"unroll": unroll, "vector": vector}}}


def test_invalid_states_are_refused_before_measurement():
    task = auto_scheduler.SearchTask(func=gpu_matmul, args=(512, 512, 512), target="cuda")
    with pytest.raises(SketchError, match=r"2048 threads per block .* more than the target's 1024"):
        task.check_state(_state([[1, 32, 1, 1], [1, 64, 1, 1]], [[1, 8]]))
    with pytest.raises(SketchError, match="16 virtual threads is more than 8"):
        task.check_state(_state([[4, 8, 1, 1], [4, 8, 1, 1]], [[1, 8]]))
    big = _state([[2, 16, 4, 1], [2, 16, 4, 1]], [[8, 8]])      # 2 x 128 x 64 floats: 64 KiB
    with pytest.raises(SketchError, match="shared-memory copies take 65536 bytes per block, more than the "
                                          "target's 49152"):
        task.check_state(big)
    # the estimate agrees with the verify-GPU pass the build runs
    s, args = task.instantiate(big)
    with pytest.raises(tvm.TVMLabError, match="65536 bytes of shared memory"):
        tvm.lower(s, args, target="cuda")
    good = _state([[2, 16, 2, 1], [2, 16, 2, 1]], [[4, 4]])
    task.check_state(good)
    with pytest.raises(SketchError, match=r"tile sizes \[64, 64\] do not fit extent 512"):
        task.check_state(_state([[2, 16, 2, 1], [2, 16, 2, 1]], [[64, 64]]))
    with pytest.raises(SketchError, match="not one of its GPU sketches"):
        task.check_state({"sketch": {"C": "tile"}, "tiles": {}, "ann": {}})
    # the search refuses states over the limits without measuring them
    policy = auto_scheduler.SketchPolicy(task, seed=0, verbose=0)
    assert policy.valid([big, good], 1) == [good] and policy.rejected == 1
    # a smaller GPU's limits from the target
    small = auto_scheduler.SearchTask(func=gpu_matmul, args=(512, 512, 512), target="cuda -max_threads_per_block=128")
    with pytest.raises(SketchError, match="256 threads per block"):
        small.check_state(good)
    rng = random.Random(1)
    for _ in range(30):
        st = random_state(small.dag, {"C": "cache_write"}, rng)
        assert math.prod(f[1] for f in st["tiles"]["C"]["S"]) <= 128


def test_a_search_records_and_apply_history_best_uses_the_record(tmp_path):
    log = str(tmp_path / "mm.json")
    task = _task("matmul")
    runner = auto_scheduler.LocalRunner(number=1, repeat=1, min_repeat_ms=0, timeout=30)
    opts = auto_scheduler.TuningOptions(num_measure_trials=3, num_measures_per_round=3, verbose=0,
                                        builder=auto_scheduler.LocalBuilder(n_parallel=2, timeout=60),
                                        runner=runner, measure_callbacks=[auto_scheduler.RecordToFile(log)])
    policy = auto_scheduler.SketchPolicy(task, program_cost_model=auto_scheduler.RandomModel(0), seed=0, verbose=0)
    task.tune(opts, search_policy=policy)
    recs = auto_scheduler.load_records(log)
    assert len(recs) == 3 and all(inp.task.target.kind.name == "cuda" for inp, _ in recs)
    assert json.loads(open(log).readline())["i"][0] == [task.workload_key, "cuda"]
    if tvm.cuda(0).exist:
        assert all(r.error_no == 0 and r.costs[0] > 0 for _, r in recs)
    else:
        for _, r in recs:      # built by NVRTC, then refused by the runner
            assert r.error_no == MeasureErrorNo.RUNTIME_DEVICE and "no CUDA device" in str(r.costs[0])
    # a hand-made record: 4 x 8 threads, 2 x 2 virtual threads
    state = _state([[2, 4, 1, 2], [2, 8, 1, 1]], [[4, 2]], unroll=64, vector=2)
    inp = auto_scheduler.MeasureInput(task, state)
    auto_scheduler.save_records(log, [inp], [auto_scheduler.MeasureResult((1e-6,), 0, 0.1, time.time())])
    rng = np.random.default_rng(2)
    with auto_scheduler.ApplyHistoryBest(log) as ctx:
        assert ctx.query(task.workload_key, "cuda") == state
        assert ctx.query(task.workload_key, "llvm") is None
        s, args = ctx.apply(task)
    src = _check(_simulate, task, s, args, rng)
    assert "__launch_bounds__(32)" in src and "__shared__" in src
    code = s.trace.as_python()
    assert "'auto_unroll_max_step', 64)" in code and "te.thread_axis('vthread')" in code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert task.print_best(log, print_mode="cuda") == src
    # no record of a task: the default schedule (bound to blocks and threads), with a warning
    other = _task("conv2d")
    with auto_scheduler.ApplyHistoryBest(log) as ctx:
        with pytest.warns(UserWarning, match="no record of .*gpu_conv2d.* for cuda; using the default schedule"):
            s, args = ctx.apply(other)
    src = _check(_simulate, other, s, args, rng)
    assert "__launch_bounds__(64)" in src
    with pytest.raises(tvm.TVMLabError, match="CPU .llvm. and CUDA"):
        auto_scheduler.SearchTask(func=gpu_matmul, args=(4, 4, 4), target="opengl")


@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA device on this machine: the search above measures "
                                                    "nothing, this one times 64 states on the GPU")
def test_tune_a_512_matmul_on_the_gpu(tmp_path):
    log = str(tmp_path / "mm512.json")
    task = auto_scheduler.SearchTask(func=gpu_matmul, args=(512, 512, 512), target="cuda")
    runner = auto_scheduler.LocalRunner(number=5, repeat=3, min_repeat_ms=10, timeout=30)
    opts = auto_scheduler.TuningOptions(num_measure_trials=64, num_measures_per_round=16, verbose=0,
                                        runner=runner, measure_callbacks=[auto_scheduler.RecordToFile(log)])
    task.tune(opts)
    state, res = task.best_record(log)
    secs = sum(res.costs) / len(res.costs)
    print(f"\nauto_scheduler cuda 512^3 matmul, 64 trials: {task.flop / secs / 1e9:.1f} GFLOP/s  state {state}")
    s, args = task.apply_best(log)
    f = tvm.build(s, args, "cuda")
    dev = tvm.cuda(0)
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (512, 512)).astype("float32") for _ in range(2))
    c = tvm.nd.array(np.full((512, 512), np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-3, atol=1e-3)
