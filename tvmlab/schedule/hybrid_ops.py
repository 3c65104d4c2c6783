"""Hybrid stages (``te.hybrid.script``) in ScheduleOps: the script's loops, as scheduled.

A hybrid operation's axes are the loops of its body, which need not form one
perfect nest (``for i: ...; for j: ...``), so the stage is not rebuilt from its
leaf axes as a compute stage is.  Its body is rewritten instead, relation by
relation:

* split: ``for i`` becomes ``for i.outer: for i.inner:`` with ``i`` replaced by
  ``i.outer * f + i.inner`` and a ``likely`` guard where ``f`` may not divide;
* fuse: ``for o: for i:`` (``i`` the whole body of ``o``) becomes one loop;
* reorder: the loops of one perfect nest are put in the leaf order, any guards
  between them moving below the innermost loop;
* loop kinds, thread bindings and pragmas are applied to the loops they name.

A loop the schedule does not mark keeps the kind the script gave it
(``parallel``, ``vectorize``, ``unroll``).  The outputs the script wrote
(``output_tensor``) become the operation's own tensors, and the whole body sits
in an ``extern_scope`` attribute, as in TVM.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import Call, IntImm, ProducerLoad
from ..ir.functor import IRMutator, collect_vars, substitute
from ..ir.hybrid import HybridOp, loop_axes
from ..ir.stmt import AttrStmt, For, IfThenElse, ProducerStore
from ..ir.tensor import Range
from .relations import Fuse, Rebase, Singleton, Split
from .rewrite import canonical_tensor

PRIMITIVES = ("split", "fuse", "reorder", "tile", "parallel", "vectorize", "unroll", "bind", "pragma",
              "compute_at", "compute_root")


def is_hybrid(op):
    return isinstance(op, HybridOp)


def make_nest(builder, st):
    """AST2 of hybrid stage ``st``: its body with the schedule's relations and annotations applied."""
    for iv in st.leaf_iter_vars:
        if builder.attached.get(iv):
            names = [x.name for x in builder.attached[iv]]
            raise LoweringError(f"stages {names} are computed at axis {iv.var.name} of hybrid stage {st.name}; "
                                "a hybrid stage's loops are its script's and hold no other stage (compute them "
                                "at the root)")
    body = _Tensors(builder, st).visit(st.op.body)
    body = apply_relations(st, body, builder.dom_map)
    body = apply_order(st, body)
    body = apply_annotations(st, body)
    return AttrStmt(IntImm("int32", 0), "extern_scope", IntImm("int32", 0), body)


class _Tensors(IRMutator):
    """Outputs of the script -> the stage's tensors; inputs -> their canonical tensors, an inlined
    producer's expression substituted."""

    def __init__(self, builder, st):
        super().__init__()
        self.builder, self.st = builder, st
        self.outs = dict(zip(st.op.output_placeholders, st.op.outputs))

    def _tensor(self, t, writing):
        if t in self.outs:
            return self.outs[t]
        sch = self.builder.sch
        ct = canonical_tensor(sch, t)
        prod = sch.stage_map.get(ct.op)
        if writing and prod is not None and prod.attach_type == "inline":
            raise LoweringError(f"hybrid stage {self.st.name} writes {ct.name}, but stage {prod.name} is inlined "
                                f"(it has no storage); call s[{prod.name}].compute_root()")
        return ct

    def visit_ProducerLoad(self, ld):
        idx = tuple(self.visit(i) for i in ld.indices)
        t = self._tensor(ld.producer, False)
        prod = self.builder.sch.stage_map.get(t.op)
        if prod is not None and prod.attach_type == "inline" and prod in self.builder.bodies:
            expr = self.builder.bodies[prod][t.value_index]
            return substitute(expr, {iv.var: i for iv, i in zip(prod.op.axis, idx)})
        return ProducerLoad(t, idx)

    def visit_ProducerStore(self, s):
        return ProducerStore(self._tensor(s.producer, True), self.visit(s.value),
                             tuple(self.visit(i) for i in s.indices))


class _LoopRewrite(IRMutator):
    """Replace the loop over ``var`` by ``fn(loop)``; complain if there is none."""

    def __init__(self, var, fn):
        super().__init__()
        self.var, self.fn, self.found = var, fn, False

    def visit_For(self, s):
        if s.loop_var is self.var:
            self.found = True
            return self.fn(s.replace(body=self.visit(s.body)))
        return self.generic_visit(s)


