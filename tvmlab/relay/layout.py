"""Blocked data layouts (TVM's NCHW[x]c): the layout_transform operator and conv2d in NCHWc (both computed
by topi; a group anchored at the convolution gets ``topi.x86.schedule_conv2d_NCHWc``).

``NCHW16c`` stores channel ``c`` of an NCHW tensor at ``[n, c // 16, h, w, c % 16]``:
the channels a vector register holds are contiguous, so a convolution loads
its input and weights as whole vectors.  Weights go to ``OIHW{i}i{o}o``
(``[o // o_b, i // i_b, kh, kw, i % i_b, o % o_b]``).
"""
from __future__ import annotations

import re

from .base import RelayError, TypeInferenceError
from .op.registry import OpPattern, make_call, register
from .op.typerel import tensor_arg

_DATA = re.compile(r"^NCHW(\d+)c$")
_KERNEL = re.compile(r"^OIHW(\d+)i(\d+)o$")
_DENSE = re.compile(r"^NK(\d+)n$")


def block_of(layout):
    """The channel block of a data layout ("NCHW" -> 1, "NCHW16c" -> 16), or None if not an NCHW layout."""
    if layout == "NCHW":
        return 1
    m = _DATA.match(layout or "")
    return int(m.group(1)) if m else None


def _check(src, dst):
    data = block_of(src) is not None and block_of(dst) is not None
    kernel = src == "OIHW" and _KERNEL.match(dst or "")
    dense = src == "NK" and _DENSE.match(dst or "")
    if not (data or kernel or dense):
        raise RelayError(f"layout_transform from {src!r} to {dst!r} is not supported; supported: NCHW <-> "
                         "NCHW{x}c (any blocks), OIHW -> OIHW{i}i{o}o and NK -> NK{n}n (a dense weight in "
                         "panels of n rows)")


