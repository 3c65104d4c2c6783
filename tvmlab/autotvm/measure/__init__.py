"""Measurement: ``measure_option(builder=LocalBuilder(), runner=LocalRunner())``.

The builder instantiates each config's schedule and builds it into a shared
library (for CUDA: PTX / cubin by NVRTC, no GPU needed) in forked worker
processes (templates defined in a notebook work); the runner loads each build
in a fresh interpreter (parallel code cannot run in a child forked after the
parent ran it) and times it with ``time_evaluator(number, repeat,
min_repeat_ms)`` on the CPU or on ``cuda(0)``; where there is no GPU each
CUDA config's result is a RUNTIME_DEVICE error saying so.  ``DaskRunner`` sends the
libraries to a Dask cluster instead.  Every failure becomes a
``MeasureResult`` with TVM's error number; the tuner goes on.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections import deque, namedtuple
from multiprocessing.connection import wait

from ...errors import TVMLabError
from ...tuning.executor import DaskExecutor, LocalExecutor, WorkerPool
from ...tuning.measure import (CUDA_SUFFIX, MeasureError, MeasureErrorNo, build_candidate, run_candidate,
                               target_for_build)

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


def _run_job(lib, info, number, repeat, min_repeat_ms, ref, remove, budget=None, kill_after=None):
    # in a runner worker (a fresh interpreter or a Dask worker), or in a child forked from one
    try:
        return ("ok", run_candidate(lib, info, number, repeat, min_repeat_ms, ref=ref, remove=remove,
                                    budget=budget, kill_after=kill_after))
    except MeasureError as e:
        return ("error", e.error_no, str(e))


def _is_cuda(lib):
    return isinstance(lib, str) and lib.endswith(CUDA_SUFFIX)


def _run_forked(job, timeout, kill_after):
    # in LocalRunner's worker interpreter, which never runs CPU code itself: each CPU candidate runs in
    # a child forked from it, so a crash, a hang or a first call past ``kill_after`` ends only that child.
    # A CUDA candidate runs here, in the GPU context the worker keeps for the whole tune (a child would
    # have to make its own: a few hundred ms each); a hang is the pool's timeout, and after a device
    # error (which may leave the context unusable) the result asks LocalRunner for a new worker.
    import signal

    from ...runtime import llvm_jit
    from ...tuning.forked import call_forked
    from ...tuning.measure import shared_inputs
    if _is_cuda(job[0]):
        res = _run_job(*job)
        if res[0] == "error" and res[1] == MeasureErrorNo.RUNTIME_DEVICE and _cuda_present():
            res = res + (RESTART,)
        return res
    llvm_jit.initialize()
    shared_inputs(job[1])          # made here once per task; every child inherits them
    jr = call_forked(_run_job, tuple(job) + (kill_after,), timeout)
    if jr.status == "ok":
        return jr.value
    if jr.status == "crash" and kill_after is not None and jr.value == -signal.SIGALRM:
        return ("slow", kill_after)
    if jr.status == "timeout":
        return ("error", MeasureErrorNo.RUN_TIMEOUT, jr.message)
    if jr.status == "crash":
        return ("error", MeasureErrorNo.RUNTIME_DEVICE, jr.message)
    return ("error", MeasureErrorNo.UNKNOWN_ERROR, jr.message)


RESTART = "restart the worker"    # a CUDA result's last item after a device error


def _cuda_present():
    from ...runtime import cuda_driver
    return cuda_driver.exist(0)


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
        jobs = [self.job_of(inp)[1] for inp in measure_inputs]
        return [self.result_of(jr) for jr in self.executor.run(_build_job, jobs, self.timeout)]

    def job_of(self, inp):
        """``(fn, job, timeout)`` that builds ``inp`` on a builder worker."""
        return _build_job, (inp.task, inp.config, target_for_build(inp.target), self.tmp_dir), self.timeout

    @staticmethod
    def result_of(jr):
        """The BuildResult of a builder worker's JobResult."""
        if jr.status == "ok" and jr.value[0] == "ok":
            return BuildResult(jr.value[1], jr.value[2], None, jr.value[3])
        if jr.status == "ok":
            return BuildResult(None, None, MeasureError(jr.value[1], jr.value[2]), jr.value[3])
        if jr.status == "timeout":
            return BuildResult(None, None, MeasureError(MeasureErrorNo.BUILD_TIMEOUT, jr.message), jr.elapsed)
        if jr.status == "crash":
            return BuildResult(None, None, MeasureError(MeasureErrorNo.COMPILE_HOST,
                                                        f"the build crashed: {jr.message}"), jr.elapsed)
        return BuildResult(None, None, MeasureError(MeasureErrorNo.UNKNOWN_ERROR, jr.message), jr.elapsed)

    def reference(self, task):
        """A library of ``task``'s computation under the default schedule (for check_correctness); for
        the CPU when the task is for a GPU (an unscheduled computation has no threads to launch)."""
        target = str(task.target)
        if target.split()[0] in ("cuda", "opencl"):
            target = "llvm"

        def make():
            from ... import te
            from ...ir.tensor import PlaceholderOp
            _, args = task.instantiate(task.config_space.get(0))
            outs = [a.op for a in args if not isinstance(a.op, PlaceholderOp)]
            return te.create_schedule(outs), args
        jr = self.executor.run(lambda: build_candidate(make, target, self.tmp_dir), [()],
                               max(self.timeout, 60))[0]
        if not jr.ok:
            raise MeasureOptionError(f"check_correctness: the reference build failed: {jr.message}")
        return jr.value["path"]

    def __del__(self):
        shutil.rmtree(getattr(self, "tmp_dir", ""), ignore_errors=True)


