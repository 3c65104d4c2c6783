"""The expression simplifier: linear forms, constant folding, div/mod, comparisons.

Integer scalar ``+ - *`` go through linear forms (``linear.Sum``), so like
terms cancel and the output order is canonical.  Every other node is
simplified bottom-up by its rule below (division and modulo in ``divmod``);
rules that need facts about the variables ask the analyzer for constant
bounds, or for a symbolic lower bound when a variable's range has symbolic
ends (``i`` in ``[0, n)``).

Every rule is exact for all integers in the bound ranges: floordiv/floormod
with Python's floor semantics, Div/Mod with C truncation.  Float arithmetic
is only constant-folded (in the dtype's precision), never reassociated.
"""
from __future__ import annotations

import math
import operator
from functools import lru_cache

from .. import dtype as dt
from .. import expr as E
from .. import op as _op
from ..functor import post_order_visit, substitute
from . import linear as L
from .divmod import DivModRules, _fold_float, is_index
from .minmax_sum import MinMaxSumRules
from .interval import IntervalSet
from .int_bound import INF, mul as _bmul, scale as _bscale

_LEAVES = (E.IntImm, E.FloatImm, E.StringImm)
_ARITH = (E.Add, E.Sub, E.Mul)
_CMP_FN = {E.EQ: operator.eq, E.NE: operator.ne, E.LT: operator.lt, E.LE: operator.le,
           E.GT: operator.gt, E.GE: operator.ge}
_NEGATE = {E.LT: (E.LE, True), E.LE: (E.LT, True), E.EQ: (E.NE, False), E.NE: (E.EQ, False)}


@lru_cache(maxsize=None)
@lru_cache(maxsize=None)
def _is_int_vector(dtype):
    kind, _, lanes = dt.parse(dtype)
    return lanes > 1 and kind in ("int", "uint")


def _bool(v, lanes=1):
    c = E.IntImm("bool", int(bool(v)))
    return c if lanes == 1 else E.Broadcast(c, lanes)


def truth(x):
    """True/False for a constant condition (scalar or broadcast), else None."""
    if type(x) is E.Broadcast:
        x = x.value
    if type(x) is E.IntImm:
        return bool(x.value)
    return None


def drop_true_predicate(node):
    """``node`` (a Load or Store) without its predicate when that holds in every lane."""
    return node.replace(predicate=None) if node.predicate is not None and truth(node.predicate) is True else node


def _const_floordiv(factors):
    """A monomial that is exactly ``x // c`` for a constant c > 0."""
    if len(factors) != 1:
        return False
    f = factors[0]
    return type(f) is E.FloorDiv and type(f.b) is E.IntImm and f.b.value > 0


def inlinable(e):
    """A let value worth substituting: a constant, a variable, or pure index arithmetic.

    Inlining lets later rules see through the variable (``v // 8`` with
    ``v = i*8 + j``); values that load memory or call functions stay bound.
    """
    if type(e) in (E.IntImm, E.FloatImm) or isinstance(e, E.Var):
        return True
    return is_index(e.dtype) and _pure_index(e)


def _pure_index(e):
    t = type(e)
    if t is E.IntImm or isinstance(e, E.Var):
        return True
    if t in _ARITH or t in (E.FloorDiv, E.FloorMod, E.Div, E.Mod, E.Min, E.Max):
        return _pure_index(e.a) and _pure_index(e.b)
    return False


def _reads_memory(e):
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, (E.Load, E.ProducerLoad)) else None)
    return bool(found)


