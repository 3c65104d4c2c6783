"""Storage-level schedule primitives: storage_align, transform_layout, double_buffer, rolling_buffer, prefetch.

Each primitive checks its arguments and records one trace step; the effect
is made when the schedule is lowered:

- ``storage_align(axis, factor, offset)``: storage flattening pads the stride
  of that dimension to ``k * factor + offset`` (a realize annotated with
  ``buffer_dim_align``).
- ``transform_layout(fn)``: ``fn`` permutes the stage's axes; storage flattening lays the tensor
  out in that order (a realize annotated with ``buffer_dim_order``), and the stage's loops follow it.
- ``double_buffer()``: for a stage computed at a serial loop, ScheduleOps
  keeps two tiles: before the loop it computes the first; iteration ``k``
  computes tile ``k + 1`` into the other half while its consumer reads tile
  ``k``.
- ``rolling_buffer()``: for a stage computed at a loop whose tiles overlap (a
  pooling under a tiled pooling), ScheduleOps marks its realize with
  ``rolling_buffer_scope``; ``lower.rolling_buffer`` then keeps one tile as a
  circular buffer and computes only the new rows at each iteration.
- ``prefetch(tensor, var, offset)``: at each iteration of ``var``, one
  ``prefetch`` per cache line of the part of ``tensor`` that iteration
  ``var + offset`` reads (LLVM's prefetch hint, which never faults).
"""
from __future__ import annotations

import numbers
from dataclasses import replace

from ..errors import LoweringError, ScheduleError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.expr import Call, IntImm, ProducerLoad, Var
from ..ir.functor import IRMutator, substitute
from ..ir.stmt import AttrStmt, Evaluate, For, IfThenElse, ProducerRealize, ProducerStore, seq
from ..ir.tensor import PlaceholderOp, Range, Tensor

DIM_ALIGN = "buffer_dim_align"
DIM_ORDER = "buffer_dim_order"
ROLLING_BUFFER_SCOPE = "rolling_buffer_scope"
CACHE_LINE = 64


def _int(v, what, positive=True):
    if isinstance(v, IntImm):
        v = v.value
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or (v <= 0 if positive else v < 0):
        raise ScheduleError(f"{what} must be a {'positive' if positive else 'non-negative'} integer, "
                            f"got {v!r}")
    return int(v)


def storage_align(st, axis, factor, offset):
    with st._txn():
        st._check_compute("storage_align")
        st._check_not_inlined("storage_align")
        iv = st.axis(axis, "storage_align axis", leaf=False)
        if iv not in st.op.axis:
            raise ScheduleError(f"storage_align of {st.name}: {iv.var.name} is not one of its tensor's "
                                f"dimensions {[a.var.name for a in st.op.axis]} (give s[X].op.axis[k])")
        factor = _int(factor, f"storage_align of {st.name}: factor")
        offset = _int(offset, f"storage_align of {st.name}: offset", positive=False)
        if offset >= factor:
            raise ScheduleError(f"storage_align of {st.name}: offset {offset} must be below factor {factor}")
        st.iter_var_attrs[iv] = replace(st.attr(iv), dim_align=(factor, offset))
        st._record("storage_align", axis=iv, factor=factor, offset=offset)


def transform_layout(st, fn):
    with st._txn():
        st._check_compute("transform_layout")
        st._check_not_inlined("transform_layout")
        axes = list(st.op.axis)
        order = list(st.layout_order or range(len(axes)))     # storage dimension k is axis order[k]
        if not callable(fn):
            raise ScheduleError(f"transform_layout of {st.name}: expected a function of its {len(axes)} axes, "
                                f"got {fn!r}")
        names = [axes[k].var.name for k in order]
        current = [axes[k].var for k in order]
        try:
            out = fn(*current)
        except TypeError as e:
            raise ScheduleError(f"transform_layout of {st.name}: the mapping must take its {len(axes)} axes "
                                f"({', '.join(names)}): {e}") from None
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        perm = [next((k for k, v in enumerate(current) if v is e), None) for e in out]
        if None in perm or sorted(perm) != list(range(len(axes))):
            raise ScheduleError(f"transform_layout of {st.name}: the mapping must return its axes "
                                f"({', '.join(names)}) in a new order, each once; got {out!r} (tvmlab "
                                "transforms layouts by permuting dimensions only)")
        if any(a not in st.leaf_iter_vars for a in axes):
            raise ScheduleError(f"transform_layout of {st.name}: call it before splitting or fusing the "
                                "stage's axes (its loops are put in the new order)")
        new = [order[k] for k in perm]
        st.reorder(*[axes[k] for k in new])
        st.layout_order = None if new == list(range(len(axes))) else tuple(new)
        st._record("transform_layout", perm=perm)
        return [axes[k] for k in new]


