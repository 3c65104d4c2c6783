"""Pooling, as TVM's ``topi.nn.pool1d`` / ``pool2d`` / ``pool3d`` / ``global_pool`` / ``adaptive_pool``
(tags ``pool_max``, ``pool_avg``, ``adaptive_pool_max``, ``adaptive_pool_avg``).

    P = topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max", ceil_mode=False)

``ceil_mode`` rounds the output size up (TVM's rule); ``drop_pad_windows=True`` then drops a window that
would start in the trailing padding (PyTorch's and ONNX's rule, which relay's pooling uses).  An average
divides by the taps inside the padded input (``count_include_pad``) or inside the input only; taps past
the padding count neither.
"""
from __future__ import annotations

import re

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, get_const_int, shape_str
from .pad import pad as _pad
from .utils import get_pad_tuple, get_pad_tuple_nd, pair

builtins_max = max

_LAYOUT = re.compile(r"([A-Z]+)(?:(\d+)([a-z]))?")


def spatial_axes(op, data, layout, ndim=None):
    """The spatial axes (D, H, W, in layout order) of ``data`` in ``layout``: "NCHW", "NHWC", "NCW",
    "NDHWC", ... or a blocked "NCHW16c" (the block last); checks the rank, and ``ndim`` spatial axes."""
    m = _LAYOUT.fullmatch(layout) if isinstance(layout, str) else None
    primal = m.group(1) if m else ""
    spatial = [k for k, c in enumerate(primal) if c in "DHW"]
    letters = "".join(primal[k] for k in spatial)
    ok = m and letters in ("W", "HW", "DHW") and sorted(primal) == sorted(set(primal)) and "N" in primal and \
        "C" in primal and spatial and set(primal) <= set("NCDHW") and (m.group(3) in (None, "c")) and \
        (ndim is None or len(spatial) == ndim)
    if not ok:
        want = {1: "NCW or NWC", 2: "NCHW, NHWC or NCHW[x]c", 3: "NCDHW or NDHWC"}.get(ndim, "e.g. NCHW")
        raise OperatorError(f"{op}: layout must be {want}, got {layout!r}")
    check_tensor(op, data, "data", len(primal) + (1 if m.group(2) else 0))
    if m.group(2) and const_or_none(data.shape[-1]) != int(m.group(2)):
        raise OperatorError(f"{op}: data {shape_str(data)} is not in layout {layout} (its last axis must be "
                            f"{m.group(2)})")
    return spatial


def layout_axes(op, data, layout):
    """The (height, width) axes of ``data`` in a 2-D pooling ``layout`` (NCHW, NHWC or NCHW[x]c)."""
    return tuple(spatial_axes(op, data, layout, 2))


def _out(op, size, lo, hi, k, s, d, ceil_mode, drop_pad_windows):
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
    if drop_pad_windows and (out - 1) * s >= n + lo:
        out -= 1
    return out


def _ints_n(op, what, value, n, minimum=1):
    from .utils import _ints
    vals = _ints(op, what, value, n)
    if any(v < minimum for v in vals):
        raise OperatorError(f"{op}: {what} must be >= {minimum}, got {value!r}")
    return vals


