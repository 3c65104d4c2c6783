"""The live benchmark in its own process, so measuring never competes with the notebook's GIL.

``ProcessBenchmarker`` has the interface of ``bench.Benchmarker`` (``records``,
``pending``, ``current``, ``peak``, ``wait``, ``workload``) but is given trace
*steps*, not built modules: a worker process (``python -m
tvmlab.widgets.bench_worker``) replays the steps on the same tensors, lowers,
builds, checks against numpy and times, then sends the record back.  A newer
step cancels older work: queued steps are dropped and a worker busy with an
older step is killed (and restarted for the next one), so a user moving
quickly through the trace never waits for measurements of states already
left behind.  When its queue is empty the worker finds the FMA peak and the
memory bandwidth (the roofline's roofs: kept per machine by ``tvmlab.bench.machine``, measured
when nothing is kept or when asked again), never while a kernel is timed.

Messages are pickles on the worker's stdin/stdout (its own prints go to
stderr, so they cannot corrupt the stream).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time

from ..bench.machine import Roofs
from .bench import _LIVE, BenchmarkerBase, failed_record

IDLE_EXIT_S = 120        # a worker with nothing to do for this long exits; the next step restarts it


class ProcessBenchmarker(BenchmarkerBase):
    """Measure steps of the trace in a worker process; see the module docstring."""

    def __init__(self, workload, on_update=None):
        super().__init__(workload, on_update)
        self._remeasure = False    # the next idle moment measures the roofs again
        self.cancelled = 0         # steps dropped or interrupted because a newer one arrived
        self.restarts = 0
        self._queue = []           # [(key, label, steps, target)]
        self._job = None
        self._proc = None
        self._cv = threading.Condition()
        self._thread = None
        self._closing = False
        self._busy = 0
        _LIVE.add(self)

    # ------------------------------------------------------------ API
    def submit_steps(self, key, label, steps, targets, cancel_older=True):
        """Queue step ``key`` (its ``steps``) on ``targets``; with ``cancel_older``, drop or
        interrupt work on other steps."""
        with self._cv:
            if cancel_older:
                keep = [j for j in self._queue if j[0] == key]
                self.cancelled += len(self._queue) - len(keep)
                self._queue = keep
                if self._job is not None and self._job[0] != key and self._proc is not None:
                    self._kill()
            for t in targets:
                if (key, t) in self.records or any(j[0] == key and j[3] == t for j in self._queue) \
                        or (self._job is not None and self._job[0] == key and self._job[3] == t):
                    continue
                self._queue.append((key, label, [dict(s) for s in steps], t))
            self._cv.notify_all()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._feed, name="tvmlab-benchmark-feeder",
                                            daemon=True)
            self._thread.start()

    def submit(self, key, label, modules):
        """Compatibility with Benchmarker: only error messages can be recorded this way."""
        for t, m in modules.items():
            if isinstance(m, str):
                self.records[(key, t)] = failed_record(t, m)

    @property
    def pending(self):
        return len(self._queue) + (self._job is not None)

    def remeasure(self):
        """Measure the machine's roofs again in the worker, once nothing else is queued."""
        with self._cv:
            self._remeasure = True
            self._cv.notify_all()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._feed, name="tvmlab-benchmark-feeder",
                                            daemon=True)
            self._thread.start()

    def wait(self, timeout=300):
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._queue or self._job is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, 0.5))
        return True

    def close(self, timeout=5.0):
        with self._cv:
            self._closing = True
            self._queue = []
            self._cv.notify_all()
        p = self._proc
        if p is not None:
            try:
                p.stdin.close()
                p.wait(timeout)
            except Exception:
                p.kill()
        t = self._thread
        if t is not None and t.is_alive() and t is not threading.current_thread():
            t.join(timeout)

    # ------------------------------------------------------------ worker handling
    def _stop_worker(self):
        p, self._proc = self._proc, None
        try:
            p.stdin.close()                        # EOF: the worker returns from main()
            p.wait(5)
        except Exception:
            p.kill()

    def _kill(self):
        p = self._proc
        self._proc = None
        if p is not None:
            try:
                p.kill()
            except OSError:
                pass

    def _start(self):
        env = dict(os.environ)
        p = subprocess.Popen([sys.executable, "-m", "tvmlab.widgets.bench_worker"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        wl = self.workload
        pickle.dump(("init", wl.outputs, wl.args, dict(wl.env)), p.stdin)
        p.stdin.flush()
        self._proc = p
        return p

    def _ask(self, msg):
        """Send ``msg`` to the worker and read its answer; None if the worker was killed."""
        with self._cv:
            p = self._proc
            if p is None or p.poll() is not None:
                if p is not None:
                    self.restarts += 1
                p = self._start()
        try:
            pickle.dump(msg, p.stdin)
            p.stdin.flush()
            return pickle.load(p.stdout)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError):
            with self._cv:
                if self._proc is p:
                    self._proc = None
            return None

    def _feed(self):
        idle_since = time.monotonic()
        while True:
            with self._cv:
                while not self._queue and not self._closing:
                    if self.peak is None or self._remeasure:
                        break
                    self._cv.wait(0.5)
                    if self._proc is not None and time.monotonic() - idle_since > IDLE_EXIT_S:
                        self._stop_worker()        # an idle worker gives its memory back
                idle_since = time.monotonic()
                if self._closing:
                    return
                job = self._queue.pop(0) if self._queue else None
                self._job = job
            if job is None:                       # idle: the roofs, once (kept per machine)
                again, self._remeasure = self._remeasure, False
                self.current = "the machine's FMA peak and memory bandwidth"
                self._notify()
                ans = self._ask(("remeasure",) if again else ("peak",))
                self.current = None
                if ans is not None:
                    self._take_roofs(None if ans[1] is None else Roofs(**ans[1]))
                self._notify()
                continue
            key, label, steps, target = job
            self.current = f"step {label} on {target}"
            self._notify()
            ans = self._ask(("job", key, steps, target))
            with self._cv:
                if ans is None:
                    self.cancelled += 1
                else:
                    self.records[(key, target)] = ans[3]
                self._job = None
                self.current = None
                self._cv.notify_all()
            self._notify()


# ---------------------------------------------------------------- the worker process
def _measure_steps(ops, args, steps, target, workload):
    import tvmlab
    from ..errors import TVMLabError
    from ..schedule.trace import Step, Trace
    from .bench import measure
    from .session import FUNC_NAME
    try:
        t0 = time.perf_counter()
        sch = Trace(None, [Step(s) for s in steps]).replay(ops)
        lowered = tvmlab.lower(sch, list(args), name=FUNC_NAME)
        mod = tvmlab.build(lowered, target=target, name=FUNC_NAME)
        build_ms = (time.perf_counter() - t0) * 1e3
        rec = measure(mod, target, workload)
        rec["build_ms"] = build_ms
        rec["worker_pid"] = os.getpid()
        return rec
    except TVMLabError as e:
        return failed_record(target, f"build failed: {e}")
    except Exception as e:     # a failing step is a record, never a dead worker
        return failed_record(target, f"{type(e).__name__}: {e}")


def main():
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # a notebook interrupt is for the kernel; EOF ends us
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                      # stray prints go to stderr, never into the pickle stream
    inp = sys.stdin.buffer
    from .bench import Workload, machine_roofs
    try:
        _, ops, args, env = pickle.load(inp)
    except EOFError:
        return
    workload = Workload(args, ops, env)
    while True:
        try:
            msg = pickle.load(inp)
        except EOFError:
            return
        if msg[0] == "job":
            _, key, steps, target = msg
            ans = ("record", key, target, _measure_steps(ops, args, steps, target, workload))
        elif msg[0] in ("peak", "remeasure"):
            r = machine_roofs(remeasure=msg[0] == "remeasure")
            ans = ("peak", None if r is None else r.as_dict())
        else:
            ans = ("error", f"unknown message {msg[0]!r}")
        pickle.dump(ans, out)
        out.flush()


if __name__ == "__main__":
    main()
