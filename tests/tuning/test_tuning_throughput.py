"""Tuning throughput: export-only builds compile once and still give correct libraries; the runner costs a
candidate far slower than the task's best by its first call."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import autotvm, te
from tvmlab.autotvm.measure import BuildResult, MeasureInput
from tvmlab.errors import TVMLabError
from tvmlab.tuning.measure import MeasureErrorNo, build_candidate, run_candidate


def _matmul(n, m, l, factor):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[1], factor=factor)     # factor does not divide m
    s[C].vectorize(xi)
    return s, [A, B, C]


def test_export_only_build_cannot_be_called_but_exports_correct_code(tmp_path):
    s, args = _matmul(37, 45, 29, 8)
    with tvm.transform.PassContext(opt_level=3, config={"codegen.llvm.export_only": True}):
        mod = tvm.build(s, args, "llvm")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (37, 29)).astype("float32")
    b = rng.uniform(-1, 1, (29, 45)).astype("float32")
    arrs = [tvm.nd.array(a), tvm.nd.array(b), tvm.nd.array(np.full((37, 45), np.nan, "float32"))]
    with pytest.raises(TVMLabError, match="export only"):
        mod(*arrs)
    assert np.isnan(arrs[2].numpy()).all()           # nothing ran
    path = str(tmp_path / "mm.so")
    mod.export_library(path)
    tvm.runtime.load_module(path)(*arrs)
    np.testing.assert_allclose(arrs[2].numpy(), a @ b, rtol=1e-5, atol=1e-5)
    # the default context still builds callable code
    tvm.build(s, args, "llvm")(*arrs)


def test_build_candidate_library_runs_against_a_reference(tmp_path):
    cand = build_candidate(lambda: _matmul(33, 50, 21, 16), "llvm", str(tmp_path))
    ref = build_candidate(lambda: _matmul(33, 50, 21, 1), "llvm", str(tmp_path))
    costs = run_candidate(cand["path"], cand["args"], number=2, repeat=2, ref=ref["path"])
    assert len(costs) == 2 and all(c > 0 for c in costs)


@autotvm.template("test/throughput")
def slow_or_fast(n):
    cfg = autotvm.get_config()
    cfg.define_knob("extra", [0, 400, 30000])
    A = te.placeholder((n,), name="A")
    r = te.reduce_axis((0, max(1, cfg["extra"].val)), name="r")
    B = te.compute((n,), lambda i: te.sum(A[i] * 0.5 + r.astype("float32") * 0.0, axis=r), name="B")
    return te.create_schedule(B.op), [A, B]


def _fast_then_slow(runner, slow_index):
    """Time config 0 (one pass) then ``slow_index`` (400 or 30000 passes): (fast, slow, kill limit)."""
    task = autotvm.task.create("test/throughput", args=(20000,), target="llvm")
    builder = autotvm.LocalBuilder(timeout=30, n_parallel=1)
    builder.set_task(task)
    runner.set_task(task, builder)
    inps = [MeasureInput(task.target, task, task.config_space.get(i)) for i in (0, slow_index)]
    fast = runner.run(inps[:1], builder.build(inps[:1]))[0]
    assert fast.error_no == MeasureErrorNo.NO_ERROR
    assert runner.best_cost == pytest.approx(np.mean(fast.costs))
    limit = runner._kill_after()
    slow = runner.run(inps[1:], builder.build(inps[1:]))[0]
    assert slow.error_no == MeasureErrorNo.NO_ERROR and len(slow.costs) == 3
    assert runner.best_cost == pytest.approx(np.mean(fast.costs))
    runner.set_task(task, builder)
    assert runner.best_cost is None
    return fast, slow, limit


@pytest.mark.parametrize("slow_factor", [10.0, None])
def test_runner_costs_far_slower_candidates_by_their_first_call(slow_factor):
    runner = autotvm.LocalRunner(timeout=30, number=3, repeat=3)
    runner.slow_factor = slow_factor
    try:
        fast, slow, _ = _fast_then_slow(runner, 1)
        # 400 times the work: far over 10x the best, so one call is its cost (three equal costs)
        assert (len(set(slow.costs)) == 1) == (slow_factor is not None)
        assert min(slow.costs) > max(fast.costs)
    finally:
        runner.close()


def test_a_far_slower_candidate_is_ended_with_its_lower_bound_cost():
    runner = autotvm.LocalRunner(timeout=30, number=3, repeat=3)
    try:
        fast, slow, limit = _fast_then_slow(runner, 2)
        assert limit == pytest.approx(max(10 * np.mean(fast.costs), 0.01))
        # 30000 times the work: ended after `limit` seconds, recorded (no error) with that lower bound
        assert slow.costs == (limit,) * 3
    finally:
        runner.close()


def test_failed_builds_do_not_move_the_best_cost():
    task = autotvm.task.create("test/throughput", args=(64,), target="llvm")
    runner = autotvm.LocalRunner(timeout=5)
    runner.set_task(task)
    err = BuildResult(None, None, TVMLabError("no"), 0.1)
    res = runner.run([MeasureInput(task.target, task, task.config_space.get(0))], [err])
    assert res[0].error_no == MeasureErrorNo.UNKNOWN_ERROR and runner.best_cost is None
    runner.close()
