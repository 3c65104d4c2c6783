"""What every frontend shares: its errors, shape inference of a partly built graph, and small helpers.

A frontend turns a framework's graph into Relay calls one node at a time; some
conversions need the static shape of a value already converted (Flatten's
axis, Conv's ``SAME`` padding, MatMul's rank), which ``infer_shape`` reads off
Relay's own type inference so there is one source of truth for shapes.
"""
from __future__ import annotations

import numpy as np

from ...errors import TVMLabError


class FrontendError(TVMLabError, ValueError):
    """A model cannot be imported: a bad or unsupported graph, attribute or input."""


class OpNotImplemented(FrontendError, NotImplementedError):
    """The model uses operators the frontend has no converter for."""


class MissingInputShape(FrontendError):
    """A graph input has no static shape and none was given."""


def relay_module():
    """``tvmlab.relay``, imported when first needed (it imports this package)."""
    from ... import relay
    return relay


class ShapeCache:
    """Static shapes and dtypes of Relay expressions, inferred once per expression."""

    def __init__(self):
        self._types = {}

    def checked_type(self, expr):
        key = id(expr)
        hit = self._types.get(key)
        if hit is not None and hit[0] is expr:
            return hit[1]
        try:
            return expr.checked_type        # already inferred (types are stored on the nodes)
        except TVMLabError:
            pass
        relay = relay_module()
        from ...ir.function import IRModule
        mod = IRModule.from_expr(expr)
        mod = relay.transform.InferType()(mod)
        ty = mod["main"].body.checked_type
        self._types[key] = (expr, ty)      # keep expr alive so its id is not reused
        return ty

    def shape(self, expr):
        ty = self.checked_type(expr)
        if not hasattr(ty, "shape"):
            raise FrontendError(f"expected a tensor, got a value of type {ty}")
        return tuple(int(d) for d in ty.shape)

    def dtype(self, expr):
        return str(self.checked_type(expr).dtype)


def prod(values):
    out = 1
    for v in values:
        out *= int(v)
    return out


def normalize_axis(axis, rank, what="axis"):
    """``axis`` in [-rank, rank) as a non-negative int, or a FrontendError."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise FrontendError(f"{what} {axis} is out of range for a tensor of rank {rank}"
                            f" (expected {-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


def as_tuple_of_ints(values):
    return tuple(int(v) for v in np.asarray(values).reshape(-1))


def fold_same_padding(in_size, kernel, stride, dilation, upper=True):
    """(begin, end) padding that makes an output of ceil(in / stride), as ``SAME_UPPER``/``SAME_LOWER``."""
    out = -(-in_size // stride)
    eff = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + eff - in_size, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)
