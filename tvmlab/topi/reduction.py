"""Reductions over axes (tag ``comm_reduce``), spelled as in TVM's ``topi``.

    S = topi.sum(A, axis=(1, 2), keepdims=True); M = topi.mean(A, axis=-1)
"""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import op as _op
from . import tag
from .utils import OperatorError, check_tensor, normalize_axis, shape_str


def _axes(op, axis, ndim):
    if axis is None:
        return list(range(ndim))
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = sorted({normalize_axis(op, a, ndim) for a in axes})
    if len(out) != len(axes):
        raise OperatorError(f"{op}: axis {tuple(axes)} repeats an axis")
    return out


def _reduce(op, reducer, data, axis, keepdims, name):
    check_tensor(op, data, "data")
    n = len(data.shape)
    axes = _axes(op, axis, n)
    rvars = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]
    shape = [(1 if k in axes else s) for k, s in enumerate(data.shape)] if keepdims else \
        [s for k, s in enumerate(data.shape) if k not in axes]

    def f(*i):
        idx, it, r = [], iter(i), iter(rvars)
        for k in range(n):
            if k in axes:
                idx.append(next(r))
                if keepdims:
                    next(it)
            else:
                idx.append(next(it))
        return reducer(data(*idx), axis=rvars)
    if not rvars:
        return te.compute(tuple(shape), lambda *i: data(*i), name=name, tag=tag.ELEMWISE)
    return te.compute(tuple(shape), f, name=name, tag=tag.COMM_REDUCE, attrs={"axis": tuple(axes), "ndim": n})


def sum(data, axis=None, keepdims=False):  # noqa: A001
    """Sum over ``axis`` (an int, a tuple, or None for all)."""
    return _reduce("sum", te.sum, data, axis, keepdims, "T_sum")


def max(data, axis=None, keepdims=False):  # noqa: A001
    """Maximum over ``axis``."""
    return _reduce("max", te.max, data, axis, keepdims, "T_max")


def min(data, axis=None, keepdims=False):  # noqa: A001
    """Minimum over ``axis``."""
    return _reduce("min", te.min, data, axis, keepdims, "T_min")


def prod(data, axis=None, keepdims=False):
    """Product over ``axis``."""
    return _reduce("prod", te.prod, data, axis, keepdims, "T_prod")


def _bool_reducer(name, combine, identity):
    return te.comm_reducer(lambda x, y: combine(x, y), lambda t: _op.const(identity, t), name=name)


def all(data, axis=None, keepdims=False):  # noqa: A001
    """Whether every element over ``axis`` is true (a bool tensor; non-zero is true)."""
    red = _bool_reducer("all", _op.logical_and, True)
    return _reduce("all", red, _as_bool("all", data), axis, keepdims, "T_all")


def any(data, axis=None, keepdims=False):  # noqa: A001
    """Whether some element over ``axis`` is true (a bool tensor; non-zero is true)."""
    red = _bool_reducer("any", _op.logical_or, False)
    return _reduce("any", red, _as_bool("any", data), axis, keepdims, "T_any")


def _as_bool(op, data):
    check_tensor(op, data, "data")
    if dt.is_bool(data.dtype):
        return data
    return te.compute(data.shape, lambda *i: _op.ne(data(*i), _op.const(0, data.dtype)), name=f"T_{op}_bool",
                      tag=tag.ELEMWISE)


def mean(data, axis=None, keepdims=False):
    """Mean over ``axis`` (a sum, then one division: float tensors)."""
    check_tensor("mean", data, "data")
    if not dt.is_float(data.dtype):
        raise OperatorError(f"mean needs a float tensor, got {shape_str(data)}")
    axes = _axes("mean", axis, len(data.shape))
    count = _size([data.shape[a] for a in axes])
    s = sum(data, axis, keepdims)
    return te.compute(s.shape, lambda *i: s(*i) / _op.cast(data.dtype, count), name="T_mean", tag=tag.ELEMWISE)


def _size(dims):
    from .utils import prod as _prod
    return _prod(dims) if dims else 1


def _arg(op, pick, data, axis, keepdims):
    """Index of the max/min along one axis: a tuple reducer of (index, value), first index on ties."""
    check_tensor(op, data, "data")
    n = len(data.shape)
    if isinstance(axis, (list, tuple)):
        if len(axis) != 1:
            raise OperatorError(f"{op}: give one axis or None (all axes), got {tuple(axis)}")
        axis = axis[0]
    if axis is None and n > 1:
        return _arg_all(op, pick, data, keepdims)
    axis = normalize_axis(op, axis if axis is not None else 0, n)
    red = _arg_reducer(op, pick)
    k = te.reduce_axis((0, data.shape[axis]), name="k")
    shape = [(1 if d == axis else s) for d, s in enumerate(data.shape)] if keepdims else \
        [s for d, s in enumerate(data.shape) if d != axis]

    def f(*i):
        idx = list(i[:axis]) + [k] + list(i[axis + (1 if keepdims else 0):])
        return red((k.var, data(*idx)), axis=k)
    outs = te.compute(tuple(shape), f, name=f"T_{op}_red_temp", tag=tag.COMM_REDUCE_IDX)
    return te.compute(tuple(shape), lambda *i: outs[0](*i), name=f"T_{op}", tag=tag.INJECTIVE)


def _arg_reducer(op, pick):
    def fcombine(x, y):
        better = pick(y[1], x[1])
        take_y = _op.logical_or(better, _op.logical_and(y[1] == x[1], y[0] < x[0]))
        return _op.select(take_y, y[0], x[0]), _op.select(take_y, y[1], x[1])

    def fidentity(t0, t1):
        worst = _op.min_value(t1) if op == "argmax" else _op.max_value(t1)
        return _op.const(-1, t0), worst
    return te.comm_reducer(fcombine, fidentity, name=op)


def _arg_all(op, pick, data, keepdims):
    """argmax / argmin over every axis: the index into the flattened tensor."""
    from .utils import ravel_index
    ks = [te.reduce_axis((0, d), name=f"k{a}") for a, d in enumerate(data.shape)]
    red = _arg_reducer(op, pick)
    shape = (1,) * len(data.shape) if keepdims else ()
    flat = ravel_index([k.var for k in ks], data.shape)
    outs = te.compute(shape, lambda *i: red((_op.cast("int32", flat), data(*ks)), axis=ks),
                      name=f"T_{op}_red_temp", tag=tag.COMM_REDUCE_IDX)
    return te.compute(shape, lambda *i: outs[0](*i), name=f"T_{op}", tag=tag.INJECTIVE)


def argmax(data, axis=None, keepdims=False):
    """Index (int32) of the largest element along ``axis`` (the first one on ties)."""
    return _arg("argmax", _op.gt, data, axis, keepdims)


def argmin(data, axis=None, keepdims=False):
    """Index (int32) of the smallest element along ``axis`` (the first one on ties)."""
    return _arg("argmin", _op.lt, data, axis, keepdims)

