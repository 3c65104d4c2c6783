"""Pooling, as TVM's ``topi.nn.pool2d`` / ``global_pool`` / ``adaptive_pool`` (tags ``pool_max``, ``pool_avg``,
``adaptive_pool_max``, ``adaptive_pool_avg``).

    P = topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max", ceil_mode=False)

``ceil_mode`` rounds the output size up, but a window must start inside the input or its leading padding
(as PyTorch and ONNX do).  An average divides by the taps inside the padded input (``count_include_pad``)
or inside the input only; a window the ceil mode adds past the padding counts neither.
"""
from __future__ import annotations

import re

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, get_const_int, shape_str
from .pad import pad as _pad
from .utils import get_pad_tuple, pair

builtins_max = max

LAYOUTS = {"NCHW": (2, 3), "NHWC": (1, 2)}
_BLOCKED = re.compile(r"NCHW(\d+)c")


def layout_axes(op, data, layout):
    """The (height, width) axes of ``data`` in ``layout``: NCHW, NHWC or blocked NCHW[x]c (5-D, the
    channel block last, as ``conv2d_NCHWc`` leaves it); checks the data's rank and block."""
    m = _BLOCKED.fullmatch(layout) if isinstance(layout, str) else None
    if layout not in LAYOUTS and not m:
        raise OperatorError(f"{op}: layout must be NCHW, NHWC or NCHW[x]c (e.g. NCHW16c), got {layout!r}")
    check_tensor(op, data, "data", 5 if m else 4)
    if m and const_or_none(data.shape[4]) != int(m.group(1)):
        raise OperatorError(f"{op}: data {shape_str(data)} is not in layout {layout} (its last axis must be "
                            f"{m.group(1)})")
    return (2, 3) if m else LAYOUTS[layout]


def _out(op, size, lo, hi, k, s, d, ceil_mode):
    n = const_or_none(size)
    span = (k - 1) * d + 1
    if n is None:
        if ceil_mode:
            raise OperatorError(f"{op}: ceil_mode needs constant spatial sizes")
        return (size + lo + hi - span) // s + 1
    if n + lo + hi < span:
        raise OperatorError(f"{op}: the window ({span}) is larger than the padded input ({n} + {lo + hi})")
    if not ceil_mode:
        return (n + lo + hi - span) // s + 1
    out = -(-(n + lo + hi - span) // s) + 1
    if (out - 1) * s >= n + lo:
        out -= 1
    return out


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
           count_include_pad=True):
    """Max or average pooling over the two spatial axes of ``layout`` (NCHW, NHWC or NCHW[x]c).

    ``padding`` is (top, left, bottom, right) (an int or (h, w) also works)."""
    ha, wa = layout_axes("pool2d", data, layout)
    if pool_type not in ("max", "avg"):
        raise OperatorError(f"pool2d: pool_type must be 'max' or 'avg', got {pool_type!r}")
    if pool_type == "avg" and not dt.is_float(data.dtype):
        raise OperatorError(f"pool2d: average pooling needs a float tensor, got {shape_str(data)}")
    kh, kw = pair("pool2d", "kernel", kernel)
    sh, sw = pair("pool2d", "stride", stride)
    dh, dw = pair("pool2d", "dilation", dilation)
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), "pool2d")
    H, W = data.shape[ha], data.shape[wa]
    oh = _out("pool2d", H, pt, pb, kh, sh, dh, ceil_mode)
    ow = _out("pool2d", W, pl, pr, kw, sw, dw, ceil_mode)
    shape = list(data.shape)
    shape[ha], shape[wa] = oh, ow
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    padded = pt or pl or pb or pr or ceil_mode
    if padded:
        # one padded copy (the ceil mode's extra windows included): the windows then read it unguarded
        after_h = pb if not ceil_mode else builtins_max(pb, (oh - 1) * sh + (kh - 1) * dh + 1 - get_const_int(H) - pt)
        after_w = pr if not ceil_mode else builtins_max(pr, (ow - 1) * sw + (kw - 1) * dw + 1 - get_const_int(W) - pl)
        before, after = [0] * len(data.shape), [0] * len(data.shape)
        before[ha], before[wa], after[ha], after[wa] = pt, pl, after_h, after_w
        fill = _op.min_value(data.dtype) if pool_type == "max" else _op.const(0, data.dtype)
        src = _pad(data, before, after, fill, name="T_pool_pad")
    else:
        src = data

    def window(i, ky, kx):
        idx = list(i)
        idx[ha] = i[ha] * sh + ky * dh
        idx[wa] = i[wa] * sw + kx * dw
        return src(*idx)
    attrs = {"layout": layout}
    if pool_type == "max":
        return te.compute(tuple(shape), lambda *i: te.max(window(i, ry, rx), axis=[ry, rx]), name="T_pool_max",
                          tag="pool_max", attrs=attrs)
    total = te.compute(tuple(shape), lambda *i: te.sum(window(i, ry, rx), axis=[ry, rx]), name="T_pool_sum",
                       tag="pool_sum", attrs=attrs)

    def taps(pos, k, d, lo, hi, size):
        count = None
        for t in range(k):
            p = pos + t * d           # coordinate in the padded input
            inside = _op.all(p >= 0, p < size + lo + hi) if count_include_pad else _op.all(p >= lo, p < size + lo)
            term = _op.if_then_else(inside, _op.const(1, "int32"), _op.const(0, "int32"))
            count = term if count is None else count + term
        return count

    def favg(*i):
        n = taps(i[ha] * sh, kh, dh, pt, pb, H) * taps(i[wa] * sw, kw, dw, pl, pr, W)
        return total(*i) / _op.cast(data.dtype, _op.max(n, 1))
    if not padded:
        area = _op.const(kh * kw, data.dtype)
        return te.compute(tuple(shape), lambda *i: total(*i) / area, name="T_pool_avg", tag="pool_avg", attrs=attrs)
    return te.compute(tuple(shape), favg, name="T_pool_avg", tag="pool_avg", attrs=attrs)


