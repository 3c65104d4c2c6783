"""The operator registry: name -> type relation, TE compute, schedule, pattern kind.

Pattern kinds are TVM's four (with its numbering): element-wise and
broadcast are the simplest injective maps, ``INJECTIVE`` covers layout maps
(reshape, transpose, concatenate), ``COMM_REDUCE`` reductions,
``OUT_ELEMWISE_FUSABLE`` operators such as conv2d whose output can absorb
element-wise operators, ``OPAQUE`` what never fuses.  FuseOps reads the
pattern; the build reads the compute and the schedule of each group's anchor.
"""
from __future__ import annotations

from ..base import RelayError


class OpPattern:
    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8

    NAMES = {0: "elemwise", 1: "broadcast", 2: "injective", 3: "reduction", 4: "out-elemwise-fusable",
             7: "tuple", 8: "opaque"}


class Op:
    """One operator: ``relay.op.get("nn.conv2d")``."""

    def __init__(self, name, num_inputs, defaults, type_rel, pattern, compute=None, schedule=None,
                 description=""):
        self.name = name
        self.num_inputs = num_inputs            # None: any number (given as one tuple)
        self.defaults = dict(defaults or {})
        self.type_rel = type_rel
        self.pattern = pattern
        self.compute = compute
        self.schedules = {}                     # target kind -> fn(attrs, outs, target) -> Schedule (overrides)
        if schedule is not None:
            self.schedules["llvm"] = schedule
        self.description = description

    def __repr__(self):
        return f"Op({self.name})"

    def get_attr(self, key):
        return {"TOpPattern": self.pattern, "FTVMCompute": self.compute,
                "FTVMStrategy": self.schedules or None}.get(key)


_REGISTRY: dict[str, Op] = {}


def register(name, type_rel, pattern, compute=None, defaults=None, num_inputs=1, schedule=None, description=""):
    """Add an operator (or replace one of the same name)."""
    op = Op(name, num_inputs, defaults, type_rel, pattern, compute, schedule, description)
    _REGISTRY[name] = op
    return op


def get(name):
    """The operator called ``name``; a clear error lists the known ones."""
    op = _REGISTRY.get(name)
    if op is None:
        raise RelayError(f"unknown operator {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    return op


def list_op_names():
    return sorted(_REGISTRY)


def register_compute(name, compute=None):
    """``relay.op.register_compute("add", fn)`` with ``fn(attrs, inputs, out_type) -> [te.Tensor]``."""
    def do(fn):
        get(name).compute = fn
        return fn
    return do(compute) if compute is not None else do


def register_schedule(name, schedule=None, target="llvm"):
    """Schedule of groups anchored at ``name``: ``fn(attrs, outs, target) -> te.Schedule``."""
    def do(fn):
        get(name).schedules[target] = fn
        return fn
    return do(schedule) if schedule is not None else do


def register_pattern(name, pattern):
    get(name).pattern = int(pattern)


def make_call(name, args, **attrs):
    """A Call of operator ``name`` with ``attrs`` checked against the operator's known attributes."""
    from ..expr import Call, RelayExpr, TupleWrapper, const
    op = get(name)
    unknown = [k for k in attrs if k not in op.defaults]
    if unknown:
        raise RelayError(f"{name}: unknown attribute(s) {unknown}; known: {sorted(op.defaults)}")
    fixed = []
    for k, a in enumerate(args):
        if isinstance(a, TupleWrapper):
            a = a.astuple()
        if not isinstance(a, RelayExpr):
            if isinstance(a, (int, float)) and not isinstance(a, bool):
                a = const(a)
            else:
                raise RelayError(f"{name}: argument {k} must be a relay expression, got {type(a).__name__}")
        fixed.append(a)
    if op.num_inputs is not None and len(fixed) != op.num_inputs:
        raise RelayError(f"{name} takes {op.num_inputs} argument(s), got {len(fixed)}")
    return Call(op, fixed, {**op.defaults, **attrs})
