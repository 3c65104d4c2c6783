"""Tuning records in TVM's JSON-lines format.

One line per trial::

    {"input": ["llvm", "tutorial/matmul", [512, 512, 512, "float32"], {}],
     "config": {"index": 12, "code_hash": null, "entity": [["tile_y", "sp", [-1, 8]], ...]},
     "result": [[0.0123, 0.0121], 0, 1.52, 1700000000.0],
     "version": 0.2, "tvm_version": "0.9.dev0"}

Lines are parsed as JSON only, never evaluated or unpickled; a corrupt or
foreign line is skipped with a warning that names the file and line number.
"""
from __future__ import annotations

import json
import logging
import math
import os
import warnings

from ..errors import TVMLabError
from .measure import MeasureInput, MeasureResult
from .space import ConfigEntity, ConfigError
from .task.task import Task, deserialize_arg, serialize_arg

AUTOTVM_LOG_VERSION = 0.2
logger = logging.getLogger("autotvm")


class RecordWarning(UserWarning):
    """A record line was skipped."""


class RecordError(TVMLabError, ValueError):
    """A log cannot be read or written as asked (missing file, unsupported protocol)."""


def check_protocol(protocol):
    if protocol != "json":
        raise RecordError(f"protocol must be 'json' (pickled records are not supported), got {protocol!r}")


def _cost_json(c):
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        return float(c)
    return str(c)           # an error: TVM stores its text


def encode(inp, result, protocol="json"):
    """One record line (no newline) for a measurement."""
    check_protocol(protocol)
    row = {
        "input": [str(inp.target), inp.task.name, serialize_arg(list(inp.task.args)), {}],
        "config": inp.config.to_json_dict(),
        "result": [[_cost_json(c) for c in result.costs], int(result.error_no), float(result.all_cost),
                   float(result.timestamp)],
        "version": AUTOTVM_LOG_VERSION,
        "tvm_version": "tvmlab",
    }
    return json.dumps(row)


class _BadRecord(ValueError):
    pass


def _decode(row):
    try:
        d = json.loads(row)
    except ValueError as e:
        raise _BadRecord(f"not JSON ({e})") from None
    if not isinstance(d, dict):
        raise _BadRecord("not a JSON object")
    for key in ("input", "config", "result"):
        if key not in d:
            raise _BadRecord(f"no {key!r} field (not an AutoTVM record)")
    inp, res = d["input"], d["result"]
    if not (isinstance(inp, list) and len(inp) >= 3 and isinstance(inp[0], str) and isinstance(inp[1], str)
            and isinstance(inp[2], list)):
        raise _BadRecord("'input' must be [target, task name, [args], {kwargs}]")
    if not (isinstance(res, list) and len(res) == 4 and isinstance(res[0], list)
            and isinstance(res[1], int) and not isinstance(res[1], bool)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in res[2:])):
        raise _BadRecord("'result' must be [[costs], error_no, all_cost, timestamp]")
    if res[1] == 0 and not all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c)
                               for c in res[0]):
        raise _BadRecord("a successful result needs finite numeric costs")
    try:
        config = ConfigEntity.from_json_dict(d["config"])
    except ConfigError as e:
        raise _BadRecord(str(e)) from None
    task = Task(inp[1], deserialize_arg(inp[2]))
    target = inp[0]
    task.target = target
    result = MeasureResult(tuple(res[0]), res[1], float(res[2]), float(res[3]))
    return MeasureInput(target, task, config), result


def decode(row, protocol="json"):
    """``(MeasureInput, MeasureResult)`` of a record line, or None (with a warning) when it is not one."""
    check_protocol(protocol)
    try:
        return _decode(row)
    except _BadRecord as e:
        warnings.warn(f"skipped a record: {e}", RecordWarning, stacklevel=2)
        return None


def load_from_file(filename):
    """Yield ``(MeasureInput, MeasureResult)`` for each good line of a log; bad lines are skipped with a
    warning naming the line."""
    filename = os.fspath(filename)
    if not os.path.isfile(filename):
        raise RecordError(f"no tuning log {filename!r}")
    with open(filename, encoding="utf-8", errors="replace") as f:
        for lineno, row in enumerate(f, 1):
            if not row.strip():
                continue
            try:
                yield _decode(row)
            except _BadRecord as e:
                warnings.warn(f"{filename}:{lineno}: skipped a record line: {e}", RecordWarning, stacklevel=2)


def save_to_file(records, filename):
    """Write (MeasureInput, MeasureResult) pairs as a log."""
    with open(os.fspath(filename), "w", encoding="utf-8") as f:
        for inp, res in records:
            f.write(encode(inp, res) + "\n")


def _mean(res):
    return sum(res.costs) / len(res.costs)


def pick_best(in_file, out_file):
    """Keep only the best (error-free, lowest mean cost) record of each workload and target."""
    from .task.dispatcher import target_kind, workload_key
    best, order = {}, []
    for inp, res in load_from_file(in_file):
        if res.error_no != 0 or not res.costs:
            continue
        key = (target_kind(inp.target), workload_key(inp.task.workload))
        if key not in best:
            order.append(key)
        if key not in best or _mean(res) < _mean(best[key][1]):
            best[key] = (inp, res)
    save_to_file([best[k] for k in order], out_file)
    return [best[k] for k in order]


def split_workload(in_file, clean=True):
    """(Compat) Records grouped by workload: {workload: [(inp, res)]}."""
    groups = {}
    for inp, res in load_from_file(in_file):
        if clean and res.error_no != 0:
            continue
        groups.setdefault(inp.task.workload, []).append((inp, res))
    return groups
