"""Neural-network operators: ``relay.nn.conv2d``, ``dense``, pools, normalisations, ... (TVM's names and attrs)."""
from __future__ import annotations

import numpy as np

from ..base import RelayError, TypeInferenceError
from ..expr import TupleWrapper
from ..ty import TensorType, TupleType
from .registry import OpPattern, make_call, register
from .tensor import _ints, _unary
from .typerel import norm_axis, padding4, pair, same_dtype, tensor_arg

OUT_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE


def _check_layout(name, attrs, data_layout="NCHW", kernel_layout=None):
    if attrs.get("data_layout", attrs.get("layout", data_layout)) != data_layout:
        raise TypeInferenceError(f"only layout {data_layout} is supported, got "
                                 f"{attrs.get('data_layout', attrs.get('layout'))!r} (use relay.transpose first)")
    if kernel_layout and attrs.get("kernel_layout") != kernel_layout:
        raise TypeInferenceError(f"only kernel_layout {kernel_layout} is supported, got {attrs.kernel_layout!r}")


def conv_out(size, k, stride, dilation, pad_before, pad_after):
    return (size + pad_before + pad_after - ((k - 1) * dilation + 1)) // stride + 1


# ------------------------------------------------------------------ conv2d
def _conv2d_rel(types, attrs):
    _check_layout("nn.conv2d", attrs, "NCHW", "OIHW")
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    same_dtype(d, w, "data", "weight")
    if len(d.shape) != 4 or len(w.shape) != 4:
        raise TypeInferenceError(f"data and weight must be 4-D (NCHW, OIHW), got {d.shape} and {w.shape}")
    n, c, h, wd = d.shape
    o, ci, kh, kw = w.shape
    g = attrs.groups
    if g < 1 or c % g or o % g or ci * g != c:
        raise TypeInferenceError(f"data has {c} channels and weight {w.shape} with groups={g}: "
                                 f"expected weight input channels {c // max(g, 1)} and both counts divisible by groups")
    if attrs.channels is not None and attrs.channels != o:
        raise TypeInferenceError(f"channels={attrs.channels} but the weight has {o} output channels")
    if attrs.kernel_size is not None and tuple(attrs.kernel_size) != (kh, kw):
        raise TypeInferenceError(f"kernel_size={tuple(attrs.kernel_size)} but the weight is {kh}x{kw}")
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, pb, pr = attrs.padding
    oh, ow = conv_out(h, kh, sh, dh, pt, pb), conv_out(wd, kw, sw, dw, pl, pr)
    if oh < 1 or ow < 1:
        raise TypeInferenceError(f"the {kh}x{kw} kernel does not fit the {h}x{wd} input (with padding {attrs.padding})")
    return TensorType((n, o, oh, ow), attrs.out_dtype or d.dtype)


def _conv2d_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    data, kernel = inputs
    args = (attrs.strides, tuple(attrs.padding), attrs.dilation)
    o, ipg = _ints(kernel)[:2]
    if attrs.groups == 1:
        return [topi_nn.conv2d_nchw(data, kernel, *args, out_dtype=out_type.dtype)]
    if attrs.groups == o and ipg == 1:           # one output channel per input channel
        return [topi_nn.depthwise_conv2d_nchw(data, kernel, *args, out_dtype=out_type.dtype)]
    return [topi_nn.group_conv2d_nchw(data, kernel, *args, attrs.groups, out_dtype=out_type.dtype)]


register("nn.conv2d", _conv2d_rel, OUT_FUSABLE, _conv2d_compute,
         {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
          "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "OIHW", "out_layout": "",
          "out_dtype": ""}, 2)


def _conv_attrs(strides, padding, dilation, groups, channels, kernel_size, out_dtype):
    try:
        return dict(strides=pair(strides, "strides"), padding=padding4(padding), dilation=pair(dilation, "dilation"),
                    groups=int(groups), channels=None if channels is None else int(channels),
                    kernel_size=None if kernel_size is None else pair(kernel_size, "kernel_size"),
                    out_dtype=out_dtype or "")
    except TypeInferenceError as e:
        raise RelayError(str(e)) from None


