"""numpy references of the topi operators, as TVM's ``tvm.topi.testing``: plain loops over numpy
arrays, computed in float64, for checking a build on random data.

    ref = topi.testing.conv2d_nchw_python(x, w, (1, 1), (1, 1, 1, 1), groups=1, dilation=(1, 1))
"""
from __future__ import annotations

import numpy as np


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _pads(padding):
    if isinstance(padding, int):
        return (padding,) * 4
    padding = tuple(padding)
    return padding * 2 if len(padding) == 2 else padding


def conv2d_nchw_python(a_np, w_np, stride, padding, groups=1, dilation=1):
    """Grouped 2-D convolution: a (N, C, H, W), w (O, C / groups, KH, KW) (TVM's argument order; tvmlab
    adds ``dilation``)."""
    from .conv_ref import conv_nd_python
    return conv_nd_python(a_np, w_np, stride, padding, dilation, groups)


def depthwise_conv2d_nchw_python(a_np, w_np, stride, padding, dilation=1):
    """Depthwise convolution: w (C, M, KH, KW), output channel c * M + m."""
    c, m, kh, kw = w_np.shape
    return conv2d_nchw_python(a_np, w_np.reshape(c * m, 1, kh, kw), stride, padding, groups=c, dilation=dilation)


def conv2d_transpose_nchw_python(a_np, w_np, stride, padding, output_padding=(0, 0), groups=1):
    """Transposed convolution: w (C, O / groups, KH, KW); each input pixel's contribution scattered."""
    from .conv_ref import conv_transpose_nd_python
    return conv_transpose_nd_python(a_np, w_np, stride, padding, output_padding, groups)


