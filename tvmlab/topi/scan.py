"""Running sums and products along one axis (TVM's ``topi.cumsum`` / ``topi.cumprod``).

Each output element reduces the prefix it covers (a reduction with a
``where`` bound), so it needs no sequential loop and parallelises over the
other axes; cost grows with the axis length squared, fine for the short axes
models scan over.
"""
from __future__ import annotations

from .. import te
from ..ir import op as _op
from .utils import OperatorError, check_tensor, normalize_axis


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
    k = te.reduce_axis((0, data.shape[axis]), name="k")

    def f(*i):
        idx = list(i)
        idx[axis] = k
        j = i[axis]
        if reverse:
            cond = k > j if exclusive else k >= j
        else:
            cond = k < j if exclusive else k <= j
        return reducer(src(*idx), axis=k, where=cond)
    return te.compute(data.shape, f, name=f"T_{op}", tag=op)


def cumsum(data, axis=None, dtype=None, exclusive=False, reverse=False):
    """Running sum along ``axis`` (None: of the flattened tensor); ``exclusive`` leaves out the element itself,
    ``reverse`` runs from the end (ONNX CumSum's attributes)."""
    return _scan("cumsum", te.sum, data, axis, dtype, bool(exclusive), bool(reverse))


def cumprod(data, axis=None, dtype=None, exclusive=False, reverse=False):
    """Running product along ``axis``, as :func:`cumsum`."""
    return _scan("cumprod", te.prod, data, axis, dtype, bool(exclusive), bool(reverse))