def conv2d(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
           kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_layout="", out_dtype=""):
    """``relay.nn.conv2d``: 2-D convolution, NCHW data and OIHW weight (groups, strides, padding, dilation)."""
    a = _conv_attrs(strides, padding, dilation, groups, channels, kernel_size, out_dtype)
    if min(a["strides"]) < 1 or min(a["dilation"]) < 1 or a["groups"] < 1:
        raise RelayError(f"nn.conv2d: strides, dilation and groups must be >= 1, got {a['strides']}, "
                         f"{a['dilation']}, {a['groups']}")
    return make_call("nn.conv2d", [data, weight], data_layout=data_layout, kernel_layout=kernel_layout,
                     out_layout=out_layout, **a)


def contrib_conv2d_nchwc(data, kernel, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
                        kernel_size=None, data_layout="NCHW8c", kernel_layout="OIHW8i8o", out_layout="",
                        out_dtype=""):
    """``relay.nn.contrib_conv2d_nchwc``: the blocked convolution AlterOpLayout makes (data NCHW{i}c, kernel
    OIHW{i}i{o}o, output NCHW{o}c; ``out_layout`` defaults to the data's layout)."""
    a = _conv_attrs(strides, padding, dilation, groups, channels, kernel_size, out_dtype)
    if a["groups"] < 1:
        raise RelayError(f"nn.contrib_conv2d_NCHWc: groups must be >= 1, got {a['groups']}")
    return make_call("nn.contrib_conv2d_NCHWc", [data, kernel], data_layout=data_layout, kernel_layout=kernel_layout,
                     out_layout=out_layout or data_layout, **a)


def contrib_depthwise_conv2d_nchwc(data, kernel, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                                   channels=None, kernel_size=None, data_layout="NCHW8c", kernel_layout="OIHW1i8o",
                                   out_layout="", out_dtype=""):
    """``relay.nn.contrib_depthwise_conv2d_nchwc``: the blocked depthwise convolution AlterOpLayout makes (data
    NCHW{i}c, kernel OIHW1i{o}o, output NCHW{o}c, output channel ``c * multiplier + m`` reading channel ``c``)."""
    a = _conv_attrs(strides, padding, dilation, groups, channels, kernel_size, out_dtype)
    if min(a["strides"]) < 1 or min(a["dilation"]) < 1:
        raise RelayError(f"nn.contrib_depthwise_conv2d_NCHWc: strides and dilation must be >= 1, got "
                         f"{a['strides']}, {a['dilation']}")
    return make_call("nn.contrib_depthwise_conv2d_NCHWc", [data, kernel], data_layout=data_layout,
                     kernel_layout=kernel_layout, out_layout=out_layout or data_layout, **a)


# ------------------------------------------------------------------ conv2d_transpose
def _convt_rel(types, attrs):
    _check_layout("nn.conv2d_transpose", attrs, "NCHW", "IOHW")
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    same_dtype(d, w, "data", "weight")
    if len(d.shape) != 4 or len(w.shape) != 4:
        raise TypeInferenceError(f"data and weight must be 4-D, got {d.shape} and {w.shape}")
    n, c, h, wd = d.shape
    ci, og, kh, kw = w.shape
    g = attrs.groups
    if ci != c or c % g:
        raise TypeInferenceError(f"data has {c} channels but the weight (IOHW) {w.shape} expects {ci} "
                                 f"(groups={g})")
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, pb, pr = attrs.padding
    oph, opw = attrs.output_padding
    if pt > dh * (kh - 1) or pb > dh * (kh - 1) or pl > dw * (kw - 1) or pr > dw * (kw - 1):
        raise TypeInferenceError(f"padding {attrs.padding} is larger than the dilated kernel")
    oh = (h - 1) * sh - pt - pb + dh * (kh - 1) + 1 + oph
    ow = (wd - 1) * sw - pl - pr + dw * (kw - 1) + 1 + opw
    return TensorType((n, og * g, oh, ow), attrs.out_dtype or d.dtype)


