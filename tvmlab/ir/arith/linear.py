"""Linear forms: an integer expression as ``sum(coeff * monomial) + const``.

A monomial is a product of atoms (variables, divisions, min/max, loads, ...),
kept as its factors sorted by structural key; like monomials are collected, so
``(i*4 + j) - i*4`` becomes ``j``.  ``to_expr`` writes a form back as an
expression in one canonical order: monomials by decreasing |coefficient|,
then plain variables before other atoms, then by key; positive terms first,
the constant last.  Reading that expression back gives the same form, which
is what makes simplification idempotent.
"""
from __future__ import annotations

from .. import expr as E


class Sum:
    """``terms``: {monomial key: (factors, coeff)}; ``const``: int.  Treated as immutable."""

    __slots__ = ("dtype", "terms", "const")

    def __init__(self, dtype, terms=None, const=0):
        self.dtype = dtype
        self.terms = terms if terms is not None else {}
        self.const = const

    @property
    def is_const(self):
        return not self.terms

    def single_term(self):
        """(key, factors, coeff) when the form is exactly one monomial with no constant."""
        if self.const == 0 and len(self.terms) == 1:
            (k, (f, c)), = self.terms.items()
            return k, f, c
        return None

    def size(self):
        return len(self.terms) + (1 if self.const else 0)

    def ordered(self):
        """Terms as (key, factors, coeff) in canonical order (plain variables first on ties)."""
        items = sorted(self.terms.items(), key=lambda kv: (
            -abs(kv[1][1]), not all(isinstance(f, E.Var) for f in kv[1][0]), kv[0]))
        return [(k, f, c) for k, (f, c) in items]


def constant(dtype, c):
    return Sum(dtype, None, c)


def atom(e, key):
    return Sum(e.dtype, {(key,): ((e,), 1)}, 0)


def add(a, b, sign=1):
    """``a + sign * b``."""
    terms = dict(a.terms)
    for k, (f, c) in b.terms.items():
        old = terms.get(k)
        nc = sign * c + (old[1] if old is not None else 0)
        if nc:
            terms[k] = (f, nc)
        elif old is not None:
            del terms[k]
    return Sum(a.dtype, terms, a.const + sign * b.const)


def scale(a, k):
    if k == 0:
        return Sum(a.dtype)
    if k == 1:
        return a
    return Sum(a.dtype, {key: (f, c * k) for key, (f, c) in a.terms.items()}, a.const * k)


def add_term(s, key, factors, coeff):
    """``s + coeff * monomial``."""
    return add(s, Sum(s.dtype, {key: (factors, coeff)}, 0))


def _mono_mul(ka, fa, kb, fb):
    pairs = sorted(zip(ka + kb, fa + fb), key=lambda p: p[0])
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def mul(a, b):
    """The distributed product of two forms."""
    if a.is_const:
        return scale(b, a.const)
    if b.is_const:
        return scale(a, b.const)
    out = scale(a, b.const)
    for kb, (fb, cb) in b.terms.items():
        part = Sum(a.dtype, {}, 0)
        terms = part.terms
        if a.const:
            terms[kb] = (fb, cb * a.const)
        for ka, (fa, ca) in a.terms.items():
            k, f = _mono_mul(ka, fa, kb, fb)
            old = terms.get(k)
            c = ca * cb + (old[1] if old is not None else 0)
            if c:
                terms[k] = (f, c)
            elif old is not None:
                del terms[k]
        out = add(out, part)
    return out


def divide_monomial(key, factors, dkey):
    """The monomial ``key / dkey`` as (key, factors), or None if ``dkey`` does not divide it.

    A result with no factors means the quotient is the constant 1.
    """
    rest_k, rest_f = list(key), list(factors)
    for k in dkey:
        try:
            i = rest_k.index(k)
        except ValueError:
            return None
        del rest_k[i]
        del rest_f[i]
    return tuple(rest_k), tuple(rest_f)


def monomial_expr(factors, coeff, dtype):
    e = factors[0]
    for f in factors[1:]:
        e = E.Mul(e, f)
    if coeff != 1:
        e = E.Mul(e, E.IntImm(dtype, coeff))
    return e


def to_expr(s):
    """The canonical expression of a form."""
    dt = s.dtype
    pos, neg = [], []
    for _, f, c in s.ordered():
        (pos if c > 0 else neg).append(monomial_expr(f, abs(c), dt))
    k = s.const
    if pos:
        e = pos[0]
        for p in pos[1:]:
            e = E.Add(e, p)
    elif neg:
        e = E.IntImm(dt, k if k > 0 else 0)
        if k > 0:
            k = 0
    else:
        return E.IntImm(dt, k)
    for n in neg:
        e = E.Sub(e, n)
    if k > 0:
        e = E.Add(e, E.IntImm(dt, k))
    elif k < 0:
        e = E.Sub(e, E.IntImm(dt, -k))
    return e
