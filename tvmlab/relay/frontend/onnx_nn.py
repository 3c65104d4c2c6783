"""ONNX convolutions, pooling, normalisation and matrix products as ``relay.nn`` calls.

1-D convolutions and pools run as 2-D ones over a height of 1; 3-D ones are ``nn.conv3d`` /
``nn.max_pool3d`` / ``nn.avg_pool3d``. ONNX pads
list all begins then all ends, which for two spatial axes is Relay's
(top, left, bottom, right). ``auto_pad`` SAME_UPPER/SAME_LOWER is resolved here
from the static input shape.
"""
from __future__ import annotations

from .common import FrontendError, fold_same_padding, matmul
from .onnx_ops import converter, expr_input, has_input


def tuple_item(r, value, index):
    """Element ``index`` of an op returning a tuple (TupleWrapper or tuple-typed call)."""
    try:
        return value[index]
    except TypeError:
        return r.TupleGetItem(value, index)


def _spatial(ctx, node, in_spatial, kernel, transpose=False):
    """strides, dilations and 2-D padding for ``node`` over the spatial sizes ``in_spatial``."""
    n = len(in_spatial)
    strides = [int(v) for v in node.attr("strides", [1] * n)]
    dilations = [int(v) for v in node.attr("dilations", [1] * n)]
    if len(strides) != n or len(dilations) != n or len(kernel) != n:
        raise FrontendError(f"expected {n} strides, dilations and kernel sizes for {n} spatial axes, "
                            f"got strides={strides}, dilations={dilations}, kernel={list(kernel)}")
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        pads = [int(v) for v in node.attr("pads", [0] * (2 * n))]
        if len(pads) != 2 * n:
            raise FrontendError(f"expected {2 * n} pads for {n} spatial axes, got {pads}")
    elif auto_pad == "VALID":
        pads = [0] * (2 * n)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if transpose:
            raise FrontendError(f"auto_pad={auto_pad} on ConvTranspose is not supported; give pads")
        both = [fold_same_padding(s, k, st, d, upper=auto_pad == "SAME_UPPER")
                for s, k, st, d in zip(in_spatial, kernel, strides, dilations)]
        pads = [b for b, _ in both] + [e for _, e in both]
    else:
        raise FrontendError(f"auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got {auto_pad!r}")
    if n == 1:
        return [1, strides[0]], [1, dilations[0]], [0, pads[0], 0, pads[1]]
    return strides, dilations, pads


def _as_2d(r, x, rank):
    """A 1-D NC(W) tensor as NC1W; 2-D ones pass through; others are refused."""
    if rank == 3:
        return r.expand_dims(x, axis=2)
    if rank != 4:
        raise FrontendError(f"expected a 1-D, 2-D or 3-D spatial input (rank 3, 4 or 5), got rank {rank}")
    return x


@converter("Conv")
def _conv(ctx, node):
    r = ctx.relay
    x, w = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    xs, ws = ctx.shape_of(x), ctx.shape_of(w)
    if len(ws) != len(xs):
        raise FrontendError(f"weight rank {len(ws)} does not match input rank {len(xs)}")
    kernel = [int(k) for k in node.attr("kernel_shape", ws[2:])]
    if tuple(kernel) != tuple(ws[2:]):
        raise FrontendError(f"kernel_shape {kernel} does not match the weight's {list(ws[2:])}")
    groups = int(node.attr("group", 1))
    if xs[1] != ws[1] * groups:
        raise FrontendError(f"input has {xs[1]} channels, but the weight expects {ws[1]} x group {groups}")
    strides, dilations, pads = _spatial(ctx, node, xs[2:], kernel)
    if len(xs) == 5:
        out = r.nn.conv3d(x, w, strides=strides, padding=pads, dilation=dilations, groups=groups, channels=ws[0],
                          kernel_size=kernel)
        return r.nn.bias_add(out, expr_input(ctx, node, 2), axis=1) if has_input(node, 2) else out
    out = r.nn.conv2d(_as_2d(r, x, len(xs)), _as_2d(r, w, len(ws)), strides=strides, padding=pads,
                      dilation=dilations, groups=groups, channels=ws[0],
                      kernel_size=kernel if len(kernel) == 2 else [1, kernel[0]])
    if has_input(node, 2):
        out = r.nn.bias_add(out, expr_input(ctx, node, 2), axis=1)
    return r.squeeze(out, axis=[2]) if len(xs) == 3 else out


@converter("ConvTranspose")
def _conv_transpose(ctx, node):
    r = ctx.relay
    x, w = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    xs, ws = ctx.shape_of(x), ctx.shape_of(w)
    groups = int(node.attr("group", 1))
    kernel = [int(k) for k in node.attr("kernel_shape", ws[2:])]
    if xs[1] != ws[0]:
        raise FrontendError(f"input has {xs[1]} channels, but the weight expects {ws[0]}")
    if node.attr("output_shape") is not None:
        raise FrontendError("ConvTranspose with output_shape is not supported; give pads")
    strides, dilations, pads = _spatial(ctx, node, xs[2:], kernel, transpose=True)
    out_pad = [int(v) for v in node.attr("output_padding", [0] * len(kernel))]
    if len(kernel) == 1:
        out_pad = [0, out_pad[0]]
    out = r.nn.conv2d_transpose(_as_2d(r, x, len(xs)), _as_2d(r, w, len(ws)), strides=strides,
                                padding=pads, dilation=dilations, groups=groups,
                                channels=ws[1] * groups,
                                kernel_size=kernel if len(kernel) == 2 else [1, kernel[0]],
                                output_padding=out_pad)
    if has_input(node, 2):
        out = r.nn.bias_add(out, expr_input(ctx, node, 2), axis=1)
    return r.squeeze(out, axis=[2]) if len(xs) == 3 else out