class Runner:
    """Times built libraries; ``run(measure_inputs, build_results) -> [MeasureResult]``.

    Accurate timings matter near the best; elsewhere one call ranks a config
    well enough.  So a candidate is timed by its first call alone when the
    ``number * repeat`` calls would take over half of ``timeout``, when its
    first call is over ``slow_factor`` times the best cost measured so far for
    the task, or when they would take over ``full_timing_s`` while its first
    call is over ``contender_factor`` times that best; a candidate whose first call
    runs past ``slow_factor`` times the best (10 ms at least) is ended there
    (by LocalRunner, unless ``check_correctness``) and recorded with that time,
    a lower bound (it still teaches the cost model it is slow).  One that does
    not finish within ``timeout`` is a RUN_TIMEOUT.  ``slow_factor=None`` times
    every candidate fully, as TVM does.
    """

    slow_factor = 10.0
    contender_factor = 1.5
    full_timing_s = 0.25

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
        self._drop_ref()
        self.best_cost = None
        if self.check_correctness:
            if builder is None or not hasattr(builder, "reference"):
                raise MeasureOptionError("check_correctness needs a LocalBuilder to build the reference")
            self.ref = self._ref_payload(builder.reference(task))

    def _ref_payload(self, path):
        return path

    def _drop_ref(self):
        # the reference library of the last task (check_correctness) is this runner's to remove
        if isinstance(self.ref, str) and os.path.exists(self.ref):
            os.unlink(self.ref)
        self.ref = None

    def _payload(self, path):
        return path

    def _executor(self):
        raise NotImplementedError

    def run(self, measure_inputs, build_results):
        results = [None] * len(build_results)
        todo = []
        for k, b in enumerate(build_results):
            if b.error is not None:
                results[k] = self.result_of(b, None)
            else:
                todo.append(k)
        for k, jr in zip(todo, self._run_jobs([build_results[k] for k in todo])):
            results[k] = self.result_of(build_results[k], jr)
        return results

    def _job(self, b):
        return (self._payload(b.filename), b.arg_info, self.number, self.repeat, self.min_repeat_ms, self.ref, True,
                self._budget())

    def result_of(self, b, jr):
        """The MeasureResult of build ``b`` given its runner JobResult ``jr`` (None: the build failed)."""
        if jr is None:
            code = getattr(b.error, "error_no", MeasureErrorNo.UNKNOWN_ERROR)
            return MeasureResult((b.error,), code, b.time_cost, time.time())
        total = b.time_cost + jr.elapsed
        if jr.status == "ok" and jr.value[0] == "ok":
            res = MeasureResult(tuple(jr.value[1]), MeasureErrorNo.NO_ERROR, total, time.time())
            mean = sum(jr.value[1]) / len(jr.value[1])
            self.best_cost = mean if self.best_cost is None else min(self.best_cost, mean)
        elif jr.status == "ok" and jr.value[0] == "slow":
            # ended after its first call ran past slow_factor x the best: that time is a lower bound
            res = MeasureResult((jr.value[1],) * self.repeat, MeasureErrorNo.NO_ERROR, total, time.time())
        elif jr.status == "ok":
            res = MeasureResult((MeasureError(jr.value[1], jr.value[2]),), jr.value[1], total, time.time())
        elif jr.status == "timeout":
            res = MeasureResult((MeasureError(MeasureErrorNo.RUN_TIMEOUT, jr.message),),
                                MeasureErrorNo.RUN_TIMEOUT, total, time.time())
        else:
            code = MeasureErrorNo.RUNTIME_DEVICE if jr.status == "crash" else MeasureErrorNo.UNKNOWN_ERROR
            res = MeasureResult((MeasureError(code, jr.message),), code, total, time.time())
        if b.filename and os.path.exists(b.filename):
            os.unlink(b.filename)
        return res

    def _budget(self):
        # seconds of number * repeat calls beyond which a candidate is costed by its first call
        budget = self.timeout / 2
        if self.slow_factor is not None:
            calls = self.number * self.repeat
            if self.best_cost is None:
                return min(budget, self.full_timing_s)
            budget = min(budget, self.slow_factor * self.best_cost * calls,
                         max(self.full_timing_s, self.contender_factor * self.best_cost * calls))
        return budget

    def _kill_after(self):
        # seconds a first call may take before the candidate is ended (None: never).  Not with
        # check_correctness: every candidate's outputs are checked.  At least 10 ms, so a tiny kernel's
        # first-touch costs never end it.
        if self.slow_factor is None or self.best_cost is None or self.check_correctness:
            return None
        return max(self.slow_factor * self.best_cost, 0.01)

    def _run_jobs(self, builds):
        out = []
        for b in builds:           # one at a time: concurrent timings disturb each other
            out += self._executor().run(_run_job, [self._job(b)], self.timeout)
            if self.cooldown_interval:
                time.sleep(self.cooldown_interval)
        return out


