"""``topi.gather_nd``: rows of ``data`` picked by index tuples (TVM's layout: the tuple along indices' axis 0)."""
from __future__ import annotations

from .. import te
from ..ir import op as _op
from .utils import OperatorError, check_tensor, const_or_none


def gather_nd(data, indices, batch_dims=0):
    """``out[b.., y.., x..] = data[b.., indices[0, b.., y..], .., indices[M-1, b.., y..], x..]`` for indices of
    shape (M, B.., Y..); negative indices count from the end of their axis."""
    check_tensor("gather_nd", data, "data")
    check_tensor("gather_nd", indices, "indices")
    if "int" not in indices.dtype:
        raise OperatorError(f"gather_nd: indices must be integers, got {indices.dtype}")
    m = const_or_none(indices.shape[0])
    b = int(batch_dims)
    if m is None or not 0 <= b or b + m > len(data.shape) or len(indices.shape) < 1 + b:
        raise OperatorError(f"gather_nd: indices {tuple(indices.shape)} with batch_dims={b} do not index data "
                            f"{tuple(data.shape)} (need batch_dims + indices.shape[0] <= data rank)")
    ys = list(indices.shape[1 + b:])
    shape = tuple(data.shape[:b]) + tuple(ys) + tuple(data.shape[b + m:])

    def f(*i):
        bs, y, x = i[:b], i[b:b + len(ys)], i[b + len(ys):]
        idx = []
        for k in range(m):
            v = _op.cast("int32", indices(*((k,) + bs + y)))
            size = _op.const(const_or_none(data.shape[b + k]), "int32")
            idx.append(_op.select(v < _op.const(0, "int32"), v + size, v))
        return data(*(tuple(bs) + tuple(idx) + tuple(x)))
    return te.compute(shape, f, name="T_gather_nd", tag="injective")