def _convt_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    data, w = inputs
    return [topi_nn.conv2d_transpose_nchw(data, w, attrs.strides, tuple(attrs.padding), out_type.dtype,
                                          attrs.output_padding, dilation=attrs.dilation, groups=attrs.groups)]


register("nn.conv2d_transpose", _convt_rel, OUT_FUSABLE, _convt_compute,
         {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
          "kernel_size": None, "data_layout": "NCHW", "kernel_layout": "IOHW", "out_layout": "",
          "output_padding": (0, 0), "out_dtype": ""}, 2)


def conv2d_transpose(data, weight, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, channels=None,
                     kernel_size=None, data_layout="NCHW", kernel_layout="IOHW", out_layout="",
                     output_padding=(0, 0), out_dtype=""):
    """``relay.nn.conv2d_transpose``: NCHW data, IOHW weight (input channels first)."""
    a = _conv_attrs(strides, padding, dilation, groups, channels, kernel_size, out_dtype)
    return make_call("nn.conv2d_transpose", [data, weight], data_layout=data_layout, kernel_layout=kernel_layout,
                     out_layout=out_layout, output_padding=pair(output_padding, "output_padding"), **a)


# ------------------------------------------------------------------ dense / matmul / batch_matmul
def _dense_rel(types, attrs):
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    same_dtype(d, w, "data", "weight")
    if len(d.shape) < 1 or len(w.shape) != 2 or d.shape[-1] != w.shape[1]:
        raise TypeInferenceError(f"data {d.shape} and weight {w.shape} do not fit: dense needs weight "
                                 f"(units, {d.shape[-1] if d.shape else '?'})")
    if attrs.units is not None and attrs.units != w.shape[0]:
        raise TypeInferenceError(f"units={attrs.units} but the weight has {w.shape[0]} rows")
    return TensorType(d.shape[:-1] + (w.shape[0],), attrs.out_dtype or d.dtype)


def _tensorcore(a, b, out_dtype, batched):
    """A float16 product for a CUDA target with tensor cores (``relay.cuda_tensorcore``, on by default)."""
    from ...ir.transform import PassContext
    from ...topi.cuda.tensorcore import tensorcore_fits
    return out_dtype in ("float16", "float32") and \
        PassContext.current().config.get("relay.cuda_tensorcore", True) and tensorcore_fits(a, b, batched)


def _dense_compute(attrs, inputs, out_type):
    from ... import topi
    a, w = inputs
    if _tensorcore(a, w, out_type.dtype, False):
        return [topi.cuda.dense_tensorcore(a, w, out_dtype=out_type.dtype)]
    if len(a.shape) == 2:
        return [topi.nn.dense(a, w, out_dtype=out_type.dtype)]
    lead = _ints(a)[:-1]                  # (..., K): the leading axes as the rows of one product
    rows = topi.reshape(a, (int(np.prod(lead)), _ints(a)[-1]))
    return [topi.reshape(topi.nn.dense(rows, w, out_dtype=out_type.dtype), tuple(out_type.shape))]


register("nn.dense", _dense_rel, OUT_FUSABLE, _dense_compute, {"units": None, "out_dtype": ""}, 2)


def dense(data, weight, units=None, out_dtype=""):
    """``relay.nn.dense(data, weight)``: ``data @ weight.T`` (weight is (units, in))."""
    return make_call("nn.dense", [data, weight], units=units, out_dtype=out_dtype)


