"""``python -m tvmlab.bench.tune``: how well and how fast AutoTVM tunes TVM's matmul template.

The template is TVM's tutorial matmul with every knob kind: splits of y, x
and k, a reorder of the inner loops, an annotation of the innermost axis
(unroll up to 16 iterations / vectorize) and a parallel knob.  XGBTuner gets ``--xgb`` trials
(200), RandomTuner ``--random`` trials (800); their two best configs are then
built here and timed side by side in one process (``bench.timing``), so the
ratio does not depend on what the machine did during either tune.  Trials per
second count every trial, failed ones included, over each tune's wall time;
CPU seconds per trial (this process and its workers) say what a quiet machine
allows (at most cores / that) when other work shares the cores.
A config whose compile takes over ``--build-timeout`` (4 s) counts as failed:
a few unrolled-and-vectorised configs make LLVM's O3 pipeline take 5-20 s.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from .. import autotvm, te

TEMPLATE = "bench/matmul"


@autotvm.template(TEMPLATE)
def matmul_template(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2, max_factor=64)
    cfg.define_split("tile_k", k, num_outputs=2, max_factor=64)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    ko, ki = cfg["tile_k"].apply(s, C, k)
    cfg.define_reorder("reorder", [ko, ki, yi], policy="all")
    s[C].reorder(yo, xo)
    cfg["reorder"].apply(s, C, [ko, ki, yi])
    s[C].reorder(xi)
    cfg.define_annotate("ann", [xi], policy="try_unroll_vec")
    cfg["ann"].apply(s, C, [xi], axis_lens=[cfg["tile_x"].size[-1]], max_unroll=16)
    cfg.define_knob("parallel", [False, True])
    if cfg["parallel"].val:
        s[C].parallel(yo)
    cfg.add_flop(2 * N * L * M)
    return s, [A, B, C]


def _tune(tuner, n_trial, runner_timeout, build_timeout, slow_factor=10.0):
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=build_timeout),
                                 runner=autotvm.LocalRunner(number=2, repeat=2, timeout=runner_timeout))
    opt["runner"].slow_factor = slow_factor or None
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    tuner.tune(n_trial=n_trial, measure_option=opt)
    wall = time.perf_counter() - t0
    opt["runner"].close()
    cpu = _cpu_seconds() - cpu0
    errors = sum(1 for _, f in tuner.history if f == 0)
    return tuner.best_config, tuner.best_flops, len(tuner.history) / wall, wall, errors, cpu / len(tuner.history)


def _cpu_seconds():
    # CPU time of this process and its finished workers: trials/s on a quiet machine is at most cores / this
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def _side_by_side(task, cfg_a, cfg_b):
    import tvmlab
    from .timing import side_by_side
    n, l, m = task.args[:3]
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, l)).astype("float32")
    b = rng.uniform(-1, 1, (l, m)).astype("float32")
    calls = []
    for cfg in (cfg_a, cfg_b):
        s, args = task.instantiate(cfg)
        f = tvmlab.build(s, args, "llvm")
        arrs = [tvmlab.nd.array(a), tvmlab.nd.array(b), tvmlab.nd.array(np.full((n, m), np.nan, "float32"))]
        f(*arrs)
        np.testing.assert_allclose(arrs[2].numpy(), a @ b, rtol=1e-3, atol=1e-3)
        calls.append(f.get_function(f.entry_name).prepare(*arrs))
    return side_by_side(calls[0], calls[1])


def run(size=512, n_xgb=200, n_random=800, feature_type="itervar", seed=0, runner_timeout=4.0, build_timeout=4.0,
        slow_factor=10.0, out=sys.stdout):
    task = autotvm.task.create(TEMPLATE, args=(size, size, size, "float32"), target="llvm")
    print(f"matmul {size}^3 template: {len(task.config_space)} configs", file=out)
    xgb = autotvm.tuner.XGBTuner(task, feature_type=feature_type, seed=seed)
    x_cfg, x_flops, x_rate, x_wall, x_err, x_cpu = _tune(xgb, n_xgb, runner_timeout, build_timeout, slow_factor)
    print(f"XGBTuner({feature_type}): {n_xgb} trials in {x_wall:.0f} s ({x_rate:.2f} trials/s, {x_err} failed, "
          f"{x_cpu:.3f} CPU s per trial), best {x_flops / 1e9:.1f} GFLOP/s while tuning: {x_cfg}", file=out)
    rnd = autotvm.tuner.RandomTuner(task, seed=seed)
    r_cfg, r_flops, r_rate, r_wall, r_err, r_cpu = _tune(rnd, n_random, runner_timeout, build_timeout, slow_factor)
    print(f"RandomTuner: {n_random} trials in {r_wall:.0f} s ({r_rate:.2f} trials/s, {r_err} failed, "
          f"{r_cpu:.3f} CPU s per trial), best {r_flops / 1e9:.1f} GFLOP/s while tuning: {r_cfg}", file=out)
    t_x, t_r = _side_by_side(task, x_cfg, r_cfg)
    flop = 2.0 * size ** 3
    print(f"side by side: XGB best {t_x * 1e3:.3f} ms ({flop / t_x / 1e9:.1f} GFLOP/s), random best "
          f"{t_r * 1e3:.3f} ms ({flop / t_r / 1e9:.1f} GFLOP/s); XGB({n_xgb}) / random({n_random}) speed ratio "
          f"{t_r / t_x:.3f}", file=out)
    return {"xgb_time": t_x, "random_time": t_r, "ratio": t_r / t_x, "xgb_trials_per_s": x_rate,
            "random_trials_per_s": r_rate}


def run_topi(size=512, n_trial=40, seed=0, out=sys.stdout):
    """topi.schedule_matmul with a tuning log vs its hand-written fallback, side by side.

    The fallback config is measured first and logged with the tune, so the
    best record can only be the fallback or something measured faster.
    """
    import os
    import tempfile

    import tvmlab
    from .. import topi
    from ..autotvm.topi_templates import MATMUL, fallback_config
    from .timing import side_by_side
    task = autotvm.task.create(MATMUL, args=(size, size, size, "float32"), target="llvm")
    log = os.path.join(tempfile.mkdtemp(prefix="tvmlab_bench_"), "topi_matmul.log")
    opt = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=30),
                                 runner=autotvm.LocalRunner(number=3, repeat=3, timeout=10))
    fb = fallback_config(task)
    autotvm.tuner.GridSearchTuner(task, range_idx=(fb.index, fb.index)).tune(
        n_trial=1, measure_option=opt, callbacks=[autotvm.callback.log_to_file(log)])
    tuner = autotvm.tuner.XGBTuner(task, plan_size=16, feature_type="knob", seed=seed)
    t0 = time.perf_counter()
    tuner.tune(n_trial=n_trial, measure_option=opt, callbacks=[autotvm.callback.log_to_file(log)])
    wall = time.perf_counter() - t0
    opt["runner"].close()
    A = te.placeholder((size, size), name="A")
    B = te.placeholder((size, size), name="B")
    C = topi.matmul(A, B)
    s_fb = topi.schedule_matmul(C)
    with autotvm.apply_history_best(log):
        s_tuned = topi.schedule_matmul(C)
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (size, size)).astype("float32")
    b = rng.uniform(-1, 1, (size, size)).astype("float32")
    calls = []
    for s in (s_tuned, s_fb):
        f = tvmlab.build(s, [A, B, C], "llvm")
        arrs = [tvmlab.nd.array(a), tvmlab.nd.array(b), tvmlab.nd.array(np.full((size, size), np.nan, "float32"))]
        f(*arrs)
        np.testing.assert_allclose(arrs[2].numpy(), a @ b, rtol=1e-3, atol=1e-3)
        calls.append(f.get_function(f.entry_name).prepare(*arrs))
    t_tuned, t_fb = side_by_side(calls[0], calls[1])
    print(f"topi.schedule_matmul {size}^3: {n_trial} XGB trials in {wall:.0f} s; tuned {t_tuned * 1e3:.3f} ms, "
          f"fallback {t_fb * 1e3:.3f} ms, tuned / fallback speed {t_fb / t_tuned:.3f}", file=out)
    return t_tuned, t_fb


def run_tutorial(size=512, n_trial=200, seed=0, out=sys.stdout):
    """Tune as TVM's tutorials configure it: ``builder="local"`` (10 s build timeout, every core) and
    ``LocalRunner(number=3)`` with TVM's other defaults, a RandomTuner; prints trials per second."""
    task = autotvm.task.create(TEMPLATE, args=(size, size, size, "float32"), target="llvm")
    opt = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=3))
    tuner = autotvm.tuner.RandomTuner(task, seed=seed)
    errors = []
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    tuner.tune(n_trial=n_trial, measure_option=opt,
               callbacks=[lambda t, inputs, results: errors.extend(r.error_no for r in results if r.error_no)])
    wall = time.perf_counter() - t0
    opt["runner"].close()
    n = len(tuner.history)
    print(f"tutorial configuration (builder='local', LocalRunner(number=3), RandomTuner): {n} trials in "
          f"{wall:.1f} s, {n / wall:.2f} trials/s, {len(errors)} failed, "
          f"{(_cpu_seconds() - cpu0) / n:.3f} CPU s per trial; best {tuner.best_flops / 1e9:.1f} GFLOP/s",
          file=out)
    return n / wall


