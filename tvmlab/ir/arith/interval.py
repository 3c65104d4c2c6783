"""Symbolic intervals: the inclusive range [min, max] of an expression as expressions.

Bound inference asks "which rows of B does this loop nest read?": the answer
``[i.outer*32, i.outer*32 + 31]`` keeps the enclosing loop variables symbolic
while the inner ones range over their domains.  An endpoint may be infinite:
``NEG_INF`` / ``POS_INF`` are marker variables, tested with ``is``.
"""
from __future__ import annotations

from ...errors import LoweringError
from .. import dtype as dt
from .. import expr as E
from .. import op as _op
from ..functor import collect_vars, substitute, uses_var
from ..tensor import Range
from .memo import NodeMemo

POS_INF = E.Var("pos_inf", "int32")
NEG_INF = E.Var("neg_inf", "int32")


def _endpoint(x):
    return x if x is POS_INF or x is NEG_INF else _op.convert(x)


class IntervalSet:
    """The inclusive interval [min, max]; ``min``/``max`` are expressions (or the infinities)."""

    __slots__ = ("min", "max")

    def __init__(self, min, max):  # noqa: A002 - TVM's field names
        self.min = _endpoint(min)
        self.max = _endpoint(max)

    @staticmethod
    def everything():
        return IntervalSet(NEG_INF, POS_INF)

    @staticmethod
    def single_point(e):
        e = _op.convert(e)
        return IntervalSet(e, e)

    @staticmethod
    def from_range(r, analyzer=None):
        """[min, min + extent - 1] of a Range."""
        ana = analyzer or _analyzer()
        mn = ana.simplify(r.min)
        return IntervalSet(mn, ana.simplify(_op.sub(_op.add(mn, r.extent), 1)))

    def has_lower_bound(self):
        return self.min is not NEG_INF

    def has_upper_bound(self):
        return self.max is not POS_INF

    def is_everything(self):
        return self.min is NEG_INF and self.max is POS_INF

    def is_single_point(self):
        if self.min is self.max:
            return self.min is not POS_INF and self.min is not NEG_INF
        if not (self.has_lower_bound() and self.has_upper_bound()):
            return False
        return _analyzer().can_prove_equal(self.min, self.max)

    def to_range(self, analyzer=None):
        """Range(min, max - min + 1), simplified; the interval must be bounded."""
        if not (self.has_lower_bound() and self.has_upper_bound()):
            raise LoweringError(f"cannot make a Range from the unbounded interval {self}")
        ana = analyzer or _analyzer()
        return Range(self.min, ana.simplify(_op.add(_op.sub(self.max, self.min), 1)))

    def union(self, other, analyzer=None):
        return union(self, other, analyzer)

    def intersect(self, other, analyzer=None):
        return intersect(self, other, analyzer)

    def __repr__(self):
        lo = "-inf" if self.min is NEG_INF else str(self.min)
        hi = "+inf" if self.max is POS_INF else str(self.max)
        return f"IntervalSet[{lo}, {hi}]"


def _analyzer():
    from .analyzer import Analyzer
    return Analyzer()


def union(a, b, analyzer=None):
    """The smallest interval holding both (the convex hull)."""
    ana = analyzer or _analyzer()
    lo = NEG_INF if a.min is NEG_INF or b.min is NEG_INF else ana.simplify(_op.min(a.min, b.min))
    hi = POS_INF if a.max is POS_INF or b.max is POS_INF else ana.simplify(_op.max(a.max, b.max))
    return IntervalSet(lo, hi)


def intersect(a, b, analyzer=None):
    ana = analyzer or _analyzer()
    lo = b.min if a.min is NEG_INF else a.min if b.min is NEG_INF else \
        ana.simplify(_op.max(a.min, b.min))
    hi = b.max if a.max is POS_INF else a.max if b.max is POS_INF else \
        ana.simplify(_op.min(a.max, b.max))
    return IntervalSet(lo, hi)


def eval_interval(expr, dom_map):
    """Interval of ``expr`` while the vars of ``dom_map`` ({Var: Range or IntervalSet}) range."""
    return _analyzer().int_set(expr, dom_map)