def _matmul_rel(types, attrs):
    a, b = tensor_arg(types, 0), tensor_arg(types, 1, "tensor_b")
    same_dtype(a, b, "tensor_a", "tensor_b")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise TypeInferenceError(f"nn.matmul needs 2-D tensors, got {a.shape} and {b.shape}")
    m, k = a.shape[::-1] if attrs.transpose_a else a.shape
    k2, n = b.shape[::-1] if attrs.transpose_b else b.shape
    if k != k2:
        raise TypeInferenceError(f"inner dimensions differ: {a.shape} x {b.shape} "
                                 f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})")
    return TensorType((m, n), attrs.out_dtype or a.dtype)


def _matmul_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    a, b = inputs
    return [topi_nn.matmul(a, b, out_dtype=out_type.dtype, transpose_a=attrs.transpose_a,
                           transpose_b=attrs.transpose_b)]


register("nn.matmul", _matmul_rel, OUT_FUSABLE, _matmul_compute,
         {"units": None, "out_dtype": "", "transpose_a": False, "transpose_b": False}, 2)


def matmul(tensor_a, tensor_b, units=None, out_dtype="", transpose_a=False, transpose_b=False):
    """``relay.nn.matmul(a, b, transpose_a=False, transpose_b=False)``."""
    return make_call("nn.matmul", [tensor_a, tensor_b], units=units, out_dtype=out_dtype,
                     transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))


def _bmm_rel(types, attrs):
    a, b = tensor_arg(types, 0), tensor_arg(types, 1, "y")
    same_dtype(a, b, "x", "y")
    if len(a.shape) < 3 or len(a.shape) != len(b.shape):
        raise TypeInferenceError(f"nn.batch_matmul needs 3-D tensors (or N-D of one rank: leading axes are "
                                 f"batches), got {a.shape} and {b.shape}")
    *ba, m, k = a.shape if not attrs.transpose_a else a.shape[:-2] + (a.shape[-1], a.shape[-2])
    *bb, n, k2 = b.shape if attrs.transpose_b else b.shape[:-2] + (b.shape[-1], b.shape[-2])
    if k != k2 or any(x != y and 1 not in (x, y) for x, y in zip(ba, bb)):
        raise TypeInferenceError(f"batch_matmul shapes do not fit: {a.shape} x {b.shape} "
                                 f"(transpose_a={attrs.transpose_a}, transpose_b={attrs.transpose_b})")
    return TensorType(tuple(max(x, y) for x, y in zip(ba, bb)) + (m, n), attrs.out_dtype or a.dtype)


def _bmm_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    a, b = inputs
    if attrs.transpose_b and not attrs.transpose_a and _tensorcore(a, b, out_type.dtype, True):
        from ...topi.cuda.tensorcore import batch_matmul_tensorcore
        return [batch_matmul_tensorcore(a, b, out_dtype=out_type.dtype)]
    return [topi_nn.batch_matmul(a, b, out_dtype=out_type.dtype, transpose_a=attrs.transpose_a,
                                 transpose_b=attrs.transpose_b)]


register("nn.batch_matmul", _bmm_rel, OUT_FUSABLE, _bmm_compute,
         {"out_dtype": "", "transpose_a": False, "transpose_b": True}, 2)


def batch_matmul(x, y, out_dtype="", transpose_a=False, transpose_b=True):
    """``relay.nn.batch_matmul(x, y)``: (B, M, K) x (B, N, K) -> (B, M, N) by default; ``transpose_b=False``
    reads y as (B, K, N).  Beyond TVM, x and y may have more leading batch axes (one rank; each equal or 1,
    broadcast): attention's (batch, heads, tokens, dim) products need no reshapes, and a scale or mask
    after them keeps the product's shape (and fuses)."""
    return make_call("nn.batch_matmul", [x, y], out_dtype=out_dtype, transpose_a=bool(transpose_a),
                     transpose_b=bool(transpose_b))


# ------------------------------------------------------------------ bias_add, activations
def _channel_vec_rel(what):
    def rel(types, attrs):
        d, v = tensor_arg(types, 0), tensor_arg(types, 1, what)
        same_dtype(d, v, "data", what)
        a = norm_axis(attrs.axis, len(d.shape))
        if v.shape != (d.shape[a],):
            raise TypeInferenceError(f"{what} must have shape ({d.shape[a]},) (axis {a} of {d.shape}), got {v.shape}")
        return d
    return rel