def order_realize(st, t, realize, first_dim=0):
    """Wrap a realize of ``t`` in a ``buffer_dim_order`` attribute when ``st`` has a transformed layout
    (dimension ``d`` of the stage is ``first_dim + d`` of ``t``; the ones before stay outermost)."""
    if not st.layout_order:
        return realize
    order = tuple(range(first_dim)) + tuple(first_dim + d for d in st.layout_order)
    return AttrStmt(t, DIM_ORDER, Call("handle", "tvm_tuple", tuple(_op.const(d, "int32") for d in order)),
                    realize)


def _mark_buffer(st, primitive, attr, other_attr, what, other_what):
    # double_buffer / rolling_buffer: a compute stage inside its consumer's loop, one kind or the other
    with st._txn():
        st._check_compute(primitive)
        st._check_not_inlined(primitive)
        if st.is_output:
            raise ScheduleError(f"{primitive} of {st.name}: it is an output of the schedule; {what} is for a "
                                "tile computed inside its consumer's loop")
        if getattr(st, other_attr):
            raise ScheduleError(f"{primitive} of {st.name}: it is {other_what} already; a stage is one or "
                                "the other")
        setattr(st, attr, True)
        st._record(primitive)


def double_buffer(st):
    _mark_buffer(st, "double_buffer", "double_buffer_scope", "rolling_buffer_scope", "double buffering",
                 "a rolling buffer")


def rolling_buffer(st):
    _mark_buffer(st, "rolling_buffer", "rolling_buffer_scope", "double_buffer_scope", "a rolling buffer",
                 "double buffered")


def prefetch(st, tensor, var, offset):
    with st._txn():
        st._check_compute("prefetch")
        st._check_not_inlined("prefetch")
        if not isinstance(tensor, Tensor):
            raise ScheduleError(f"prefetch in {st.name}: expected a tensor, got {tensor!r}")
        from .rewrite import reads
        if not reads(st.schedule, st.op, tensor):
            raise ScheduleError(f"prefetch in {st.name}: the stage does not read {tensor.name}")
        iv = st.axis(var, "prefetch axis")
        off = _int(offset, f"prefetch of {tensor.name} in {st.name}: offset", positive=False)
        a = st.attr(iv)
        pf = tuple(p for p in a.prefetch if p[0] is not tensor) + ((tensor, off),)
        st.iter_var_attrs[iv] = replace(a, prefetch=pf)
        st._record("prefetch", tensor=tensor, var=iv, offset=off)


# ------------------------------------------------------------------ ScheduleOps


def align_realize(st, t, realize, first_dim=0):
    """Wrap a realize of ``t`` in one ``buffer_dim_align`` attribute per aligned dimension
    (dimension ``d`` of the stage is ``first_dim + d`` of ``t``)."""
    for d, iv in reversed(list(enumerate(st.op.axis))):
        al = st.attr(iv).dim_align
        if al:
            tup = Call("handle", "tvm_tuple", tuple(_op.const(x, "int32") for x in (first_dim + d,) + al))
            realize = AttrStmt(t, DIM_ALIGN, tup, realize)
    return realize


def aligned_strides(extents, aligns):
    """Row-major strides, with the stride of each dimension in ``aligns`` ({dim: (factor, offset)})
    padded to ``k * factor + offset``; and the element count to allocate."""
    strides, acc = [None] * len(extents), _op.const(1, "int32")
    for d in reversed(range(len(extents))):
        if d in aligns:
            f, o = aligns[d]
            acc = _op.add(acc, _op.floormod(_op.sub(_op.const(f + o, "int32"), _op.floormod(acc, f)), f))
        strides[d] = acc
        acc = _op.mul(acc, extents[d])
    return tuple(strides), acc


