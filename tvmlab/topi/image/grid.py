"""Sampling images at computed positions, as TVM's ``topi.image``: ``affine_grid``, ``grid_sample``
(PyTorch's semantics) and ``crop_and_resize`` (TensorFlow's).

    G = topi.image.affine_grid(theta, (16, 32))                       # theta (N, 2, 3) -> (N, 2, 16, 32)
    Y = topi.image.grid_sample(X, G, "bilinear", "NCHW", "zeros", align_corners=True)
"""
from __future__ import annotations

import itertools

from ... import te
from ...ir import op as _op
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none, shape_str

F32 = "float32"


def _f(v):
    return _op.const(float(v), F32)


def affine_grid(data, target_shape):
    """The sampling grid (N, 2, H, W) of the affine maps ``data`` (N, 2, 3) over [-1, 1] x [-1, 1]:
    ``out[n, :, y, x] = data[n] @ (x', y', 1)`` with x', y' spread evenly from -1 to 1."""
    check_tensor("affine_grid", data, "data", 3)
    h, w = (int(v) for v in target_shape)
    if [const_or_none(d) for d in data.shape[1:]] != [2, 3] or min(h, w) < 2:
        raise OperatorError(f"affine_grid: needs data (N, 2, 3) and a target of at least 2 x 2, got "
                            f"{shape_str(data)} and {tuple(target_shape)}")

    def f(n, i, y, x):
        xn = _op.cast(data.dtype, x) * _op.const(2.0 / (w - 1), data.dtype) - _op.const(1.0, data.dtype)
        yn = _op.cast(data.dtype, y) * _op.const(2.0 / (h - 1), data.dtype) - _op.const(1.0, data.dtype)
        return data[n, i, 0] * xn + data[n, i, 1] * yn + data[n, i, 2]
    return te.compute((data.shape[0], 2, h, w), f, name="T_affine_grid", tag=tag.INJECTIVE)


def _reflect(c, size, align_corners):
    """``c`` reflected into [0, size - 1] (align_corners) or [-0.5, size - 0.5], as PyTorch pads."""
    start, span = (_f(0), _f(size - 1)) if align_corners else (_f(-0.5), _f(size))
    if (size - 1 if align_corners else size) <= 0:
        return _f(0)
    dist = _op.abs(c - start)
    flips = _op.floor(dist / span)
    extra = dist - flips * span
    even = _op.floormod(_op.cast("int32", flips), 2) == 0
    out = _op.select(even, start + extra, start + span - extra)
    return _op.select(_op.logical_and(c >= start, c <= start + span), c, out)


def _clip(c, size):
    return _op.min(_op.max(c, _f(0)), _f(size - 1))


