"""numpy references of the image operators (TVM's ``topi.testing`` names): resizing in 1 to 3 spatial
axes, crop_and_resize, affine_grid and grid_sample."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..utils import nchw_pack_layout


def _source(x, n_in, n_out, mode):
    if mode == "align_corners":
        return (n_in - 1) / (n_out - 1) * x if n_out > 1 else 0.0
    scale = n_in / n_out
    return scale * x if mode == "asymmetric" else (x + 0.5) * scale - 0.5


def _taps(x, n_in, n_out, method, mode, alpha=-0.5, exclude=0):
    """(input index, weight) pairs of output position ``x`` along one axis (cubic: Keys' kernel with ``alpha``;
    ``exclude`` drops taps outside the input and renormalises the rest)."""
    c = _source(x, n_in, n_out, mode)
    clamp = lambda i: min(max(i, 0), n_in - 1)  # noqa: E731
    if method == "nearest_neighbor":
        return [(clamp(int(math.floor(c + 0.5)) if mode == "align_corners" else int(math.floor(c))), 1.0)]
    base, t = int(math.floor(c)), c - math.floor(c)
    if method == "linear":
        return [(clamp(base), 1.0 - t), (clamp(base + 1), t)]
    a = alpha
    w = [a * (t ** 3 - 2 * t * t + t), (a + 2) * t ** 3 - (3 + a) * t * t + 1,
         -(a + 2) * t ** 3 + (3 + 2 * a) * t * t - a * t, -a * t ** 3 + a * t * t]
    if exclude:
        w = [wk if 0 <= base - 1 + k < n_in else 0.0 for k, wk in enumerate(w)]
        w = [wk / sum(w) for wk in w]
    return [(clamp(base - 1 + k), w[k]) for k in range(4)]


def _resize_first(data, scale, method, mode, alpha=-0.5, exclude=0):
    """Resize the trailing axes of ``data`` (N, C, spatial...) by ``scale`` (out = round(in * scale))."""
    sizes = data.shape[2:]
    outs = [int(round(s * f)) for s, f in zip(sizes, scale)]
    x = data.astype(np.float64)
    for k, (n_in, n_out) in enumerate(zip(sizes, outs)):     # separable: one axis at a time
        moved = np.moveaxis(x, 2 + k, -1)
        res = np.zeros(moved.shape[:-1] + (n_out,))
        for o in range(n_out):
            for i, w in _taps(o, n_in, n_out, method, mode, alpha, exclude):
                res[..., o] += w * moved[..., i]
        x = np.moveaxis(res, -1, 2 + k)
    return x.astype(data.dtype)


def _channels_first(data, layout):
    if nchw_pack_layout(layout):      # (N, C, H, W, n, c) -> (N*n, C*c, H, W)
        n, c, h, w, ni, ci = data.shape
        return data.transpose(0, 4, 1, 5, 2, 3).reshape(n * ni, c * ci, h, w)
    order = [layout.index("N"), layout.index("C")] + [k for k, ch in enumerate(layout) if ch in "DHW"]
    return data.transpose(order)


def _back(out, layout, like):
    if nchw_pack_layout(layout):
        n, c, _, _, ni, ci = like.shape
        return out.reshape(n, ni, c, ci, *out.shape[2:]).transpose(0, 2, 4, 5, 1, 3)
    order = [layout.index("N"), layout.index("C")] + [k for k, ch in enumerate(layout) if ch in "DHW"]
    return out.transpose(np.argsort(order))


def _resize(data, scale, layout, method, mode, alpha=-0.5, exclude=0):
    method = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(method, method)
    out = _resize_first(_channels_first(data, layout), tuple(scale), method, mode, alpha, exclude)
    return _back(out, layout, data)


def resize1d_python(data, scale, layout="NCW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners"):
    """``data`` resized over its width by ``scale`` (a 1-tuple)."""
    return _resize(data, scale, layout, method, coordinate_transformation_mode)


def resize2d_python(data, scale, layout="NCHW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners", cubic_alpha=-0.5, cubic_exclude=0):
    """``data`` (NCHW, NHWC or packed NCHW[x]n[y]c) resized by ``scale`` (h, w); nearest rounds "floor"
    except with "align_corners" (then to nearest), as TVM's default."""
    return _resize(data, scale, layout, method, coordinate_transformation_mode, cubic_alpha, cubic_exclude)


def resize3d_python(data, scale, layout="NCDHW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners"):
    """``data`` (NCDHW / NDHWC) resized by ``scale`` (d, h, w)."""
    return _resize(data, scale, layout, method, coordinate_transformation_mode)


