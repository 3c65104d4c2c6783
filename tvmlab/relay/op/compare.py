"""Comparisons, logical operators and ``where``: ``relay.less(a, b)``, ``relay.logical_not(c)`` ...

Comparisons broadcast as numpy does and give bool tensors; the logical
operators take bool (or any numeric: non-zero is true) tensors. All are
broadcast patterns, so FuseOps merges them with their neighbours.
"""
from __future__ import annotations

from ..base import TypeInferenceError
from ..ty import TensorType
from .registry import OpPattern, make_call, register
from .tensor import _binary as tensor_binary
from .typerel import broadcast_shape, same_dtype, tensor_arg


def _cmp_rel(types, attrs):
    a, b = tensor_arg(types, 0, "lhs"), tensor_arg(types, 1, "rhs")
    same_dtype(a, b)
    return TensorType(broadcast_shape(a.shape, b.shape), "bool")


def _binary(name):
    return tensor_binary(name, rel=_cmp_rel, doc="gives a bool tensor, numpy broadcasting.")


equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")


def _not_rel(types, attrs):
    return TensorType(tensor_arg(types, 0).shape, "bool")


def _not_compute(attrs, inputs, out_type):
    from ...topi.logical import logical_not as f
    return [f(inputs[0])]


register("logical_not", _not_rel, OpPattern.ELEMWISE, _not_compute, {}, 1)


def logical_not(data):
    """``relay.logical_not(data)``: a bool tensor."""
    return make_call("logical_not", [data])


def _where_rel(types, attrs):
    c, x, y = (tensor_arg(types, k, w) for k, w in enumerate(("condition", "x", "y")))
    same_dtype(x, y, "x", "y")
    if c.dtype != "bool" and "int" not in c.dtype:
        raise TypeInferenceError(f"where: condition must be bool (or integer), got {c.dtype}")
    return TensorType(broadcast_shape(broadcast_shape(c.shape, x.shape), y.shape), x.dtype)


def _where_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.where(*inputs)]


register("where", _where_rel, OpPattern.BROADCAST, _where_compute, {}, 3)


def where(condition, x, y):
    """``relay.where(condition, x, y)``: ``x`` where ``condition`` holds, else ``y`` (broadcast together)."""
    return make_call("where", [condition, x, y])


__all__ = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "logical_not", "where"]
