"""A min or max inside a sum: move into it the terms that cancel there.

``max(a, b) - a`` -> ``max(b - a, 0)`` and ``a + max(b - a, c)`` -> ``max(b, a + c)``:
``rest + c * max(x, y) == c * max(x + c * p, y + c * p) + (rest - p)`` for c = 1 or -1 (a
negated max becomes a min of the negated branches, and the other way round),
where ``p`` holds the terms of ``rest`` (and its constant) that cancel in one of the
branches.  Two spellings of one bound (``x + max(1 - x, 0) - 1`` and ``max(x, 1) - 1``)
then reach one form, which lets the analyzer prove them equal.  Exact for all integers.
"""
from __future__ import annotations

from .. import expr as E
from . import linear as L


class MinMaxSumRules:
    """Mixed into the Simplifier (``form`` and ``visit`` come from it)."""

    def _fold_min_max(self, s):
        if len(s.terms) < 1 or s.size() < 2:
            return s
        for _ in range(4):
            r = self._move_into_min_max(s)
            if r is None:
                return s
            s = r
        return s

    def _move_into_min_max(self, s):
        for k, (f, c) in s.terms.items():
            m = f[0]
            if len(f) != 1 or c not in (1, -1) or type(m) not in (E.Min, E.Max):
                continue
            branches = (self.form(m.a), self.form(m.b))
            part = L.Sum(s.dtype)
            for k2, (f2, c2) in s.terms.items():
                if k2 != k and any(c * b.terms[k2][1] == -c2 for b in branches if k2 in b.terms):
                    part = L.add_term(part, k2, f2, c2)
            if s.const and any(c * b.const == -s.const for b in branches):
                part = L.add(part, L.constant(s.dtype, s.const))
            if part.size() == 0:
                continue
            # c * max(x + c*p, y + c*p), written with coefficient 1: -max(u, v) == min(-u, -v)
            moved = [L.to_expr(L.scale(L.add(b, L.scale(part, c)), c)) for b in branches]
            kind = type(m) if c == 1 else (E.Min if type(m) is E.Max else E.Max)
            new = self.visit(kind(moved[0], moved[1]))
            rest = L.add(L.add_term(s, k, f, -c), part, -1)
            return L.add(rest, self.form(new))
        return None
