"""Activations, elementwise (tag ``elemwise``; ``prelu`` is ``broadcast``), as TVM's ``topi.nn``.

    Y = topi.nn.relu(X); Z = topi.nn.leaky_relu(X, 0.1); P = topi.nn.prelu(X, slope, axis=1)
"""
from __future__ import annotations

import math

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none, normalize_axis, shape_str


def _act(name, x, fn):
    check_tensor(name, x, "x")
    if not dt.is_float(x.dtype) and name != "relu":
        raise OperatorError(f"{name} needs a float tensor, got {shape_str(x)}")
    return te.compute(x.shape, lambda *i: fn(x(*i)), name="T_" + name, tag=tag.ELEMWISE)


def relu(x):
    """``max(x, 0)``."""
    return _act("relu", x, lambda v: _op.max(v, _op.const(0, x.dtype)))


def leaky_relu(x, alpha):
    """``x`` where positive, else ``alpha * x``."""
    a = _op.const(alpha, x.dtype) if isinstance(x, te.Tensor) else alpha
    return _act("leaky_relu", x, lambda v: _op.select(v > _op.const(0, x.dtype), v, v * a))


def elu(x, alpha=1.0):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    one = lambda: _op.const(1, x.dtype)  # noqa: E731
    return _act("elu", x, lambda v: _op.select(v > _op.const(0, x.dtype), v,
                                              _op.const(alpha, x.dtype) * (_op.exp(v) - one())))


def selu(x, alpha=1.6732632423543772, gamma=1.0507009873554805):
    """``gamma * (x if x > 0 else alpha * (exp(x) - 1))``."""
    return _act("selu", x, lambda v: _op.const(gamma, x.dtype) * _op.select(
        v > _op.const(0, x.dtype), v, _op.const(alpha, x.dtype) * (_op.exp(v) - _op.const(1, x.dtype))))


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, exactly ``x`` where ``beta * x > threshold`` (no overflow)."""
    def f(v):
        bx = v * _op.const(beta, x.dtype)
        # log1p(exp(-|bx|)) + max(bx, 0): never overflows
        soft = (_op.log1p(_op.exp(-_op.abs(bx))) + _op.max(bx, _op.const(0, x.dtype))) / _op.const(beta, x.dtype)
        return _op.select(bx > _op.const(threshold, x.dtype), v, soft)
    return _act("softplus", x, f)


def hard_sigmoid(x, alpha=0.2, beta=0.5):
    """``clip(alpha * x + beta, 0, 1)``."""
    return _act("hard_sigmoid", x, lambda v: _op.min(_op.max(v * _op.const(alpha, x.dtype) + _op.const(beta, x.dtype),
                                                             _op.const(0, x.dtype)), _op.const(1, x.dtype)))


def gelu(x):
    """``x * Phi(x)`` with the exact normal CDF (erf)."""
    return _act("gelu", x, lambda v: v * _op.const(0.5, x.dtype) *
                (_op.const(1, x.dtype) + _op.erf(v * _op.const(1 / math.sqrt(2), x.dtype))))


def prelu(x, slope, axis=1):
    """``x`` where positive, else ``slope[c] * x`` with ``c`` the index along ``axis``."""
    check_tensor("prelu", x, "x")
    check_tensor("prelu", slope, "slope", 1)
    axis = normalize_axis("prelu", axis, len(x.shape))
    n, m = const_or_none(x.shape[axis]), const_or_none(slope.shape[0])
    if m not in (1, None) and n is not None and n != m:
        raise OperatorError(f"prelu: slope has {m} values but axis {axis} of {shape_str(x)} has {n}")
    if slope.dtype != x.dtype:
        raise OperatorError(f"prelu: slope is {shape_str(slope)} but x is {shape_str(x)}; they need one dtype")

    def f(*i):
        v = x(*i)
        s = slope(0 if m == 1 else i[axis])
        return _op.select(v > _op.const(0, x.dtype), v, v * s)
    return te.compute(x.shape, f, name="T_prelu", tag=tag.BROADCAST)
