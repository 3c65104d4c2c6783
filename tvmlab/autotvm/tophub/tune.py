"""Make the tuned configs tvmlab ships: ``python -m tvmlab.autotvm.tophub tune``.

Tunes the AutoTVM tasks of whole models (extracted as ``relay.build`` would schedule them) and of
products at given sizes on this machine's device, and merges the best record of each workload into
``<out>/<device key>.log`` -- the file ``autotvm.tophub`` reads by default when ``out`` is the
package's ``tophub_logs`` folder::

    python -m tvmlab.autotvm.tophub tune --target cuda --models resnet50,bert --products 1024,2048,4096 \\
        --trials 200 --seconds 60 --out /tmp/logs
    python -m tvmlab.autotvm.tophub show --target cuda

Each task first measures its hand-written config (the fallback), then tunes; so a record can only
replace the fallback with something measured faster in the same run.  Merging keeps, per workload,
the lowest mean cost of the records already in the file and the new ones (the same device measured
both).  A CUDA target without a GPU is refused before anything is built.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

from ...errors import TVMLabError


class TophubError(TVMLabError, ValueError):
    """A tophub tuning request that cannot be carried out (no device, an unknown model)."""


def _target(target):
    from ...codegen.registry import Target
    return target if isinstance(target, Target) else Target(str(target))


def model_tasks(programs, target):
    """The tunable tasks of Relay programs ``programs`` (``(mod, params)`` pairs), for ``target``, each
    workload once."""
    from ..task import extract_from_program
    tasks = []
    for mod, params in programs:
        tasks += extract_from_program(mod, params, target)
    return _unique(tasks)


def product_tasks(sizes, target, dtype="float32"):
    """Square products of ``sizes``: ``dense.cuda`` (M = N = K) on a GPU, ``matmul.x86`` on a CPU."""
    from ..task import create
    t = _target(target)
    name = "dense.cuda" if t.kind == "cuda" else "matmul.x86"
    return [create(name, (n, n, n, dtype), t) for n in sizes]


def _unique(tasks):
    from ..task.dispatcher import workload_key
    seen, out = set(), []
    for t in tasks:
        k = workload_key(t.workload)
        if k not in seen:
            seen.add(k)
            out.append(t)
    return out


def _measure_option(target):
    from .. import measure
    t = _target(target)
    if t.kind == "cuda":
        # timed by CUDA events, 10 back-to-back calls (at least 1 ms) per repeat are precise enough to rank configs
        runner = measure.LocalRunner(number=10, repeat=3, min_repeat_ms=1, timeout=10)
    else:
        runner = measure.LocalRunner(number=5, repeat=3, timeout=10)
    return measure.measure_option(builder=measure.LocalBuilder(timeout=30), runner=runner)


def check_device(target):
    """Refuse a target whose device is not on this machine (timings would all be errors)."""
    t = _target(target)
    if t.kind == "cuda":
        from ...runtime.device import device
        if not device("cuda", 0).exist:
            raise TophubError("tophub tune --target cuda needs a CUDA GPU on this machine: there is none "
                              "(tvmlab.cuda(0).exist is False)")
    elif t.kind != "llvm":
        raise TophubError(f"tophub tune: target {t.kind!r} has no tunable templates; use cuda or llvm")


def tune_task(task, log, trials, seconds, tuner="xgb", option=None, seed=0):
    """Measure ``task``'s fallback config, tune it for up to ``trials`` configs or ``seconds`` (checked
    after each batch), then measure the fallback again; every record goes to ``log``.  Returns
    (fallback FLOP/s, best FLOP/s, trials done)."""
    from .. import callback
    from .. import tuner as tuners
    from ..topi_templates import fallback_config
    cls = {"xgb": tuners.XGBTuner, "random": tuners.RandomTuner, "ga": tuners.GATuner,
           "grid": tuners.GridSearchTuner}.get(tuner)
    if cls is None:
        raise TophubError(f"tophub tune: tuner must be xgb, random, ga or grid, got {tuner!r}")
    option = option or _measure_option(task.target)
    fb = fallback_config(task)
    first = tuners.GridSearchTuner(task, range_idx=(fb.index, fb.index))
    first.tune(n_trial=1, measure_option=option, callbacks=[callback.log_to_file(log)])
    tn = cls(task, seed=seed) if tuner in ("random", "xgb", "ga") else cls(task)
    start = time.perf_counter()

    def budget(t, inputs, results):
        if time.perf_counter() - start > seconds:
            t.stop()
    n = min(trials, len(task.config_space))
    if n > 0:
        tn.tune(n_trial=n, measure_option=option, callbacks=[callback.log_to_file(log), budget])
    # the fallback once more, warm: a first measurement that paid for starting up cannot lose it its place
    last = tuners.GridSearchTuner(task, range_idx=(fb.index, fb.index))
    last.tune(n_trial=1, measure_option=option, callbacks=[callback.log_to_file(log)])
    fb_flops = max(first.best_flops, last.best_flops)
    return fb_flops, max(fb_flops, tn.best_flops), len(tn.history)


def merge(new_logs, dest):
    """Merge the records of ``new_logs`` into ``dest`` (created when missing), keeping the best per workload
    and target; returns the number of records ``dest`` holds."""
    from ..record import load_from_file, pick_best, save_to_file
    with tempfile.TemporaryDirectory() as d:
        both = os.path.join(d, "all.log")
        records = list(load_from_file(dest)) if os.path.isfile(dest) else []
        for p in new_logs:
            records += list(load_from_file(p))
        save_to_file(records, both)
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        return len(pick_best(both, dest))


def tune(target, programs=(), sizes=(), trials=200, seconds=60.0, out=None, tuner="xgb", report=sys.stdout):
    """Tune the tasks of Relay ``programs`` (``(mod, params)`` pairs) and square products of ``sizes`` on
    this machine; merge the best records into ``<out>/<device key>.log`` (``out``: the package's shipped
    logs by default).  Returns that path."""
    from .. import tophub
    t = _target(target)
    check_device(t)
    key = tophub.device_key(t)
    if key is None:
        raise TophubError(f"tophub tune: cannot tell the device of target {str(t)!r}")
    tasks = _unique(model_tasks(programs, t) + product_tasks(sizes, t))
    if not tasks:
        raise TophubError("tophub tune: no tasks; give --models and/or --products")
    dest = os.path.join(out or tophub.PACKAGE_LOGS, f"{key}.log")
    option = _measure_option(t)
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "new.log")
        print(f"{len(tasks)} tasks for {key}; up to {trials} trials or {seconds:.0f} s each", file=report, flush=True)
        for i, task in enumerate(tasks):
            t0 = time.perf_counter()
            fb, best, n = tune_task(task, log, trials, seconds, tuner, option)
            gain = f"{best / fb:.2f}x" if fb > 0 else "fallback failed"
            print(f"[{i + 1}/{len(tasks)}] {task.name}{tuple(task.args)}: fallback {fb / 1e9:.1f} GFLOP/s, "
                  f"best {best / 1e9:.1f} GFLOP/s ({gain}), {n} trials in {time.perf_counter() - t0:.0f} s",
                  file=report, flush=True)
        for part in option.values():
            close = getattr(part, "close", None)
            if close is not None:
                close()
        n = merge([log], dest) if os.path.isfile(log) else 0
    print(f"{dest}: {n} records (best per workload)", file=report, flush=True)
    return dest


def show(target, report=sys.stdout):
    """Print the shipped records for ``target``'s device: workload, config and cost."""
    from .. import tophub
    from ..record import load_from_file
    path = tophub.shipped_log(target)
    if path is None:
        print(f"no shipped log for {tophub.device_key(target)} in {tophub.location()}", file=report)
        return 0
    rows = list(load_from_file(path))
    print(f"{path}: {len(rows)} records", file=report)
    for inp, res in rows:
        cost = sum(res.costs) / len(res.costs) if res.costs else float("nan")
        print(f"  {inp.task.name}{tuple(inp.task.args)}: {cost * 1e3:.4f} ms  {inp.config}", file=report)
    return len(rows)
