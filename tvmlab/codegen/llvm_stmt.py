"""LLVM code for AST3 statements: loops, stores, allocations, asserts, branches.

Every generated function returns an i32: 0 on success, otherwise a code that
the runtime turns into an error with the message recorded for it (a failing
AssertStmt or a failed heap allocation).  Early returns free the heap
allocations that are live at that point.

Allocations: small constant-size buffers (<= STACK_LIMIT bytes) live on the
stack (an alloca in the entry block, 64-byte aligned); others come from the
module's workspace pool (llvm_workspace: blocks kept between calls) and go
back to it when their body ends.
"""
from __future__ import annotations

import contextlib

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.printer import astext
from . import llvm_ir as L
from . import llvm_workspace as workspace
from .llvm_expr import _is_one, access_elem
from .llvm_types import memory_type

STACK_LIMIT = 64 * 1024
ALIGN = 64


# LLVM 20's loop vectorizer takes time exponential in the length of a chain of conditional updates
# that are uniform across the loop (VPlan's narrowToSingleScalarRecipes walks each if-converted blend
# ``select(c, acc + x, acc)`` once per use of ``acc``).  Such chains appear when LLVM fully unrolls an
# inner loop of constant extent around an IfThenElse, e.g. a reduction with a data-dependent ``where``
# whose value does not depend on the outer loop; 20 links already take seconds.  The outer loop of such
# a nest is kept from the loop vectorizer (the inner loops are still vectorized as usual).
CONDITIONAL_CHAIN_LIMIT = 16
SMALL_LOOP = 16


def unrolled_conditionals(body):
    """The longest chain of conditionals that full unrolling of ``body``'s constant-extent loops could
    make: over every IfThenElse (or predicated store) in ``body``, the product of the extents of its
    enclosing loops inside ``body``; loops of symbolic extent are never fully unrolled (0)."""
    best = 0

    def walk(n, factor):
        nonlocal best
        if isinstance(n, S.For):
            ext = n.extent
            if not isinstance(ext, E.IntImm):
                return
            walk(n.body, factor * max(ext.value, 1))
            return
        if isinstance(n, S.IfThenElse) or (isinstance(n, S.Store) and n.predicate is not None):
            best = max(best, factor)
        for child in _stmt_children(n):
            walk(child, factor)

    walk(body, 1)
    return best


def scatters(loop):
    """True when ``loop`` is innermost, runs more than SMALL_LOOP iterations (or a symbolic number) and
    stores with a constant stride other than 0 and +-1 in its variable.  Such a loop is kept from LLVM's
    vectorizer and unroller: vectorized it only scatters, no faster than scalar stores, and unrolling it
    and then its enclosing loops can make one basic block of thousands of stores, which LLVM's
    instruction schedulers take quadratic time over (a parallel zero-fill of 256 x 32 took a minute to
    compile; tuning templates meet such nests often).  Short loops are still unrolled as usual."""
    if isinstance(loop.extent, E.IntImm) and loop.extent.value <= SMALL_LOOP:
        return False
    stores = []

    def walk(n):
        if isinstance(n, S.For):
            return False
        if isinstance(n, S.Store) and dt.lanes(n.index.dtype) == 1:
            stores.append(n.index)
        return all(walk(c) for c in _stmt_children(n))

    if not walk(loop.body) or not stores:
        return False
    from ..ir.arith import Analyzer
    from ..ir.functor import substitute
    ana, v = Analyzer(), loop.loop_var
    for index in stores:
        step = ana.simplify(substitute(index, {v: v + 1}) - index)
        if isinstance(step, E.IntImm) and abs(step.value) > 1:
            return True
    return False


def _stmt_children(n):
    if isinstance(n, S.SeqStmt):
        return n.seq
    return [getattr(n, k) for k in ("body", "then_case", "else_case") if getattr(n, k, None) is not None]


