"""ONNX shape manipulation, constants and indexing as Relay calls, with their numpy folds.

Each op's parameters (target shape, axes, slice bounds, pads) are resolved
once by a helper from the input's static shape and the constant inputs or
attributes of the node's opset; the converter and the numpy fold (used when
the data itself is a static value, as in Shape -> Gather -> Concat -> Reshape
chains) share that helper.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError, normalize_axis, prod, upsample_nearest
from .onnx_ops import const_input, converter, expr_input, folder


def _getter(ctx, node):
    return lambda i, what: const_input(ctx, node, i, what)


def _folded(values):
    return lambda i, what: values[i] if i < len(values) else None


# ---------------------------------------------------------------- constants
@converter("Constant")
def _constant(ctx, node):
    a = node.attrs
    if "value" in a:
        return np.asarray(a["value"])
    for key, dtype in (("value_float", np.float32), ("value_int", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype=dtype)
    for key, dtype in (("value_floats", np.float32), ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype=dtype).reshape(-1)
    raise FrontendError(f"a Constant needs a tensor, float(s) or int(s) value; got attributes {sorted(a)}")


@converter("ConstantOfShape")
def _constant_of_shape(ctx, node):
    return _fold_constant_of_shape(node, [const_input(ctx, node, 0, "shape")], ctx.opset)


@folder("ConstantOfShape")
def _fold_constant_of_shape(node, values, opset):
    shape = [int(v) for v in np.asarray(values[0]).reshape(-1)]
    value = node.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return np.full(shape, value[0], dtype=value.dtype)


@converter("Range")
def _range(ctx, node):
    return _fold_range(node, [const_input(ctx, node, i, n) for i, n in
                              enumerate(("start", "limit", "delta"))], ctx.opset)


@folder("Range")
def _fold_range(node, values, opset):
    start, limit, delta = (np.asarray(v).reshape(()) for v in values)
    return np.arange(start, limit, delta, dtype=start.dtype)


@converter("Shape")
def _shape(ctx, node):
    shape = np.asarray(ctx.shape_of(expr_input(ctx, node, 0)), dtype=np.int64)
    if ctx.opset >= 15:
        rank = len(shape)
        start = node.attr("start", 0)
        end = node.attr("end", rank)
        shape = shape[slice(max(-rank, min(start, rank)), max(-rank, min(end, rank)))]
    return shape


@converter("Size")
def _size(ctx, node):
    return np.asarray(prod(ctx.shape_of(expr_input(ctx, node, 0))), dtype=np.int64)


# ---------------------------------------------------------------- reshaping
def _reshape_target(node, in_shape, get, opset):
    target = get(1, "shape") if opset >= 5 else node.attr("shape")
    if target is None:
        raise FrontendError("the target shape is required")
    target = [int(v) for v in np.asarray(target).reshape(-1)]
    allow_zero = opset >= 14 and node.attr("allowzero", 0)
    out = []
    for k, v in enumerate(target):
        if v == 0 and not allow_zero:
            if k >= len(in_shape):
                raise FrontendError(f"target {target} copies dimension {k}, which input {tuple(in_shape)} lacks")
            v = in_shape[k]
        out.append(v)
    if out.count(-1) > 1:
        raise FrontendError(f"target shape {target} has more than one -1")
    if -1 in out:
        known = prod(v for v in out if v != -1)
        if known == 0 or prod(in_shape) % known:
            raise FrontendError(f"cannot reshape {tuple(in_shape)} to {target}")
        out[out.index(-1)] = prod(in_shape) // known
    if prod(out) != prod(in_shape) or any(v < 0 for v in out):
        raise FrontendError(f"cannot reshape {tuple(in_shape)} ({prod(in_shape)} elements) to {target}")
    return tuple(out)


@converter("Reshape")
def _reshape(ctx, node):
    x = expr_input(ctx, node, 0)
    return ctx.relay.reshape(x, newshape=_reshape_target(node, ctx.shape_of(x), _getter(ctx, node), ctx.opset))


@folder("Reshape")
def _fold_reshape(node, values, opset):
    return values[0].reshape(_reshape_target(node, values[0].shape, _folded(values), opset))


@converter("Flatten")
def _flatten(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    rank = len(shape)
    axis = int(node.attr("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise FrontendError(f"axis {node.attr('axis')} is out of range for rank {rank}")
    if axis == 1 and rank > 2:
        return r.nn.batch_flatten(x)
    return r.reshape(x, newshape=(prod(shape[:axis]), prod(shape[axis:])))


def _unsqueezed(node, in_shape, get, opset):
    axes = get(1, "axes") if opset >= 13 else node.attr("axes")
    if axes is None:
        raise FrontendError("axes are required")
    axes = [int(a) for a in np.asarray(axes).reshape(-1)]
    rank = len(in_shape) + len(axes)
    axes = sorted(normalize_axis(a, rank) for a in axes)
    if len(set(axes)) != len(axes):
        raise FrontendError(f"axes {axes} repeat an axis")
    out, rest = [], iter(in_shape)
    for k in range(rank):
        out.append(1 if k in axes else next(rest))
    return axes, tuple(out)


@converter("Unsqueeze")
def _unsqueeze(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    axes, shape = _unsqueezed(node, ctx.shape_of(x), _getter(ctx, node), ctx.opset)
    if len(axes) == 1:
        return r.expand_dims(x, axis=axes[0])
    return r.reshape(x, newshape=shape)


@folder("Unsqueeze")
def _fold_unsqueeze(node, values, opset):
    return values[0].reshape(_unsqueezed(node, values[0].shape, _folded(values), opset)[1])


def _squeeze_axes(node, in_shape, get, opset):
    axes = get(1, "axes") if opset >= 13 else node.attr("axes")
    rank = len(in_shape)
    if axes is None or np.asarray(axes).size == 0:
        return [k for k, d in enumerate(in_shape) if d == 1]
    axes = sorted({normalize_axis(a, rank) for a in np.asarray(axes).reshape(-1)})
    for a in axes:
        if in_shape[a] != 1:
            raise FrontendError(f"cannot squeeze axis {a} of shape {tuple(in_shape)}: its size is {in_shape[a]}")
    return axes


@converter("Squeeze")
def _squeeze(ctx, node):
    x = expr_input(ctx, node, 0)
    axes = _squeeze_axes(node, ctx.shape_of(x), _getter(ctx, node), ctx.opset)
    return ctx.relay.squeeze(x, axis=axes) if axes else x


@folder("Squeeze")
def _fold_squeeze(node, values, opset):
    axes = _squeeze_axes(node, values[0].shape, _folded(values), opset)
    return np.squeeze(values[0], axis=tuple(axes))


def _perm(node, rank):
    perm = node.attr("perm")
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    if sorted(perm) != list(range(rank)):
        raise FrontendError(f"perm {perm} is not a permutation of the {rank} axes")
    return perm


@converter("Transpose")
def _transpose(ctx, node):
    x = expr_input(ctx, node, 0)
    return ctx.relay.transpose(x, axes=_perm(node, len(ctx.shape_of(x))))


@folder("Transpose")
def _fold_transpose(node, values, opset):
    return np.transpose(values[0], _perm(node, values[0].ndim))


# ---------------------------------------------------------------- joining and splitting
@converter("Concat")
def _concat(ctx, node):
    xs = [ctx.expr_of(i) for i in node.inputs if i]
    rank = len(ctx.shape_of(xs[0]))
    if node.attr("axis") is None:
        raise FrontendError("axis is required")
    return ctx.relay.concatenate(xs, axis=normalize_axis(node.attr("axis"), rank))


@folder("Concat")
def _fold_concat(node, values, opset):
    values = [np.asarray(v) for v in values if v is not None]
    return np.concatenate(values, axis=normalize_axis(node.attr("axis", 0), values[0].ndim))


def _split_points(ctx, node, dim):
    if ctx.opset >= 13:
        sizes = const_input(ctx, node, 1, "split")
    else:
        sizes = node.attr("split")
    n_out = len(node.outputs)
    if sizes is not None and np.asarray(sizes).size:
        sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
        if sum(sizes) != dim or len(sizes) != n_out:
            raise FrontendError(f"split sizes {sizes} must sum to the axis length {dim} "
                                f"and number the outputs ({n_out})")
    else:
        n = int(node.attr("num_outputs", n_out))
        chunk = -(-dim // n)
        sizes = [min(chunk, dim - chunk * k) for k in range(n)]
        if ctx.opset < 18 and dim % n:
            raise FrontendError(f"axis length {dim} does not split into {n} equal parts")
        if any(s <= 0 for s in sizes):
            raise FrontendError(f"axis length {dim} cannot split into {n} non-empty parts")
    return list(np.cumsum(sizes)[:-1].astype(int)), len(sizes)


@converter("Split")
def _split(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    axis = normalize_axis(node.attr("axis", 0), len(shape))
    points, n = _split_points(ctx, node, shape[axis])
    if n == 1:
        return [x]
    out = r.split(x, indices_or_sections=[int(p) for p in points], axis=axis)
    return [out[k] for k in range(n)]


def _slice_bounds(node, shape, get, opset):
    """Full-rank (begin, end, strides) of an ONNX Slice over ``shape``."""
    if opset >= 10:
        starts, ends = get(1, "starts"), get(2, "ends")
        axes, steps = get(3, "axes"), get(4, "steps")
    else:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    if starts is None or ends is None:
        raise FrontendError("starts and ends are required")
    starts = [int(v) for v in np.asarray(starts).reshape(-1)]
    ends = [int(v) for v in np.asarray(ends).reshape(-1)]
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [normalize_axis(a, rank) for a in
                                                           np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(v) for v in np.asarray(steps).reshape(-1)]
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise FrontendError(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    begin, end, strides = [0] * rank, list(shape), [1] * rank
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st <= 0:
            raise FrontendError(f"Slice step {st} on axis {a}: only positive steps are supported")
        b, e, _ = slice(s, e, st).indices(shape[a])
        if e <= b:
            raise FrontendError(f"Slice of axis {a} (size {shape[a]}) from {s} to {e} is empty")
        begin[a], end[a], strides[a] = b, e, st
    return begin, end, strides


@converter("Slice")
def _slice(ctx, node):
    x = expr_input(ctx, node, 0)
    begin, end, strides = _slice_bounds(node, ctx.shape_of(x), _getter(ctx, node), ctx.opset)
    return ctx.relay.strided_slice(x, begin=begin, end=end, strides=strides)


@folder("Slice")
def _fold_slice(node, values, opset):
    x = values[0]
    if x.ndim == 0:
        raise FrontendError("cannot slice a scalar")
    begin, end, strides = _slice_bounds(node, x.shape, _folded(values), opset)
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]


# ---------------------------------------------------------------- indexing and repetition
def _indexed(ctx, node):
    """(data, axis, indices) of Gather/GatherElements; known indices are checked and made non-negative."""
    x = expr_input(ctx, node, 0)
    size = ctx.shape_of(x)
    axis = normalize_axis(node.attr("axis", 0), len(size))
    if node.inputs[1] not in ctx.known:
        return x, axis, expr_input(ctx, node, 1)
    idx = np.asarray(ctx.known[node.inputs[1]]).astype(np.int64)
    n = size[axis]
    if ((idx < -n) | (idx >= n)).any():
        raise FrontendError(f"indices {idx.reshape(-1).tolist()[:16]} out of range for axis {axis} of size {n}")
    return x, axis, ctx.relay.const(np.where(idx < 0, idx + n, idx).astype(np.int32))


@converter("Gather")
def _gather(ctx, node):
    x, axis, indices = _indexed(ctx, node)
    return ctx.relay.take(x, indices, axis=axis)


@folder("Gather")
def _fold_gather(node, values, opset):
    x, idx = values
    return np.take(x, np.asarray(idx).astype(np.int64), axis=normalize_axis(node.attr("axis", 0), x.ndim))


@converter("Tile")
def _tile(ctx, node):
    reps = const_input(ctx, node, 1, "repeats")
    return ctx.relay.tile(expr_input(ctx, node, 0), reps=tuple(int(v) for v in np.asarray(reps).reshape(-1)))


@folder("Tile")
def _fold_tile(node, values, opset):
    return np.tile(values[0], [int(v) for v in np.asarray(values[1]).reshape(-1)])


def _expanded(in_shape, target):
    target = [int(v) for v in np.asarray(target).reshape(-1)]
    try:
        return tuple(np.broadcast_shapes(tuple(in_shape), tuple(target)))
    except ValueError:
        raise FrontendError(f"shape {tuple(in_shape)} does not broadcast to {target}") from None


@converter("Expand")
def _expand(ctx, node):
    x = expr_input(ctx, node, 0)
    shape = _expanded(ctx.shape_of(x), const_input(ctx, node, 1, "shape"))
    return ctx.relay.broadcast_to(x, shape=shape)


@folder("Expand")
def _fold_expand(node, values, opset):
    return np.broadcast_to(values[0], _expanded(values[0].shape, values[1])).copy()


_PAD_MODES = ("constant", "reflect", "edge")


@converter("Pad")
def _pad(ctx, node):
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    rank = len(ctx.shape_of(x))
    mode = node.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise FrontendError(f"pad mode {mode!r} is not supported (expected one of {_PAD_MODES})")
    if ctx.opset >= 11:
        pads = const_input(ctx, node, 1, "pads")
        value = const_input(ctx, node, 2, "constant_value")
        value = 0.0 if value is None else np.asarray(value).reshape(-1)[0].item()
        axes = const_input(ctx, node, 3, "axes") if ctx.opset >= 18 else None
    else:
        pads, value, axes = node.attr("pads"), float(node.attr("value", 0.0)), None
    pads = [int(p) for p in np.asarray(pads).reshape(-1)]
    axes = list(range(rank)) if axes is None else [normalize_axis(a, rank) for a in np.asarray(axes).reshape(-1)]
    if len(pads) != 2 * len(axes):
        raise FrontendError(f"expected {2 * len(axes)} pads for {len(axes)} axes, got {pads}")
    if any(p < 0 for p in pads):
        raise FrontendError(f"negative pads {pads} are not supported")
    width = [[0, 0] for _ in range(rank)]
    for k, a in enumerate(axes):
        width[a] = [pads[k], pads[k + len(axes)]]
    return r.nn.pad(x, pad_width=tuple(tuple(w) for w in width), pad_value=value, pad_mode=mode)


_RESIZE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                 "half_pixel_symmetric")


def _resize_params(ctx, node, in_shape):
    """(mode, coordinate mode, nearest rounding, output sizes, scales or None) of a Resize/Upsample node."""
    rank = len(in_shape)
    mode = node.attr("mode", "nearest")
    mode = "linear" if mode == "bilinear" else mode          # an older exporters' spelling
    if mode not in ("nearest", "linear", "cubic"):
        raise FrontendError(f"mode {mode!r} is not supported (expected 'nearest', 'linear' or 'cubic')")
    if node.op_type == "Upsample" or ctx.opset < 11:
        scales = const_input(ctx, node, 1, "scales")           # an input from opset 9 (the oldest read)
        sizes, transform, rounding = None, "asymmetric", "floor"
    else:
        scales = const_input(ctx, node, 2, "scales")
        sizes = const_input(ctx, node, 3, "sizes")
        transform = node.attr("coordinate_transformation_mode", "half_pixel")
        rounding = node.attr("nearest_mode", "round_prefer_floor")
        if transform not in _RESIZE_MODES:
            raise FrontendError(f"coordinate_transformation_mode {transform!r} is not supported "
                                f"(expected one of {_RESIZE_MODES})")
        if node.attr("antialias", 0):
            raise FrontendError("antialias=1 is not supported")
        if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch" and sizes is not None:
            raise FrontendError(f"keep_aspect_ratio_policy {node.attr('keep_aspect_ratio_policy')!r} is "
                                f"not supported (only 'stretch')")
    axes = node.attr("axes") if ctx.opset >= 18 else None
    axes = list(range(rank)) if axes is None else [normalize_axis(a, rank) for a in axes]
    full_scales = [1.0] * rank
    out = list(in_shape)
    if scales is not None and np.asarray(scales).size:
        scales = [float(f) for f in np.asarray(scales).reshape(-1)]
        if len(scales) != len(axes):
            raise FrontendError(f"expected {len(axes)} scales, got {scales}")
        for a, f in zip(axes, scales):
            if f <= 0:
                raise FrontendError(f"scales must be positive, got {scales}")
            full_scales[a] = f
            out[a] = int(np.floor(in_shape[a] * f))
    elif sizes is not None and np.asarray(sizes).size:
        sizes = [int(v) for v in np.asarray(sizes).reshape(-1)]
        if len(sizes) != len(axes):
            raise FrontendError(f"expected {len(axes)} sizes, got {sizes}")
        for a, v in zip(axes, sizes):
            out[a] = v
        full_scales = None
    else:
        raise FrontendError("needs scales or sizes")
    if any(o != i for o, i in list(zip(out, in_shape))[:rank - 2]) or rank not in (3, 4) or min(out) < 1:
        raise FrontendError(f"only resizing the last two axes of a 4-D (NCHW) tensor is supported, "
                            f"got {tuple(in_shape)} -> {tuple(out)}")
    return mode, transform, rounding, out, full_scales


@converter("Resize", "Upsample")
def _resize(ctx, node):
    """relay.image.resize2d over H and W; whole nearest factors with matching coordinates are a broadcast."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    mode, transform, rounding, out, scales = _resize_params(ctx, node, shape)
    if len(shape) == 3:      # (N, C, W): one spatial axis, resized as a 1-high image
        x4 = r.expand_dims(x, axis=2)
        y = _resize2d(ctx, node, x4, shape[:2] + (1,) + shape[2:], mode, transform, rounding,
                      out[:2] + [1] + out[2:], None if scales is None else scales[:2] + [1.0] + scales[2:])
        return r.squeeze(y, axis=[2])
    return _resize2d(ctx, node, x, shape, mode, transform, rounding, out, scales)


