"""Gradients of the NHWC depthwise convolution, as TVM's ``topi.nn.depthwise_conv2d_backward_input_nhwc``
and ``..._weight_nhwc``; filter (KH, KW, C, M), output channel ``c * M + m`` reading input channel c.

    dX = topi.nn.depthwise_conv2d_backward_input_nhwc(W, dY, oshape, ishape, stride=[2, 2], padding=[1, 1])
"""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none
from .utils import get_pad_tuple, pair


def _shapes(op, filter_shape, stride, padding):
    kh, kw, c, m = (const_or_none(x) for x in filter_shape)
    if None in (kh, kw, c, m):
        raise OperatorError(f"{op}: the filter (KH, KW, C, M) must have a constant shape, got {tuple(filter_shape)}")
    sh, sw = pair(op, "stride", stride)
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), op)
    return kh, kw, c, m, sh, sw, pt, pl


def depthwise_conv2d_backward_input_nhwc(Filter, Out_grad, oshape, ishape, stride, padding):
    """d(depthwise_conv2d_nhwc) / d(input) applied to ``Out_grad`` (``oshape``): shape ``ishape``."""
    op = "depthwise_conv2d_backward_input_nhwc"
    check_tensor(op, Filter, "Filter", 4)
    check_tensor(op, Out_grad, "Out_grad", 4)
    kh, kw, c, m, sh, sw, pt, pl = _shapes(op, Filter.shape, stride, padding)
    oh, ow = int(oshape[1]), int(oshape[2])
    zero = _op.const(0, Out_grad.dtype)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rm = te.reduce_axis((0, m), name="rm")

    def f(b, y, x, ch):
        py, px = y + pt - ry, x + pl - rx          # the output position this tap came from, times the stride
        oy, ox = _op.floordiv(py, sh), _op.floordiv(px, sw)
        ok = _op.all(py >= 0, px >= 0, _op.floormod(py, sh) == 0, _op.floormod(px, sw) == 0, oy < oh, ox < ow)
        g = Out_grad[b, _op.min(_op.max(oy, 0), oh - 1), _op.min(_op.max(ox, 0), ow - 1), ch * m + rm]
        return te.sum(_op.if_then_else(ok, g * Filter[ry, rx, ch, rm], zero), axis=[ry, rx, rm])
    return te.compute(tuple(ishape), f, name="In_grad", tag="depthwise_conv2d_backward_input_nhwc")


def depthwise_conv2d_backward_weight_nhwc(Input, Out_grad, oshape, fshape, stride, padding):
    """d(depthwise_conv2d_nhwc) / d(filter) applied to ``Out_grad`` (``oshape``): shape ``fshape``."""
    op = "depthwise_conv2d_backward_weight_nhwc"
    check_tensor(op, Input, "Input", 4)
    check_tensor(op, Out_grad, "Out_grad", 4)
    kh, kw, c, m, sh, sw, pt, pl = _shapes(op, fshape, stride, padding)
    n, h, w, _ = Input.shape
    zero = _op.const(0, Input.dtype)
    rb = te.reduce_axis((0, oshape[0]), name="rb")
    ry = te.reduce_axis((0, oshape[1]), name="ry")
    rx = te.reduce_axis((0, oshape[2]), name="rx")

    def f(fy, fx, ch, mm):
        y, x = ry * sh + fy - pt, rx * sw + fx - pl
        ok = _op.all(y >= 0, x >= 0, y < h, x < w)
        v = Input[rb, _op.min(_op.max(y, 0), h - 1), _op.min(_op.max(x, 0), w - 1), ch]
        return te.sum(_op.if_then_else(ok, v * Out_grad[rb, ry, rx, ch * m + mm], zero), axis=[rb, ry, rx])
    return te.compute(tuple(fshape), f, name="Weight_grad", tag="depthwise_conv2d_backward_weight_nhwc")
