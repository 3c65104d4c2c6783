"""ONNX index-finding and indexing: ArgMax/ArgMin, TopK, ReduceProd, CumSum, Einsum, GatherND and
ScatterElements as Relay calls.

ONNX gives ArgMax/ArgMin and TopK int64 indices where Relay's argmax gives
int32, so a cast follows (topk is asked for int64 directly).
"""
from __future__ import annotations

import numpy as np

from ...errors import TVMLabError
from .common import FrontendError, einsum, normalize_axis
from .onnx_ops import axes_arg, const_input, converter, expr_input, folder

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
    out = einsum(ctx.relay, ctx.shape_of, xs, eq.replace(" ", ""))
    try:
        ctx.shape_of(out)               # a bad equation is reported here, with this node's name
    except TVMLabError as e:
        raise FrontendError(f"equation {eq!r}: {e}") from None
    return out


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


@converter("GatherND")
def _gather_nd(ctx, node):
    """ONNX holds each index tuple along indices' last axis, relay.gather_nd along its first: a transpose."""
    r = ctx.relay
    x, ind = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    rank = len(ctx.shape_of(ind))
    b = int(node.attr("batch_dims", 0)) if ctx.opset >= 12 else 0
    if rank < 1:
        raise FrontendError("indices must have rank 1 or more")
    ind = r.transpose(ind, axes=[rank - 1] + list(range(rank - 1))) if rank > 1 else ind
    return r.gather_nd(x, ind, batch_dims=b)


@converter("ScatterElements", "Scatter")
def _scatter_elements(ctx, node):
    """Duplicated indices: the last update wins (as onnxruntime), or ``reduction`` (opset 16: add, mul; 18:
    min, max) combines them with the data."""
    x, ind, upd = (expr_input(ctx, node, i) for i in range(3))
    axis = normalize_axis(node.attr("axis", 0), len(ctx.shape_of(x)))
    reduction = node.attr("reduction", "none") if ctx.opset >= 16 else "none"
    reduction = "update" if reduction == "none" else reduction
    return ctx.relay.scatter_elements(x, ind, upd, axis=axis, reduction=reduction)


@converter("ScatterND")
def _scatter_nd(ctx, node):
    """ONNX holds each index tuple along indices' last axis, relay.scatter_nd along its first: a transpose;
    ``reduction`` from opsets 16 (add, mul) and 18 (min, max)."""
    r = ctx.relay
    x, ind, upd = (expr_input(ctx, node, i) for i in range(3))
    rank = len(ctx.shape_of(ind))
    if rank < 1:
        raise FrontendError("indices must have rank 1 or more")
    if rank > 1:
        ind = r.transpose(ind, axes=[rank - 1] + list(range(rank - 1)))
    reduction = node.attr("reduction", "none") if ctx.opset >= 16 else "none"
    return r.scatter_nd(x, ind, upd, mode="update" if reduction == "none" else reduction)