def pool2d_python(a_np, kernel, stride, dilation, padding, pool_type, ceil_mode=False, count_include_pad=True,
                  layout="NCHW", drop_pad_windows=False):
    """Max / average pooling: TVM's ceil mode, or PyTorch's and ONNX's with ``drop_pad_windows``."""
    if layout == "NHWC":
        return pool2d_python(a_np.transpose(0, 3, 1, 2), kernel, stride, dilation, padding, pool_type, ceil_mode,
                             count_include_pad, drop_pad_windows=drop_pad_windows).transpose(0, 2, 3, 1)
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pads(padding)
    n, c, h, w = a_np.shape

    def size(n_, lo, hi, k, s, d):
        span = (k - 1) * d + 1
        if not ceil_mode:
            return (n_ + lo + hi - span) // s + 1
        out = -(-(n_ + lo + hi - span) // s) + 1
        return out - 1 if drop_pad_windows and (out - 1) * s >= n_ + lo else out
    oh, ow = size(h, pt, pb, kh, sh, dh), size(w, pl, pr, kw, sw, dw)
    a = a_np.astype(np.float64)
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for x in range(ow):
            vals, taps = [], 0
            for ky in range(kh):
                for kx in range(kw):
                    py, px = y * sh + ky * dh, x * sw + kx * dw     # padded coordinates
                    iy, ix = py - pt, px - pl
                    if 0 <= iy < h and 0 <= ix < w:
                        vals.append(a[:, :, iy, ix])
                    if count_include_pad:
                        taps += py < h + pt + pb and px < w + pl + pr
                    else:
                        taps += 0 <= iy < h and 0 <= ix < w
            if pool_type == "max":
                out[:, :, y, x] = np.max(vals, axis=0) if vals else -np.inf
            else:
                out[:, :, y, x] = (np.sum(vals, axis=0) if vals else 0) / max(taps, 1)
    return out.astype(a_np.dtype)


def adaptive_pool_python(a_np, output_size, pool_type):
    """Adaptive pooling (NCHW): output (y, x) covers rows floor(y*H/oh) .. ceil((y+1)*H/oh)."""
    n, c, h, w = a_np.shape
    oh, ow = _pair(output_size)
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for x in range(ow):
            win = a_np[:, :, y * h // oh: -(-(y + 1) * h // oh), x * w // ow: -(-(x + 1) * w // ow)].astype(np.float64)
            out[:, :, y, x] = win.max(axis=(2, 3)) if pool_type == "max" else win.mean(axis=(2, 3))
    return out.astype(a_np.dtype)


def softmax_python(a_np, axis=-1):
    a = a_np.astype(np.float64)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(a_np.dtype)


def log_softmax_python(a_np, axis=-1):
    a = a_np.astype(np.float64)
    m = a.max(axis=axis, keepdims=True)
    return (a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).astype(a_np.dtype)


def lrn_python(a_np, size, axis=1, bias=2.0, alpha=0.0001, beta=0.75):
    """ONNX's LRN (TVM's argument order): the window over ``axis`` is [c - (size-1)//2, c + size//2],
    clipped to the axis."""
    a = np.moveaxis(a_np.astype(np.float64), axis, 0)
    sq = np.zeros_like(a)
    lo = (size - 1) // 2
    for ch in range(a.shape[0]):
        sq[ch] = (a[max(0, ch - lo): min(a.shape[0], ch - lo + size)] ** 2).sum(axis=0)
    out = a / (bias + alpha / size * sq) ** beta
    return np.moveaxis(out, 0, axis).astype(a_np.dtype)


def batch_norm_python(x, gamma, beta, mean, var, axis=1, epsilon=1e-5):
    shape = [1] * x.ndim
    shape[axis] = -1
    r = lambda v: v.astype(np.float64).reshape(shape)  # noqa: E731
    return ((x - r(mean)) / np.sqrt(r(var) + epsilon) * r(gamma) + r(beta)).astype(x.dtype)


def instance_norm_python(x, gamma, beta, axis=None, epsilon=1e-5):
    axes = tuple(range(2, x.ndim)) if axis is None else tuple(axis)
    a = x.astype(np.float64)
    mean = a.mean(axis=axes, keepdims=True)
    var = a.var(axis=axes, keepdims=True)
    shape = [1] * x.ndim
    shape[1] = -1
    return ((a - mean) / np.sqrt(var + epsilon) * gamma.reshape(shape) + beta.reshape(shape)).astype(x.dtype)


def layout_transform_python(a_np, src, dst):
    """``a_np`` in layout ``src`` rewritten in ``dst`` (any layouts ``topi.layout_transform`` reads: "NCHW" <->
    "NCHW16c", "NCHW8c" -> "NCHW4c", "OIHW" -> "OIHW8i16o", "NK" -> "NK16n"); blocks past the end are zero."""
    from ..transform import parse_layout
    s_axes, d_axes = parse_layout(src), parse_layout(dst)
    if a_np.ndim != len(s_axes):
        raise ValueError(f"layout_transform_python: {src!r} has {len(s_axes)} axes, the array {a_np.ndim}")
    pos = {x: k for k, (x, _) in enumerate(s_axes)}
    primal = [x for x, f in s_axes if f is None]
    order = [k for x in primal for k in ([pos[x]] + ([pos[x.lower()]] if x.lower() in pos else []))]
    a = a_np.transpose(order)
    sizes = {x: a_np.shape[pos[x]] * (a_np.shape[pos[x.lower()]] if x.lower() in pos else 1) for x in primal}
    a = a.reshape([sizes[x] for x in primal])                  # plain: one axis per primal letter, src order
    want = [x for x, f in d_axes if f is None]
    a = a.transpose([primal.index(x) for x in want])
    factor = {x.upper(): f for x, f in d_axes if f is not None}
    split, names = [], []
    for k, x in enumerate(want):
        n, f = a.shape[k], factor.get(x)
        if f is None:
            split.append(n)
            names.append(x)
            continue
        nb = -(-n // f)
        if nb * f != n:                                         # zero blocks past the end
            widths = [(0, 0)] * a.ndim
            widths[k] = (0, nb * f - n)
            a = np.pad(a, widths)
        split += [nb, f]
        names += [x, x.lower()]
    a = a.reshape(split)
    return np.ascontiguousarray(a.transpose([names.index(x) for x, _ in d_axes]))
