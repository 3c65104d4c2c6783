"""Simplify a statement: every expression, with the ranges its enclosing scopes give.

Loop variables are bound to ``[min, min + extent)`` inside their loop, thread
variables to ``[0, extent)`` inside their ``thread_extent`` attribute, let
variables to their value (pure index arithmetic is inlined, so that rules see
through the variable).  With those facts guards that always hold are
folded away (also ``likely`` ones), as are load and store predicates that
hold in every lane (a guard the loop partition made redundant); loops of
extent 0 disappear and loops of extent 1 become their body with the loop
variable replaced by ``min`` (unless ``keep_unit_loops``, TVM's LoopPartition config
``no_unroll_loop_with_extent_one``).  Inside ``if c`` (and its ``else``) an ``if`` on the same
condition, or on one of the conjuncts of ``c``, is decided (``likely`` or not) when the
condition reads no memory.

Masks of vector accesses that cannot fault are dropped, so a tile's tail
computes in registers as its body does: a masked load from an allocation of
this function, at an index in its bounds, or of one address (a broadcast) that
a provably active lane (the first or the last) reads, becomes a plain load; a masked store into an
allocation that only this thread sees (no parallel loop or thread index
between the allocation and the store) becomes ``buf[i] = select(mask, new,
buf[i])``.  Masked-off lanes then hold values no unmasked lane ever uses.

A thread index bound again inside its own kernel with another extent (``threadIdx.x``
launched with 32 and, further in, with 33) has no meaning, and its range would be two
facts at once: that raises ``LoweringError`` ("inconsistent thread_extent"), as TVM's
analyzer refuses the second binding.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from ..ir import stmt as S
from ..ir.arith import Analyzer, IntervalSet
from ..ir.arith.divmod import is_index
from ..ir.arith.rewrite import drop_true_predicate, inlinable, truth
from ..ir.functor import IRMutator, post_order_visit, substitute, uses_var
from ..ir.structural import structural_equal
from ..ir.tensor import IterVar, Range

_THREAD_KEYS = ("thread_extent", "virtual_thread")


def _no_op():
    return S.Evaluate(E.IntImm("int32", 0))


def _lane(e, k):
    """Lane ``k`` of a vector boolean expression, or None when it cannot be read off."""
    if type(e) is E.Ramp:
        return E.Add(e.base, E.Mul(e.stride, E.IntImm(e.stride.dtype, k))) if k else e.base
    if type(e) is E.Broadcast:
        return e.value
    if type(e) is E.Call and e.op == "likely":
        return _lane(e.args[0], k)
    if type(e) is E.Not:
        a = _lane(e.a, k)
        return None if a is None else E.Not(a)
    if isinstance(e, (E.CmpOp, E.BinaryOp)):
        a, b = _lane(e.a, k), _lane(e.b, k)
        return None if a is None or b is None else type(e)(a, b)
    if type(e) is E.IntImm or (type(e) is E.Var and dt.lanes(e.dtype) == 1):
        return e
    return None


def _unlikely(c):
    return c.args[0] if type(c) is E.Call and c.op == "likely" else c


def _conjuncts(c):
    """The conjuncts of condition ``c``, ``likely`` looked through."""
    c = _unlikely(c)
    return _conjuncts(c.a) + _conjuncts(c.b) if type(c) is E.And else [c]


def _pure(c):
    found = []
    post_order_visit(c, lambda n: found.append(n) if isinstance(n, (E.Load, E.ProducerLoad)) or (
        isinstance(n, E.Call) and n.op != "likely") else None)
    return not found


def launch_extent(kernel, iv, extent, analyzer=None):
    """Record thread index ``iv``'s ``extent`` in ``kernel`` ({Var: extent} of one kernel's
    ``thread_extent`` scopes); the same index bound again with another extent raises."""
    old = kernel.get(iv.var)
    if old is None:
        kernel[iv.var] = extent
        return
    if structural_equal(old, extent) or (analyzer or Analyzer()).can_prove(_op.eq(old, extent)):
        return
    raise LoweringError(
        f"inconsistent thread_extent: thread axis {iv.thread_tag or iv.var.name} is bound with extent "
        f"{old} and, inside the same kernel, with extent {extent}; a kernel launches each thread axis "
        "with one extent")


class StmtSimplifier(IRMutator):
    """Simplify every expression of a statement tree under the bindings of its scopes."""

    def __init__(self, analyzer, keep_unit_loops=False):
        super().__init__()
        self.ana = analyzer
        self.keep_unit_loops = keep_unit_loops
        self.kernel = {}      # thread index Var -> its extent, in the kernel being visited
        self.allocs = {}      # buffer var -> (elements, concurrency depth, scope) of enclosing Allocates
        self.depth = 0        # enclosing parallel loops and thread indices
        self.facts = []       # (conjuncts, truth) decided by the enclosing ifs

    def visit_Expr(self, e):
        return self.ana.simplify(e)

    def visit_Store(self, s):
        s = drop_true_predicate(self.generic_visit(s))
        value = _Unmask(self).visit(s.value)
        if value is not s.value:
            s = s.replace(value=value)
        a = self.allocs.get(s.buffer_var)
        if s.predicate is not None and a is not None and a[1] == self.depth and a[2] != "shared" \
                and self._in_bounds(s.index, a[0]):
            old = E.Load(s.value.dtype, s.buffer_var, s.index)
            s = S.Store(s.buffer_var, E.Select(s.predicate, s.value, old), s.index)
        return s

    def _in_bounds(self, index, elements):
        """Every lane of ``index`` provably in ``[0, elements)`` (both ends of a ramp: the lanes
        between lie between them, whatever the stride's sign)."""
        if type(index) is E.Ramp:
            ends = [index.base, _lane(index, index.lanes - 1)]
        elif type(index) is E.Broadcast:
            ends = [index.value]
        else:
            ends = [index]
        dtype = ends[0].dtype
        if elements.dtype != dtype:
            if type(elements) is not E.IntImm:
                return False
            elements = E.IntImm(dtype, elements.value)
        zero = E.IntImm(dtype, 0)
        return all(self.ana.can_prove(E.GE(x, zero)) and self.ana.can_prove(E.LT(x, elements)) for x in ends)

    def visit_Allocate(self, s):
        elements = s.extents[0] if s.extents else E.IntImm("int32", 1)
        for x in s.extents[1:]:
            elements = _op.mul(elements, x)
        outer = self.allocs.get(s.buffer_var)
        self.allocs[s.buffer_var] = (self.ana.simplify(elements), self.depth, s.scope)
        try:
            return self.generic_visit(s)
        finally:
            if outer is None:
                del self.allocs[s.buffer_var]
            else:
                self.allocs[s.buffer_var] = outer

    def visit_For(self, s):
        if s.kind == "parallel":
            self.depth += 1
            try:
                return self._visit_for(s)
            finally:
                self.depth -= 1
        return self._visit_for(s)

    def _visit_for(self, s):
        mn, ext = self.ana.simplify(s.min), self.ana.simplify(s.extent)
        if self.ana.bounds(ext)[1] <= 0:
            return _no_op()
        if type(ext) is E.IntImm and ext.value == 1 and s.kind != "thread_binding" \
                and not self.keep_unit_loops:
            return self.visit(substitute(s.body, {s.loop_var: mn}))
        with self.ana.with_bindings(s.loop_var, Range(mn, ext)):
            body = self.visit(s.body)
        if S.is_no_op(body):
            return body
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return s.replace(min=mn, extent=ext, body=body)

    def visit_LetStmt(self, s):
        value = self.ana.simplify(s.value)
        if inlinable(value):
            return self.visit(substitute(s.body, {s.var: value}))
        if is_index(value.dtype):
            with self.ana.with_bindings(s.var, IntervalSet(value, value)):
                body = self.visit(s.body)
        else:
            body = self.visit(s.body)
        if not uses_var(body, lambda v: v is s.var):
            return body
        if value is s.value and body is s.body:
            return s
        return s.replace(value=value, body=body)

    def visit_AttrStmt(self, s):
        value = self.ana.simplify(s.value) if isinstance(s.value, E.Expr) else s.value
        if s.attr_key in _THREAD_KEYS and isinstance(s.node, IterVar) \
                and isinstance(value, E.Expr):
            opens_kernel = not self.kernel
            if s.attr_key == "thread_extent":
                launch_extent(self.kernel, s.node, value, self.ana)
            self.depth += 1
            try:
                with self.ana.with_bindings(s.node.var, Range(E.IntImm(value.dtype, 0), value)):
                    body = self.visit(s.body)
            finally:
                self.depth -= 1
                if opens_kernel:
                    self.kernel = {}
        else:
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return s.replace(value=value, body=body)

    def _known(self, cond):
        """True / False when the enclosing ifs decided ``cond`` (``likely`` or not), else None:
        every conjunct known true, or the conjuncts of a condition known false all among its own."""
        from .remove_no_op import same_expr
        parts = _conjuncts(cond)

        def has(group):
            return all(any(same_expr(f, c) for c in parts) for f in group)
        if all(any(v and same_expr(f[0], c) for f, v in self.facts) for c in parts):
            return True
        if any(not v and has(f) for f, v in self.facts):
            return False
        return None

    def _branch(self, stmt, cond, value):
        """Visit ``stmt`` knowing that ``cond`` is ``value`` (each conjunct of a true condition)."""
        parts = _conjuncts(cond)
        if not all(_pure(c) for c in parts):       # a condition on memory may change in the body
            return self.visit(stmt)
        facts = [((c,), True) for c in parts] if value else [(tuple(parts), False)]
        self.facts.extend(facts)
        try:
            return self.visit(stmt)
        finally:
            del self.facts[len(self.facts) - len(facts):]

    def visit_IfThenElse(self, s):
        cond = self.ana.simplify(s.condition)
        v = truth(cond)
        if v is None:
            v = self._known(cond)
        if v is True:
            return self.visit(s.then_case)
        if v is False:
            return self.visit(s.else_case) if s.else_case is not None else _no_op()
        then_case = self._branch(s.then_case, cond, True)
        else_case = self._branch(s.else_case, cond, False) if s.else_case is not None else None
        if else_case is not None and S.is_no_op(else_case):
            else_case = None
        if S.is_no_op(then_case) and else_case is None:
            return _no_op()
        if cond is s.condition and then_case is s.then_case and else_case is s.else_case:
            return s
        return S.IfThenElse(cond, then_case, else_case)

    def visit_AssertStmt(self, s):
        cond = self.ana.simplify(s.condition)
        body = self.visit(s.body)
        if truth(cond) is True:
            return body
        if cond is s.condition and body is s.body:
            return s
        return s.replace(condition=cond, body=body)


class _Unmask(IRMutator):
    """Drop the masks of loads that cannot fault (see the module docstring)."""

    def __init__(self, outer):
        super().__init__()
        self.outer = outer

    def visit_Load(self, e):
        e = self.generic_visit(e)
        if e.predicate is None:
            return e
        o = self.outer
        a = o.allocs.get(e.buffer_var)
        if a is not None and o._in_bounds(e.index, a[0]):
            return o.ana.simplify(e.replace(predicate=None))
        if type(e.index) is E.Broadcast:      # one address: safe when the first or last lane reads it
            lanes = e.index.lanes
            for k in (0, lanes - 1):
                active = _lane(e.predicate, k)
                if active is not None and o.ana.can_prove(active):
                    return o.ana.simplify(e.replace(predicate=None))
        return e


def simplify_stmt(stmt, analyzer=None, keep_unit_loops=False):
    """Return ``stmt`` with every expression simplified and trivial control flow folded.

    ``analyzer`` may carry bindings of enclosing scopes; it is left as it was.
    ``keep_unit_loops``: loops of extent one stay loops.
    """
    return StmtSimplifier(analyzer if analyzer is not None else Analyzer(), keep_unit_loops).visit(stmt)
