"""Executors: run ``fn(*job)`` for many jobs somewhere else, one result per job, in job order.

Tuning builds and times thousands of candidates, and a candidate may segfault
or spin forever.  An executor runs each job away from the caller and turns
every outcome into a ``JobResult``: "ok" (with the value), "error" (``fn``
raised; the message is its traceback), "timeout" (the job ran past its limit
and its worker was killed) or "crash" (the worker died, e.g. a segfault).
One bad job never stops the others.

``LocalExecutor`` uses worker processes on this machine.  With
``method="fork"`` (the default) workers are forked for each ``run`` and
inherit ``fn``, so functions defined in a notebook work without pickling;
with ``method="spawn"`` workers are fresh interpreters (``python -m
tvmlab.tuning.worker``, so a script without a ``__main__`` guard is not run
again) kept across runs (``fn`` must be importable).  Use "spawn" to *run* compiled code: libgomp's
thread pool does not survive a fork, so parallel code in a child forked from a
process that already ran parallel code hangs.

``WorkerPool`` is the worker pool underneath (``LocalExecutor`` and the
fuzzer's ``testing.isolation`` run on it): persistent workers with jobs in
flight, for a caller that builds and times at once.

``DaskExecutor`` submits jobs to a ``distributed`` cluster, so measurement
scales over many machines.
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from ..errors import TVMLabError

STATUSES = ("ok", "error", "timeout", "crash")
STARTUP_TIMEOUT = 120       # seconds a fresh worker interpreter may take to start


class ExecutorError(TVMLabError, ValueError):
    """An executor was given bad arguments or cannot reach its workers."""


@dataclass
class JobResult:
    """The outcome of one job: ``status`` in STATUSES, ``value`` when "ok", ``message`` otherwise."""
    status: str
    value: Any = None
    message: str = ""
    elapsed: float = 0.0

    @property
    def ok(self):
        return self.status == "ok"


def _call(fn, job):
    t0 = time.perf_counter()
    try:
        return JobResult("ok", fn(*job), "", time.perf_counter() - t0)
    except BaseException as e:  # noqa: BLE001 - every failure of user code becomes a record
        msg = "".join(traceback.format_exception_only(type(e), e)).strip()
        tb = traceback.format_exc(limit=-8)
        return JobResult("error", None, f"{msg}\n{tb}", time.perf_counter() - t0)


def _serve(conn, fn, greet=False):
    # a worker: receive a job (or (fn, job) when fn is None), answer a JobResult; None stops it
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C in a notebook stops the parent only
    try:
        # a process group of its own, so killing the worker also ends what a job started (the linker
        # writing a candidate's library), which would otherwise outlive it and leave its file behind
        os.setpgid(0, 0)
    except OSError:
        pass
    # a crash is reported to the parent as this job's result; a fault handler inherited from the
    # parent (pytest, a notebook) would only print the dying worker's stack into its output
    faulthandler.disable()
    if greet:
        conn.send("ready")
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        except Exception as e:  # noqa: BLE001 - a job this interpreter cannot unpickle
            conn.send(JobResult("error", None, f"the worker could not load the job: {type(e).__name__}: {e}"))
            continue
        if item is None:
            return
        f, job = (fn, item) if fn is not None else item
        res = _call(f, job)
        try:
            conn.send(res)
        except Exception as e:  # noqa: BLE001 - an unpicklable value
            conn.send(JobResult("error", None, f"result could not be sent back: {e}", res.elapsed))


class Executor:
    """Runs jobs; subclasses implement ``run``."""

    def run(self, fn, jobs, timeout):
        """``[JobResult]`` for ``fn(*job)`` of each job, in job order; ``timeout`` seconds per job."""
        raise NotImplementedError

    def close(self):
        """Release workers (also on ``with`` exit)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_jobs(jobs, timeout):
    jobs = list(jobs)
    for k, j in enumerate(jobs):
        if not isinstance(j, tuple):
            raise ExecutorError(f"job {k} must be a tuple of fn's arguments, got {type(j).__name__}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ExecutorError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    return jobs


class _Worker:
    def __init__(self, ctx, fn):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
        self.proc.start()
        child.close()
        self.index, self.started = None, 0.0

    def submit(self, index, msg):
        self.index, self.started = index, time.monotonic()
        self.conn.send(msg)

    def kill(self):
        if self.proc.is_alive():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)      # the worker's group (see _serve)
            except OSError:
                pass                                          # not yet its own group
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def stop(self):
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(2)
        self.kill()