def _rewrite_loop(st, body, var, fn, what):
    m = _LoopRewrite(var, fn)
    out = m.visit(body)
    if not m.found:
        raise LoweringError(f"hybrid stage {st.name}: {what}: no loop over {var.name} in its body")
    return out


def _extent(dom_map, iv, fallback):
    """The constant extent bound inference gave ``iv`` (a tightened split part), else ``fallback``."""
    r = dom_map.get(iv)
    return r.extent if r is not None and isinstance(r.extent, IntImm) else fallback


def apply_relations(st, body, dom_map):
    """The body with every split, fuse, rebase and singleton of ``st`` applied, in order."""
    ana = Analyzer()
    for rel in st.relations:
        if isinstance(rel, Split):
            body = _rewrite_loop(st, body, rel.parent.var, lambda s, r=rel: _split(dom_map, ana, s, r),
                                 f"split of {rel.parent.var.name}")
        elif isinstance(rel, Fuse):
            body = _rewrite_loop(st, body, rel.outer.var, lambda s, r=rel: _fuse(st, ana, s, r),
                                 f"fuse of {rel.outer.var.name} and {rel.inner.var.name}")
        elif isinstance(rel, Rebase):
            body = _rewrite_loop(st, body, rel.parent.var, lambda s, r=rel: For(
                r.rebased.var, _op.const(0, s.min.dtype), s.extent, s.kind,
                substitute(s.body, {s.loop_var: _op.add(r.rebased.var, s.min)}), s.annotations),
                f"rebase of {rel.parent.var.name}")
        elif isinstance(rel, Singleton):
            body = For(rel.iter.var, 0, 1, "serial", body)
    return body


def _split(dom_map, ana, s, rel):
    ext = s.extent
    if rel.factor is not None:
        inner_ext = _extent(dom_map, rel.inner, rel.factor)
        outer_ext = ana.simplify(_op.floordiv(_op.add(ext, _op.sub(inner_ext, 1)), inner_ext))
    else:
        outer_ext = _extent(dom_map, rel.outer, rel.nparts)
        inner_ext = ana.simplify(_op.floordiv(_op.add(ext, _op.sub(outer_ext, 1)), outer_ext))
    ov, iv = rel.outer.var, rel.inner.var
    ana.bind(ov, Range(_op.const(0, ov.dtype), outer_ext))
    ana.bind(iv, Range(_op.const(0, iv.dtype), inner_ext))
    value = _op.add(_op.mul(ov, inner_ext), iv)
    body = substitute(s.body, {s.loop_var: _op.add(value, s.min) if not _is_zero(s.min) else value})
    cond = _op.lt(value, ext)
    if not ana.can_prove(cond):
        body = IfThenElse(Call("bool", "likely", (ana.simplify(cond),)), body)
    zero = _op.const(0, "int32")
    return For(ov, zero, outer_ext, "serial", For(iv, zero, inner_ext, "serial", body))


def _fuse(st, ana, s, rel):
    inner = s.body
    if not (isinstance(inner, For) and inner.loop_var is rel.inner.var):
        raise LoweringError(f"hybrid stage {st.name}: fuse of {rel.outer.var.name} and {rel.inner.var.name}: the "
                            f"loop over {rel.inner.var.name} must be the whole body of the loop over "
                            f"{rel.outer.var.name}")
    if s.loop_var in collect_vars(inner.min) + collect_vars(inner.extent):
        raise LoweringError(f"hybrid stage {st.name}: fuse of {rel.outer.var.name} and {rel.inner.var.name}: the "
                            f"range of {rel.inner.var.name} depends on {rel.outer.var.name}")
    f = rel.fused.var
    iext = inner.extent
    vmap = {s.loop_var: _op.add(_op.floordiv(f, iext), s.min),
            inner.loop_var: _op.add(_op.floormod(f, iext), inner.min)}
    ext = ana.simplify(_op.mul(s.extent, iext))
    return For(f, _op.const(0, "int32"), ext, "serial", substitute(inner.body, vmap))


def _is_zero(e):
    return isinstance(e, IntImm) and e.value == 0


