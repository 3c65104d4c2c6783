"""``relay.image.resize2d``: nearest and (bi)linear resizing with ONNX/TVM coordinate modes (injective)."""
from __future__ import annotations

from ..base import RelayError
from ..ty import TensorType
from .registry import OpPattern, make_call, register, register_schedule
from .typerel import tensor_arg


def _resize_rel(types, attrs):
    t = tensor_arg(types, 0)
    if len(t.shape) != 4:
        from ..base import TypeInferenceError
        raise TypeInferenceError(f"resize2d needs a 4-D tensor, got shape {t.shape}")
    shape = list(t.shape)
    h, w = (2, 3) if attrs.layout == "NCHW" else (1, 2)
    shape[h], shape[w] = attrs.size
    return TensorType(shape, attrs.out_dtype or t.dtype)


def _resize_compute(attrs, inputs, out_type):
    from ...topi.image import resize2d as f
    return [f(inputs[0], None, attrs.size, attrs.layout, attrs.method, attrs.coordinate_transformation_mode,
              attrs.rounding_method, attrs.cubic_alpha, attrs.cubic_exclude, out_dtype=out_type.dtype,
              scale=attrs.scale)]


register("image.resize2d", _resize_rel, OpPattern.INJECTIVE, _resize_compute,
         {"size": None, "roi": None, "layout": "NCHW", "method": "linear",
          "coordinate_transformation_mode": "half_pixel", "rounding_method": "", "cubic_alpha": -0.5,
          "cubic_exclude": 0, "extrapolation_value": 0.0, "out_dtype": None, "scale": None}, 1)


def _resize_schedule(attrs, outs, target):
    from ...topi.image import schedule_resize2d
    return schedule_resize2d(outs, target)


register_schedule("image.resize2d", _resize_schedule)


def resize2d(data, size, roi=None, layout="NCHW", method="linear", coordinate_transformation_mode="half_pixel",
             rounding_method="", cubic_alpha=-0.5, cubic_exclude=0, extrapolation_value=0.0, out_dtype=None,
             scale=None):
    """``relay.image.resize2d(data, size=(h, w), method="nearest_neighbor" | "linear" | "cubic", ...)`` (TVM's
    arguments; ``scale`` (h, w), tvmlab's addition, sets the coordinate scale when it is not out/in)."""
    from ...topi.image.resize import METHODS, MODES, ROUNDING
    if method not in METHODS:
        raise RelayError(f"resize2d: method must be one of {METHODS}, got {method!r}")
    if coordinate_transformation_mode not in MODES:
        raise RelayError(f"resize2d: coordinate_transformation_mode must be one of {MODES}, "
                         f"got {coordinate_transformation_mode!r}")
    if rounding_method and rounding_method not in ROUNDING:
        raise RelayError(f"resize2d: rounding_method must be one of {ROUNDING}, got {rounding_method!r}")
    if layout not in ("NCHW", "NHWC"):
        raise RelayError(f"resize2d: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    try:
        size = tuple(int(s) for s in size)
    except (TypeError, ValueError):
        raise RelayError(f"resize2d: size must be two ints, got {size!r}") from None
    if len(size) != 2 or min(size) < 1:
        raise RelayError(f"resize2d: size must be two positive ints, got {size!r}")
    return make_call("image.resize2d", [data], size=size, layout=layout, method=method,
                     coordinate_transformation_mode=coordinate_transformation_mode,
                     rounding_method=rounding_method, out_dtype=out_dtype, cubic_alpha=float(cubic_alpha),
                     cubic_exclude=int(cubic_exclude),
                     scale=None if scale is None else tuple(float(s) for s in scale))


__all__ = ["resize2d"]