def _bias_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    return [topi_nn.bias_add(inputs[0], inputs[1], attrs.axis)]


register("nn.bias_add", _channel_vec_rel("bias"), OpPattern.BROADCAST, _bias_compute, {"axis": 1}, 2)


def bias_add(data, bias, axis=1):
    """``relay.nn.bias_add(data, bias, axis=1)``."""
    return make_call("nn.bias_add", [data, bias], axis=int(axis))


def _topi_identity(x, a, d):
    from ... import topi
    return topi.identity(x)


def _topi_relu(x, a, d):
    from ...topi import nn as topi_nn
    return topi_nn.relu(x)


def _topi_leaky(x, a, d):
    from ...topi import nn as topi_nn
    return topi_nn.leaky_relu(x, a.alpha)


relu = _unary("nn.relu", topi=_topi_relu)
_leaky = _unary("nn.leaky_relu", topi=_topi_leaky, alpha=0.01)


def leaky_relu(data, alpha=0.01):
    """``relay.nn.leaky_relu(data, alpha)``."""
    return _leaky(data, alpha=float(alpha))


def _prelu_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    return [topi_nn.prelu(inputs[0], inputs[1], attrs.axis)]


register("nn.prelu", _channel_vec_rel("alpha"), OpPattern.BROADCAST, _prelu_compute, {"axis": 1}, 2)


def prelu(data, alpha, axis=1):
    """``relay.nn.prelu(data, alpha, axis=1)``: alpha per channel."""
    return make_call("nn.prelu", [data, alpha], axis=int(axis))


# ------------------------------------------------------------------ batch_norm, dropout, instance_norm
def _bn_rel(types, attrs):
    d = tensor_arg(types, 0)
    a = norm_axis(attrs.axis, len(d.shape))
    for k, what in enumerate(("gamma", "beta", "moving_mean", "moving_var"), 1):
        v = tensor_arg(types, k, what)
        if v.shape != (d.shape[a],) or v.dtype != d.dtype:
            raise TypeInferenceError(f"{what} must be {d.dtype}[{d.shape[a]}] (axis {a} of {d.shape}), got {v!r}")
    vec = TensorType((d.shape[a],), d.dtype)
    return TupleType([d, vec, vec])


def _bn_compute(attrs, inputs, out_type):
    from ... import topi
    x, g, b, m, v = inputs
    # the statistics come back unchanged, as copies: a group's outputs are computed tensors
    return topi.nn.batch_norm(x, g, b, m, v, attrs.axis, attrs.epsilon, attrs.center, attrs.scale)


register("nn.batch_norm", _bn_rel, OpPattern.OPAQUE, _bn_compute,
         {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True}, 5)


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True, scale=True):
    """``relay.nn.batch_norm`` (inference): a TupleWrapper whose ``[0]`` is the normalised data."""
    call = make_call("nn.batch_norm", [data, gamma, beta, moving_mean, moving_var], axis=int(axis),
                     epsilon=float(epsilon), center=bool(center), scale=bool(scale))
    return TupleWrapper(call, 3)


_dropout = _unary("nn.dropout", topi=_topi_identity, rate=0.5)


def dropout(data, rate=0.5):
    """``relay.nn.dropout(data, rate)``: the identity at inference (SimplifyInference removes it)."""
    return _dropout(data, rate=float(rate))


def _inorm_rel(types, attrs):
    d = tensor_arg(types, 0)
    if len(d.shape) < 3:
        raise TypeInferenceError(f"instance_norm needs data of rank >= 3, got {d.shape}")
    a = norm_axis(attrs.axis, len(d.shape))
    for k, what in ((1, "gamma"), (2, "beta")):
        v = tensor_arg(types, k, what)
        if v.shape != (d.shape[a],):
            raise TypeInferenceError(f"{what} must have shape ({d.shape[a]},), got {v.shape}")
    return d