class LocalRunner(Runner):
    """Times each library on this machine, one at a time.

    One worker interpreter serves the whole tune; each candidate runs in a
    child forked from it, so a candidate that crashes, hangs or whose first
    call runs past ``slow_factor`` times the best is ended without starting a
    new interpreter.  Such a slow candidate is recorded (no error) with that
    limit as its cost: a lower bound, enough for the cost model to learn it is slow.
    """

    def __init__(self, timeout=10, number=4, repeat=3, min_repeat_ms=0, cooldown_interval=0.0,
                 check_correctness=False, enable_cpu_cache_flush=False):
        super().__init__(timeout, number, repeat, min_repeat_ms, cooldown_interval, check_correctness,
                         enable_cpu_cache_flush)
        self._exec = None

    def _executor(self):
        if self._exec is None:
            # the worker interpreter starts once, outside any candidate's time
            self._exec = WorkerPool(1, method="spawn").start()
        return self._exec

    def job_of(self, b):
        """``(fn, job, timeout)`` that times build ``b`` (built without error) on a runner worker."""
        if _is_cuda(b.filename):      # timed in the worker itself: the pool's timeout is the candidate's
            return _run_forked, (self._job(b), self.timeout, None), self.timeout + 5
        return _run_forked, (self._job(b), self.timeout, self._kill_after()), self.timeout + 60

    def result_of(self, b, jr):
        if jr is not None and jr.status == "ok" and jr.value[-1] == RESTART and self._exec is not None:
            self._exec.close()        # the next candidate gets a fresh worker and GPU context
        return super().result_of(b, jr)

    def measure_one(self, b):
        """The JobResult of timing the library of build ``b`` (which built without error)."""
        fn, job, timeout = self.job_of(b)
        jr = self._executor().run(fn, [job], timeout)[0]
        if self.cooldown_interval:
            time.sleep(self.cooldown_interval)
        return jr

    def _run_jobs(self, builds):
        return [self.measure_one(b) for b in builds]

    def close(self):
        self._drop_ref()
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

    def _run_jobs(self, builds):
        return self._exec.run(_run_job, [self._job(b) for b in builds], self.timeout)

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


