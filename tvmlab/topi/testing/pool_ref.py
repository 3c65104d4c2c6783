"""numpy references of pooling in any number of spatial axes and of its gradient (TVM's ``topi.testing``
names: ``poolnd_python``, ``adaptive_pool``, ``pool_grad_nchw``)."""
from __future__ import annotations

import itertools
import math

import numpy as np


def _channels_first(layout, ndim):
    """The permutation taking ``layout`` ("NDHWC", "NWC", ...) to N, C, spatial axes in order."""
    if layout is None:
        return list(range(ndim))
    return [layout.index("N"), layout.index("C")] + [k for k, c in enumerate(layout) if c in "DHW"]


def poolnd_python(np_data, kernel, strides, dilation, padding_before, padding_after, pool_type,
                  count_include_pad=True, ceil_mode=False, dtype="float32", layout=None):
    """Max / average pooling over the spatial axes: TVM's ceil mode (the output size rounded up), an
    average dividing by the taps inside the padded input (``count_include_pad``) or inside the input."""
    perm = _channels_first(layout, np_data.ndim)
    x = np_data.transpose(perm).astype(np.float64)
    sizes = x.shape[2:]
    n = len(sizes)
    outs = []
    for k in range(n):
        span = (kernel[k] - 1) * dilation[k] + 1
        v = (sizes[k] + padding_before[k] + padding_after[k] - span) / strides[k]
        outs.append(int(math.ceil(v) if ceil_mode else math.floor(v)) + 1)
    # max reads padding as 0 with count_include_pad (as TVM's reference does), else as the lowest value;
    # taps past the padded input are absent
    fill = (0.0 if count_include_pad else np.finfo(np.float32).min) if pool_type == "max" else 0.0
    grown = tuple(s + b + a + (k - 1) * d + st for s, b, a, k, d, st in
                  zip(sizes, padding_before, padding_after, kernel, dilation, strides))
    padded = np.full(x.shape[:2] + grown, -np.inf if pool_type == "max" else 0.0)
    padded[(slice(None), slice(None)) + tuple(slice(0, s + b + a) for s, b, a in
                                              zip(sizes, padding_before, padding_after))] = fill
    inner = tuple(slice(b, b + s) for b, s in zip(padding_before, sizes))
    padded[(slice(None), slice(None)) + inner] = x
    out = np.zeros(x.shape[:2] + tuple(outs))
    for pos in itertools.product(*[range(o) for o in outs]):
        taps = [np.arange(kernel[k]) * dilation[k] + pos[k] * strides[k] for k in range(n)]
        win = padded[np.ix_(range(x.shape[0]), range(x.shape[1]), *taps)].reshape(x.shape[:2] + (-1,))
        if pool_type == "max":
            out[(slice(None), slice(None)) + pos] = win.max(axis=2)
            continue
        count = 1
        for k in range(n):
            lo = 0 if count_include_pad else padding_before[k]
            hi = sizes[k] + padding_before[k] + (padding_after[k] if count_include_pad else 0)
            count *= int(np.sum((taps[k] >= lo) & (taps[k] < hi)))
        out[(slice(None), slice(None)) + pos] = win.sum(axis=2) / max(count, 1)
    return out.transpose(np.argsort(perm)).astype(np_data.dtype if dtype is None else dtype)


def adaptive_pool(np_data, out_size, pool_type, layout="NCHW"):
    """Adaptive max / average pooling: output position y of an axis of size H covers rows
    floor(y*H/oh) .. ceil((y+1)*H/oh)."""
    perm = _channels_first(layout, np_data.ndim)
    x = np_data.transpose(perm).astype(np.float64)
    sizes = x.shape[2:]
    out_size = tuple(out_size)
    out = np.zeros(x.shape[:2] + out_size)
    reduce = np.max if pool_type == "max" else np.mean
    for pos in itertools.product(*[range(o) for o in out_size]):
        win = tuple(slice(p * s // o, -(-(p + 1) * s // o)) for p, s, o in zip(pos, sizes, out_size))
        out[(slice(None), slice(None)) + pos] = reduce(x[(slice(None), slice(None)) + win],
                                                       axis=tuple(range(2, x.ndim)))
    return out.transpose(np.argsort(perm)).astype(np_data.dtype)


def pool_grad_nchw(a_np, out_grad_np, pool_size, strides, padding, pool_type, ceil_mode, count_include_pad=True):
    """The gradient of 2-D pooling (NCHW) with respect to its input: max sends each window's gradient to
    its first largest element, average shares it among the taps it divided by."""
    n, c, h, w = a_np.shape
    kh, kw = pool_size
    sh, sw = strides
    pt, pl, pb, pr = padding
    _, _, oh, ow = out_grad_np.shape
    big = (h + pt + pb + kh + sh, w + pl + pr + kw + sw)
    padded = np.full((n, c) + big, -np.inf)
    padded[:, :, pt:pt + h, pl:pl + w] = a_np
    grad = np.zeros((n, c) + big)
    g = out_grad_np.astype(np.float64)
    for y in range(oh):
        for x in range(ow):
            ys, xs = slice(y * sh, y * sh + kh), slice(x * sw, x * sw + kw)
            if pool_type == "max":
                flat = padded[:, :, ys, xs].reshape(n, c, -1).argmax(axis=2)
                ny, nx = np.unravel_index(flat, (kh, kw))
                for b in range(n):
                    for ch in range(c):
                        grad[b, ch, y * sh + ny[b, ch], x * sw + nx[b, ch]] += g[b, ch, y, x]
                continue
            rows = np.arange(y * sh, y * sh + kh)
            cols = np.arange(x * sw, x * sw + kw)
            if count_include_pad:
                count = np.sum(rows < h + pt + pb) * np.sum(cols < w + pl + pr)
            else:
                count = np.sum((rows >= pt) & (rows < h + pt)) * np.sum((cols >= pl) & (cols < w + pl))
            grad[:, :, ys, xs] += g[:, :, y, x][:, :, None, None] / max(count, 1)
    return grad[:, :, pt:pt + h, pl:pl + w].astype(a_np.dtype)
