"""numpy references of convolutions in any layout with 1 to 3 spatial axes, plain and transposed, in
float64 (TVM's ``topi.testing`` names: ``conv1d_ncw_python``, ``conv3d_ndhwc_python``, ...)."""
from __future__ import annotations

import itertools

import numpy as np

from ..nn.utils import get_pad_tuple_nd


def _tuple(v, n):
    return (v,) * n if isinstance(v, (int, np.integer)) else tuple(v)


def conv_nd_python(a_np, w_np, stride, padding, dilation=1, groups=1):
    """Grouped convolution of a (N, C, spatial...) with w (O, C / groups, window...)."""
    n = a_np.ndim - 2
    ks = w_np.shape[2:]
    ss, ds = _tuple(stride, n), _tuple(dilation, n)
    before, after = get_pad_tuple_nd(padding, [(k - 1) * d + 1 for k, d in zip(ks, ds)], "reference")
    a = np.pad(a_np.astype(np.float64), [(0, 0), (0, 0)] + list(zip(before, after)))
    w = w_np.astype(np.float64)
    o, ipg = w.shape[:2]
    outs = [(a.shape[2 + k] - (ks[k] - 1) * ds[k] - 1) // ss[k] + 1 for k in range(n)]
    out = np.zeros((a.shape[0], o) + tuple(outs))
    opg = o // groups
    for g in range(groups):
        xs = a[:, g * ipg:(g + 1) * ipg]
        for taps in itertools.product(*[range(k) for k in ks]):
            win = xs[(slice(None), slice(None)) + tuple(
                slice(t * ds[k], t * ds[k] + (outs[k] - 1) * ss[k] + 1, ss[k]) for k, t in enumerate(taps))]
            out[:, g * opg:(g + 1) * opg] += np.einsum("nc...,oc->no...", win,
                                                       w[(slice(g * opg, (g + 1) * opg), slice(None), *taps)])
    return out.astype(a_np.dtype)


def conv_transpose_nd_python(a_np, w_np, stride, padding, output_padding=0, groups=1):
    """Transposed convolution of a (N, C, spatial...) with w (C, O / groups, window...): each input
    element's contribution scattered, then the padding cropped."""
    n = a_np.ndim - 2
    ks = w_np.shape[2:]
    ss, ops = _tuple(stride, n), _tuple(output_padding, n)
    before, after = get_pad_tuple_nd(padding, list(ks), "reference")
    a, w = a_np.astype(np.float64), w_np.astype(np.float64)
    c, og = w.shape[:2]
    sizes = a.shape[2:]
    full = np.zeros((a.shape[0], og * groups) + tuple((s - 1) * st + k + p for s, st, k, p in zip(sizes, ss, ks, ops)))
    cpg = c // groups
    for g in range(groups):
        for taps in itertools.product(*[range(k) for k in ks]):
            contrib = np.einsum("nc...,co->no...", a[:, g * cpg:(g + 1) * cpg],
                                w[(slice(g * cpg, (g + 1) * cpg), slice(None), *taps)])
            where = tuple(slice(t, t + (s - 1) * st + 1, st) for t, s, st in zip(taps, sizes, ss))
            full[(slice(None), slice(g * og, (g + 1) * og)) + where] += contrib
    crop = tuple(slice(b, full.shape[2 + k] - a_) for k, (b, a_) in enumerate(zip(before, after)))
    return full[(slice(None), slice(None)) + crop].astype(a_np.dtype)


def _to_first(x, layout):
    """Move layout ``layout``'s N (or O) and C (or I) axes to the front, the rest in order."""
    first = [k for k, c in enumerate(layout) if c in "NO"] + [k for k, c in enumerate(layout) if c in "CI"]
    return x.transpose(first + [k for k in range(x.ndim) if k not in first])


def _from_first(x, layout):
    first = [k for k, c in enumerate(layout) if c in "NO"] + [k for k, c in enumerate(layout) if c in "CI"]
    order = first + [k for k in range(x.ndim) if k not in first]
    return x.transpose(np.argsort(order))


def conv1d_ncw_python(a_np, w_np, stride, padding, dilation=1):
    """1-D convolution: a (N, C, W), w (O, C, KW)."""
    return conv_nd_python(a_np, w_np, stride, padding, dilation)


def group_conv1d_ncw_python(a_np, w_np, stride, padding, dilation=1, groups=1):
    """Grouped 1-D convolution: a (N, C, W), w (O, C / groups, KW)."""
    return conv_nd_python(a_np, w_np, stride, padding, dilation, groups)


def conv2d_nhwc_python(a_np, w_np, stride, padding, groups=1):
    """Convolution: a (N, H, W, C), w (KH, KW, C / groups, O)."""
    out = conv_nd_python(_to_first(a_np, "NHWC"), _to_first(w_np, "HWIO"), stride, padding, 1, groups)
    return _from_first(out, "NHWC")


def conv2d_hwcn_python(a_np, w_np, stride, padding):
    """Convolution: a (H, W, C, N), w (KH, KW, C, O) -> (OH, OW, O, N)."""
    out = conv_nd_python(a_np.transpose(3, 2, 0, 1), w_np.transpose(3, 2, 0, 1), stride, padding)
    return out.transpose(2, 3, 1, 0)


def conv3d_ncdhw_python(a_np, w_np, stride, padding, groups=1):
    """3-D convolution: a (N, C, D, H, W), w (O, C / groups, KD, KH, KW)."""
    return conv_nd_python(a_np, w_np, stride, padding, 1, groups)


def conv3d_ndhwc_python(a_np, w_np, stride, padding, groups=1):
    """3-D convolution: a (N, D, H, W, C), w (KD, KH, KW, C / groups, O)."""
    out = conv_nd_python(_to_first(a_np, "NDHWC"), _to_first(w_np, "DHWIO"), stride, padding, 1, groups)
    return _from_first(out, "NDHWC")


def conv1d_transpose_ncw_python(a_np, w_np, stride, padding, output_padding):
    """Transposed 1-D convolution: a (N, C, W), w (C, O, KW)."""
    return conv_transpose_nd_python(a_np, w_np, stride, padding, output_padding)


def conv3d_transpose_ncdhw_python(a_np, w_np, stride, padding, output_padding=0):
    """Transposed 3-D convolution: a (N, C, D, H, W), w (C, O, KD, KH, KW)."""
    return conv_transpose_nd_python(a_np, w_np, stride, padding, output_padding)


def dilate_python(input_np, strides, dilation_value=0.0):
    """``input_np`` with ``strides[k] - 1`` values of ``dilation_value`` between neighbours along axis k."""
    shape = tuple((n - 1) * s + 1 for n, s in zip(input_np.shape, strides))
    out = np.full(shape, dilation_value, dtype=input_np.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = input_np
    return out


def depthwise_conv2d_python_nchw(input_np, filter_np, stride, padding):
    """Depthwise convolution: input (N, C, H, W), filter (C, M, KH, KW) -> output channel c * M + m."""
    c, m, kh, kw = filter_np.shape
    return conv_nd_python(input_np, filter_np.reshape(c * m, 1, kh, kw), stride, padding, 1, c)


def depthwise_conv2d_python_nhwc(input_np, filter_np, stride, padding):
    """Depthwise convolution: input (N, H, W, C), filter (KH, KW, C, M)."""
    out = depthwise_conv2d_python_nchw(input_np.transpose(0, 3, 1, 2), filter_np.transpose(2, 3, 0, 1), stride,
                                       padding)
    return out.transpose(0, 2, 3, 1)


def depthwise_conv2d_python_nchwc(input_np, filter_np, stride, padding):
    """Depthwise convolution in blocks: input (N, C/ic, H, W, ic), filter (C*M/oc, 1, KH, KW, 1, oc)."""
    n, cb, h, w, ic = input_np.shape
    ob, _, kh, kw, _, oc = filter_np.shape
    plain_in = input_np.transpose(0, 1, 4, 2, 3).reshape(n, cb * ic, h, w)
    plain_w = filter_np.transpose(0, 5, 1, 4, 2, 3).reshape(ob * oc, 1, kh, kw)
    c = cb * ic
    out = conv_nd_python(plain_in, plain_w, stride, padding, 1, c)
    oh, ow = out.shape[2:]
    return out.reshape(n, ob, oc, oh, ow).transpose(0, 1, 3, 4, 2)