def poolnd(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
           count_include_pad=True, drop_pad_windows=False, op="pool"):
    """Max or average pooling over the spatial axes (D, H, W) of ``layout``.

    ``padding``: before / after each spatial axis (all befores first).  ``ceil_mode`` rounds the output
    size up, as TVM does; with ``drop_pad_windows`` a window starting in the trailing padding is dropped
    (PyTorch's and ONNX's rule).  An average divides by the taps inside the padded input
    (``count_include_pad``) or inside the input."""
    axes = spatial_axes(op, data, layout)
    n = len(axes)
    if pool_type not in ("max", "avg"):
        raise OperatorError(f"{op}: pool_type must be 'max' or 'avg', got {pool_type!r}")
    if pool_type == "avg" and not dt.is_float(data.dtype):
        raise OperatorError(f"{op}: average pooling needs a float tensor, got {shape_str(data)}")
    ks = _ints_n(op, "kernel", kernel, n)
    ss = _ints_n(op, "stride", stride, n)
    ds = _ints_n(op, "dilation", dilation, n)
    before, after = get_pad_tuple_nd(padding, [(k - 1) * d + 1 for k, d in zip(ks, ds)], op)
    sizes = [data.shape[a] for a in axes]
    outs = [_out(op, sizes[k], before[k], after[k], ks[k], ss[k], ds[k], ceil_mode, drop_pad_windows)
            for k in range(n)]
    shape = list(data.shape)
    for k, a in enumerate(axes):
        shape[a] = outs[k]
    rs = [te.reduce_axis((0, ks[k]), name="r" + "dhw"[3 - n + k]) for k in range(n)]
    padded = any(before) or any(after) or ceil_mode
    if padded:
        # one padded copy (the ceil mode's extra windows included): the windows then read it unguarded
        pb, pa = [0] * len(data.shape), [0] * len(data.shape)
        for k, a in enumerate(axes):
            pb[a] = before[k]
            pa[a] = after[k] if not ceil_mode else builtins_max(
                after[k], (outs[k] - 1) * ss[k] + (ks[k] - 1) * ds[k] + 1 - get_const_int(sizes[k]) - before[k])
        fill = _op.min_value(data.dtype) if pool_type == "max" else _op.const(0, data.dtype)
        src = _pad(data, pb, pa, fill, name="T_pool_pad")
    else:
        src = data

    def window(i):
        idx = list(i)
        for k, a in enumerate(axes):
            idx[a] = i[a] * ss[k] + rs[k] * ds[k]
        return src(*idx)
    attrs = {"layout": layout}
    if pool_type == "max":
        return te.compute(tuple(shape), lambda *i: te.max(window(i), axis=rs), name="T_pool_max", tag="pool_max",
                          attrs=attrs)
    total = te.compute(tuple(shape), lambda *i: te.sum(window(i), axis=rs), name="T_pool_sum", tag="pool_sum",
                       attrs=attrs)
    if not padded:
        area = _op.const(reduce_mul(ks), data.dtype)
        return te.compute(tuple(shape), lambda *i: total(*i) / area, name="T_pool_avg", tag="pool_avg", attrs=attrs)

    def taps(pos, k):
        count = None
        lo, hi, size = before[k], after[k], sizes[k]
        for t in range(ks[k]):
            p = pos + t * ds[k]           # coordinate in the padded input
            inside = _op.all(p >= 0, p < size + lo + hi) if count_include_pad else _op.all(p >= lo, p < size + lo)
            term = _op.if_then_else(inside, _op.const(1, "int32"), _op.const(0, "int32"))
            count = term if count is None else count + term
        return count

    def favg(*i):
        count = None
        for k, a in enumerate(axes):
            t = taps(i[a] * ss[k], k)
            count = t if count is None else count * t
        return total(*i) / _op.cast(data.dtype, _op.max(count, 1))
    return te.compute(tuple(shape), favg, name="T_pool_avg", tag="pool_avg", attrs=attrs)


def reduce_mul(xs):
    out = 1
    for x in xs:
        out *= x
    return out


def pool1d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCW",
           count_include_pad=True):
    """Max or average pooling over the width of ``layout`` (NCW, NWC); ``padding`` (left, right)."""
    return poolnd(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad,
                  op="pool1d")


def pool2d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCHW",
           count_include_pad=True, drop_pad_windows=False):
    """Max or average pooling over the two spatial axes of ``layout`` (NCHW, NHWC or NCHW[x]c).

    ``padding`` is (top, left, bottom, right) (an int or (h, w) also works); see ``poolnd`` for
    ``ceil_mode`` and ``drop_pad_windows``."""
    spatial_axes("pool2d", data, layout, 2)
    kh, kw = pair("pool2d", "kernel", kernel)
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), "pool2d")
    return poolnd(data, (kh, kw), stride, dilation, (pt, pl, pb, pr), pool_type, ceil_mode, layout,
                  count_include_pad, drop_pad_windows, op="pool2d")


def pool3d(data, kernel, stride, dilation, padding, pool_type, ceil_mode=False, layout="NCDHW",
           count_include_pad=True):
    """Max or average pooling over depth, height and width of ``layout`` (NCDHW, NDHWC); ``padding``
    (front, top, left, back, bottom, right)."""
    return poolnd(data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, count_include_pad,
                  op="pool3d")


