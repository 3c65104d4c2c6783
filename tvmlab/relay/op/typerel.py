"""Helpers shared by the type relations: argument checks, numpy broadcasting, axis normalisation."""
from __future__ import annotations

from ..base import TypeInferenceError
from ..ty import TensorType, TupleType


def tensor_arg(types, k, what="data"):
    t = types[k]
    if not isinstance(t, TensorType):
        raise TypeInferenceError(f"argument {k} ({what}) must be a tensor, got {t!r}")
    return t


def same_dtype(a, b, what_a="lhs", what_b="rhs"):
    if a.dtype != b.dtype:
        raise TypeInferenceError(f"dtype mismatch: {what_a} is {a.dtype}, {what_b} is {b.dtype}")


def broadcast_shape(a, b):
    """numpy's broadcast of shapes ``a`` and ``b``, or a TypeInferenceError naming both."""
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        x = a[-k] if k <= len(a) else 1
        y = b[-k] if k <= len(b) else 1
        if x != y and x != 1 and y != 1:
            raise TypeInferenceError(f"shapes {tuple(a)} and {tuple(b)} do not broadcast "
                                     f"(dimension -{k}: {x} vs {y})")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def norm_axis(axis, ndim, what="axis"):
    if not isinstance(axis, int) or isinstance(axis, bool) or not -ndim <= axis < max(ndim, 1):
        raise TypeInferenceError(f"{what} {axis!r} is out of range for a tensor of rank {ndim}")
    return axis % ndim if ndim else 0


def norm_axes(axes, ndim, what="axis"):
    """A sorted list of distinct axes in range (None: all)."""
    if axes is None:
        return list(range(ndim))
    if isinstance(axes, int):
        axes = [axes]
    out = sorted({norm_axis(a, ndim, what) for a in axes})
    if len(out) != len(list(axes)):
        raise TypeInferenceError(f"{what} {list(axes)} repeats an axis")
    return out


def pair(v, what, n=2):
    """An int or a sequence as a tuple of ``n`` ints."""
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * n
    try:
        v = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise TypeInferenceError(f"{what} must be an int or {n} ints, got {v!r}") from None
    if len(v) == 1:
        v = v * n
    if len(v) != n:
        raise TypeInferenceError(f"{what} must have {n} values, got {v!r}")
    return v


def padding4(padding):
    """TVM's conv/pool padding: 1 value (all sides), 2 (top/bottom, left/right) or 4 (top, left, bottom, right)."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        padding = (padding,)
    try:
        p = tuple(int(x) for x in padding)
    except (TypeError, ValueError):
        raise TypeInferenceError(f"padding must be ints, got {padding!r}") from None
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = (p[0], p[1], p[0], p[1])
    if len(p) != 4 or min(p) < 0:
        raise TypeInferenceError(f"padding must be 1, 2 or 4 non-negative ints, got {padding!r}")
    return p


def tuple_of(types, what):
    t = types[0]
    if not isinstance(t, TupleType) or not all(isinstance(f, TensorType) for f in t.fields) or not t.fields:
        raise TypeInferenceError(f"{what} needs a tuple of tensors, got {t!r}")
    return list(t.fields)
