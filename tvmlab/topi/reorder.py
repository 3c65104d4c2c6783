"""Operators that reverse, mask or slice with positions known only at run time, spelled as TVM's ``topi``:
``flip``, ``reverse_sequence``, ``sequence_mask``, ``strided_slice`` with tensor bounds, ``strided_set``.

    B = topi.flip(A, axis=1)
    C = topi.reverse_sequence(A, lengths, seq_axis=1, batch_axis=0)
    D = topi.strided_set(A, V, begin, end, strides)      # begin / end / strides: 1-D int tensors
"""
from __future__ import annotations

from .. import te
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.tensor import Tensor
from . import tag
from .utils import OperatorError, check_tensor, normalize_axis, shape_str


def flip(a, axis=0):
    """``a`` reversed along ``axis`` (``numpy.flip``)."""
    check_tensor("flip", a, "a")
    axis = normalize_axis("flip", axis, len(a.shape))
    n = a.shape[axis]
    return te.compute(a.shape, lambda *i: a(*(i[:axis] + (n - 1 - i[axis],) + i[axis + 1:])),
                      name="T_reverse", tag=tag.INJECTIVE)


def _int32(v):
    return v if v.dtype == "int32" else _op.cast("int32", v)


def reverse_sequence(a, seq_lengths, seq_axis=1, batch_axis=0):
    """For each batch entry ``b``, the first ``seq_lengths[b]`` elements along ``seq_axis`` reversed, the
    rest kept (a length of 0 or less keeps all; one past the axis reverses all)."""
    check_tensor("reverse_sequence", a, "a")
    check_tensor("reverse_sequence", seq_lengths, "seq_lengths", 1)
    n = len(a.shape)
    seq_axis = normalize_axis("reverse_sequence", seq_axis, n)
    batch_axis = normalize_axis("reverse_sequence", batch_axis, n)
    if seq_axis == batch_axis:
        raise OperatorError(f"reverse_sequence: seq_axis and batch_axis are both {seq_axis}")
    from .utils import const_or_none
    nb, nl = const_or_none(a.shape[batch_axis]), const_or_none(seq_lengths.shape[0])
    if nb is not None and nl is not None and nb != nl:
        raise OperatorError(f"For reverse_sequnece seq_lengths size should match with dimension of batch axis, "
                            f"but got dimension of batch_axis = {nb}, and seq_length size = {nl}")
    size = a.shape[seq_axis]

    def f(*i):
        length = _op.min(_int32(seq_lengths(i[batch_axis])), size)
        pos = i[seq_axis]
        src = _op.select(pos < length, length - 1 - pos, pos)
        return a(*(i[:seq_axis] + (src,) + i[seq_axis + 1:]))
    return te.compute(a.shape, f, name="T_reverse_sequence", tag=tag.INJECTIVE)


def sequence_mask(data, valid_length, mask_value=0, axis=0):
    """``data`` with the positions past each sequence's valid length set to ``mask_value``; ``axis`` (0 or 1)
    is the sequence axis and the other of the two the batch axis, which ``valid_length`` (1-D) indexes."""
    check_tensor("sequence_mask", data, "data")
    check_tensor("sequence_mask", valid_length, "valid_length", 1)
    if axis not in (0, 1) or len(data.shape) < 2:
        raise OperatorError(f"sequence_mask: axis must be 0 or 1 of a tensor of rank >= 2, got axis {axis} of "
                            f"{shape_str(data)}")
    batch = 1 - axis
    fill = _op.const(mask_value, data.dtype)
    return te.compute(data.shape, lambda *i: _op.select(i[axis] < _int32(valid_length(i[batch])), data(*i), fill),
                      name="T_sequence_mask", tag=tag.INJECTIVE)


def _normalized(v, dim, step):
    """A begin or end position ``v`` (may be negative) clamped as numpy does for a slice of step ``step``."""
    v = _op.select(v < 0, v + dim, v)
    lo = _op.select(step < 0, _op.const(-1, "int32"), _op.const(0, "int32"))
    hi = _op.select(step < 0, dim - 1, dim)
    return _op.max(_op.min(v, hi), lo)


