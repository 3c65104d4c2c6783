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


REDUCTIONS = ("update", "add", "mul", "min", "max")


def scatter_elements(data, indices, updates, axis=0, reduction="update"):
    """``data`` with ``updates[q]`` written at ``q`` with its ``axis`` coordinate replaced by ``indices[q]``
    (ONNX ScatterElements; duplicates: the last update wins, or they combine by ``reduction``).

    Each output element reduces over the one axis of candidate updates that can land on it, so no write
    races: about out x indices.shape[axis] work."""
    for nm, t in (("data", data), ("indices", indices), ("updates", updates)):
        check_tensor("scatter_elements", t, nm)
    n = len(data.shape)
    if len(indices.shape) != n or [const_or_none(d) for d in indices.shape] != \
            [const_or_none(d) for d in updates.shape] or "int" not in indices.dtype or updates.dtype != data.dtype:
        raise OperatorError(f"scatter_elements: needs integer indices and updates ({data.dtype}) of one shape and "
                            f"data's rank, got data {tuple(data.shape)}, indices {tuple(indices.shape)} "
                            f"{indices.dtype}, updates {tuple(updates.shape)} {updates.dtype}")
    if reduction not in REDUCTIONS:
        raise OperatorError(f"scatter_elements: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if not -n <= axis < n:
        raise OperatorError(f"scatter_elements: axis {axis} is out of range for rank {n}")
    axis %= n
    size = const_or_none(data.shape[axis])
    k = te.reduce_axis((0, indices.shape[axis]), name="k")

    def source(i):
        """(candidate index tuple in indices/updates, whether it exists and lands on output index ``i``)."""
        q = [k if d == axis else _op.min(i[d], _op.const(const_or_none(indices.shape[d]) - 1, "int32"))
             for d in range(n)]
        inside = None
        for d in range(n):
            if d != axis:
                c = i[d] < _op.const(const_or_none(indices.shape[d]), "int32")
                inside = c if inside is None else _op.logical_and(inside, c)
        v = _op.cast("int32", indices(*q))
        v = _op.select(v < _op.const(0, "int32"), v + _op.const(size, "int32"), v)
        hit = v == i[axis]
        return q, hit if inside is None else _op.logical_and(inside, hit)

    if reduction == "update":
        def last(*i):
            _, hit = source(i)
            return te.max(_op.select(hit, k.var, _op.const(-1, "int32")), axis=k)
        pick = te.compute(data.shape, last, name="T_scatter_last")

        def f(*i):
            j = pick(*i)
            q = [_op.max(j, _op.const(0, "int32")) if d == axis else
                 _op.min(i[d], _op.const(const_or_none(indices.shape[d]) - 1, "int32")) for d in range(n)]
            return _op.select(j >= _op.const(0, "int32"), updates(*q), data(*i))
        return te.compute(data.shape, f, name="T_scatter_elements", tag="scatter")
    reducer = {"add": te.sum, "mul": te.prod, "min": te.min, "max": te.max}[reduction]
    neutral = {"add": 0, "mul": 1}

    def gathered(*i):
        q, hit = source(i)
        ident = _op.const(neutral[reduction], data.dtype) if reduction in neutral else \
            (_op.max_value(data.dtype) if reduction == "min" else _op.min_value(data.dtype))
        return reducer(_op.select(hit, updates(*q), ident), axis=k)
    acc = te.compute(data.shape, gathered, name="T_scatter_acc")
    combine = {"add": _op.add, "mul": _op.mul, "min": _op.min, "max": _op.max}[reduction]
    return te.compute(data.shape, lambda *i: combine(data(*i), acc(*i)), name="T_scatter_elements", tag="scatter")


def scatter_nd(data, indices, updates, mode="update"):
    """``data`` with ``updates[y.., x..]`` written at ``data[indices[0, y..], .., indices[M-1, y..], x..]`` (TVM's
    layout: index tuples along indices' axis 0; negative indices count from the end). Duplicated targets: the
    last update wins, or they combine with the data by ``mode`` ("add", "mul", "min", "max")."""
    for nm, t in (("data", data), ("indices", indices), ("updates", updates)):
        check_tensor("scatter_nd", t, nm)
    if mode not in REDUCTIONS:
        raise OperatorError(f"scatter_nd: mode must be one of {REDUCTIONS}, got {mode!r}")
    m = const_or_none(indices.shape[0]) if indices.shape else None
    if len(indices.shape) == 1:         # one index tuple: give it a unit axis of positions
        ind0, upd0 = indices, updates
        indices = te.compute((m, 1), lambda k, j: ind0(k), name="T_scatter_nd_index")
        updates = te.compute((1,) + tuple(upd0.shape), lambda j, *x: upd0(*x), name="T_scatter_nd_update")
    ys = [const_or_none(d) for d in indices.shape[1:]]
    xs = list(data.shape[m:]) if m is not None and m <= len(data.shape) else None
    if "int" not in indices.dtype or xs is None or updates.dtype != data.dtype or \
            [const_or_none(d) for d in updates.shape] != ys + [const_or_none(d) for d in xs]:
        raise OperatorError(f"scatter_nd: indices (M, Y..) of integers with M <= data rank and updates (Y.., "
                            f"data.shape[M:]) of data's dtype; got data {tuple(data.shape)} {data.dtype}, indices "
                            f"{tuple(indices.shape)} {indices.dtype}, updates {tuple(updates.shape)} {updates.dtype}")
    raxes = [te.reduce_axis((0, y), name=f"u{d}") for d, y in enumerate(ys)]
    rv = [r.var for r in raxes]

    def hit(i):
        cond = None
        for k in range(m):
            v = _op.cast("int32", indices(*([k] + rv)))
            size = _op.const(const_or_none(data.shape[k]), "int32")
            c = _op.select(v < _op.const(0, "int32"), v + size, v) == i[k]
            cond = c if cond is None else _op.logical_and(cond, c)
        return cond
    if mode == "update":
        flat = None
        for r, y in zip(rv, ys):
            flat = r if flat is None else flat * _op.const(y, "int32") + r
        last = te.compute(data.shape, lambda *i: te.max(_op.select(hit(i), flat, _op.const(-1, "int32")), axis=raxes),
                          name="T_scatter_nd_last")

        def f(*i):
            j, pos, stride = last(*i), [], 1
            for y in reversed(ys):
                pos.insert(0, (_op.max(j, _op.const(0, "int32")) // _op.const(stride, "int32")) % _op.const(y, "int32"))
                stride *= y
            return _op.select(j >= _op.const(0, "int32"), updates(*(pos + list(i[m:]))), data(*i))
        return te.compute(data.shape, f, name="T_scatter_nd", tag="scatter")
    reducer = {"add": te.sum, "mul": te.prod, "min": te.min, "max": te.max}[mode]
    ident = {"add": _op.const(0, data.dtype), "mul": _op.const(1, data.dtype), "min": _op.max_value(data.dtype),
             "max": _op.min_value(data.dtype)}[mode]
    acc = te.compute(data.shape, lambda *i: reducer(_op.select(hit(i), updates(*(rv + list(i[m:]))), ident),
                                                    axis=raxes), name="T_scatter_nd_acc")
    combine = {"add": _op.add, "mul": _op.mul, "min": _op.min, "max": _op.max}[mode]
    return te.compute(data.shape, lambda *i: combine(data(*i), acc(*i)), name="T_scatter_nd", tag="scatter")
