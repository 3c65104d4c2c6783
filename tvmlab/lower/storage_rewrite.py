"""StorageRewrite: allocations whose lifetimes do not overlap share memory.

The function body is read as a linear sequence of statements (a loop, an if,
a thread scope counts as one statement at the level of the allocation), each
with the buffers it touches.  A buffer is live from the first statement that
touches it to the last; when it dies its memory goes to a free list, and a
later allocation of the same memory scope takes it:

- a free block at least as large (up to 16x larger) first, else a smaller one
  of the same element type, which then grows;
- in place: a statement ``B[i] = f(A[i])`` that reads ``A`` for the last time
  writes ``B`` into ``A``'s memory when both have the same type and size;
- every allocation of a *tagged* scope ("global:tag", "local.L0A") is packed
  into one allocation of that scope, each at its own offset (aligned to the
  memory's ``max_simd_bits``, 32 by default); a memory described by a global
  function ``tvm.info.mem.<scope>`` (``MemoryInfo``) may refuse a total over
  its ``max_num_bits``.

Allocations move to their attach point: the function body for global memory,
the start of the outermost thread scope for shared memory inside a kernel, the
body of a parallel loop for memory allocated in one.  Local memory stays where
it is, and neither it nor arrays of 32 bits or less are shared (they become
registers).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.expr import IntImm, Var
from ..ir.functor import IRMutator, IRVisitor, collect_vars
from ..ir.stmt import Allocate, AttrStmt, For, ForKind, Store
from ..ir.structural import same_value
from ..schedule.scope import WMMA_SCOPES

MATCH_RANGE = 16
_SCOPE_ATTRS = ("thread_extent", "virtual_thread")


# ---------------------------------------------------------------- scopes
def parse_scope(scope):
    """``(rank, tag)``: TVM reads a scope by its prefix, the rest is the tag ("local_TB2" -> local, "_TB2")."""
    scope = scope or "global"
    for rank in ("global", "shared", "warp", "local"):
        if scope.startswith(rank):
            return rank, scope[len(rank):]
    return scope, ""


def _tagged(scope):
    return parse_scope(scope)[1] not in ("", ".dyn", ".workspace")


def memory_info(scope):
    """The ``MemoryInfo`` a global function ``tvm.info.mem.<scope>`` returns, or None."""
    from ..runtime.registry import get_global_func
    f = get_global_func(f"tvm.info.mem.{scope}", allow_missing=True)
    return f() if f is not None else None


def _bits(dtype):
    return dt.bits(dtype) * dt.lanes(dtype)


def _const_size(alloc):
    n = 1
    for e in alloc.extents:
        if not isinstance(e, IntImm):
            return 0
        n *= e.value
    return n


# ---------------------------------------------------------------- linear access pattern
class _Entry:
    __slots__ = ("key", "node", "offset", "touched")

    def __init__(self, key, node):
        self.key, self.node, self.offset, self.touched = key, node, 0, []


class _Linearize(IRVisitor):
    """The statements at each allocation's level, in order, with the buffers each touches."""

    def __init__(self):
        super().__init__()
        self.seq = []
        self.allocs = {}          # buffer var -> (Allocate, level)
        self.stack = []           # open statements, each collecting touches
        self.in_thread = False
        self.nkeys = 0

    def _touch(self, var):
        info = self.allocs.get(var)
        if info is not None and info[1] < len(self.stack):
            self.stack[info[1]].touched.append(var)

    def _leaf(self, s):
        self.stack.append(_Entry(None, s))
        self.generic_visit(s)
        e = self.stack.pop()
        if e.touched:
            e.key = self.nkeys
            self.nkeys += 1
            self.seq.append(e)

    def _scope(self, s):
        key = self.nkeys
        self.nkeys += 1
        begin = _Entry(key, s)
        self.stack.append(_Entry(key, s))
        at = len(self.seq)
        self.seq.append(begin)
        self.generic_visit(s)
        end = self.stack.pop()
        end.offset = at - len(self.seq)
        begin.offset = len(self.seq) - at
        self.seq.append(end)

    def visit_Allocate(self, s):
        self.allocs[s.buffer_var] = (s, len(self.stack))
        self.generic_visit(s)

    def visit_Store(self, s):
        self.stack.append(_Entry(None, s))
        self.generic_visit(s)
        self._touch(s.buffer_var)
        e = self.stack.pop()
        if e.touched:
            e.key = self.nkeys
            self.nkeys += 1
            self.seq.append(e)

    def visit_Evaluate(self, s):
        self._leaf(s)

    def visit_Load(self, e):
        self.generic_visit(e)
        self._touch(e.buffer_var)

    def visit_Var(self, v):
        self._touch(v)

    def visit_AttrStmt(self, s):
        if s.attr_key == "thread_extent" and not self.in_thread:
            self.in_thread = True
            try:
                self._scope(s)
            finally:
                self.in_thread = False
        elif s.attr_key in ("virtual_thread", "extern_scope"):
            self._scope(s)
        else:
            self.generic_visit(s)

    def visit_For(self, s):
        self._scope(s)

    def visit_IfThenElse(self, s):
        self._scope(s)

    def visit_While(self, s):
        self._scope(s)

    def visit_AssertStmt(self, s):
        self._scope(s)

    def visit_LetStmt(self, s):
        self._scope(s)