class StmtMixin:
    """Statement visitors; needs ExprMixin, IntrinMixin and ParallelMixin."""

    def stmt(self, s):
        fn = self._stmt_handlers.get(type(s))
        if fn is None:
            fn = self._find_handler(type(s), "_s_", self._stmt_handlers, "statement")
        fn(s)

    @contextlib.contextmanager
    def bind(self, var, value):
        """Bind ``var`` to an LLVM value inside the ``with`` block."""
        old = self.st.vars.get(var)
        self.st.vars[var] = value
        try:
            yield
        finally:
            if old is None:
                del self.st.vars[var]
            else:
                self.st.vars[var] = old

    # ------------------------------------------------------------ errors
    def error_code(self, kind, message):
        code = len(self.errors) + 1
        self.errors[code] = (kind, message)
        return code

    def emit_fail(self, code):
        """Free live heap buffers and return ``code`` (an i32 Value) from the current function."""
        for p in reversed(self.st.heap):
            self.b.call("void", workspace.FREE, [p])
        self.b.ret(code)

    def branch_fail(self, ok, code):
        """Continue when ``ok`` (i1) holds, otherwise fail with ``code``."""
        bl = self.b
        good, bad = bl.new_block("ok"), bl.new_block("fail")
        bl.cbr(ok, good, bad, self.module.shared_metadata("likely", '!"branch_weights", i32 1048575, i32 1'))
        bl.position(bad)
        self.emit_fail(code if isinstance(code, L.Value) else L.const("i32", code))
        bl.position(good)

    # ------------------------------------------------------------ simple statements
    def _s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def _s_Evaluate(self, s):
        if not isinstance(s.value, (E.IntImm, E.FloatImm, E.StringImm)):
            self.expr(s.value)

    def _s_Prefetch(self, s):
        # a hint in a function built already flat (ir_builder): its loops of prefetch calls
        from ..lower.storage_flatten import flatten_prefetch
        self.stmt(flatten_prefetch(s))

    def _s_LetStmt(self, s):
        value = self.expr(s.value)
        if s.var.dtype == "handle" and s.value in self.buf_elem:
            self.buf_elem.setdefault(s.var, self.buf_elem[s.value])
        with self.bind(s.var, value):
            self.stmt(s.body)

    def _s_AttrStmt(self, s):
        if s.attr_key in ("thread_extent", "virtual_thread"):
            name = getattr(getattr(s.node, "var", s.node), "name", s.node)
            raise BuildError(f"{self.func_name}: axis {name!r} is bound to a GPU thread ({s.attr_key}); "
                             "bind is for GPU targets (cuda, opengl), the llvm target runs on the CPU")
        self.stmt(s.body)

    def _s_AssertStmt(self, s):
        msg = s.message.value if isinstance(s.message, E.StringImm) else str(s.message)
        code = self.error_code("assert", f"assertion failed: {msg} (condition: {astext(s.condition)})")
        self.branch_fail(self.as_i1(self.expr(s.condition), s.condition.dtype), code)
        self.stmt(s.body)

    def _s_IfThenElse(self, s):
        bl = self.b
        c = self.as_i1(self.expr(s.condition), s.condition.dtype)
        if L.lanes(c.ty) != 1:
            raise BuildError(f"{self.func_name}: IfThenElse needs a scalar condition, got {s.condition.dtype}")
        then, done = bl.new_block("then"), bl.new_block("endif")
        other = bl.new_block("else") if s.else_case is not None else done
        bl.cbr(c, then, other)
        bl.position(then)
        self.stmt(s.then_case)
        bl.br(done)
        if s.else_case is not None:
            bl.position(other)
            self.stmt(s.else_case)
            bl.br(done)
        bl.position(done)

    def _s_While(self, s):
        bl = self.b
        head, body, done = bl.new_block("while"), bl.new_block("while_body"), bl.new_block("while_end")
        bl.br(head)
        bl.position(head)
        c = self.as_i1(self.expr(s.condition), s.condition.dtype)
        if L.lanes(c.ty) != 1:
            raise BuildError(f"{self.func_name}: a while loop needs a scalar condition, got {s.condition.dtype} "
                             "(a while loop cannot be vectorized)")
        bl.cbr(c, body, done)
        bl.position(body)
        self.stmt(s.body)
        bl.br(head)
        bl.position(done)

    def _s_ProducerStore(self, s):
        raise BuildError(f"{self.func_name}: found a tensor write {s.producer.name}[...] = ... (AST2); "
                         "the llvm target needs AST3: lower the function first")

    def _s_ProducerRealize(self, s):
        raise BuildError(f"{self.func_name}: found a realize of {s.producer.name} (AST2); "
                         "the llvm target needs AST3: lower the function first")

    # ------------------------------------------------------------ loops
    def _s_For(self, s):
        if s.kind == "thread_binding":
            raise BuildError(f"{self.func_name}: loop {s.loop_var.name!r} is bound to a GPU thread; "
                             "bind is for GPU targets (cuda, opengl), the llvm target runs on the CPU")
        if s.kind == "parallel":
            return self.parallel_for(s)
        md = None
        if s.kind == "unrolled":
            md = self.loop_metadata('!"llvm.loop.unroll.full"')
        elif s.kind == "vectorized":
            md = self.loop_metadata('!"llvm.loop.vectorize.enable", i1 true')
        elif s.kind != "serial":
            raise BuildError(f"{self.func_name}: unknown loop kind {s.kind!r} for loop {s.loop_var.name!r}")
        else:
            md = self.no_vectorize_metadata(s)
        self.serial_for(s, md)

    def no_vectorize_metadata(self, s):
        """Loop metadata keeping loop ``s`` from LLVM's loop vectorizer when it could hang it (or only
        scatter), else None."""
        if unrolled_conditionals(s.body) >= CONDITIONAL_CHAIN_LIMIT:
            return self.loop_metadata('!"llvm.loop.vectorize.enable", i1 false')
        if scatters(s):
            return self.loop_metadata('!"llvm.loop.unroll.disable"', '!"llvm.loop.vectorize.enable", i1 false')
        return None

    def loop_bounds(self, s):
        """(min, extent) of loop ``s`` as values of the loop variable's type."""
        t = s.loop_var.dtype
        return self.cast(s.min.dtype, t, self.expr(s.min)), self.cast(s.extent.dtype, t, self.expr(s.extent))

    def serial_for(self, s, md=None):
        begin, extent = self.loop_bounds(s)
        end = self.b.binop("add", begin, extent, self._int_flags(s.loop_var.dtype), hint="end")
        self.loop(s.loop_var, begin, end, lambda: self.stmt(s.body), md)

    def loop_metadata(self, *hints):
        body = ", ".join(self.module.shared_metadata(h, h) for h in hints)
        return self.module.metadata(body, distinct=True, self_ref=True)

    def loop(self, var, begin, end, body, md=None):
        """``for var in [begin, end): body()`` with the loop ID ``md`` on the back edge."""
        bl = self.b
        pre = bl.block
        head, loop_body, done = bl.new_block(f"for_{var.name}"), bl.new_block("body"), bl.new_block("for_end")
        bl.br(head)
        bl.position(head)
        phi = bl.phi(begin.ty, hint=var.name)
        i = L.Value(begin.ty, phi.name)
        phi.incoming.append((begin, pre))
        bl.cbr(bl.icmp("ult" if dt.is_uint(var.dtype) else "slt", i, end), loop_body, done)
        bl.position(loop_body)
        with self.bind(var, i):
            body()
        nxt = bl.binop("add", i, L.const(begin.ty, 1), "" if dt.is_uint(var.dtype) else "nsw", hint="next")
        phi.incoming.append((nxt, bl.block))
        bl.br(head, md)
        bl.position(done)

    # ------------------------------------------------------------ stores
    def _s_Store(self, s):
        ptr = self.buffer_ptr(s.buffer_var)
        vdt = s.value.dtype
        elem = dt.element_of(vdt)
        buf_elem = access_elem(self.buf_elem.get(s.buffer_var, elem), elem)
        n = dt.lanes(vdt)
        bl = self.b
        v = self.to_memory(vdt, self.expr(s.value))
        index = s.index
        if n == 1:
            if dt.lanes(index.dtype) != 1:
                raise BuildError(f"{self.func_name}: scalar store to {s.buffer_var.name} has a vector index")
            if s.predicate is not None:
                p = self.as_i1(self.expr(s.predicate), s.predicate.dtype)
                then, done = bl.new_block("st_then"), bl.new_block("st_done")
                bl.cbr(p, then, done)
                bl.position(then)
            addr = bl.gep(memory_type(buf_elem), ptr, self.expr(index))
            bl.store(v, addr, self.access_align(s.buffer_var, index, buf_elem, 1))
            if s.predicate is not None:
                bl.br(done)
                bl.position(done)
            return
        mask = self.active_mask(n, s.predicate)
        if isinstance(index, E.Ramp) and index.lanes == n and _is_one(index.stride):
            align = self.access_align(s.buffer_var, index.base, buf_elem, n)
            addr = bl.gep(memory_type(buf_elem), ptr, self.expr(index.base), inbounds=mask is None)
            if mask is None:
                bl.store(v, addr, align)
            else:
                self.intrinsic("llvm.masked.store", "void", [v, addr, L.const("i32", align), mask], [v.ty, "ptr"])
            return
        if dt.lanes(index.dtype) != n:
            raise BuildError(f"{self.func_name}: {n}-lane store to {s.buffer_var.name} needs a {n}-lane index, "
                             f"got {index.dtype}")
        addrs = bl.gep(memory_type(buf_elem), ptr, self.expr(index), inbounds=False)
        if mask is None:
            mask = L.splat_const(L.const("i1", 1), n)
        self.intrinsic("llvm.masked.scatter", "void", [v, addrs, L.const("i32", dt.itemsize(buf_elem)), mask],
                       [v.ty, addrs.ty])

    # ------------------------------------------------------------ allocation
    def _s_Allocate(self, s):
        if any(isinstance(x, int) for x in s.extents):
            s = s.replace(extents=tuple(E.IntImm("int64", x) if isinstance(x, int) else x for x in s.extents))
        elem = dt.element_of(s.dtype)
        per = dt.lanes(s.dtype)
        size = dt.itemsize(elem)
        count = per
        for x in s.extents:
            count = count * x.value if isinstance(x, E.IntImm) and isinstance(count, int) else None
            if count is None:
                break
        var = s.buffer_var
        self.buf_elem[var] = elem
        self.aligned[var] = ALIGN
        if count is not None and count * size <= STACK_LIMIT:
            ptr = self.b.alloca(f"[{count} x {memory_type(elem)}]", ALIGN, hint=var.name)
            with self.bind(var, ptr):
                self.stmt(s.body)
            return
        ptr = self._heap_alloc(s, elem, per)
        self.st.heap.append(ptr)
        with self.bind(var, ptr):
            self.stmt(s.body)
        self.st.heap.pop()
        self.b.call("void", workspace.FREE, [ptr])

    def _heap_alloc(self, s, elem, per):
        """A workspace block of the bytes rounded up to 64 (64-byte aligned); a NULL result fails the call."""
        bl = self.b
        nbytes = L.const("i64", dt.itemsize(elem) * per)
        for x in s.extents:
            v = self.expr(x)
            if v.ty != "i64":
                v = bl.cast("sext" if not dt.is_uint(x.dtype) else "zext", v, "i64")
            nbytes = bl.binop("mul", nbytes, v, hint="bytes")
        rounded = bl.binop("and", bl.binop("add", nbytes, L.const("i64", ALIGN)), L.const("i64", -ALIGN),
                           hint="bytes")
        self.module.declare("aligned_alloc", "ptr", ["i64", "i64"], "nounwind")
        self.module.declare("free", "void", ["ptr"], "nounwind")
        self.module.helper("workspace", workspace.ir())
        ptr = bl.call("ptr", workspace.ALLOC, [rounded], hint=s.buffer_var.name)
        shown = " * ".join([str(dt.itemsize(elem) * per)] + [astext(x) for x in s.extents])
        code = self.error_code("oom", f"out of memory allocating {shown} bytes for buffer "
                                      f"'{s.buffer_var.name}'")
        self.branch_fail(bl.icmp("ne", ptr, L.Value("ptr", "null")), code)
        return ptr