def adaptive_pool(data, output_size, pool_type, layout="NCHW"):
    """Pooling to ``output_size`` (oh, ow): output (y, x) covers rows floor(y*H/oh) .. ceil((y+1)*H/oh)."""
    ha, wa = layout_axes("adaptive_pool", data, layout)
    if pool_type not in ("max", "avg"):
        raise OperatorError(f"adaptive_pool: pool_type must be 'max' or 'avg', got {pool_type!r}")
    oh, ow = pair("adaptive_pool", "output_size", output_size)
    H, W = data.shape[ha], data.shape[wa]
    shape = list(data.shape)
    shape[ha], shape[wa] = oh, ow
    if oh == 1 and ow == 1:
        ry = te.reduce_axis((0, H), name="ry")
        rx = te.reduce_axis((0, W), name="rx")

        def at(i):
            idx = list(i)
            idx[ha], idx[wa] = ry, rx
            return data(*idx)
        if pool_type == "max":
            return te.compute(tuple(shape), lambda *i: te.max(at(i), axis=[ry, rx]), name="T_global_pool_max",
                              tag="adaptive_pool_max")
        if not dt.is_float(data.dtype):
            raise OperatorError(f"adaptive_pool: average pooling needs a float tensor, got {shape_str(data)}")
        s = te.compute(tuple(shape), lambda *i: te.sum(at(i), axis=[ry, rx]), name="T_global_pool_sum",
                       tag="adaptive_pool_sum", attrs={"axis": (ha, wa), "ndim": len(data.shape)})
        return te.compute(tuple(shape), lambda *i: s(*i) / _op.cast(data.dtype, H * W), name="T_global_pool_avg",
                          tag="adaptive_pool_avg")
    Hc, Wc = get_const_int(H), get_const_int(W)
    kh = max(-(-((y + 1) * Hc) // oh) - (y * Hc) // oh for y in range(oh))
    kw = max(-(-((x + 1) * Wc) // ow) - (x * Wc) // ow for x in range(ow))
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def bounds(i):
        y0 = (i[ha] * Hc) // oh
        y1 = ((i[ha] + 1) * Hc + oh - 1) // oh
        x0 = (i[wa] * Wc) // ow
        x1 = ((i[wa] + 1) * Wc + ow - 1) // ow
        return y0, y1, x0, x1

    def at(i):
        y0, y1, x0, x1 = bounds(i)
        idx = list(i)
        idx[ha], idx[wa] = _op.min(y0 + ry, Hc - 1), _op.min(x0 + rx, Wc - 1)
        return _op.all(y0 + ry < y1, x0 + rx < x1), data(*idx)
    if pool_type == "max":
        def fmax(*i):
            c, v = at(i)
            return te.max(_op.if_then_else(c, v, _op.min_value(data.dtype)), axis=[ry, rx])
        return te.compute(tuple(shape), fmax, name="T_adaptive_pool_max", tag="adaptive_pool_max")

    def fsum(*i):
        c, v = at(i)
        return te.sum(_op.if_then_else(c, v, _op.const(0, data.dtype)), axis=[ry, rx])
    s = te.compute(tuple(shape), fsum, name="T_adaptive_pool_sum", tag="adaptive_pool_sum")

    def favg(*i):
        y0, y1, x0, x1 = bounds(i)
        return s(*i) / _op.cast(data.dtype, (y1 - y0) * (x1 - x0))
    return te.compute(tuple(shape), favg, name="T_adaptive_pool_avg", tag="adaptive_pool_avg")


def global_pool(data, pool_type, layout="NCHW"):
    """Max or average over the whole spatial extent: (N, C, 1, 1) for NCHW."""
    return adaptive_pool(data, (1, 1), pool_type, layout)


def pool(data, kernel, stride, padding, pool_type, ceil_mode=False, layout="NCHW", count_include_pad=True):
    """TVM's earlier spelling of ``pool2d`` (no dilation argument): ``topi.nn.pool(X, (2, 2), (2, 2),
    (0, 0, 0, 0), "max")``."""
    return pool2d(data, kernel, stride, 1, padding, pool_type, ceil_mode, layout, count_include_pad)