# ---------------------------------------------------------------- in-place check
class _InplaceCheck(IRVisitor):
    """Whether ``stmt`` only ever reads ``src`` at the very index it writes ``dst``."""

    def __init__(self, dst, src):
        super().__init__()
        self.dst, self.src, self.ok, self.nest, self.store = dst, src, True, 0, None

    def visit(self, n):
        if self.ok:
            return super().visit(n)
        return None

    def visit_Var(self, v):
        if v is self.dst or v is self.src:
            self.ok = False

    def visit_Store(self, s):
        self.nest += 1
        self.visit(s.index)
        if s.predicate is not None:
            self.visit(s.predicate)
        self.nest -= 1
        if s.buffer_var is self.dst:
            self.store = s
            self.visit(s.value)
            self.store = None
        else:
            self.visit(s.value)

    def visit_AttrStmt(self, s):
        if s.attr_key in ("extern_scope", "volatile_scope"):
            self.ok = False
            return
        self.generic_visit(s)

    def visit_Load(self, e):
        if e.buffer_var is self.dst or self.nest:
            self.ok = False
            return
        if e.buffer_var is self.src:
            st = self.store
            if st is None or st.value.dtype != e.dtype or not same_value(st.index, e.index):
                self.ok = False
                return
        self.nest += 1
        self.visit(e.index)
        self.nest -= 1


def _inplace_ok(stmt, dst, src):
    if not isinstance(stmt, (AttrStmt, For, Store)) and type(stmt).__name__ not in ("IfThenElse", "While"):
        return False
    c = _InplaceCheck(dst, src)
    c.visit(stmt)
    return c.ok


# ---------------------------------------------------------------- planning
class _Storage:
    """One piece of memory: the allocations sharing it, where it lives, its size."""
    __slots__ = ("attach", "nbits", "scope", "elem", "allocs", "children", "var", "offset", "new", "merged")

    def __init__(self, attach, scope, elem, nbits):
        self.attach, self.scope, self.elem, self.nbits = attach, scope, elem, nbits
        self.allocs, self.children, self.var, self.offset, self.new = [], [], None, 0, None
        self.merged = False       # packed into another storage of its tagged scope


