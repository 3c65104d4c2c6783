"""Barrier insertion for "shared" memory (AST3, before the host/device split).

Threads of a block see each other's writes to a "shared" buffer only after a
barrier.  This pass walks each statement sequence in program order and keeps
the shared buffers read and written since the last barrier; a statement that
reads what was written (RAW), or writes what was read or written (WAR, WAW),
gets a barrier before it.  A loop whose end conflicts with its own beginning
(the next iteration overwrites a tile the last one read) gets a barrier at
the end of its body.  The analysis is by buffer, not by element: it may add
a barrier that is not strictly needed, never miss one.

The barrier is ``Evaluate(Call("void", "tvm_storage_sync", (StringImm("shared"),)))``;
CUDA prints ``__syncthreads()``, GLSL ``barrier()``.
"""
from __future__ import annotations

from ..ir.expr import Call, StringImm
from ..ir.functor import IRVisitor
from ..ir.stmt import (Allocate, AttrStmt, Evaluate, For, IfThenElse, LetStmt, SeqStmt,
                       seq)


def barrier():
    """The target-neutral barrier statement for shared memory."""
    return Evaluate(Call("void", "tvm_storage_sync", (StringImm("shared"),)))


def is_barrier(s):
    return (isinstance(s, Evaluate) and isinstance(s.value, Call)
            and s.value.op == "tvm_storage_sync")


class _Access(IRVisitor):
    def __init__(self, shared):
        super().__init__()
        self.shared, self.reads, self.writes = shared, set(), set()

    def visit_Load(self, e):
        if e.buffer_var in self.shared:
            self.reads.add(e.buffer_var)
        self.generic_visit(e)

    def visit_Store(self, s):
        if s.buffer_var in self.shared:
            self.writes.add(s.buffer_var)
        self.generic_visit(s)


def _accesses(stmt, shared):
    a = _Access(shared)
    a.visit(stmt)
    return a.reads, a.writes


class _State:
    __slots__ = ("reads", "writes")

    def __init__(self, reads=(), writes=()):
        self.reads, self.writes = set(reads), set(writes)

    def conflicts(self, reads, writes):
        return bool(self.writes & (reads | writes)) or bool(self.reads & writes)

    def add(self, reads, writes):
        self.reads |= reads
        self.writes |= writes

    def copy(self):
        return _State(self.reads, self.writes)


class _Sync:
    def __init__(self):
        self.shared = set()

    def run(self, s, st):
        """Rewrite ``s`` given the pending accesses ``st`` (updated in place); returns the new stmt."""
        if isinstance(s, Allocate):
            return s.replace(body=self.run(s.body, st))
        if isinstance(s, (AttrStmt, LetStmt)):
            return s.replace(body=self.run(s.body, st))
        if isinstance(s, SeqStmt):
            return seq(*[self.run(x, st) for x in s.seq])
        if is_barrier(s):
            st.reads.clear()
            st.writes.clear()
            return s
        reads, writes = _accesses(s, self.shared)
        if not reads and not writes:
            return s
        if isinstance(s, For):
            if st.conflicts(reads, writes):     # the barrier goes before the loop, not into every iteration
                st.reads.clear()
                st.writes.clear()
                return seq(barrier(), self._loop(s, st))
            return self._loop(s, st)
        if isinstance(s, IfThenElse):
            if st.conflicts(reads, writes):
                # before the if: its condition may differ between threads, and a
                # barrier that some threads of a block skip is undefined behaviour
                st.reads.clear()
                st.writes.clear()
                return seq(barrier(), self.run(s, st))
            a = st.copy()
            then = self.run(s.then_case, a)
            if s.else_case is None:
                st.add(a.reads, a.writes)
                return s.replace(then_case=then)
            b = st.copy()
            other = self.run(s.else_case, b)
            st.reads, st.writes = a.reads | b.reads, a.writes | b.writes
            return s.replace(then_case=then, else_case=other)
        if st.conflicts(reads, writes):
            st.reads, st.writes = set(reads), set(writes)
            return seq(barrier(), s)
        st.add(reads, writes)
        return s

    def _loop(self, s, st):
        entry = st.copy()
        body = self.run(s.body, st)
        head = _head_accesses(body, self.shared)
        if st.conflicts(*head):
            body = seq(body, barrier())
            st.reads.clear()
            st.writes.clear()
        else:
            st.add(entry.reads, entry.writes)   # the loop may run zero times
        return s.replace(body=body)


def _head_accesses(body, shared):
    """Shared accesses from the start of ``body`` up to its first top-level barrier."""
    reads, writes = set(), set()
    items = body.seq if isinstance(body, SeqStmt) else (body,)
    for x in items:
        if is_barrier(x):
            break
        r, w = _accesses(x, shared)
        reads |= r
        writes |= w
    return reads, writes


class _Shared(IRVisitor):
    def __init__(self):
        super().__init__()
        self.vars = set()

    def visit_Allocate(self, s):
        if s.scope == "shared":
            self.vars.add(s.buffer_var)
        self.generic_visit(s)


def thread_sync(stmt):
    """Insert shared-memory barriers into ``stmt`` (AST3 with Allocate scope "shared")."""
    found = _Shared()
    found.visit(stmt)
    sync = _Sync()
    sync.shared = found.vars
    return sync.run(stmt, _State())