# ------------------------------------------------------------ endpoint arithmetic
# An interval is a pair (lo, hi): lo is an Expr or NEG_INF, hi an Expr or POS_INF.


def _is_inf(x):
    return x is POS_INF or x is NEG_INF


def _lo_add(x, y):
    return NEG_INF if x is NEG_INF or y is NEG_INF else _op.add(x, y)


def _hi_add(x, y):
    return POS_INF if x is POS_INF or y is POS_INF else _op.add(x, y)


def _neg(x):
    if x is NEG_INF:
        return POS_INF
    if x is POS_INF:
        return NEG_INF
    if isinstance(x, E.IntImm) and dt.is_int(x.dtype) and x.value == dt.min_value(x.dtype):
        return POS_INF        # -(int16 min) does not fit int16: unbounded above
    return _op.neg(x)


class IntervalEval(NodeMemo):
    """Interval of an expression when the vars in ``dom`` ({Var: (lo, hi)}) range.

    Everything else is a point.  Where no symbolic rule applies, the
    constant bounds of the analyzer (which knows the same domains) are used.
    """

    def __init__(self, analyzer, dom):
        super().__init__()
        self.ana = analyzer
        self.dom = dom

    # ------------------------------------------------------------ helpers
    def _const(self, e):
        lo, hi = self.ana.bounds(e)
        d = dt.element_of(e.dtype)
        return (NEG_INF if lo == float("-inf") else E.IntImm(d, lo),
                POS_INF if hi == float("inf") else E.IntImm(d, hi))

    def _sign(self, e):
        """+1 / -1 when ``e`` is provably >= 0 / <= 0, else 0."""
        lo, hi = self.ana.bounds(e)
        return 1 if lo >= 0 else -1 if hi <= 0 else 0

    def _nonneg(self, x):
        return not _is_inf(x) and self.ana.bounds(self.ana.simplify(x))[0] >= 0

    def _below(self, x, d):
        """``x < d`` provably (x an upper endpoint)."""
        return not _is_inf(x) and self.ana.bounds(
            self.ana.simplify(_op.sub(d, x)))[0] >= 1

    # ------------------------------------------------------------ rules
    def _eval(self, e):
        t = type(e)
        if t in (E.IntImm, E.FloatImm, E.StringImm):
            return (e, e)
        if isinstance(e, E.Var):
            return self.dom.get(e, (e, e))
        rule = _RULES.get(t)
        if rule is not None:
            return rule(self, e)
        return self._generic(e)

    def _point_children(self, e):
        """True when no child of ``e`` ranges, so ``e`` itself is a point."""
        for name in type(e).field_names():
            v = getattr(e, name)
            vs = v if isinstance(v, tuple) else (v,)
            for x in vs:
                if isinstance(x, E.Expr):
                    lo, hi = self(x)
                    if not (lo is x and hi is x):
                        return False
        return True

    def _generic(self, e):
        if self._point_children(e):
            return (e, e)
        return self._const(e)

    def _binary(self, e):
        a, b = self(e.a), self(e.b)
        if a[0] is e.a and a[1] is e.a and b[0] is e.b and b[1] is e.b:
            return None, a, b
        return True, a, b

    def add(self, e):
        ranged, a, b = self._binary(e)
        if not ranged:
            return (e, e)
        return (_lo_add(a[0], b[0]), _hi_add(a[1], b[1]))

    def sub(self, e):
        ranged, a, b = self._binary(e)
        if not ranged:
            return (e, e)
        return (_lo_add(a[0], _neg(b[1])), _hi_add(a[1], _neg(b[0])))

    def _scale(self, a, k):
        s = self._sign(k)
        lo, hi = a
        if s > 0:
            return (NEG_INF if lo is NEG_INF else _op.mul(lo, k),
                    POS_INF if hi is POS_INF else _op.mul(hi, k))
        if s < 0:
            return (NEG_INF if hi is POS_INF else _op.mul(hi, k),
                    POS_INF if lo is NEG_INF else _op.mul(lo, k))
        return None

    def mul(self, e):
        ranged, a, b = self._binary(e)
        if not ranged:
            return (e, e)
        r = None
        if b[0] is b[1]:
            r = self._scale(a, b[0])
        elif a[0] is a[1]:
            r = self._scale(b, a[0])
        elif not any(_is_inf(x) for x in a + b):
            ps = [_op.mul(x, y) for x in a for y in b]
            r = (_op.min(_op.min(ps[0], ps[1]), _op.min(ps[2], ps[3])),
                 _op.max(_op.max(ps[0], ps[1]), _op.max(ps[2], ps[3])))
        return r if r is not None else self._const(e)

    def div(self, e):
        """floordiv and truncdiv are monotone in the dividend for a divisor of fixed sign."""
        ranged, a, b = self._binary(e)
        if not ranged:
            return (e, e)
        fn = _op.floordiv if type(e) is E.FloorDiv else _op.truncdiv
        if b[0] is b[1]:
            d = b[0]
            lo, hi = self.ana.bounds(d)
            if lo >= 1:
                return (NEG_INF if a[0] is NEG_INF else fn(a[0], d),
                        POS_INF if a[1] is POS_INF else fn(a[1], d))
            if hi <= -1:
                return (NEG_INF if a[1] is POS_INF else fn(a[1], d),
                        POS_INF if a[0] is NEG_INF else fn(a[0], d))
        return self._const(e)

    def mod(self, e):
        ranged, a, b = self._binary(e)
        if not ranged:
            return (e, e)
        if b[0] is b[1] and self.ana.bounds(b[0])[0] >= 1:
            d = b[0]
            if type(e) is E.Mod and not self._nonneg(a[0]):
                return self._const(e)
            if self._nonneg(a[0]) and self._below(a[1], d):
                return a
            if type(e) is E.FloorMod and not _is_inf(a[0]) and not _is_inf(a[1]):
                # the whole range in one block of d: a - d * q with the block's q
                q = _op.floordiv(a[0], d)
                if self.ana.can_prove(_op.eq(_op.floordiv(a[1], d), q)):
                    return (_op.sub(a[0], _op.mul(d, q)), _op.sub(a[1], _op.mul(d, q)))
            aligned = self._aligned_mod(e.a, d) if type(e) is E.FloorMod and type(e.a) is E.Add else None
            if aligned is not None:
                return aligned
            if isinstance(d, E.IntImm):
                return self._const(e)
            return (_op.const(0, d.dtype), _op.sub(d, 1))
        return self._const(e)

    def _aligned_mod(self, a, d):
        """``floormod(x + r, d)`` with ``x`` a point and ``r`` in ``[lo, k - 1]`` (``lo >= 0``) where
        ``k`` divides both ``x`` and ``d``: ``x + r`` stays inside one block of ``d``, so the
        result is ``floormod(x, d) + r`` (a tile of a fused axis that never spans two rows)."""
        for x, r in ((a.a, a.b), (a.b, a.a)):
            xs, rs = self(x), self(r)
            if not (xs[0] is x and xs[1] is x) or _is_inf(rs[0]) or _is_inf(rs[1]) or not self._nonneg(rs[0]):
                continue
            k = self.ana.simplify(_op.add(rs[1], 1))
            if (self.ana.can_prove(_op.eq(_op.floormod(x, k), 0))
                    and self.ana.can_prove(_op.eq(_op.floormod(d, k), 0))):
                base = _op.floormod(x, d)
                return (_op.add(base, rs[0]), _op.add(base, rs[1]))
        return None

    def min_max(self, e):
        ranged, a, b = self._binary(e)
        if not ranged:
            return (e, e)
        if type(e) is E.Min:
            lo = NEG_INF if a[0] is NEG_INF or b[0] is NEG_INF else _op.min(a[0], b[0])
            hi = b[1] if a[1] is POS_INF else a[1] if b[1] is POS_INF else _op.min(a[1], b[1])
        else:
            lo = b[0] if a[0] is NEG_INF else a[0] if b[0] is NEG_INF else _op.max(a[0], b[0])
            hi = POS_INF if a[1] is POS_INF or b[1] is POS_INF else _op.max(a[1], b[1])
        return (lo, hi)

    def _union(self, a, b):
        lo = NEG_INF if a[0] is NEG_INF or b[0] is NEG_INF else _op.min(a[0], b[0])
        hi = POS_INF if a[1] is POS_INF or b[1] is POS_INF else _op.max(a[1], b[1])
        return (lo, hi)

    def select(self, e):
        if self._point_children(e):
            return (e, e)
        return self._union(self(e.true_value), self(e.false_value))

    def call(self, e):
        if self._point_children(e):
            return (e, e)
        if e.op == "likely":
            return self(e.args[0])
        if e.op == "if_then_else":
            return self._union(self(e.args[1]), self(e.args[2]))
        return self._const(e)

    def cast(self, e):
        a = self(e.value)
        if a[0] is e.value and a[1] is e.value:
            return (e, e)
        src, dst = dt.parse(e.value.dtype), dt.parse(e.dtype)
        widening = src[0] in ("int", "uint") and dst[0] == "int" and (
            dst[1] > src[1] or (dst[1] == src[1] and src[0] == "int"))
        if widening:
            return tuple(x if _is_inf(x) else _op.cast(e.dtype, x) for x in a)
        return self._const(e)

    def ramp(self, e):
        base, stride = self(e.base), self(e.stride)
        if stride[0] is not stride[1]:
            return self._const(e)
        span = _op.mul(stride[0], e.lanes - 1)
        s = self._sign(stride[0])
        if s > 0:
            return (base[0], _hi_add(base[1], span))
        if s < 0:
            return (_lo_add(base[0], span), base[1])
        return self._const(e)

    def broadcast(self, e):
        return self(e.value)

    def let(self, e):
        return self(substitute(e.body, {e.var: e.value}))


