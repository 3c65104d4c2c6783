"""HoistIfThenElse: move an ``if`` whose condition a loop does not change out of that loop.

    for i: for j: for k: if (i < 2) A else B
      ->  for i: if (i < 2) { for j: for k: A } else { for j: for k: B }

The test then runs once per outer iteration instead of once per innermost one,
and each copy of the loop nest is branch-free (vectorizable).  An ``if`` rises
above each enclosing loop whose body it is (alone, with no sequence in
between) and whose variable its condition does not use.  Conditions that read
memory, call something impure or use a ``let`` variable stay where they are.
A loop bound to a thread (``thread_extent``) is a barrier unless
``block_scope`` (TVM's config ``tir.HoistIfThenElse``:
``{"support_block_scope_hosting": True}``), and then a condition on a thread
index still stays inside that thread's scope.  A thread index bound again in its kernel
with another extent is an error (``simplify.launch_extent``), as in TVM's pass.
"""
from __future__ import annotations

from ..ir.expr import IntImm, Var
from ..ir.functor import IRMutator, IRVisitor, collect_vars
from ..ir.stmt import Evaluate, IfThenElse
from ..ir.structural import same_value
from ..ir.tensor import IterVar
from .remove_no_op import PURE_CALLS, remove_no_op
from .simplify import launch_extent
from .unroll import fresh_copy


class _Loop:
    __slots__ = ("var", "is_block", "reached_seq", "conds")

    def __init__(self, var, is_block):
        self.var, self.is_block, self.reached_seq, self.conds = var, is_block, False, []


class _ReadsOrCalls(IRVisitor):
    def __init__(self):
        super().__init__()
        self.found = False

    def visit_Load(self, e):
        self.found = True

    def visit_ProducerLoad(self, e):
        self.found = True

    def visit_Call(self, e):
        if e.op not in PURE_CALLS:
            self.found = True
        else:
            self.generic_visit(e)


def _pure(cond):
    v = _ReadsOrCalls()
    v.visit(cond)
    return not v.found


def _loop_var(s):
    """The variable an AttrStmt binds (a thread index or virtual thread), or None."""
    node = s.node
    if isinstance(node, Var):
        return node
    var = getattr(node, "var", None)
    return var if isinstance(var, Var) else None


class _Hoister(IRMutator):
    def __init__(self, block_scope):
        super().__init__()
        self.block_scope = block_scope
        self.active = []          # enclosing loops, outermost first
        self.let_vars = set()     # let-bound variables in scope
        self.kernel = {}          # thread index Var -> extent, in the kernel being visited
        self.changed = False

    # -- where a condition may go
    def _attempt(self, cond, has_else):
        if not self.active or not _pure(cond):
            return
        used = set(collect_vars(cond))
        if used & self.let_vars:
            return
        block_vars = {lp.var for lp in self.active if lp.is_block}
        if used & block_vars and not self.block_scope:
            return
        dest = self.active[0]
        for k in range(len(self.active) - 1, -1, -1):
            lp = self.active[k]
            if lp.reached_seq or lp.var in used or (lp.is_block and not self.block_scope):
                if k == len(self.active) - 1:
                    return
                dest = self.active[k + 1]
                break
        dest.conds.append((cond, has_else))

    # -- the tree
    def _loop(self, s, var, is_block):
        info = _Loop(var, is_block)
        self.active.append(info)
        try:
            out = self.generic_visit(s)
        finally:
            self.active.pop()
        for cond, has_else in reversed(info.conds):
            then = _select(out, cond, True)
            if then is out:          # the if vanished from this copy (removed as a no-op): nothing to hoist
                continue
            other = remove_no_op(fresh_copy(_select(out, cond, False), {})) if has_else else None
            out = IfThenElse(cond, then, other)
            self.changed = True
        return out

    def visit_For(self, s):
        return self._loop(s, s.loop_var, False)

    def visit_AttrStmt(self, s):
        var = _loop_var(s)
        if var is None:
            return self.generic_visit(s)
        if s.attr_key != "thread_extent" or not isinstance(s.node, IterVar):
            return self._loop(s, var, True)
        opens_kernel = not self.kernel
        launch_extent(self.kernel, s.node, s.value)
        try:
            return self._loop(s, var, True)
        finally:
            if opens_kernel:
                self.kernel = {}

    def visit_SeqStmt(self, s):
        if self.active:
            self.active[-1].reached_seq = True
        return self.generic_visit(s)

    def visit_LetStmt(self, s):
        self.let_vars.add(s.var)
        try:
            return self.generic_visit(s)
        finally:
            self.let_vars.discard(s.var)

    def visit_IfThenElse(self, s):
        self._attempt(s.condition, s.else_case is not None)
        return self.generic_visit(s)


class _Select(IRMutator):
    """Replace each ``if`` on ``cond`` by the branch ``value`` picks."""

    def __init__(self, cond, value):
        super().__init__()
        self.cond, self.value = cond, value

    def visit_IfThenElse(self, s):
        if s.condition is self.cond or same_value(s.condition, self.cond):
            branch = s.then_case if self.value else s.else_case
            if branch is None:
                return _nop()
            return self.visit(branch)
        return self.generic_visit(s)


def _nop():
    return Evaluate(IntImm("int32", 0))


def _select(stmt, cond, value):
    return _Select(cond, value).visit(stmt)


def hoist_if_then_else(stmt, block_scope=False):
    """``stmt`` with loop-invariant ifs moved above the loops they do not depend on."""
    h = _Hoister(block_scope)
    out = h.visit(stmt)
    return out if h.changed else stmt

