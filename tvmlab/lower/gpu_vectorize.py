"""Vectorization for a GPU target: a ``vectorized`` loop becomes one vector body where the target's code
generator can print that body with its vector types (CUDA's ``float4``, ``half2``, ...), and stays a loop
in each thread where it cannot.

Threads already run a kernel's elements in parallel; what vectors add on a GPU is width: one 64- or
128-bit load or store instead of 2 or 4 scalar ones, which is what makes cooperative fetches into shared
memory (``s[AA].vectorize(vi)``) and vectorised elementwise kernels fast.  Each target's code generator
registers a check, ``VECTOR_CHECKS[kind] = fn`` with ``fn(stmt) -> reason or None`` (None: it can print
``stmt``); a target without one keeps every vectorized loop serial.

Before vectorising, a bound check on the vectorized index that the lanes of one group pass or fail
together becomes a check of the group's first lane: with ``i = 4 * q + v`` and ``n`` a multiple of 4,
``i < n`` holds for all four lanes or for none, so the guard stays a scalar ``if`` rather than a mask (a
shape the split factor does not divide keeps a real mask, and that loop stays serial).
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import GE, GT, LE, LT, IntImm
from ..ir.functor import IRMutator, substitute, uses_var
from ..ir.stmt import For
from .vectorize import serialize_vectorized, vectorize_loop

# target kind -> fn(vectorised stmt) -> None when the target can print it, else the reason it cannot
VECTOR_CHECKS = {}


def _const(e):
    return e.value if isinstance(e, IntImm) else None


class _UniformBounds(IRMutator):
    """Comparisons linear in the loop variable ``var`` (in [mn, mn + lanes)) that every lane decides
    alike, rewritten at ``var = mn``."""

    def __init__(self, var, mn, lanes):
        super().__init__()
        self.var, self.mn, self.lanes = var, mn, lanes
        self.ana = Analyzer()

    def visit_CmpOp(self, e):
        e = self.generic_mutate(e)
        if not isinstance(e, (LT, LE, GT, GE)) or not dt.is_int(e.a.dtype) or dt.lanes(e.a.dtype) != 1 \
                or not uses_var(e, lambda v: v is self.var):
            return e
        # as D >= 0
        d = {LT: lambda: _op.sub(_op.sub(e.b, e.a), 1), LE: lambda: _op.sub(e.b, e.a),
             GT: lambda: _op.sub(_op.sub(e.a, e.b), 1), GE: lambda: _op.sub(e.a, e.b)}[type(e)]()
        ana, v, mn, n = self.ana, self.var, self.mn, self.lanes
        d_min = ana.simplify(substitute(d, {v: mn}))
        step = _const(ana.simplify(_op.sub(substitute(d, {v: _op.add(mn, 1)}), d_min)))
        if step not in (1, -1):
            return e
        linear = ana.simplify(_op.sub(d, _op.add(d_min, _op.mul(step, _op.sub(v, mn)))))
        if _const(linear) != 0:
            return e
        # D = D_min + step * k for lane k: one sign in every lane when D_min (step 1) or D_min + 1 (step -1)
        # is a multiple of the lanes
        edge = d_min if step == 1 else _op.add(d_min, 1)
        if _const(ana.simplify(_op.floormod(edge, n))) != 0:
            return e
        return substitute(e, {v: mn})

    def generic_mutate(self, e):
        return IRMutator.generic_visit(self, e)


def uniform_bounds(loop):
    """``loop`` (a vectorized For of constant extent) with the lane-uniform comparisons of its body taken
    at its first lane (see the module docstring)."""
    n = _const(loop.extent)
    if n is None or n <= 1:
        return loop
    body = _UniformBounds(loop.loop_var, loop.min, n).visit(loop.body)
    return loop if body is loop.body else loop.replace(body=body)


def _serial(loop):
    return For(loop.loop_var, loop.min, loop.extent, "serial", loop.body, loop.annotations)


def vectorize_one(loop, check):
    """The vector form of ``loop`` when ``check`` accepts it, else the loop serial; returns
    (stmt, reason it stayed serial or None)."""
    if check is None:
        return _serial(loop), "the target has no vector types"
    vec = vectorize_loop(uniform_bounds(loop))
    if isinstance(vec, For) and vec.loop_var is loop.loop_var:
        return _serial(loop), "the body has no vector form (see tvmlab.lower.vectorize)"
    reason = check(vec)
    if reason is not None:
        return _serial(loop), reason
    return vec, None


class _Pass(IRMutator):
    def __init__(self, check):
        super().__init__()
        self.check = check
        self.reasons = []

    def visit_For(self, s):
        body = self.visit(s.body)
        loop = s if body is s.body else s.replace(body=body)
        if s.kind != "vectorized":
            return loop
        out, reason = vectorize_one(loop, self.check)
        if reason is not None:
            self.reasons.append((s.loop_var.name, reason))
        return out


def vectorize_for_target(stmt, kind):
    """Vectorize the ``vectorized`` loops of ``stmt`` (AST3) that target ``kind`` can print (innermost
    first); the others become serial loops."""
    check = VECTOR_CHECKS.get(kind)
    if check is None:
        return serialize_vectorized(stmt)
    return _Pass(check).visit(stmt)


def why_serial(stmt, kind):
    """[(loop variable name, reason)] for each vectorized loop of ``stmt`` that target ``kind`` keeps
    serial: to see why a ``vectorize`` in a GPU schedule gave no vector accesses."""
    p = _Pass(VECTOR_CHECKS.get(kind))
    p.visit(stmt)
    return p.reasons
