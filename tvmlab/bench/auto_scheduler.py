"""``python -m tvmlab.bench.auto_scheduler``: the auto-scheduler on ``C = A @ B + D`` against numpy.

Only the compute definition is given.  The search measures ``--trials``
states (300) at ``--size``^3 (1024); the best schedule found is then built
here and timed side by side with numpy's ``A @ B + D`` in one process
(``bench.timing``), so the ratio does not depend on what the machine did
during the search.  Trials per second count every trial over the tune's wall
time (failed ones included); a candidate that runs past ``--runner-timeout``
(3 s, some 50x numpy's time) counts as failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from .. import auto_scheduler, te


@auto_scheduler.register_workload
def bench_matmul_add(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    D = te.placeholder((N, M), name="D", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    mm = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul")
    C = te.compute((N, M), lambda i, j: mm[i, j] + D[i, j], name="C")
    return [A, B, D, C]


def run(size=1024, trials=300, per_round=32, seed=0, runner_timeout=3.0, out=sys.stdout):
    import tvmlab
    from .timing import side_by_side
    task = auto_scheduler.SearchTask(func=bench_matmul_add, args=(size, size, size, "float32"), target="llvm")
    log = os.path.join(tempfile.mkdtemp(prefix="tvmlab_bench_"), "matmul_add.json")
    policy = auto_scheduler.SketchPolicy(task, auto_scheduler.XGBModel(), seed=seed, verbose=1)
    opts = auto_scheduler.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round,
                                        runner=auto_scheduler.LocalRunner(number=2, repeat=2, min_repeat_ms=0,
                                                                          timeout=runner_timeout),
                                        measure_callbacks=[auto_scheduler.RecordToFile(log)])
    t0 = time.perf_counter()
    task.tune(opts, search_policy=policy)
    wall = time.perf_counter() - t0
    opts.runner.close()
    failed = sum(1 for _, g, _ in policy.history if g == 0)
    print(f"C = A @ B + D at {size}^3: {len(policy.history)} trials in {wall:.0f} s "
          f"({len(policy.history) / wall:.2f} trials/s, {failed} failed); log {log}", file=out)
    s, args = task.apply_best(log)
    f = tvmlab.build(s, args, "llvm")
    rng = np.random.default_rng(1)
    a, b, d = (rng.uniform(-1, 1, (size, size)).astype("float32") for _ in range(3))
    arrs = [tvmlab.nd.array(x) for x in (a, b, d)] + [tvmlab.nd.array(np.full((size, size), np.nan, "float32"))]
    f(*arrs)
    np.testing.assert_allclose(arrs[-1].numpy(), a @ b + d, rtol=1e-3, atol=1e-3)
    t_best, t_np = side_by_side(lambda: f(*arrs), lambda: a @ b + d)
    flop = 2 * size ** 3 + size * size
    print(f"side by side: auto-scheduled {t_best * 1e3:.2f} ms ({flop / t_best / 1e9:.1f} GFLOP/s), numpy "
          f"{t_np * 1e3:.2f} ms ({flop / t_np / 1e9:.1f} GFLOP/s): {t_np / t_best:.2f}x numpy (goal >= 0.8x)",
          file=out)
    print("best schedule:\n" + s.trace.as_python(), file=out)
    return t_np / t_best, len(policy.history) / wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--trials", type=int, default=300)
    p.add_argument("--per-round", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runner-timeout", type=float, default=3.0,
                   help="seconds a candidate may run; slower ones count as failed (numpy takes ~0.05 s)")
    a = p.parse_args(argv)
    run(a.size, a.trials, a.per_round, a.seed, a.runner_timeout)


if __name__ == "__main__":
    main()
