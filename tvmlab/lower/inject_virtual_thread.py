"""Virtual threads: an axis bound to "vthread" is interleaved inside each real thread.

Binding to ``vthread`` splits work the way a thread binding does (bound
inference relaxes shared buffers over it) but launches no hardware thread.
As TVM's InjectVirtualThread does, each real thread runs the virtual threads
*interleaved*: the virtual-thread loop is pushed down through loops, ifs and
lets that do not depend on it, to the statements that do, so that ``for k:
acc += ...`` becomes ``for k: {acc[0] += ...; acc[1] += ...}`` (independent
accumulations in flight at once, the register-blocking trick).  A buffer
allocated inside the scope and written differently by each virtual thread
gets one copy per virtual thread (the index is offset by ``vt * size``); a
buffer they all fill alike (a shared tile) stays one.  A statement that does
not depend on the virtual thread runs once.  A reduction across the threads of a
block (``thread_allreduce``) is not interleaved: each virtual thread runs its own.
"""
from __future__ import annotations

from ..ir import op as _op
from ..ir.expr import Call, Load, Ramp, Var
from ..ir.functor import IRMutator, IRVisitor, collect_vars, substitute
from ..ir.stmt import THREAD_ALLREDUCE, Allocate, AttrStmt, For, IfThenElse, LetStmt, SeqStmt, Store, seq
from ..ir.tensor import IterVar


def is_vthread(node):
    return isinstance(node, IterVar) and node.thread_tag in ("vthread", "cthread")


class _Touched(IRVisitor):
    """Variables and buffers whose values depend on ``vt`` (a fixed point over lets and stores)."""

    def __init__(self, vt):
        super().__init__()
        self.dep = {vt}
        self.changed = True
        self.conds = []         # conditions and loop bounds around the statement visited

    def _uses(self, *nodes):
        found = []

        class V(IRVisitor):
            def visit_Var(v, x):  # noqa: N805
                if x in self.dep:
                    found.append(x)

            def visit_Load(v, ld):  # noqa: N805
                if ld.buffer_var in self.dep:
                    found.append(ld.buffer_var)
                v.generic_visit(ld)
        for n in nodes:
            if n is not None and not found:
                V().visit(n)
        return bool(found)

    def _add(self, v):
        if v not in self.dep:
            self.dep.add(v)
            self.changed = True

    def visit_LetStmt(self, s):
        if self._uses(s.value):
            self._add(s.var)
        self.generic_visit(s)

    def visit_Store(self, s):
        # also a store only some virtual threads make: the buffer then differs between them
        if self._uses(s.value, s.index, s.predicate, *self.conds):
            self._add(s.buffer_var)
        self.generic_visit(s)

    def visit_IfThenElse(self, s):
        self.visit(s.condition)
        self.conds.append(s.condition)
        try:
            self.visit(s.then_case)
            if s.else_case is not None:
                self.visit(s.else_case)
        finally:
            self.conds.pop()

    def visit_For(self, s):
        self.visit(s.min)
        self.visit(s.extent)
        self.conds += [s.min, s.extent]
        try:
            self.visit(s.body)
        finally:
            del self.conds[-2:]


def touched(vt, body):
    t = _Touched(vt)
    while t.changed:
        t.changed = False
        t.visit(body)
    return t.dep


class _Expand(IRMutator):
    """One copy per virtual thread of the buffers in ``sizes``: index + vt * size."""

    def __init__(self, vt, sizes):
        super().__init__()
        self.vt, self.sizes = vt, sizes

    def _index(self, var, index):
        off = _op.mul(self.vt, self.sizes[var])
        if isinstance(index, Ramp):
            return Ramp(_op.add(index.base, off), index.stride, index.lanes)
        return _op.add(index, off)

    def visit_Load(self, e):
        e = self.generic_visit(e)
        if e.buffer_var in self.sizes:
            return Load(e.dtype, e.buffer_var, self._index(e.buffer_var, e.index), e.predicate)
        return e

    def visit_Store(self, s):
        s = self.generic_visit(s)
        if s.buffer_var in self.sizes:
            return Store(s.buffer_var, s.value, self._index(s.buffer_var, s.index), s.predicate)
        return s

    def visit_Call(self, e):
        e = self.generic_visit(e)
        if e.op == "tvm_access_ptr" and e.args[1] in self.sizes:
            args = list(e.args)
            args[2] = _op.add(args[2], _op.mul(self.vt, self.sizes[e.args[1]]))
            return Call(e.dtype, e.op, tuple(args))
        return e


