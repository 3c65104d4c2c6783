"""Run one call in a child forked from this process, and survive whatever the call does.

A measurement worker that stays alive for a whole tune pays for its
interpreter start once; forking it per candidate gives every candidate a clean
process (its own OpenMP thread pool, nothing left behind by the last candidate)
for a few milliseconds, and a child that segfaults, hangs or runs too long is
simply killed: no interpreter has to be started again.  The forking process
must never run parallel code itself (libgomp's threads do not survive a fork).
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import time

from .executor import JobResult, _call


def call_forked(fn, job, timeout):
    """``JobResult`` of ``fn(*job)`` run in a forked child, within ``timeout`` seconds.

    Status "crash" when the child dies (``value`` is its exit code, or minus
    the signal number that ended it, as ``WorkerPool`` reports); "timeout" when
    it is killed after ``timeout`` seconds.
    """
    r, w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:                      # the child: never returns
        code = 0
        try:
            os.close(r)
            faulthandler.disable()      # a crash is this call's result, not a stack dump in the output
            res = _call(fn, job)
            try:
                data = pickle.dumps(res)
            except Exception as e:  # noqa: BLE001 - an unpicklable value
                data = pickle.dumps(JobResult("error", None, f"result could not be sent back: {e}", res.elapsed))
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks, timed_out = [], False
    try:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        os.close(r)
        if timed_out:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    elapsed = time.monotonic() - t0
    if timed_out:
        return JobResult("timeout", None, f"no result after {timeout:g} s", elapsed)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return JobResult("crash", -sig, f"the process died (signal {signal.Signals(sig).name})", elapsed)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - the child exited before it finished writing
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        return JobResult("crash", code, f"the process died (exit code {code})", elapsed)
