"""Transposed convolutions in 1 and 3 spatial axes and grouped in 2, as TVM's ``topi.nn``:
``conv1d_transpose_ncw``, ``conv3d_transpose_ncdhw``, ``group_conv2d_transpose_nchw``.

    Y = topi.nn.conv1d_transpose_ncw(X, W, 2, 1, "float32", output_padding=1)   # W (C, O, KW)

Computed as ``conv2d_transpose_nchw`` is: the input spread ``strides`` apart and padded by
``kernel - 1 - padding`` (one stage, ``<name>_dilate_pad``; a negative amount crops), then a unit-stride
convolution (``topi.nn.conv``) with the kernel flipped and its channel axes swapped.
"""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, shape_str
from .conv import conv
from .utils import _ints, get_pad_tuple_nd

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def conv_transpose(data, kernel, strides, padding, out_dtype=None, output_padding=0, groups=1, name="conv_transpose",
                   tag="conv_transpose"):
    """Transposed convolution of data (N, C, spatial...) with kernel (C, O / groups, window...) ->
    (N, O, (size - 1) * stride - pads + window + output_padding, ...)."""
    op = tag
    check_tensor(op, data, "data")
    n = len(data.shape) - 2
    if n not in _SPATIAL:
        raise OperatorError(f"{op}: data must have 1 to 3 spatial axes, got {shape_str(data)}")
    check_tensor(op, kernel, "kernel", n + 2)
    C, Og = const_or_none(kernel.shape[0]), const_or_none(kernel.shape[1])
    ks = [const_or_none(k) for k in kernel.shape[2:]]
    if None in ks or C is None or Og is None:
        raise OperatorError(f"{op}: the kernel's shape must be constant, got {shape_str(kernel)}")
    if const_or_none(data.shape[1]) not in (None, C):
        raise OperatorError(f"{op}: data has {data.shape[1]} channels but the kernel (C, O, ...) has {C}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or C % groups:
        raise OperatorError(f"{op}: groups must be an int >= 1 dividing the {C} input channels, got {groups!r}")
    ss = _ints(op, "strides", strides, n)
    ops = _ints(op, "output_padding", output_padding, n)
    if any(p >= s for p, s in zip(ops, ss)):
        raise OperatorError(f"{op}: output_padding {tuple(ops)} must be smaller than strides {tuple(ss)}")
    before, after = get_pad_tuple_nd(padding, ks, op)
    lo = [k - 1 - b for k, b in zip(ks, before)]                 # may be negative: then the input is cropped
    hi = [k - 1 - a + p for k, a, p in zip(ks, after, ops)]
    sizes = data.shape[2:]
    zero = _op.const(0, data.dtype)

    def spread(b, ch, *pos):
        conds, idx = [], []
        for k in range(n):
            t = pos[k] - lo[k]
            conds += [t >= 0, t < (sizes[k] - 1) * ss[k] + 1] + ([t % ss[k] == 0] if ss[k] > 1 else [])
            idx.append(_op.min(_op.max(t // ss[k], 0), sizes[k] - 1))
        return _op.if_then_else(_op.all(*conds), data(b, ch, *idx), zero)
    shape = tuple(data.shape[:2]) + tuple((sizes[k] - 1) * ss[k] + 1 + lo[k] + hi[k] for k in range(n))
    padded = te.compute(shape, spread, name=name + "_dilate_pad", tag="injective,pad")
    cpg = C // groups
    flipped = te.compute((Og * groups, cpg) + tuple(ks),
                         lambda o, ch, *w: kernel(*((o // Og * cpg + ch, o % Og) +
                                                    tuple(ks[k] - 1 - w[k] for k in range(n)))),
                         name=name + "_kernel", tag="injective")
    sp = _SPATIAL[n]
    return conv(padded, flipped, 1, 0, 1, groups, "NC" + sp, "OI" + sp, out_dtype, name, tag)


def conv1d_transpose_ncw(data, kernel, stride, padding, out_dtype, output_padding):
    """Transposed 1-D convolution: data (N, C, W), kernel (C, O, KW)."""
    return conv_transpose(data, kernel, stride, padding, out_dtype, output_padding, 1, "conv1d_transpose_ncw",
                          "conv1d_transpose_ncw")


def conv3d_transpose_ncdhw(Input, Filter, strides, padding, out_dtype, output_padding):
    """Transposed 3-D convolution: Input (N, C, D, H, W), Filter (C, O, KD, KH, KW)."""
    return conv_transpose(Input, Filter, strides, padding, out_dtype, output_padding, 1, "conv3d_transpose_ncdhw",
                          "conv3d_transpose_ncdhw")


def group_conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups):
    """Grouped transposed convolution: data (N, C, H, W), kernel (C, O / groups, KH, KW) -> (N, O, ...)."""
    from .conv2d import conv2d_transpose_nchw
    return conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups=groups)
