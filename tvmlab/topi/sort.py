"""Sorting along one axis: ``topi.topk``, ``topi.sort``, ``topi.argsort`` (TVM's names).

Each element's rank is the count of elements that precede it in the order
(larger first, or smaller when ascending; equal values by index, so ranks are
distinct and ties keep the lower index first, as onnxruntime and numpy's
stable sort do); the j-th output is the element of rank j. Both steps are
reductions over the axis: quadratic in its length, parallel over the others,
and free of data-dependent control flow, which suits the short axes (classes,
candidates) models sort. A small ``topk`` (k of at most 16, a quarter of the
axis) instead picks one element per pass: k arg-reductions, each over the
elements after the previous pick.
"""
from __future__ import annotations

from .. import te
from ..ir import op as _op
from .utils import OperatorError, check_tensor, const_or_none, normalize_axis


def _ranks(data, axis, is_ascend):
    n = data.shape[axis]
    m = te.reduce_axis((0, n), name="m")

    def f(*i):
        other = list(i)
        other[axis] = m
        a, b = data(*other), data(*i)
        before = (a < b) if is_ascend else (a > b)
        before = _op.logical_or(before, _op.logical_and(a == b, m < i[axis]))
        return te.sum(_op.cast("int32", before), axis=m)
    return te.compute(data.shape, f, name="T_sort_rank")


def _pick(data, rank, axis, k, dtype, name, values):
    shape = list(data.shape)
    shape[axis] = k
    m = te.reduce_axis((0, data.shape[axis]), name="m")

    def f(*i):
        src = list(i)
        src[axis] = m
        hit = rank(*src) == _op.cast("int32", i[axis])
        v = data(*src) if values else _op.cast(dtype, m)
        return te.sum(_op.select(hit, v, _op.const(0, v.dtype)), axis=m)
    return te.compute(tuple(shape), f, name=name, tag="sort")


SELECT_MAX_K = 16      # topk of at most this many (and a quarter of the axis) picks one element per pass


def _select(data, axis, k, is_ascend, dtype):
    """[values, indices] of the first ``k`` in the order, by ``k`` passes over the axis (each an arg-reduction
    of the elements after the previous pick): k * n work instead of the n * n of ranking."""
    n = data.shape[axis]
    shape = [s for d, s in enumerate(data.shape) if d != axis]

    def after(a_val, a_idx, b_val, b_idx):
        """Whether (a_val, a_idx) comes after (b_val, b_idx) in the order."""
        worse = (a_val > b_val) if is_ascend else (a_val < b_val)
        return _op.logical_or(worse, _op.logical_and(a_val == b_val, a_idx > b_idx))

    def fcombine(x, y):
        take_y = _op.logical_or(x[0] < _op.const(0, x[0].dtype), _op.logical_and(
            y[0] >= _op.const(0, y[0].dtype), after(x[1], x[0], y[1], y[0])))
        return _op.select(take_y, y[0], x[0]), _op.select(take_y, y[1], x[1])

    def fidentity(t0, t1):
        return _op.const(-1, t0), _op.const(0, t1)
    red = te.comm_reducer(fcombine, fidentity, name="topk_select")
    picks = []
    for j in range(k):
        m = te.reduce_axis((0, n), name="m")

        def f(*i, prev=picks[-1] if picks else None):
            src = list(i[:axis]) + [m] + list(i[axis:])
            v = data(*src)
            cond = None if prev is None else after(v, m.var, prev[1](*i), prev[0](*i))
            return red((m.var, v), axis=m, where=cond)
        picks.append(te.compute(tuple(shape), f, name=f"T_topk_pick{j}"))

    def gather(which, out_dtype):
        def f(*i):
            rest = i[:axis] + i[axis + 1:]
            val = _op.cast(out_dtype, picks[k - 1][which](*rest))
            for j in range(k - 2, -1, -1):
                val = _op.select(i[axis] == j, _op.cast(out_dtype, picks[j][which](*rest)), val)
            return val
        out_shape = list(data.shape)
        out_shape[axis] = k
        return te.compute(tuple(out_shape), f, name="T_topk_values" if which else "T_topk_indices", tag="sort")
    return [gather(1, data.dtype), gather(0, dtype)]


def _check(op, data, axis, k=None):
    check_tensor(op, data, "data")
    axis = normalize_axis(op, axis, len(data.shape))
    n = const_or_none(data.shape[axis])
    if n is None:
        raise OperatorError(f"{op}: the sorted axis needs a static length, got {data.shape[axis]}")
    if k is not None and not (isinstance(k, int) and 1 <= k <= n):
        raise OperatorError(f"{op}: k must be an int in 1..{n}, got {k!r}")
    return axis, n


def topk(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int64"):
    """The ``k`` largest (or smallest, ``is_ascend``) elements along ``axis``, sorted: ``[values, indices]``,
    or one of them (``ret_type`` "values" / "indices"); ``k`` below 1 takes the whole axis (as TVM)."""
    if ret_type not in ("both", "values", "indices"):
        raise OperatorError(f"topk: ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    if isinstance(k, int) and not isinstance(k, bool) and k < 1:
        k = _check("topk", data, axis)[1]
    axis, n = _check("topk", data, axis, k)
    if k <= SELECT_MAX_K and 4 * k <= n:
        both = _select(data, axis, k, is_ascend, dtype)
        return both if ret_type == "both" else both[0 if ret_type == "values" else 1]
    rank = _ranks(data, axis, is_ascend)
    outs = []
    if ret_type in ("both", "values"):
        outs.append(_pick(data, rank, axis, k, data.dtype, "T_topk_values", True))
    if ret_type in ("both", "indices"):
        outs.append(_pick(data, rank, axis, k, dtype, "T_topk_indices", False))
    return outs if ret_type == "both" else outs[0]


def sort(data, axis=-1, is_ascend=True):
    """``data`` sorted along ``axis`` (stable)."""
    axis, n = _check("sort", data, axis)
    return _pick(data, _ranks(data, axis, is_ascend), axis, n, data.dtype, "T_sort", True)


def argsort(data, axis=-1, is_ascend=True, dtype="float32"):
    """The indices that sort ``data`` along ``axis`` (stable), as ``dtype`` (TVM's default: float32)."""
    axis, n = _check("argsort", data, axis)
    return _pick(data, _ranks(data, axis, is_ascend), axis, n, dtype, "T_argsort", False)
