"""Workloads: ``@register_workload`` functions, keyed by name and arguments as TVM keys them.

A workload key is ``json.dumps([func_name, *args])`` (tensors as
``["TENSOR", shape, dtype]``), so records name their computation in plain
data and a key from a record finds its function again by name.
"""
from __future__ import annotations

import json

from ..errors import TVMLabError

WORKLOAD_FUNC_REGISTRY = {}
DAG_REGISTRY = {}        # workload key of a ComputeDAG -> its tensors (this process only)


class WorkloadError(TVMLabError, ValueError):
    """An unknown workload, a malformed key, or a workload function that returns no tensors."""


def register_workload(func_name, f=None, override=False):
    """Register ``f(*args) -> [tensors]`` (inputs and outputs) under its name, or ``func_name``."""
    if callable(func_name):
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str) or not func_name:
        raise WorkloadError(f"register_workload needs a function or a name, got {func_name!r}")

    def register(fn):
        if func_name in WORKLOAD_FUNC_REGISTRY and not override and WORKLOAD_FUNC_REGISTRY[func_name] is not fn:
            old = WORKLOAD_FUNC_REGISTRY[func_name]
            if getattr(old, "__qualname__", None) != getattr(fn, "__qualname__", None):
                raise WorkloadError(f"workload {func_name!r} is already registered (pass override=True)")
        WORKLOAD_FUNC_REGISTRY[func_name] = fn
        return fn
    return register(f) if f is not None else register


def _serialize(args):
    from ..autotvm.task.task import serialize_arg
    try:
        return [serialize_arg(a) for a in args]
    except TVMLabError as e:
        raise WorkloadError(str(e)) from None


def make_workload_key(func, args):
    """The key of ``func`` (a registered function or its name) applied to ``args``."""
    name = func if isinstance(func, str) else getattr(func, "__name__", None)
    if not isinstance(func, str):
        reg = [n for n, f in WORKLOAD_FUNC_REGISTRY.items() if f is func]
        name = reg[0] if reg else name
    if name not in WORKLOAD_FUNC_REGISTRY:
        raise WorkloadError(f"workload {name!r} is not registered; decorate it with "
                            f"@auto_scheduler.register_workload")
    return json.dumps([name] + _serialize(args))


def decode_workload_key(key):
    """``(name, args)`` of a workload key."""
    from ..autotvm.task.task import deserialize_arg
    try:
        data = json.loads(key)
    except (TypeError, json.JSONDecodeError):
        raise WorkloadError(f"not a workload key (expected a JSON list [name, *args]): {key!r:.100}") from None
    if not isinstance(data, list) or not data or not isinstance(data[0], str):
        raise WorkloadError(f"not a workload key (expected a JSON list [name, *args]): {key!r:.100}")
    return data[0], tuple(deserialize_arg(a) for a in data[1:])


class ComputeDAG:
    """Tensors given directly (no registered function), keyed as TVM keys them: a hash of the
    computation plus the argument shapes.  The key finds the tensors in this process only."""

    def __init__(self, compute):
        import hashlib

        from ..ir.tensor import Tensor
        tensors = list(compute) if isinstance(compute, (list, tuple)) else None
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise WorkloadError(f"ComputeDAG needs a list of tensors (inputs and outputs), got {compute!r:.80}")
        from ..ir.expr import IntImm
        for x in tensors:
            if not all(isinstance(d, (int, IntImm)) for d in x.shape):
                raise WorkloadError(f"the auto-scheduler needs constant shapes; {x.name} has shape {tuple(x.shape)}")
        self.tensors = tensors
        text, seen, stack = [], set(), list(tensors)
        while stack:
            t = stack.pop()
            if t.op in seen:
                continue
            seen.add(t.op)
            body = getattr(t.op, "body", None)
            text.append(f"{t.op.name}{tuple(t.shape)}{t.dtype}:{body}")
            stack += list(t.op.input_tensors)
        digest = hashlib.md5("\n".join(sorted(text)).encode()).hexdigest()
        self.workload_key = json.dumps([digest] + [_serialize([t])[0][1] for t in tensors])
        DAG_REGISTRY[self.workload_key] = tensors

    def __repr__(self):
        return f"ComputeDAG({[t.name for t in self.tensors]})"


def workload_tensors(key):
    """Call the workload's function: its list of tensors (inputs, then outputs)."""
    if key in DAG_REGISTRY:
        return list(DAG_REGISTRY[key])
    name, args = decode_workload_key(key)
    if name not in WORKLOAD_FUNC_REGISTRY:
        raise WorkloadError(f"workload {name!r} is not registered in this process; import or define its "
                            f"@auto_scheduler.register_workload function first")
    out = WORKLOAD_FUNC_REGISTRY[name](*args)
    from ..ir.tensor import Tensor
    if not isinstance(out, (list, tuple)) or not out or not all(isinstance(t, Tensor) for t in out):
        raise WorkloadError(f"workload {name!r} must return a list of tensors (inputs and outputs), got "
                            f"{type(out).__name__}")
    return list(out)
