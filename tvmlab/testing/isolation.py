"""Run checks in worker processes that may crash or hang without taking the caller down.

Compiled code can kill its process (a segmentation fault, an LLVM abort) and a
compiler bug can hang in native code where no Python signal can stop it.  The
fuzzer therefore runs programs in spawned workers: each result comes back as
``("ok", value)``, ``("crash", exitcode)`` or ``("hang", seconds)``.
"""
from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import wait

STARTUP_TIMEOUT = 120.0     # seconds a fresh worker may take to start before it counts as hung


def _serve(conn, fn):
    # "started" once the item is in hand, so the hang clock leaves interpreter start-up out
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        conn.send(("started", None))
        conn.send(("done", fn(item)))


class _Worker:
    def __init__(self, ctx, fn):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
        self.proc.start()
        child.close()
        self.item = None
        self.started = 0.0
        self.running = False

    def submit(self, item):
        self.item, self.started, self.running = item, time.monotonic(), False
        self.conn.send(item)

    def overdue(self, timeout):
        limit = timeout if self.running else max(timeout, STARTUP_TIMEOUT)
        return time.monotonic() - self.started > limit

    def kill(self):
        self.proc.kill()
        self.proc.join()
        self.conn.close()

    def stop(self):
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.kill()


def imap(fn, items, jobs=1, timeout=60.0):
    """Yield ``(item, status, value)`` for each item, computed by ``fn`` in ``jobs`` workers.

    ``fn`` must be a module-level function.  Results come in completion order.
    A worker that dies gives ``("crash", exitcode)``; one that runs past
    ``timeout`` seconds on an item (counted from when it has the item, so a
    slow start does not count) is killed and gives ``("hang", timeout)``;
    either way a fresh worker takes its place.
    """
    ctx = multiprocessing.get_context("spawn")
    pending = list(items)[::-1]
    workers = [_Worker(ctx, fn) for _ in range(max(1, min(jobs, len(pending))))]
    try:
        while pending or any(w.item is not None for w in workers):
            for w in workers:
                if w.item is None and pending:
                    w.submit(pending.pop())
            busy = [w for w in workers if w.item is not None]
            ready = wait([w.conn for w in busy], timeout=0.5)
            for k, w in enumerate(workers):
                if w.item is None:
                    continue
                item = w.item
                if w.conn in ready:
                    try:
                        tag, value = w.conn.recv()
                    except (EOFError, OSError):
                        w.proc.join(5)
                        code = w.proc.exitcode
                        w.kill()
                        workers[k] = _Worker(ctx, fn)
                        yield item, "crash", code
                        continue
                    if tag == "started":
                        w.started, w.running = time.monotonic(), True
                        continue
                    w.item = None
                    yield item, "ok", value
                elif w.overdue(timeout):
                    w.kill()
                    workers[k] = _Worker(ctx, fn)
                    yield item, "hang", timeout
    finally:
        for w in workers:
            w.stop()


def call(fn, arg, timeout=60.0):
    """``fn(arg)`` in a fresh worker: ``("ok", value)``, ``("crash", code)`` or ``("hang", s)``."""
    for _, status, value in imap(fn, [arg], 1, timeout):
        return status, value
    raise RuntimeError("no result")  # pragma: no cover - imap yields once per item
