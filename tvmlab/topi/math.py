"""Elementwise operators on one tensor (tag ``elemwise``), spelled as in TVM's ``topi``.

    B = topi.exp(A); C = topi.clip(B, 0.0, 6.0)
"""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from . import tag
from .utils import OperatorError, check_tensor, shape_str


def _unary(name, fn, floats=False):
    def build(x):
        check_tensor(name, x, "x")
        if floats and not dt.is_float(x.dtype):     # as numpy: an integer or bool tensor is read as float32
            return te.compute(x.shape, lambda *i: fn(_op.cast("float32", x(*i))), name="T_" + name,
                              tag=tag.ELEMWISE)
        return te.compute(x.shape, lambda *i: fn(x(*i)), name="T_" + name, tag=tag.ELEMWISE)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"Elementwise {name} of tensor ``x``" + (" (an integer or bool tensor gives float32)."
                                                              if floats else ".")
    return build


exp = _unary("exp", _op.exp, True)
log = _unary("log", _op.log, True)
sqrt = _unary("sqrt", _op.sqrt, True)
rsqrt = _unary("rsqrt", _op.rsqrt, True)
tanh = _unary("tanh", _op.tanh, True)
sigmoid = _unary("sigmoid", _op.sigmoid, True)
erf = _unary("erf", _op.erf, True)
floor = _unary("floor", _op.floor)
ceil = _unary("ceil", _op.ceil)
round = _unary("round", _op.round)  # noqa: A001
nearbyint = _unary("nearbyint", _op.nearbyint)   # halves to even, as numpy.round
abs = _unary("abs", _op.abs)  # noqa: A001
negative = _unary("negative", _op.neg)
identity = _unary("identity", lambda v: v)
sin = _unary("sin", _op.sin, True)
cos = _unary("cos", _op.cos, True)
trunc = _unary("trunc", _op.trunc)
isnan = _unary("isnan", _op.isnan)


def _inf(v):
    return _op.const(float("inf"), v.dtype)


def _isinf(v):
    return _op.eq(_op.abs(v), _inf(v)) if dt.is_float(v.dtype) else _op.const(False, "bool")


def _isfinite(v):
    if not dt.is_float(v.dtype):
        return _op.const(True, "bool")
    return _op.logical_and(_op.logical_not(_op.isnan(v)), _op.ne(_op.abs(v), _inf(v)))


isinf = _unary("isinf", _isinf)
isfinite = _unary("isfinite", _isfinite)


def _sign(v):
    zero, one = _op.const(0, v.dtype), _op.const(1, v.dtype)
    if dt.is_uint(v.dtype) or dt.is_bool(v.dtype):
        return _op.select(_op.ne(v, zero), one, zero)
    if dt.is_float(v.dtype):        # zero and NaN are their own sign
        return _op.select(_op.lt(v, zero), _op.const(-1, v.dtype), _op.select(_op.gt(v, zero), one, v))
    return _op.select(_op.lt(v, zero), _op.const(-1, v.dtype), _op.select(_op.eq(v, zero), zero, one))


sign = _unary("sign", _sign)


def clip(x, a_min, a_max):
    """``min(max(x, a_min), a_max)`` elementwise."""
    check_tensor("clip", x, "x")
    if isinstance(a_min, (int, float)) and isinstance(a_max, (int, float)) and a_min > a_max:
        raise OperatorError(f"clip: a_min ({a_min}) is greater than a_max ({a_max})")
    lo, hi = _op.const(a_min, x.dtype), _op.const(a_max, x.dtype)
    return te.compute(x.shape, lambda *i: _op.min(_op.max(x(*i), lo), hi), name="T_clip", tag=tag.ELEMWISE)


def cast(x, dtype):
    """``x`` converted to ``dtype`` (a tensor, or an expression as in TVM's topi.cast)."""
    if isinstance(x, (E.Expr, int, float)) and not isinstance(x, bool):
        return _op.cast(dt.canonical(dtype), x)
    check_tensor("cast", x, "x")
    dtype = dt.canonical(dtype)
    return te.compute(x.shape, lambda *i: _op.cast(dtype, x(*i)), name="T_cast", tag=tag.ELEMWISE)


def reinterpret(data, dtype):
    """``data``'s bits read as ``dtype`` (of the same width), as numpy's ``view``."""
    check_tensor("reinterpret", data, "data")
    dtype = dt.canonical(dtype)
    if dt.itemsize(dtype) != dt.itemsize(data.dtype) or dt.is_bool(dtype) or dt.is_bool(data.dtype):
        raise OperatorError(f"reinterpret: {data.dtype} and {dtype} must be non-bool types of one width")
    return te.compute(data.shape, lambda *i: E.Call(dtype, "reinterpret", (data(*i),)), name="T_reinterpret",
                      tag=tag.ELEMWISE)


def fast_exp(x):
    """``exp`` (the precise one: the CPU backend already vectorises it)."""
    return exp(x)


def fast_erf(x):
    """``erf`` (the precise one, as ``fast_exp``; float16 is computed in float32)."""
    return _in_float32("fast_erf", x, erf, _op.erf)


def fast_tanh(x):
    """``tanh`` (the precise one, as ``fast_exp``; float16 is computed in float32)."""
    return _in_float32("fast_tanh", x, tanh, _op.tanh)


def _in_float32(name, x, tensor_op, scalar_op):
    check_tensor(name, x, "x")
    if x.dtype != "float16":
        return tensor_op(x)
    return te.compute(x.shape, lambda *i: _op.cast("float16", scalar_op(_op.cast("float32", x(*i)))),
                      name="T_" + name, tag=tag.ELEMWISE)


def elemwise_sum(xs):
    """The elementwise sum of a list of tensors of one shape and dtype."""
    xs = list(xs)
    if not xs:
        raise OperatorError("elemwise_sum: needs at least one tensor")
    for k, t in enumerate(xs):
        check_tensor("elemwise_sum", t, f"tensor {k}")
        if t.dtype != xs[0].dtype or len(t.shape) != len(xs[0].shape):
            raise OperatorError(f"elemwise_sum: tensor {k} is {shape_str(t)} but tensor 0 is {shape_str(xs[0])}")

    def f(*i):
        total = xs[0](*i)
        for t in xs[1:]:
            total = total + t(*i)
        return total
    return te.compute(xs[0].shape, f, name="T_elemwise_sum", tag=tag.ELEMWISE)
