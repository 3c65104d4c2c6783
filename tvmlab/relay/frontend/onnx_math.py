"""ONNX elementwise arithmetic, activations, Clip/Cast, softmax and reductions as Relay calls.

Binary ops broadcast as numpy does (ONNX's rule from opset 7 on). Activations
Relay has no single op for (Elu, Selu, Softplus, HardSigmoid, ...) are
written with relu/exp/clip, which FuseOps puts in one kernel anyway.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError, gelu, layer_norm, normalize_axis, prod
from .onnx_ops import axes_arg, const_input, converter, expr_input, folder, has_input, scalar

_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "Pow": "power"}
_NUMPY_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}


def _float_operands(ctx, node):
    """Both operands, a constant of another float width taking the other operand's dtype (PyTorch's old
    exports mix float64 constants with float32 tensors, and float64 tensors with constants read as float32)."""
    a, b = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    da, db = ctx.dtype_of(a), ctx.dtype_of(b)
    if da != db and "float" in da and "float" in db:
        for k, other in ((0, db), (1, da)):
            value = ctx.known.get(node.inputs[k])
            if value is not None and node.inputs[k] not in ctx.param_vars:
                c = ctx.relay.const(np.asarray(value).astype(other), other)
                a, b = (c, b) if k == 0 else (a, c)
                break
    return a, b


@converter(*_BINARY)
def _binary(ctx, node):
    a, b = _float_operands(ctx, node)
    if node.op_type == "Pow":
        dt = ctx.dtype_of(a)
        if ctx.dtype_of(b) != dt:
            b = ctx.relay.cast(b, dt)
    return getattr(ctx.relay, _BINARY[node.op_type])(a, b)


@folder(*_NUMPY_BINARY, "Div")
def _fold_binary(node, values, opset):
    a, b = values
    if node.op_type == "Div":
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return np.trunc(a / b).astype(np.result_type(a, b))
        return np.divide(a, b)
    return _NUMPY_BINARY[node.op_type](a, b)


_UNARY = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Neg": "negative", "Abs": "abs", "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Round": "round"}


@converter(*_UNARY)
def _unary(ctx, node):
    return getattr(ctx.relay, _UNARY[node.op_type])(expr_input(ctx, node, 0))


@converter("Relu")
def _relu(ctx, node):
    return ctx.relay.nn.relu(expr_input(ctx, node, 0))


@converter("Identity", "Dropout")
def _identity(ctx, node):
    """Dropout at inference is the identity; its mask output is not produced."""
    if node.op_type == "Dropout":
        training = node.attr("is_test", 1) == 0 and ctx.opset < 7
        if ctx.opset >= 12 and has_input(node, 2):
            mode = const_input(ctx, node, 2, "training_mode")
            training = bool(np.asarray(mode).reshape(-1)[0])
        if training:
            raise FrontendError("Dropout in training mode is not supported (inference only)")
    return [expr_input(ctx, node, 0), None]


@folder("Identity")
def _fold_identity(node, values, opset):
    return values[0]


@converter("Reciprocal")
def _reciprocal(ctx, node):
    x = expr_input(ctx, node, 0)
    return ctx.relay.divide(scalar(ctx, x, 1.0), x)


@converter("LeakyRelu")
def _leaky_relu(ctx, node):
    return ctx.relay.nn.leaky_relu(expr_input(ctx, node, 0), alpha=float(node.attr("alpha", 0.01)))


def _neg_part(ctx, x, alpha):
    """alpha * (exp(x) - 1) where x < 0, 0 elsewhere, as -alpha * relu(1 - exp(x))."""
    r = ctx.relay
    one_minus = r.subtract(scalar(ctx, x, 1.0), r.exp(x))
    return r.multiply(scalar(ctx, x, -alpha), r.nn.relu(one_minus))


@converter("Elu")
def _elu(ctx, node):
    x = expr_input(ctx, node, 0)
    return ctx.relay.add(ctx.relay.nn.relu(x), _neg_part(ctx, x, float(node.attr("alpha", 1.0))))


@converter("Selu")
def _selu(ctx, node):
    x = expr_input(ctx, node, 0)
    alpha = float(node.attr("alpha", 1.67326319217681884765625))
    gamma = float(node.attr("gamma", 1.05070102214813232421875))
    inner = ctx.relay.add(ctx.relay.nn.relu(x), _neg_part(ctx, x, alpha))
    return ctx.relay.multiply(scalar(ctx, x, gamma), inner)


@converter("Softplus")
def _softplus(ctx, node):
    """log(1 + exp(x)) written as relu(x) + log(1 + exp(-|x|)), which does not overflow."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    tail = r.log(r.add(scalar(ctx, x, 1.0), r.exp(r.negative(r.abs(x)))))
    return r.add(r.nn.relu(x), tail)