def adaptive_pool(data, output_size, pool_type, layout="NCHW"):
    """Pooling to ``output_size`` per spatial axis: output position y of an axis of size H covers
    floor(y*H/oh) .. ceil((y+1)*H/oh)."""
    axes = spatial_axes("adaptive_pool", data, layout)
    if pool_type not in ("max", "avg"):
        raise OperatorError(f"adaptive_pool: pool_type must be 'max' or 'avg', got {pool_type!r}")
    n = len(axes)
    osz = _ints_n("adaptive_pool", "output_size", output_size, n)
    sizes = [data.shape[a] for a in axes]
    shape = list(data.shape)
    for k, a in enumerate(axes):
        shape[a] = osz[k]
    if pool_type == "avg" and not dt.is_float(data.dtype):
        raise OperatorError(f"adaptive_pool: average pooling needs a float tensor, got {shape_str(data)}")
    if all(o == 1 for o in osz):
        rs = [te.reduce_axis((0, sz), name="r" + "dhw"[3 - n + k]) for k, sz in enumerate(sizes)]

        def at(i):
            idx = list(i)
            for k, a in enumerate(axes):
                idx[a] = rs[k]
            return data(*idx)
        if pool_type == "max":
            return te.compute(tuple(shape), lambda *i: te.max(at(i), axis=rs), name="T_global_pool_max",
                              tag="adaptive_pool_max", attrs={"layout": layout})
        s = te.compute(tuple(shape), lambda *i: te.sum(at(i), axis=rs), name="T_global_pool_sum",
                       tag="adaptive_pool_sum", attrs={"axis": tuple(axes), "ndim": len(data.shape), "layout": layout})
        count = reduce_mul(sizes) if all(isinstance(x, int) for x in sizes) else sizes[0]
        if not isinstance(count, int):
            for x in sizes[1:]:
                count = count * x
        return te.compute(tuple(shape), lambda *i: s(*i) / _op.cast(data.dtype, count), name="T_global_pool_avg",
                          tag="adaptive_pool_avg")
    cs = [get_const_int(x) for x in sizes]
    ks = [max(-(-((y + 1) * c) // o) - (y * c) // o for y in range(o)) for c, o in zip(cs, osz)]
    rs = [te.reduce_axis((0, ks[k]), name="r" + "dhw"[3 - n + k]) for k in range(n)]

    def bounds(i, k):
        a, c, o = axes[k], cs[k], osz[k]
        return (i[a] * c) // o, ((i[a] + 1) * c + o - 1) // o

    def at(i):
        idx, cond = list(i), []
        for k, a in enumerate(axes):
            lo, hi = bounds(i, k)
            idx[a] = _op.min(lo + rs[k], cs[k] - 1)
            cond.append(lo + rs[k] < hi)
        return _op.all(*cond), data(*idx)
    if pool_type == "max":
        def fmax(*i):
            c, v = at(i)
            return te.max(_op.if_then_else(c, v, _op.min_value(data.dtype)), axis=rs)
        return te.compute(tuple(shape), fmax, name="T_adaptive_pool_max", tag="adaptive_pool_max",
                          attrs={"layout": layout})

    def fsum(*i):
        c, v = at(i)
        return te.sum(_op.if_then_else(c, v, _op.const(0, data.dtype)), axis=rs)
    s = te.compute(tuple(shape), fsum, name="T_adaptive_pool_sum", tag="adaptive_pool_sum", attrs={"layout": layout})

    def favg(*i):
        count = None
        for k in range(n):
            lo, hi = bounds(i, k)
            count = (hi - lo) if count is None else count * (hi - lo)
        return s(*i) / _op.cast(data.dtype, count)
    return te.compute(tuple(shape), favg, name="T_adaptive_pool_avg", tag="adaptive_pool_avg")


def adaptive_pool1d(data, output_size, pool_type, layout="NCW"):
    """``adaptive_pool`` over the width of NCW / NWC data."""
    spatial_axes("adaptive_pool1d", data, layout, 1)
    return adaptive_pool(data, output_size, pool_type, layout)


def adaptive_pool3d(data, output_size, pool_type, layout="NCDHW"):
    """``adaptive_pool`` over depth, height and width of NCDHW / NDHWC data."""
    spatial_axes("adaptive_pool3d", data, layout, 3)
    return adaptive_pool(data, output_size, pool_type, layout)


def global_pool(data, pool_type, layout="NCHW"):
    """Max or average over the whole spatial extent: (N, C, 1, 1) for NCHW."""
    return adaptive_pool(data, (1, 1), pool_type, layout)


def pool(data, kernel, stride, padding, pool_type, ceil_mode=False, layout="NCHW", count_include_pad=True):
    """TVM's earlier spelling of ``pool2d`` (no dilation argument): ``topi.nn.pool(X, (2, 2), (2, 2),
    (0, 0, 0, 0), "max")``."""
    return pool2d(data, kernel, stride, 1, padding, pool_type, ceil_mode, layout, count_include_pad)
