"""argmax / argmin and top-k by value as plain (vectorisable) reductions over the axis.

``topi.argmax`` reduces (value, index) pairs with one tuple reducer: a loop of compares and selects that
stays scalar.  Here the index of the largest value is two reductions over the row, each a max or a min
that ``topi.x86.schedule_reduce`` splits into vector lanes:

    m = max_k x[..., k]                   i = min_k (k if x[..., k] == m else n)

(``i`` is the first index on ties; ``select_last_index`` takes the max of the matching indices instead).
NaN is skipped, as ``topi.argmax`` skips it; a row whose values are all NaN gives 0.  ``topk_by_rounds`` picks k
values one round at a time, each round the same two reductions over the elements ranked after the previous pick
(value, then index): for a few of many (5 of 1000) it does 2k vector passes over a row in cache where sorting does
n log n scalar steps.
"""
from __future__ import annotations

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, normalize_axis, shape_str


def _row(data, axis, name):
    check_tensor(name, data, "data")
    if not (dt.is_float(data.dtype) or dt.is_int(data.dtype) or dt.is_uint(data.dtype)):
        raise OperatorError(f"{name} needs a numeric tensor, got {shape_str(data)}")
    n = len(data.shape)
    axis = normalize_axis(name, axis, n)
    size = data.shape[axis]
    if const_or_none(size) is None:
        raise OperatorError(f"{name}: axis {axis} of {shape_str(data)} must have a constant size")
    red_shape = tuple(s for d, s in enumerate(data.shape) if d != axis)

    def at(i, k):
        return tuple(i[:axis]) + (k,) + tuple(i[axis:])
    return axis, const_or_none(size), red_shape, at


def _attrs(axis, ndim):
    return {"axis": (axis,), "ndim": ndim}      # read by the reduction schedules (which axes are reduced)


def _best(data, axis, at, red_shape, largest, name, keep=None):
    """The largest (smallest) value over ``axis`` among the elements ``keep(i, k)`` allows, NaN skipped."""
    k = te.reduce_axis((0, data.shape[axis]), name="k")
    reducer = te.max if largest else te.min
    if dt.is_float(data.dtype):
        worst = _op.const(float("-inf") if largest else float("inf"), data.dtype)
    else:
        worst = _op.min_value(data.dtype) if largest else _op.max_value(data.dtype)

    def value(i):
        x = data(*at(i, k))
        ok = keep(i, k) if keep is not None else None
        if dt.is_float(data.dtype):
            ok = _op.logical_not(_op.isnan(x)) if ok is None else _op.logical_and(ok, _op.logical_not(_op.isnan(x)))
        return x if ok is None else _op.select(ok, x, worst)
    return te.compute(red_shape, lambda *i: reducer(value(i), axis=k), name=f"T_{name}_value",
                      attrs=_attrs(axis, len(data.shape)))


def _index_of(data, axis, at, red_shape, size, value, name, last=False, keep=None):
    """The first (last) index along ``axis`` where ``data`` equals ``value`` (and ``keep`` allows), else
    ``size`` (``-1`` when ``last``)."""
    k = te.reduce_axis((0, data.shape[axis]), name="k")
    none = _op.const(-1 if last else size, "int32")

    def idx(*i):
        hit = data(*at(i, k)) == value(*i)
        if keep is not None:
            hit = _op.logical_and(hit, keep(i, k))
        return _op.select(hit, _op.cast("int32", k), none)
    return te.compute(red_shape, lambda *i: (te.max if last else te.min)(idx(*i), axis=k),
                      name=f"T_{name}_index", tag="comm_reduce_idx", attrs=_attrs(axis, len(data.shape)))


def arg_reduce(data, axis, keepdims=False, largest=True, select_last_index=False):
    """int32 index of the largest (``largest``) or smallest element along ``axis``: the first on ties (the
    last with ``select_last_index``), 0 for a row of NaN."""
    name = "argmax" if largest else "argmin"
    axis, size, red_shape, at = _row(data, axis, name)
    value = _best(data, axis, at, red_shape, largest, name)
    index = _index_of(data, axis, at, red_shape, size, value, name, select_last_index)
    out_shape = tuple(1 if d == axis else s for d, s in enumerate(data.shape)) if keepdims else red_shape

    def out(*i):
        j = index(*(i[:axis] + i[axis + 1:])) if keepdims else index(*i)
        return _op.select(_op.logical_and(j >= 0, j < size), j, _op.const(0, "int32"))
    return te.compute(out_shape, out, name=f"T_{name}", tag="injective")


def topk_by_rounds(data, k, axis=-1, largest=True, dtype="int32"):
    """(values, indices) of the ``k`` largest (smallest) elements along ``axis``, best first, ties by the
    lower index (ONNX's TopK order), picked in ``k`` rounds of ``arg_reduce``'s two reductions."""
    name = "topk"
    axis, size, red_shape, at = _row(data, axis, name)
    if not 1 <= k <= size:
        raise OperatorError(f"topk: k={k} must be between 1 and the axis size {size}")
    values, indices = [], []
    for r in range(k):
        if r == 0:
            keep = None
        else:
            pv, pi = values[-1], indices[-1]

            def keep(i, kk, pv=pv, pi=pi):      # ranked after the previous pick: a worse value, or equal and later
                x, prev = data(*at(i, kk)), pv(*i)
                worse = x < prev if largest else x > prev
                return _op.logical_or(worse, _op.logical_and(x == prev, _op.cast("int32", kk) > pi(*i)))
        v = _best(data, axis, at, red_shape, largest, f"{name}{r}", keep)
        values.append(v)
        indices.append(_index_of(data, axis, at, red_shape, size, v, f"{name}{r}", keep=keep))
    out_shape = tuple(k if d == axis else s for d, s in enumerate(data.shape))

    def pick(stages, *i):
        rest, r = i[:axis] + i[axis + 1:], i[axis]
        out = stages[-1](*rest)
        for j in range(len(stages) - 2, -1, -1):
            out = _op.select(r == j, stages[j](*rest), out)
        return out
    # one stage with both outputs: the rows' reductions run in its row loop
    vals, idx = te.compute(out_shape, lambda *i: (pick(values, *i), _op.cast(dtype, pick(indices, *i))),
                           name="T_topk", tag="injective")
    return vals, idx
