"""Tuners that walk the space by index: ``GridSearchTuner`` (in order) and ``RandomTuner``."""
from __future__ import annotations

import numpy as np

from .tuner import Tuner, TunerError


class IndexBaseTuner(Tuner):
    """Configs from a range of indices (``range_idx=(lo, hi)``, inclusive) of the space."""

    def __init__(self, task, range_idx=None):
        super().__init__(task)
        n = len(self.space)
        if range_idx is None:
            range_idx = (0, n - 1)
        lo, hi = range_idx
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi < n):
            raise TunerError(f"range_idx must be (lo, hi) with 0 <= lo <= hi < {n}, got {range_idx!r}")
        self.range_idx = (lo, hi)
        self.range_length = hi - lo + 1
        self.visited = set()

    def has_next(self):
        return len(self.visited) < self.range_length


class GridSearchTuner(IndexBaseTuner):
    """Every config in index order."""

    def __init__(self, task, range_idx=None):
        super().__init__(task, range_idx)
        self.counter = 0

    def next_batch(self, batch_size):
        out = []
        while len(out) < batch_size and self.counter < self.range_length:
            index = self.range_idx[0] + self.counter
            self.counter += 1
            self.visited.add(index)
            out.append(self.space.get(index))
        return out


class RandomTuner(IndexBaseTuner):
    """Configs in random order, none twice (``seed`` makes the order repeatable)."""

    def __init__(self, task, range_idx=None, seed=None):
        super().__init__(task, range_idx)
        self.rng = np.random.default_rng(seed)

    def next_batch(self, batch_size):
        out = []
        lo = self.range_idx[0]
        while len(out) < batch_size and self.has_next():
            if len(self.visited) > self.range_length // 2:      # dense: draw from what is left
                left = [i for i in range(lo, lo + self.range_length) if i not in self.visited]
                index = int(self.rng.choice(left))
            else:
                index = int(lo + self.rng.integers(self.range_length))
                while index in self.visited:
                    index = int(lo + self.rng.integers(self.range_length))
            self.visited.add(index)
            out.append(self.space.get(index))
        return out
