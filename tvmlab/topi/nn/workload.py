"""The workload of a 2-D convolution as TVM's AutoTVM templates describe it (``_get_workload``): sizes,
padding, strides and dilation in one named tuple, from the tensors and attributes of a call."""
from __future__ import annotations

from collections import namedtuple

from ..utils import OperatorError, get_const_tuple
from .utils import get_pad_tuple

Workload = namedtuple("Workload", ["in_dtype", "out_dtype", "height", "width", "in_filter", "groups", "out_filter",
                                   "kernel_h", "kernel_w", "padt", "padl", "padb", "padr", "dilation_h",
                                   "dilation_w", "stride_h", "stride_w"])

# where (height, width, channels) are in each data layout, and (kh, kw, out, in) in its kernel
_DATA = {"NCHW": (2, 3, 1), "NHWC": (1, 2, 3), "HWCN": (0, 1, 2)}


def conv2d_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout="NCHW", depthwise=False):
    """The Workload of a (depthwise) 2-D convolution of ``data`` in ``data_layout`` (NCHW, NHWC, or a
    blocked NCHW[x]c) with ``kernel`` in the matching layout (OIHW / HWIO; depthwise: (C, M, KH, KW),
    (KH, KW, C, M) or blocked (C*M/oc, 1, KH, KW, 1, oc))."""
    d, k = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    blocked = data_layout.startswith("NCHW") and data_layout != "NCHW"
    if blocked:
        _, cb, h, w, ic = d
        c = cb * ic
        kh, kw = k[2], k[3]
        out, per_group = k[0] * k[5], k[1] * k[4]
    elif data_layout in _DATA:
        ha, wa, ca = _DATA[data_layout]
        h, w, c = d[ha], d[wa], d[ca]
        if data_layout == "NCHW":
            kh, kw = k[2], k[3]
            out, per_group = (k[0] * k[1], 1) if depthwise else (k[0], k[1])
        else:
            kh, kw = k[0], k[1]
            out, per_group = (k[2] * k[3], 1) if depthwise else (k[3], k[2])
    else:
        raise OperatorError(f"_get_workload: data layout must be NCHW, NHWC, HWCN or NCHW[x]c, got {data_layout!r}")
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)[:2]
    sh, sw = (stride, stride) if isinstance(stride, int) else tuple(stride)[:2]
    pt, pl, pb, pr = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), "_get_workload")
    groups = c if depthwise else max(1, c // per_group)
    return Workload(data.dtype, out_dtype, h, w, c, groups, out, kh, kw, pt, pl, pb, pr, dh, dw, sh, sw)


def out_width(wkl):
    """The output width of workload ``wkl``."""
    return (wkl.width + wkl.padl + wkl.padr - ((wkl.kernel_w - 1) * wkl.dilation_w + 1)) // wkl.stride_w + 1
