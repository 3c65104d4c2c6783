"""Measuring states and recording them: builders, runners and TVM-style record lines.

The builders and runners are AutoTVM's (``tvmlab.autotvm.measure``) with the
auto-scheduler's defaults: a state is built in forked worker processes and
timed in a fresh interpreter (``LocalRunner``) or on a Dask cluster
(``DaskRunner``); a state that fails, crashes or hangs becomes a result with
TVM's error number and the search goes on.

A record is one JSON line in TVM's auto-scheduler layout::

    {"i": [[workload_key, target], state], "r": [[costs], error_no, all_cost, timestamp], "v": "v0.6"}

where ``state`` is tvmlab's (sketch, tile sizes, annotations), not TVM's
transform steps.  Lines are parsed as JSON only; a line that is not a
tvmlab record is skipped with a warning naming it.
"""
from __future__ import annotations

import json
import os
import warnings

from ..autotvm import measure as _m
from ..errors import TVMLabError

VERSION = "v0.6"
MeasureResult = _m.MeasureResult


class RecordError(TVMLabError, ValueError):
    """A records file cannot be used (missing, or holds no record of the task)."""


class MeasureInput:
    """A task and a state to measure (``config`` is the state, for AutoTVM's builder)."""

    __slots__ = ("task", "state")

    def __init__(self, task, state):
        self.task, self.state = task, state

    @property
    def config(self):
        return self.state

    @property
    def target(self):
        return self.task.target

    def __repr__(self):
        return f"MeasureInput({self.task.workload_key}, {self.state['sketch']})"


class LocalBuilder(_m.LocalBuilder):
    """Builds states in ``n_parallel`` forked worker processes (TVM's defaults: timeout 15 s)."""

    def __init__(self, timeout=15, n_parallel=None, build_func="default"):
        super().__init__(timeout, n_parallel, build_func)


class LocalRunner(_m.LocalRunner):
    """Times each build in a fresh worker interpreter (TVM's defaults: number=3, min_repeat_ms=100)."""

    def __init__(self, timeout=10, number=3, repeat=1, min_repeat_ms=100, cooldown_interval=0.0,
                 enable_cpu_cache_flush=False):
        super().__init__(timeout, number, repeat, min_repeat_ms, cooldown_interval, False,
                         enable_cpu_cache_flush)


class DaskRunner(_m.DaskRunner):
    """Times each build on a Dask ``distributed`` cluster (a Client or a scheduler address)."""

    def __init__(self, client_or_address, timeout=10, number=3, repeat=1, min_repeat_ms=100,
                 cooldown_interval=0.0, n_parallel=None):
        super().__init__(client_or_address, timeout, number, repeat, min_repeat_ms, cooldown_interval,
                         False, n_parallel)


def _cost(c):
    return c if isinstance(c, (int, float)) else str(c)


def encode(inp, res):
    """One record line (no newline)."""
    return json.dumps({"i": [[inp.task.workload_key, str(inp.task.target)], inp.state],
                       "r": [[_cost(c) for c in res.costs], int(res.error_no), float(res.all_cost),
                             float(res.timestamp)],
                       "v": VERSION})


def decode(line):
    """``(workload_key, target, state, MeasureResult)`` of a record line; RecordError if it is not one."""
    try:
        row = json.loads(line)
        (key, target), state = row["i"]
        costs, err, all_cost, ts = row["r"]
        if not isinstance(key, str) or not isinstance(target, str) or not isinstance(state, dict) or \
                not isinstance(err, int) or not isinstance(costs, list):
            raise TypeError("wrong field types")
        costs = tuple(float(c) if isinstance(c, (int, float)) else str(c) for c in costs)
        return key, target, state, MeasureResult(costs, err, float(all_cost), float(ts))
    except (ValueError, TypeError, KeyError) as e:
        raise RecordError(f"not an auto-scheduler record ({type(e).__name__}: {e})") from None


def load_record_lines(path):
    """``[(workload_key, target, state, result)]`` of a file; bad lines skipped with a warning."""
    if not os.path.exists(os.fspath(path)):
        raise RecordError(f"no records file at {os.fspath(path)!r}")
    out = []
    with open(os.fspath(path), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                out.append(decode(line))
            except RecordError as e:
                warnings.warn(f"{os.fspath(path)}:{n}: skipped: {e}", stacklevel=2)
    return out


def load_records(filename):
    """``[(MeasureInput, MeasureResult)]`` of the records whose workload is registered here."""
    from .task import SearchTask
    tasks, out = {}, []
    for key, target, state, res in load_record_lines(filename):
        if (key, target) not in tasks:
            try:
                tasks[key, target] = SearchTask(workload_key=key, target=target)
            except TVMLabError as e:
                warnings.warn(f"{os.fspath(filename)}: records of {key} skipped: {e}", stacklevel=2)
                tasks[key, target] = None
        if tasks[key, target] is not None:
            out.append((MeasureInput(tasks[key, target], state), res))
    return out


def save_records(filename, inputs, results):
    """Append records of ``inputs`` and ``results`` to ``filename``."""
    with open(os.fspath(filename), "a", encoding="utf-8") as f:
        for i, r in zip(inputs, results):
            f.write(encode(i, r) + "\n")


def mean_cost(res):
    """Mean seconds of a result, or None when it failed."""
    if res.error_no != 0 or not res.costs or not all(isinstance(c, float) for c in res.costs):
        return None
    return sum(res.costs) / len(res.costs)


class MeasureCallback:
    """Called after each measured batch: ``callback(policy, inputs, results)``."""

    def callback(self, policy, inputs, results):
        raise NotImplementedError

    def __call__(self, policy, inputs, results):
        self.callback(policy, inputs, results)


class RecordToFile(MeasureCallback):
    """Append one record line per trial to ``filename``."""

    def __init__(self, filename):
        if not isinstance(filename, (str, os.PathLike)):
            raise RecordError(f"RecordToFile needs a file path, got {filename!r}")
        self.filename = os.fspath(filename)

    def callback(self, policy, inputs, results):
        save_records(self.filename, inputs, results)
