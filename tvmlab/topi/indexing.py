"""``topi.gather_nd``: rows of ``data`` picked by index tuples (TVM's layout: the tuple along indices' axis 0)."""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import op as _op
from .utils import OperatorError, check_tensor, const_or_none


def gather_nd(a, indices, batch_dims=0):
    """``out[b.., y.., x..] = a[b.., indices[0, b.., y..], .., indices[M-1, b.., y..], x..]`` for indices of
    shape (M, B.., Y..); negative indices count from the end of their axis (float indices are truncated,
    as TVM reads them)."""
    data = a
    check_tensor("gather_nd", data, "a")
    check_tensor("gather_nd", indices, "indices")
    if not (dt.is_int(indices.dtype) or dt.is_float(indices.dtype)):
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


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` (0-d or 1-d) in a tensor of ``shape`` (a 1-D tensor read at run
    time): shape (len(shape),) or (len(shape), len(indices)), as ``numpy.unravel_index`` stacked."""
    check_tensor("unravel_index", indices, "indices")
    check_tensor("unravel_index", shape, "shape", 1)
    if len(indices.shape) > 1 or not dt.is_int(indices.dtype) or not dt.is_int(shape.dtype):
        raise OperatorError(f"unravel_index: needs 0-d or 1-d integer indices and a 1-D integer shape, got "
                            f"{tuple(indices.shape)} {indices.dtype} and {tuple(shape.shape)} {shape.dtype}")
    rank = const_or_none(shape.shape[0])
    if rank is None:
        raise OperatorError("unravel_index: the shape tensor needs a constant length")
    out_shape = (rank,) + tuple(indices.shape)

    def f(j, *i):
        flat = _op.cast("int64", indices(*i))
        inner = _op.const(1, "int64")       # the product of shape[j+1:], read at run time
        coords = []
        for d in range(rank - 1, -1, -1):
            size = _op.cast("int64", shape(d))
            coords.append((d, _op.floormod(_op.floordiv(flat, inner), size)))
            inner = inner * size
        out = coords[0][1]
        for d, c in coords[1:]:
            out = _op.select(j == d, c, out)
        return _op.cast(indices.dtype, out)
    return te.compute(out_shape, f, name="T_unravel_index", tag="injective")


def adv_index(data, indices):
    """numpy's advanced indexing ``data[indices[0], indices[1], ...]``: the index tensors broadcast together
    and pick along data's first ``len(indices)`` axes; the remaining axes follow."""
    from .broadcast import broadcast_index, broadcast_shape
    check_tensor("adv_index", data, "data")
    indices = list(indices)
    if not indices or len(indices) > len(data.shape):
        raise OperatorError(f"adv_index: needs 1 to {len(data.shape)} index tensors, got {len(indices)}")
    bshape = ()
    for k, t in enumerate(indices):
        check_tensor("adv_index", t, f"indices[{k}]")
        if not dt.is_int(t.dtype):
            raise OperatorError(f"adv_index: indices[{k}] must be integers, got {t.dtype}")
        bshape = broadcast_shape("adv_index", bshape, t.shape)
    nb = len(bshape)
    rest = tuple(data.shape[len(indices):])

    def f(*i):
        b, r = i[:nb], i[nb:]
        idx = [_op.cast("int32", t(*broadcast_index(t, b))) for t in indices]
        return data(*(idx + list(r)))
    return te.compute(tuple(bshape) + rest, f, name="T_adv_index", tag="injective")


def matrix_set_diag(data, diagonal, k=0, align="RIGHT_LEFT"):
    """``data`` (.., rows, cols) with diagonals replaced by ``diagonal``: one diagonal ``k`` (0 main, > 0
    above) from diagonal (.., len), or the band ``k = (lo, hi)`` from diagonal (.., hi - lo + 1, len), row
    ``hi - d`` holding diagonal d; ``align`` ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT": for
    diagonals above, then below the main one) says which end a short diagonal is flush with."""
    check_tensor("matrix_set_diag", data, "data")
    check_tensor("matrix_set_diag", diagonal, "diagonal")
    if align not in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        raise OperatorError(f"matrix_set_diag: align must be RIGHT_LEFT, LEFT_RIGHT, LEFT_LEFT or RIGHT_RIGHT, "
                            f"got {align!r}")
    if diagonal.dtype != data.dtype or len(data.shape) < 2:
        raise OperatorError(f"matrix_set_diag: needs data of rank >= 2 and a diagonal of its dtype, got "
                            f"{tuple(data.shape)} {data.dtype} and {tuple(diagonal.shape)} {diagonal.dtype}")
    lo, hi = (k, k) if isinstance(k, int) else (k[0], k[-1])
    band = lo != hi
    rows, cols = const_or_none(data.shape[-2]), const_or_none(data.shape[-1])
    width = const_or_none(diagonal.shape[-1])
    if rows is None or cols is None or width is None or lo > hi:
        raise OperatorError(f"matrix_set_diag: needs constant matrix and diagonal sizes and k[0] <= k[1], got "
                            f"{tuple(data.shape)}, {tuple(diagonal.shape)}, k={k}")

    def f(*i):
        lead, r, c = i[:-2], i[-2], i[-1]
        d = c - r                                   # which diagonal this element is on
        along = _op.min(r, c)                       # its position along that diagonal
        if not band:
            return _op.select(d == lo, diagonal(*(lead + (along,))), data(*i))
        length = _op.min(cols - _op.max(d, 0), rows + _op.min(d, 0))
        right = _op.select(d >= 0, _op.const(align.startswith("RIGHT"), "bool"),
                           _op.const(align.endswith("RIGHT"), "bool"))
        offset = _op.select(right, width - length, _op.const(0, "int32"))
        row = _op.max(_op.min(hi - d, hi - lo), 0)
        pos = _op.max(_op.min(along + offset, width - 1), 0)
        inside = _op.logical_and(d >= lo, d <= hi)
        return _op.select(inside, diagonal(*(lead + (row, pos))), data(*i))
    return te.compute(data.shape, f, name="T_matrix_set_diag", tag="injective")