@converter("Softsign")
def _softsign(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    return r.divide(x, r.add(scalar(ctx, x, 1.0), r.abs(x)))


def _hard_sigmoid(ctx, x, alpha, beta):
    r = ctx.relay
    return r.clip(r.add(r.multiply(scalar(ctx, x, alpha), x), scalar(ctx, x, beta)), 0.0, 1.0)


@converter("HardSigmoid")
def _hardsigmoid(ctx, node):
    return _hard_sigmoid(ctx, expr_input(ctx, node, 0), float(node.attr("alpha", 0.2)),
                         float(node.attr("beta", 0.5)))


@converter("HardSwish")
def _hardswish(ctx, node):
    x = expr_input(ctx, node, 0)
    return ctx.relay.multiply(x, _hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5))


@converter("PRelu")
def _prelu(ctx, node):
    """relay.nn.prelu on axis 1 when the slope is per channel; relu(x) - slope*relu(-x) otherwise."""
    r = ctx.relay
    x, slope = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    xs, ss = ctx.shape_of(x), ctx.shape_of(slope)
    padded = (1,) * (len(xs) - len(ss)) + tuple(ss)
    if len(xs) >= 2 and len(padded) == len(xs) and padded[1] == xs[1] > 1 and \
            prod(padded) == xs[1]:
        return r.nn.prelu(x, r.reshape(slope, newshape=(xs[1],)), axis=1)
    if len(xs) >= 3 and tuple(ss) == (xs[1],) and xs[-1] != xs[1]:
        # one slope per channel that does not broadcast from the right: how PyTorch's opset-6 exports
        # (and ONNX before opset 7) meant it
        return r.nn.prelu(x, slope, axis=1)
    return r.subtract(r.nn.relu(x), r.multiply(slope, r.nn.relu(r.negative(x))))


@converter("Clip")
def _clip(ctx, node):
    x = expr_input(ctx, node, 0)
    if ctx.opset < 11:
        lo, hi = node.attr("min", -np.inf), node.attr("max", np.inf)
        return ctx.relay.clip(x, float(lo), float(hi))
    lo_known = not has_input(node, 1) or node.inputs[1] in ctx.known
    hi_known = not has_input(node, 2) or node.inputs[2] in ctx.known
    if lo_known and hi_known:
        lo = const_input(ctx, node, 1, "min")
        hi = const_input(ctx, node, 2, "max")
        lo = -np.inf if lo is None else float(np.asarray(lo).reshape(-1)[0])
        hi = np.inf if hi is None else float(np.asarray(hi).reshape(-1)[0])
        return ctx.relay.clip(x, lo, hi)
    out = x
    if has_input(node, 1):
        out = ctx.relay.maximum(out, expr_input(ctx, node, 1))
    if has_input(node, 2):
        out = ctx.relay.minimum(out, expr_input(ctx, node, 2))
    return out


def _to_dtype(node):
    from .onnx import np_dtype
    return np_dtype(node.attr("to"))


@converter("Cast")
def _cast(ctx, node):
    return ctx.relay.cast(expr_input(ctx, node, 0), str(_to_dtype(node)))


@folder("Cast")
def _fold_cast(node, values, opset):
    return values[0].astype(_to_dtype(node))