def _resize2d(ctx, node, x, shape, mode, transform, rounding, out, scales):
    factors = [o / i for o, i in zip(out, shape)]
    whole = all(f >= 1 and f == int(f) for f in factors) and \
        (scales is None or all(abs(s - f) < 1e-9 for s, f in zip(scales, factors)))
    same = (transform in ("half_pixel", "pytorch_half_pixel", "half_pixel_symmetric") and
            rounding.startswith("round")) or (transform == "asymmetric" and rounding == "floor")
    if mode == "nearest" and whole and (same or all(f == 1 for f in factors)):
        return upsample_nearest(ctx.relay, x, shape, [int(f) for f in factors])
    if mode == "cubic" and node.op_type == "Upsample":
        raise FrontendError("Upsample has no cubic mode")
    scale = None if scales is None else (scales[2], scales[3])
    if transform == "half_pixel_symmetric":
        transform, scale = _symmetric(shape, out, scale)
    return ctx.relay.image.resize2d(x, size=(out[2], out[3]), layout="NCHW",
                                    method="nearest_neighbor" if mode == "nearest" else mode,
                                    coordinate_transformation_mode=transform, rounding_method=rounding,
                                    scale=scale, cubic_alpha=float(node.attr("cubic_coeff_a", -0.75)),
                                    cubic_exclude=int(node.attr("exclude_outside", 0)))


