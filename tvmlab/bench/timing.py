"""Side-by-side timing: a kernel and its reference, interleaved, best of many calls.

The machine is shared, so a single timing says little.  Each round times a
batch of single calls of the kernel, then of the reference; the fastest call of
each is the estimate of its uncontended speed, and both saw the same machine.

Between the two the process sleeps for ``settle`` seconds: thread pools (the
OpenMP runtime behind parallel loops, OpenBLAS behind numpy) keep their worker
threads spinning for a while after a call, and a pool still spinning would
take cores from the other side's timed calls.  OpenBLAS spins for about 2^28
cycles (~0.1 s): a 0.1 ms kernel timed within that window waits a whole
scheduler slice (~8 ms) on every call, so the pause is longer than that.
"""
from __future__ import annotations

import time


def _best_call(call, number):
    """The fastest of ``number`` timed calls."""
    best = float("inf")
    for _ in range(number):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


def side_by_side(kernel, reference, rounds=5, min_ms=40.0, settle=0.2):
    """(best seconds per call of ``kernel``, of ``reference``); both are zero-argument callables."""
    kernel()
    reference()
    time.sleep(settle)
    per = max(_best_call(kernel, 1), _best_call(reference, 1), 1e-7)
    number = max(5, int(min_ms / 1e3 / per))
    best_k = best_r = float("inf")
    for _ in range(rounds):
        best_k = min(best_k, _best_call(kernel, number))
        time.sleep(settle)
        best_r = min(best_r, _best_call(reference, number))
        time.sleep(settle)
    return best_k, best_r