def grid_sample(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros", align_corners=True):
    """``data`` (N, C, H, W) or (N, C, D, H, W) sampled at ``grid`` (N, 2, OH, OW) / (N, 3, OD, OH, OW),
    whose channels are the normalised x, y (, z) in [-1, 1]: method "nearest", "bilinear" or (2-D)
    "bicubic"; ``padding_mode`` "zeros", "border" or "reflection"; as PyTorch's ``grid_sample``."""
    n = len(data.shape) - 2
    if (n, layout) not in ((2, "NCHW"), (3, "NCDHW")):
        raise OperatorError(f"grid_sample: data must be NCHW or NCDHW with that layout, got {shape_str(data)} "
                            f"and {layout!r}")
    check_tensor("grid_sample", grid, "grid", n + 2)
    if method not in ("nearest", "bilinear", "bicubic") or (method == "bicubic" and n == 3):
        raise OperatorError(f"grid_sample: method must be nearest, bilinear or (2-D) bicubic, got {method!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise OperatorError(f"grid_sample: padding_mode must be zeros, border or reflection, got {padding_mode!r}")
    sizes = [const_or_none(d) for d in data.shape[2:]]
    if None in sizes or const_or_none(grid.shape[1]) != n:
        raise OperatorError(f"grid_sample: needs static data sizes and a grid of {n} coordinates, got "
                            f"{shape_str(data)} and {shape_str(grid)}")

    def coords(b, pos):
        """The source coordinate along each spatial axis (D, H, W order), unnormalised and padded."""
        out = []
        for k, size in enumerate(sizes):
            g = _op.cast(F32, grid(b, n - 1 - k, *pos))      # grid channels are x, y(, z): reversed
            c = (g + _f(1)) * _f((size - 1) / 2) if align_corners else (g + _f(1)) * _f(size / 2) - _f(0.5)
            if method == "bicubic":          # its taps are moved by the padding mode one by one
                pass
            elif padding_mode == "border":
                c = _clip(c, size)
            elif padding_mode == "reflection":
                c = _clip(_reflect(c, size, align_corners), size)
            out.append(c)
        return out

    def read(b, ch, idx):
        """data at integer coordinates ``idx``; zero outside (the padding modes already moved them)."""
        inside = _op.all(*[_op.logical_and(i >= 0, i < size) for i, size in zip(idx, sizes)])
        safe = [_op.min(_op.max(i, 0), size - 1) for i, size in zip(idx, sizes)]
        return _op.select(inside, _op.cast(F32, data(b, ch, *safe)), _f(0))

    def pad_index(i, size):
        """A bicubic tap's integer coordinate under the padding mode."""
        if padding_mode == "border":
            return _op.min(_op.max(i, 0), size - 1)
        if padding_mode == "reflection":
            r = _clip(_reflect(_op.cast(F32, i), size, align_corners), size)
            return _op.cast("int32", r)
        return i

    def f(b, ch, *pos):
        cs = coords(b, pos)
        if method == "nearest":
            idx = [_op.cast("int32", _op.select(c > _f(0), _op.floor(c + _f(0.5)), _op.ceil(c - _f(0.5))))
                   for c in cs]
            return _op.cast(data.dtype, read(b, ch, idx))
        base = [_op.cast("int32", _op.floor(c)) for c in cs]
        frac = [c - _op.floor(c) for c in cs]
        if method == "bilinear":
            total = None
            for corner in itertools.product((0, 1), repeat=n):
                wgt = None
                for t, fr in zip(corner, frac):
                    w = fr if t else _f(1) - fr
                    wgt = w if wgt is None else wgt * w
                term = read(b, ch, [bs + t for bs, t in zip(base, corner)]) * wgt
                total = term if total is None else total + term
            return _op.cast(data.dtype, total)
        weights = [_cubic_weights(fr) for fr in frac]
        total = None
        for ty, tx in itertools.product(range(4), range(4)):
            idx = [pad_index(base[0] + ty - 1, sizes[0]), pad_index(base[1] + tx - 1, sizes[1])]
            term = read(b, ch, idx) * weights[0][ty] * weights[1][tx]
            total = term if total is None else total + term
        return _op.cast(data.dtype, total)
    shape = tuple(data.shape[:2]) + tuple(grid.shape[2:])
    return te.compute(shape, f, name="T_grid_sample", tag=tag.INJECTIVE)


def _cubic_weights(t, a=-0.75):
    """The four cubic-convolution weights (PyTorch's A = -0.75) of taps at -1, 0, 1, 2 from fraction ``t``."""
    a = _f(a)

    def near(x):
        return ((a + _f(2)) * x - (a + _f(3))) * x * x + _f(1)

    def far(x):
        return ((a * x - _f(5) * a) * x + _f(8) * a) * x - _f(4) * a
    return [far(t + _f(1)), near(t), near(_f(1) - t), far(_f(2) - t)]


def crop_and_resize(image, boxes, box_indices, crop_size, layout="NCHW", method="bilinear", extrapolation_value=None,
                    out_dtype=None):
    """Crops of ``image`` resized to ``crop_size`` (as TensorFlow's): box k (y1, x1, y2, x2, normalised) of
    image ``box_indices[k]`` sampled at ``crop_size`` evenly spread points, bilinear or nearest; a point
    outside the image gets ``extrapolation_value`` (0)."""
    if layout not in ("NCHW", "NHWC"):
        raise OperatorError(f"crop_and_resize: layout must be NCHW or NHWC, got {layout!r}")
    check_tensor("crop_and_resize", image, "image", 4)
    check_tensor("crop_and_resize", boxes, "boxes", 2)
    check_tensor("crop_and_resize", box_indices, "box_indices", 1)
    method = {"bilinear": "linear", "nearest_neighbor": "nearest"}.get(method, method)
    if method not in ("linear", "nearest"):
        raise OperatorError(f"crop_and_resize: method must be bilinear or nearest_neighbor, got {method!r}")
    ha, wa, ca = (2, 3, 1) if layout == "NCHW" else (1, 2, 3)
    H, W = (const_or_none(image.shape[a]) for a in (ha, wa))
    ch, cw = (int(v) for v in crop_size)
    ext = _f(0.0 if extrapolation_value is None else extrapolation_value)
    dtype = out_dtype or image.dtype

    def source(k, o, size, n, lo, hi):
        y1, y2 = _op.cast(F32, boxes[k, lo]), _op.cast(F32, boxes[k, hi])
        if n > 1:
            return y1 * _f(size - 1) + _op.cast(F32, o) * (y2 - y1) * _f((size - 1) / (n - 1))
        return _f(0.5) * (y1 + y2) * _f(size - 1)

    def f(*i):
        k = i[0]
        y, x = source(k, i[ha], H, ch, 0, 2), source(k, i[wa], W, cw, 1, 3)
        inside = _op.all(y >= _f(0), y <= _f(H - 1), x >= _f(0), x <= _f(W - 1))
        b = box_indices[k]

        def at(yy, xx):
            idx = [None] * 4
            idx[0], idx[ca] = b, i[ca]
            idx[ha] = _op.min(_op.max(yy, 0), H - 1)
            idx[wa] = _op.min(_op.max(xx, 0), W - 1)
            return _op.cast(F32, image(*idx))
        if method == "nearest":
            v = at(_op.cast("int32", _op.round(y)), _op.cast("int32", _op.round(x)))
        else:
            y0, x0 = _op.floor(y), _op.floor(x)
            dy, dx = y - y0, x - x0
            iy, ix = _op.cast("int32", y0), _op.cast("int32", x0)
            top = at(iy, ix) * (_f(1) - dx) + at(iy, ix + 1) * dx
            bottom = at(iy + 1, ix) * (_f(1) - dx) + at(iy + 1, ix + 1) * dx
            v = top * (_f(1) - dy) + bottom * dy
        return _op.cast(dtype, _op.select(inside, v, ext))
    shape = [boxes.shape[0], None, None, None]
    shape[ha], shape[wa], shape[ca] = ch, cw, image.shape[ca]
    return te.compute(tuple(shape), f, name="T_crop_and_resize", tag=tag.INJECTIVE)
