"""Loop partitioning: a split that does not divide gets a guard-free main loop and a guarded tail.

For a serial or parallel loop over ``x`` whose body holds ``likely`` guards
(``IfThenElse(likely(cond))``, as ScheduleOps emits for non-dividing splits),
each conjunct of a guard that is a comparison linear in ``x`` gives the range
of ``x`` where it holds for every value of the loops inside (they are relaxed
to their ranges): ``outer*f + inner < n`` with ``inner`` in [0, f) holds for
``outer < n // f``.  The loop is cut there into up to three loops:

    [min, lo)        guarded copy (only for guards of the form ``x >= ...``)
    [lo, hi)         main loop: the proven conjuncts are dropped
    [hi, min+extent) guarded tail

A parallel loop is not cut (its tail would run on one thread after the
rest): its body branches between the guard-free and the guarded copy.
Cut points are clamped into the loop range (``min``/``max``) unless the
analyzer proves the clamp needless, so a symbolic ``n`` is handled and an
empty part simply runs zero times.  The main loop and the guarded parts are
partitioned further along the loops inside them (the guarded parts keep their
own guard: a tail row of tiles still gets guard-free tiles where its columns
are in range).  A loop is left alone when no guard
is provably true on a non-empty range, when a guard is not linear in ``x``, or
when it depends on a variable bound inside the loop by a ``let``.  Vectorized
and unrolled loops are not partitioned (they need constant extents); the
outer loop of such a split is the one that gets partitioned.  With
``const_loops`` False (TVM's ``partition_const_loop`` default) only loops of a
symbolic range are.

A GPU grid of symbolic size (a ``blockIdx`` scope whose extent is not a
constant) is partitioned as TVM does: inside the innermost thread scope, ``if
(blockIdx in the range where the guards hold for every thread and inner
iteration) {guard-free body} else {guarded body}``: the full blocks run
without guards, the edge blocks with them, and no block diverges on the test.
A body whose threads cooperate (barriers, shared memory, a cross-thread
reduction) is left whole, so shared allocations are never duplicated.
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import POS_INF, Analyzer, IntervalSet
from ..ir.expr import EQ, GE, GT, LE, LT, And, Call, IntImm, Load, Max, Min, Var
from ..ir.functor import IRMutator, IRVisitor, collect_vars, post_order_visit, substitute
from ..ir.stmt import THREAD_ALLREDUCE, Allocate, AttrStmt, Evaluate, For, IfThenElse, Store, seq
from ..ir.tensor import IterVar, Range
from .unroll import fresh_copy


def _conjuncts(cond):
    """The conjuncts of a guard condition, looking through ``likely``."""
    if isinstance(cond, Call) and cond.op == "likely":
        return _conjuncts(cond.args[0])
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


class _Guards(IRVisitor):
    """Every likely guard inside a loop body, with the ranges of the loops around it."""

    def __init__(self):
        super().__init__()
        self.doms = {}        # Var -> Range of loops / threads between the loop and here
        self.lets = set()     # variables bound by lets in between
        self.found = []       # (conjunct, doms copy, lets copy)

    def visit_For(self, s):
        self.visit(s.min)
        self.visit(s.extent)
        self.doms[s.loop_var] = Range(s.min, s.extent)
        self.visit(s.body)
        del self.doms[s.loop_var]

    def visit_AttrStmt(self, s):
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar):
            self.doms[s.node.var] = Range(_op.const(0, s.node.var.dtype), s.value)
            self.visit(s.body)
            del self.doms[s.node.var]
            return
        self.generic_visit(s)

    def visit_LetStmt(self, s):
        self.visit(s.value)
        self.lets.add(s.var)
        self.visit(s.body)
        self.lets.discard(s.var)

    visit_Let = visit_LetStmt

    def visit_Call(self, e):
        if e.op == "likely":
            for c in _conjuncts(e):
                self.found.append((c, dict(self.doms), set(self.lets)))
        self.generic_visit(e)


def _as_less_than(cond):
    """``cond`` as ``d < k`` (integers), returned as (d, k), or None.  ``a == b`` gives
    (a - b, 1) with k marking an equality by a third element: (d, 1, True) means ``d == 0``."""
    if not isinstance(cond, (LT, LE, GT, GE, EQ)):
        return None
    a, b = cond.a, cond.b
    if not dt.is_int(a.dtype) or dt.lanes(a.dtype) != 1:
        return None
    if isinstance(cond, EQ):
        return _op.sub(a, b), 0, True
    if isinstance(cond, LT):
        return _op.sub(a, b), 0, False
    if isinstance(cond, LE):
        return _op.sub(a, b), 1, False
    if isinstance(cond, GT):
        return _op.sub(b, a), 0, False
    return _op.sub(b, a), 1, False


class _Bound:
    """Where a conjunct holds: ``x <= upper`` or ``x >= lower`` (one of the two)."""
    __slots__ = ("lower", "upper")

    def __init__(self, lower=None, upper=None):
        self.lower, self.upper = lower, upper


def _true_region(cond, x, doms, lets):
    """The range of ``x`` where ``cond`` holds for every value of the vars in ``doms``."""
    form = _as_less_than(cond)
    if form is None:
        return None
    d, k, equal = form
    ana = Analyzer()
    inner = set(doms) | set(lets)
    if equal:
        # ``d == 0`` holds for every inner value only when d does not depend on them
        hi = ana.simplify(d)
        if any(v in inner for v in collect_vars(hi)):
            return None
    else:
        hi = ana.int_set(d, doms).max if doms else d
        if hi is POS_INF:
            return None
        hi = ana.simplify(hi)
        if any(v in inner for v in collect_vars(hi)):
            return None
    coef = ana.simplify(_op.sub(substitute(hi, {x: _op.add(x, 1)}), hi))
    if not isinstance(coef, IntImm) or coef.value == 0:
        return None
    a = coef.value
    b = ana.simplify(substitute(hi, {x: _op.const(0, x.dtype)}))
    if x in collect_vars(b):
        return None
    rest = ana.simplify(_op.sub(hi, _op.add(_op.mul(x, a), b)))
    if not (isinstance(rest, IntImm) and rest.value == 0):
        return None
    if equal:       # a*x + b == 0: one point when a is a unit
        if abs(a) != 1:
            return None
        at = ana.simplify(_op.mul(b, _op.const(-a, x.dtype)))
        return _Bound(lower=at, upper=at)
    # a*x + b < k
    if a > 0:
        return _Bound(upper=ana.simplify(_op.floordiv(_op.sub(_op.const(k - 1, x.dtype), b), a)))
    return _Bound(lower=ana.simplify(_op.add(_op.floordiv(_op.sub(b, _op.const(k, x.dtype)), -a),
                                             1)))


def _inverse(cond):
    """The negation of an integer comparison, or None."""
    if isinstance(cond, LT):
        return GE(cond.a, cond.b)
    if isinstance(cond, LE):
        return GT(cond.a, cond.b)
    if isinstance(cond, GT):
        return LE(cond.a, cond.b)
    if isinstance(cond, GE):
        return LT(cond.a, cond.b)
    return None


def _regions(found, x, negate=False):
    """id(conjunct) -> the _Bounds of its occurrences where it holds (``negate``: where it
    fails) for every value of the loops inside; None when one occurrence gives none."""
    regions = {}
    for cond, doms, lets in found:
        if x not in collect_vars(cond):
            continue
        key = id(cond)
        if key in regions and regions[key] is None:
            continue
        c = _inverse(cond) if negate else cond
        region = _true_region(c, x, doms, lets) if c is not None else None
        if region is None:
            regions[key] = None
        else:
            regions.setdefault(key, []).append(region)
    return regions


class _DropConjuncts(IRMutator):
    """Remove the proven conjuncts (by identity) from ``likely`` conditions, wherever they
    stand (an ``if``, a ``Select``, an ``if_then_else``); a guard left empty goes away."""

    def __init__(self, proven, refuted=()):
        super().__init__()
        self.proven = proven
        self.refuted = refuted

    def visit_Call(self, e):
        if e.op != "likely":
            return self.generic_visit(e)
        parts = _conjuncts(e)
        if any(id(c) in self.refuted for c in parts):
            return _op.const(False, "bool")
        kept = [c for c in parts if id(c) not in self.proven]
        if len(kept) == len(parts):
            return self.generic_visit(e)
        if not kept:
            return _op.const(True, "bool")
        cond = self.visit(kept[0])
        for c in kept[1:]:
            cond = _op.logical_and(cond, self.visit(c))
        return _op.likely(cond)

    def visit_IfThenElse(self, s):
        out = self.generic_visit(s)
        if out is not s and isinstance(out.condition, IntImm):
            if out.condition.value:
                return out.then_case
            return out.else_case if out.else_case is not None else Evaluate(_op.const(0, "int32"))
        return out

    def visit_Select(self, e):
        out = self.generic_visit(e)
        if out is not e and isinstance(out.condition, IntImm):
            return out.true_value if out.condition.value else out.false_value
        return out


class _Partitioner(IRMutator):
    def __init__(self, nonneg, const_loops=True):
        super().__init__()
        self.nonneg = tuple(nonneg)
        self.const_loops = const_loops
        self.scope = []   # (Var, Range) of the loops around the current node
        self.threads = set()   # thread indices seen: inside a GPU kernel
        self.shared = set()    # "shared" buffers allocated around

    def visit_Allocate(self, s):
        if str(s.scope).startswith("shared"):
            self.shared.add(s.buffer_var)
        return self.generic_visit(s)

    def visit_AttrStmt(self, s):
        if not _is_thread_scope(s):
            return self.generic_visit(s)
        chain = [s]             # the thread scopes opened one inside the other, outermost first
        while _is_thread_scope(chain[-1].body):
            chain.append(chain[-1].body)
        for a in chain:
            self.scope.append((a.node.var, Range(_op.const(0, a.node.var.dtype), a.value)))
            self.threads.add(a.node.var)
        try:
            inner = self._block_branch(chain, chain[-1].body)
        finally:
            del self.scope[-len(chain):]
        if inner is chain[-1].body:
            return s
        for a in reversed(chain):
            inner = a.replace(body=inner)
        return inner

    def _block_branch(self, chain, inner):
        """Inside the innermost of the thread scopes ``chain``: ``if (every blockIdx in the range
        where guards hold) {inner without those guards} else {inner}``.  The condition is the same
        for every thread of a block, so a block never diverges on it (barriers stay safe); the
        blocks that cover the whole tensor run guard-free code, the edge blocks the guarded one.
        As in TVM, only a block scope of symbolic extent is partitioned (a constant grid's edge is
        left to the loops inside)."""
        blocks = [a for a in chain if a.node.thread_tag.startswith("blockIdx") and not isinstance(a.value, IntImm)]
        if not blocks or _cooperates(inner, self.shared):
            return self.visit(inner)
        g = _Guards()
        g.visit(inner)
        ana = self._analyzer()
        conds, proven, narrowed = [], set(), []
        for a in blocks:
            b, zero = a.node.var, _op.const(0, a.node.var.dtype)
            others = {o.node.var: Range(_op.const(0, o.node.var.dtype), o.value) for o in chain if o is not a}
            found = [(c, {**others, **doms}, lets) for c, doms, lets in g.found]
            regions = {k: v for k, v in _regions(found, b).items() if v}
            if not regions:
                continue
            lo, hi = _cut_points(ana, regions, zero, ana.simplify(a.value))
            if ana.can_prove(_op.le(hi, lo)):
                continue
            if not ana.can_prove(_op.le(lo, zero)):
                conds.append(_op.ge(b, lo))
            if not ana.can_prove(_op.ge(hi, a.value)):
                conds.append(_op.lt(b, hi))
            proven |= set(regions)
            narrowed.append((b, Range(lo, ana.simplify(_op.sub(hi, lo)))))
        if not proven:
            return self.visit(inner)
        self.scope += narrowed
        try:
            main = self.visit(_DropConjuncts(proven).visit(inner))
        finally:
            del self.scope[-len(narrowed):]
        if not conds:
            return main
        return IfThenElse(_op.all(*conds), main, self.visit(fresh_copy(inner, {})))

    def visit_For(self, s):
        if s.kind in ("serial", "parallel") and (self.const_loops or not _constant_range(s)) \
                and not (self.threads and _cooperates(s.body, self.shared)):
            parts = self._partition(s)
            if parts is not None:
                return parts
        self.scope.append((s.loop_var, Range(s.min, s.extent)))
        try:
            body = self.visit(s.body)
        finally:
            self.scope.pop()
        return s if body is s.body else s.replace(body=body)

    # ------------------------------------------------------------------ one loop
    def _analyzer(self):
        ana = Analyzer()
        for v in self.nonneg:
            ana.bind(v, IntervalSet(0, POS_INF))
        for v, r in self.scope:
            ana.bind(v, r)
        return ana

    def _partition(self, s):
        x = s.loop_var
        g = _Guards()
        g.visit(s.body)
        proven = {k: v for k, v in _regions(g.found, x).items() if v}
        if not proven:
            return None
        ana = self._analyzer()
        mn, end = s.min, ana.simplify(_op.add(s.min, s.extent))
        lo, hi = _cut_points(ana, proven, mn, end)
        if ana.can_prove(_op.le(hi, lo)):
            return None     # the guards never hold for a whole iteration: nothing to gain
        main_body = _DropConjuncts(set(proven)).visit(s.body)
        self.scope.append((x, Range(lo, ana.simplify(_op.sub(hi, lo)))))
        try:
            main_body = self.visit(main_body)
        finally:
            self.scope.pop()
        if s.kind == "parallel":
            return self._branch(s, lo, hi, mn, end, main_body, ana)
        # a guard may be provably false on a whole guarded part (the tail past ``n``): drop it there
        refuted = {k: v for k, v in _regions(g.found, x, negate=True).items() if v}
        pieces = []
        if not ana.can_prove(_op.le(lo, mn)):
            false = {k for k, bs in refuted.items()
                     if all(b.upper is not None and _proves_le(ana, _op.sub(lo, 1), b.upper) for b in bs)}
            pieces.append(self._guarded(s, mn, lo, ana, false))
        pieces.append(For(x, lo, ana.simplify(_op.sub(hi, lo)), s.kind, main_body, s.annotations))
        if not ana.can_prove(_op.ge(hi, end)):
            false = {k for k, bs in refuted.items()
                     if all(b.lower is not None and _proves_le(ana, b.lower, hi) for b in bs)}
            pieces.append(self._guarded(s, hi, end, ana, false))
        pieces = [p for p in pieces if p is not None]
        return seq(*pieces) if len(pieces) > 1 else pieces[0]

    def _branch(self, s, lo, hi, mn, end, main_body, ana):
        """One parallel loop whose body picks the guard-free or the guarded copy: cutting the
        range instead would run the tail on one thread after the parallel part."""
        inside = []
        before = not ana.can_prove(_op.le(lo, mn))
        after = not ana.can_prove(_op.ge(hi, end))
        if before:
            inside.append(_op.ge(s.loop_var, lo))
        if after:
            inside.append(_op.lt(s.loop_var, hi))
        if not inside:
            return s.replace(body=main_body)
        # the guarded copy runs before lo or from hi on: with one of them, that is its range
        rest = Range(s.min, s.extent) if before and after else \
            Range(mn, ana.simplify(_op.sub(lo, mn))) if before else Range(hi, ana.simplify(_op.sub(end, hi)))
        # one guarded iteration (the last tile): its index is a constant there, so its guards fold (a vector
        # lane range wholly past the end drops out instead of being read under a mask)
        one = ana.can_prove(_op.eq(rest.extent, 1))
        self.scope.append((s.loop_var, rest))
        try:
            guarded = self.visit(fresh_copy(s.body, {s.loop_var: rest.min} if one else {}))
        finally:
            self.scope.pop()
        return s.replace(body=IfThenElse(_op.all(*inside), main_body, guarded))

    def _guarded(self, s, start, stop, ana, false=()):
        nv = Var(s.loop_var.name, s.loop_var.dtype)
        extent = ana.simplify(_op.sub(stop, start))
        body = _DropConjuncts(set(), false).visit(s.body) if false else s.body
        if isinstance(body, Evaluate) and isinstance(body.value, IntImm):
            return None     # the guards fail on the whole part: it does nothing
        body = fresh_copy(body, {s.loop_var: nv})
        self.scope.append((nv, Range(start, extent)))
        try:
            body = self.visit(body)
        finally:
            self.scope.pop()
        return For(nv, start, extent, s.kind, body, s.annotations)


def _cut_points(ana, proven, mn, end):
    """[lo, hi): the part of [mn, end) where the ``proven`` conjuncts ({id: [_Bound]}) all hold,
    clamped into [mn, end)."""
    lowers = [b.lower for bs in proven.values() for b in bs if b.lower is not None]
    uppers = [b.upper for bs in proven.values() for b in bs if b.upper is not None]
    lo = mn
    for L in lowers:
        lo = _clamped_max(ana, lo, L)
    if lowers:
        lo = _clamped_min(ana, lo, end)
    hi = end
    for H in uppers:
        hi = _clamped_min(ana, hi, ana.simplify(_op.add(H, 1)))
    return lo, _clamped_max(ana, hi, lo)


def _is_thread_scope(s):
    return isinstance(s, AttrStmt) and s.attr_key == "thread_extent" and isinstance(s.node, IterVar)


def _constant_range(loop):
    return isinstance(loop.min, IntImm) and isinstance(loop.extent, IntImm)


def _cooperates(body, shared=()):
    """Whether threads work together in ``body`` (a cross-thread reduction, a barrier, shared memory):
    cutting its loop at points that differ between threads would make some threads skip the
    others' barriers, so such a loop in a GPU kernel is left whole."""
    found = []

    def visit(n):
        if (isinstance(n, AttrStmt) and n.attr_key == THREAD_ALLREDUCE) or (
                isinstance(n, Call) and n.op in ("tvm_storage_sync", "tvm_warp_shuffle", "tvm_warp_shuffle_down")) \
                or (isinstance(n, Allocate) and str(n.scope).startswith("shared")) \
                or (isinstance(n, (Load, Store)) and n.buffer_var in shared):
            found.append(n)
    post_order_visit(body, visit)
    return bool(found)