_RULES = {
    E.Add: IntervalEval.add, E.Sub: IntervalEval.sub, E.Mul: IntervalEval.mul,
    E.FloorDiv: IntervalEval.div, E.Div: IntervalEval.div,
    E.FloorMod: IntervalEval.mod, E.Mod: IntervalEval.mod,
    E.Min: IntervalEval.min_max, E.Max: IntervalEval.min_max,
    E.Select: IntervalEval.select, E.Call: IntervalEval.call, E.Cast: IntervalEval.cast,
    E.Ramp: IntervalEval.ramp, E.Broadcast: IntervalEval.broadcast, E.Let: IntervalEval.let,
}


def relax(analyzer, e, dom, sides=(0, 1)):
    """Interval (lo, hi) of ``e`` over ``dom``, endpoints simplified and free of ``dom`` vars.

    Variables whose domain mentions other ranged variables (``j`` in
    ``[i, i + 8)``) are relaxed first, so ``j - i`` gets [0, 7] rather than
    a range that forgets how ``j`` follows ``i``.  ``sides`` picks which
    endpoints to compute (the other comes back infinite).
    """
    if not uses_var(e, dom.__contains__):
        s = analyzer.simplify(e)
        return (s, s)
    groups = _relax_order(dom)
    out = []
    for side, inf in ((0, NEG_INF), (1, POS_INF)):
        x = e
        if side in sides:
            for group in groups:
                if _is_inf(x):
                    break
                if uses_var(x, group.__contains__):
                    x = IntervalEval(analyzer, group)(x)[side]
                    if not _is_inf(x):
                        x = analyzer.simplify(x)
        out.append(x if side in sides else inf)
    return tuple(out)


def _relax_order(dom):
    """Groups of ``dom``: a var comes before the vars its domain mentions."""
    deps = {}
    for v, ends in dom.items():
        used = set()
        for x in ends:
            if not _is_inf(x):
                used.update(u for u in collect_vars(x) if u in dom and u is not v)
        deps[v] = used
    level = {}

    def depth(v, seen):
        if v in level:
            return level[v]
        if v in seen:          # a cycle of domains: stop climbing
            return 0
        seen.add(v)
        d = 1 + max((depth(u, seen) for u in deps[v]), default=-1)
        level[v] = d
        return d

    for v in dom:
        depth(v, set())
    out = {}
    for v, d in level.items():
        out.setdefault(d, {})[v] = dom[v]
    return [out[d] for d in sorted(out, reverse=True)]