def crop_and_resize_python(image, boxes, box_indices, crop_size, layout, method="bilinear", extrapolation_value=0):
    """TensorFlow's crop_and_resize: box k sampled at crop_size points of image box_indices[k]."""
    img = image if layout == "NHWC" else image.transpose(0, 2, 3, 1)
    _, h, w, c = img.shape
    ch, cw = crop_size
    out = np.zeros((len(box_indices), ch, cw, c))
    for k, (y1, x1, y2, x2) in enumerate(boxes):
        for oy in range(ch):
            y = y1 * (h - 1) + oy * (y2 - y1) * (h - 1) / (ch - 1) if ch > 1 else 0.5 * (y1 + y2) * (h - 1)
            for ox in range(cw):
                x = x1 * (w - 1) + ox * (x2 - x1) * (w - 1) / (cw - 1) if cw > 1 else 0.5 * (x1 + x2) * (w - 1)
                if not (0 <= y <= h - 1 and 0 <= x <= w - 1):
                    out[k, oy, ox] = extrapolation_value
                    continue
                src = img[box_indices[k]]
                if method == "nearest_neighbor":
                    out[k, oy, ox] = src[int(round(y)), int(round(x))]
                    continue
                y0, x0 = int(math.floor(y)), int(math.floor(x))
                y1_, x1_ = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
                dy, dx = y - y0, x - x0
                top = src[y0, x0] * (1 - dx) + src[y0, x1_] * dx
                bottom = src[y1_, x0] * (1 - dx) + src[y1_, x1_] * dx
                out[k, oy, ox] = top * (1 - dy) + bottom * dy
    out = out if layout == "NHWC" else out.transpose(0, 3, 1, 2)
    return out.astype(image.dtype)


def affine_grid_python(data, target_shape):
    """The grid (N, 2, H, W) of ``data`` (N, 2, 3) applied to (x, y, 1) over [-1, 1] x [-1, 1]."""
    h, w = target_shape
    yv, xv = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    pts = np.stack([xv, yv, np.ones_like(xv)]).reshape(3, -1)
    return (data.reshape(-1, 3) @ pts).reshape(data.shape[0], 2, h, w).astype(data.dtype)


def _reflect(c, size, align_corners):
    start, span = (0.0, size - 1) if align_corners else (-0.5, float(size))
    if span <= 0:
        return 0.0
    if start <= c <= start + span:
        return c
    dist = abs(c - start)
    flips = math.floor(dist / span)
    extra = dist - flips * span
    return start + extra if flips % 2 == 0 else start + span - extra


def grid_sample_python(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros", align_corners=True):
    """PyTorch's grid_sample of ``data`` (NCHW / NCDHW) at ``grid`` (N, 2 or 3, ...) of normalised x, y(, z)."""
    n = data.ndim - 2
    sizes = data.shape[2:]
    out = np.zeros(data.shape[:2] + grid.shape[2:])
    clip = lambda c, s: min(max(c, 0), s - 1)  # noqa: E731

    def pixel(b, idx):
        if all(0 <= i < s for i, s in zip(idx, sizes)):
            return data[(b, slice(None)) + tuple(idx)].astype(np.float64)
        return np.zeros(data.shape[1])
    for b in range(data.shape[0]):
        for pos in itertools.product(*[range(s) for s in grid.shape[2:]]):
            cs = []
            for k, s in enumerate(sizes):
                g = float(grid[(b, n - 1 - k) + pos])
                c = (g + 1) * (s - 1) / 2 if align_corners else (g + 1) * s / 2 - 0.5
                if method != "bicubic" and padding_mode == "border":
                    c = clip(c, s)
                elif method != "bicubic" and padding_mode == "reflection":
                    c = clip(_reflect(c, s, align_corners), s)
                cs.append(c)
            if method == "nearest":
                idx = [int(c + 0.5) if c > 0 else int(c - 0.5) for c in cs]
                out[(b, slice(None)) + pos] = pixel(b, idx)
                continue
            base = [int(math.floor(c)) for c in cs]
            frac = [c - bs for c, bs in zip(cs, base)]
            if method == "bilinear":
                acc = 0.0
                for corner in itertools.product((0, 1), repeat=n):
                    wgt = np.prod([f if t else 1 - f for t, f in zip(corner, frac)])
                    acc = acc + wgt * pixel(b, [bs + t for bs, t in zip(base, corner)])
                out[(b, slice(None)) + pos] = acc
                continue
            a = -0.75

            def weights(t):
                near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731
                far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731
                return [far(t + 1), near(t), near(1 - t), far(2 - t)]

            def tap(i, s):
                if padding_mode == "border":
                    return clip(i, s)
                if padding_mode == "reflection":
                    return int(clip(_reflect(float(i), s, align_corners), s))
                return i
            wy, wx = weights(frac[0]), weights(frac[1])
            acc = 0.0
            for ty in range(4):
                for tx in range(4):
                    idx = [tap(base[0] - 1 + ty, sizes[0]), tap(base[1] - 1 + tx, sizes[1])]
                    acc = acc + wy[ty] * wx[tx] * pixel(b, idx)
            out[(b, slice(None)) + pos] = acc
    return out.astype(data.dtype)