def _inorm_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    x, g, b = inputs
    n = len(x.shape)
    a = attrs.axis % n
    return [topi_nn.instance_norm(x, g, b, [d for d in range(n) if d not in (0, a)], attrs.epsilon, a)]


register("nn.instance_norm", _inorm_rel, OpPattern.OPAQUE, _inorm_compute,
         {"axis": 1, "epsilon": 1e-5, "center": True, "scale": True}, 3)


def instance_norm(data, gamma, beta, axis=1, epsilon=1e-5, center=True, scale=True):
    """``relay.nn.instance_norm``: per sample and channel over the remaining axes."""
    return make_call("nn.instance_norm", [data, gamma, beta], axis=int(axis), epsilon=float(epsilon),
                     center=bool(center), scale=bool(scale))


# ------------------------------------------------------------------ softmax, lrn
def _softmax_rel(types, attrs):
    d = tensor_arg(types, 0)
    norm_axis(attrs.axis, len(d.shape))
    return d


def _softmax(log):
    def compute(attrs, inputs, out_type):
        from ...topi import nn as topi_nn
        return [(topi_nn.log_softmax if log else topi_nn.softmax)(inputs[0], attrs.axis)]
    return compute


# reductions by pattern (TVM: opaque): the scale and mask computing a softmax's input and the element-wise
# ops after it join its kernel, which topi.x86.schedule_softmax runs one row at a time
register("nn.softmax", _softmax_rel, OpPattern.COMM_REDUCE, _softmax(False), {"axis": -1}, 1)
register("nn.log_softmax", _softmax_rel, OpPattern.COMM_REDUCE, _softmax(True), {"axis": -1}, 1)


def softmax(data, axis=-1):
    """``relay.nn.softmax(data, axis=-1)``."""
    return make_call("nn.softmax", [data], axis=int(axis))


def log_softmax(data, axis=-1):
    """``relay.nn.log_softmax(data, axis=-1)``."""
    return make_call("nn.log_softmax", [data], axis=int(axis))


def _lrn_rel(types, attrs):
    d = tensor_arg(types, 0)
    norm_axis(attrs.axis, len(d.shape))
    if attrs.size < 1:
        raise TypeInferenceError(f"size must be >= 1, got {attrs.size}")
    return d


def _lrn_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    return [topi_nn.lrn(inputs[0], attrs.size, attrs.axis, attrs.alpha, attrs.beta, attrs.bias)]


register("nn.lrn", _lrn_rel, OpPattern.OPAQUE, _lrn_compute,
         {"size": 5, "axis": 1, "bias": 2.0, "alpha": 1e-5, "beta": 0.75}, 1)


def lrn(data, size=5, axis=1, bias=2.0, alpha=1e-5, beta=0.75):
    """``relay.nn.lrn``: ``x / (bias + alpha / size * sum(x^2 over size channels)) ** beta``."""
    return make_call("nn.lrn", [data], size=int(size), axis=int(axis), bias=float(bias), alpha=float(alpha),
                     beta=float(beta))


# ------------------------------------------------------------------ pooling
def _pool_out(attrs, h, w):
    kh, kw = attrs.pool_size
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, pb, pr = attrs.padding
    out = []
    for size, k, s, d, p0, p1 in ((h, kh, sh, dh, pt, pb), (w, kw, sw, dw, pl, pr)):
        span = size + p0 + p1 - ((k - 1) * d + 1)
        if span < 0:
            raise TypeInferenceError(f"pool window {attrs.pool_size} does not fit the {h}x{w} input")
        o = (span + (s - 1 if attrs.ceil_mode else 0)) // s + 1
        if attrs.ceil_mode and (o - 1) * s >= size + p0:
            o -= 1      # the last window must start inside the input or its leading padding
        out.append(o)
    return out


