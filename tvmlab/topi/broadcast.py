"""Binary operators with numpy broadcasting (tag ``broadcast``), spelled as in TVM's ``topi``.

    C = topi.add(A, B)          # A (4, 1, 5), B (3, 1) -> C (4, 3, 5)
    D = topi.multiply(C, 2.0)   # a tensor and a scalar; two scalars give an expression
"""
from __future__ import annotations

import numbers

from .. import te
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from ..ir.tensor import Tensor
from . import tag
from .utils import OperatorError, const_or_none, shape_str


def broadcast_shape(op, a_shape, b_shape):
    """The numpy broadcast of two shapes (ints or expressions); OperatorError when they do not broadcast."""
    a, b = list(a_shape), list(b_shape)
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + a
    b = [1] * (n - len(b)) + b
    out = []
    for k, (x, y) in enumerate(zip(a, b)):
        cx, cy = const_or_none(x), const_or_none(y)
        if cx == 1:
            out.append(y)
        elif cy == 1 or (cx is not None and cx == cy) or x is y:
            out.append(x)
        elif cx is not None and cy is not None:
            raise OperatorError(f"{op}: shapes {tuple(a_shape)} and {tuple(b_shape)} do not broadcast "
                                f"(dimension {k}: {cx} vs {cy}; each must be equal or 1)")
        else:
            out.append(x if cx is None else y)     # symbolic: assumed equal, as TVM does
    return tuple(out)


def broadcast_index(t, out_index):
    """The index of ``t`` read at output index ``out_index`` (trailing dims aligned, size-1 dims at 0)."""
    lead = len(out_index) - len(t.shape)
    return tuple(0 if const_or_none(s) == 1 else i for s, i in zip(t.shape, out_index[lead:]))


def broadcast_to(data, shape):
    """``data`` broadcast to ``shape``."""
    out = broadcast_shape("broadcast_to", data.shape, shape)
    if len(out) != len(shape) or any(const_or_none(a) != const_or_none(b) for a, b in zip(out, shape)):
        raise OperatorError(f"broadcast_to: cannot broadcast {shape_str(data)} to {tuple(shape)}")
    return te.compute(shape, lambda *i: data(*broadcast_index(data, i)), name="T_broadcast_to",
                      tag=tag.BROADCAST)


def _scalar(x):
    return isinstance(x, (numbers.Number, E.Expr)) and not isinstance(x, Tensor)


def _binary(name, fn, floats=False, doc=""):
    def build(lhs, rhs, name_=None, **kwargs):
        out_name = kwargs.pop("name", None) or name_ or "T_" + name
        if kwargs:
            raise OperatorError(f"{name}: unexpected argument(s) {sorted(kwargs)}")
        for side, v in (("lhs", lhs), ("rhs", rhs)):
            if not (isinstance(v, Tensor) or _scalar(v)):
                raise OperatorError(f"{name}: {side} must be a te.Tensor or a scalar, got {type(v).__name__}: {v!r}")
        if not isinstance(lhs, Tensor) and not isinstance(rhs, Tensor):
            return fn(_op.convert(lhs), _op.convert(rhs))
        if isinstance(lhs, Tensor) and isinstance(rhs, Tensor):
            if lhs.dtype != rhs.dtype:
                raise OperatorError(f"{name} needs one shape and dtype after broadcasting: got "
                                    f"{shape_str(lhs)} and {shape_str(rhs)} (cast one with topi.cast)")
            shape = broadcast_shape(name, lhs.shape, rhs.shape)
            if floats and not dt.is_float(lhs.dtype):
                raise OperatorError(f"{name} needs float tensors, got {shape_str(lhs)}")
            return te.compute(shape, lambda *i: fn(lhs(*broadcast_index(lhs, i)), rhs(*broadcast_index(rhs, i))),
                              name=out_name, tag=tag.BROADCAST)
        t = lhs if isinstance(lhs, Tensor) else rhs
        if floats and not dt.is_float(t.dtype):
            raise OperatorError(f"{name} needs a float tensor, got {shape_str(t)}")
        s = _op.const(lhs if t is rhs else rhs, t.dtype) if isinstance(lhs if t is rhs else rhs, numbers.Number) \
            else _op.cast(t.dtype, _op.convert(lhs if t is rhs else rhs))
        if t is lhs:
            return te.compute(t.shape, lambda *i: fn(t(*i), s), name=out_name, tag=tag.ELEMWISE)
        return te.compute(t.shape, lambda *i: fn(s, t(*i)), name=out_name, tag=tag.ELEMWISE)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc or f"Elementwise {name} of two tensors (numpy broadcasting) or a tensor and a scalar."
    return build


add = _binary("add", _op.add)
subtract = _binary("subtract", _op.sub)
multiply = _binary("multiply", _op.mul)
divide = _binary("divide", _op.div, doc="``lhs / rhs``: true division for floats, truncating for integers (as TVM).")
floor_divide = _binary("floor_divide", _op.floordiv)
mod = _binary("mod", _op.fmod)
floor_mod = _binary("floor_mod", _op.floormod)
power = _binary("power", _op.power, floats=True)
maximum = _binary("maximum", _op.max)
minimum = _binary("minimum", _op.min)
equal = _binary("equal", _op.eq)
not_equal = _binary("not_equal", _op.ne)
less = _binary("less", _op.lt)
less_equal = _binary("less_equal", _op.le)
greater = _binary("greater", _op.gt)
greater_equal = _binary("greater_equal", _op.ge)
logical_and = _binary("logical_and", _op.logical_and)
logical_or = _binary("logical_or", _op.logical_or)
logical_xor = _binary("logical_xor", lambda a, b: _op.ne(_truth(a), _truth(b)),
                      doc="``lhs xor rhs`` (non-zero is true) with numpy broadcasting, a bool result.")
bitwise_and = _binary("bitwise_and", _op.bitwise_and)
bitwise_or = _binary("bitwise_or", _op.bitwise_or)
bitwise_xor = _binary("bitwise_xor", _op.bitwise_xor)
left_shift = _binary("left_shift", _op.shift_left)
right_shift = _binary("right_shift", _op.shift_right)


def _truth(x):
    return x if dt.is_bool(x.dtype) else _op.ne(x, _op.const(0, x.dtype))
