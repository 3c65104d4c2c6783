"""Operators that make tensors from shapes and values, spelled as TVM's ``topi``: ``arange``, ``one_hot``,
``shape``, ``ndarray_size``, ``expand_like``, ``sparse_to_dense``, ``tensordot``.

    R = topi.arange(1, 20, 1.5)                      # float32 [1, 2.5, ..., 19]
    H = topi.one_hot(labels, tvm.tir.const(1.0), tvm.tir.const(0.0), depth=10, axis=-1, dtype="float32")
"""
from __future__ import annotations

import math
import numbers

from .. import te
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from ..ir.tensor import Tensor
from . import tag
from .utils import OperatorError, check_tensor, const_or_none, normalize_axis, prod, shape_str


def _number(op, what, v):
    if isinstance(v, numbers.Number) and not isinstance(v, bool):
        return v
    if isinstance(v, (E.IntImm, E.FloatImm)):
        return v.value
    raise OperatorError(f"{op}: {what} must be a constant number, got {v!r}")


def arange(start, stop=None, step=1, dtype="float32"):
    """``numpy.arange(start, stop, step)`` as a 1-D tensor of ``dtype`` (``arange(n)`` counts from 0)."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number("arange", w, v) for w, v in (("start", start), ("stop", stop), ("step", step)))
    if step == 0:
        raise OperatorError("arange: step must not be 0")
    n = max(0, int(math.ceil((stop - start) / step)))
    dtype = dt.canonical(dtype)
    if dt.is_float(dtype):
        first, inc = _op.const(float(start), dtype), _op.const(float(step), dtype)
        return te.compute((n,), lambda i: first + _op.cast(dtype, i) * inc, name="T_arange", tag=tag.ELEMWISE)
    if start != int(start) or step != int(step):
        raise OperatorError(f"arange: an integer dtype ({dtype}) needs integer start and step, got {start}, {step}")
    return te.compute((n,), lambda i: _op.cast(dtype, _op.const(int(start), "int64") + _op.cast("int64", i) *
                                                 _op.const(int(step), "int64")), name="T_arange", tag=tag.ELEMWISE)


def one_hot(indices, on_value, off_value, depth, axis, dtype):
    """A tensor of ``dtype`` with a new axis of ``depth`` at ``axis`` (-1: last): ``on_value`` where the
    position along it equals the index, ``off_value`` elsewhere."""
    check_tensor("one_hot", indices, "indices")
    if not dt.is_int(indices.dtype):
        raise OperatorError(f"one_hot: indices must be integers, got {shape_str(indices)}")
    depth = const_or_none(depth)
    if depth is None or depth < 1:
        raise OperatorError(f"one_hot: depth must be a constant >= 1, got {depth!r}")
    n = len(indices.shape)
    axis = n if axis == -1 else normalize_axis("one_hot", axis, n + 1)
    dtype = dt.canonical(dtype)
    on, off = (_op.cast(dtype, _op.convert(v)) for v in (on_value, off_value))
    shape = tuple(indices.shape[:axis]) + (depth,) + tuple(indices.shape[axis:])

    def f(*i):
        idx = indices(*(i[:axis] + i[axis + 1:]))
        return _op.select(_op.cast("int32", idx) == i[axis], on, off)
    return te.compute(shape, f, name="T_one_hot", tag=tag.INJECTIVE)


def shape(array, dtype="int32"):
    """The shape of ``array`` as a 1-D tensor of ``dtype``."""
    check_tensor("shape", array, "array")
    dims = [_op.cast(dt.canonical(dtype), _op.convert(d)) for d in array.shape]

    def f(i):
        out = dims[-1]
        for k in range(len(dims) - 2, -1, -1):
            out = _op.select(i == k, dims[k], out)
        return out
    if not dims:
        raise OperatorError("shape: a 0-d tensor has an empty shape; there is nothing to return")
    return te.compute((len(dims),), f, name="T_shape", tag=tag.ELEMWISE)


def ndarray_size(array, dtype="int32"):
    """The number of elements of ``array``, as a 0-d tensor of ``dtype``."""
    check_tensor("ndarray_size", array, "array")
    total = prod(array.shape) if array.shape else 1
    return te.compute((), lambda: _op.cast(dt.canonical(dtype), _op.convert(total)), name="T_ndarray_size",
                      tag=tag.ELEMWISE)


def expand_like(a, shape_like, axis):
    """``a`` broadcast to the shape of ``shape_like``, which has a's axes plus new ones at ``axis``
    (positions in the output)."""
    check_tensor("expand_like", a, "a")
    check_tensor("expand_like", shape_like, "shape_like")
    odim = len(shape_like.shape)
    axes = sorted(normalize_axis("expand_like", x, odim) for x in axis)
    if len(a.shape) + len(axes) != odim:
        raise OperatorError(f"expand_like: {shape_str(a)} with {len(axes)} new axes does not have the rank of "
                            f"{shape_str(shape_like)}")
    keep = [k for k in range(odim) if k not in axes]
    return te.compute(shape_like.shape, lambda *i: a(*[i[k] for k in keep]), name="T_expand_like",
                      tag=tag.BROADCAST)


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0):
    """A dense tensor of ``output_shape``: ``sparse_values`` at ``sparse_indices`` (0-d: one position of a
    1-D output, 1-D: positions of a 1-D output, 2-D (n, rank): index tuples), ``default_value`` elsewhere;
    a position given twice takes the later value."""
    check_tensor("sparse_to_dense", sparse_indices, "sparse_indices")
    check_tensor("sparse_to_dense", sparse_values, "sparse_values")
    ish, vsh = [const_or_none(d) for d in sparse_indices.shape], [const_or_none(d) for d in sparse_values.shape]
    if len(ish) > 2 or len(vsh) > 1 or not dt.is_int(sparse_indices.dtype):
        raise OperatorError(f"sparse_to_dense: needs integer indices of rank <= 2 and values of rank <= 1, got "
                            f"{shape_str(sparse_indices)} and {shape_str(sparse_values)}")
    out_shape = tuple(int(_number("sparse_to_dense", "output_shape", d)) for d in output_shape)
    count = ish[0] if ish else 1
    rank = ish[1] if len(ish) == 2 else 1
    if rank != len(out_shape) or (vsh and vsh[0] != count):
        raise OperatorError(f"sparse_to_dense: {count} index tuple(s) of rank {rank} and {shape_str(sparse_values)} "
                            f"values do not fill a tensor of shape {out_shape}")
    dtype = sparse_values.dtype
    if isinstance(default_value, Tensor):
        default = default_value(*[0] * len(default_value.shape))
    else:
        default = _op.const(0 if default_value is None else default_value, dtype)

    def index(k, j):
        if not ish:
            return sparse_indices()
        return sparse_indices(k) if len(ish) == 1 else sparse_indices(k, j)

    k = te.reduce_axis((0, count), name="k")

    def last(*i):
        hit = None
        for j in range(rank):
            c = _op.cast("int32", index(k, j)) == i[j]
            hit = c if hit is None else _op.logical_and(hit, c)
        return te.max(_op.select(hit, k.var, _op.const(-1, "int32")), axis=k)
    found = te.compute(out_shape, last, name="T_sparse_to_dense_pos", tag=tag.COMM_REDUCE)

    def value(*i):
        pos = found(*i)
        v = sparse_values() if not vsh else sparse_values(_op.max(pos, _op.const(0, "int32")))
        return _op.select(pos >= 0, v, _op.cast(dtype, default))
    return te.compute(out_shape, value, name="T_sparse_to_dense", tag=tag.INJECTIVE)


def tensordot(a, b, axes):
    """``numpy.tensordot(a, b, axes)``: ``axes`` an int (a's last and b's first that many axes) or two
    lists of axes summed over."""
    check_tensor("tensordot", a, "a")
    check_tensor("tensordot", b, "b")
    if isinstance(axes, int):
        if not 0 <= axes <= min(len(a.shape), len(b.shape)):
            raise OperatorError(f"tensordot: cannot sum {axes} axes of {shape_str(a)} and {shape_str(b)}")
        ax_a, ax_b = list(range(len(a.shape) - axes, len(a.shape))), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
        ax_a = [normalize_axis("tensordot", x, len(a.shape)) for x in ax_a]
        ax_b = [normalize_axis("tensordot", x, len(b.shape)) for x in ax_b]
    if len(ax_a) != len(ax_b) or any(const_or_none(a.shape[x]) != const_or_none(b.shape[y])
                                     for x, y in zip(ax_a, ax_b)):
        raise OperatorError(f"tensordot: axes {ax_a} of {shape_str(a)} and {ax_b} of {shape_str(b)} do not match")
    if a.dtype != b.dtype:
        raise OperatorError(f"tensordot: {shape_str(a)} and {shape_str(b)} need one dtype")
    free_a = [k for k in range(len(a.shape)) if k not in ax_a]
    free_b = [k for k in range(len(b.shape)) if k not in ax_b]
    ks = [te.reduce_axis((0, a.shape[x]), name=f"k{n}") for n, x in enumerate(ax_a)]
    out_shape = tuple(a.shape[k] for k in free_a) + tuple(b.shape[k] for k in free_b)

    def f(*i):
        ia, ib = [None] * len(a.shape), [None] * len(b.shape)
        for n, k in enumerate(free_a):
            ia[k] = i[n]
        for n, k in enumerate(free_b):
            ib[k] = i[len(free_a) + n]
        for r, x, y in zip(ks, ax_a, ax_b):
            ia[x], ib[y] = r, r
        prod_ = a(*ia) * b(*ib)
        return te.sum(prod_, axis=ks) if ks else prod_
    return te.compute(out_shape, f, name="T_tensordot", tag=tag.COMM_REDUCE if ks else tag.BROADCAST)


__all__ = ["arange", "one_hot", "shape", "ndarray_size", "expand_like", "sparse_to_dense", "tensordot"]
