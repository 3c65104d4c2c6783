"""numpy references of the data-movement operators (TVM's ``topi.testing`` names)."""
from __future__ import annotations

import numpy as np


def _slices(shape, begin, end, strides, slice_mode="end", axes=None):
    n = len(shape)
    strides = list(strides) if strides is not None else []
    if axes is not None:        # bounds given for some axes only: the rest whole
        b, e, s = [0] * n, list(shape), [1] * n
        for k, ax in enumerate(axes):
            b[ax], e[ax] = begin[k], end[k]
            if k < len(strides):
                s[ax] = strides[k]
        begin, end, strides = b, e, s
    out = []
    for k in range(n):
        b = begin[k] if k < len(begin) else None
        step = strides[k] if (slice_mode == "end" and k < len(strides)) else None
        if k >= len(end):
            e = None
        elif slice_mode == "size":
            e = None if end[k] < 0 else b + end[k]
        else:
            e = end[k]
        out.append(slice(b, e, step))
    return tuple(out)


def strided_slice_python(data, begin, end, strides, slice_mode="end", axes=None):
    """``data[begin:end:strides]`` per axis (``slice_mode="size"``: end is the size, -1 for the rest)."""
    return data[_slices(data.shape, begin, end, strides, slice_mode, axes)]


def strided_set_python(data, v, begin, end, strides):
    """``data`` with ``data[begin:end:strides]`` replaced by ``v``."""
    out = data.copy()
    out[_slices(data.shape, begin, end, strides)] = v
    return out


def gather_python(data, axis, indices):
    """``numpy.take_along_axis(data, indices, axis)``."""
    return np.take_along_axis(data, np.asarray(indices).astype(np.int64), axis)


def gather_nd_python(a_np, indices_np):
    """``out[y..] = a[indices[0, y..], ..., indices[M-1, y..]]`` (indices truncated to integers)."""
    idx = np.asarray(indices_np).astype(np.int64)
    return a_np[tuple(idx[k] for k in range(idx.shape[0]))]


def one_hot(indices, on_value, off_value, depth, axis, dtype):
    """A ``depth``-wide axis inserted at ``axis`` (-1: last): ``on_value`` at each index, else ``off_value``."""
    axis = indices.ndim if axis == -1 else axis
    hot = np.expand_dims(indices, axis) == np.arange(depth).reshape([depth if k == axis else 1
                                                                      for k in range(indices.ndim + 1)])
    return np.where(hot, on_value, off_value).astype(dtype)


def sequence_mask(data, valid_length, mask_value, axis):
    """``data`` with positions at or past each batch entry's valid length (along ``axis``, 0 or 1) set to
    ``mask_value``; the batch axis is the other of the two."""
    pos = np.arange(data.shape[axis])
    keep = pos[:, None] < valid_length[None, :] if axis == 0 else valid_length[:, None] > pos[None, :]
    keep = keep.reshape(keep.shape + (1,) * (data.ndim - 2))
    return np.where(keep, data, mask_value).astype(data.dtype)


def matrix_set_diag(input_np, diagonal, k=0, align="RIGHT_LEFT"):
    """``input_np`` with diagonal ``k`` (or the band ``k = (lo, hi)``) replaced by ``diagonal``; in a band,
    ``diagonal[..., hi - d, :]`` holds diagonal d, a short one flush left or right as ``align`` says (for
    diagonals above the main one, then below)."""
    out = np.array(input_np, copy=True)
    rows, cols = input_np.shape[-2:]
    lo, hi = (k, k) if isinstance(k, int) else (k[0], k[-1])
    for d in range(lo, hi + 1):
        length = min(cols - max(d, 0), rows + min(d, 0))
        if lo == hi:
            vals, offset = diagonal, 0
        else:
            vals = diagonal[..., hi - d, :]
            right = align.startswith("RIGHT") if d >= 0 else align.endswith("RIGHT")
            offset = diagonal.shape[-1] - length if right else 0
        for t in range(length):
            r, c = (t, t + d) if d >= 0 else (t - d, t)
            out[..., r, c] = vals[..., t + offset]
    return out


def space_to_depth_python(data, block_size):
    """NCHW: each block_size x block_size block of pixels into channels, block-major."""
    n, c, h, w = data.shape
    b = block_size
    return data.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def depth_to_space_python(data, block_size, mode="DCR"):
    """NCHW: channels into block_size x block_size blocks of pixels ("DCR": block-major, "CDR": channel-major)."""
    n, c, h, w = data.shape
    b = block_size
    if mode == "DCR":
        x = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        x = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return x.reshape(n, c // (b * b), h * b, w * b)


def searchsorted_ref(sorted_sequence, values, right, out_dtype):
    """numpy.searchsorted along the last axis (a 1-D sequence serves every row of values)."""
    side = "right" if right else "left"
    if sorted_sequence.ndim == 1:
        return np.searchsorted(sorted_sequence, values, side=side).astype(out_dtype)
    seq = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
    vals = values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, vals)])
    return out.reshape(values.shape).astype(out_dtype)