class _Injector:
    """Push the loop over ``vt`` down to the statements that depend on it."""

    def __init__(self, vt, n, dep):
        self.vt, self.n, self.dep = vt, n, dep

    def uses(self, *nodes):
        for x in nodes:
            if x is None:
                continue
            if any(v in self.dep for v in collect_vars(x)):
                return True
            found = []

            class V(IRVisitor):
                def visit_Load(v, ld):  # noqa: N805
                    if ld.buffer_var in self.dep:
                        found.append(1)
                    v.generic_visit(ld)

                def visit_Store(v, st):  # noqa: N805
                    if st.buffer_var in self.dep:
                        found.append(1)
                    v.generic_visit(st)
            V().visit(x)
            if found:
                return True
        return False

    def loop(self, s):
        v = Var(self.vt.name, self.vt.dtype)
        return For(v, _op.const(0, v.dtype), _op.const(self.n, "int32"), "unrolled",
                   substitute(s, {self.vt: v}))

    def visit(self, s):
        if not self.uses(s):
            return s
        if isinstance(s, SeqStmt):
            return seq(*[self.visit(x) for x in s.seq])
        if isinstance(s, For) and not self.uses(s.extent) and s.kind not in ("parallel", "vectorized"):
            if self.uses(s.min):        # a loop from a vthread-dependent start: count from 0
                v = Var(s.loop_var.name, s.loop_var.dtype)
                body = substitute(s.body, {s.loop_var: _op.add(v, s.min)})
                return s.replace(loop_var=v, min=_op.const(0, v.dtype), body=self.visit(body))
            return s.replace(body=self.visit(s.body))
        if isinstance(s, IfThenElse) and not self.uses(s.condition):
            return IfThenElse(s.condition, self.visit(s.then_case),
                              None if s.else_case is None else self.visit(s.else_case))
        if isinstance(s, LetStmt) and not self.uses(s.value):
            return s.replace(body=self.visit(s.body))
        if isinstance(s, AttrStmt) and s.attr_key == THREAD_ALLREDUCE:
            return self.loop(s)         # one whole reduction across the block per virtual thread
        if isinstance(s, AttrStmt) and not self.uses(s.value) and s.attr_key != "thread_extent":
            return s.replace(body=self.visit(s.body))
        if isinstance(s, AttrStmt) and s.attr_key == "thread_extent" and not is_vthread(s.node) \
                and not self.uses(s.value):
            return s.replace(body=self.visit(s.body))
        if isinstance(s, Allocate) and not self.uses(*s.extents):
            return s.replace(body=self.visit(s.body))
        return self.loop(s)


class _Inject(IRMutator):
    def visit_AttrStmt(self, s):
        if s.attr_key in ("thread_extent", "virtual_thread") and is_vthread(s.node):
            body = self.visit(s.body)       # inner virtual threads first
            vt = s.node.var
            n = s.value.value if hasattr(s.value, "value") else None
            if n is None:
                from ..errors import LoweringError
                raise LoweringError(f"virtual thread {vt.name} has the symbolic extent {s.value}; "
                                    "a vthread extent must be a constant")
            dep = touched(vt, body)
            sizes = {}

            class Allocs(IRVisitor):
                def visit_Allocate(v, a):  # noqa: N805
                    # a shared tile's bounds already cover every virtual thread (bound inference
                    # relaxes it over them): they fill it alike, whatever the index looks like
                    if a.buffer_var in dep and not str(a.scope).startswith("shared"):
                        sizes[a.buffer_var] = a.extents[0]
                    v.generic_visit(a)
            Allocs().visit(body)
            if sizes:
                class Grow(IRMutator):
                    def visit_Allocate(m, a):  # noqa: N805
                        a = m.generic_visit(a)
                        if a.buffer_var in sizes:
                            return a.replace(extents=(_op.mul(a.extents[0], n),))
                        return a
                body = Grow().visit(_Expand(vt, sizes).visit(body))
            return _Injector(vt, n, dep).visit(body)
        return self.generic_visit(s)


def inject_virtual_thread(stmt):
    """Interleave every ``vthread`` scope of ``stmt`` (AST3) inside its real threads."""
    return _Inject().visit(stmt)
