"""Scalar parameters of a tensor intrinsic (``decl_tensor_intrin(..., scalar_params=[v, w])``).

The intrinsic's compute uses variables (``z[i] = x[i] * v + w``) whose values
each use of the kernel passes along (``intrin_func(ins, outs, sp)`` gets them as
``sp`` and puts them into its call).  Tensorize finds the values in the stage
it replaces: the stage's body over the tile is lined up with the intrinsic's,
node by node, and the stage's expression where the intrinsic has ``v`` is v's
value (``i * i`` for ``C[i, j] = A[i, j] * (i * i) + ...``).  A value must be the
same over the whole tile; the body check then compares the intrinsic's compute
with the values put in, and the kernel's statements get them too.
"""
from __future__ import annotations

import copy

from ..ir.expr import Var
from ..ir.functor import collect_vars, substitute
from ..ir.node import Node


def find_values(intrin, bodies, ana, where):
    """{param: value} for the intrinsic's ``scalar_params``, read off ``bodies`` (the stage's
    bodies over the tile, in the intrinsic's axes and tensors)."""
    from .tensorize import _Mismatch
    params = {id(v): v for v in intrin.scalar_params}
    values = {}

    def walk(p, t):
        if isinstance(p, Var) and id(p) in params:
            if not hasattr(t, "dtype") or t.dtype != p.dtype:
                raise _Mismatch(f"{where}: the stage has {t} where the intrinsic has its scalar parameter "
                                f"{p.name} ({p.dtype})")
            prev = values.setdefault(p, t)
            if prev is not t and not ana.can_prove_equal(prev, t):
                raise _Mismatch(f"{where}: scalar parameter {p.name} would be both {prev} and {t}")
            return
        if type(p) is not type(t) or not isinstance(p, Node):
            return          # the body check says what differs
        for f in type(p).field_names():
            a, b = getattr(p, f), getattr(t, f)
            if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
                for x, y in zip(a, b):
                    walk(x, y)
            elif isinstance(a, Node):
                walk(a, b)

    for p, t in zip(intrin.op.body, bodies):
        walk(p, t)
    inner = {it.var for it in list(intrin.op.axis) + list(intrin.op.reduce_axis)}
    fixed = _points(intrin, ana)
    for v in intrin.scalar_params:
        if v not in values:
            raise _Mismatch(f"{where}: cannot find the value of scalar parameter {v.name}: the stage's body "
                            f"has no expression where {intrin.op.name}'s compute uses it")
        value = ana.simplify(substitute(values[v], fixed))
        varying = [x.name for x in collect_vars(value) if x in inner]
        if varying:
            raise _Mismatch(f"{where}: scalar parameter {v.name} would be {value}, which varies inside "
                            f"the tile (with {', '.join(varying)}); a scalar parameter is one value per call")
    return values


def _points(intrin, ana):
    """{axis var: its one value} for the intrinsic's axes of extent 1."""
    return {it.var: it.dom.min for it in list(intrin.op.axis) + list(intrin.op.reduce_axis)
            if ana.can_prove_equal(it.dom.extent, 1)}


def with_values(intrin, values, ana):
    """``intrin`` with its statements using ``values`` (from ``find_values``) for its scalar
    parameters."""
    if not values:
        return intrin
    fixed = _points(intrin, ana)
    values = {v: ana.simplify(substitute(x, fixed)) for v, x in values.items()}
    out = copy.copy(intrin)
    for f in ("body", "reduce_init", "reduce_update"):
        x = getattr(intrin, f)
        setattr(out, f, None if x is None else substitute(x, values))
    return out
