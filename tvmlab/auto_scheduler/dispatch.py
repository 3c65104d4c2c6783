"""``ApplyHistoryBest(records)``: the best state per (workload, target) from records, as a context."""
from __future__ import annotations

import os
import warnings

from .measure import RecordError, load_record_lines, mean_cost


class ApplyHistoryBest:
    """Best records by workload key; ``with ApplyHistoryBest(log):`` makes it ``ApplyHistoryBest.current``.

    ``query(workload_key, target)`` gives the best state (None when there is
    none); ``apply(task)`` the ``(schedule, args)`` of it, or, where there is no
    record of the task for its target, the task's default schedule (plain
    ``te.create_schedule``; for a GPU, each kernel bound to blocks and threads),
    with a warning naming the workload.
    """

    current = None

    def __init__(self, records):
        self.best = {}
        paths = [records] if isinstance(records, (str, os.PathLike)) else list(records)
        for p in paths:
            if not isinstance(p, (str, os.PathLike)):
                raise RecordError(f"ApplyHistoryBest needs records file paths, got {p!r}")
            for key, target, state, res in load_record_lines(p):
                c = mean_cost(res)
                k = (key, target.split()[0])
                if c is not None and (k not in self.best or c < self.best[k][1]):
                    self.best[k] = (state, c)
        self._prev = None

    def query(self, workload_key, target="llvm"):
        hit = self.best.get((workload_key, str(target).split()[0]))
        return None if hit is None else hit[0]

    def apply(self, task):
        state = self.query(task.workload_key, task.target)
        if state is None:
            warnings.warn(f"ApplyHistoryBest: no record of {task.workload_key} for {task.target}; using the "
                          f"default schedule", stacklevel=2)
            return task.default_schedule()
        return task.instantiate(state)

    def __enter__(self):
        self._prev, ApplyHistoryBest.current = ApplyHistoryBest.current, self
        return self

    def __exit__(self, *exc):
        ApplyHistoryBest.current = self._prev
