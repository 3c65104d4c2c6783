"""Measurement: ``measure_option(builder=LocalBuilder(), runner=LocalRunner())``.

The builder instantiates each config's schedule and builds it into a shared
library in forked worker processes (templates defined in a notebook work); the
runner loads each library in a fresh interpreter (parallel code cannot run in
a child forked after the parent ran it) and times it with
``time_evaluator(number, repeat, min_repeat_ms)``.  ``DaskRunner`` sends the
libraries to a Dask cluster instead.  Every failure becomes a
``MeasureResult`` with TVM's error number; the tuner goes on.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import namedtuple

from ..errors import TVMLabError
from ..tuning.executor import DaskExecutor, LocalExecutor
from ..tuning.measure import MeasureError, MeasureErrorNo, build_candidate, run_candidate

MeasureInput = namedtuple("MeasureInput", ["target", "task", "config"])
MeasureResult = namedtuple("MeasureResult", ["costs", "error_no", "all_cost", "timestamp"])
BuildResult = namedtuple("BuildResult", ["filename", "arg_info", "error", "time_cost"])


class MeasureOptionError(TVMLabError, ValueError):
    """A builder or runner option is wrong."""


def _check_number(what, v, lo, integer=True):
    kinds = (int,) if integer else (int, float)
    if isinstance(v, bool) or not isinstance(v, kinds) or v < lo:
        raise MeasureOptionError(f"{what} must be {'an int' if integer else 'a number'} >= {lo}, got {v!r}")
    return v


def _build_job(task, config, target, out_dir):
    # in a forked builder worker: the error number travels in the value
    t0 = time.perf_counter()
    try:
        out = build_candidate(lambda: task.instantiate(config), target, out_dir)
        return ("ok", out["path"], out["args"], time.perf_counter() - t0)
    except MeasureError as e:
        return ("error", e.error_no, str(e), time.perf_counter() - t0)


def _run_job(lib, info, number, repeat, min_repeat_ms, ref, remove, budget=None):
    # in a runner worker (a fresh interpreter or a Dask worker)
    try:
        return ("ok", run_candidate(lib, info, number, repeat, min_repeat_ms, ref=ref, remove=remove,
                                    budget=budget))
    except MeasureError as e:
        return ("error", e.error_no, str(e))


class Builder:
    """Builds configs into libraries; ``build(measure_inputs) -> [BuildResult]``."""

    def __init__(self, timeout=10, n_parallel=None):
        self.timeout = _check_number("builder timeout", timeout, 0.001, integer=False)
        self.n_parallel = n_parallel
        self.task = None

    def set_task(self, task):
        self.task = task

    def build(self, measure_inputs):
        raise NotImplementedError


class LocalBuilder(Builder):
    """Builds in ``n_parallel`` forked worker processes (default: the usable CPUs).

    ``build_func`` must be "default" (a shared library, tvmlab's own export).
    """

    def __init__(self, timeout=10, n_parallel=None, build_func="default"):
        super().__init__(timeout, n_parallel)
        if build_func not in ("default", "so"):
            raise MeasureOptionError(f"LocalBuilder: build_func must be 'default', got {build_func!r}")
        self.executor = LocalExecutor(n_parallel, method="fork")
        self.n_parallel = self.executor.n_parallel
        self.tmp_dir = tempfile.mkdtemp(prefix="tvmlab_autotvm_")

    def build(self, measure_inputs):
        jobs = [(inp.task, inp.config, str(inp.target), self.tmp_dir) for inp in measure_inputs]
        out = []
        for jr in self.executor.run(_build_job, jobs, self.timeout):
            if jr.status == "ok" and jr.value[0] == "ok":
                out.append(BuildResult(jr.value[1], jr.value[2], None, jr.value[3]))
            elif jr.status == "ok":
                out.append(BuildResult(None, None, MeasureError(jr.value[1], jr.value[2]), jr.value[3]))
            elif jr.status == "timeout":
                out.append(BuildResult(None, None, MeasureError(MeasureErrorNo.BUILD_TIMEOUT, jr.message),
                                       jr.elapsed))
            elif jr.status == "crash":
                out.append(BuildResult(None, None, MeasureError(MeasureErrorNo.COMPILE_HOST,
                                                                f"the build crashed: {jr.message}"), jr.elapsed))
            else:
                out.append(BuildResult(None, None, MeasureError(MeasureErrorNo.UNKNOWN_ERROR, jr.message),
                                       jr.elapsed))
        return out

    def reference(self, task):
        """A library of ``task``'s computation under the default schedule (for check_correctness)."""
        def make():
            from .. import te
            from ..ir.tensor import PlaceholderOp
            _, args = task.instantiate(task.config_space.get(0))
            outs = [a.op for a in args if not isinstance(a.op, PlaceholderOp)]
            return te.create_schedule(outs), args
        jr = self.executor.run(lambda: build_candidate(make, str(task.target), self.tmp_dir), [()],
                               max(self.timeout, 60))[0]
        if not jr.ok:
            raise MeasureOptionError(f"check_correctness: the reference build failed: {jr.message}")
        return jr.value["path"]

    def __del__(self):
        shutil.rmtree(getattr(self, "tmp_dir", ""), ignore_errors=True)


class Runner:
    """Times built libraries; ``run(measure_inputs, build_results) -> [MeasureResult]``.

    A candidate whose first call shows that ``number * repeat`` calls would take
    more than half of ``timeout``, or whose first call is over ``slow_factor``
    times the best cost measured so far for the task, is timed by that first
    call alone (it is far from the best anyway, and its cost still teaches the
    cost model); one that does not finish within ``timeout`` is a RUN_TIMEOUT.
    ``slow_factor=None`` times every candidate fully, as TVM does.
    """

    slow_factor = 10.0

    def __init__(self, timeout=5, number=1, repeat=1, min_repeat_ms=0, cooldown_interval=0.0,
                 check_correctness=False, enable_cpu_cache_flush=False):
        self.timeout = _check_number("runner timeout", timeout, 0.001, integer=False)
        self.number = _check_number("number", number, 1)
        self.repeat = _check_number("repeat", repeat, 1)
        self.min_repeat_ms = _check_number("min_repeat_ms", min_repeat_ms, 0, integer=False)
        self.cooldown_interval = _check_number("cooldown_interval", cooldown_interval, 0, integer=False)
        self.check_correctness = bool(check_correctness)
        if enable_cpu_cache_flush:
            raise MeasureOptionError("enable_cpu_cache_flush is not supported by tvmlab's runners")
        self.task = None
        self.ref = None
        self.n_parallel = 1
        self.best_cost = None      # the lowest mean cost measured for the task, for slow_factor

    def set_task(self, task, builder=None):
        self.task = task
        self.ref = None
        self.best_cost = None
        if self.check_correctness:
            if builder is None or not hasattr(builder, "reference"):
                raise MeasureOptionError("check_correctness needs a LocalBuilder to build the reference")
            self.ref = self._ref_payload(builder.reference(task))

    def _ref_payload(self, path):
        return path

    def _payload(self, path):
        return path

    def _executor(self):
        raise NotImplementedError

    def run(self, measure_inputs, build_results):
        results = [None] * len(build_results)
        jobs, where = [], []
        for k, b in enumerate(build_results):
            if b.error is not None:
                code = getattr(b.error, "error_no", MeasureErrorNo.UNKNOWN_ERROR)
                results[k] = MeasureResult((b.error,), code, b.time_cost, time.time())
            else:
                jobs.append((self._payload(b.filename), b.arg_info, self.number, self.repeat, self.min_repeat_ms,
                             self.ref, True, self._budget()))
                where.append(k)
        for k, b, jr in zip(where, [build_results[k] for k in where], self._run_jobs(jobs)):
            total = b.time_cost + jr.elapsed
            if jr.status == "ok" and jr.value[0] == "ok":
                results[k] = MeasureResult(tuple(jr.value[1]), MeasureErrorNo.NO_ERROR, total, time.time())
                mean = sum(jr.value[1]) / len(jr.value[1])
                self.best_cost = mean if self.best_cost is None else min(self.best_cost, mean)
            elif jr.status == "ok":
                results[k] = MeasureResult((MeasureError(jr.value[1], jr.value[2]),), jr.value[1], total,
                                           time.time())
            elif jr.status == "timeout":
                results[k] = MeasureResult((MeasureError(MeasureErrorNo.RUN_TIMEOUT, jr.message),),
                                           MeasureErrorNo.RUN_TIMEOUT, total, time.time())
            else:
                code = MeasureErrorNo.RUNTIME_DEVICE if jr.status == "crash" else MeasureErrorNo.UNKNOWN_ERROR
                results[k] = MeasureResult((MeasureError(code, jr.message),), code, total, time.time())
            if os.path.exists(b.filename):
                os.unlink(b.filename)
        return results

    def _budget(self):
        # seconds of number * repeat calls beyond which a candidate is costed by its first call
        budget = self.timeout / 2
        if self.slow_factor is not None and self.best_cost is not None:
            budget = min(budget, self.slow_factor * self.best_cost * self.number * self.repeat)
        return budget

    def _run_jobs(self, jobs):
        out = []
        for job in jobs:           # one at a time: concurrent timings disturb each other
            out += self._executor().run(_run_job, [job], self.timeout)
            if self.cooldown_interval:
                time.sleep(self.cooldown_interval)
        return out


class LocalRunner(Runner):
    """Times each library in a worker interpreter on this machine, one at a time."""

    def __init__(self, timeout=10, number=4, repeat=3, min_repeat_ms=0, cooldown_interval=0.0,
                 check_correctness=False, enable_cpu_cache_flush=False):
        super().__init__(timeout, number, repeat, min_repeat_ms, cooldown_interval, check_correctness,
                         enable_cpu_cache_flush)
        self._exec = None

    def _executor(self):
        if self._exec is None:
            self._exec = LocalExecutor(1, method="spawn")
            # the first job also pays for the worker's start: give it time
            self._exec.run(abs, [(0,)], 120)
        return self._exec

    def close(self):
        if self._exec is not None:
            self._exec.close()
            self._exec = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class DaskRunner(Runner):
    """Times each library on a Dask ``distributed`` cluster (a Client or a scheduler address).

    The library's bytes travel with the job, so workers may be other machines
    with the same CPU (code built for features a worker lacks is refused there).
    """

    def __init__(self, client_or_address, timeout=10, number=4, repeat=3, min_repeat_ms=0,
                 cooldown_interval=0.0, check_correctness=False, n_parallel=None):
        super().__init__(timeout, number, repeat, min_repeat_ms, cooldown_interval, check_correctness)
        self._exec = DaskExecutor(client_or_address)
        nthreads = sum(self._exec.client.nthreads().values()) or 1
        self.n_parallel = n_parallel or nthreads

    def _payload(self, path):
        with open(path, "rb") as f:
            return f.read()

    _ref_payload = _payload

    def _executor(self):
        return self._exec

    def _run_jobs(self, jobs):
        return self._exec.run(_run_job, jobs, self.timeout)

    def close(self):
        self._exec.close()


def measure_option(builder="local", runner="local"):
    """The builder and runner a tuner uses: instances, or "local" for the defaults."""
    if builder == "local":
        builder = LocalBuilder()
    if runner == "local":
        runner = LocalRunner()
    if not isinstance(builder, Builder):
        raise MeasureOptionError(f"builder must be a Builder such as LocalBuilder() or 'local', got {builder!r}")
    if not isinstance(runner, Runner):
        raise MeasureOptionError(f"runner must be a Runner such as LocalRunner() or 'local', got {runner!r}")
    return {"builder": builder, "runner": runner}


def create_measure_batch(task, option):
    """``measure_batch(inputs) -> results`` for ``task``; ``.n_parallel`` is how many to ask for at once."""
    builder, runner = option["builder"], option["runner"]
    builder.set_task(task)
    runner.set_task(task, builder)

    def measure_batch(measure_inputs):
        return runner.run(measure_inputs, builder.build(measure_inputs))

    measure_batch.n_parallel = max(builder.n_parallel or 1, runner.n_parallel or 1)
    return measure_batch
