"""Resizing over 1, 2 or 3 spatial axes (``resize1d`` / ``resize2d`` / ``resize3d``): nearest neighbour,
(bi/tri)linear and cubic, with ONNX's coordinate modes.

Each output pixel maps back to a fractional input coordinate by the
``coordinate_transformation_mode``; nearest rounds it by ``rounding_method``,
linear blends the two neighbours on each axis (clamped at the border), cubic
the four taps of Keys' kernel (``cubic_alpha``; ``cubic_exclude`` drops taps
outside the image), the way onnxruntime and PyTorch resize. The coordinates are small per-row and
per-column tables (tag ``resize_table``): ``schedule_resize2d`` computes them
once and runs the pixel loop over rows in parallel.
"""
from __future__ import annotations

import itertools
import math
import re

from ... import te
from ...codegen.llvm_vector import vector_registers
from ...ir import op as _op
from ...ir.structural import same_value
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
    lo = te.compute((out_size,), lambda o: _op.cast("int32", _op.floor(coord(o))), name=f"T_resize_{what}0",
                    tag=TABLE)
    hi = te.compute((out_size,), lambda o: _clamp(lo(o) + 1, in_size), name=f"T_resize_{what}1", tag=TABLE)
    w = te.compute((out_size,), lambda o: coord(o) - _op.cast("float32", lo(o)), name=f"T_resize_{what}w",
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


_LAYOUT = re.compile(r"([A-Z]+)((?:\d+[a-z])*)")


def spatial_of(op, data, layout, ndim):
    """The ``ndim`` spatial axes (D, H, W) of ``data`` in ``layout`` (NCW, NHWC, NCDHW, a packed NCHW4n16c...)."""
    m = _LAYOUT.fullmatch(layout) if isinstance(layout, str) else None
    axes = [k for k, c in enumerate(m.group(1)) if c in "DHW"] if m else []
    if not m or len(axes) != ndim or "N" not in m.group(1) or "C" not in m.group(1):
        raise OperatorError(f"{op}: layout {layout!r} must name N, C and {ndim} spatial axes (D, H, W)")
    rank = len(m.group(1)) + len(re.findall(r"\d+[a-z]", m.group(2)))
    check_tensor(op, data, "data", rank)
    return axes


def _nearest_table(n_in, n_out, scale, mode, rounding, name):
    return te.compute((n_out,), lambda x: _nearest(_source(x, n_in, n_out, scale, mode), n_in, rounding), name=name,
                      tag=TABLE)


def _complement(w, name):
    return te.compute(w.shape, lambda x: _op.const(1.0, "float32") - w(x), name=name, tag=TABLE)


def resize(data, size, layout, method="linear", coordinate_transformation_mode="half_pixel", rounding_method="",
           cubic_alpha=-0.5, cubic_exclude=0, out_dtype=None, scale=None, op="resize", ndim=2):
    """``data`` resized over its ``ndim`` spatial axes to ``size``; see ``resize2d``."""
    axes = spatial_of(op, data, layout, ndim)
    if method == "bilinear" or method == "trilinear":
        method = "linear"
    if method == "bicubic" or method == "tricubic":
        method = "cubic"
    if method not in METHODS:
        raise OperatorError(f"{op}: method must be one of {METHODS}, got {method!r}")
    mode = coordinate_transformation_mode
    if mode not in MODES:
        raise OperatorError(f"{op}: coordinate_transformation_mode must be one of {MODES}, got {mode!r}")
    rounding = rounding_method or ("round" if mode == "align_corners" else "floor")   # TVM's default
    if rounding not in ROUNDING:
        raise OperatorError(f"{op}: rounding_method must be one of {ROUNDING}, got {rounding_method!r}")
    ins = [const_or_none(data.shape[a]) for a in axes]
    try:
        outs = [int(s) for s in size]
    except (TypeError, ValueError):
        raise OperatorError(f"{op}: size must be {ndim} ints, got {size!r}") from None
    if len(outs) != ndim or None in ins or min(outs) < 1:
        raise OperatorError(f"{op}: needs a static input size and {ndim} positive output sizes, got "
                            f"{tuple(data.shape)} -> {size!r}")
    scales = list(scale) if scale is not None else [o / i for o, i in zip(outs, ins)]
    shape = list(data.shape)
    for a, o in zip(axes, outs):
        shape[a] = o
    dtype = out_dtype or data.dtype
    names = ["depth", "row", "col"][3 - ndim:]
    # per axis, (index table, weight table or None) for each tap: the main loop reads them instead of
    # recomputing coordinates per pixel
    taps = []
    for k, (i, o, sc, nm) in enumerate(zip(ins, outs, scales, names)):
        if method == "nearest_neighbor":
            taps.append([(_nearest_table(i, o, sc, mode, rounding, f"T_{op}_{nm}"), None)])
        elif method == "cubic":
            idx, wts = _cubic_tables(i, o, sc, mode, nm, cubic_alpha, cubic_exclude)
            taps.append(list(zip(idx, wts)))
        else:
            lo, hi, w = _linear_tables(i, o, sc, mode, nm)
            taps.append([(lo, _complement(w, f"T_{op}_{nm}w0")), (hi, w)])

    rows_last = ndim == 2 and axes == [len(shape) - 2, len(shape) - 1]
    if rows_last and 1 < ins[0] and (ins[0] < outs[0] or ins[0] == outs[0] and method != "nearest_neighbor"):
        return _separable(data, shape, taps, dtype, op)

    def f(*i):
        total = None
        for combo in itertools.product(*taps):
            idx, weight = list(i), None
            for a, (table, wt) in zip(axes, combo):
                idx[a] = table(i[a])
                if wt is not None:
                    weight = wt(i[a]) if weight is None else weight * wt(i[a])
            v = data(*idx)
            term = v if weight is None else _op.cast("float32", v) * weight
            total = term if total is None else total + term
        return _op.cast(dtype, total)
    return te.compute(tuple(shape), f, name=f"T_{op}", tag=tag.INJECTIVE)


PASS = "injective,resize_pass"   # injective: GPU and fused-group schedules inline it


def _separable(data, shape, taps, dtype, op):
    """Rows (H, W last) enlarged in H: each input row resized along W first (tag ``resize_pass``), then each
    output row blended from (nearest: copied from) those rows.  Per output pixel that is a contiguous pass
    over one, two or four rows plus a fraction of a pixel's gathers, against one, four or sixteen gathers by
    computed index in the one-stage form."""
    rows, cols = taps
    h, w = len(shape) - 2, len(shape) - 1
    wide = list(data.shape)
    wide[w] = shape[w]

    def along_w(*i):
        total = None
        for table, wt in cols:
            idx = list(i)
            idx[w] = table(i[w])
            term = data(*idx) if wt is None else _op.cast("float32", data(*idx)) * wt(i[w])
            total = term if total is None else total + term
        return total
    t = te.compute(tuple(wide), along_w, name=f"T_{op}_cols", tag=PASS)

    def along_h(*i):
        total = None
        for table, wt in rows:
            idx = list(i)
            idx[h] = table(i[h])
            term = t(*idx) if wt is None else t(*idx) * wt(i[h])
            total = term if total is None else total + term
        return _op.cast(dtype, total)
    return te.compute(tuple(shape), along_h, name=f"T_{op}", tag=tag.INJECTIVE)


def resize1d(data, roi=None, size=None, layout="NCW", method="linear", coordinate_transformation_mode="half_pixel",
             rounding_method="", bicubic_alpha=-0.5, bicubic_exclude=0, extrapolation_value=0.0, out_dtype=None,
             output_shape=None):
    """``data`` (NCW / NWC) resized to ``size`` (out_w,); arguments as ``resize2d``."""
    return resize(data, size, layout, method, coordinate_transformation_mode, rounding_method, bicubic_alpha,
                  bicubic_exclude, out_dtype, op="resize1d", ndim=1)


def resize2d(data, roi=None, size=None, layout="NCHW", method="linear",
             coordinate_transformation_mode="half_pixel", rounding_method="", cubic_alpha=-0.5,
             cubic_exclude=0, extrapolation_value=0.0, out_dtype=None, scale=None, bicubic_alpha=None,
             bicubic_exclude=None, output_shape=None):
    """``data`` resized to ``size`` (out_h, out_w): nearest neighbour, (bi)linear or cubic; layout NCHW,
    NHWC or a packed NCHW[x]n[y]c.  ``scale`` (h, w) overrides out/in in the coordinate mapping (ONNX
    Resize given scales whose product is not a whole size).  Nearest rounds by ``rounding_method``, by
    default "round" with "align_corners" and "floor" otherwise (TVM's rule).  TVM's ``bicubic_alpha`` /
    ``bicubic_exclude`` are ``cubic_alpha`` / ``cubic_exclude``."""
    return resize(data, size, layout, method, coordinate_transformation_mode, rounding_method,
                  cubic_alpha if bicubic_alpha is None else bicubic_alpha,
                  cubic_exclude if bicubic_exclude is None else bicubic_exclude, out_dtype, scale, "resize2d", 2)


def resize3d(data, roi=None, size=None, layout="NCDHW", method="linear",
             coordinate_transformation_mode="half_pixel", rounding_method="", bicubic_alpha=-0.5, bicubic_exclude=0,
             extrapolation_value=0.0, out_dtype=None, output_shape=None):
    """``data`` (NCDHW / NDHWC) resized to ``size`` (out_d, out_h, out_w); arguments as ``resize2d``."""
    return resize(data, size, layout, method, coordinate_transformation_mode, rounding_method, bicubic_alpha,
                  bicubic_exclude, out_dtype, op="resize3d", ndim=3)


MIN_TASKS = 16      # channels (N x C) worth a parallel loop of their own


def schedule_resize2d(outs, target=None):
    """Tables at the root, everything else inlined into the outputs; output rows in parallel, the row's
    pixels in the inner loop.  The separable form's rows resized along W are made per channel, beside the
    output rows that read them, and those rows are blended in vectors.  The rows stay at the root (made over
    parallel rows) when there are fewer than ``MIN_TASKS`` channels or more than one output reads them."""
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    s = te.create_schedule([o.op for o in outs])
    passes = []
    for stage in list(s.stages):
        op = stage.op
        if op in s.outputs or getattr(op, "tag", "") == TABLE or getattr(op, "reduce_axis", None) is None:
            continue
        if op.tag == PASS:
            passes.append(op)
        elif not op.reduce_axis:
            stage.compute_inline()
    lanes = vector_registers(target or "llvm").lanes("float32")
    readers = {p: [o for o in outs if _reads(o.op, p, s.outputs)] for p in passes}
    only = {p: r[0] if len(r) == 1 else None for p, r in readers.items()}      # the one output reading each
    for o in outs:
        axes = list(s[o].op.axis)
        mine = [p for p in passes if only[p] is o and _channels_lead(o, p)]
        dims = [const_or_none(d) for d in o.shape]
        channels = None if None in dims[:-2] else math.prod(dims[:-2])
        if mine and (channels is None or channels >= MIN_TASKS):
            outer = s[o].fuse(*axes[:-2]) if len(axes) > 3 else axes[0]
            s[o].parallel(outer)
            for p in mine:
                s[p].compute_at(s[o], outer)
                passes.remove(p)
        elif len(axes) > 1:
            outer = s[o].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
            s[o].parallel(outer)
        if any(r is o for r in only.values()) and (dims[-1] or 0) >= lanes:
            _, inner = s[o].split(axes[-1], factor=lanes)
            s[o].vectorize(inner)
    for p in passes:            # at the root: its rows in parallel
        axes = list(s[p].op.axis)
        s[p].parallel(s[p].fuse(*axes[:-1]))
    return s


def _channels_lead(out, op):
    """Whether ``out`` leads with the channel axes of pass ``op``, so that the pass can be made per channel
    inside ``out``'s loop over them."""
    shape = op.output(0).shape
    return len(out.shape) == len(shape) >= 3 and all(same_value(_op.convert(a), _op.convert(b))
                                                   for a, b in zip(out.shape[:-2], shape[:-2]))


def _reads(op, target, outputs):
    """Whether ``op`` reads ``target``, directly or through stages inlined into it (not through other outputs,
    which are computed at the root)."""
    seen, stack = set(), [t.op for t in op.input_tensors]
    while stack:
        o = stack.pop()
        if o is target:
            return True
        if o in seen or o in outputs or not hasattr(o, "input_tensors"):
            continue
        seen.add(o)
        stack.extend(t.op for t in o.input_tensors)
    return False