class Simplifier(DivModRules, MinMaxSumRules):
    """Simplify expressions for one Analyzer; results are memoised until bindings change."""

    def __init__(self, analyzer):
        self.ana = analyzer
        self.key = analyzer._keys
        self.bound = analyzer._bound
        # (results, forms) for top-level work and for nested work done while proving
        self._levels = (({}, {}), ({}, {}))
        self._vars_memo = {}

    def clear(self):
        for memo, forms in self._levels:
            memo.clear()
            forms.clear()

    def _level(self):
        return self._levels[0 if self.ana._depth == 0 else 1]

    # ------------------------------------------------------------ entry points
    def visit(self, e):
        memo = self._level()[0]
        hit = memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._visit(e)
        if len(memo) > 200_000:
            memo.clear()
        memo[id(e)] = (e, r)
        if r is not e:
            memo.setdefault(id(r), (r, r))
        return r

    def _fixed(self, e):
        """Record that ``e`` is already simplified (it was built from simplified parts)."""
        self._level()[0].setdefault(id(e), (e, e))
        return e

    def _visit(self, e):
        t = type(e)
        if t in _LEAVES:
            return e
        if isinstance(e, E.Var):
            b = self.ana._bindings.get(e)
            return self.visit(b.expr) if b is not None and b.expr is not None else e
        if t in _ARITH:
            if is_index(e.dtype):
                return L.to_expr(self.form(e))
            return self._arith_other(e)
        rule = _RULES.get(t)
        if rule is not None:
            return rule(self, e)
        return self._generic(e)

    def form(self, e):
        """The linear form of a scalar integer expression (its atoms simplified)."""
        forms = self._level()[1]
        hit = forms.get(id(e))
        if hit is not None:
            return hit[1]
        t = type(e)
        if t is E.IntImm:
            s = L.constant(e.dtype, e.value)
        elif t is E.Add:
            s = self._fold_min_max(self._merge_divmod(L.add(self.form(e.a), self.form(e.b))))
        elif t is E.Sub:
            s = self._fold_min_max(self._merge_divmod(L.add(self.form(e.a), self.form(e.b), -1)))
        elif t is E.Mul:
            s = self._mul(self.form(e.a), self.form(e.b))
        else:
            r = self.visit(e)
            if type(r) in _ARITH or type(r) is E.IntImm:
                s = self.form(r)
            else:
                s = L.atom(r, self.key(r))
        forms[id(e)] = (e, s)
        return s

    # ------------------------------------------------------------ facts
    def sum_bound(self, s):
        """Constant bounds of a form, term by term.

        Two floordivs by one constant with opposite coefficients are bounded
        together: a // c - b // c lies in [(a-b) // c, (a-b) // c + 1], which
        proves e.g. n // 4 <= (n + 3) // 4 where separate bounds cannot.
        """
        lo = hi = s.const
        terms = list(s.terms.values())
        if sum(1 for f, _ in terms if _const_floordiv(f)) >= 2:
            terms = self._pair_floordivs(terms)
        for f, c in terms:
            if f is None:             # an already bounded pair
                b = c
            else:
                b = self.bound(f[0])
                for x in f[1:]:
                    b = _bmul(b, self.bound(x))
                b = _bscale(b, c)
            lo, hi = lo + b[0], hi + b[1]
        return lo, hi

    def _pair_floordivs(self, terms):
        out, used = [], set()
        for p, (fp, cp) in enumerate(terms):
            if p in used:
                continue
            if _const_floordiv(fp):
                for q in range(p + 1, len(terms)):
                    fq, cq = terms[q]
                    if q in used or cq != -cp or not _const_floordiv(fq) \
                            or fq[0].b.value != fp[0].b.value:
                        continue
                    c = fp[0].b.value
                    diff = L.add(self.form(fp[0].a), self.form(fq[0].a), -1)
                    dlo, dhi = self.sum_bound(diff)
                    # a - b a multiple of c: a // c - b // c is exactly (a - b) / c
                    exact = diff.const % c == 0 and all(co % c == 0 for _, co in diff.terms.values())
                    pair = (dlo if dlo == -INF else dlo // c, dhi if dhi == INF else dhi // c + (0 if exact else 1))
                    out.append((None, _bscale(pair, cp)))
                    used.update((p, q))
                    break
            if p not in used:
                out.append((fp, cp))
        return out

    def prove_ge(self, s, k):
        """True if the form ``s`` is provably >= ``k`` under the analyzer's bindings."""
        if s.is_const:
            return s.const >= k
        if self.sum_bound(s)[0] >= k:
            return True
        if self.ana._depth == 0 and self._has_symbolic_range(s):
            lo = self.ana._relaxed_lower(L.to_expr(s))
            return lo is not None and self.bound(lo)[0] >= k
        return False

    def _vars(self, e):
        hit = self._vars_memo.get(id(e))
        if hit is not None:
            return hit[1]
        if isinstance(e, E.Var):
            out = frozenset((e,))
        else:
            out = frozenset()
            for name in type(e).field_names():
                v = getattr(e, name)
                for x in (v if isinstance(v, tuple) else (v,)):
                    if isinstance(x, E.Expr):
                        out = out | self._vars(x)
        if len(self._vars_memo) > 200_000:
            self._vars_memo.clear()
        self._vars_memo[id(e)] = (e, out)
        return out

    def _has_symbolic_range(self, s):
        bindings = self.ana._bindings
        for f, _ in s.terms.values():
            for x in f:
                for v in self._vars(x):
                    b = bindings.get(v)
                    if b is not None and b.symbolic:
                        return True
        return False

    # ------------------------------------------------------------ linear arithmetic
    def _mul(self, a, b):
        """Distribute when one side is a constant or a single monomial; else keep the product."""
        if a.is_const or b.is_const or a.single_term() or b.single_term():
            return L.mul(a, b)
        x, y = L.to_expr(a), L.to_expr(b)
        if self.key(y) < self.key(x):
            x, y = y, x
        m = self._fixed(E.Mul(x, y))
        return L.atom(m, self.key(m))

    def _merge_divmod(self, s):
        """Use x == (x // c) * c + x % c (floor and truncating pairs alike) to shorten a sum.

        ``(x // c) * c + x % c`` -> ``x`` and ``x - (x // c) * c`` -> ``x % c``; with the analyzer's
        ``merge_digits`` and floor division also ``(x // b) % a * b + x % b`` -> ``x % (a * b)``, so an
        index split into digits (a fused copy loop's flat index taken apart by its tensor's shape) is put
        back together.
        """
        if len(s.terms) < 2:
            return s
        for _ in range(8):
            r = self._merge_pair(s)
            if r is None and self.ana.merge_digits:
                r = self._merge_digits(s)
            if r is None:
                r = self._fold_remainder(s)
            if r is None:
                return s
            s = r
        return s

    def _merge_pair(self, s):
        for k, (f, c) in s.terms.items():
            m = f[0]
            if len(f) != 1 or type(m) not in (E.FloorMod, E.Mod) or type(m.b) is not E.IntImm:
                continue
            dcls = E.FloorDiv if type(m) is E.FloorMod else E.Div
            dkey = (self.key(dcls(m.a, m.b)),)
            hit = s.terms.get(dkey)
            q = m.b.value
            if hit is None or hit[1] % q:
                continue
            per = hit[1] // q
            if (per > 0) != (c > 0):
                continue
            t = min(abs(per), abs(c)) * (1 if c > 0 else -1)
            s = L.add_term(s, k, f, -t)
            s = L.add_term(s, dkey, hit[0], -t * q)
            return L.add(s, L.scale(self.form(m.a), t))
        return None

    def _merge_digits(self, s):
        for k, (f, c) in s.terms.items():
            m = f[0]
            if len(f) != 1 or type(m) is not E.FloorMod or type(m.b) is not E.IntImm or m.b.value <= 0:
                continue
            d = m.a
            if type(d) is not E.FloorDiv or type(d.b) is not E.IntImm or d.b.value <= 0:
                continue
            b = d.b.value
            low = (self.key(E.FloorMod(d.a, d.b)),)
            hit = s.terms.get(low)
            if hit is None or c % b or (c > 0) != (hit[1] > 0):
                continue
            t = min(abs(c // b), abs(hit[1])) * (1 if c > 0 else -1)
            s = L.add_term(s, k, f, -t * b)
            s = L.add_term(s, low, hit[0], -t)
            return L.add(s, L.scale(self.form(self.visit(E.FloorMod(d.a, E.IntImm(d.b.dtype, b * m.b.value)))), t))
        return None

    def _fold_remainder(self, s):
        for k, (f, c) in s.terms.items():
            d = f[0]
            if len(f) != 1 or type(d) not in (E.FloorDiv, E.Div) or type(d.b) is not E.IntImm:
                continue
            q = d.b.value
            if q == 0 or c % q:
                continue
            t = -(c // q)      # the sum holds -t*q*(x // q); add t*(x % q + q*(x // q) - x) == 0
            mcls = E.FloorMod if type(d) is E.FloorDiv else E.Mod
            rem = self.form(self.visit(mcls(d.a, d.b)))
            cand = L.add(L.add_term(s, k, f, -c), L.scale(L.add(rem, self.form(d.a), -1), t))
            if cand.size() < s.size():
                return cand
        return None

    def _arith_other(self, e):
        """Float and vector + - *: constant folding and Ramp/Broadcast algebra."""
        t = type(e)
        a, b = self.visit(e.a), self.visit(e.b)
        ta, tb = type(a), type(b)
        if ta is E.FloatImm and tb is E.FloatImm:
            fn = {E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul}[t]
            return _fold_float(fn, a, b, a.dtype)
        if ta is E.Broadcast and tb is E.Broadcast and a.lanes == b.lanes:
            return E.Broadcast(self.visit(t(a.value, b.value)), a.lanes)
        if _is_int_vector(a.dtype):
            r = self._ramp_arith(t, a, b)
            if r is not None:
                return r
        return e if a is e.a and b is e.b else t(a, b)

    def _ramp_arith(self, t, a, b):
        ta, tb = type(a), type(b)
        if t is E.Mul:
            if ta is E.Broadcast:
                a, b, ta, tb = b, a, tb, ta
            if ta is E.Ramp and tb is E.Broadcast:
                return self.visit(E.Ramp(E.Mul(a.base, b.value), E.Mul(a.stride, b.value), a.lanes))
            if tb is E.Broadcast and type(b.value) is E.IntImm:
                v = b.value.value
                if v == 1:
                    return a
                if v == 0:
                    return b
            return None
        sign = -1 if t is E.Sub else 1
        if ta is E.Ramp and tb is E.Broadcast:
            return self.visit(E.Ramp(t(a.base, b.value), a.stride, a.lanes))
        if ta is E.Broadcast and tb is E.Ramp:
            stride = b.stride if sign > 0 else E.Sub(E.IntImm(b.stride.dtype, 0), b.stride)
            return self.visit(E.Ramp(t(a.value, b.base), stride, b.lanes))
        if ta is E.Ramp and tb is E.Ramp and a.lanes == b.lanes:
            return self.visit(E.Ramp(t(a.base, b.base), t(a.stride, b.stride), a.lanes))
        if tb is E.Broadcast and type(b.value) is E.IntImm and b.value.value == 0:
            return a
        if ta is E.Broadcast and type(a.value) is E.IntImm and a.value.value == 0 and sign > 0:
            return b
        return None

    # ------------------------------------------------------------ min / max
    def _min_max(self, e):
        t = type(e)
        a, b = self.visit(e.a), self.visit(e.b)
        ta, tb = type(a), type(b)
        pick = min if t is E.Min else max
        if ta in (E.IntImm, E.FloatImm) and tb in (E.IntImm, E.FloatImm):
            if ta is E.FloatImm and (math.isnan(a.value) or math.isnan(b.value)):
                return t(a, b)
            return a if pick(a.value, b.value) == a.value else b
        if ta is E.Broadcast and tb is E.Broadcast and a.lanes == b.lanes:
            return E.Broadcast(self.visit(t(a.value, b.value)), a.lanes)
        if self.key(a) == self.key(b):
            return a
        if is_index(a.dtype):
            d = L.add(self.form(b), self.form(a), -1)
            if self.prove_ge(d, 0):          # a <= b
                return a if t is E.Min else b
            if self.prove_ge(L.scale(d, -1), 0):
                return b if t is E.Min else a
            if (ta is E.IntImm, self.key(a)) > (tb is E.IntImm, self.key(b)):
                a, b, ta, tb = b, a, tb, ta
            # min(min(x, c1), c2) -> min(x, min(c1, c2))
            if tb is E.IntImm and ta is t and type(a.b) is E.IntImm:
                return self.visit(t(a.a, E.IntImm(b.dtype, pick(a.b.value, b.value))))
        return e if a is e.a and b is e.b else t(a, b)

    # ------------------------------------------------------------ comparisons and logic
    def _compare(self, e):
        t = type(e)
        a, b = self.visit(e.a), self.visit(e.b)
        if t is E.GT:
            t, a, b = E.LT, b, a
        elif t is E.GE:
            t, a, b = E.LE, b, a
        ta, tb = type(a), type(b)
        if ta in (E.IntImm, E.FloatImm) and tb in (E.IntImm, E.FloatImm):
            return _bool(_CMP_FN[t](a.value, b.value))
        if ta is E.Broadcast and tb is E.Broadcast and a.lanes == b.lanes:
            return E.Broadcast(self.visit(t(a.value, b.value)), a.lanes)
        if is_index(a.dtype):
            return self._compare_index(t, a, b)
        if _is_int_vector(a.dtype):
            r = self._compare_vector(t, a, b)
            if r is not None:
                return r
        return e if (t is type(e) and a is e.a and b is e.b) else t(a, b)

    def _compare_index(self, t, a, b):
        dtype = a.dtype
        # the difference gets the sums' rules (a term moved into a min / max), as its sides would when
        # the comparison is simplified again
        if t in (E.LT, E.LE):
            d = self._fold_min_max(L.add(self.form(b), self.form(a), -1))       # a < b  <=>  d > 0
            k = 1 if t is E.LT else 0
            if self.prove_ge(d, k):
                return _bool(True)
            if self.prove_ge(L.scale(d, -1), 1 - k):
                return _bool(False)
            pos = L.Sum(dtype, {k_: v for k_, v in d.terms.items() if v[1] > 0}, 0)
            neg = L.Sum(dtype, {k_: (v[0], -v[1]) for k_, v in d.terms.items() if v[1] < 0}, 0)
            if not neg.terms:
                lhs, rhs = L.constant(dtype, -d.const), pos
            elif not pos.terms:
                lhs, rhs = neg, L.constant(dtype, d.const)
            else:
                lhs, rhs = neg, L.add(pos, L.constant(dtype, d.const))
            return t(L.to_expr(lhs), L.to_expr(rhs))
        d = self._fold_min_max(L.add(self.form(a), self.form(b), -1))
        is_eq = t is E.EQ
        if d.is_const:
            return _bool((d.const == 0) == is_eq)
        if self.prove_ge(d, 1) or self.prove_ge(L.scale(d, -1), 1):
            return _bool(not is_eq)
        if d.ordered()[0][2] < 0:
            d = L.scale(d, -1)
        lhs = L.Sum(dtype, {k_: v for k_, v in d.terms.items() if v[1] > 0}, 0)
        rhs = L.Sum(dtype, {k_: (v[0], -v[1]) for k_, v in d.terms.items() if v[1] < 0}, -d.const)
        return t(L.to_expr(lhs), L.to_expr(rhs))

    def _compare_vector(self, t, a, b):
        lanes = dt.lanes(a.dtype)
        if t in (E.LT, E.LE):
            lo, hi = self.bound(self.visit(E.Sub(b, a)))
            k = 1 if t is E.LT else 0
            if lo >= k:
                return _bool(True, lanes)
            if hi < k:
                return _bool(False, lanes)
            return None
        lo, hi = self.bound(self.visit(E.Sub(a, b)))
        if lo > 0 or hi < 0:
            return _bool(t is E.NE, lanes)
        if lo == hi == 0:
            return _bool(t is E.EQ, lanes)
        return None

    def _and_or(self, e):
        t = type(e)
        a, b = self.visit(e.a), self.visit(e.b)
        absorbing = t is E.Or     # True absorbs Or, False absorbs And
        for x, y in ((a, b), (b, a)):
            v = truth(x)
            if v is not None:
                return x if v == absorbing else y
        if self.key(a) == self.key(b):
            return a
        if (type(a) is E.Not and self.key(a.a) == self.key(b)) or \
                (type(b) is E.Not and self.key(b.a) == self.key(a)):
            return _bool(absorbing, dt.lanes(a.dtype))
        r = self._combine_bounds(t, a, b)
        if r is not None:
            return r
        # canonical order, unless an operand reads memory: ``i < n && A[i] > 0`` evaluates (C's &&)
        # the load only where the bound holds
        if self.key(b) < self.key(a) and not (_reads_memory(a) or _reads_memory(b)):
            a, b = b, a
        return e if a is e.a and b is e.b else t(a, b)

    def _as_ge(self, c):
        """(d, k) with ``c`` <=> ``d >= k``, for a comparison of scalar integers; else None."""
        t = type(c)
        if t not in (E.LT, E.LE) or not is_index(c.a.dtype):
            return None
        return L.add(self.form(c.b), self.form(c.a), -1), (1 if t is E.LT else 0)

    def _combine_bounds(self, t, a, b):
        """``and``/``or`` of two bounds on one linear expression: keep one, or decide.

        With a: d >= ka and b: d - delta >= kb (same d), one implies the other;
        with b: delta - d >= kb, they bound d from both sides.
        """
        fa, fb = self._as_ge(a), self._as_ge(b)
        if fa is None or fb is None:
            return None
        (da, ka), (db, kb) = fa, fb
        diff = L.add(da, db, -1)
        if diff.is_const:                 # db = da - delta
            delta = diff.const
            a_implies_b = ka - delta >= kb
            b_implies_a = kb + delta >= ka
            if t is E.And:
                return a if a_implies_b else b if b_implies_a else None
            return b if a_implies_b else a if b_implies_a else None
        total = L.add(da, db)
        if total.is_const:                # db = delta - da: ka <= da <= delta - kb
            delta = total.const
            if t is E.And and ka > delta - kb:
                return _bool(False)
            if t is E.Or and ka <= delta - kb + 1:
                return _bool(True)
        return None

    def _not(self, e):
        a = self.visit(e.a)
        v = truth(a)
        if v is not None:
            return _bool(not v, dt.lanes(a.dtype))
        ta = type(a)
        if ta is E.Not:
            return a.a
        neg = _NEGATE.get(ta)
        if neg is not None:
            cls, swap = neg
            if not swap:
                return self.visit(cls(a.a, a.b))
            if is_index(a.a.dtype) or _is_int_vector(a.a.dtype):   # not exact for NaN floats
                return self.visit(cls(a.b, a.a))
        return e if a is e.a else E.Not(a)

    def _select(self, e):
        c = self.visit(e.condition)
        tv, fv = self.visit(e.true_value), self.visit(e.false_value)
        v = truth(c)
        if v is not None:
            return tv if v else fv
        if self.key(tv) == self.key(fv):
            return tv
        if c is e.condition and tv is e.true_value and fv is e.false_value:
            return e
        return E.Select(c, tv, fv)

    # ------------------------------------------------------------ other nodes
    def _cast(self, e):
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        if type(v) in (E.IntImm, E.FloatImm):
            return _op.cast(e.dtype, v)
        if type(v) is E.Broadcast:
            return E.Broadcast(self.visit(E.Cast(dt.element_of(e.dtype), v.value)), v.lanes)
        return e if v is e.value else E.Cast(e.dtype, v)

    def _ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if type(stride) is E.IntImm and stride.value == 0:
            return E.Broadcast(base, e.lanes)
        return e if base is e.base and stride is e.stride else E.Ramp(base, stride, e.lanes)

    def _broadcast(self, e):
        v = self.visit(e.value)
        return e if v is e.value else E.Broadcast(v, e.lanes)

    def _let(self, e):
        v = self.visit(e.value)
        if inlinable(v):
            return self.visit(substitute(e.body, {e.var: v}))
        if is_index(v.dtype):
            with self.ana.with_bindings(e.var, IntervalSet(v, v)):
                body = self.visit(e.body)
        else:
            body = self.visit(e.body)
        if e.var not in self._vars(body):
            return body
        return e if v is e.value and body is e.body else E.Let(e.var, v, body)

    def _call(self, e):
        args = tuple(self.visit(a) for a in e.args)
        if e.op == "likely" and len(args) == 1 and truth(args[0]) is not None:
            return args[0]
        if e.op == "if_then_else" and len(args) == 3:
            v = truth(args[0])
            if v is not None:
                return args[1] if v else args[2]
            if self.key(args[1]) == self.key(args[2]):
                return args[1]
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return E.Call(e.dtype, e.op, args)

    def _reduce(self, e):
        doms = {iv.var: iv.dom for iv in e.axis if iv.dom is not None}
        with self.ana.with_bindings(doms):
            return self._generic(e)

    def _load(self, e):
        """A load whose predicate holds in every lane is a plain load (so LLVM can keep it in a register),
        and a plain load of one address in every lane is a scalar load broadcast."""
        r = drop_true_predicate(self._generic(e))
        if r.predicate is None and type(r.index) is E.Broadcast:
            lanes = r.index.lanes
            return E.Broadcast(E.Load(dt.with_lanes(r.dtype, 1), r.buffer_var, r.index.value), lanes)
        return r

    def _generic(self, e):
        """Simplify every expression child; rebuild only on change."""
        changes = {}
        for name in type(e).field_names():
            v = getattr(e, name)
            if isinstance(v, E.Expr) and not (name == "buffer_var" or name == "var"):
                nv = self.visit(v)
            elif isinstance(v, tuple) and any(isinstance(x, E.Expr) for x in v):
                nv = tuple(self.visit(x) if isinstance(x, E.Expr) else x for x in v)
                if all(x is y for x, y in zip(nv, v)):
                    nv = v
            else:
                continue
            if nv is not v:
                changes[name] = nv
        return e.replace(**changes) if changes else e


_RULES = {
    E.FloorDiv: Simplifier._divmod, E.FloorMod: Simplifier._divmod,
    E.Div: Simplifier._divmod, E.Mod: Simplifier._divmod,
    E.Min: Simplifier._min_max, E.Max: Simplifier._min_max,
    E.EQ: Simplifier._compare, E.NE: Simplifier._compare, E.LT: Simplifier._compare,
    E.LE: Simplifier._compare, E.GT: Simplifier._compare, E.GE: Simplifier._compare,
    E.And: Simplifier._and_or, E.Or: Simplifier._and_or, E.Not: Simplifier._not,
    E.Select: Simplifier._select, E.Cast: Simplifier._cast, E.Ramp: Simplifier._ramp,
    E.Broadcast: Simplifier._broadcast, E.Let: Simplifier._let, E.Call: Simplifier._call,
    E.Reduce: Simplifier._reduce, E.Load: Simplifier._load,
}
