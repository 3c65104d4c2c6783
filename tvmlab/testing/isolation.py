"""Run checks in worker processes that may crash or hang without taking the caller down.

Compiled code can kill its process (a segmentation fault, an LLVM abort) and a
compiler bug can hang in native code where no Python signal can stop it.  The
fuzzer therefore runs programs in spawned workers (``tvmlab.tuning``'s
``WorkerPool``, the pool tuning measures with): each result comes back as
``("ok", value)``, ``("crash", exitcode)`` or ``("hang", seconds)``.
"""
from __future__ import annotations


def _outcome(jr, timeout):
    if jr.status == "ok":
        return "ok", jr.value
    if jr.status == "timeout":
        return "hang", timeout
    if jr.status == "crash":
        return "crash", jr.value
    return "crash", 1         # fn raised: an uncaught exception ends a plain worker with exit code 1


def imap(fn, items, jobs=1, timeout=60.0):
    """Yield ``(item, status, value)`` for each item, computed by ``fn`` in ``jobs`` workers.

    ``fn`` must be a module-level function.  Results come in completion order.
    A worker that dies gives ``("crash", exitcode)``; one that runs past
    ``timeout`` seconds on an item (counted from when it has the item, so a
    slow start does not count) is killed and gives ``("hang", timeout)``;
    either way a fresh worker takes its place.
    """
    from ..tuning import executor
    pending = list(items)[::-1]
    pool = executor.WorkerPool(max(1, min(jobs, len(pending))), method="spawn")
    where = {}
    try:
        while pending or where:
            while pending and pool.idle():
                item = pending.pop()
                where[pool.submit(fn, (item,), timeout)] = item
            for ticket, jr in pool.collect(wait_s=0.5):
                yield (where.pop(ticket),) + _outcome(jr, timeout)
    finally:
        pool.close()


def call(fn, arg, timeout=60.0):
    """``fn(arg)`` in a fresh worker: ``("ok", value)``, ``("crash", code)`` or ``("hang", s)``."""
    for _, status, value in imap(fn, [arg], 1, timeout):
        return status, value
    raise RuntimeError("no result")  # pragma: no cover - imap yields once per item
