"""Arithmetic on whole tensors: ``A + B``, ``A * 2`` make element-wise computes.

As in TVM's te (which routes these operators to topi's broadcast ops), shapes
broadcast numpy-style from the right: a dimension of constant extent 1 stretches
to the other operand's; a scalar (number or expression) applies to every
element.  Symbolic dimensions must be the same expression.
"""
from __future__ import annotations

from ..errors import DSLError
from . import op as _op
from .expr import IntImm, Var
from .tensor import ComputeOp, IterVar, Range

# operator -> (TVM's op name, builder on two scalar expressions)
OPS = {
    "add": ("T_add", _op.add),
    "subtract": ("T_subtract", _op.sub),
    "multiply": ("T_multiply", _op.mul),
    "divide": ("T_divide", _op.true_div),
    "floor_divide": ("T_floor_divide", _op.floordiv),
    "floor_mod": ("T_floor_mod", _op.floormod),
}


def _is_one(d):
    return isinstance(d, IntImm) and d.value == 1


def _same(a, b):
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    from .structural import same_value
    return same_value(a, b)


def broadcast_shape(sa, sb, what):
    """The shape ``sa`` and ``sb`` broadcast to, or DSLError naming the mismatching dimension."""
    out = []
    n = max(len(sa), len(sb))
    for k in range(1, n + 1):
        da = sa[-k] if k <= len(sa) else None
        db = sb[-k] if k <= len(sb) else None
        if da is None or _is_one(da):
            out.append(db if db is not None else da)
        elif db is None or _is_one(db) or _same(da, db):
            out.append(da)
        else:
            raise DSLError(f"{what}: shapes {tuple(sa)} and {tuple(sb)} do not broadcast "
                           f"(dimension {n - k}: {da} vs {db})")
    return tuple(reversed(out))


def _index(t, idx):
    """Read tensor ``t`` at the trailing ``idx`` of the output index, 0 where its dimension is 1."""
    sub = idx[len(idx) - len(t.shape):] if t.shape else ()
    return t(*[_op.const(0, i.dtype) if _is_one(d) else i for d, i in zip(t.shape, sub)])


def binary(opname, a, b):
    """``a <op> b`` where a and/or b are tensors (the other may be a scalar)."""
    from .tensor import Tensor
    name, fn = OPS[opname]
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    shape = broadcast_shape(a.shape if ta else (), b.shape if tb else (), name)
    axis = tuple(IterVar(Range(_op.const(0, s.dtype), s), Var(f"ax{k}", s.dtype), IterVar.DATA_PAR)
                 for k, s in enumerate(shape))
    idx = [iv.var for iv in axis]
    va = _index(a, idx) if ta else a
    vb = _index(b, idx) if tb else b
    body = _op.convert(fn(va, vb))
    tag = "broadcast" if ta and tb else "elemwise"     # TVM's topi tags for tensor-tensor / tensor-scalar
    return ComputeOp(name, tag, None, axis, (body,)).output(0)


def cast(t, dtype):
    """Tensor ``t`` converted to ``dtype`` element-wise (TVM's ``Tensor.astype``)."""
    from . import dtype as dt
    dtype = dt.canonical(dtype)
    axis = tuple(IterVar(Range(_op.const(0, s.dtype), s), Var(f"ax{k}", s.dtype), IterVar.DATA_PAR)
                 for k, s in enumerate(t.shape))
    body = _op.cast(dtype, t(*[iv.var for iv in axis]))
    return ComputeOp("T_cast", "elemwise", None, axis, (body,)).output(0)