class _Pipes:
    """One end of a pair of pipes to a spawned worker: send, recv and fileno (for ``wait``)."""

    def __init__(self, out_fd, in_fd):
        from multiprocessing.connection import Connection
        self._out = Connection(out_fd, readable=False)
        self._in = Connection(in_fd, writable=False)

    def send(self, obj):
        self._out.send(obj)

    def recv(self):
        return self._in.recv()

    def fileno(self):
        return self._in.fileno()

    def close(self):
        self._out.close()
        self._in.close()


class _SpawnedProcess:
    def __init__(self, popen):
        self.popen = popen
        self.pid = popen.pid

    def is_alive(self):
        return self.popen.poll() is None

    def kill(self):
        self.popen.kill()

    def join(self, timeout=None):
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    @property
    def exitcode(self):
        return self.popen.poll()


class _SpawnWorker(_Worker):
    def __init__(self):
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # the caller's import path, so functions of its modules can be unpickled there
        paths = [root] + [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if os.path.isdir(p)))
        popen = subprocess.Popen([sys.executable, "-m", "tvmlab.tuning.worker", str(child_in), str(child_out)],
                                 pass_fds=(child_in, child_out), env=env, stdin=subprocess.DEVNULL)
        os.close(child_in)
        os.close(child_out)
        self.proc = _SpawnedProcess(popen)
        self.conn = _Pipes(to_child, from_child)
        self.index, self.started = None, 0.0
        self._ready = False

    def submit(self, index, msg):
        # a job's time starts once the interpreter has started
        if not self._ready:
            if not wait([self.conn], timeout=STARTUP_TIMEOUT) or self.conn.recv() != "ready":
                raise ExecutorError(f"a worker interpreter did not start within {STARTUP_TIMEOUT} s")
            self._ready = True
        super().submit(index, msg)


class LocalExecutor(Executor):
    """Worker processes on this machine (see the module docstring).

    ``n_parallel`` workers (default: the CPUs this process may use) run jobs at
    once; a worker that crashes or times out is replaced.
    """

    def __init__(self, n_parallel=None, method="fork"):
        if n_parallel is None:
            n_parallel = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if isinstance(n_parallel, bool) or not isinstance(n_parallel, int) or n_parallel < 1:
            raise ExecutorError(f"n_parallel must be an int >= 1, got {n_parallel!r}")
        if method not in ("fork", "spawn"):
            raise ExecutorError(f"method must be 'fork' or 'spawn', got {method!r}")
        self.n_parallel, self.method = n_parallel, method
        self._pool = None        # spawn workers, kept across runs

    def run(self, fn, jobs, timeout):
        jobs = check_jobs(jobs, timeout)
        if not callable(fn):
            raise ExecutorError(f"fn must be callable, got {fn!r}")
        if not jobs:
            return []
        if self.method == "fork":     # workers forked for this run inherit fn: no pickling of it
            pool = WorkerPool(min(self.n_parallel, len(jobs)), method="fork", fn=fn)
            try:
                return pool.run(fn, jobs, timeout)
            finally:
                pool.close()
        if self._pool is None:
            self._pool = WorkerPool(self.n_parallel, method="spawn")
        return self._pool.run(fn, jobs, timeout)

    def close(self):
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self):
        return f"LocalExecutor(n_parallel={self.n_parallel}, method={self.method!r})"