def _pool_data(types, attrs):
    """The data type of a pool, checked against its layout (NCHW, or NCHW{b}c after AlterOpLayout)."""
    from ..layout import block_of
    d = tensor_arg(types, 0)
    b = block_of(attrs.layout)
    if b is None:
        raise TypeInferenceError(f"only layouts NCHW and NCHW[x]c are supported, got {attrs.layout!r}")
    if len(d.shape) != (4 if b == 1 else 5) or (b > 1 and d.shape[4] != b):
        raise TypeInferenceError(f"data {d.shape} is not in layout {attrs.layout}")
    return d


def _pool_rel(types, attrs):
    d = _pool_data(types, attrs)
    oh, ow = _pool_out(attrs, d.shape[2], d.shape[3])
    return TensorType(d.shape[:2] + (oh, ow) + d.shape[4:], d.dtype)


def _pool_compute(kind):
    def compute(attrs, inputs, out_type):
        from ...topi import nn as topi_nn
        return [topi_nn.pool2d(inputs[0], attrs.pool_size, attrs.strides, attrs.dilation, tuple(attrs.padding), kind,
                               attrs.ceil_mode, attrs.layout, attrs.get("count_include_pad", False),
                               drop_pad_windows=True)]
    return compute


_POOL = {"pool_size": (1, 1), "strides": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0),
         "layout": "NCHW", "out_layout": "", "ceil_mode": False}
register("nn.max_pool2d", _pool_rel, OUT_FUSABLE, _pool_compute("max"), dict(_POOL), 1)
register("nn.avg_pool2d", _pool_rel, OUT_FUSABLE, _pool_compute("avg"), {**_POOL, "count_include_pad": False}, 1)


def _pool_attrs(pool_size, strides, dilation, padding):
    try:
        a = dict(pool_size=pair(pool_size, "pool_size"), strides=pair(strides, "strides"),
                 dilation=pair(dilation, "dilation"), padding=padding4(padding))
    except TypeInferenceError as e:
        raise RelayError(f"pool2d: {e}") from None
    if min(a["pool_size"] + a["strides"] + a["dilation"]) < 1:
        raise RelayError(f"pool2d: pool_size, strides and dilation must be >= 1, got {a}")
    return a


def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout="NCHW",
               out_layout="", ceil_mode=False):
    """``relay.nn.max_pool2d`` (NCHW; padding never wins the max)."""
    return make_call("nn.max_pool2d", [data], layout=layout, out_layout=out_layout, ceil_mode=bool(ceil_mode),
                     **_pool_attrs(pool_size, strides, dilation, padding))


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0), layout="NCHW",
               out_layout="", ceil_mode=False, count_include_pad=False):
    """``relay.nn.avg_pool2d`` (NCHW; ``count_include_pad`` counts the padding in the divisor; a dilated
    window divides by the taps it reads)."""
    a = _pool_attrs(pool_size, strides, dilation, padding)
    return make_call("nn.avg_pool2d", [data], layout=layout, out_layout=out_layout, ceil_mode=bool(ceil_mode),
                     count_include_pad=bool(count_include_pad), **a)


def _gpool_rel(types, attrs):
    d = _pool_data(types, attrs)
    return TensorType(d.shape[:2] + (1, 1) + d.shape[4:], d.dtype)


def _gpool_compute(kind):
    def compute(attrs, inputs, out_type):
        from ...topi import nn as topi_nn
        return [topi_nn.global_pool(inputs[0], kind, attrs.layout)]
    return compute


register("nn.global_avg_pool2d", _gpool_rel, OUT_FUSABLE, _gpool_compute("avg"),
         {"layout": "NCHW", "out_layout": ""}, 1)
register("nn.global_max_pool2d", _gpool_rel, OUT_FUSABLE, _gpool_compute("max"),
         {"layout": "NCHW", "out_layout": ""}, 1)


def global_avg_pool2d(data, layout="NCHW", out_layout=""):
    """``relay.nn.global_avg_pool2d``: (N, C, H, W) -> (N, C, 1, 1)."""
    return make_call("nn.global_avg_pool2d", [data], layout=layout, out_layout=out_layout)


