"""bfloat16 is a storage type: its arithmetic runs in float32 (TVM's BF16Legalize).

Three steps, each also a ``tir.transform`` pass:

- ``bf16_promote``: every bfloat16 operation computes in float32 between casts
  (``a + b`` -> ``bf16(f32(a) + f32(b))``; comparisons and math calls alike);
- ``bf16_cast_elimination``: ``f32(bf16(x))`` of a float32 ``x`` is ``x``, so
  a chain of operations rounds to bfloat16 once, at its end (as TVM does);
- ``bf16_lower``: for targets without a bfloat16 type, bfloat16 values become
  their bits (uint16): ``f32(x)`` is ``reinterpret(u32(x) << 16)`` and
  ``bf16(y)`` rounds to nearest even,
  ``u16((u + ((u >> 16) & 1) + 0x7FFF) >> 16)`` with ``u = reinterpret(y)``.

``bf16_legalize`` runs all three (``lower=False`` keeps the bfloat16 type for
targets that have it, CUDA's ``__nv_bfloat16``).
"""
from __future__ import annotations

import struct

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from ..ir.functor import IRMutator
from ..ir.stmt import Allocate
from ..ir.tensor import Tensor

_BINARY = {E.Add: _op.add, E.Sub: _op.sub, E.Mul: _op.mul, E.Div: _op.div, E.Min: _op.min, E.Max: _op.max,
           E.FloorDiv: _op.floordiv, E.FloorMod: _op.floormod, E.Mod: _op.truncmod}
_COMPARE = (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)


def _f32(dtype):
    return dt.with_lanes("float32", dt.lanes(dtype))


def _u(bits, dtype):
    return dt.with_lanes(f"uint{bits}", dt.lanes(dtype))


def _bf(e):
    d = getattr(e, "dtype", None)
    return isinstance(d, str) and d not in ("void", "handle") and dt.is_bfloat16(d)


def _cast(dtype, x):
    if x.dtype == dtype:
        return x
    if isinstance(x, E.FloatImm) and _bf(x):        # a bfloat16 constant: its rounded value
        return _op.cast(dtype, E.FloatImm("float32", _value_of(_bits_of(x.value))))
    if isinstance(x, (E.IntImm, E.FloatImm)):
        return _op.cast(dtype, x)
    return E.Cast(dtype, x)