def prefetch_stmts(b, st, iv, body):
    """``body`` of loop ``iv`` preceded by the prefetches of its attributes."""
    from .bound import accesses
    from .passes import leaf_values, pass_up_index
    from .rewrite import canonical_tensor
    leaves = st.leaf_iter_vars
    k = leaves.index(iv)
    if st.attr(iv).bind_thread is not None:
        raise LoweringError(f"prefetch in {st.name}: axis {iv.var.name} is bound to "
                            f"{st.attr(iv).bind_thread.thread_tag}; prefetch is for CPU loops")
    relax = {x.var: b.dom_map[x] for x in leaves[k + 1:]}
    values = pass_up_index(st, b.dom_map, leaf_values(st))
    roots = {r.var: values[r] for r in st.root_iter_vars}
    reads = accesses(b.bodies[st])
    out = []
    for tensor, off in st.attr(iv).prefetch:
        t = canonical_tensor(b.sch, tensor)
        lo, hi = [None] * t.ndim, [None] * t.ndim
        for idx in reads.get(t, []):
            for d, e in enumerate(idx):
                e = substitute(substitute(e, roots), {iv.var: _op.add(iv.var, off)})
                s = b.ana.int_set(e, relax)
                lo[d] = s.min if lo[d] is None else _op.min(lo[d], s.min)
                hi[d] = s.max if hi[d] is None else _op.max(hi[d], s.max)
        if lo[0] is None:
            continue
        line = max(1, CACHE_LINE // dt.itemsize(t.dtype))
        vars_ = [Var(f"{t.name}.pf{d}", "int32") for d in range(t.ndim)]
        idx = [_op.add(lo[d], v) for d, v in enumerate(vars_)]
        idx[-1] = _op.add(lo[-1], _op.mul(vars_[-1], line))
        addr = Call("handle", "address_of", (ProducerLoad(t, tuple(idx)),))
        stmt = Evaluate(Call("int32", "prefetch", (addr, _op.const(0, "int32"), _op.const(3, "int32"),
                                                   _op.const(1, "int32"))))
        for d in reversed(range(t.ndim)):
            ext = b.ana.simplify(_op.add(_op.sub(hi[d], lo[d]), 1))
            if d == t.ndim - 1:
                ext = b.ana.simplify(_op.floordiv(_op.add(ext, line - 1), line))
            stmt = For(vars_[d], _op.const(0, "int32"), ext, "serial", stmt)
        out.append(stmt)
    return seq(*out, body)


class _Retarget(IRMutator):
    """Stores to / loads of ``old`` go to ``new`` at (parity, index - origin)."""

    def __init__(self, old, new, parity, mins, stores):
        super().__init__()
        self.old, self.new, self.parity, self.mins, self.stores = old, new, parity, mins, stores

    def _idx(self, idx):
        return (self.parity,) + tuple(_op.sub(i, m) for i, m in zip(idx, self.mins))

    def visit_ProducerStore(self, s):
        s2 = self.generic_visit(s)
        if self.stores and s2.producer is self.old:
            return ProducerStore(self.new, s2.value, self._idx(s2.indices))
        return s2

    def visit_ProducerLoad(self, e):
        e2 = self.generic_visit(e)
        if not self.stores and e2.producer is self.old:
            return ProducerLoad(self.new, self._idx(e2.indices))
        return e2


def double_buffer_loop(b, st, iv, stages, body):
    """Loop ``iv`` of ``st`` with the double-buffered ``stages`` computed one iteration ahead."""
    from .bound import storage_scope
    a = st.attr(iv)
    db = [x for x in stages if x.double_buffer_scope]
    body = b.produce_then([x for x in stages if not x.double_buffer_scope], body)
    if a.kind not in ("serial", "unrolled") or a.bind_thread is not None:
        raise LoweringError(f"double_buffer of {db[0].name}: it is computed at {st.name}."
                            f"{iv.var.name}, which is {a.kind}; the loop must run its iterations in "
                            "order (serial)")
    rng = b.dom_map[iv]
    k = iv.var
    last = _op.add(rng.min, rng.extent)
    parity = lambda e: _op.floormod(_op.sub(e, rng.min), 2)  # noqa: E731
    nxt = _op.add(k, 1)
    prologue, ahead, realizes = [], [], []
    for x in db:
        nest = b.nest(x)
        first, then = substitute(nest, {k: rng.min}), substitute(nest, {k: nxt})
        bounds = [b._realize_range(b.dom_map[ax]) for ax in x.op.axis]
        mins = [r.min for r in bounds]
        shape = (_op.const(2, "int32"),) + tuple(r.extent for r in bounds)
        for t in x.op.outputs:
            t2 = PlaceholderOp(t.name, shape, t.dtype).output(0)
            realizes.append((t2, shape, storage_scope(x), x))
            first = _Retarget(t, t2, _op.const(0, "int32"), [substitute(m, {k: rng.min}) for m in mins],
                              True).visit(first)
            then = _Retarget(t, t2, parity(nxt), [substitute(m, {k: nxt}) for m in mins], True).visit(then)
            body = _Retarget(t, t2, parity(k), mins, False).visit(body)
        prologue.append(first)
        ahead.append(then)
    # marked, so barrier placement knows these writes fill the tile of the next iteration
    ahead = AttrStmt(None, "double_buffer_write", _op.const(1, "int32"), seq(*ahead))
    loop_body = seq(IfThenElse(_op.lt(nxt, last), ahead), body)
    out = seq(*prologue, b._loop(st, iv, k, rng, loop_body))
    for t2, shape, scope, x in reversed(realizes):
        out = ProducerRealize(t2, tuple(Range(_op.const(0, "int32"), e) for e in shape), _op.const(True),
                              out, scope)
        out = align_realize(x, t2, out, first_dim=1)     # the copy index comes first
        out = order_realize(x, t2, out, first_dim=1)
    return out