def run_cuda(size=1024, n_trial=200, seed=0, tuner="xgb", out=sys.stdout):
    """Tune ``dense.cuda`` at ``size``-cubed on this machine's GPU as ``tophub tune`` does (its measure
    options); prints measured trials per second, the builders' CPU seconds per build and the best config
    against the hand-written one.  Without a GPU it says so and times only the builds (NVRTC, every core):
    the rate the build side allows here."""
    import os

    import tvmlab
    from ..autotvm.tophub.tune import _measure_option
    from ..autotvm.topi_templates import fallback_config
    task = autotvm.task.create("dense.cuda", args=(size, size, size, "float32"), target="cuda")
    opt = _measure_option(task.target)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if not tvmlab.cuda(0).exist:
        opt["runner"].close()
        from ..autotvm.measure import MeasureInput
        builder = opt["builder"]
        builder.set_task(task)
        picks = autotvm.tuner.RandomTuner(task, seed=seed).next_batch(n_trial)
        cpu0 = _cpu_seconds()
        t0 = time.perf_counter()
        res = builder.build([MeasureInput(task.target, task, c) for c in picks])
        wall = time.perf_counter() - t0
        ok = sum(r.error is None for r in res)
        print(f"dense.cuda {size}^3: no CUDA device here, so nothing is timed; {len(res)} random configs built "
              f"(NVRTC, {cores} workers) in {wall:.1f} s: {len(res) / wall:.1f} builds/s, {ok} built, "
              f"{(_cpu_seconds() - cpu0) / len(res):.3f} CPU s per build", file=out)
        return None
    fb = fallback_config(task)
    first = autotvm.tuner.GridSearchTuner(task, range_idx=(fb.index, fb.index))
    first.tune(n_trial=1, measure_option=opt)
    tn = autotvm.tuner.XGBTuner(task, seed=seed) if tuner == "xgb" else autotvm.tuner.RandomTuner(task, seed=seed)
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    tn.tune(n_trial=n_trial, measure_option=opt)
    wall = time.perf_counter() - t0
    opt["runner"].close()
    n = len(tn.history)
    errors = sum(1 for _, f in tn.history if f == 0)
    print(f"dense.cuda {size}^3 on {tvmlab.cuda(0).compute_version and 'sm_' + tvmlab.cuda(0).compute_version}: "
          f"{n} {type(tn).__name__} trials in {wall:.1f} s, {n / wall:.2f} trials/s ({cores} CPU cores, {errors} "
          f"failed, {(_cpu_seconds() - cpu0) / n:.3f} CPU s per trial); best {tn.best_flops / 1e12:.2f} TFLOP/s, "
          f"hand-written {first.best_flops / 1e12:.2f} TFLOP/s", file=out)
    return n / wall


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=None, help="matmul size (512; 1024 with --cuda)")
    p.add_argument("--xgb", type=int, default=200, help="XGBTuner trials")
    p.add_argument("--random", type=int, default=800, help="RandomTuner trials")
    p.add_argument("--feature-type", default="itervar", choices=["itervar", "knob", "curve"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runner-timeout", type=float, default=4.0)
    p.add_argument("--build-timeout", type=float, default=4.0,
                   help="seconds; a config whose LLVM compile takes longer counts as failed (TVM's default: 10)")
    p.add_argument("--slow-factor", type=float, default=10.0,
                   help="a config whose first call is over this times the best so far is costed by that call "
                        "(0: time every config fully, as TVM does)")
    p.add_argument("--topi", type=int, default=0, metavar="N",
                   help="instead: tune topi.schedule_matmul for N trials and compare it with its fallback")
    p.add_argument("--tutorial", type=int, default=0, metavar="N",
                   help="instead: N trials configured as TVM's tutorials do (builder='local', "
                        "LocalRunner(number=3)); prints trials per second")
    p.add_argument("--cuda", type=int, default=0, metavar="N",
                   help="instead: N trials of dense.cuda (--size, 1024 by default) on the GPU, as tophub tune "
                        "measures them; prints trials per second (without a GPU: the build rate only)")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random"], help="for --cuda")
    a = p.parse_args(argv)
    if a.cuda:
        run_cuda(a.size or 1024, a.cuda, a.seed, a.tuner)
    elif a.tutorial:
        run_tutorial(a.size or 512, a.tutorial, a.seed)
    elif a.topi:
        run_topi(a.size or 512, a.topi, a.seed)
    else:
        run(a.size or 512, a.xgb, a.random, a.feature_type, a.seed, a.runner_timeout, a.build_timeout, a.slow_factor)


if __name__ == "__main__":
    main()