def global_max_pool2d(data, layout="NCHW", out_layout=""):
    """``relay.nn.global_max_pool2d``: (N, C, H, W) -> (N, C, 1, 1)."""
    return make_call("nn.global_max_pool2d", [data], layout=layout, out_layout=out_layout)


# ------------------------------------------------------------------ pad, batch_flatten
def _pad_rel(types, attrs):
    d = tensor_arg(types, 0)
    pw = attrs.pad_width
    if len(pw) != len(d.shape) or any(len(p) != 2 or min(p) < 0 for p in pw):
        raise TypeInferenceError(f"pad_width must give (before, after) >= 0 for each of the {len(d.shape)} "
                                 f"axes, got {pw}")
    if attrs.pad_mode == "reflect" and any(max(p) >= n for p, n in zip(pw, d.shape) if max(p)):
        raise TypeInferenceError(f"reflect padding {pw} needs at most size - 1 elements each side of {d.shape}")
    return TensorType([s + a + b for s, (a, b) in zip(d.shape, pw)], d.dtype)


def _pad_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    pw = attrs.pad_width
    return [topi_nn.pad(inputs[0], [a for a, _ in pw], [b for _, b in pw], attrs.pad_value, pad_mode=attrs.pad_mode)]


register("nn.pad", _pad_rel, OpPattern.INJECTIVE, _pad_compute,
         {"pad_width": None, "pad_value": 0.0, "pad_mode": "constant"}, 1)


def pad(data, pad_width, pad_value=0.0, pad_mode="constant"):
    """``relay.nn.pad(data, ((before, after), ...), pad_value=0, pad_mode="constant" | "edge" | "reflect")``."""
    if pad_mode not in ("constant", "edge", "reflect"):
        raise RelayError(f"nn.pad: pad_mode must be 'constant', 'edge' or 'reflect', got {pad_mode!r}")
    if hasattr(pad_value, "value") and hasattr(pad_value, "children"):
        pad_value = float(pad_value.value)
    return make_call("nn.pad", [data], pad_width=[tuple(int(v) for v in p) for p in pad_width],
                     pad_value=float(pad_value), pad_mode=pad_mode)


def _flatten_rel(types, attrs):
    d = tensor_arg(types, 0)
    if not d.shape:
        raise TypeInferenceError("batch_flatten needs a tensor of rank >= 1")
    rest = 1
    for s in d.shape[1:]:
        rest *= s
    return TensorType((d.shape[0], rest), d.dtype)


def _flatten_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    return [topi_nn.flatten(inputs[0])]


register("nn.batch_flatten", _flatten_rel, OpPattern.INJECTIVE, _flatten_compute, {}, 1)


def batch_flatten(data):
    """``relay.nn.batch_flatten(data)``: (N, ...) -> (N, prod(...))."""
    return make_call("nn.batch_flatten", [data])


__all__ = ["conv2d", "contrib_conv2d_nchwc", "contrib_depthwise_conv2d_nchwc", "conv2d_transpose", "dense", "matmul",
           "batch_matmul", "bias_add", "relu", "leaky_relu",
           "prelu", "batch_norm", "dropout", "instance_norm", "softmax", "log_softmax", "lrn", "max_pool2d",
           "avg_pool2d", "global_avg_pool2d", "global_max_pool2d", "pad", "batch_flatten"]

from .dense_pack import contrib_dense_pack  # noqa: E402,F401  (relay.nn.contrib_dense_pack)
from .norm import layer_norm  # noqa: E402,F401  (relay.nn.layer_norm)
from .nn3d import avg_pool3d, conv3d, max_pool3d  # noqa: E402,F401  (relay.nn.conv3d, max_pool3d, avg_pool3d)
from .winograd import (contrib_conv2d_winograd_weight_transform,  # noqa: E402,F401
                       contrib_conv2d_winograd_without_weight_transform)