def _symmetric(shape, out, scale):
    """half_pixel_symmetric (opset 19) equals half_pixel exactly when each output size is in*scale."""
    sh, sw = scale if scale is not None else (out[2] / shape[2], out[3] / shape[3])
    if abs(out[2] - shape[2] * sh) > 1e-6 or abs(out[3] - shape[3] * sw) > 1e-6:
        raise FrontendError("half_pixel_symmetric with scales that do not give whole sizes is not supported")
    return "half_pixel", scale


@converter("GatherElements")
def _gather_elements(ctx, node):
    """relay.gather (TVM's name for it): out[i][j] = data[index[i][j]][j] on ``axis``."""
    x, axis, indices = _indexed(ctx, node)
    return ctx.relay.gather(x, axis, indices)


@converter("DepthToSpace", "SpaceToDepth")
def _depth_space(ctx, node):
    """Channel blocks to spatial blocks (or back) as reshape, transpose, reshape; DCR and CRD orders."""
    r = ctx.relay
    x = expr_input(ctx, node, 0)
    shape = ctx.shape_of(x)
    if len(shape) != 4:
        raise FrontendError(f"expected an NCHW input, got shape {shape}")
    n, c, h, w = shape
    b = int(node.attr("blocksize", 0))
    if b < 1:
        raise FrontendError(f"blocksize must be >= 1, got {b}")
    if node.op_type == "SpaceToDepth":
        if h % b or w % b:
            raise FrontendError(f"spatial size {h}x{w} is not a multiple of blocksize {b}")
        y = r.reshape(x, newshape=(n, c, h // b, b, w // b, b))
        y = r.transpose(y, axes=[0, 3, 5, 1, 2, 4])
        return r.reshape(y, newshape=(n, c * b * b, h // b, w // b))
    if c % (b * b):
        raise FrontendError(f"{c} channels are not a multiple of blocksize {b} squared")
    if node.attr("mode", "DCR") == "DCR":
        y = r.transpose(r.reshape(x, newshape=(n, b, b, c // (b * b), h, w)), axes=[0, 3, 4, 1, 5, 2])
    else:
        y = r.transpose(r.reshape(x, newshape=(n, c // (b * b), b, b, h, w)), axes=[0, 1, 4, 2, 5, 3])
    return r.reshape(y, newshape=(n, c // (b * b), h * b, w * b))
