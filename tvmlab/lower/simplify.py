"""Simplify a statement: every expression, with the ranges its enclosing scopes give.

Loop variables are bound to ``[min, min + extent)`` inside their loop, thread
variables to ``[0, extent)`` inside their ``thread_extent`` attribute, let
variables to their value (pure index arithmetic is inlined, so that rules see
through the variable).  With those facts guards that always hold are
folded away (also ``likely`` ones), as are load and store predicates that
hold in every lane (a guard the loop partition made redundant); loops of
extent 0 disappear and loops of extent 1 become their body with the loop
variable replaced by ``min``.
"""
from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.arith import Analyzer, IntervalSet
from ..ir.arith.divmod import is_index
from ..ir.arith.rewrite import drop_true_predicate, inlinable, truth
from ..ir.functor import IRMutator, substitute, uses_var
from ..ir.tensor import IterVar, Range

_THREAD_KEYS = ("thread_extent", "virtual_thread")


def _no_op():
    return S.Evaluate(E.IntImm("int32", 0))


class StmtSimplifier(IRMutator):
    """Simplify every expression of a statement tree under the bindings of its scopes."""

    def __init__(self, analyzer):
        super().__init__()
        self.ana = analyzer

    def visit_Expr(self, e):
        return self.ana.simplify(e)

    def visit_Store(self, s):
        return drop_true_predicate(self.generic_visit(s))

    def visit_For(self, s):
        mn, ext = self.ana.simplify(s.min), self.ana.simplify(s.extent)
        if self.ana.const_int_bound(ext)[1] <= 0:
            return _no_op()
        if type(ext) is E.IntImm and ext.value == 1 and s.kind != "thread_binding":
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
            with self.ana.with_bindings(s.node.var, Range(E.IntImm(value.dtype, 0), value)):
                body = self.visit(s.body)
        else:
            body = self.visit(s.body)
        if value is s.value and body is s.body:
            return s
        return s.replace(value=value, body=body)

    def visit_IfThenElse(self, s):
        cond = self.ana.simplify(s.condition)
        v = truth(cond)
        if v is True:
            return self.visit(s.then_case)
        if v is False:
            return self.visit(s.else_case) if s.else_case is not None else _no_op()
        then_case = self.visit(s.then_case)
        else_case = self.visit(s.else_case) if s.else_case is not None else None
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


def simplify_stmt(stmt, analyzer=None):
    """Return ``stmt`` with every expression simplified and trivial control flow folded.

    ``analyzer`` may carry bindings of enclosing scopes; it is left as it was.
    """
    return StmtSimplifier(analyzer if analyzer is not None else Analyzer()).visit(stmt)
