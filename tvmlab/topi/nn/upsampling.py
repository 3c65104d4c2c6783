"""Upsampling by scale factors, as TVM's ``topi.nn.upsampling`` / ``upsampling3d``: a resize to
``round(size * scale)`` with "asymmetric" coordinates (or "align_corners")."""
from __future__ import annotations

from ..image.resize import resize
from ..utils import OperatorError, const_or_none


def _out(op, data, axes, scales, output_shape):
    if output_shape is not None:
        return [int(v) for v in output_shape]
    sizes = [const_or_none(data.shape[a]) for a in axes]
    if None in sizes:
        raise OperatorError(f"{op}: needs static spatial sizes (or output_shape), got {tuple(data.shape)}")
    return [int(round(s * f)) for s, f in zip(sizes, scales)]


def upsampling(data, scale_h, scale_w, layout="NCHW", method="nearest_neighbor", align_corners=False,
               output_shape=None):
    """``data`` (NCHW, NHWC or packed NCHW[x]n[y]c) upsampled by (scale_h, scale_w): method
    "nearest_neighbor", "bilinear" or "bicubic"."""
    from ..image.resize import spatial_of
    axes = spatial_of("upsampling", data, layout, 2)
    size = _out("upsampling", data, axes, (scale_h, scale_w), output_shape)
    mode = "align_corners" if align_corners else "asymmetric"
    return resize(data, size, layout, method, mode, op="upsampling", ndim=2)


def upsampling3d(data, scale_d, scale_h, scale_w, layout="NCDHW", method="nearest_neighbor",
                 coordinate_transformation_mode="half_pixel", output_shape=None):
    """``data`` (NCDHW / NDHWC) upsampled by (scale_d, scale_h, scale_w): "nearest_neighbor" or
    "trilinear"."""
    from ..image.resize import spatial_of
    axes = spatial_of("upsampling3d", data, layout, 3)
    size = _out("upsampling3d", data, axes, (scale_d, scale_h, scale_w), output_shape)
    return resize(data, size, layout, method, coordinate_transformation_mode, op="upsampling3d", ndim=3)
