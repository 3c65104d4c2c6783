"""Remove statements that do nothing, so AST3 shows (and codegen emits) only real work.

Dropped: loops of non-positive constant extent and loops, ifs, lets,
attributes and allocations whose bodies do nothing; ``Evaluate`` of an
expression without side effects; a store of the value just loaded from the same
address; a store whose predicate is false in every lane (what is left of a
guarded tile in a loop partition where the guard never holds); empty and
one-element sequences.  Assertions stay (checking is their
effect).
"""
from __future__ import annotations

from ..ir import op as _op
from ..ir.arith.rewrite import truth
from ..ir.expr import IntImm, Load, Var
from ..ir.functor import IRMutator, IRVisitor
from ..ir.node import Node
from ..ir.stmt import Evaluate, IfThenElse, is_no_op, seq

PURE_CALLS = frozenset((
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
    "sigmoid", "floor", "ceil", "round", "trunc", "erf", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "nearbyint", "fabs", "abs", "pow", "fmod", "isnan", "likely",
    "if_then_else", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
    "shift_right", "popcount"))


def _no_op():
    return Evaluate(IntImm("int32", 0))


class _HasSideEffect(IRVisitor):
    def __init__(self):
        super().__init__()
        self.found = False

    def visit_Call(self, e):
        if e.op not in PURE_CALLS:
            self.found = True
        else:
            self.generic_visit(e)


def has_side_effect(e):
    """True when evaluating ``e`` may do more than compute a value (an opaque call)."""
    v = _HasSideEffect()
    v.visit(e)
    return v.found


def same_expr(a, b):
    """Structural equality of expressions; variables compare by identity."""
    if a is b:
        return True
    if type(a) is not type(b):
        if isinstance(a, (int, float, str, bool)) or isinstance(b, (int, float, str, bool)):
            return a == b and type(a) is type(b)
        return False
    if isinstance(a, Var):
        return False
    if isinstance(a, Node):
        return all(same_expr(getattr(a, f), getattr(b, f)) for f in a.field_names())
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_expr(x, y) for x, y in zip(a, b))
    return a == b


class _Remover(IRMutator):
    def visit_SeqStmt(self, s):
        return seq(*[self.visit(x) for x in s.seq])

    def visit_For(self, s):
        if isinstance(s.extent, IntImm) and s.extent.value <= 0:
            return _no_op()
        body = self.visit(s.body)
        if is_no_op(body):
            return _no_op()
        return s if body is s.body else s.replace(body=body)

    def _body_only(self, s):
        body = self.visit(s.body)
        if is_no_op(body):
            return _no_op()
        return s if body is s.body else s.replace(body=body)

    visit_LetStmt = _body_only
    visit_AttrStmt = _body_only
    visit_Allocate = _body_only

    def visit_IfThenElse(self, s):
        then = self.visit(s.then_case)
        other = self.visit(s.else_case) if s.else_case is not None else None
        if other is not None and is_no_op(other):
            other = None
        if is_no_op(then):
            if other is None:
                return _no_op()
            return IfThenElse(_op.logical_not(s.condition), other)
        if then is s.then_case and other is s.else_case:
            return s
        return IfThenElse(s.condition, then, other)

    def visit_Evaluate(self, s):
        if is_no_op(s) or not has_side_effect(s.value):
            return _no_op()
        return s

    def visit_Store(self, s):
        v = s.value
        if s.predicate is not None and truth(s.predicate) is False and not has_side_effect(v):
            return _no_op()
        if (isinstance(v, Load) and v.buffer_var is s.buffer_var and v.predicate is None
                and s.predicate is None and same_expr(v.index, s.index)):
            return _no_op()
        return s


def remove_no_op(stmt):
    """``stmt`` without the statements that have no effect."""
    return _Remover().visit(stmt)
