"""ONNX comparisons, logic, Where, ArgMax/ArgMin, ReduceProd, CumSum and Einsum as Relay calls.

Comparisons and Where also fold in numpy when their inputs are static (they
appear in the shape arithmetic exporters emit, e.g. Equal/Where before an
Expand). ONNX gives ArgMax/ArgMin int64 indices where Relay gives int32, so a
cast follows.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError, einsum, normalize_axis
from .onnx_ops import axes_arg, const_input, converter, expr_input, folder

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


@converter("ArgMax", "ArgMin")
def _arg(ctx, node):
    """The first index by default; ``select_last_index`` (opset 12) takes the arg of the reversed axis."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    axis = normalize_axis(node.attr("axis", 0), len(shape))
    keepdims = bool(node.attr("keepdims", 1))
    fn = r.argmax if node.op_type == "ArgMax" else r.argmin
    if ctx.opset >= 12 and node.attr("select_last_index", 0):
        n = shape[axis]
        flipped = r.strided_slice(x, begin=[n - 1], end=[-n - 1], strides=[-1], axes=[axis])
        idx = fn(flipped, axis=axis, keepdims=keepdims)
        idx = r.subtract(r.const(n - 1, "int32"), idx)
    else:
        idx = fn(x, axis=axis, keepdims=keepdims)
    return r.cast(idx, "int64")


@converter("ReduceProd")
def _reduce_prod(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    rank = len(ctx.shape_of(x))
    axes = axes_arg(ctx, node, 18)
    if not axes:
        if ctx.opset >= 18 and node.attr("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    axes = sorted({normalize_axis(a, rank, "reduction axis") for a in axes})
    return r.prod(x, axis=axes, keepdims=bool(node.attr("keepdims", 1)))


@folder("ReduceProd")
def _fold_reduce_prod(node, values, opset):
    axes = values[1] if opset >= 18 and len(values) > 1 else node.attr("axes")
    axes = None if axes is None or not len(np.asarray(axes).reshape(-1)) else \
        tuple(int(a) for a in np.asarray(axes).reshape(-1))
    if axes is None and opset >= 18 and node.attr("noop_with_empty_axes", 0):
        return values[0]
    return np.prod(values[0], axis=axes, keepdims=bool(node.attr("keepdims", 1))).astype(values[0].dtype)


@converter("CumSum")
def _cumsum(ctx, node):
    x = expr_input(ctx, node, 0)
    axis = const_input(ctx, node, 1, "axis")
    if axis is None:
        raise FrontendError("the axis input is required")
    axis = normalize_axis(np.asarray(axis).reshape(-1)[0], len(ctx.shape_of(x)))
    return ctx.relay.cumsum(x, axis=axis, exclusive=bool(node.attr("exclusive", 0)),
                            reverse=bool(node.attr("reverse", 0)))


@converter("Einsum")
def _einsum(ctx, node):
    eq = node.attr("equation")
    if not isinstance(eq, str) or not eq:
        raise FrontendError(f"needs an equation attribute, got {eq!r}")
    if "." in eq:
        raise FrontendError(f"equation {eq!r}: an ellipsis ('...') is not supported")
    xs = [ctx.expr_of(i) for i in node.inputs if i]
    return einsum(ctx.relay, ctx.shape_of, xs, eq.replace(" ", ""))


@converter("TopK")
def _topk(ctx, node):
    """K is an attribute before opset 10 and an input from it on; ``largest`` and ``sorted`` from opset 11
    (the values come out sorted either way); ties keep the lower index first, as onnxruntime."""
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    axis = normalize_axis(node.attr("axis", -1), len(shape))
    if ctx.opset >= 10:
        k = const_input(ctx, node, 1, "K")
        if k is None:
            raise FrontendError("the K input is required")
        k = int(np.asarray(k).reshape(-1)[0])
    else:
        k = int(node.attr("k", 0))
    if not 1 <= k <= shape[axis]:
        raise FrontendError(f"K must be in 1..{shape[axis]} (the length of axis {axis}), got {k}")
    largest = bool(node.attr("largest", 1)) if ctx.opset >= 11 else True
    out = ctx.relay.topk(x, k=k, axis=axis, is_ascend=not largest, dtype="int64")
    return [out[0], out[1]]
