"""Winograd conv2d in NCHW with the kernel transformed apart (TVM's names), as relay.build uses it for CUDA:

    u = relay.nn.contrib_conv2d_winograd_weight_transform(w, tile_size=4)        # (alpha, alpha, O, C)
    u = relay.transpose(u, (0, 1, 3, 2))                                          # (alpha, alpha, C, O)
    y = relay.nn.contrib_conv2d_winograd_without_weight_transform(x, u, tile_size=4, padding=(1, 1))

For a constant kernel FoldConstant computes ``u`` once, at compile time; the convolution then runs
``topi.cuda.conv2d_nchw_winograd_without_weight_transform`` (alpha = tile_size + 2, a 3x3 kernel, unit
stride).
"""
from __future__ import annotations

from ..base import RelayError, TypeInferenceError
from ..ty import TensorType
from .registry import OpPattern, make_call, register
from .typerel import padding4, pair, tensor_arg


def _weight_rel(types, attrs):
    w = tensor_arg(types, 0, "weight")
    if len(w.shape) != 4 or tuple(w.shape[2:]) != (3, 3):
        raise TypeInferenceError(f"nn.contrib_conv2d_winograd_weight_transform: weight (O, C, 3, 3) expected, got "
                                 f"{w.shape}")
    if attrs.tile_size not in (2, 4):
        raise TypeInferenceError(f"nn.contrib_conv2d_winograd_weight_transform: tile_size must be 2 or 4, got "
                                 f"{attrs.tile_size}")
    alpha = attrs.tile_size + 2
    return TensorType((alpha, alpha, w.shape[0], w.shape[1]), w.dtype)


def _weight_compute(attrs, inputs, out_type):
    from ...topi.nn.winograd import conv2d_winograd_weight_transform
    return [conv2d_winograd_weight_transform(inputs[0], attrs.tile_size)]


register("nn.contrib_conv2d_winograd_weight_transform", _weight_rel, OpPattern.OPAQUE, _weight_compute,
         {"tile_size": 4}, 1,
         description="a 3x3 kernel (O, C, 3, 3) as G g G^T at each Winograd point: (alpha, alpha, O, C)")


def _conv_rel(types, attrs):
    d, u = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    alpha = attrs.tile_size + 2
    if len(d.shape) != 4 or len(u.shape) != 4 or tuple(u.shape[:2]) != (alpha, alpha) or u.shape[2] != d.shape[1]:
        c = d.shape[1] if len(d.shape) > 1 else "C"
        raise TypeInferenceError(f"nn.contrib_conv2d_winograd_without_weight_transform: data {d.shape} (NCHW) and "
                                 f"transformed weight {u.shape} (expected ({alpha}, {alpha}, {c}, O) for tile_size "
                                 f"{attrs.tile_size})")
    if tuple(attrs.strides) != (1, 1) or tuple(attrs.dilation) != (1, 1):
        raise TypeInferenceError(f"nn.contrib_conv2d_winograd_without_weight_transform: unit strides and dilation "
                                 f"only, got {attrs.strides} and {attrs.dilation}")
    if d.dtype != u.dtype:
        raise TypeInferenceError(f"nn.contrib_conv2d_winograd_without_weight_transform: data is {d.dtype}, weight "
                                 f"{u.dtype}")
    pt, pl, pb, pr = attrs.padding
    n, _, h, w = d.shape
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    if oh < 1 or ow < 1:
        raise TypeInferenceError(f"the 3x3 kernel does not fit the {h}x{w} input (with padding {attrs.padding})")
    return TensorType((n, u.shape[3], oh, ow), attrs.out_dtype or d.dtype)


def _conv_compute(attrs, inputs, out_type):
    from ...topi.cuda.conv2d_winograd import conv2d_nchw_winograd_without_weight_transform
    data, u = inputs
    return [conv2d_nchw_winograd_without_weight_transform(data, u, 1, tuple(attrs.padding), 1, out_type.dtype,
                                                          attrs.tile_size)]


register("nn.contrib_conv2d_winograd_without_weight_transform", _conv_rel, OpPattern.OUT_ELEMWISE_FUSABLE,
         _conv_compute, {"tile_size": 4, "strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1),
                         "groups": 1, "channels": None, "kernel_size": (3, 3), "data_layout": "NCHW",
                         "kernel_layout": "", "out_dtype": ""}, 2,
         description="a 3x3 unit-stride convolution by Winograd's F(m x m, 3 x 3) reading a transformed kernel "
                     "(alpha, alpha, C, O)")


def contrib_conv2d_winograd_weight_transform(weight, tile_size):
    """``relay.nn.contrib_conv2d_winograd_weight_transform(weight, tile_size)``: (O, C, 3, 3) -> (alpha, alpha,
    O, C), alpha = tile_size + 2."""
    if tile_size not in (2, 4):
        raise RelayError(f"nn.contrib_conv2d_winograd_weight_transform: tile_size must be 2 or 4, got {tile_size!r}")
    return make_call("nn.contrib_conv2d_winograd_weight_transform", [weight], tile_size=int(tile_size))


def contrib_conv2d_winograd_without_weight_transform(data, weight, tile_size, strides=(1, 1), padding=(0, 0),
                                                     dilation=(1, 1), groups=1, channels=None, kernel_size=(3, 3),
                                                     data_layout="NCHW", kernel_layout="", out_layout="",
                                                     out_dtype=""):
    """``relay.nn.contrib_conv2d_winograd_without_weight_transform``: NCHW data, the weight transformed and
    transposed to (alpha, alpha, C, O)."""
    if tile_size not in (2, 4) or groups != 1 or data_layout != "NCHW" or out_layout not in ("", "NCHW"):
        raise RelayError(f"nn.contrib_conv2d_winograd_without_weight_transform: tile_size 2 or 4, groups 1 and "
                         f"NCHW only; got tile_size={tile_size!r}, groups={groups!r}, {data_layout!r}")
    return make_call("nn.contrib_conv2d_winograd_without_weight_transform", [data, weight], tile_size=int(tile_size),
                     strides=pair(strides, "strides"), padding=padding4(padding),
                     dilation=pair(dilation, "dilation"), groups=1, channels=channels,
                     kernel_size=pair(kernel_size, "kernel_size"), data_layout="NCHW",
                     kernel_layout=kernel_layout, out_dtype=out_dtype)