class _Planner:
    def __init__(self, lin):
        self.lin = lin
        self.storages = []
        self.alloc_map = {}        # buffer var -> _Storage
        self.const_free = []       # [(nbits, order, _Storage)]
        self.sym_free = []
        self.thread_scope = None
        self.order = 0
        self.unplanned = set()     # allocations kept where they are

    def run(self):
        seq = self.lin.seq
        gen, kill = {}, {}
        seen = set()
        for e in reversed(seq):
            for v in e.touched:
                if v not in seen:
                    seen.add(v)
                    kill.setdefault(e.key, []).append(v)
        seen = set()
        for k, e in enumerate(seq):
            if e.offset < 0:
                continue
            for v in seq[k + e.offset].touched:
                if v not in seen:
                    seen.add(v)
                    gen.setdefault(e.key, []).append(v)
        inplace = set()
        for k, e in enumerate(seq):
            g, kl = gen.get(e.key, ()), kill.get(e.key, ())
            if g and e.offset >= 0:
                detect = len(g) <= 2
                for var in g:
                    alloc = self.lin.allocs[var][0]
                    if not self._movable(alloc, e):
                        self.unplanned.add(var)
                        continue
                    dst = None
                    if detect:
                        for src in kl:
                            se = self.alloc_map.get(src)
                            if (src in inplace or se is None or se.scope != alloc.scope
                                    or se.attach is not self.thread_scope or se.elem != dt.element_of(alloc.dtype)
                                    or se.nbits != _const_size(alloc) * _bits(alloc.dtype)):
                                continue
                            if _inplace_ok(e.node, var, src):
                                dst = se
                                inplace.add(src)
                                break
                    if dst is None:
                        dst = self._find(alloc)
                    dst.allocs.append(alloc)
                    self.alloc_map[var] = dst
            self._enter_exit(e.node)
            if kl and e.offset <= 0:
                for var in kl:
                    if var not in inplace and var in self.alloc_map:
                        self._free(var)
        return self

    def _movable(self, alloc, entry):
        """Registers (untagged local / warp memory, never shared) stay where they are, and so does an
        allocation whose size depends on a variable bound above it."""
        rank, tag = parse_scope(alloc.scope)
        if rank in ("local", "warp") and not tag or alloc.scope in WMMA_SCOPES:
            return False
        bound = self.lin.bound_inside.get(alloc.buffer_var, ())
        return not any(v in bound for x in alloc.extents for v in collect_vars(x))

    def _enter_exit(self, node):
        if isinstance(node, AttrStmt) and node.attr_key in _SCOPE_ATTRS:
            self._new_scope(node)
        elif isinstance(node, For) and node.kind == ForKind.PARALLEL:
            if self.thread_scope is None or self.thread_scope is node:
                self._new_scope(node)

    def _new_scope(self, node):
        if self.thread_scope is not None:
            self.const_free = [x for x in self.const_free if x[2].attach is not node]
            self.sym_free = [x for x in self.sym_free if x.attach is not node]
            self.thread_scope = None
        else:
            self.thread_scope = node

    def _new(self, alloc, nbits):
        st = _Storage(self.thread_scope, alloc.scope, dt.element_of(alloc.dtype), nbits)
        self.storages.append(st)
        return st

    def _find(self, alloc):
        elem_bits = _bits(alloc.dtype)
        nbits = _const_size(alloc) * elem_bits
        rank, tag = parse_scope(alloc.scope)
        small = not tag and (rank in ("warp", "local") or alloc.dtype == "handle" or 0 < nbits <= 32)
        if small or len(alloc.extents) != 1:
            return self._new(alloc, nbits)
        scope, attach = alloc.scope, self.thread_scope
        if nbits:
            cands = sorted((x for x in self.const_free if nbits // MATCH_RANGE <= x[0] <= nbits * MATCH_RANGE),
                           key=lambda x: (x[0], x[1]))
            for x in cands:                              # bigger ones first
                st = x[2]
                if x[0] >= nbits and st.attach is attach and st.scope == scope and st.offset % elem_bits == 0:
                    st.nbits = max(nbits, st.nbits)
                    self.const_free.remove(x)
                    return st
            for x in reversed(cands):                    # then smaller ones of the same type
                st = x[2]
                if x[0] < nbits and st.attach is attach and st.scope == scope \
                        and st.elem == dt.element_of(alloc.dtype):
                    st.nbits = max(nbits, st.nbits)
                    self.const_free.remove(x)
                    return st
        else:
            for st in self.sym_free:
                if st.attach is attach and st.scope == scope and st.elem == dt.element_of(alloc.dtype):
                    self.sym_free.remove(st)
                    return st
        return self._new(alloc, nbits)

    def _free(self, var):
        st = self.alloc_map[var]
        rank, tag = parse_scope(st.scope)
        if not tag:
            if rank in ("warp", "local") or st.allocs[0].dtype == "handle":
                return
            if 0 < st.nbits <= 32:
                return
        if st.nbits:
            self.order += 1
            self.const_free.append((st.nbits, self.order, st))
        else:
            self.sym_free.append(st)


# ---------------------------------------------------------------- new allocations
def _check_limit(st, total_bits):
    info = memory_info(st.scope)
    if info is not None and total_bits > int(info.max_num_bits):
        raise LoweringError(f"StorageRewrite: Allocation exceed bound of memory tag {st.scope}: "
                            f"{total_bits} bits needed, the memory holds {int(info.max_num_bits)}")


def _prepare(storages):
    attach_map = {}
    for st in storages:
        attach_map.setdefault(id(st.attach), (st.attach, []))[1].append(st)
    for _, vec in attach_map.values():
        for i, st in enumerate(vec):
            if _tagged(st.scope):
                if not st.nbits:
                    raise LoweringError(f"StorageRewrite: tagged memory {st.scope} needs constant-size "
                                        f"allocations; {st.allocs[0].buffer_var.name} has extents "
                                        f"{list(st.allocs[0].extents)}")
                for other in vec[:i]:
                    if other.scope == st.scope:
                        other.children.append(st)
                        st.merged = True          # placed by ``other`` below
                        break
        for st in vec:
            if st.merged:
                continue
            if st.children:
                _merge_tagged(st)
                continue
            first = st.allocs[0]
            st.var = first.buffer_var
            atype = first.dtype
            for a in st.allocs:
                if dt.lanes(a.dtype) > dt.lanes(atype):
                    atype = a.dtype
            if len(st.allocs) == 1:
                st.new = (st.var, atype, first.extents, first.condition, first.scope)
            else:
                size = None
                for a in st.allocs:
                    sz = _op.mul(a.extents[0], _bits(a.dtype))
                    size = sz if size is None else _op.max(size, sz)
                tb = _bits(atype)
                size = _op.floordiv(_op.add(size, tb - 1), tb)
                from ..ir.arith import Analyzer
                st.new = (st.var, atype, (Analyzer().simplify(size),), _op.const(True, "bool"), first.scope)
            if _tagged(st.scope) and st.nbits:
                _check_limit(st, st.nbits)
    return attach_map


def _merge_tagged(st):
    info = memory_info(st.scope)
    align = int(info.max_simd_bits) if info is not None else 32
    total = st.nbits
    if total % align:
        total += align - total % align
    st.var = st.allocs[0].buffer_var
    for child in st.children:
        child.offset = total
        child.var = st.var
        total += child.nbits
        if total % align:
            total += align - total % align
    tb = _bits(st.allocs[0].dtype) if dt.lanes(st.allocs[0].dtype) > 1 else dt.bits(st.elem)
    size = IntImm(st.allocs[0].extents[0].dtype, (total + tb - 1) // tb)
    st.new = (st.var, st.elem, (size,), _op.const(True, "bool"), st.allocs[0].scope)
    if info is not None and total > int(info.max_num_bits):
        _check_limit(st, total)


class _Rewrite(IRMutator):
    def __init__(self, alloc_map, attach_map, unplanned):
        super().__init__()
        self.alloc_map, self.attach_map, self.unplanned = alloc_map, attach_map, unplanned

    def _attach(self, node, body):
        entry = self.attach_map.get(id(node))
        if entry is None:
            return body
        for st in reversed(entry[1]):
            if st.new is not None:
                var, dtype, extents, cond, scope = st.new
                body = Allocate(var, dtype, tuple(extents), cond, body, _base(scope))
        return body

    def _index(self, var, dtype, index):
        st = self.alloc_map[var]
        if not st.offset:
            return index
        eb = dt.bits(dtype)
        if st.offset % eb:
            raise LoweringError(f"StorageRewrite: {var.name} at bit offset {st.offset} cannot be read as {dtype}")
        return _op.add(_op.const(st.offset // eb, index.dtype if dt.lanes(index.dtype) == 1 else
                                 dt.element_of(index.dtype)), index)

    def visit_Allocate(self, s):
        if s.buffer_var in self.unplanned or s.buffer_var not in self.alloc_map:
            out = self.generic_visit(s)
            return out.replace(scope=_base(out.scope)) if out.scope != _base(out.scope) else out
        return self.visit(s.body)

    def visit_Store(self, s):
        out = self.generic_visit(s)
        if s.buffer_var in self.alloc_map:
            st = self.alloc_map[s.buffer_var]
            out = out.replace(buffer_var=st.var, index=self._index(s.buffer_var, dt.element_of(s.value.dtype),
                                                                    out.index))
        return out

    def visit_Load(self, e):
        out = self.generic_visit(e)
        if e.buffer_var in self.alloc_map:
            st = self.alloc_map[e.buffer_var]
            out = out.replace(buffer_var=st.var, index=self._index(e.buffer_var, dt.element_of(e.dtype),
                                                                    out.index))
        return out

    def visit_Var(self, v):
        st = self.alloc_map.get(v)
        return v if st is None else st.var

    def visit_AttrStmt(self, s):
        out = self.generic_visit(s)
        if id(s) in self.attach_map and (s.attr_key in _SCOPE_ATTRS or s.attr_key.startswith("pragma_")):
            return out.replace(body=self._attach(s, out.body))
        return out

    def visit_For(self, s):
        out = self.generic_visit(s)
        if id(s) in self.attach_map:
            return out.replace(body=self._attach(s, out.body))
        return out


class _BoundInside(IRVisitor):
    """For each allocation, the variables bound between its attach point and itself."""

    def __init__(self):
        super().__init__()
        self.bound = []
        self.out = {}

    def _with(self, var, s):
        self.bound.append(var)
        self.generic_visit(s)
        self.bound.pop()

    def visit_For(self, s):
        self._with(s.loop_var, s)

    def visit_LetStmt(self, s):
        self._with(s.var, s)

    def visit_AttrStmt(self, s):
        var = getattr(s.node, "var", s.node)
        self._with(var if isinstance(var, Var) else None, s)

    def visit_Allocate(self, s):
        self.out[s.buffer_var] = set(v for v in self.bound if v is not None)
        self.generic_visit(s)


def _base(scope):
    """The memory an allocation of ``scope`` goes to: its tag goes, except "shared.dyn" (dynamic
    shared memory is not a packing tag; MergeDynamicSharedMemoryAllocations reads it)."""
    from ..schedule.scope import base_scope
    return scope if scope == "shared.dyn" or scope in WMMA_SCOPES else base_scope(scope)


class _StripTags(IRMutator):
    def visit_Allocate(self, s):
        from ..schedule.scope import base_scope
        out = self.generic_visit(s)
        if out.scope in WMMA_SCOPES:
            return out
        return out.replace(scope=base_scope(out.scope)) if out.scope != base_scope(out.scope) else out


def strip_scope_tags(stmt):
    """Allocations in their base memory ("global:acc" -> "global", "shared.dyn" -> "shared"; tensor-core
    fragments keep their "wmma.*" scope): what
    codegen sees (tvmlab's kernels size their shared memory when they are compiled)."""
    return _StripTags().visit(stmt)


def storage_rewrite(stmt):
    """``stmt`` with memory shared between allocations whose lifetimes do not overlap; allocations
    of tagged scopes packed into one each, then placed in their base memory."""
    lin = _Linearize()
    lin.visit(stmt)
    if not lin.allocs:
        return stmt
    b = _BoundInside()
    b.visit(stmt)
    lin.bound_inside = b.out
    plan = _Planner(lin).run()
    attach_map = _prepare(plan.storages)
    rw = _Rewrite(plan.alloc_map, attach_map, plan.unplanned)
    out = rw.visit(stmt)
    root = attach_map.get(id(None))
    if root is not None:
        out = rw._attach(None, out)
    return out

