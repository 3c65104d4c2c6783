"""ONNX comparisons, logic and Where, the operators written with them (Sign, IsInf, OneHot, Hardmax, Trilu,
Shrink, ...), trigonometry and Mod, as Relay calls.

Comparisons and Where also fold in numpy when their inputs are static (they
appear in the shape arithmetic exporters emit, e.g. Equal/Where before an
Expand).
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError, normalize_axis
from .onnx_ops import const_input, converter, expr_input, folder

_COMPARE = {"Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
            "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor"}
_NUMPY = {"Equal": np.equal, "Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal,
          "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}


@converter(*_COMPARE)
def _compare(ctx, node):
    a, b = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    da, db = ctx.dtype_of(a), ctx.dtype_of(b)
    if da != db:
        raise FrontendError(f"inputs need one dtype, got {da} and {db}")
    return getattr(ctx.relay, _COMPARE[node.op_type])(a, b)


@folder(*_COMPARE)
def _fold_compare(node, values, opset):
    return _NUMPY[node.op_type](values[0], values[1])


@converter("Not")
def _not(ctx, node):
    return ctx.relay.logical_not(expr_input(ctx, node, 0))


@folder("Not")
def _fold_not(node, values, opset):
    return np.logical_not(values[0])


@converter("Where")
def _where(ctx, node):
    c, x, y = (expr_input(ctx, node, i) for i in range(3))
    if ctx.dtype_of(c) != "bool":
        raise FrontendError(f"the condition must be bool, got {ctx.dtype_of(c)}")
    return ctx.relay.where(c, x, y)


@folder("Where")
def _fold_where(node, values, opset):
    return np.where(values[0], values[1], values[2])


# ---------------------------------------------------------------- ops written with comparisons and where
def _zero(ctx, x):
    return ctx.relay.const(np.zeros((), ctx.dtype_of(x)).item(), ctx.dtype_of(x))


def _c(ctx, x, v):
    return ctx.relay.const(np.asarray(v, ctx.dtype_of(x)).item(), ctx.dtype_of(x))


@converter("ThresholdedRelu")
def _thresholded_relu(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    return r.where(r.greater(x, _c(ctx, x, node.attr("alpha", 1.0))), x, _zero(ctx, x))


@converter("Shrink")
def _shrink(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    lambd, bias = node.attr("lambd", 0.5), node.attr("bias", 0.0)
    low = r.where(r.less(x, _c(ctx, x, -lambd)), r.add(x, _c(ctx, x, bias)), _zero(ctx, x))
    return r.where(r.greater(x, _c(ctx, x, lambd)), r.subtract(x, _c(ctx, x, bias)), low)


@converter("Sign")
def _sign(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    neg = r.where(r.less(x, _zero(ctx, x)), _c(ctx, x, -1), _zero(ctx, x))
    return r.where(r.greater(x, _zero(ctx, x)), _c(ctx, x, 1), neg)


@converter("IsNaN")
def _isnan(ctx, node):
    x = expr_input(ctx, node, 0)
    return ctx.relay.not_equal(x, x)


@converter("IsInf")
def _isinf(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    pos = r.equal(x, _c(ctx, x, np.inf))
    neg = r.equal(x, _c(ctx, x, -np.inf))
    want_pos, want_neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    if want_pos and want_neg:
        return r.logical_or(pos, neg)
    if want_pos:
        return pos
    if want_neg:
        return neg
    return r.logical_and(pos, neg)          # neither: all false


def _one_hot_mask(ctx, idx, depth, axis):
    """bool mask: ``idx`` (negative counting from ``depth``) equals the position along a new ``axis``."""
    r = ctx.relay
    dt = ctx.dtype_of(idx)
    idx = r.where(r.less(idx, _zero(ctx, idx)), r.add(idx, _c(ctx, idx, depth)), idx)
    rank = len(ctx.shape_of(idx)) + 1
    axis = normalize_axis(axis, rank)
    pos = np.arange(depth, dtype=dt).reshape([depth if d == axis else 1 for d in range(rank)])
    return r.equal(r.expand_dims(idx, axis=axis), r.const(pos))


@converter("OneHot")
def _one_hot(ctx, node):
    r = ctx.relay
    idx = expr_input(ctx, node, 0)
    depth = const_input(ctx, node, 1, "depth")
    values = const_input(ctx, node, 2, "values")
    if depth is None or values is None:
        raise FrontendError("depth and values are required")
    depth = int(np.asarray(depth).reshape(-1)[0])
    values = np.asarray(values).reshape(-1)
    if depth < 1 or values.size != 2:
        raise FrontendError(f"depth must be >= 1 and values two numbers, got {depth} and {values.tolist()}")
    mask = _one_hot_mask(ctx, idx, depth, node.attr("axis", -1))
    return r.where(mask, r.const(values[1]), r.const(values[0]))


@converter("Hardmax")
def _hardmax(ctx, node):
    """1 at the first maximum along ``axis`` (opset 13; before, over the flattened axes from ``axis``)."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    rank = len(shape)
    one, zero = _c(ctx, x, 1), _zero(ctx, x)
    if ctx.opset >= 13:
        axis = normalize_axis(node.attr("axis", -1), rank)
        arg = r.argmax(x, axis=axis, keepdims=True)
        pos = np.arange(shape[axis], dtype="int32").reshape([shape[axis] if d == axis else 1 for d in range(rank)])
        return r.where(r.equal(arg, r.const(pos)), one, zero)
    axis = normalize_axis(node.attr("axis", 1), rank)
    rows, cols = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
    flat = r.reshape(x, newshape=(rows, cols))
    arg = r.argmax(flat, axis=1, keepdims=True)
    out = r.where(r.equal(arg, r.const(np.arange(cols, dtype="int32").reshape(1, cols))), one, zero)
    return r.reshape(out, newshape=shape)


@converter("Trilu")
def _trilu(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    if len(shape) < 2:
        raise FrontendError(f"needs a tensor of rank 2 or more, got shape {shape}")
    k = const_input(ctx, node, 1, "k")
    k = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
    n, m = shape[-2:]
    keep = np.triu(np.ones((n, m), bool), k) if node.attr("upper", 1) else np.tril(np.ones((n, m), bool), k)
    return r.where(r.const(keep), x, _zero(ctx, x))


@converter("MeanVarianceNormalization")
def _mvn(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    axes = [normalize_axis(a, len(ctx.shape_of(x))) for a in node.attr("axes", [0, 2, 3])]
    centred = r.subtract(x, r.mean(x, axis=axes, keepdims=True))
    std = r.sqrt(r.mean(r.multiply(centred, centred), axis=axes, keepdims=True))
    return r.divide(centred, r.add(std, _c(ctx, x, 1e-9)))


_TRIG = {"Sin": "sin", "Cos": "cos", "Tan": "tan", "Sinh": "sinh", "Cosh": "cosh", "Asin": "asin", "Acos": "acos",
         "Atan": "atan"}


@converter(*_TRIG)
def _trig(ctx, node):
    return getattr(ctx.relay, _TRIG[node.op_type])(expr_input(ctx, node, 0))


@converter("Mod")
def _mod(ctx, node):
    """fmod=1: C's fmod (the dividend's sign); fmod=0 (integers): the divisor's sign, as Python's %."""
    a, b = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    if node.attr("fmod", 0):
        return ctx.relay.mod(a, b)
    if "float" in ctx.dtype_of(a):
        raise FrontendError("fmod=0 needs integer inputs (ONNX); floats need fmod=1")
    return ctx.relay.floor_mod(a, b)