def _pool_kernel(node):
    kernel = node.attr("kernel_shape")
    if kernel is None:
        raise FrontendError("kernel_shape is required")
    return [int(k) for k in kernel]


@converter("MaxPool", "AveragePool")
def _pool(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    xs = ctx.shape_of(x)
    kernel = _pool_kernel(node)
    if node.op_type == "AveragePool" and node.attr("dilations") not in (None, [1] * len(kernel)):
        raise FrontendError("AveragePool with dilations is not supported")
    if node.attr("storage_order", 0):
        raise FrontendError("MaxPool with storage_order=1 is not supported")
    strides, dilations, pads = _spatial(ctx, node, xs[2:], kernel)
    ceil = bool(node.attr("ceil_mode", 0))
    if len(xs) == 5:
        if node.op_type == "MaxPool":
            out = r.nn.max_pool3d(x, pool_size=kernel, strides=strides, dilation=dilations, padding=pads,
                                  ceil_mode=ceil)
        else:
            out = r.nn.avg_pool3d(x, pool_size=kernel, strides=strides, padding=pads, ceil_mode=ceil,
                                  count_include_pad=bool(node.attr("count_include_pad", 0)))
        return [out, None]
    size = kernel if len(kernel) == 2 else [1, kernel[0]]
    x2 = _as_2d(r, x, len(xs))
    if node.op_type == "MaxPool":
        kw = {} if dilations == [1, 1] else {"dilation": dilations}
        out = r.nn.max_pool2d(x2, pool_size=size, strides=strides, padding=pads, ceil_mode=ceil, **kw)
    else:
        out = r.nn.avg_pool2d(x2, pool_size=size, strides=strides, padding=pads, ceil_mode=ceil,
                              count_include_pad=bool(node.attr("count_include_pad", 0)))
    out = r.squeeze(out, axis=[2]) if len(xs) == 3 else out
    return [out, None]


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    xs = ctx.shape_of(x)
    fn = r.nn.global_avg_pool2d if node.op_type == "GlobalAveragePool" else r.nn.global_max_pool2d
    if len(xs) == 4:
        return fn(x)
    reduce = r.mean if node.op_type == "GlobalAveragePool" else r.max
    return reduce(x, axis=list(range(2, len(xs))), keepdims=True)


@converter("BatchNormalization")
def _batch_norm(ctx, node):
    r = ctx.relay
    if node.attr("training_mode", 0):
        raise FrontendError("BatchNormalization in training mode is not supported (inference only)")
    args = [expr_input(ctx, node, i) for i in range(5)]
    out = r.nn.batch_norm(*args, axis=1, epsilon=float(node.attr("epsilon", 1e-5)))
    return [tuple_item(r, out, 0)] + [None] * (len(node.outputs) - 1)


@converter("InstanceNormalization")
def _instance_norm(ctx, node):
    r = ctx.relay
    x, gamma, beta = (expr_input(ctx, node, i) for i in range(3))
    return r.nn.instance_norm(x, gamma, beta, axis=1, epsilon=float(node.attr("epsilon", 1e-5)))


@converter("LRN")
def _lrn(ctx, node):
    size = node.attr("size")
    if size is None:
        raise FrontendError("size is required")
    return ctx.relay.nn.lrn(expr_input(ctx, node, 0), size=int(size), axis=1,
                            alpha=float(node.attr("alpha", 1e-4)), beta=float(node.attr("beta", 0.75)),
                            bias=float(node.attr("bias", 1.0)))


@converter("Gemm")
def _gemm(ctx, node):
    r = ctx.relay
    a, b = expr_input(ctx, node, 0), expr_input(ctx, node, 1)
    a_shape, b_shape = ctx.shape_of(a), ctx.shape_of(b)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise FrontendError(f"expected 2-D A and B, got shapes {a_shape} and {b_shape}")
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if node.attr("transA", 0):
        a = r.transpose(a, axes=[1, 0])
        a_shape = a_shape[::-1]
    weight = b if node.attr("transB", 0) else r.transpose(b, axes=[1, 0])
    n = b_shape[0] if node.attr("transB", 0) else b_shape[1]
    if a_shape[1] != (b_shape[1] if node.attr("transB", 0) else b_shape[0]):
        raise FrontendError(f"A {a_shape} and B {b_shape} (transB={node.attr('transB', 0)}) do not multiply")
    out = r.nn.dense(a, weight, units=n)
    if alpha != 1.0:
        out = r.multiply(out, r.const(alpha, ctx.dtype_of(out)))
    if has_input(node, 2) and beta != 0.0:
        c = expr_input(ctx, node, 2)
        if beta != 1.0:
            c = r.multiply(c, r.const(beta, ctx.dtype_of(out)))
        cs = ctx.shape_of(c)
        if len(cs) == 1 and cs[0] == n and n > 1:
            out = r.nn.bias_add(out, c, axis=1)
        else:
            out = r.add(out, c)
    return out


@converter("MatMul")
def _matmul(ctx, node):
    """numpy's matmul (see common.matmul)."""
    return matmul(ctx.relay, ctx.shape_of, expr_input(ctx, node, 0), expr_input(ctx, node, 1))
