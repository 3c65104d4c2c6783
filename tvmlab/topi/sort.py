"""Sorting along one axis: ``topi.topk``, ``topi.sort``, ``topi.argsort`` (TVM's names).

Each element's rank is the count of elements that precede it in the order
(larger first, or smaller when ascending; equal values by index, so ranks are
distinct and ties keep the lower index first, as onnxruntime and numpy's
stable sort do); the j-th output is the element of rank j. Both steps are
reductions over the axis: quadratic in its length, parallel over the others,
and free of data-dependent control flow, which suits the short axes (classes,
candidates) models sort.
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
    or one of them (``ret_type`` "values" / "indices")."""
    if ret_type not in ("both", "values", "indices"):
        raise OperatorError(f"topk: ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    axis, n = _check("topk", data, axis, k)
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