# ------------------------------------------------------------ reorder
def _chain(s):
    """The perfect nest starting at loop ``s``: (loops, guards, innermost body); guards are the
    ``if`` statements without ``else`` between the loops."""
    loops, guards = [s], []
    body = s.body
    while True:
        if isinstance(body, IfThenElse) and body.else_case is None and _leads_to_loop(body.then_case):
            guards.append(body.condition)
            body = body.then_case
        elif isinstance(body, For):
            loops.append(body)
            body = body.body
        else:
            return loops, guards, body


def _leads_to_loop(s):
    while isinstance(s, IfThenElse) and s.else_case is None:
        s = s.then_case
    return isinstance(s, For)


def apply_order(st, body):
    """Put the loops of each perfect nest in the stage's leaf order."""
    pos = {iv.var: k for k, iv in enumerate(st.leaf_iter_vars)}

    class Reorder(IRMutator):
        def visit_For(self, s):
            loops, guards, inner = _chain(s)
            inner = self.visit(inner)
            want = sorted(loops, key=lambda f: pos.get(f.loop_var, -1))
            if [f.loop_var for f in want] == [f.loop_var for f in loops]:
                return _rebuild(s, loops, inner)
            for g in guards:
                inner = IfThenElse(g, inner)
            for k, f in enumerate(want):
                inside = {x.loop_var for x in want[k + 1:]}
                used = set(collect_vars(f.min)) | set(collect_vars(f.extent))
                if used & inside:
                    dep = sorted(v.name for v in used & inside)
                    raise LoweringError(f"reorder of hybrid stage {st.name}: the range of loop {f.loop_var.name} "
                                        f"depends on {', '.join(dep)}, which the new order puts inside it")
            out = inner
            for f in reversed(want):
                out = f.replace(body=out)
            return out

    out = Reorder().visit(body)
    found = [f.var for f in loop_axes(out)]
    want = [iv.var for iv in st.leaf_iter_vars]
    if found != want:
        raise LoweringError(f"hybrid stage {st.name}: its loops run in the order "
                            f"{[v.name for v in found]}, but the schedule asks for {[v.name for v in want]}; only "
                            "the loops of one perfect nest can be reordered")
    return out


def _rebuild(s, loops, inner):
    """``s`` with its innermost body replaced by ``inner`` (guards kept in place)."""
    def walk(x):
        if isinstance(x, For) and any(x is f for f in loops):
            return x.replace(body=walk(x.body))
        if isinstance(x, IfThenElse) and x.else_case is None and _leads_to_loop(x.then_case):
            return x.replace(then_case=walk(x.then_case))
        return inner
    return walk(s)


# ------------------------------------------------------------ loop kinds, threads, pragmas
def apply_annotations(st, body):
    """Loop kinds, thread bindings and pragmas of the stage's leaf axes."""
    for iv in st.leaf_iter_vars:
        a = st.iter_var_attrs.get(iv)
        if a is None:
            continue
        if a.bind_thread is not None:
            body = _rewrite_loop(st, body, iv.var, lambda s, t=a.bind_thread: _bind(st, s, t),
                                 f"bind of {iv.var.name}")
        elif a.kind != "serial" or a.pragmas:
            ann = tuple(("pragma_" + k, v) for k, v in a.pragmas)
            body = _rewrite_loop(st, body, iv.var, lambda s, a=a, ann=ann: s.replace(
                kind=a.kind if a.kind != "serial" else s.kind, annotations=s.annotations + ann),
                f"{a.kind} of {iv.var.name}")
    return body


def _bind(st, s, thread):
    if thread.dom is not None:
        ana = Analyzer()
        if not (ana.can_prove(_op.eq(thread.dom.min, 0)) and ana.can_prove(_op.eq(thread.dom.extent, s.extent))):
            raise LoweringError(f"hybrid stage {st.name}: loop {s.loop_var.name} runs {s.extent} times but is bound "
                                f"to {thread.thread_tag} of range [{thread.dom.min}, "
                                f"{_op.add(thread.dom.min, thread.dom.extent)})")
    val = thread.var if _is_zero(s.min) else _op.add(thread.var, s.min)
    return AttrStmt(thread, "thread_extent", s.extent, substitute(s.body, {s.loop_var: val}))