def _proves_le(ana, a, b):
    """Whether ``a <= b``, looking into the clamps (``min``/``max``) the cut points carry."""
    if ana.can_prove(_op.le(a, b)):
        return True
    if isinstance(b, Max):
        return _proves_le(ana, a, b.a) or _proves_le(ana, a, b.b)
    if isinstance(a, Min):
        return _proves_le(ana, a.a, b) or _proves_le(ana, a.b, b)
    if isinstance(b, Min):
        return _proves_le(ana, a, b.a) and _proves_le(ana, a, b.b)
    if isinstance(a, Max):
        return _proves_le(ana, a.a, b) and _proves_le(ana, a.b, b)
    return False


def _clamped_max(ana, a, b):
    """max(a, b), written without ``max`` when one side is provably larger."""
    if ana.can_prove(_op.ge(a, b)):
        return a
    if ana.can_prove(_op.ge(b, a)):
        return b
    return ana.simplify(_op.max(a, b))


def _clamped_min(ana, a, b):
    if ana.can_prove(_op.le(a, b)):
        return a
    if ana.can_prove(_op.le(b, a)):
        return b
    return ana.simplify(_op.min(a, b))


def loop_partition(stmt, nonneg=(), const_loops=True):
    """Split loops so that ``likely`` guards disappear from their main part.

    ``nonneg``: variables known to be >= 0 (symbolic buffer dimensions), which
    lets the cut points go without clamps; SizeVars are known to be already.
    ``const_loops`` False (TVM's ``partition_const_loop`` default): only loops
    whose min or extent is symbolic are partitioned.
    """
    return _Partitioner(nonneg, const_loops).visit(stmt)
