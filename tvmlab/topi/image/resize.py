"""2-D resizing of NCHW (or NHWC) images: nearest neighbour and (bi)linear, with ONNX's coordinate modes.

Each output pixel maps back to a fractional input coordinate by the
``coordinate_transformation_mode``; nearest rounds it by ``rounding_method``,
linear blends the two neighbours on each axis (clamped at the border), cubic
the four taps of Keys' kernel (``cubic_alpha``; ``cubic_exclude`` drops taps
outside the image), the way onnxruntime and PyTorch resize. The coordinates are small per-row and
per-column tables (tag ``resize_table``): ``schedule_resize2d`` computes them
once and runs the pixel loop over rows in parallel.
"""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none

MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn")
METHODS = ("nearest_neighbor", "linear", "cubic")
ROUNDING = ("round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source(x, in_size, out_size, scale, mode):
    """The input coordinate (float32) that output index ``x`` reads."""
    xf = _op.cast("float32", x)
    if mode == "align_corners":
        return xf * _op.const((in_size - 1) / (out_size - 1) if out_size > 1 else 0.0, "float32")
    inv = _op.const(1.0 / scale, "float32")
    if mode == "asymmetric":
        return xf * inv
    if mode == "tf_half_pixel_for_nn":
        return (xf + _op.const(0.5, "float32")) * inv
    if mode == "pytorch_half_pixel" and out_size == 1:
        return _op.const(0.0, "float32")
    return (xf + _op.const(0.5, "float32")) * inv - _op.const(0.5, "float32")


def _clamp(i, n):
    return _op.max(_op.min(i, _op.const(n - 1, "int32")), _op.const(0, "int32"))


def _nearest(c, n, rounding):
    half = _op.const(0.5, "float32")
    if rounding == "floor":
        r = _op.floor(c)
    elif rounding == "ceil":
        r = _op.ceil(c)
    elif rounding == "round_prefer_ceil":
        r = _op.floor(c + half)
    elif rounding == "round_prefer_floor":
        r = _op.ceil(c - half)
    else:                      # "round": halves away from zero
        r = _op.round(c)
    return _clamp(_op.cast("int32", r), n)


TABLE = "resize_table"


def _linear_tables(in_size, out_size, scale, mode, what):
    """(first index, second index, weight of the second) per output index, the coordinate clamped inside."""
    def coord(o):
        c = _source(o, in_size, out_size, scale, mode)
        return _op.min(_op.max(c, _op.const(0.0, "float32")), _op.const(in_size - 1, "float32"))
    lo = te.compute((out_size,), lambda o: _op.cast("int32", _op.floor(coord(o))), name=f"T_resize2d_{what}0",
                    tag=TABLE)
    hi = te.compute((out_size,), lambda o: _clamp(lo(o) + 1, in_size), name=f"T_resize2d_{what}1", tag=TABLE)
    w = te.compute((out_size,), lambda o: coord(o) - _op.cast("float32", lo(o)), name=f"T_resize2d_{what}w",
                   tag=TABLE)
    return lo, hi, w


def _cubic_weight(t, a):
    """Keys' cubic convolution kernel at distance ``t`` (>= 0) with coefficient ``a``."""
    a = _op.const(float(a), "float32")
    one, two = _op.const(1.0, "float32"), _op.const(2.0, "float32")
    near = ((a + two) * t - (a + _op.const(3.0, "float32"))) * t * t + one
    far = ((a * t - _op.const(5.0, "float32") * a) * t + _op.const(8.0, "float32") * a) * t - \
        _op.const(4.0, "float32") * a
    return _op.select(t <= one, near, _op.select(t < two, far, _op.const(0.0, "float32")))


def _cubic_tables(in_size, out_size, scale, mode, what, a, exclude):
    """Four (index, weight) tables: the taps at floor(c) - 1 .. floor(c) + 2, indices clamped at the border
    (or, with ``exclude``, taps outside get no weight and the others are renormalised)."""
    def coord(o):
        return _source(o, in_size, out_size, scale, mode)
    base = te.compute((out_size,), lambda o: _op.cast("int32", _op.floor(coord(o))), name=f"T_resize2d_{what}b",
                      tag=TABLE)

    def raw(o, k):
        w = _cubic_weight(_op.abs(coord(o) - _op.cast("float32", base(o) + (k - 1))), a)
        if exclude:
            j = base(o) + (k - 1)
            inside = _op.logical_and(j >= 0, j < _op.const(in_size, "int32"))
            w = _op.select(inside, w, _op.const(0.0, "float32"))
        return w
    def table(name, fn, k):
        return te.compute((out_size,), lambda o: fn(o, k), name=f"T_resize2d_{what}{name}{k}", tag=TABLE)

    idx = [table("i", lambda o, k: _clamp(base(o) + (k - 1), in_size), k) for k in range(4)]
    wts = [table("w", raw, k) for k in range(4)]
    if exclude:             # renormalised from the raw tables (each weight's expression stays small)
        raws = wts
        wts = [table("n", lambda o, k: raws[k](o) / (raws[0](o) + raws[1](o) + raws[2](o) + raws[3](o)), k)
               for k in range(4)]
    return idx, wts


def resize2d(data, roi=None, size=None, layout="NCHW", method="linear",
             coordinate_transformation_mode="half_pixel", rounding_method="", cubic_alpha=-0.5,
             cubic_exclude=0, extrapolation_value=0.0, out_dtype=None, scale=None):
    """``data`` resized to ``size`` (out_h, out_w); ``scale`` (h, w) overrides out/in in the coordinate
    mapping (ONNX Resize given scales whose product is not a whole size)."""
    check_tensor("resize2d", data, "data", 4)
    if layout not in ("NCHW", "NHWC"):
        raise OperatorError(f"resize2d: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    if method not in METHODS:
        raise OperatorError(f"resize2d: method must be one of {METHODS}, got {method!r}")
    if coordinate_transformation_mode not in MODES:
        raise OperatorError(f"resize2d: coordinate_transformation_mode must be one of {MODES}, "
                            f"got {coordinate_transformation_mode!r}")
    rounding = rounding_method or "round"
    if rounding not in ROUNDING:
        raise OperatorError(f"resize2d: rounding_method must be one of {ROUNDING}, got {rounding_method!r}")
    ha, wa = (2, 3) if layout == "NCHW" else (1, 2)
    in_h, in_w = (const_or_none(data.shape[a]) for a in (ha, wa))
    try:
        out_h, out_w = (int(s) for s in size)
    except (TypeError, ValueError):
        raise OperatorError(f"resize2d: size must be two ints, got {size!r}") from None
    if in_h is None or in_w is None or min(out_h, out_w) < 1:
        raise OperatorError(f"resize2d: needs a static input size and a positive output size, got "
                            f"{tuple(data.shape)} -> {size!r}")
    sh, sw = scale if scale is not None else (out_h / in_h, out_w / in_w)
    mode = coordinate_transformation_mode
    shape = list(data.shape)
    shape[ha], shape[wa] = out_h, out_w
    dtype = out_dtype or data.dtype

    # per-axis tables (source index, and for linear the second index and the weight), one entry per output
    # row or column: the main loop reads them instead of recomputing coordinates per pixel
    if method == "nearest_neighbor":
        ry = te.compute((out_h,), lambda y: _nearest(_source(y, in_h, out_h, sh, mode), in_h, rounding),
                        name="T_resize2d_row", tag=TABLE)
        rx = te.compute((out_w,), lambda x: _nearest(_source(x, in_w, out_w, sw, mode), in_w, rounding),
                        name="T_resize2d_col", tag=TABLE)
    elif method == "cubic":
        iy, wy = _cubic_tables(in_h, out_h, sh, mode, "row", cubic_alpha, cubic_exclude)
        ix, wx = _cubic_tables(in_w, out_w, sw, mode, "col", cubic_alpha, cubic_exclude)
    else:
        y0, y1, wy = _linear_tables(in_h, out_h, sh, mode, "row")
        x0, x1, wx = _linear_tables(in_w, out_w, sw, mode, "col")

    def f(*i):
        y, x = i[ha], i[wa]

        def at(yy, xx):
            idx = list(i)
            idx[ha], idx[wa] = yy, xx
            return data(*idx)
        if method == "nearest_neighbor":
            return _op.cast(dtype, at(ry(y), rx(x)))
        if method == "cubic":
            total = None
            for ky in range(4):
                row = None
                for kx in range(4):
                    term = _op.cast("float32", at(iy[ky](y), ix[kx](x))) * wx[kx](x)
                    row = term if row is None else row + term
                term = row * wy[ky](y)
                total = term if total is None else total + term
            return _op.cast(dtype, total)
        one = _op.const(1.0, "float32")

        def v(yy, xx):
            return _op.cast("float32", at(yy, xx))
        dy, dx = wy(y), wx(x)
        top = v(y0(y), x0(x)) * (one - dx) + v(y0(y), x1(x)) * dx
        bottom = v(y1(y), x0(x)) * (one - dx) + v(y1(y), x1(x)) * dx
        return _op.cast(dtype, top * (one - dy) + bottom * dy)
    return te.compute(tuple(shape), f, name="T_resize2d", tag=tag.INJECTIVE)


def schedule_resize2d(outs, target=None):
    """Tables at the root, everything else inlined into the outputs; output rows in parallel, the row's
    pixels in the inner loop."""
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    for stage in list(s.stages):
        op = stage.op
        if op in s.outputs or getattr(op, "tag", "") == TABLE or getattr(op, "reduce_axis", None) is None:
            continue
        if not op.reduce_axis:
            stage.compute_inline()
    for o in outs:
        axes = list(s[o].op.axis)
        if len(axes) > 1:
            outer = s[o].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
            s[o].parallel(outer)
    return s