class WorkerPool:
    """Persistent workers that take one job each, for a caller that keeps jobs in flight while it works.

    ``submit(fn, job, timeout)`` hands ``fn(*job)`` to an idle worker and
    returns a ticket; ``collect(wait_s)`` returns the ``(ticket, JobResult)``
    pairs finished since (waiting up to ``wait_s`` seconds for one), with the
    same statuses as ``LocalExecutor.run`` (a "crash" has the exit code as its
    value, minus the signal number when a signal ended the worker); a worker
    that crashed or timed out is replaced on its next job.  ``fn`` and the job travel pickled, so ``fn``
    must be importable, unless it is given as ``fn=`` to a "fork" pool (its
    workers inherit it and run only it).  ``method="fork"`` forks workers from
    this process on first use (they see its modules as they were then);
    "spawn" starts fresh interpreters.  ``waitables()`` and ``deadline()`` let a caller wait on
    several pools at once with ``multiprocessing.connection.wait``.
    ``pause()`` stops the busy workers (SIGSTOP) until ``resume()``; time paused
    does not count against a job's timeout.
    """

    def __init__(self, n_parallel, method="fork", fn=None):
        if isinstance(n_parallel, bool) or not isinstance(n_parallel, int) or n_parallel < 1:
            raise ExecutorError(f"n_parallel must be an int >= 1, got {n_parallel!r}")
        if method not in ("fork", "spawn"):
            raise ExecutorError(f"method must be 'fork' or 'spawn', got {method!r}")
        if fn is not None and method != "fork":
            raise ExecutorError("only forked workers can inherit fn")
        self.n_parallel, self.method, self._fn = n_parallel, method, fn
        self._workers = [None] * n_parallel
        self._limits = [0.0] * n_parallel
        self._done = []
        self._ticket = 0
        self._paused = False
        self._started = []

    def _new(self):
        w = _Worker(multiprocessing.get_context("fork"), self._fn) if self.method == "fork" else _SpawnWorker()
        w.stopped = None
        self._started.append(w.proc.pid)
        return w

    def _signal(self, w, sig):
        try:
            os.kill(w.proc.pid, sig)
        except (ProcessLookupError, TypeError):
            pass

    def pause(self):
        """Stop every busy worker (and any job submitted until ``resume``) where it is."""
        self._paused = True
        now = time.monotonic()
        for w in self._workers:
            if w is not None and w.index is not None and w.stopped is None:
                self._signal(w, signal.SIGSTOP)
                w.stopped = now

    def resume(self):
        """Let the paused workers go on; their jobs' clocks skip the pause."""
        self._paused = False
        now = time.monotonic()
        for w in self._workers:
            if w is not None and w.stopped is not None:
                self._signal(w, signal.SIGCONT)
                w.started += now - w.stopped
                w.stopped = None

    def idle(self):
        """How many jobs can be submitted now."""
        return sum(1 for w in self._workers if w is None or w.index is None)

    def busy(self):
        return self.n_parallel - self.idle()

    def pids(self):
        """Process ids of every worker started so far, those since replaced (a timed-out job's) included:
        files a worker names by its pid can be found after it is gone."""
        return list(self._started)

    def idle_started(self):
        """How many jobs can be submitted now without starting a worker."""
        return sum(1 for w in self._workers if w is not None and w.index is None)

    def start(self):
        """Start every worker now (a spawned interpreter takes a while); returns self."""
        for slot, w in enumerate(self._workers):
            if w is None:
                w = self._workers[slot] = self._new()
            if isinstance(w, _SpawnWorker) and not w._ready:
                if not wait([w.conn], timeout=STARTUP_TIMEOUT) or w.conn.recv() != "ready":
                    raise ExecutorError(f"a worker interpreter did not start within {STARTUP_TIMEOUT} s")
                w._ready = True
        return self

    def submit(self, fn, job, timeout):
        """Ticket of ``fn(*job)`` started on an idle worker; ExecutorError when none is idle."""
        if not isinstance(job, tuple):
            raise ExecutorError(f"a job must be a tuple of fn's arguments, got {type(job).__name__}")
        check_jobs([], timeout)
        slot = next((i for i, w in enumerate(self._workers) if w is None or w.index is None), None)
        if slot is None:
            raise ExecutorError(f"all {self.n_parallel} workers are busy; collect() results first")
        self._ticket += 1
        ticket = self._ticket
        if self._workers[slot] is None:
            self._workers[slot] = self._new()
        w = self._workers[slot]
        if self._fn is not None and fn is not self._fn:
            raise ExecutorError(f"this pool's workers run {self._fn!r}, not {fn!r}")
        try:
            w.submit(ticket, job if self._fn is not None else (fn, job))
        except Exception as e:  # noqa: BLE001 - unpicklable fn or job, a worker that died
            w.index = None
            self._done.append((ticket, JobResult("error", None, f"the job could not be sent: {e}")))
            if not w.proc.is_alive():
                w.kill()
                self._workers[slot] = None
        else:
            if self._paused:
                self._signal(w, signal.SIGSTOP)
                w.stopped = time.monotonic()
        self._limits[slot] = timeout
        return ticket

    def waitables(self):
        return [w.conn for w in self._workers if w is not None and w.index is not None]

    def deadline(self):
        """Seconds until the first busy job runs out of time (None when none is busy)."""
        now = time.monotonic()
        left = [self._limits[i] - (now - w.started) for i, w in enumerate(self._workers)
                if w is not None and w.index is not None and w.stopped is None]
        return max(0.0, min(left)) if left else None

    def collect(self, wait_s=0.0):
        """``[(ticket, JobResult)]`` of the jobs that ended, waiting up to ``wait_s`` for one."""
        busy = self.waitables()
        if busy and not self._done and wait_s > 0:
            left = self.deadline()
            wait(busy, timeout=wait_s if left is None else min(wait_s, left + 0.01))
        out, self._done = self._done, []
        ready = set(wait(busy, timeout=0)) if busy else set()
        for slot, w in enumerate(self._workers):
            if w is None or w.index is None:
                continue
            ticket, elapsed = w.index, time.monotonic() - w.started
            if w.conn in ready:
                try:
                    out.append((ticket, w.conn.recv()))
                    w.index = None
                    continue
                except (EOFError, OSError):
                    w.proc.join(5)
                    code = w.proc.exitcode
                    sig = f", signal {signal.Signals(-code).name}" if code and code < 0 else ""
                    out.append((ticket, JobResult("crash", code, f"worker died (exit code {code}{sig})", elapsed)))
            elif w.stopped is None and elapsed > self._limits[slot]:
                out.append((ticket, JobResult("timeout", None, f"no result after {self._limits[slot]:g} s",
                                              elapsed)))
            else:
                continue
            w.kill()
            self._workers[slot] = None
        return out

    def run(self, fn, jobs, timeout):
        """``LocalExecutor.run`` on these workers: ``[JobResult]`` in job order."""
        jobs = check_jobs(jobs, timeout)
        results, pending, where = [None] * len(jobs), list(range(len(jobs)))[::-1], {}
        try:
            while pending or where:
                while pending and self.idle():
                    k = pending.pop()
                    where[self.submit(fn, jobs[k], timeout)] = k
                for ticket, jr in self.collect(wait_s=timeout):
                    results[where.pop(ticket)] = jr
        except BaseException:
            self.close()          # a busy worker cannot be left with a job nobody collects
            raise
        return results

    def close(self):
        """Stop every worker (busy ones are killed)."""
        for slot, w in enumerate(self._workers):
            if w is not None:
                if w.index is not None:
                    w.kill()
                else:
                    w.stop()
            self._workers[slot] = None
        self._done = []
        self._paused = False

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self):
        return f"WorkerPool(n_parallel={self.n_parallel}, method={self.method!r}, busy={self.busy()})"