class MeasurePipeline:
    """Builds and times several batches at once, so neither the builder nor the runner waits for the other.

    ``submit(inputs)`` queues a batch and returns at once; ``result(handle)``
    returns its MeasureResults (in input order) once every config is built and
    timed, moving all queued work along meanwhile: builds run on persistent
    builder workers (forked when the pipeline starts, so templates defined
    before the tune work), and each finished build is timed as soon as the
    runner is free, one at a time, with the best cost known at that moment.
    A build that hits its timeout holds one builder worker only.  With
    ``quiet`` (the default) the builders are paused while a candidate is timed
    once a best cost is known (so runs are short), and compiles do not disturb
    the timings that rank contenders; the pause does not count against their timeout.
    """

    def __init__(self, builder, runner, quiet=True):
        self.builder, self.runner, self.quiet = builder, runner, quiet
        self.builders = WorkerPool(builder.n_parallel, method="fork")
        self.timer = runner._executor()
        self._builds, self._runs = deque(), deque()   # (handle, k) to build; (handle, k, BuildResult) to time
        self._batches = {}                             # handle -> [inputs, results, left]
        self._building = {}                            # builder ticket -> (handle, k)
        self._timing = None                            # (ticket, handle, k, BuildResult)
        self._run_after = 0.0                          # cooldown_interval
        self._handle = 0

    def submit(self, inputs):
        """Queue a batch of MeasureInputs; returns the handle for ``result``."""
        self._handle += 1
        inputs = list(inputs)
        self._batches[self._handle] = [inputs, [None] * len(inputs), len(inputs)]
        self._builds.extend((self._handle, k) for k in range(len(inputs)))
        return self._handle

    def result(self, handle, refill=None):
        """The MeasureResults of batch ``handle`` (waits until it is measured).

        ``refill()`` is called whenever a builder worker would otherwise idle: it
        may ``submit`` another batch, and returns False when it has none.
        """
        if handle not in self._batches:
            raise MeasureOptionError(f"no pending batch {handle!r}")
        while self._batches[handle][2]:
            # a queue as deep as the builders, so they stay busy while the caller learns (in_background)
            while refill is not None and len(self._builds) < self.builders.idle() + self.builders.n_parallel \
                    and refill():
                pass
            self._step()
        return self._batches.pop(handle)[1]

    def _done(self, handle, k, res):
        batch = self._batches[handle]
        batch[1][k] = res
        batch[2] -= 1

    @contextlib.contextmanager
    def in_background(self):
        """Keep queued builds and timings moving in a thread while the caller does other work.

        The caller must not use the pipeline meanwhile.  The thread starts no
        worker process (forking from it while the caller runs would be unsafe).
        """
        done = threading.Event()

        def loop():
            while not done.is_set():
                if not self._step(max_wait=0.05, start_workers=False):
                    done.wait(0.02)

        t = threading.Thread(target=loop, name="tvmlab-measure", daemon=True)
        t.start()
        try:
            yield self
        finally:
            done.set()
            t.join()

    def _step(self, max_wait=None, start_workers=True):
        # dispatch what can start, wait for something to end (at most max_wait s), collect; False: idle
        idle = self.builders.idle if start_workers else self.builders.idle_started
        while self._builds and idle():
            handle, k = self._builds.popleft()
            fn, job, timeout = self.builder.job_of(self._batches[handle][0][k])
            self._building[self.builders.submit(fn, job, timeout)] = (handle, k)
        now = time.monotonic()
        if self._timing is None and self._runs and now >= self._run_after:
            handle, k, b = self._runs.popleft()
            fn, job, timeout = self.runner.job_of(b)
            if self.quiet and self.runner.best_cost is not None:
                self.builders.pause()
            self._timing = (self.timer.submit(fn, job, timeout), handle, k, b)
        waits = [d for d in (self.builders.deadline(), self.timer.deadline()) if d is not None]
        if self._timing is None and self._runs:
            waits.append(max(0.0, self._run_after - now))
        conns = self.builders.waitables() + self.timer.waitables()
        if max_wait is not None:
            waits.append(max_wait)
        if not conns and not waits:
            return False
        if conns:
            wait(conns, timeout=min(waits) + 0.01 if waits else None)
        else:
            time.sleep(min(waits))
        for ticket, jr in self.builders.collect():
            handle, k = self._building.pop(ticket)
            b = self.builder.result_of(jr)
            if b.error is not None:
                self._done(handle, k, self.runner.result_of(b, None))
            else:
                self._runs.append((handle, k, b))
        for ticket, jr in self.timer.collect():
            _, handle, k, b = self._timing
            self._timing = None
            self.builders.resume()
            self._done(handle, k, self.runner.result_of(b, jr))
            self._run_after = time.monotonic() + self.runner.cooldown_interval
        return True

    def close(self):
        """Drop every batch not yet returned (their libraries are deleted); stop the builder workers."""
        self.builders.resume()
        pids = self.builders.pids()
        self.builders.close()
        # libraries written by builds that were dropped (collected or not, or cut off mid-export)
        names = tuple(f"tvmlab_tune_{pid}_" for pid in pids)
        for name in os.listdir(self.builder.tmp_dir) if names and os.path.isdir(self.builder.tmp_dir) else ():
            path = os.path.join(self.builder.tmp_dir, name)
            if name.startswith(names) and path != self.runner.ref and \
                    (self._timing is None or path != self._timing[3].filename):
                os.unlink(path)
        if self._timing is not None:         # a runner worker busy with a dropped job is replaced
            self.timer.close()
            self.runner._exec = None
        for _, _, b in list(self._runs) + ([self._timing[1:]] if self._timing else []):
            if b.filename and os.path.exists(b.filename):
                os.unlink(b.filename)
        self._builds.clear()
        self._runs.clear()
        self._batches.clear()
        self._building.clear()
        self._timing = None


