"""Structural keys: a hashable, totally ordered value per expression.

Two expressions with equal keys compute the same value (variables compare by
identity, other nodes by class and fields).  The order of keys is what makes
the simplifier canonical: like terms are collected by key and the terms of a
sum, the operands of ``min``/``max`` and the factors of a product are sorted
by it.  Variables sort by name first so that results read naturally, then by
creation order (``Var.serial``), so the order is the same in every run.
"""
from __future__ import annotations

from .. import expr as E
from .memo import NodeMemo
from ..node import Node


class KeyCache(NodeMemo):
    """Memoised keys for one analyzer; holds the nodes so their ids stay unique."""

    __slots__ = ()
    limit = 200_000

    def _eval(self, e):
        t = type(e)
        if t is E.IntImm:
            return ("IntImm", e.dtype, e.value)
        if isinstance(e, E.Var):
            return ("Var", e.name, e.dtype, e.serial, id(e))
        if t is E.FloatImm:
            return ("FloatImm", e.dtype, e.value)
        return (t.__name__,) + tuple(self._field(getattr(e, f)) for f in t.field_names())

    def _field(self, v):
        if isinstance(v, Node):
            return self(v)
        if v is None:
            return ("None",)
        if isinstance(v, (bool, int, float, str)):
            return (type(v).__name__, v)
        if isinstance(v, tuple):
            return ("tuple",) + tuple(self._field(x) for x in v)
        return ("obj", str(getattr(v, "name", type(v).__name__)), id(v))
