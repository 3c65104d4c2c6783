"""Unary logical and bitwise operators: ``logical_not`` (a bool result) and ``bitwise_not``; an expression
argument gives an expression (``logical_xor`` and the binary bitwise operators are in ``broadcast``)."""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from . import tag
from .utils import OperatorError, check_tensor, shape_str


def _truth(x):
    return x if dt.is_bool(x.dtype) else x != _op.const(0, x.dtype)


def logical_not(data):
    """``not data`` element-wise (non-zero is true), a bool tensor."""
    if isinstance(data, E.Expr):
        return _op.logical_not(_truth(data))
    check_tensor("logical_not", data, "data")
    return te.compute(data.shape, lambda *i: _op.logical_not(_truth(data(*i))), name="T_logical_not",
                      tag=tag.ELEMWISE)


def bitwise_not(data):
    """``~data`` element-wise on an integer (or bool) tensor."""
    if isinstance(data, E.Expr):
        return _op.bitwise_not(data)
    check_tensor("bitwise_not", data, "data")
    if not (dt.is_int(data.dtype) or dt.is_uint(data.dtype) or dt.is_bool(data.dtype)):
        raise OperatorError(f"bitwise_not needs an integer tensor, got {shape_str(data)}")
    return te.compute(data.shape, lambda *i: _op.bitwise_not(data(*i)), name="T_bitwise_not", tag=tag.ELEMWISE)
