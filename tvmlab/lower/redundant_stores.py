"""One writer for a store every thread of a block would make alike.

A stage computed at a block-level loop without binding its own axes to
``threadIdx.*`` (TVM's test_multiple_cache_write computes ``B`` at
``blockIdx.x``) runs on every thread of the block: each thread stores the same
value into the same shared or global element.  The values agree, yet it is a
race, and it multiplies the memory traffic.  This pass (on kernels from
``split_host_device``) guards such a store with ``threadIdx.t == 0`` for each
thread axis ``t`` that neither its index, its value (also through "local"
buffers and variables computed from ``t``), nor any enclosing condition or loop
depends on.  Stores under a condition that uses ``t`` are left alone (guarding
could drop them).  The total of a cross-thread reduction over ``threadIdx.x``
(``tvm_warp_shuffle`` from a fixed lane, or a load of the shared tree's slot 0)
is the same in every thread along it.  Barriers are already placed, and the guard holds only the
store, so they stay uniform.
"""
from __future__ import annotations

from ..ir import op as _op
from ..ir.expr import IntImm
from ..ir.functor import IRMutator, IRVisitor, collect_vars, post_order_visit
from ..ir.stmt import Allocate, IfThenElse


def _uses(e, tainted_vars, tainted_bufs, lanes=None):
    """Whether ``e`` reads a tainted variable or buffer.  With ``lanes`` (threadIdx.x's variable), a
    ``tvm_warp_shuffle(v, lane, width)`` whose lane does not depend on it is every lane's value
    alike: cross-thread reductions end so, handing each thread the total."""
    class V(IRVisitor):
        found = False

        def visit_Var(self, v):
            self.found = self.found or v in tainted_vars

        def visit_Load(self, ld):
            self.found = self.found or ld.buffer_var in tainted_bufs
            self.generic_visit(ld)

        def visit_Call(self, c):
            if lanes is not None and c.op == "tvm_warp_shuffle" and len(c.args) == 3 and \
                    lanes not in collect_vars(c.args[1]):
                self.visit(c.args[1])
                return
            self.generic_visit(c)
    v = V()
    v.visit(e)
    return v.found


def _lanes(t):
    return t if t.name == "threadIdx.x" else None


class _Taint(IRVisitor):
    """Variables and "local" buffers whose values may differ along thread variable ``t``."""

    def __init__(self, t, local):
        super().__init__()
        self.vars, self.bufs, self.local, self.conds = {t}, set(), local, []
        self.lanes = _lanes(t)
        self.changed = False

    def _mark_var(self, v, *exprs):
        if v not in self.vars and any(_uses(e, self.vars, self.bufs, self.lanes) for e in exprs
                                      if e is not None):
            self.vars.add(v)
            self.changed = True

    def visit_LetStmt(self, s):
        self._mark_var(s.var, s.value)
        self.generic_visit(s)

    def visit_Let(self, e):
        self._mark_var(e.var, e.value)
        self.generic_visit(e)

    def visit_For(self, s):
        self._mark_var(s.loop_var, s.min)
        self.conds.append(s.extent)
        self.generic_visit(s)
        self.conds.pop()

    def visit_IfThenElse(self, s):
        self.visit(s.condition)
        self.conds.append(s.condition)
        self.visit(s.then_case)
        if s.else_case is not None:
            self.visit(s.else_case)
        self.conds.pop()

    def visit_Store(self, s):
        self.generic_visit(s)
        if s.buffer_var in self.local and s.buffer_var not in self.bufs and any(
                _uses(e, self.vars, self.bufs, self.lanes) for e in (s.value, s.index, s.predicate, *self.conds)
                if e is not None):
            self.bufs.add(s.buffer_var)
            self.changed = True


class _Guard(IRMutator):
    def __init__(self, threads, taints, local):
        super().__init__()
        self.threads, self.taints, self.local = threads, taints, local
        self.conds = []

    def visit_For(self, s):
        # only the trip count: a start that depends on ``t`` taints the loop variable instead
        self.conds.append(s.extent)
        try:
            return self.generic_visit(s)
        finally:
            self.conds.pop()

    def visit_IfThenElse(self, s):
        self.conds.append(s.condition)
        try:
            return self.generic_visit(s)
        finally:
            self.conds.pop()

    def visit_Store(self, s):
        if s.buffer_var in self.local:
            return s
        guards = []
        for t in self.threads:
            tv, tb = self.taints[t]
            if not any(_uses(e, tv, tb, _lanes(t)) for e in (s.value, s.index, s.predicate, *self.conds)
                       if e is not None):
                guards.append(_op.eq(t, IntImm(t.dtype, 0)))
        return IfThenElse(_op.all(*guards), s) if guards else s


def guard_redundant_stores(kernel):
    """``kernel`` (a PrimFunc from ``split_host_device``) with redundant shared/global stores guarded."""
    launch = kernel.attrs.get("launch", {})
    threads = [v for tag, v in kernel.attrs.get("thread_vars", {}).items() if tag.startswith("threadIdx")
               and not (isinstance(launch.get(tag), IntImm) and launch[tag].value == 1)]
    if not threads:
        return kernel
    local = set()
    post_order_visit(kernel.body, lambda n: local.add(n.buffer_var) if isinstance(n, Allocate)
                     and n.scope == "local" else None)
    taints = {}
    for t in threads:
        tv = _Taint(t, local)
        tv.changed = True
        while tv.changed:                       # a local buffer's taint may reach earlier statements
            tv.changed = False
            tv.visit(kernel.body)
        taints[t] = (tv.vars, tv.bufs)
    body = _Guard(threads, taints, local).visit(kernel.body)
    return kernel if body is kernel.body else kernel.with_body(body)
