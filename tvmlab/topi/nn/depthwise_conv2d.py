"""Depthwise convolution in the blocked layout NCHW[x]c, as TVM's ``topi.nn.depthwise_conv2d_NCHWc``.

    Xc = topi.layout_transform(X, "NCHW", "NCHW8c")                 # (N, C/8, H, W, 8)
    Wc = topi.layout_transform(W, "OIHW", "OIHW1i8o")               # W (C*M, 1, KH, KW) -> (C*M/8, 1, KH, KW, 1, 8)
    Y = topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW8c", "NCHW8c")

Why: a network of blocked convolutions (MobileNet) would otherwise leave the
blocked layout at every depthwise convolution and come back after it.  Here
output channel ``o`` reads input channel ``o // multiplier`` from the same
blocked tensor, so with multiplier 1 and equal blocks the input lane and the
output lane are the same: each step of the window loads one contiguous vector
of input channels and one of weights.
"""
from __future__ import annotations

from ... import te
from ..utils import OperatorError, check_tensor, const_or_none, shape_str
from .conv2d import _cast, check_block_layout, nchwc_window


def depthwise_conv2d_NCHWc(Input, Filter, stride, padding, dilation, layout, out_layout, out_dtype=None,
                           name="depthwise_conv2d_NCHWc"):
    """Depthwise convolution: Input (N, C/ic, H, W, ic), Filter (C*M/oc, 1, KH, KW, 1, oc) ->
    (N, C*M/oc, OH, OW, oc), output channel ``c * M + m`` reading input channel ``c``; tag
    ``depthwise_conv2d_NCHWc``.  ``layout`` / ``out_layout`` name the blocking ("NCHW16c")."""
    op = "depthwise_conv2d_NCHWc"
    check_tensor(op, Input, "data", 5)
    check_tensor(op, Filter, "kernel", 6)
    n, cbk, h, w, ic = Input.shape
    ofo, one_i, kh, kw, one_b, oc = Filter.shape
    ic, oc, kh, kw, cbk_c, ofo_c = (const_or_none(x) for x in (ic, oc, kh, kw, cbk, ofo))
    if None in (ic, oc, kh, kw, cbk_c, ofo_c) or const_or_none(one_i) != 1 or const_or_none(one_b) != 1:
        raise OperatorError(f"{op}: data {shape_str(Input)} and kernel {shape_str(Filter)} do not fit "
                            "(expected constant channels, data (N, C/ic, H, W, ic) and kernel "
                            "(C*M/oc, 1, KH, KW, 1, oc))")
    check_block_layout(op, "layout", layout, ic)
    check_block_layout(op, "out_layout", out_layout, oc)
    C, O = cbk_c * ic, ofo_c * oc
    if O % C:
        raise OperatorError(f"{op}: the kernel's {O} output channels are not a multiple of the data's {C} "
                            "channels (expected C * multiplier)")
    M = O // C
    out_dtype, (sh, sw), (dh, dw), pads, (oh, ow), pad = nchwc_window(op, Input, Filter, out_dtype, stride, padding,
                                                                     dilation, name)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def source(b, fo, y, x, fi):
        if M == 1 and ic == oc:           # same block, same lane
            return pad[b, fo, y, x, fi]
        ch = (fo * oc + fi) // M
        return pad[b, ch // ic, y, x, ch % ic]

    return te.compute((n, ofo, oh, ow, oc),
                      lambda b, fo, y, x, fi: te.sum(
                          _cast(out_dtype, source(b, fo, y * sh + ry * dh, x * sw + rx * dw, fi)) *
                          _cast(out_dtype, Filter[fo, 0, ry, rx, 0, fi]), axis=[ry, rx]),
                      name=name, tag="depthwise_conv2d_NCHWc",
                      attrs={"oc_block": oc, "ic_block": ic, "multiplier": M, "strides": (sh, sw),
                             "dilation": (dh, dw), "padding": pads})


def _get_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout="NCHW"):
    """The AutoTVM workload of a depthwise 2-D convolution (TVM's helper; see ``nn.workload``)."""
    from .workload import conv2d_workload
    return conv2d_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout, depthwise=True)