def create_measure_batch(task, option):
    """``measure_batch(inputs) -> results`` for ``task``; ``.n_parallel`` is how many to ask for at once.

    ``.pipeline`` is a MeasurePipeline when the builder and runner are local
    (the tuner then keeps several batches in flight), else None.
    """
    builder, runner = option["builder"], option["runner"]
    builder.set_task(task)
    runner.set_task(task, builder)

    def measure_batch(measure_inputs):
        return runner.run(measure_inputs, builder.build(measure_inputs))

    measure_batch.n_parallel = max(builder.n_parallel or 1, runner.n_parallel or 1)
    measure_batch.pipeline = None
    # only when neither side changes how it builds or runs (a subclass overriding build or run is used as is)
    if isinstance(builder, LocalBuilder) and isinstance(runner, LocalRunner) and \
            all(getattr(type(builder), m) is getattr(LocalBuilder, m) for m in ("build", "job_of", "result_of")) \
            and all(getattr(type(runner), m) is getattr(LocalRunner, m)
                    for m in ("run", "job_of", "result_of", "_run_jobs", "_executor")):
        # compiles on the CPU do not disturb a GPU's timings: the builders keep going while one is timed
        gpu = getattr(getattr(task, "target", None), "kind", None) == "cuda"
        measure_batch.pipeline = MeasurePipeline(builder, runner, quiet=not gpu)
    return measure_batch
