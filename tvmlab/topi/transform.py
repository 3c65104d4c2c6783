"""Injective operators that move data (tag ``injective``), spelled as in TVM's ``topi``.

    B = topi.reshape(A, (2, -1)); C = topi.transpose(B, (1, 0))
    parts = topi.split(A, 3, axis=1); D = topi.concatenate(parts, axis=1)
    E = topi.layout_transform(data, "NCHW", "NCHW8c")

and, as in TVM's ``topi.transform``, ``topi.matmul(a, b, transp_a, transp_b)``.
"""
from __future__ import annotations

import re

from .. import te
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.tensor import Tensor
from . import tag
from .utils import (OperatorError, check_tensor, const_or_none, normalize_axis, prod,
                    ravel_index, shape_str, simplify)
from .utils import unravel_index as _unravel
from .nn.dense import matmul as _nn_matmul


def _index_arg(op, v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        c = const_or_none(v) if v is not None else None
        if c is None:
            raise OperatorError(f"{op}: {what} must be an int, got {v!r}")
        return c
    return v


def reshape(a, newshape):
    """``a`` with shape ``newshape`` (same element count; one entry may be -1, inferred)."""
    check_tensor("reshape", a, "a")
    newshape = [newshape] if isinstance(newshape, int) else list(newshape)
    total = prod(a.shape)
    known = [const_or_none(x) for x in newshape]
    if sum(1 for x in known if x == -1) > 1:
        raise OperatorError(f"reshape: at most one dimension may be -1, got {tuple(newshape)}")
    if any(x is not None and x < -1 for x in known):
        raise OperatorError(f"reshape: dimensions must be >= 0 (or one -1), got {tuple(newshape)}")
    if -1 in known:
        t = const_or_none(total)
        rest = prod([x for x, k in zip(newshape, known) if k != -1])
        r = const_or_none(rest)
        if t is None or r is None:
            raise OperatorError(f"reshape: -1 needs constant shapes, got {shape_str(a)} -> {tuple(newshape)}")
        if r == 0 or t % r:
            raise OperatorError(f"reshape: cannot reshape {shape_str(a)} ({t} elements) into {tuple(newshape)}")
        newshape = [t // r if k == -1 else x for x, k in zip(newshape, known)]
    t, n = const_or_none(total), const_or_none(prod(newshape))
    if t is not None and n is not None and t != n:
        raise OperatorError(f"reshape: cannot reshape {shape_str(a)} ({t} elements) into {tuple(newshape)} "
                            f"({n} elements)")
    if not newshape:
        return te.compute((), lambda: a(*[0] * len(a.shape)), name="T_reshape", tag=tag.INJECTIVE)
    if n == 0:          # no elements: nothing is read
        return te.compute(tuple(newshape), lambda *i: a(*[0] * len(a.shape)), name="T_reshape", tag=tag.INJECTIVE)
    return te.compute(tuple(newshape), lambda *i: a(*_unravel(ravel_index(i, newshape), a.shape)),
                      name="T_reshape", tag=tag.INJECTIVE)


def transpose(a, axes=None):
    """``a`` with its axes permuted (reversed when ``axes`` is None), as ``numpy.transpose``."""
    check_tensor("transpose", a, "a")
    n = len(a.shape)
    axes = list(range(n))[::-1] if axes is None else [normalize_axis("transpose", x, n) for x in axes]
    if sorted(axes) != list(range(n)):
        raise OperatorError(f"transpose: axes must be a permutation of 0..{n - 1}, got {tuple(axes)}")
    inv = [axes.index(k) for k in range(n)]
    return te.compute(tuple(a.shape[x] for x in axes), lambda *i: a(*[i[inv[k]] for k in range(n)]),
                      name="T_transpose", tag=tag.INJECTIVE)


def squeeze(a, axis=None):
    """``a`` without its size-1 axes (all of them, or those in ``axis``)."""
    check_tensor("squeeze", a, "a")
    n = len(a.shape)
    if axis is None:
        drop = [k for k, s in enumerate(a.shape) if const_or_none(s) == 1]
    else:
        drop = [normalize_axis("squeeze", x, n) for x in ([axis] if isinstance(axis, int) else axis)]
        for k in drop:
            if const_or_none(a.shape[k]) != 1:
                raise OperatorError(f"squeeze: axis {k} of {shape_str(a)} has size {a.shape[k]}, not 1")
    keep = [k for k in range(n) if k not in drop]

    def f(*i):
        idx, it = [], iter(i)
        for k in range(n):
            idx.append(0 if k in drop else next(it))
        return a(*idx)
    return te.compute(tuple(a.shape[k] for k in keep), f, name="T_squeeze", tag=tag.INJECTIVE)


def expand_dims(a, axis, num_newaxis=1):
    """``a`` with ``num_newaxis`` size-1 axes inserted at ``axis`` (negative counts from the end)."""
    check_tensor("expand_dims", a, "a")
    n = len(a.shape)
    axis = normalize_axis("expand_dims", axis, n + 1)
    if not isinstance(num_newaxis, int) or num_newaxis < 0:
        raise OperatorError(f"expand_dims: num_newaxis must be an int >= 0, got {num_newaxis!r}")
    shape = tuple(a.shape[:axis]) + (1,) * num_newaxis + tuple(a.shape[axis:])
    return te.compute(shape, lambda *i: a(*(i[:axis] + i[axis + num_newaxis:])), name="T_expand_dims",
                      tag=tag.INJECTIVE)


def concatenate(a_tuple, axis=0):
    """The tensors of ``a_tuple`` joined along ``axis``."""
    ts = list(a_tuple)
    if not ts:
        raise OperatorError("concatenate: needs at least one tensor")
    for k, t in enumerate(ts):
        check_tensor("concatenate", t, f"tensor {k}")
    n = len(ts[0].shape)
    axis = normalize_axis("concatenate", axis, n)
    for k, t in enumerate(ts[1:], 1):
        bad = len(t.shape) != n or t.dtype != ts[0].dtype or any(
            d != axis and const_or_none(x) is not None and const_or_none(y) is not None
            and const_or_none(x) != const_or_none(y) for d, (x, y) in enumerate(zip(t.shape, ts[0].shape)))
        if bad:
            raise OperatorError(f"concatenate: tensor {k} is {shape_str(t)} but tensor 0 is {shape_str(ts[0])}; "
                                f"they must agree in dtype and every dimension but axis {axis}")
    offsets = [0]
    for t in ts:
        offsets.append(simplify(offsets[-1] + t.shape[axis]))
    shape = list(ts[0].shape)
    shape[axis] = offsets[-1]

    def f(*i):
        x = i[axis]
        val = None
        for k in range(len(ts) - 1, -1, -1):
            idx = list(i)
            idx[axis] = x - offsets[k] if k else x
            v = ts[k](*idx)
            val = v if val is None else _op.if_then_else(x < offsets[k + 1], v, val)
        return val
    return te.compute(tuple(shape), f, name="T_concat", tag=tag.INJECTIVE)


def stack(tensors, axis=0):
    """The tensors (of one shape) stacked along a new ``axis``."""
    ts = list(tensors)
    if not ts:
        raise OperatorError("stack: needs at least one tensor")
    return concatenate([expand_dims(t, axis) for t in ts], axis)


def split(ary, indices_or_sections, axis=0):
    """``ary`` cut along ``axis``: into ``indices_or_sections`` equal parts (an int), or at the given indices."""
    check_tensor("split", ary, "ary")
    axis = normalize_axis("split", axis, len(ary.shape))
    size = const_or_none(ary.shape[axis])
    if isinstance(indices_or_sections, int) and not isinstance(indices_or_sections, bool):
        sec = indices_or_sections
        if sec < 1 or size is None or size % sec:
            raise OperatorError(f"split: {shape_str(ary)} axis {axis} (size {ary.shape[axis]}) does not split "
                                f"into {sec} equal sections")
        cuts = [size // sec * k for k in range(1, sec)]
    else:
        cuts = [_index_arg("split", c, "each index") for c in indices_or_sections]
        if size is None or any(b < a for a, b in zip([0] + cuts, cuts + [size])) or (cuts and cuts[-1] > size):
            raise OperatorError(f"split: indices must be increasing within axis {axis} of {shape_str(ary)}, "
                                f"got {tuple(cuts)}")
    bounds = [0] + cuts + [size]
    outs = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        shape = list(ary.shape)
        shape[axis] = hi - lo
        outs.append(te.compute(tuple(shape), lambda *i, lo=lo: ary(*(i[:axis] + (i[axis] + lo,) + i[axis + 1:])),
                               name="T_split", tag=tag.INJECTIVE))
    return outs


def strided_slice(a, begin, end, strides=None, axes=None, slice_mode="end"):
    """``a[begin:end:strides]`` per axis (numpy rules: negative indices count from the end, clamped).

    ``begin``, ``end`` and ``strides`` may be 1-D integer tensors, known only at run time: the output
    dimensions are then symbolic (taken from the output array passed in)."""
    check_tensor("strided_slice", a, "a")
    if any(isinstance(v, Tensor) for v in (begin, end, strides)):
        from .reorder import dynamic_strided_slice
        return dynamic_strided_slice(a, begin, end, strides)
    n = len(a.shape)
    begin, end = list(begin), list(end)
    strides = [1] * len(begin) if strides is None else list(strides)
    axes = list(range(len(begin))) if axes is None else [normalize_axis("strided_slice", x, n) for x in axes]
    if not (len(begin) == len(end) == len(axes)) or len(strides) not in (len(begin), 1):
        raise OperatorError(f"strided_slice: begin, end, strides (and axes) need one entry per axis sliced, got "
                            f"{begin}, {end}, {strides}")
    if len(strides) == 1:
        strides = strides * len(begin)
    starts, steps, shape = [0] * n, [1] * n, list(a.shape)
    for k, ax in enumerate(axes):
        dim = const_or_none(a.shape[ax])
        if dim is None:
            raise OperatorError(f"strided_slice: axis {ax} of {shape_str(a)} is symbolic; it needs a constant")
        st = _index_arg("strided_slice", strides[k], "stride")
        if st == 0:
            raise OperatorError(f"strided_slice: stride of axis {ax} is 0")
        b = _index_arg("strided_slice", begin[k], "begin")
        e = end[k]
        if slice_mode == "size":
            e = dim if e is None or e == -1 else b + _index_arg("strided_slice", e, "size")
            st = 1
        e = (dim if st > 0 else -dim - 1) if e is None else _index_arg("strided_slice", e, "end")
        sl = slice(b, e, st).indices(dim)
        starts[ax], steps[ax] = sl[0], sl[2]
        shape[ax] = len(range(*sl))
    return te.compute(tuple(shape), lambda *i: a(*[starts[k] + i[k] * steps[k] if steps[k] != 1 or starts[k]
                                                   else i[k] for k in range(n)]),
                      name="T_strided_slice", tag=tag.INJECTIVE)


def _clamp_index(ix, size, mode):
    if mode == "clip":
        return _op.min(_op.max(ix, 0), size - 1)
    if mode == "wrap":
        return _op.floormod(ix, size)
    return ix


def take(a, indices, axis=None, batch_dims=0, mode="clip"):
    """Elements of ``a`` at ``indices`` (a tensor or ints) along ``axis`` (of the flattened ``a`` when None).

    ``mode``: "clip" clamps indices into range, "wrap" counts negative ones from the end, "fast" trusts them.
    ``batch_dims`` other than 0 is not supported."""
    check_tensor("take", a, "a")
    if batch_dims != 0:
        raise OperatorError(f"take: batch_dims must be 0 (batched gathers are not supported), got {batch_dims!r}")
    if mode not in ("clip", "wrap", "fast"):
        raise OperatorError(f"take: mode must be 'clip', 'wrap' or 'fast', got {mode!r}")
    const_idx = None
    if not isinstance(indices, Tensor):
        const_idx = indices
        ish = () if isinstance(indices, int) else (len(list(indices)),)
    else:
        if not dt.is_int(indices.dtype):
            raise OperatorError(f"take: indices must be integers, got {shape_str(indices)}")
        ish = tuple(indices.shape)

    def index_at(i):
        if const_idx is None:
            # int64 indices stay int64 (they may address past 2**31); narrower ones index as int32
            return indices(*i) if indices.dtype in ("int32", "int64") else _op.cast("int32", indices(*i))
        if isinstance(const_idx, int):
            return _op.const(const_idx, "int32")
        vals = list(const_idx)
        expr = _op.const(vals[-1], "int32")
        for k in range(len(vals) - 2, -1, -1):
            expr = _op.if_then_else(i[0] == k, _op.const(vals[k], "int32"), expr)
        return expr
    if axis is None:
        total = prod(a.shape)
        return te.compute(ish, lambda *i: a(*_unravel(_clamp_index(index_at(i), total, mode), a.shape)),
                          name="T_take", tag=tag.INJECTIVE)
    axis = normalize_axis("take", axis, len(a.shape))
    k = len(ish)
    shape = tuple(a.shape[:axis]) + ish + tuple(a.shape[axis + 1:])
    return te.compute(shape, lambda *i: a(*(i[:axis] + (_clamp_index(index_at(i[axis:axis + k]),
                                                                     a.shape[axis], mode),)
                                            + i[axis + k:])), name="T_take", tag=tag.INJECTIVE)


def gather(data, axis, indices):
    """``out[i][j][k] = data[i][indices[i][j][k]][k]`` for axis 1 (``numpy.take_along_axis``);
    negative indices count from the end."""
    check_tensor("gather", data, "data")
    check_tensor("gather", indices, "indices", len(data.shape))
    axis = normalize_axis("gather", axis, len(data.shape))

    def f(*i):
        ix = indices(*i)
        ix = _op.cast("int32", ix) if ix.dtype != "int32" else ix
        return data(*(i[:axis] + (_op.floormod(ix, data.shape[axis]),) + i[axis + 1:]))
    return te.compute(indices.shape, f, name="T_gather", tag=tag.INJECTIVE)


def tile(a, reps):
    """``a`` repeated ``reps`` times along each axis (as ``numpy.tile``)."""
    check_tensor("tile", a, "a")
    reps = [_index_arg("tile", r, "each repeat") for r in reps]
    if any(r < 1 for r in reps):
        raise OperatorError(f"tile: repeats must be >= 1, got {tuple(reps)}")
    n = max(len(a.shape), len(reps))
    reps = [1] * (n - len(reps)) + reps
    ashape = [1] * (n - len(a.shape)) + list(a.shape)
    lead = n - len(a.shape)
    shape = tuple(s * r if r != 1 else s for s, r in zip(ashape, reps))
    if any(const_or_none(s) == 0 for s in ashape):      # no elements: nothing is read
        return te.compute(shape, lambda *i: a(*[0] * len(a.shape)), name="T_tile", tag=tag.INJECTIVE)
    return te.compute(shape, lambda *i: a(*[_op.floormod(i[k], ashape[k]) if reps[k] != 1 else i[k]
                                            for k in range(lead, n)]), name="T_tile", tag=tag.INJECTIVE)


def repeat(a, repeats, axis):
    """Each element of ``a`` repeated ``repeats`` times along ``axis`` (as ``numpy.repeat``)."""
    check_tensor("repeat", a, "a")
    axis = normalize_axis("repeat", axis, len(a.shape))
    shape = list(a.shape)
    shape[axis] = shape[axis] * repeats
    return te.compute(tuple(shape), lambda *i: a(*(i[:axis] + (i[axis] // repeats,) + i[axis + 1:])),
                      name="T_repeat", tag=tag.INJECTIVE)


def where(condition, x, y):
    """``x`` where ``condition`` holds, else ``y`` (all broadcast together)."""
    from .broadcast import broadcast_index, broadcast_shape
    for nm, t in (("condition", condition), ("x", x), ("y", y)):
        check_tensor("where", t, nm)
    if x.dtype != y.dtype:
        raise OperatorError(f"where: x is {shape_str(x)} but y is {shape_str(y)}; they need one dtype")
    shape = broadcast_shape("where", broadcast_shape("where", condition.shape, x.shape), y.shape)

    def f(*i):
        c = condition(*broadcast_index(condition, i))
        c = c if dt.is_bool(c.dtype) else c != _op.const(0, c.dtype)
        return _op.select(c, x(*broadcast_index(x, i)), y(*broadcast_index(y, i)))
    return te.compute(shape, f, name="T_where", tag=tag.BROADCAST)


_LAYOUT = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout):
    """``"NCHW8c"`` -> [("N", None), ("C", None), ("H", None), ("W", None), ("c", 8)]."""
    if not isinstance(layout, str) or not layout or _LAYOUT.sub("", layout):
        raise OperatorError(f"layout_transform: cannot read layout {layout!r} (e.g. 'NCHW', 'NCHW8c')")
    axes = []
    for num, letter in _LAYOUT.findall(layout):
        if letter.islower() != bool(num) or (num and int(num) < 1):
            raise OperatorError(f"layout_transform: in {layout!r}, a sub-axis is a factor and a lower-case "
                                f"letter (8c), a primal axis an upper-case letter")
        axes.append((letter, int(num) if num else None))
    letters = [x for x, _ in axes]
    if len(set(letters)) != len(letters) or any(x.upper() not in letters for x in letters if x.islower()):
        raise OperatorError(f"layout_transform: layout {layout!r} repeats an axis or splits one it lacks")
    return axes


def layout_transform(data, src_layout, dst_layout):
    """``data`` in layout ``src_layout`` (e.g. "NCHW") rewritten in ``dst_layout`` (e.g. "NCHW16c").

    Blocks past the end of a dimension the factor does not divide are zero."""
    check_tensor("layout_transform", data, "data")
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    if len(src) != len(data.shape):
        raise OperatorError(f"layout_transform: {src_layout!r} has {len(src)} axes but data is {shape_str(data)}")
    if sorted(x.upper() for x, f in src if f is None) != sorted(x.upper() for x, f in dst if f is None):
        raise OperatorError(f"layout_transform: {src_layout!r} and {dst_layout!r} have different primal axes")
    src_factor = {x.upper(): f for x, f in src if f is not None}
    dst_factor = {x.upper(): f for x, f in dst if f is not None}
    size = {}
    for (x, f), s in zip(src, data.shape):
        if f is None:
            size[x] = s * src_factor[x] if x in src_factor else s
        elif const_or_none(s) != f:
            raise OperatorError(f"layout_transform: axis {f}{x} of {src_layout!r} has size {s} in {shape_str(data)}")
    shape = []
    for x, f in dst:
        if f is not None:
            shape.append(f)
        elif x in dst_factor:
            shape.append((size[x] + dst_factor[x] - 1) // dst_factor[x])
        else:
            shape.append(size[x])
    padded = [x for x in dst_factor if const_or_none(size[x]) is None or const_or_none(size[x]) % dst_factor[x]]

    def f(*i):
        pos = {x: k for k, (x, _) in enumerate(dst)}
        coord = {}
        for x, fct in dst:
            if fct is None:
                coord[x] = i[pos[x]] * dst_factor[x] + i[pos[x.lower()]] if x in dst_factor else i[pos[x]]
        idx = []
        for x, fct in src:
            up = x.upper()
            if fct is not None:
                idx.append(coord[up] % fct)
            elif up in src_factor:
                idx.append(coord[up] // src_factor[up])
            else:
                idx.append(coord[up])
        v = data(*idx)
        if padded:
            cond = _op.all(*[coord[x] < size[x] for x in padded])
            return _op.if_then_else(cond, v, _op.const(0, data.dtype))
        return v
    return te.compute(tuple(shape), f, name="T_layout_trans", tag=tag.INJECTIVE,
                      attrs={"src_layout": src_layout, "dst_layout": dst_layout})


def matmul(a, b, transp_a=False, transp_b=False, block=None, rows=0, name="C", target=None, pack_b=None):
    """``op(a) @ op(b)`` for 2-D tensors (TVM's ``topi.matmul``): ``topi.nn.matmul(a, b, blocked=True)``, B
    packed into column panels for ``topi.schedule_matmul`` (see ``topi.nn.matmul`` for ``block``, ``rows``
    and ``pack_b``).  Transposed operands are read in place."""
    return _nn_matmul(a, b, transpose_a=transp_a, transpose_b=transp_b, blocked=True, pack_b=pack_b, block=block,
                      rows=rows, name=name, target=target)


def full(shape, dtype, fill_value):
    """A tensor of ``shape`` filled with ``fill_value``."""
    value = _op.const(fill_value, dt.canonical(dtype))
    return te.compute(tuple(shape), lambda *i: value, name="T_full", tag=tag.ELEMWISE)


def full_like(x, fill_value):
    """A tensor shaped and typed as ``x``, filled with ``fill_value``."""
    check_tensor("full_like", x, "x")
    value = _op.const(fill_value, x.dtype)
    return te.compute(x.shape, lambda *i: value, name="T_full_like", tag=tag.ELEMWISE)


# TVM's topi.transform holds these too
from .creation import arange, expand_like, ndarray_size, one_hot, shape, sparse_to_dense, tensordot  # noqa: E402,F401
from .indexing import adv_index, gather_nd, matrix_set_diag, unravel_index  # noqa: E402,F401
from .math import reinterpret  # noqa: E402,F401
from .reorder import flip, reverse_sequence, sequence_mask, strided_set  # noqa: E402,F401
