"""Merge a kernel's "shared.dyn" allocations into one byte buffer, reusing memory by liveness.

A GPU kernel has a single block of dynamic shared memory, sized at launch.
Every ``Allocate`` of scope "shared.dyn" inside a kernel (the outermost
``thread_extent`` attribute) becomes a region of one ``uint8`` allocation
``buf_dyn_shmem`` placed at the top of the kernel; loads, stores and
``tvm_access_ptr`` calls on the old buffer read and write the merged one at
the region's offset (in elements of the access type).

Regions are planned by liveness over the kernel's statements in program
order.  A buffer is live from the first statement that touches it to the
last; one touched inside a loop is live for the whole loop (the next
iteration may read it again).  A region is only handed to another buffer
from the statement *after* its last use, never inside the statement that
still reads it: other threads may not have read it yet there, and no barrier
can separate the two.  Between statements the hand-off is a write after
other threads' reads of the same buffer, which ThreadSync (run after this
pass) separates with a barrier.  Constant-size regions are placed first-fit
in a free list whose neighbouring free blocks coalesce (two dead 512-byte
buffers side by side hold a 1 KiB one); symbolic-size regions follow the
constant part, one after the other.  Every region starts at a multiple of 16
bytes, so vector accesses up to 16 bytes stay aligned.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import Broadcast, Call, IntImm, Load, Ramp, Var
from ..ir.functor import IRMutator, IRVisitor
from ..ir.stmt import Allocate, AttrStmt, Store

SCOPE = "shared.dyn"
ALIGN = 16
MERGED_NAME = "buf_dyn_shmem"


def _elem_bytes(dtype):
    return max(1, dt.bits(dtype) * dt.lanes(dtype) // 8)


class _Allocs(IRVisitor):
    """The "shared.dyn" allocations below a statement."""

    def __init__(self):
        super().__init__()
        self.found = {}      # Var -> Allocate

    def visit_Allocate(self, s):
        if s.scope == SCOPE:
            self.found[s.buffer_var] = s
        self.generic_visit(s)


class _Liveness(IRVisitor):
    """First and last statement (program order) touching each buffer; loops extend both."""

    def __init__(self, dyn):
        super().__init__()
        self.dyn = dyn
        self.pos = 0
        self.first, self.last = {}, {}
        self.loops = []      # sets of the buffers touched in each enclosing loop

    def touch(self, v):
        if v in self.dyn:
            self.first.setdefault(v, self.pos)
            self.last[v] = self.pos
            for seen in self.loops:
                seen.add(v)

    def _leaf(self, s):
        self.pos += 1
        self.generic_visit(s)

    visit_Evaluate = visit_LetStmt = visit_AssertStmt = visit_IfThenElse = _leaf

    def visit_Store(self, s):
        self.pos += 1
        for part in (s.value, s.index, s.predicate):
            self.visit(part)
        self.touch(s.buffer_var)

    def visit_Load(self, e):
        self.touch(e.buffer_var)
        self.visit(e.index)
        self.visit(e.predicate)

    def visit_Allocate(self, s):
        for part in (*s.extents, s.condition, s.body):
            self.visit(part)

    def visit_Call(self, e):
        if e.op == "tvm_access_ptr" and isinstance(e.args[1], Var):
            self.touch(e.args[1])
            for a in e.args[2:]:
                self.visit(a)
            return
        self.generic_visit(e)

    def visit_Var(self, v):
        if v in self.dyn:
            raise LoweringError(f"MergeDynamicSharedMemoryAllocations: buffer {v.name} is used as a bare "
                                "pointer; pass it with buffer.access_ptr(...) so its offset can be added")

    def _loop(self, s, parts):
        self.pos += 1
        start = self.pos
        self.loops.append(set())
        for p in parts:
            self.visit(p)
        seen = self.loops.pop()
        for v in seen:
            self.first[v] = min(self.first[v], start)
            self.last[v] = max(self.last[v], self.pos)

    def visit_For(self, s):
        self.pos += 1
        self.visit(s.min)
        self.visit(s.extent)
        self._loop(s, (s.body,))

    def visit_While(self, s):
        self._loop(s, (s.condition, s.body))


class _Arena:
    """First-fit byte allocator whose adjacent free blocks coalesce."""

    def __init__(self):
        self.top = 0
        self.free = []       # sorted [start, end)

    def alloc(self, size):
        for k, (a, b) in enumerate(self.free):
            if b - a >= size:
                if b - a == size:
                    del self.free[k]
                else:
                    self.free[k] = (a + size, b)
                return a
        if self.free and self.free[-1][1] == self.top:      # grow the free block at the top
            a, _ = self.free.pop()
            self.top = a + size
            return a
        a, self.top = self.top, self.top + size
        return a

    def release(self, start, size):
        self.free.append((start, start + size))
        self.free.sort()
        merged = []
        for a, b in self.free:
            if merged and merged[-1][1] == a:
                merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        self.free = merged


def _plan(kernel, allocs):
    """Byte offset (int or expression) of each buffer, and the merged size."""
    live = _Liveness(set(allocs))
    live.visit(kernel)
    ana = Analyzer()
    sizes = {}
    for v, a in allocs.items():
        count = _op.const(1)
        for e in a.extents:
            count = _op.mul(count, e)
        nbytes = ana.simplify(_op.mul(count, _op.const(_elem_bytes(a.dtype))))
        if isinstance(nbytes, IntImm):
            sizes[v] = -(-nbytes.value // ALIGN) * ALIGN
        else:
            sizes[v] = ana.simplify(_op.mul(_op.floordiv(_op.add(nbytes, ALIGN - 1), ALIGN), ALIGN))
    order = sorted((v for v in allocs if v in live.first), key=lambda v: (live.first[v], v.serial))
    arena, offsets, held = _Arena(), {}, []
    for v in order:
        if not isinstance(sizes[v], int):
            continue
        for u in [u for u in held if live.last[u] < live.first[v]]:
            arena.release(offsets[u], sizes[u])
            held.remove(u)
        offsets[v] = arena.alloc(sizes[v])
        held.append(v)
    total = _op.const(arena.top)
    for v in order:
        if not isinstance(sizes[v], int):
            offsets[v] = total
            total = ana.simplify(_op.add(total, sizes[v]))
    return offsets, ana.simplify(total)


class _Rewrite(IRMutator):
    def __init__(self, allocs, offsets, merged):
        super().__init__()
        self.allocs, self.offsets, self.merged = allocs, offsets, merged

    def _offset(self, v, index):
        """``index`` moved past the region of ``v`` (in elements of the buffer's dtype)."""
        off = self.offsets[v]
        size = _elem_bytes(self.allocs[v].dtype)
        elems = _op.const(off // size) if isinstance(off, int) else _op.floordiv(off, _op.const(size))
        elems = _op.cast(index.dtype if dt.lanes(index.dtype) == 1 else dt.element_of(index.dtype), elems)
        if isinstance(index, Ramp):
            return Ramp(_op.add(index.base, elems), index.stride, index.lanes)
        if dt.lanes(index.dtype) > 1:
            return _op.add(index, Broadcast(elems, dt.lanes(index.dtype)))
        return _op.add(index, elems)

    def visit_Allocate(self, s):
        if s.buffer_var in self.allocs:
            return self.visit(s.body)
        return self.generic_visit(s)

    def visit_Load(self, e):
        e = self.generic_visit(e)
        if e.buffer_var in self.allocs:
            return Load(e.dtype, self.merged, self._offset(e.buffer_var, e.index), e.predicate)
        return e

    def visit_Store(self, s):
        s = self.generic_visit(s)
        if s.buffer_var in self.allocs:
            return Store(self.merged, s.value, self._offset(s.buffer_var, s.index), s.predicate)
        return s

    def visit_Call(self, e):
        if e.op == "tvm_access_ptr" and e.args[1] in self.allocs:
            args = [self.visit(a) for a in e.args]
            v = e.args[1]
            off = self._offset(v, args[2])
            return Call(e.dtype, e.op, (args[0], self.merged, off, *args[3:]))
        return self.generic_visit(e)


class _Kernels(IRMutator):
    """Merge inside each outermost thread_extent (a kernel)."""

    def __init__(self):
        super().__init__()
        self.depth = 0

    def visit_Allocate(self, s):
        if s.scope == SCOPE and self.depth == 0:
            raise LoweringError(f"MergeDynamicSharedMemoryAllocations: \"shared.dyn\" buffer "
                                f"{s.buffer_var.name} is allocated outside any thread_extent (a kernel)")
        return self.generic_visit(s)

    def visit_AttrStmt(self, s):
        if s.attr_key != "thread_extent" or self.depth:
            return self.generic_visit(s)
        finder = _Allocs()
        finder.visit(s.body)
        if not finder.found:
            return s
        allocs = finder.found
        offsets, total = _plan(s.body, allocs)
        merged = Var(MERGED_NAME, "handle")
        body = _Rewrite(allocs, offsets, merged).visit(s.body)
        return AttrStmt(s.node, s.attr_key, s.value,
                        Allocate(merged, "uint8", (total,), _op.const(True), body, SCOPE))


def merge_dynamic_shared_memory(stmt):
    """``stmt`` with each kernel's "shared.dyn" allocations merged into one (see the module doc)."""
    return _Kernels().visit(stmt)


__all__ = ["merge_dynamic_shared_memory"]