def _value_of(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


class _Promote(IRMutator):
    def visit_CmpOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if isinstance(e, _COMPARE) and (_bf(a) or _bf(b)):
            return type(e)(_cast(_f32(a.dtype), a), _cast(_f32(b.dtype), b))
        return e.replace(a=a, b=b) if (a is not e.a or b is not e.b) else e

    def visit_BinaryOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if not _bf(e):
            return e.replace(a=a, b=b) if (a is not e.a or b is not e.b) else e
        t = _f32(e.dtype)
        return E.Cast(e.dtype, type(e)(_cast(t, a), _cast(t, b)))

    def visit_Call(self, e):
        args = tuple(self.visit(a) for a in e.args)
        if _bf(e) and e.op not in ("reinterpret", "if_then_else", "call_extern", "call_pure_extern"):
            t = _f32(e.dtype)
            return E.Cast(e.dtype, E.Call(t, e.op, tuple(_cast(_f32(a.dtype), a) if _bf(a) else a
                                                            for a in args)))
        return e if all(x is y for x, y in zip(args, e.args)) else e.replace(args=args)

    def visit_Cast(self, e):
        v = self.visit(e.value)
        if _bf(e) and not dt.is_float(v.dtype):           # int -> bf16 goes through float32
            return E.Cast(e.dtype, _cast(_f32(v.dtype), v))
        if _bf(v) and not _bf(e) and e.dtype != _f32(v.dtype):
            return _cast(e.dtype, E.Cast(_f32(v.dtype), v))
        return v if v.dtype == e.dtype else (e if v is e.value else E.Cast(e.dtype, v))


class _Eliminate(IRMutator):
    def visit_Cast(self, e):
        v = self.visit(e.value)
        if dt.element_of(e.dtype) == "float32" and isinstance(v, E.Cast) and _bf(v) \
                and v.value.dtype == e.dtype:
            return v.value
        return e if v is e.value else E.Cast(e.dtype, v)


def _bits_of(value):
    """bfloat16 bits of a Python float, rounded to nearest even."""
    u = struct.unpack("<I", struct.pack("<f", value))[0]
    if value != value:
        return 0x7FC0
    return ((u + ((u >> 16) & 1) + 0x7FFF) >> 16) & 0xFFFF


def to_float32(x, dtype):
    """float32 value of the bfloat16 bits ``x`` (uint16)."""
    u32 = _u(32, dtype)
    widened = _op.shift_left(_cast(u32, x), _op.const(16, u32) if dt.lanes(dtype) == 1 else
                             E.Broadcast(_op.const(16, "uint32"), dt.lanes(dtype)))
    return E.Call(_f32(dtype), "reinterpret", (widened,))


def to_bfloat16_bits(y, dtype):
    """bfloat16 bits (uint16) of the float32 ``y``, rounded to nearest even."""
    n = dt.lanes(dtype)
    u32 = _u(32, dtype)

    def c(v):
        k = _op.const(v, "uint32")
        return k if n == 1 else E.Broadcast(k, n)
    u = E.Call(u32, "reinterpret", (y,))
    bias = _op.add(_op.bitwise_and(_op.shift_right(u, c(16)), c(1)), c(0x7FFF))
    return _cast(_u(16, dtype), _op.shift_right(_op.add(u, bias), c(16)))


class _Lower(IRMutator):
    """bfloat16 values to their uint16 bits; in AST2 each bfloat16 tensor becomes a uint16 tensor
    of the same operation (``tensors`` holds the pairs, for the function's buffers)."""

    def __init__(self):
        super().__init__()
        self.tensors = {}

    def bits_tensor(self, t):
        if not dt.is_bfloat16(t.dtype):
            return t
        new = self.tensors.get(t)
        if new is None:
            new = self.tensors[t] = Tensor(t.shape, _u(16, t.dtype), t.op, t.value_index)
        return new

    def visit_ProducerLoad(self, e):
        out = self.generic_visit(e)
        t = self.bits_tensor(out.producer)
        return out if t is out.producer else E.ProducerLoad(t, out.indices)

    def visit_ProducerStore(self, s):
        out = self.generic_visit(s)
        t = self.bits_tensor(out.producer)
        return out if t is out.producer else out.replace(producer=t)

    def visit_ProducerRealize(self, s):
        out = self.generic_visit(s)
        t = self.bits_tensor(out.producer)
        return out if t is out.producer else out.replace(producer=t)

    def visit_AttrStmt(self, s):
        out = self.generic_visit(s)
        node = out.node
        if isinstance(node, Tensor):
            node = self.bits_tensor(node)
        elif isinstance(node, tuple):
            node = tuple(self.bits_tensor(x) if isinstance(x, Tensor) else x for x in node)
        return out if node is out.node or node == out.node else out.replace(node=node)

    def visit_Cast(self, e):
        v = self.visit(e.value)
        if _bf(e.value) and not _bf(e):                   # bf16 bits -> float32 -> target
            return _cast(e.dtype, to_float32(v, e.value.dtype))
        if _bf(e):
            return to_bfloat16_bits(_cast(_f32(v.dtype), v), e.dtype)
        return e if v is e.value else E.Cast(e.dtype, v)

    def visit_FloatImm(self, e):
        if _bf(e):
            return E.IntImm("uint16", _bits_of(e.value))
        return e

    def visit_Broadcast(self, e):
        v = self.visit(e.value)
        return e if v is e.value else E.Broadcast(v, e.lanes)

    def visit_Load(self, e):
        out = self.generic_visit(e)
        if _bf(e):
            return out.replace(dtype=_u(16, e.dtype))
        return out

    def visit_Call(self, e):
        out = self.generic_visit(e)
        if _bf(e):     # if_then_else / reinterpret of bfloat16 values: on the bits
            return out.replace(dtype=_u(16, e.dtype))
        return out

    def visit_Var(self, v):
        return v

    def visit_Allocate(self, s):
        out = self.generic_visit(s)
        if dt.is_bfloat16(s.dtype):
            return Allocate(out.buffer_var, _u(16, s.dtype), out.extents, out.condition, out.body, out.scope)
        return out


def bf16_promote(stmt):
    return _Promote().visit(stmt)


def bf16_cast_elimination(stmt):
    return _Eliminate().visit(stmt)


def bf16_lower(stmt):
    return _Lower().visit(stmt)


def bf16_lower_function(func, binds_attr):
    """``func`` with its bfloat16 values as uint16 bits, and its bfloat16 buffers (``buffer_map``,
    and the tensor bindings under ``binds_attr`` of an AST2 function) as uint16 buffers on the same
    data, as TVM's BF16TypeLowering gives them: callers pass the bits (uint16 arrays)."""
    from ..ir.function import Buffer
    low = _Lower()
    body = low.visit(func.body)
    bufs = {}

    def bits_buffer(b):
        if not dt.is_bfloat16(b.dtype):
            return b
        if b not in bufs:
            bufs[b] = Buffer(b.name, b.shape, _u(16, b.dtype), data=b.data, strides=b.strides,
                             scope=b.scope, elem_offset=b.elem_offset, offset_factor=b.offset_factor)
        return bufs[b]
    out = func.with_body(body)
    out.buffer_map = {p: bits_buffer(b) for p, b in func.buffer_map.items()}
    binds = func.attrs.get(binds_attr)
    if binds:
        attrs = dict(out.attrs)
        attrs[binds_attr] = {low.bits_tensor(t): bits_buffer(b) for t, b in binds.items()}
        out.attrs = attrs
    return out


class _Finder(IRMutator):
    def __init__(self):
        super().__init__()
        self.found = False

    def generic_visit(self, n):
        if not self.found and _bf(n):
            self.found = True
        return n if self.found else super().generic_visit(n)


def uses_bfloat16(stmt):
    f = _Finder()
    f.visit(stmt)
    return f.found


def bf16_legalize(stmt, lower=True):
    """``stmt`` with bfloat16 arithmetic in float32; with ``lower`` bfloat16 values become uint16 bits."""
    if not uses_bfloat16(stmt):
        return stmt
    stmt = bf16_cast_elimination(bf16_promote(stmt))
    return bf16_lower(stmt) if lower else stmt
