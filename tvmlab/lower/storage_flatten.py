"""Storage flattening: multi-dimensional tensors (AST2) become flat buffers (AST3).

``ProducerRealize`` becomes ``Allocate`` and ``ProducerStore`` / ``ProducerLoad``
become ``Store`` / ``Load`` at a row-major flat index.  A realized tensor is
indexed relative to its realize bounds (a tile after ``compute_at`` holds only
the tile), a bound tensor (a function argument) over its Buffer's shape, or its
explicit strides when the Buffer has them.  The storage scope ("" means
"global") becomes ``Allocate.scope``; the allocation's Var has the tensor's name.

Convention: ``Allocate.extents`` holds one entry, the element count (the
product of the realize extents), so codegen never multiplies extents itself.

A tensor of vector elements ("float32x2") keeps its dtype on the ``Allocate``
(whose count is of vectors), but its flat memory is of scalars, the lanes of an
element side by side: element ``k`` is the access ``Ramp(k * 2, 1, 2)``, the
form VectorizeLoop widens when a loop over elements is vectorized.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir import dtype as dt
from ..ir.expr import Call, IntImm, Load, Ramp, Var
from ..ir.functor import IRMutator
from ..ir.stmt import Allocate, Evaluate, For, Store


class _Layout:
    """Where a tensor lives: its data Var, per-dim offsets and strides."""
    __slots__ = ("data", "mins", "strides")

    def __init__(self, data, mins, strides):
        self.data, self.mins, self.strides = data, tuple(mins), tuple(strides)

    def flat_index(self, tensor, indices):
        if len(indices) != len(self.strides):
            raise LoweringError(f"tensor {tensor.name} has {len(self.strides)} dimensions, "
                                f"accessed with {len(indices)} indices")
        flat = None
        for idx, mn, stride in zip(indices, self.mins, self.strides):
            term = _op.mul(_op.sub(idx, mn), stride)
            flat = term if flat is None else _op.add(flat, term)
        flat = flat if flat is not None else IntImm("int32", 0)
        return element_index(flat, tensor.dtype)


def element_index(flat, dtype):
    """The scalar index of element ``flat`` of a buffer of ``dtype``: a Ramp over its lanes."""
    lanes = dt.lanes(dtype)
    if lanes == 1:
        return flat
    return Ramp(_op.mul(flat, lanes), _op.const(1, flat.dtype), lanes)


def row_major_strides(extents):
    """Strides (in elements) of a row-major array with ``extents``."""
    strides, acc = [], IntImm("int32", 1)
    for e in reversed(extents):
        strides.append(acc)
        acc = _op.mul(acc, e)
    return tuple(reversed(strides))


def _element_count(extents):
    acc = IntImm("int32", 1)
    for e in extents:
        acc = _op.mul(acc, e)
    return acc


class _Flattener(IRMutator):
    def __init__(self, binds):
        super().__init__()
        self.layouts = {}
        self.bound = set(binds)
        self.dim_align = {}     # tensor -> {dim: (factor, offset)} for its next realize
        self.dim_order = {}     # tensor -> its dimensions in storage order, for its next realize
        for t, buf in binds.items():
            strides = buf.strides if buf.strides else row_major_strides(buf.shape)
            zeros = tuple(IntImm("int32", 0) for _ in buf.shape)
            self.layouts[t] = _Layout(buf.data, zeros, strides)

    def layout(self, tensor, what):
        lay = self.layouts.get(tensor)
        if lay is None:
            raise LoweringError(f"tensor {tensor.name} is {what} but is neither realized (an "
                                "intermediate with storage) nor bound to a function argument; "
                                "pass it in the argument list or let the schedule compute it")
        return lay

    def visit_ProducerRealize(self, s):
        t = s.producer
        if t in self.bound:
            return self.visit(s.body)   # bound argument: its buffer is the storage
        # a tag ("global:acc") stays until storage_rewrite packs the tagged memory and drops it
        scope = s.storage_scope or "global"
        extents = tuple(_op.convert(r.extent) for r in s.bounds)
        mins = tuple(_op.convert(r.min) for r in s.bounds)
        data = Var(t.name, "handle")
        outer = self.layouts.get(t)
        aligns = self.dim_align.pop(t, None) or {}
        order = self.dim_order.pop(t, None) or tuple(range(len(extents)))
        if aligns or order != tuple(range(len(extents))):
            # storage dimension k is dimension order[k]; each alignment pads its dimension's stride there
            from ..schedule.storage import aligned_strides
            where = {d: k for k, d in enumerate(order)}
            inner, count = aligned_strides([extents[d] for d in order], {where[d]: a for d, a in aligns.items()})
            strides = tuple(inner[where[d]] for d in range(len(extents)))
        else:
            strides, count = row_major_strides(extents), _element_count(extents)
        self.layouts[t] = _Layout(data, mins, strides)
        try:
            body = self.visit(s.body)
        finally:
            if outer is None:
                del self.layouts[t]
            else:
                self.layouts[t] = outer
        cond = self.visit(s.condition) if s.condition is not None else _op.const(True)
        return Allocate(data, t.dtype, (count,), cond, body, scope)

    def visit_AttrStmt(self, s):
        if s.attr_key == "buffer_bind_scope":     # tensorize: a Buffer on a tile of a tensor
            from .buffer_bind import bind_buffer
            buf, t = s.node
            lay = self.layout(t, "bound to buffer " + buf.name)
            tup = self.visit(s.value)
            return self.visit(bind_buffer(buf, t, lay.data, lay.mins, lay.strides, tup, s.body))
        if s.attr_key == "buffer_dim_align":      # storage_align: padded strides for the realize inside
            d, factor, offset = (a.value for a in s.value.args)
            self.dim_align.setdefault(s.node, {})[d] = (factor, offset)
            return self.visit(s.body)
        if s.attr_key == "buffer_dim_order":      # transform_layout: the dimensions in storage order
            self.dim_order[s.node] = tuple(a.value for a in s.value.args)
            return self.visit(s.body)
        if s.attr_key == "scan_state_alias":      # te.scan: the state placeholder is the scan's output
            from ..schedule.extern_ops import alias_states
            return alias_states(self, s)
        return self.generic_visit(s)

    def visit_ProducerStore(self, s):
        t = s.producer
        lay = self.layout(t, "written")
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        return Store(lay.data, value, lay.flat_index(t, indices))

    def visit_Prefetch(self, s):
        return flatten_prefetch(self.generic_visit(s))

    def visit_ProducerLoad(self, e):
        t = e.producer
        lay = self.layout(t, "read")
        indices = tuple(self.visit(i) for i in e.indices)
        return Load(t.dtype, lay.data, lay.flat_index(t, indices))


def flatten_prefetch(s, cache_line=64):
    """A ``Prefetch`` of a buffer region as loops of ``prefetch`` hints, one per cache line.

    The innermost constant dimensions that fit in one cache line together are
    covered whole by each hint; the dimension outside them steps by the lines'
    worth of its rows; dimensions further out are looped over one by one.
    """
    buf, bounds = s.buffer, s.bounds
    ndim = len(bounds)
    line = max(1, cache_line // dt.itemsize(buf.dtype))
    block, start = 1, ndim - 1
    contiguous = not buf.strides      # explicit strides: one line along the last dimension only
    while contiguous and start > 0:
        ext = buf.shape[start]
        if not isinstance(ext, IntImm) or block * ext.value > line:
            break
        block *= ext.value
        start -= 1
    step = max(1, line // block)
    loop_vars = {d: Var(f"prefetch.{buf.name}.{d}", "int32") for d in range(start + 1)}
    idx = [r.min for r in bounds]
    idx[start] = _op.add(bounds[start].min, _op.mul(loop_vars[start], step))
    for d in range(start):
        idx[d] = _op.add(loop_vars[d], bounds[d].min)
    strides = buf.strides or row_major_strides(buf.shape)
    flat = buf.elem_offset
    for i, st in zip(idx, strides):
        flat = _op.add(flat, _op.mul(i, st))
    addr = Call("handle", "address_of", (Load(buf.dtype, buf.data, flat),))
    stmt = Evaluate(Call("int32", "prefetch", (addr, _op.const(0, "int32"), _op.const(3, "int32"),
                                               _op.const(1, "int32"))))
    ext = _op.add(_op.floordiv(_op.sub(bounds[start].extent, 1), step), 1)
    stmt = For(loop_vars[start], IntImm("int32", 0), ext, "serial", stmt)
    for d in reversed(range(start)):
        stmt = For(loop_vars[d], IntImm("int32", 0), bounds[d].extent, "serial", stmt)
    return stmt


def storage_flatten(stmt, binds):
    """Flatten ``stmt`` (AST2) to flat-memory AST3; ``binds`` is {Tensor: Buffer} of arguments."""
    return _Flattener(dict(binds or {})).visit(stmt)
