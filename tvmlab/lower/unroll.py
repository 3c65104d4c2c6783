"""Loop unrolling: explicit ``unrolled`` loops and automatic unrolling of small inner loops.

Follows TVM's UnrollLoop.  A loop of kind ``unrolled`` with a constant extent
is replaced by copies of its body with the loop variable substituted (or, with
``explicit=False``, kept as an ``unrolled`` loop for the backend to unroll).
A serial loop of constant extent is unrolled automatically when no
non-unrolled loop lies inside it, at most ``auto_max_depth`` unrolled loops are
nested in it, and either its total step count (stores and evaluations it
executes) is at most ``auto_max_step`` or its extent is at most
``auto_max_extent``.  The defaults switch automatic unrolling off.

Per-loop hints, as For annotations or AttrStmts around a body, override the
options inside that loop: ``pragma_auto_unroll_max_step``,
``pragma_auto_unroll_max_extent`` and ``pragma_unroll_explicit``.  An
``unrolled`` loop whose extent is not a constant cannot be unrolled; it stays a
serial loop annotated ``("unroll_hint", True)`` so the request stays visible.
"""
from __future__ import annotations

from ..ir import op as _op
from ..ir.arith import simplify
from ..ir.expr import Broadcast, IntImm
from ..ir.functor import IRMutator
from ..ir.node import Node
from ..ir.stmt import For, seq
from .thread_sync import DOUBLE_BUFFER_WRITE

_HINTS = {"pragma_auto_unroll_max_step": "max_step", "pragma_auto_unroll_max_extent": "max_extent",
          "pragma_unroll_explicit": "explicit"}


def _const_extent(e):
    e = e if isinstance(e, IntImm) else simplify(e)
    return e.value if isinstance(e, IntImm) else None


def _hint_value(key, v):
    v = v.value if isinstance(v, IntImm) else v
    return bool(v) if key == "explicit" else int(v)


class _Unroller(IRMutator):
    def __init__(self, max_step, max_depth, max_extent, explicit):
        super().__init__()
        self.max_step, self.max_depth = max_step, max_depth
        self.max_extent, self.explicit = max_extent, explicit
        # counters of the subtree just visited, as in TVM's UnrollLoop
        self.step_count = 0
        self.unroll_depth = 0
        self.normal_depth = 0

    def _with_hints(self, hints, fn):
        saved = {k: getattr(self, k) for k in hints}
        for k, v in hints.items():
            setattr(self, k, v)
        try:
            return fn()
        finally:
            for k, v in saved.items():
                setattr(self, k, v)

    def visit_AttrStmt(self, s):
        key = _HINTS.get(s.attr_key)
        if key is None:
            return self.generic_visit(s)
        body = self._with_hints({key: _hint_value(key, s.value)}, lambda: self.visit(s.body))
        return body

    def visit_Store(self, s):
        self.step_count += 1
        return self.generic_visit(s)

    visit_ProducerStore = visit_Store
    visit_Evaluate = visit_Store

    def visit_SeqStmt(self, s):
        out = []
        for x in s.seq:
            steps, udepth, ndepth = self.step_count, self.unroll_depth, self.normal_depth
            self.step_count = self.unroll_depth = self.normal_depth = 0
            out.append(self.visit(x))
            self.step_count += steps
            self.normal_depth = max(self.normal_depth, ndepth)
            self.unroll_depth = max(self.unroll_depth, udepth)
        if all(a is b for a, b in zip(out, s.seq)):
            return s
        return seq(*out)

    def visit_For(self, s):
        # A loop's own pragma covers the loop itself, as TVM's attribute around it does.
        hints = {_HINTS[k]: _hint_value(_HINTS[k], v) for k, v in s.annotations if k in _HINTS}
        return self._with_hints(hints, lambda: self._visit_for(s)) if hints else self._visit_for(s)

    def _visit_for(self, s):
        body = self.visit(s.body)
        extent = _const_extent(s.extent)
        value = -1 if extent is None else extent
        auto = (s.kind == "serial" and value >= 0 and self.normal_depth == 0
                and self.unroll_depth <= self.max_depth
                and (value * self.step_count <= self.max_step or value <= self.max_extent))
        if s.kind == "unrolled":
            if value < 0:
                self.normal_depth += 1
                ann = tuple(a for a in s.annotations if a[0] != "unroll_hint")
                return For(s.loop_var, s.min, s.extent, "serial", body,
                           ann + (("unroll_hint", True),))
            auto = True
        if auto:
            self.step_count *= value
            self.unroll_depth += 1
        else:
            self.normal_depth += 1
        if (auto and self.explicit) or (0 <= value <= self.max_extent == 1):
            return _unroll(s.loop_var, s.min, value, body)
        if auto and s.kind != "unrolled":
            return For(s.loop_var, s.min, s.extent, "unrolled", body, s.annotations)
        return s if body is s.body else s.replace(body=body)


