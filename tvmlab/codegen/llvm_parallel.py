"""Parallel loops on OpenMP threads (libgomp), as TVM's CPU backend does with its thread pool.

A ``parallel`` For becomes three pieces:

* ``i32 @f_par<k>_body(<live-in values>, lo, hi)``: the loop over ``[lo, hi)``;
  buffers arrive as ``noalias`` arguments so the body optimises as well as a
  serial loop would;
* ``void @f_par<k>(ptr %closure)``: run by every OpenMP thread; it unpacks the
  closure, then claims chunks of the iteration range from a shared counter
  (compare-and-swap) and calls the body on each, recording the first error
  code in the closure.  Chunks are guided, as OpenMP's ``schedule(guided)``:
  each claim takes ``ceil(left / (2 * threads))`` iterations, so the first
  claims are large (few atomics) and the last ones single iterations, and no
  thread waits at the end for another's big chunk, even when a core is busy
  with other work;
* in ``f``: the live-in values packed into a stack struct and
  ``GOMP_parallel(@f_par<k>, closure, 0, 0)`` (0 threads: OpenMP's default).

Allocations in the body are made inside ``_body``, hence per thread.  A parallel
loop inside another runs serially (no nested parallel regions).
"""
from __future__ import annotations

from ..ir.functor import IRVisitor
from . import llvm_ir as L

GUIDED_PARTS = 2   # a claim takes 1 / (GUIDED_PARTS * threads) of what is left


def free_vars(stmt):
    """Variables ``stmt`` uses but does not bind itself, in first-use order."""
    used, bound = {}, set()

    class Walk(IRVisitor):
        def visit_Var(self, v):
            used[v] = None

        def visit_For(self, s):
            bound.add(s.loop_var)
            self.generic_visit(s)

        def visit_LetStmt(self, s):
            bound.add(s.var)
            self.generic_visit(s)

        visit_Let = visit_LetStmt

        def visit_Allocate(self, s):
            bound.add(s.buffer_var)
            self.generic_visit(s)

    Walk().visit(stmt)
    return [v for v in used if v not in bound]