def _bound_vectors(op, a, begin, end, strides):
    """Per-axis (begin, end, step) expressions from 1-D integer tensors (or lists) whose entries cover the
    first axes; an axis past an entry list is whole, with step 1 past the strides."""
    from .utils import const_or_none
    n = len(a.shape)
    lens = {}
    for name, v in (("begin", begin), ("end", end), ("strides", strides)):
        if v is None:
            lens[name] = 0
            continue
        if isinstance(v, Tensor):
            check_tensor(op, v, name, 1)
            if not dt.is_int(v.dtype):
                raise OperatorError(f"{op}: {name} must be an integer tensor, got {shape_str(v)}")
            lens[name] = const_or_none(v.shape[0])
        else:
            lens[name] = len(list(v))
        if lens[name] is None or lens[name] > n:
            raise OperatorError(f"{op}: {name} needs a constant length of at most {n} (the axes of "
                                f"{shape_str(a)}), got {lens[name]}")

    def entry(v, name, k):
        if v is None or k >= lens[name]:
            return None
        if isinstance(v, Tensor):
            return _int32(v(k))
        return _op.const(int(list(v)[k]), "int32")
    out = []
    for k in range(n):
        dim = _int32(_op.convert(a.shape[k]))
        step = entry(strides, "strides", k)
        step = _op.const(1, "int32") if step is None else step
        b, e = entry(begin, "begin", k), entry(end, "end", k)
        b = _op.select(step < 0, dim - 1, _op.const(0, "int32")) if b is None else _normalized(b, dim, step)
        e = _op.select(step < 0, _op.const(-1, "int32"), dim) if e is None else _normalized(e, dim, step)
        out.append((b, e, step))
    return out


def dynamic_strided_slice(a, begin, end, strides=None):
    """``a[begin:end:strides]`` with bounds given as 1-D integer tensors read at run time; each output
    dimension is a symbolic size, taken from the output array the caller passes."""
    check_tensor("strided_slice", a, "a")
    bounds = _bound_vectors("strided_slice", a, begin, end, strides)
    shape = tuple(te.size_var(f"T_strided_slice_dim{k}") for k in range(len(a.shape)))
    return te.compute(shape, lambda *i: a(*[b + i[k] * st for k, (b, _, st) in enumerate(bounds)]),
                      name="T_strided_slice_dynamic", tag=tag.INJECTIVE)


def strided_set(a, v, begin, end, strides=None):
    """``a`` with the slice ``a[begin:end:strides]`` replaced by ``v`` (bounds: 1-D integer tensors read at
    run time; fewer entries than axes leave the rest whole; one stride applies to the axes bounded)."""
    check_tensor("strided_set", a, "a")
    check_tensor("strided_set", v, "v", len(a.shape))
    if v.dtype != a.dtype:
        raise OperatorError(f"strided_set: v is {shape_str(v)} but a is {shape_str(a)}; they need one dtype")
    bounds = _bound_vectors("strided_set", a, begin, end, strides)

    def f(*i):
        inside, src = None, []
        for k, (b, e, st) in enumerate(bounds):
            off = i[k] - b
            in_range = _op.select(st > 0, _op.logical_and(i[k] >= b, i[k] < e),
                                  _op.logical_and(i[k] <= b, i[k] > e))
            on_grid = _op.logical_and(in_range, _op.floormod(off, st) == 0)
            inside = on_grid if inside is None else _op.logical_and(inside, on_grid)
            src.append(_op.max(_op.min(_op.floordiv(off, st), _int32(_op.convert(v.shape[k])) - 1),
                               _op.const(0, "int32")))
        return _op.select(inside, v(*src), a(*i))
    return te.compute(a.shape, f, name="T_strided_set", tag=tag.INJECTIVE)
