"""Blocked data layouts (TVM's NCHW[x]c): the layout_transform operator, conv2d in NCHWc and its schedule.

``NCHW16c`` stores channel ``c`` of an NCHW tensor at ``[n, c // 16, h, w, c % 16]``:
the channels a vector register holds are contiguous, so a convolution loads
its input and weights as whole vectors.  Weights go to ``OIHW{i}i{o}o``
(``[o // o_b, i // i_b, kh, kw, i % i_b, o % o_b]``).
"""
from __future__ import annotations

import re

import numpy as np

from .. import te
from ..ir import op as _tir
from .base import RelayError, TypeInferenceError
from .op.registry import OpPattern, make_call, register
from .op.typerel import tensor_arg

_DATA = re.compile(r"^NCHW(\d+)c$")
_KERNEL = re.compile(r"^OIHW(\d+)i(\d+)o$")


def block_of(layout):
    """The channel block of a data layout ("NCHW" -> 1, "NCHW16c" -> 16), or None if not an NCHW layout."""
    if layout == "NCHW":
        return 1
    m = _DATA.match(layout or "")
    return int(m.group(1)) if m else None


def _check(src, dst):
    data = block_of(src) is not None and block_of(dst) is not None
    kernel = src == "OIHW" and _KERNEL.match(dst or "")
    if not (data or kernel):
        raise RelayError(f"layout_transform from {src!r} to {dst!r} is not supported; supported: NCHW <-> "
                         "NCHW{x}c (any blocks) and OIHW -> OIHW{i}i{o}o")


