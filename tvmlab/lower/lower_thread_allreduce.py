"""Cross-thread reduction: a reduction whose reduce axis is bound to a thread index.

After ``rfactor`` and ``bind(reduce_axis, threadIdx.x)`` every thread of the
block holds one partial result, and ScheduleOps emits the update
``B[i] = B[i] + partial(threadIdx.x)`` inside the thread region: run as is,
all threads would race on ``B[i]``.  This pass recognises such a store (its
index does not depend on the thread index, its value does, and it combines
the old value with ``+``, ``*``, ``min`` or ``max``) and replaces it with a
tree reduction in a "shared" buffer: each thread writes its partial, then
log2(extent) rounds halve the active threads with a barrier after each, and
thread 0 combines the total into ``B[i]``.  Other thread axes of the block
(e.g. ``threadIdx.y`` over several rows) get their own row of the buffer.
The result is target-neutral AST3 (Allocate "shared" + ``tvm_storage_sync``).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.expr import Add, IntImm, Load, Max, Min, Mul, Var
from ..ir.functor import IRMutator, IRVisitor, post_order_visit, uses_var
from ..ir.stmt import STORE_PREDICATE, Allocate, AttrStmt, IfThenElse, LetStmt, Store, seq
from .remove_no_op import same_expr
from .split_host_device import is_thread_attr
from .thread_sync import barrier

_COMBINERS = {Add: "sum", Mul: "prod", Min: "min", Max: "max"}


def _identity(cls, dtype):
    if cls is Add:
        return _op.const(0, dtype)
    if cls is Mul:
        return _op.const(1, dtype)
    return _op.min_value(dtype) if cls is Max else _op.max_value(dtype)


def _split_update(s):
    """(combiner class, partial value) when ``s`` is ``buf[i] = buf[i] (op) partial``, else None."""
    v = s.value
    cls = type(v)
    if cls not in _COMBINERS:
        return None
    for old, part in ((v.a, v.b), (v.b, v.a)):
        if (isinstance(old, Load) and old.buffer_var is s.buffer_var and old.predicate is None
                and same_expr(old.index, s.index)):
            return cls, part
    return None


class _HasUpdate(IRVisitor):
    def __init__(self, fn):
        super().__init__()
        self.fn, self.found = fn, False

    def visit_Store(self, s):
        if self.fn(s):
            self.found = True


class _Lower(IRMutator):
    def __init__(self):
        super().__init__()
        self.threads = []     # enclosing (tag, var, extent) of threadIdx.* regions, outermost first
        self.local = {}       # "local" buffer -> the thread variables it is private to
        self.count = 0

    def _peel(self, s):
        """(update, guards, store predicates) when ``s`` is one reducing update under if-guards
        without else and store-predicate attributes; else None."""
        conds, preds = [], []
        while True:
            if isinstance(s, IfThenElse) and s.else_case is None:
                conds.append(s.condition)
                s = s.then_case
            elif isinstance(s, AttrStmt) and s.attr_key == STORE_PREDICATE:
                preds.append(s.value)
                s = s.body
            else:
                break
        if isinstance(s, Store) and self._reducing_thread(s) is not None:
            return s, conds, preds
        return None

    def visit_AttrStmt(self, s):
        if s.attr_key == STORE_PREDICATE:
            found = self._peel(s)
            if found is not None:
                return self._rewrite(*found)
            return IfThenElse(s.value, self.visit(s.body))
        if is_thread_attr(s) and s.node.thread_tag.startswith("threadIdx"):
            self.threads.append((s.node.thread_tag, s.node.var, s.value))
            try:
                return self.generic_visit(s)
            finally:
                self.threads.pop()
        return self.generic_visit(s)

    def visit_Allocate(self, s):
        if s.scope == "local":    # one per thread of the enclosing thread regions
            self.local[s.buffer_var] = {v for _, v, _ in self.threads}
        return self.generic_visit(s)

    def _reducing_thread(self, s):
        """The innermost enclosing thread this store reduces across, or None."""
        if s.buffer_var in self.local or not self.threads:
            return None
        if _split_update(s) is None:
            return None
        _, part = _split_update(s)
        for tag, var, ext in reversed(self.threads):
            if not uses_var(s.index, lambda v, t=var: v is t) and (
                    uses_var(part, lambda v, t=var: v is t) or self._reads_private(part, var)):
                return tag, var, ext
        return None

    def _reads_private(self, e, var):
        """Whether ``e`` loads a "local" buffer private to thread ``var`` (a per-thread partial,
        even where simplification removed the thread index from its address)."""
        found = []

        def visit(n):
            if isinstance(n, Load) and var in self.local.get(n.buffer_var, ()):
                found.append(n)
        post_order_visit(e, visit)
        return bool(found)

    def visit_IfThenElse(self, s):
        # Guards around the update alone: threads outside them add the identity, and every
        # thread reaches the barriers.
        found = self._peel(s)
        if found is not None:
            return self._rewrite(*found)
        return self.generic_visit(s)

    def visit_Store(self, s):
        if self._reducing_thread(s) is None:
            return s
        return self._rewrite(s, [], [])

    def _rewrite(self, s, conds, preds):
        """The tree reduction replacing update ``s``.  ``conds`` say whether this thread's part
        counts; those of them that do not use the reducing thread index also guard the final
        write.  Thread 0 writes the total, or, given store predicates ``preds``, every thread
        where they hold."""
        tag, var, ext = self._reducing_thread(s)
        cls, part = _split_update(s)
        dtype = s.value.dtype
        if not isinstance(ext, IntImm):
            raise LoweringError(f"cross-thread reduction into {s.buffer_var.name} over {tag}: the extent "
                                f"{ext} is symbolic; split the reduce axis by a constant factor first")
        n = ext.value
        width = 1
        while width < n:
            width *= 2
        row, rows = IntImm("int32", 0), 1
        for otag, ovar, oext in self.threads:
            if ovar is var:
                continue
            if not isinstance(oext, IntImm):
                raise LoweringError(f"cross-thread reduction into {s.buffer_var.name}: thread axis {otag} "
                                    f"has the symbolic extent {oext}; it must be constant")
            row = _op.add(_op.mul(row, oext.value), ovar)
            rows *= oext.value
        red = Var(f"red_buf{self.count}", "handle")
        self.count += 1

        def slot(t):
            return _op.add(_op.mul(row, width), t)

        def combine(a, b):
            return cls(a, b)
        cond = _op.all(*conds) if conds else None
        body = [Store(red, part, slot(var)) if cond is None else
                IfThenElse(cond, Store(red, part, slot(var)), Store(red, _identity(cls, dtype), slot(var))),
                barrier()]
        step = width // 2
        while step >= 1:
            active = _op.lt(var, step) if step * 2 <= n else _op.logical_and(
                _op.lt(var, step), _op.lt(_op.add(var, step), n))
            body.append(IfThenElse(active, Store(red, combine(Load(dtype, red, slot(var)),
                                                               Load(dtype, red, slot(_op.add(var, step)))),
                                                 slot(var))))
            body.append(barrier())
            step //= 2
        total = Load(dtype, red, slot(IntImm("int32", 0)))
        rowconds = []
        for c in conds:
            if not uses_var(c, lambda v: v is var) and not any(same_expr(c, w) for w in rowconds):
                rowconds.append(c)
        result = combine(Load(dtype, s.buffer_var, s.index), total)
        if not preds:
            body.append(IfThenElse(_op.all(_op.eq(var, 0), *rowconds), Store(s.buffer_var, result, s.index)))
            body.append(barrier())
        else:
            # Every thread holds the total; the store predicate picks the writers.  Each reads the
            # old value before any writes, so several writers all store the same result.
            v = Var(f"{s.buffer_var.name}.total", dtype)
            if rowconds:
                result = _op.if_then_else(_op.all(*rowconds), result, _identity(cls, dtype))
            body.append(LetStmt(v, result, seq(barrier(), IfThenElse(_op.all(*rowconds, *preds),
                                                                     Store(s.buffer_var, v, s.index)),
                                               barrier())))
        return Allocate(red, dtype, (IntImm("int32", rows * width),), _op.const(True), seq(*body), "shared")


def lower_thread_allreduce(stmt):
    """Replace cross-thread reduction updates in ``stmt`` (AST3) with shared-memory tree reductions."""
    return _Lower().visit(stmt)
