"""The gradient of 2-D pooling with respect to its input, as TVM's ``topi.nn.pool_grad``.

    dX = topi.nn.pool_grad(dY, X, kernel=(3, 3), stride=(2, 2), padding=(1, 1, 1, 1), pool_type="max")

Max pooling sends each window's gradient to the first largest element of the window; average pooling
shares it among the taps the forward average divided by.  Each input element gathers from the windows
that cover it (a reduction over the kernel taps), so no two threads write one element.
"""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, get_const_int, shape_str
from .pad import pad as _pad
from .pooling import poolnd, spatial_axes
from .utils import get_pad_tuple, pair


def pool_grad(grads, data, kernel, stride, padding, pool_type, ceil_mode=False, layout="NCHW",
              count_include_pad=True):
    """d(pool2d(data)) / d(data) applied to ``grads`` (the output's gradient), same shape as ``data``."""
    ha, wa = spatial_axes("pool_grad", data, layout, 2)
    check_tensor("pool_grad", grads, "grads", len(data.shape))
    kh, kw = pair("pool_grad", "kernel", kernel)
    sh, sw = pair("pool_grad", "stride", stride)
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), "pool_grad")
    fwd = poolnd(data, (kh, kw), (sh, sw), 1, (pt, pl, pb, pr), pool_type, ceil_mode, layout, count_include_pad,
                 op="pool_grad")
    want = [const_or_none(d) for d in fwd.shape]
    if [const_or_none(d) for d in grads.shape] != want or grads.dtype != data.dtype:
        raise OperatorError(f"pool_grad: grads must be {data.dtype}{tuple(want)} (the pooled shape), got "
                            f"{shape_str(grads)}")
    H, W = get_const_int(data.shape[ha]), get_const_int(data.shape[wa])
    oh, ow = want[ha], want[wa]
    ky = te.reduce_axis((0, kh), name="ky")
    kx = te.reduce_axis((0, kw), name="kx")

    def windows(i):
        """The output positions whose window covers input ``i`` at tap (ky, kx), and whether they exist."""
        py, px = i[ha] + pt - ky, i[wa] + pl - kx         # the window's origin in padded coordinates
        y, x = _op.floordiv(py, sh), _op.floordiv(px, sw)
        ok = _op.all(py >= 0, px >= 0, _op.floormod(py, sh) == 0, _op.floormod(px, sw) == 0, y < oh, x < ow)
        return ok, _op.max(_op.min(y, oh - 1), 0), _op.max(_op.min(x, ow - 1), 0)

    def at(t, i, y, x):
        idx = list(i)
        idx[ha], idx[wa] = y, x
        return t(*idx)
    zero = _op.const(0, data.dtype)
    if pool_type == "max":
        padded = _pad(data, _side(data, ha, wa, pt, pl), _side(data, ha, wa, pb + sh, pr + sw),
                      _op.min_value(data.dtype), name="T_pool_grad_pad")
        ry = te.reduce_axis((0, kh), name="ry")
        rx = te.reduce_axis((0, kw), name="rx")

        def first(x, y):
            take_y = _op.logical_or(y[1] > x[1], _op.logical_and(y[1] == x[1], y[0] < x[0]))
            return _op.select(take_y, y[0], x[0]), _op.select(take_y, y[1], x[1])
        argmax = te.comm_reducer(first, lambda t0, t1: (_op.const(-1, t0), _op.min_value(t1)), name="argmax")

        def pick(*i):
            idx = list(i)
            idx[ha], idx[wa] = i[ha] * sh + ry, i[wa] * sw + rx
            return argmax((ry * kw + rx, padded(*idx)), axis=[ry, rx])
        best = te.compute(fwd.shape, pick, name="T_pool_grad_argmax", tag="comm_reduce_idx")

        def fmax(*i):
            ok, y, x = windows(i)
            hit = _op.logical_and(ok, at(best[0], i, y, x) == ky * kw + kx)
            return te.sum(_op.if_then_else(hit, at(grads, i, y, x), zero), axis=[ky, kx])
        return te.compute(data.shape, fmax, name="T_pool_grad", tag="pool_grad_max")
    if pool_type != "avg":
        raise OperatorError(f"pool_grad: pool_type must be 'max' or 'avg', got {pool_type!r}")

    def taps(pos, k, lo, hi, size):
        count = None
        for t in range(k):
            p = pos + t
            inside = _op.all(p >= 0, p < size + lo + hi) if count_include_pad else _op.all(p >= lo, p < size + lo)
            term = _op.if_then_else(inside, _op.const(1, "int32"), _op.const(0, "int32"))
            count = term if count is None else count + term
        return _op.max(count, 1)

    def favg(*i):
        ok, y, x = windows(i)
        count = taps(y * sh, kh, pt, pb, H) * taps(x * sw, kw, pl, pr, W)
        share = at(grads, i, y, x) / _op.cast(data.dtype, count)
        return te.sum(_op.if_then_else(ok, share, zero), axis=[ky, kx])
    return te.compute(data.shape, favg, name="T_pool_grad", tag="pool_grad_avg")


def _side(data, ha, wa, h, w):
    out = [0] * len(data.shape)
    out[ha], out[wa] = h, w
    return out