def _dask_call(fn, job):
    return _call(fn, job)


class DaskExecutor(Executor):
    """Jobs submitted to a Dask ``distributed`` cluster: a ``Client`` or a scheduler address.

    Each job runs ``fn(*job)`` on some worker (functions travel by cloudpickle);
    a job whose worker dies is a "crash", one past ``timeout`` a "timeout"
    (Dask cannot kill a running task: it is cancelled and its result ignored).
    """

    def __init__(self, client_or_address):
        try:
            import distributed
        except ImportError as e:  # pragma: no cover - the tune extra installs it
            raise ExecutorError("DaskExecutor needs the 'distributed' package (pip install tvmlab[tune])") from e
        if isinstance(client_or_address, distributed.Client):
            self.client, self._own = client_or_address, False
        elif isinstance(client_or_address, str) and client_or_address:
            try:
                self.client, self._own = distributed.Client(client_or_address, timeout=30), True
            except OSError as e:
                raise ExecutorError(f"DaskExecutor: cannot reach the scheduler at {client_or_address!r}: {e}") \
                    from None
        else:
            raise ExecutorError("DaskExecutor needs a distributed.Client or a scheduler address such as "
                                f"'tcp://10.0.0.1:8786', got {client_or_address!r}")

    def run(self, fn, jobs, timeout):
        import distributed
        jobs = check_jobs(jobs, timeout)
        # pure=False: the same job twice is measured twice, never served from the cache
        futures = [self.client.submit(_dask_call, fn, job, pure=False) for job in jobs]
        results = []
        for fut in futures:
            try:      # each job gets `timeout` seconds once the one before it is done
                results.append(fut.result(timeout=timeout))
            except (TimeoutError, distributed.TimeoutError):
                fut.cancel()
                results.append(JobResult("timeout", None, f"no result after {timeout:g} s", timeout))
            except distributed.KilledWorker as e:
                results.append(JobResult("crash", None, f"the worker died: {e}"))
            except Exception as e:  # noqa: BLE001 - a lost connection, a cancelled future
                results.append(JobResult("error", None, f"{type(e).__name__}: {e}"))
        return results

    def close(self):
        if self._own:
            self.client.close()

    def __repr__(self):
        return f"DaskExecutor({self.client.scheduler.address if self.client.scheduler else '?'})"
