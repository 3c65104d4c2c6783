"""Logical operators TVM's topi has beside ``logical_and``/``logical_or``: not and xor (bool results)."""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import op as _op
from . import tag
from .broadcast import broadcast_index, broadcast_shape
from .utils import OperatorError, check_tensor, shape_str


def _truth(x):
    return x if dt.is_bool(x.dtype) else x != _op.const(0, x.dtype)


def logical_not(data):
    """``not data`` element-wise (non-zero is true), a bool tensor."""
    check_tensor("logical_not", data, "data")
    return te.compute(data.shape, lambda *i: _op.logical_not(_truth(data(*i))), name="T_logical_not",
                      tag=tag.ELEMWISE)


def logical_xor(lhs, rhs):
    """``lhs xor rhs`` with numpy broadcasting, a bool tensor."""
    for nm, t in (("lhs", lhs), ("rhs", rhs)):
        check_tensor("logical_xor", t, nm)
    if lhs.dtype != rhs.dtype:
        raise OperatorError(f"logical_xor needs one dtype: got {shape_str(lhs)} and {shape_str(rhs)}")
    shape = broadcast_shape("logical_xor", lhs.shape, rhs.shape)
    return te.compute(shape, lambda *i: _truth(lhs(*broadcast_index(lhs, i))) != _truth(rhs(*broadcast_index(rhs, i))),
                      name="T_logical_xor", tag=tag.BROADCAST)
