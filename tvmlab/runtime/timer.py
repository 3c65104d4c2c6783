"""time_evaluator: time a compiled function the way TVM does.

The function is called once to warm up (first-call effects are discarded),
then ``repeat`` times ``number`` calls are timed; each repeat reports the mean
seconds per call.  ``min_repeat_ms`` raises ``number`` until one repeat lasts at
least that long, so very short kernels are not measured at timer resolution.
Arguments are checked once, before timing, so the timing loop only measures
the native call.  A device that can time itself (a GPU's events, see
``Device.time``) does: the ``number`` launches of a repeat queue up while the
first runs, so a short kernel is not charged for the host's launch and wait costs.
"""
from __future__ import annotations

import math
import statistics

from ..errors import RuntimeArgError


class BenchmarkResult:
    """Per-repeat mean seconds per call, with summary statistics."""
    __slots__ = ("results",)

    def __init__(self, results):
        self.results = list(results)

    @property
    def mean(self):
        return statistics.fmean(self.results)

    @property
    def median(self):
        return statistics.median(self.results)

    @property
    def min(self):
        return min(self.results)

    @property
    def max(self):
        return max(self.results)

    @property
    def std(self):
        return statistics.pstdev(self.results) if len(self.results) > 1 else 0.0

    def __repr__(self):
        head = ("Execution time summary:\n"
                f"{'mean (ms)':^12} {'median (ms)':^12} {'max (ms)':^12} {'min (ms)':^12} {'std (ms)':^12}\n")
        vals = (self.mean, self.median, self.max, self.min, self.std)
        return head + " ".join(f"{v * 1e3:^12.4f}" for v in vals) + "\n"


def make_time_evaluator(prepare, dev, number=10, repeat=1, min_repeat_ms=0, name="function"):
    """Return ``evaluator(*args) -> BenchmarkResult``.

    ``prepare(*args)`` checks the arguments once and returns a zero-argument
    callable that performs one native call.
    """
    for what, v, lo in (("number", number, 1), ("repeat", repeat, 1), ("min_repeat_ms", min_repeat_ms, 0)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < lo:
            raise RuntimeArgError(f"time_evaluator({name!r}): {what} must be a number >= {lo}, got {v!r}")
    number, repeat = int(number), int(repeat)

    def evaluator(*args):
        call = prepare(*args)
        call()
        dev.sync()
        n = number
        results = []
        for _ in range(repeat):
            while True:
                elapsed = dev.time(lambda: [call() for _ in range(n)])
                if elapsed * 1e3 >= min_repeat_ms:
                    break
                per_call = max(elapsed / n, 1e-9)
                n = max(int(math.ceil(min_repeat_ms / 1e3 / per_call * 1.618)), int(n * 1.618) + 1)
            results.append(elapsed / n)
        return BenchmarkResult(results)

    return evaluator