def _unroll(var, mn, extent, body):
    if extent > 1:
        body = _PlainWrites().visit(body)
    return seq(*[fresh_copy(body, {var: _op.add(mn, _op.const(k, var.dtype))})
                 for k in range(extent)])


class _PlainWrites(IRMutator):
    """A double buffer's next-tile writes marked ``double_buffer_write`` need no barrier before
    the reads of the current tile *in the same iteration*; once the loop is unrolled the
    iterations follow each other, so the writes become plain ones (barriers placed as needed)."""

    def visit_AttrStmt(self, s):
        if s.attr_key == DOUBLE_BUFFER_WRITE:
            return self.visit(s.body)
        return self.generic_visit(s)


class _FreshCopy(IRMutator):
    def __init__(self, vmap):
        super().__init__()
        self.vmap = dict(vmap)

    def visit_Var(self, v):
        r = self.vmap.get(v)
        return v if r is None else r

    def _fresh(self, v):
        nv = type(v)(v.name, v.dtype)
        self.vmap[v] = nv
        return nv

    def visit_Select(self, e):
        # a choice made by the unrolled variable (a constant table indexed by it) keeps only the branch
        # taken: copying every branch of a long select chain into every copy is what made unrolling slow
        cond = self.visit(e.condition)
        if _constant(cond) is None and _small(cond):
            cond = simplify(cond)
        taken = _constant(cond)
        if taken is not None:
            return self.visit(e.true_value if taken else e.false_value)
        return e.replace(condition=cond, true_value=self.visit(e.true_value), false_value=self.visit(e.false_value))

    def visit_For(self, s):
        mn, ext = self.visit(s.min), self.visit(s.extent)
        var = self._fresh(s.loop_var)
        return For(var, mn, ext, s.kind, self.visit(s.body), s.annotations)

    def visit_LetStmt(self, s):
        value = self.visit(s.value)
        var = self._fresh(s.var)
        return s.replace(var=var, value=value, body=self.visit(s.body))

    def visit_Let(self, e):
        value = self.visit(e.value)
        var = self._fresh(e.var)
        return e.replace(var=var, value=value, body=self.visit(e.body))

    def visit_Allocate(self, s):
        extents = tuple(self.visit(x) for x in s.extents)
        cond = self.visit(s.condition)
        # the copies run one after another: a shared tile stays one array for the block, as it was
        # for the loop (a copy per iteration would multiply the block's shared memory)
        var = s.buffer_var if str(s.scope).startswith("shared") else self._fresh(s.buffer_var)
        return s.replace(buffer_var=var, extents=extents, condition=cond, body=self.visit(s.body))


def _constant(cond):
    """The value of a constant condition (a scalar or a broadcast one), else None."""
    if isinstance(cond, Broadcast):
        cond = cond.value
    return bool(cond.value) if isinstance(cond, IntImm) else None


def _small(e, limit=64):
    """Whether ``e`` has at most ``limit`` nodes (cheap to simplify on the way)."""
    stack, seen = [e], 0
    while stack:
        x = stack.pop()
        seen += 1
        if seen > limit:
            return False
        for name in x.field_names():
            c = getattr(x, name)
            stack.extend(v for v in (c if isinstance(c, (list, tuple)) else (c,)) if isinstance(v, Node))
    return True


def fresh_copy(stmt, vmap):
    """A copy of ``stmt`` with ``vmap`` ({Var: Expr}) applied and every variable it defines
    (loop, let and allocation variables) replaced by a fresh one, so copies placed side by
    side never share a definition."""
    return _FreshCopy({v: _op.convert(e) for v, e in vmap.items()}).visit(stmt)


def unroll(stmt, auto_max_step=0, auto_max_depth=8, auto_max_extent=0, explicit=True):
    """Unroll ``unrolled`` loops and, within the limits given, small inner serial loops."""
    return _Unroller(auto_max_step, auto_max_depth, auto_max_extent, explicit).visit(stmt)
