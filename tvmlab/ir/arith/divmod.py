"""Division and modulo rules of the simplifier (``DivModRules``, mixed into ``Simplifier``).

floordiv/floormod follow Python's floor semantics, Div/Mod C truncation;
each rule holds for every integer in the operands' bound ranges.  Linear
forms are divided term by term where the constant bounds prove it exact
(``(8*i + j) // 8 == i`` for ``j`` in ``[0, 8)``), nested divisions merge,
and vector (Ramp) operands fold to Broadcasts or narrower Ramps.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtype as dt
from .. import expr as E
from . import linear as L
from .int_bound import INF


def is_index(dtype):
    """A scalar integer: the type linear forms apply to."""
    kind, _, lanes = dt.parse(dtype)
    return lanes == 1 and kind in ("int", "uint")


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _fold_float(fn, a, b, dtype):
    """Fold two float constants in the precision of ``dtype``."""
    ty = dt.to_numpy(dtype).type
    with np.errstate(all="ignore"):
        return E.FloatImm(dtype, float(fn(ty(a.value), ty(b.value))))


class DivModRules:
    """The ``FloorDiv`` / ``FloorMod`` / ``Div`` / ``Mod`` rules; ``self`` is the Simplifier."""

    def _divmod(self, e):
        r = self._divmod_rules(e)
        if type(r) in (E.Add, E.Sub) and is_index(r.dtype):
            # a quotient written as a sum (``min(a, b) * 2 - 1) // 2`` -> ``min(a, b) - 1``) gets the sums'
            # own rules (terms moved into a min / max, div-mod pairs merged), as simplifying it again would
            return L.to_expr(self.form(r))
        return r

    def _divmod_rules(self, e):
        t = type(e)
        a, b = self.visit(e.a), self.visit(e.b)
        if not is_index(a.dtype):
            return self._divmod_other(e, a, b)
        is_div = t in (E.FloorDiv, E.Div)
        floor = t in (E.FloorDiv, E.FloorMod)
        if type(b) is E.IntImm:
            c = b.value
            if c == 0:
                return e if a is e.a and b is e.b else t(a, b)
            if type(a) is E.IntImm:
                x = a.value
                if floor:
                    return E.IntImm(a.dtype, x // c if is_div else x % c)
                q = _trunc_div(x, c)
                return E.IntImm(a.dtype, q if is_div else x - q * c)
            return self._div_const(t, a, c, is_div, floor)
        return self._div_symbolic(t, a, b, is_div, floor)

    def _div_const(self, t, a, c, is_div, floor):
        dtype = a.dtype
        fa = self.form(a)
        if c == 1 or c == -1:
            return L.to_expr(L.scale(fa, c)) if is_div else E.IntImm(dtype, 0)
        if c < 0:
            if floor:    # x // c == (-x) // -c ;  x % c == -((-x) % -c)
                r = self._div_form(L.scale(fa, -1), -c, is_div, False)
                return r if is_div else L.to_expr(L.scale(self.form(r), -1))
            # truncdiv(x, c) == -truncdiv(x, -c) ; truncmod(x, c) == truncmod(x, -c)
            r = self.visit(t(a, E.IntImm(dtype, -c)))
            return L.to_expr(L.scale(self.form(r), -1)) if is_div else r
        if floor:
            return self._div_form(fa, c, is_div, False)
        if self.prove_ge(fa, 0):        # truncation equals floor on a non-negative dividend
            return self._div_form(fa, c, is_div, True)
        lo, hi = self.sum_bound(fa)
        if lo != -INF and hi != INF and _trunc_div(lo, c) == _trunc_div(hi, c):
            q = _trunc_div(lo, c)
            return E.IntImm(dtype, q) if is_div else L.to_expr(L.add(fa, L.constant(dtype, -q * c)))
        return t(a, E.IntImm(dtype, c))

    def _div_form(self, fa, c, is_div, trunc):
        """floordiv/floormod of the form ``fa`` by a constant ``c > 1``, as an expression.

        Writes fa = c*Q + g*m + k0 (Q: the terms divisible by c; g: the gcd of c
        and the rest; 0 <= k0 < g), so fa // c = Q + m // (c/g) and
        fa % c = g * (m % (c/g)) + k0.  ``trunc``: the dividend is known to be
        non-negative and Div/Mod nodes are wanted where still exact.
        """
        dtype = fa.dtype
        q_terms, r_terms = {}, {}
        g = c
        for k, (f, co) in fa.terms.items():
            if co % c == 0:
                q_terms[k] = (f, co // c)
            else:
                r_terms[k] = (f, co)
                g = math.gcd(g, co)
        if not r_terms:
            Q = L.Sum(dtype, q_terms, fa.const // c)
            return L.to_expr(Q) if is_div else E.IntImm(dtype, fa.const % c)
        k0 = fa.const % g
        m_const = fa.const // g
        c2 = c // g
        qc = _trunc_div(m_const, c2)
        Q = L.Sum(dtype, q_terms, qc)
        m = L.Sum(dtype, {k: (f, co // g) for k, (f, co) in r_terms.items()}, m_const - qc * c2)

        q = None
        lo, hi = self.sum_bound(m)
        if lo != -INF and hi != INF and lo // c2 == hi // c2:
            q = lo // c2
        elif self.prove_ge(m, 0) and self.prove_ge(L.add(L.constant(dtype, c2 - 1), m, -1), 0):
            q = 0
        if q is not None:
            if is_div:
                return L.to_expr(L.add(Q, L.constant(dtype, q)))
            rest = L.add(m, L.constant(dtype, -q * c2))
            return L.to_expr(L.add(L.scale(rest, g), L.constant(dtype, k0)))

        nested = self._nested_div(m, c2, is_div, trunc)
        if nested is not None:
            inner = self.form(nested)
        else:
            node = self._div_atom(m, c2, is_div, trunc)
            inner = L.atom(node, self.key(node))
        if is_div:
            return L.to_expr(L.add(Q, inner))
        return L.to_expr(L.add(L.scale(inner, g), L.constant(dtype, k0)))

    def _nested_div(self, m, c, is_div, trunc):
        """(x // a + k) // c -> (x + k*a) // (a*c);  (x % a + k) % c -> (x + k) % c when c | a."""
        if len(m.terms) != 1:
            return None
        (f, co), = m.terms.values()
        x = f[0]
        tx = type(x)
        if co != 1 or len(f) != 1 or tx not in (E.FloorDiv, E.FloorMod, E.Div, E.Mod) \
                or type(x.b) is not E.IntImm or x.b.value <= 0:
            return None
        a = x.b.value
        floor_like = tx in (E.FloorDiv, E.FloorMod) or (
            tx in (E.Div, E.Mod) and self.prove_ge(self.form(x.a), 0))
        if not floor_like:
            return None
        if is_div and tx in (E.FloorDiv, E.Div):
            num = L.add(self.form(x.a), L.constant(m.dtype, m.const * a))
            return self._div_form(num, a * c, True, trunc)
        if not is_div and tx in (E.FloorMod, E.Mod) and a % c == 0:
            num = L.add(self.form(x.a), L.constant(m.dtype, m.const))
            return self._div_form(num, c, False, trunc)
        return None

    def _div_atom(self, m, c, is_div, trunc):
        if trunc and self.prove_ge(m, 0):
            cls = E.Div if is_div else E.Mod
        else:
            cls = E.FloorDiv if is_div else E.FloorMod
        return self._fixed(cls(L.to_expr(m), E.IntImm(m.dtype, c)))

    def _div_symbolic(self, t, a, b, is_div, floor):
        """Division by an expression: extract the multiples of it; decide 0 <= a < b."""
        rebuilt = t(a, b)
        fb = self.form(b)
        lo_b, hi_b = self.sum_bound(fb)
        if self.key(a) == self.key(b) and (lo_b > 0 or hi_b < 0):
            return E.IntImm(a.dtype, 1 if is_div else 0)
        fa = self.form(a)
        if not floor and not (self.prove_ge(fa, 0) and lo_b > 0):
            return rebuilt
        one = fb.single_term()
        Q, R = L.Sum(a.dtype), fa
        if one is not None and one[2] == 1:
            dkey = one[0]
            q_terms, r_terms = {}, {}
            qc = 0
            for k, (f, co) in fa.terms.items():
                d = L.divide_monomial(k, f, dkey)
                if d is None:
                    r_terms[k] = (f, co)
                elif not d[0]:
                    qc += co
                else:
                    q_terms[d[0]] = (d[1], co)
            Q = L.Sum(a.dtype, q_terms, qc)
            R = L.Sum(a.dtype, r_terms, fa.const)
        below = L.add(L.add(fb, R, -1), L.constant(a.dtype, -1))        # b - R - 1 >= 0
        if self.prove_ge(R, 0) and self.prove_ge(below, 0):
            return L.to_expr(Q) if is_div else L.to_expr(R)
        if Q.is_const and Q.const == 0:
            return rebuilt
        if not floor and not self.prove_ge(R, 0):
            return rebuilt
        atom = self._fixed(t(L.to_expr(R), b))
        return L.to_expr(L.add(Q, L.atom(atom, self.key(atom)))) if is_div else atom

    def _divmod_other(self, e, a, b):
        t = type(e)
        ta, tb = type(a), type(b)
        if ta is E.FloatImm and tb is E.FloatImm and t is E.Div and b.value != 0:
            return _fold_float(operator.truediv, a, b, a.dtype)
        if ta is E.Broadcast and tb is E.Broadcast and a.lanes == b.lanes:
            return E.Broadcast(self.visit(t(a.value, b.value)), a.lanes)
        if ta is E.Ramp and tb is E.Broadcast and type(b.value) is E.IntImm \
                and type(a.stride) is E.IntImm and b.value.value > 0:
            r = self._ramp_div(t, a, b.value.value)
            if r is not None:
                return r
        return e if a is e.a and b is e.b else t(a, b)

    def _ramp_div(self, t, ramp, c):
        """Ramp // c and Ramp % c when the lanes share a quotient or c divides the stride."""
        floor = t in (E.FloorDiv, E.FloorMod)
        is_div = t in (E.FloorDiv, E.Div)
        s, n, base = ramp.stride.value, ramp.lanes, ramp.base
        dtype = base.dtype
        if not floor:
            lo = self.bound(ramp)[0]
            if lo < 0:
                return None
            t = E.FloorDiv if is_div else E.FloorMod   # equal on non-negative lanes
        if s % c == 0:
            if is_div:
                return self.visit(E.Ramp(t(base, E.IntImm(dtype, c)), E.IntImm(dtype, s // c), n))
            return self.visit(E.Broadcast(t(base, E.IntImm(dtype, c)), n))
        fb = self.form(base)
        q_terms, r_terms = {}, {}
        for k, (f, co) in fb.terms.items():
            (q_terms if co % c == 0 else r_terms)[k] = (f, co // c if co % c == 0 else co)
        Q = L.Sum(dtype, q_terms, 0)
        R = L.Sum(dtype, r_terms, fb.const)
        lo, hi = self.sum_bound(R)
        span = s * (n - 1)
        lo, hi = lo + min(0, span), hi + max(0, span)
        if lo == -INF or hi == INF or lo // c != hi // c:
            return None
        q = lo // c
        if is_div:
            return E.Broadcast(L.to_expr(L.add(Q, L.constant(dtype, q))), n)
        return self.visit(E.Ramp(L.to_expr(L.add(R, L.constant(dtype, -q * c))), ramp.stride, n))