def transformed_shape(shape, src, dst):
    if src == "NK":
        if len(shape) != 2:
            raise TypeInferenceError(f"a tensor of shape {tuple(shape)} is not in layout NK")
        b = int(_DENSE.match(dst).group(1))
        return (-(-shape[0] // b), shape[1], b)      # the last panel zero-padded
    if src == "OIHW":
        i_b, o_b = map(int, _KERNEL.match(dst).groups())
        o, i, kh, kw = shape
        if o % o_b or i % i_b:
            raise TypeInferenceError(f"weight {tuple(shape)} does not divide into {dst} blocks")
        return (o // o_b, i // i_b, kh, kw, i_b, o_b)
    db = block_of(dst)          # NCHW1c is five axes, the last of one channel: only NCHW has four
    if len(shape) != (4 if src == "NCHW" else 5):
        raise TypeInferenceError(f"a tensor of shape {tuple(shape)} is not in layout {src}")
    n, cb, h, w = shape[:4]
    c = cb * (shape[4] if src != "NCHW" else 1)
    if c % db:
        raise TypeInferenceError(f"{c} channels do not divide into blocks of {db} ({dst})")
    return (n, c, h, w) if dst == "NCHW" else (n, c // db, h, w, db)


def transform_array(a, src, dst):
    """numpy version of layout_transform (for constants): ``topi.testing.layout_transform_python``."""
    from ..topi.testing import layout_transform_python
    return layout_transform_python(a, src, dst)


def _lt_rel(types, attrs):
    t = tensor_arg(types, 0)
    from .ty import TensorType
    return TensorType(transformed_shape(t.shape, attrs.src_layout, attrs.dst_layout), t.dtype)


def _lt_compute(attrs, inputs, out_type):
    from .. import topi
    return [topi.layout_transform(inputs[0], attrs.src_layout, attrs.dst_layout)]


register("layout_transform", _lt_rel, OpPattern.INJECTIVE, _lt_compute, {"src_layout": "", "dst_layout": ""}, 1)


def layout_transform(data, src_layout, dst_layout):
    """``relay.layout_transform(data, "NCHW", "NCHW16c")``."""
    _check(src_layout, dst_layout)
    return make_call("layout_transform", [data], src_layout=src_layout, dst_layout=dst_layout)


# ------------------------------------------------------------------ conv2d in NCHWc
def _nchwc_out_type(d, w, ob, attrs):
    # (N, O/ob, OH, OW, ob) of a blocked convolution of data d by weight w
    from .op.nn import conv_out
    from .ty import TensorType
    n, _, h, wd, _ = d.shape
    kh, kw = w.shape[2], w.shape[3]
    pt, pl, pb, pr = attrs.padding
    oh = conv_out(h, kh, attrs.strides[0], attrs.dilation[0], pt, pb)
    ow = conv_out(wd, kw, attrs.strides[1], attrs.dilation[1], pl, pr)
    return TensorType((n, w.shape[0], oh, ow, ob), attrs.out_dtype or d.dtype)


def _nchwc_rel(types, attrs):
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    ib, ob = block_of(attrs.data_layout), block_of(attrs.out_layout)
    km = _KERNEL.match(attrs.kernel_layout)
    if not ib or not ob or not km or (int(km.group(1)), int(km.group(2))) != (ib, ob):
        raise TypeInferenceError(f"layouts {attrs.data_layout}, {attrs.kernel_layout}, {attrs.out_layout} do not "
                                 "form an NCHW{i}c / OIHW{i}i{o}o / NCHW{o}c convolution")
    g = attrs.groups
    if len(d.shape) != 5 or d.shape[4] != ib or len(w.shape) != 6 or w.shape[1] * g != d.shape[1] or \
            w.shape[4] != ib or w.shape[5] != ob or w.shape[0] % g:
        raise TypeInferenceError(f"data {d.shape} and weight {w.shape} do not fit layouts {attrs.data_layout} / "
                                 f"{attrs.kernel_layout}")
    return _nchwc_out_type(d, w, ob, attrs)


def _nchwc_compute(attrs, inputs, out_type):
    from ..topi import nn as topi_nn
    data, kernel = inputs
    return [topi_nn.conv2d_NCHWc(data, kernel, attrs.strides, tuple(attrs.padding), attrs.dilation,
                                 attrs.data_layout, attrs.out_layout, out_type.dtype, groups=attrs.groups)]


register("nn.contrib_conv2d_NCHWc", _nchwc_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _nchwc_compute,
         {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
          "kernel_size": None, "data_layout": "NCHW8c", "kernel_layout": "OIHW8i8o", "out_layout": "NCHW8c",
          "out_dtype": ""}, 2)


# ------------------------------------------------------------------ depthwise conv2d in NCHWc
def _dw_nchwc_rel(types, attrs):
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    ib, ob = block_of(attrs.data_layout), block_of(attrs.out_layout)
    km = _KERNEL.match(attrs.kernel_layout)
    if not ib or not ob or not km or (int(km.group(1)), int(km.group(2))) != (1, ob):
        raise TypeInferenceError(f"layouts {attrs.data_layout}, {attrs.kernel_layout}, {attrs.out_layout} do not "
                                 "form an NCHW{i}c / OIHW1i{o}o / NCHW{o}c depthwise convolution")
    if len(d.shape) != 5 or d.shape[4] != ib or len(w.shape) != 6 or w.shape[1] != 1 or w.shape[4] != 1 \
            or w.shape[5] != ob or (w.shape[0] * ob) % (d.shape[1] * ib):
        raise TypeInferenceError(f"data {d.shape} and weight {w.shape} do not fit layouts {attrs.data_layout} / "
                                 f"{attrs.kernel_layout} (output channels a multiple of the input's)")
    return _nchwc_out_type(d, w, ob, attrs)


def _dw_nchwc_compute(attrs, inputs, out_type):
    from ..topi import nn as topi_nn
    data, kernel = inputs
    return [topi_nn.depthwise_conv2d_NCHWc(data, kernel, attrs.strides, tuple(attrs.padding), attrs.dilation,
                                           attrs.data_layout, attrs.out_layout, out_type.dtype)]


register("nn.contrib_depthwise_conv2d_NCHWc", _dw_nchwc_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _dw_nchwc_compute,
         {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
          "kernel_size": None, "data_layout": "NCHW8c", "kernel_layout": "OIHW1i8o", "out_layout": "NCHW8c",
          "out_dtype": ""}, 2)


# ------------------------------------------------------------------ Winograd conv2d in NCHWc
def _wg_weight_rel(types, attrs):
    from .ty import TensorType
    w = tensor_arg(types, 0, "weight")
    ob, m = attrs.out_block, attrs.tile_size
    if len(w.shape) != 4 or w.shape[2] != w.shape[3] or w.shape[0] % ob:
        raise TypeInferenceError(f"winograd weight transform: weight {w.shape} is not (O, C, r, r) with O a "
                                 f"multiple of {ob}")
    alpha = m + w.shape[2] - 1
    return TensorType((alpha * alpha, w.shape[0] // ob, w.shape[1], ob), w.dtype)


def _wg_weight_compute(attrs, inputs, out_type):
    from ..topi import nn as topi_nn
    return [topi_nn.winograd_weight_transform_NCHWc(inputs[0], attrs.tile_size, attrs.out_block)]


register("nn.contrib_conv2d_winograd_weight_transform_NCHWc", _wg_weight_rel, OpPattern.OPAQUE,
         _wg_weight_compute, {"tile_size": 4, "out_block": 16}, 1,
         description="a 3x3 kernel (O, C, r, r) as the Winograd points of each channel pair, output channels "
                     "blocked: (alpha * alpha, O/ob, C, ob); FoldConstant computes it once for a constant kernel")


def _wg_rel(types, attrs):
    from .op.nn import conv_out
    from .ty import TensorType
    d, u = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    ib, ob = block_of(attrs.data_layout), block_of(attrs.out_layout)
    m = attrs.tile_size
    alpha = int(round(u.shape[0] ** 0.5)) if len(u.shape) == 4 else 0
    if not ib or not ob or len(d.shape) != 5 or d.shape[4] != ib or len(u.shape) != 4 or alpha * alpha != u.shape[0] \
            or alpha <= m or u.shape[2] != d.shape[1] * ib or u.shape[3] != ob:
        raise TypeInferenceError(f"data {d.shape} ({attrs.data_layout}) and transformed weight {u.shape} do not form "
                                 f"a Winograd F({m}) convolution to {attrs.out_layout}")
    r = alpha - m + 1
    pt, pl, pb, pr = attrs.padding
    n, _, h, w, _ = d.shape
    return TensorType((n, u.shape[1], conv_out(h, r, 1, 1, pt, pb), conv_out(w, r, 1, 1, pl, pr), ob),
                      attrs.out_dtype or d.dtype)


def _wg_compute(attrs, inputs, out_type):
    from ..topi import nn as topi_nn
    data, u = inputs
    return [topi_nn.conv2d_winograd_NCHWc(data, u, tuple(attrs.padding), attrs.tile_size, out_type.dtype)]


register("nn.contrib_conv2d_winograd_NCHWc", _wg_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _wg_compute,
         {"padding": (0, 0, 0, 0), "tile_size": 4, "channels": None, "data_layout": "NCHW16c",
          "out_layout": "NCHW16c", "out_dtype": ""}, 2,
         description="a unit-stride convolution by Winograd's F(m x m, r x r) in blocked layouts, reading the "
                     "transformed weight of nn.contrib_conv2d_winograd_weight_transform_NCHWc")
