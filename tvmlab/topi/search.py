"""Operators that search sorted data or count positions, as TVM's ``topi``: ``searchsorted``, ``argwhere``,
``unique``.

    idx = topi.searchsorted(seq, values, right=False, out_dtype="int32")
    pos = topi.argwhere(out_shape, cond)            # out_shape: a tensor whose first dimension is the count

``searchsorted`` and ``argwhere`` find positions by binary search in a fixed number of steps (powers of
two, largest first), one stage per step (tag ``search_step``, never inlined into the next): log2(n)
reads per query instead of n.  ``unique`` compares every pair of elements (its stages are reductions
over the input).
"""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import op as _op
from .scan import cumsum
from .utils import OperatorError, check_tensor, const_or_none, prod, shape_str, unravel_index

SEARCH_STEP = "search_step"


def lower_bound(shape, n, before, name):
    """A tensor of ``shape``: for each query position ``q``, the count of leading positions ``p`` in [0, n)
    with ``before(p, q)`` true (``before`` must be true on a prefix of [0, n) for each query)."""
    step = 1
    while step * 2 <= n:
        step *= 2
    pos = te.compute(shape, lambda *q: _op.const(0, "int32"), name=f"{name}_start", tag=SEARCH_STEP)
    while step >= 1:
        def f(*q, prev=pos, step=step):
            p = prev(*q)
            nxt = p + step
            ok = _op.logical_and(nxt <= n, before(_op.min(nxt - 1, n - 1), q))
            return _op.select(ok, nxt, p)
        pos = te.compute(shape, f, name=f"{name}_step{step}", tag=SEARCH_STEP)
        step //= 2
    return pos


def searchsorted(sorted_sequence, values, right=False, out_dtype="int64"):
    """For each value, the insertion index into ``sorted_sequence`` (sorted along its last axis; 1-D, or
    with the leading axes of ``values``) that keeps it sorted: before equal elements, or after them with
    ``right``."""
    check_tensor("searchsorted", sorted_sequence, "sorted_sequence")
    check_tensor("searchsorted", values, "values")
    seq_rank, val_rank = len(sorted_sequence.shape), len(values.shape)
    if seq_rank != 1 and (seq_rank != val_rank or any(
            const_or_none(a) != const_or_none(b) for a, b in zip(sorted_sequence.shape[:-1], values.shape[:-1]))):
        raise OperatorError(f"searchsorted: sorted_sequence {shape_str(sorted_sequence)} must be 1-D or share the "
                            f"leading axes of values {shape_str(values)}")
    n = const_or_none(sorted_sequence.shape[-1])
    if n is None:
        raise OperatorError("searchsorted: the sequence length must be constant")

    def before(p, q):
        s = sorted_sequence(p) if seq_rank == 1 else sorted_sequence(*(tuple(q[:-1]) + (p,)))
        v = values(*q)
        return s <= v if right else s < v
    pos = lower_bound(values.shape, n, before, "T_searchsorted")
    return te.compute(values.shape, lambda *q: _op.cast(dt.canonical(out_dtype), pos(*q)), name="T_searchsorted",
                      tag="injective")


def argwhere(output_shape, condition):
    """The coordinates (int32, one row each) of the non-zero elements of ``condition`` in row-major
    order; ``output_shape.shape[0]`` is their count (TVM's calling convention)."""
    check_tensor("argwhere", output_shape, "output_shape", 2)
    check_tensor("argwhere", condition, "condition")
    count = output_shape.shape[0]
    shape = [const_or_none(d) for d in condition.shape]
    if None in shape:
        raise OperatorError(f"argwhere: needs a constant condition shape, got {shape_str(condition)}")
    total = prod(shape) if shape else 1
    flat = te.compute((total,), lambda i: _op.cast("int32", _op.ne(condition(*unravel_index(i, shape)),
                                                                      _op.const(0, condition.dtype))),
                      name="T_argwhere_nonzero", tag="injective")
    seen = cumsum(flat, 0, "int32")              # seen[i]: non-zero elements among the first i + 1

    def before(p, q):
        return seen(p) < q[0] + 1
    pos = lower_bound((count,), total, before, "T_argwhere")
    ndim = len(shape)

    def f(k, d):
        coords = unravel_index(pos(k), shape)
        out = coords[-1]
        for j in range(ndim - 2, -1, -1):
            out = _op.select(d == j, coords[j], out)
        return _op.cast("int32", out)
    return te.compute((count, ndim), f, name="T_argwhere", tag="injective")


def unique(data, is_sorted=True, return_counts=False):
    """The distinct elements of 1-D ``data``: ``[unique, indices, inverse_indices, num_unique]`` (and
    ``counts`` with ``return_counts``), each of data's length, only the first ``num_unique[0]`` entries of
    unique / indices / counts meaningful.  ``indices``: each distinct element's first position;
    ``inverse_indices``: each element's place in ``unique``.  Sorted ascending, or in order of first
    appearance."""
    check_tensor("unique", data, "data", 1)
    n = data.shape[0]
    j = te.reduce_axis((0, n), name="j")
    first = te.compute((n,), lambda i: te.min(_op.select(data[j] == data[i], j.var, i), axis=j),
                       name="T_unique_first")
    is_first = te.compute((n,), lambda i: _op.cast("int32", first[i] == i), name="T_unique_is_first",
                          tag="injective")
    j2 = te.reduce_axis((0, n), name="j")
    if is_sorted:
        rank = te.compute((n,), lambda i: te.sum(_op.select(data[j2] < data[i], is_first[j2], 0), axis=j2),
                          name="T_unique_rank")
    else:
        rank = te.compute((n,), lambda i: te.sum(_op.select(j2 < first[i], is_first[j2], 0), axis=j2),
                          name="T_unique_rank")
    j3 = te.reduce_axis((0, n), name="j")
    num = te.compute((1,), lambda _: te.sum(is_first[j3], axis=j3), name="T_unique_num")
    j4 = te.reduce_axis((0, n), name="j")
    where = te.compute((n,), lambda k: te.max(_op.select(_op.logical_and(is_first[j4] == 1, rank[j4] == k), j4.var, -1),
                                              axis=j4), name="T_unique_where")
    uniq = te.compute((n,), lambda k: _op.select(where[k] >= 0, data[_op.max(where[k], 0)], _op.const(0, data.dtype)),
                      name="T_unique", tag="injective")
    indices = te.compute((n,), lambda k: where[k], name="T_unique_indices", tag="injective")
    inverse = te.compute((n,), lambda i: rank[i], name="T_unique_inverse", tag="injective")
    outs = [uniq, indices, inverse, num]
    if return_counts:
        j5 = te.reduce_axis((0, n), name="j")
        counts = te.compute((n,), lambda k: te.sum(_op.select(rank[j5] == k, 1, 0), axis=j5), name="T_unique_counts")
        outs.append(counts)
    return outs