@converter("Max", "Min", "Sum", "Mean")
def _variadic(ctx, node):
    r = ctx.relay
    fn = {"Max": r.maximum, "Min": r.minimum, "Sum": r.add, "Mean": r.add}[node.op_type]
    xs = [ctx.expr_of(i) for i in node.inputs if i]
    if not xs:
        raise FrontendError("needs at least one input")
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    if node.op_type == "Mean" and len(xs) > 1:
        out = r.divide(out, scalar(ctx, out, float(len(xs))))
    return out


@converter("Softmax", "LogSoftmax")
def _softmax(ctx, node):
    """From opset 13 on over one axis (default -1); before, over the flattened axes from ``axis`` (default 1)."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    fn = r.nn.softmax if node.op_type == "Softmax" else r.nn.log_softmax
    shape = ctx.shape_of(x)
    rank = len(shape)
    if ctx.opset >= 13:
        return fn(x, axis=normalize_axis(node.attr("axis", -1), rank))
    axis = normalize_axis(node.attr("axis", 1), rank)
    if axis == rank - 1:
        return fn(x, axis=axis)
    flat = r.reshape(x, newshape=(prod(shape[:axis]), prod(shape[axis:])))
    return r.reshape(fn(flat, axis=1), newshape=shape)


_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min"}
_DERIVED = ("ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")


@converter(*_REDUCE, *_DERIVED)
def _reduce(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    since = 13 if node.op_type == "ReduceSum" else 18
    axes = axes_arg(ctx, node, since)
    keepdims = bool(node.attr("keepdims", 1))
    rank = len(ctx.shape_of(x))
    if not axes:
        if ctx.opset >= since and node.attr("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    axes = sorted({normalize_axis(a, rank, "reduction axis") for a in axes})
    op = node.op_type
    if op in _REDUCE:
        return getattr(r, _REDUCE[op])(x, axis=axes, keepdims=keepdims)
    if op == "ReduceSumSquare":
        return r.sum(r.multiply(x, x), axis=axes, keepdims=keepdims)
    if op == "ReduceL1":
        return r.sum(r.abs(x), axis=axes, keepdims=keepdims)
    if op == "ReduceL2":
        return r.sqrt(r.sum(r.multiply(x, x), axis=axes, keepdims=keepdims))
    if op == "ReduceLogSum":
        return r.log(r.sum(x, axis=axes, keepdims=keepdims))
    top = r.max(x, axis=axes, keepdims=True)
    total = r.log(r.sum(r.exp(r.subtract(x, top)), axis=axes, keepdims=True))
    out = r.add(total, top)
    return out if keepdims else r.squeeze(out, axis=axes)


@converter("Gelu")
def _gelu(ctx, node):
    x = expr_input(ctx, node, 0)
    return gelu(ctx.relay, x, node.attr("approximate", "none"), ctx.dtype_of(x))


@converter("Mish")
def _mish(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    softplus = r.add(r.nn.relu(x), r.log(r.add(scalar(ctx, x, 1.0), r.exp(r.negative(r.abs(x))))))
    return r.multiply(x, r.tanh(softplus))


@converter("Celu")
def _celu(ctx, node):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    alpha = float(node.attr("alpha", 1.0))
    return r.add(r.nn.relu(x), _neg_part(ctx, r.divide(x, scalar(ctx, x, alpha)), alpha))


@converter("LayerNormalization")
def _layer_norm(ctx, node):
    """Normalised over the axes from ``axis`` on, then scaled and shifted."""
    x, scale = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    rank = len(ctx.shape_of(x))
    axes = list(range(normalize_axis(node.attr("axis", -1), rank), rank))
    if node.attr("stash_type", 1) != 1:
        raise FrontendError("only stash_type=1 (float32 statistics) is supported")
    bias = expr_input(ctx, node, 2) if has_input(node, 2) else None
    out = layer_norm(ctx.relay, x, axes, scale, bias, node.attr("epsilon", 1e-5), ctx.dtype_of(x), ctx.shape_of)
    return [out] + [None] * (len(node.outputs) - 1)