def transformed_shape(shape, src, dst):
    if src == "OIHW":
        i_b, o_b = map(int, _KERNEL.match(dst).groups())
        o, i, kh, kw = shape
        if o % o_b or i % i_b:
            raise TypeInferenceError(f"weight {tuple(shape)} does not divide into {dst} blocks")
        return (o // o_b, i // i_b, kh, kw, i_b, o_b)
    sb, db = block_of(src), block_of(dst)
    if len(shape) != (4 if sb == 1 else 5):
        raise TypeInferenceError(f"a tensor of shape {tuple(shape)} is not in layout {src}")
    n, cb, h, w = shape[:4]
    c = cb * (shape[4] if sb > 1 else 1)
    if c % db:
        raise TypeInferenceError(f"{c} channels do not divide into blocks of {db} ({dst})")
    return (n, c, h, w) if db == 1 else (n, c // db, h, w, db)


def transform_array(a, src, dst):
    """numpy version of layout_transform (for constants)."""
    if src == "OIHW":
        i_b, o_b = map(int, _KERNEL.match(dst).groups())
        o, i, kh, kw = a.shape
        return np.ascontiguousarray(a.reshape(o // o_b, o_b, i // i_b, i_b, kh, kw).transpose(0, 2, 4, 5, 3, 1))
    sb, db = block_of(src), block_of(dst)
    if sb > 1:
        n, cb, h, w, b = a.shape
        a = a.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)
    if db > 1:
        n, c, h, w = a.shape
        a = a.reshape(n, c // db, db, h, w).transpose(0, 1, 3, 4, 2)
    return np.ascontiguousarray(a)


def _lt_rel(types, attrs):
    t = tensor_arg(types, 0)
    from .ty import TensorType
    return TensorType(transformed_shape(t.shape, attrs.src_layout, attrs.dst_layout), t.dtype)


def _lt_compute(attrs, inputs, out_type):
    x = inputs[0]
    src, dst = attrs.src_layout, attrs.dst_layout
    if src == "OIHW":
        i_b, o_b = map(int, _KERNEL.match(dst).groups())
        return [te.compute(out_type.shape, lambda fo, co, ky, kx, ci, fi: x[fo * o_b + fi, co * i_b + ci, ky, kx],
                           name="layout_transform")]
    sb, db = block_of(src), block_of(dst)

    def read(n, c, h, w):
        return x[n, c, h, w] if sb == 1 else x[n, _tir.floordiv(c, sb), h, w, _tir.floormod(c, sb)]
    if db == 1:
        return [te.compute(out_type.shape, lambda n, c, h, w: read(n, c, h, w), name="layout_transform")]
    return [te.compute(out_type.shape, lambda n, co, h, w, ci: read(n, co * db + ci, h, w), name="layout_transform")]


register("layout_transform", _lt_rel, OpPattern.INJECTIVE, _lt_compute, {"src_layout": "", "dst_layout": ""}, 1)


def layout_transform(data, src_layout, dst_layout):
    """``relay.layout_transform(data, "NCHW", "NCHW16c")``."""
    _check(src_layout, dst_layout)
    return make_call("layout_transform", [data], src_layout=src_layout, dst_layout=dst_layout)


# ------------------------------------------------------------------ conv2d in NCHWc
def _nchwc_rel(types, attrs):
    from .op.nn import conv_out
    from .ty import TensorType
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    ib, ob = block_of(attrs.data_layout), block_of(attrs.out_layout)
    km = _KERNEL.match(attrs.kernel_layout)
    if not ib or not ob or not km or (int(km.group(1)), int(km.group(2))) != (ib, ob):
        raise TypeInferenceError(f"layouts {attrs.data_layout}, {attrs.kernel_layout}, {attrs.out_layout} do not "
                                 "form an NCHW{i}c / OIHW{i}i{o}o / NCHW{o}c convolution")
    if len(d.shape) != 5 or d.shape[4] != ib or len(w.shape) != 6 or w.shape[1] != d.shape[1] or \
            w.shape[4] != ib or w.shape[5] != ob:
        raise TypeInferenceError(f"data {d.shape} and weight {w.shape} do not fit layouts {attrs.data_layout} / "
                                 f"{attrs.kernel_layout}")
    n, _, h, wd, _ = d.shape
    kh, kw = w.shape[2], w.shape[3]
    pt, pl, pb, pr = attrs.padding
    oh = conv_out(h, kh, attrs.strides[0], attrs.dilation[0], pt, pb)
    ow = conv_out(wd, kw, attrs.strides[1], attrs.dilation[1], pl, pr)
    return TensorType((n, w.shape[0], oh, ow, ob), attrs.out_dtype or d.dtype)


def _nchwc_compute(attrs, inputs, out_type):
    from .op.tensor import _ints
    data, kernel = inputs
    n, cb, h, w, ib = _ints(data)
    ob_n, _, kh, kw, _, ob = _ints(kernel)
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, pb, pr = attrs.padding
    if any((pt, pl, pb, pr)):
        zero = te.const(0, data.dtype)
        pad = te.compute((n, cb, h + pt + pb, w + pl + pr, ib),
                         lambda b, c, y, x, ci: te.if_then_else(te.all(y >= pt, y < h + pt, x >= pl, x < w + pl),
                                                                data[b, c, y - pt, x - pl, ci], zero),
                         name="conv2d_NCHWc_pad")
    else:
        pad = data
    rco = te.reduce_axis((0, cb), name="rco")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rci = te.reduce_axis((0, ib), name="rci")
    acc = te.compute(out_type.shape, lambda b, fo, y, x, fi: te.sum(
        pad[b, rco, y * sh + ry * dh, x * sw + rx * dw, rci] * kernel[fo, rco, ry, rx, rci, fi],
        axis=[rco, ry, rx, rci]), name="conv2d_NCHWc_acc")
    return [te.compute(out_type.shape, lambda *i: acc[i], name="conv2d_NCHWc", tag="conv2d_NCHWc")]


register("nn.contrib_conv2d_NCHWc", _nchwc_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _nchwc_compute,
         {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "channels": None,
          "kernel_size": None, "data_layout": "NCHW8c", "kernel_layout": "OIHW8i8o", "out_layout": "NCHW8c",
          "out_dtype": ""}, 2)


def schedule_conv2d_nchwc(outs, conv, target):
    """A register tile of ``width`` output columns x one channel block (vectors) over the whole reduction,
    written out through the group's element-wise tail; tasks are (batch, channel block, row)."""
    from ..topi.conv2d import register_tile_blocked
    from .schedules import inline_injective
    out = outs[0]
    acc = conv.op.input_tensors[0]
    pad = next((t for t in acc.op.input_tensors if t.op.name == "conv2d_NCHWc_pad"), None)
    s = te.create_schedule(out.op)
    keep = {acc.op} | ({pad.op} if pad is not None else set())
    inline_injective(s, keep=keep)
    if pad is not None:
        b, c, y, x, ci = s[pad].op.axis
        s[pad].parallel(s[pad].fuse(b, c))
        s[pad].vectorize(ci)
    register_tile_blocked(s, out, acc, target)
    return s
