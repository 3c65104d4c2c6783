"""Running sums and products along one axis (TVM's ``topi.cumsum`` / ``topi.cumprod``).

Each output element reduces the prefix it covers (reductions with a
``where`` bound), so it needs no sequential loop and parallelises over the
other axes. A short axis is reduced directly (n * n work); a longer one in
blocks of about sqrt(n): block totals, their prefixes, and each element's
prefix inside its block (n * sqrt(n) work).
"""
from __future__ import annotations

import math

from .. import te
from ..ir import op as _op
from .utils import OperatorError, check_tensor, const_or_none, normalize_axis


def _scan(op, reducer, data, axis, dtype, exclusive, reverse):
    check_tensor(op, data, "data")
    n = len(data.shape)
    if n == 0:
        raise OperatorError(f"{op}: data must have at least one dimension")
    if axis is None:
        from .transform import reshape
        from .utils import prod
        data, axis = reshape(data, (prod(data.shape),)), 0
        n = 1
    axis = normalize_axis(op, axis, n)
    src = data
    if dtype is not None and dtype != data.dtype:
        src = te.compute(data.shape, lambda *i: _op.cast(dtype, data(*i)), name=f"T_{op}_cast")
    n = const_or_none(data.shape[axis])
    if n is None or n <= BLOCKED_FROM:
        return _direct(op, reducer, src, axis, exclusive, reverse)
    return _blocked(op, reducer, src, axis, n, exclusive, reverse)


BLOCKED_FROM = 32       # longer axes: blocks of about sqrt(n) (n * sqrt(n) work instead of n * n)


def _direct(op, reducer, src, axis, exclusive, reverse):
    k = te.reduce_axis((0, src.shape[axis]), name="k")

    def f(*i):
        idx = list(i)
        idx[axis] = k
        j = i[axis]
        if reverse:
            cond = k > j if exclusive else k >= j
        else:
            cond = k < j if exclusive else k <= j
        return reducer(src(*idx), axis=k, where=cond)
    return te.compute(src.shape, f, name=f"T_{op}", tag=op)


def _blocked(op, reducer, src, axis, n, exclusive, reverse):
    """Per block of ``b`` elements its total, then each block's prefix of totals, then each element's
    prefix inside its block: three reductions of about sqrt(n) terms each."""
    b = int(math.ceil(math.sqrt(n)))
    nb = -(-n // b)

    def at(i, pos):                 # src at position ``pos`` of the scan order along the axis
        idx = list(i)
        idx[axis] = (n - 1 - pos) if reverse else pos
        return src(*idx)
    bshape = list(src.shape)
    bshape[axis] = nb
    t = te.reduce_axis((0, b), name="t")
    totals = te.compute(tuple(bshape), lambda *i: reducer(at(i, i[axis] * b + t), axis=t,
                                                          where=i[axis] * b + t < n), name=f"T_{op}_blocks")
    q = te.reduce_axis((0, nb), name="q")

    def before(*i):
        idx = list(i)
        idx[axis] = q
        return reducer(totals(*idx), axis=q, where=q < i[axis])
    prefix = te.compute(tuple(bshape), before, name=f"T_{op}_prefix")
    u = te.reduce_axis((0, b), name="u")
    combine = _op.add if reducer is te.sum else _op.mul

    def block_of(i):
        pos = (n - 1 - i[axis]) if reverse else i[axis]
        return pos // b, pos % b

    def part(*i):
        blk, off = block_of(i)
        return reducer(at(i, blk * b + u), axis=u, where=(u < off) if exclusive else (u <= off))
    inside = te.compute(src.shape, part, name=f"T_{op}_inside")

    def f(*i):
        pidx = list(i)
        pidx[axis] = block_of(i)[0]
        return combine(prefix(*pidx), inside(*i))
    return te.compute(src.shape, f, name=f"T_{op}", tag=op)


def cumsum(data, axis=None, dtype=None, exclusive=False, reverse=False):
    """Running sum along ``axis`` (None: of the flattened tensor); ``exclusive`` leaves out the element itself,
    ``reverse`` runs from the end (ONNX CumSum's attributes)."""
    return _scan("cumsum", te.sum, data, axis, dtype, bool(exclusive), bool(reverse))


def cumprod(data, axis=None, dtype=None, exclusive=False, reverse=False):
    """Running product along ``axis``, as :func:`cumsum`."""
    return _scan("cumprod", te.prod, data, axis, dtype, bool(exclusive), bool(reverse))