class ParallelMixin:
    """Outlining of parallel loops; needs StmtMixin and a ``FunctionState`` factory."""

    def parallel_for(self, s):
        if self.st.in_parallel or not self.openmp:
            return self.serial_for(s)
        bl = self.b
        live = free_vars(s)
        values = [self.expr(v) for v in live]
        begin, extent = self.loop_bounds(s)
        k = self.parallel_count
        self.parallel_count += 1
        name = f"{self.func_name}_par{k}"
        body_fn = self._parallel_body(s, name, live, values, begin.ty)
        fields = [v.ty for v in values] + [begin.ty, begin.ty, "ptr", "ptr"]
        struct_ty = "{ " + ", ".join(fields) + " }"
        closure = bl.alloca(struct_ty, 16, hint=f"closure{k}")
        err = bl.alloca("i32", 4, hint=f"err{k}")
        bl.store(L.const("i32", 0), err, 4)
        counter = bl.alloca("i64", 8, hint=f"next{k}")
        bl.store(L.const("i64", 0), counter, 8)
        for i, v in enumerate(values + [begin, extent, err, counter]):
            bl.store(v, bl.struct_gep(struct_ty, closure, i), _align(v.ty))
        self._parallel_launcher(name, struct_ty, fields, body_fn, len(values))
        self.module.declare("GOMP_parallel", "void", ["ptr", "ptr", "i32", "i32"], "nounwind")
        bl.call("void", "GOMP_parallel", [L.Value("ptr", f'@"{name}"'), closure, L.const("i32", 0),
                                          L.const("i32", 0)])
        rc = bl.load("i32", err, 4, hint="rc")
        self.branch_fail(bl.icmp("eq", rc, L.const("i32", 0)), rc)

    def _parallel_body(self, s, name, live, values, ity):
        """``i32 @<name>_body(live..., lo, hi)`` running the loop over [lo, hi)."""
        params = []
        for var, v in zip(live, values):
            attrs = ""
            if v.ty == "ptr" and var in self.aligned:
                attrs = f"noalias nocapture align {self.aligned[var]}"
            params.append((v.ty, attrs, var.name))
        params += [(ity, "", "lo"), (ity, "", "hi")]
        fn = self.module.add_function(L.Function(name + "_body", "i32", params, linkage="internal"))
        saved = self.st, self.b
        self.enter_function(fn, in_parallel=True)
        try:
            for var, arg in zip(live, fn.args):
                self.st.vars[var] = arg
            lo, hi = fn.args[-2], fn.args[-1]
            self.loop(s.loop_var, lo, hi, lambda: self.stmt(s.body), self.no_vectorize_metadata(s))
            self.b.ret(L.const("i32", 0))
            self.finish_function()
        finally:
            self.st, self.b = saved
        return fn

    def _parallel_launcher(self, name, struct_ty, fields, body_fn, nlive):
        """``void @<name>(ptr closure)``: claim chunks of the range from the shared counter, run the body."""
        fn = self.module.add_function(L.Function(name, "void", [("ptr", "", "closure")], linkage="internal"))
        bl = L.Builder(fn)
        start = fn.new_block("start")
        bl.position(start)
        closure = fn.args[0]
        vals = [bl.load(t, bl.struct_gep(struct_ty, closure, i), _align(t), hint="arg") for i, t in enumerate(fields)]
        begin, extent, err, counter = vals[nlive], vals[nlive + 1], vals[nlive + 2], vals[nlive + 3]
        ity = begin.ty
        self.module.declare("omp_get_num_threads", "i32", [], "nounwind")
        nt = bl.call("i32", "omp_get_num_threads", [], hint="nthreads")
        if ity != "i32":
            nt = bl.cast("sext", nt, ity)
        parts = bl.binop("mul", nt, L.const(ity, GUIDED_PARTS), hint="parts")
        claim, grab, run, failed, done = (fn.new_block(h) for h in ("claim", "grab", "run", "failed", "done"))
        first = bl.emit(f"load atomic i64, ptr {counter.ref} monotonic, align 8", "i64", "seen")
        bl.br(claim)
        # claim [cur, cur + ceil(left / parts)) by compare-and-swap; a lost race retries from the new value
        bl.position(claim)
        phi = bl.phi("i64", hint="cur")
        cur = L.Value("i64", phi.name)
        cur_i = bl.cast("trunc", cur, ity) if ity != "i64" else cur
        bl.cbr(bl.icmp("slt", cur_i, extent), grab, done)
        bl.position(grab)
        left = bl.binop("sub", extent, cur_i, hint="left")
        chunk = bl.binop("sdiv", bl.binop("sub", bl.binop("add", left, parts), L.const(ity, 1)), parts, hint="chunk")
        nxt = bl.binop("add", cur_i, chunk, hint="next")
        nxt64 = bl.cast("sext", nxt, "i64") if ity != "i64" else nxt
        pair = bl.emit(f"cmpxchg ptr {counter.ref}, {cur}, {nxt64} monotonic monotonic", "{ i64, i1 }", "xchg")
        seen = bl.emit(f"extractvalue {{ i64, i1 }} {pair.ref}, 0", "i64", "seen")
        won = bl.emit(f"extractvalue {{ i64, i1 }} {pair.ref}, 1", "i1", "won")
        bl.cbr(won, run, claim)
        phi.incoming += [(first, start), (seen, grab)]
        bl.position(run)
        lo, hi = bl.binop("add", begin, cur_i, hint="lo"), bl.binop("add", begin, nxt, hint="hi")
        rc = bl.call("i32", body_fn.name, vals[:nlive] + [lo, hi], hint="rc")
        reload = bl.emit(f"load atomic i64, ptr {counter.ref} monotonic, align 8", "i64", "seen")
        phi.incoming.append((reload, run))
        bl.cbr(bl.icmp("ne", rc, L.const("i32", 0)), failed, claim)
        bl.position(failed)
        bl.emit(f"cmpxchg ptr {err.ref}, i32 0, {rc} monotonic monotonic", "{ i32, i1 }", "xchg")
        bl.br(done)
        bl.position(done)
        bl.ret()
        bl.position(fn.entry)
        bl.br(start)
        self._defined.append(name)


def _align(t):
    """A safe alignment for a closure field of type ``t`` (vectors: their element's)."""
    return {"i1": 1, "i8": 1, "i16": 2, "half": 2, "i32": 4, "float": 4}.get(L.elem(t), 8)
