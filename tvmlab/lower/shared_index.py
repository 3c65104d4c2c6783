"""Proofs about the indices of shared-memory accesses, for ThreadSync's barrier plan
(``lower/thread_sync.py``): ``one_to_one`` proves an index names each element for one iteration and thread
only (a transposed or padded cooperative copy), ``apart`` that a loop's iterations keep each thread's
elements its own (``sh[k * 64 + tx]``, not ``sh[k * 8 + g(tx)]`` with g spanning 8).  An access is
anything with ``index``, ``ranges`` ({Var: n}, each in ``[0, n)``) and ``guards`` ([(G, top)]: G <= top).
"""
from __future__ import annotations

import math

from ..ir import dtype as dt
from ..ir.expr import IntImm, Let, Var
from ..ir.functor import collect_vars, post_order_visit
from ..ir.stmt import AttrStmt, For, LetStmt
from .remove_no_op import same_expr


class Loop:
    """The loop whose next iteration an access runs in: its variable, its trip count (infinite where not
    constant), and the variables that may hold other values in another thread or iteration (the
    threads', and those its body binds)."""
    __slots__ = ("var", "trips", "body", "varying", "_inner")

    def __init__(self, s, scope):        # the For; scope.varying: the variables that differ between threads
        self.var, self.body, self.varying, self._inner = s.loop_var, s.body, scope.varying, None
        self.trips = s.extent.value if isinstance(s.extent, IntImm) else math.inf

    @property
    def inner(self):
        """The loop's variable and those its body binds (loops, lets, thread indices); found when asked."""
        if self._inner is None:
            self._inner = {self.var}
            post_order_visit(self.body, self._bind)
        return self._inner

    def _bind(self, n):
        if isinstance(n, For):
            self._inner.add(n.loop_var)
        elif isinstance(n, (LetStmt, Let)):
            self._inner.add(n.var)
        elif isinstance(n, AttrStmt) and n.attr_key == "thread_extent":
            self._inner.add(getattr(n.node, "var", n.node))

    def moves(self, v):
        """Whether ``v`` may differ between two accesses: another thread's, or another iteration's."""
        return v in self.varying or v in self.inner


def _summands(e, scale=1, out=None):
    """``e`` as a sum [(constant coefficient, term)] over sums, differences, multiples by constants and the
    lanes of a vector access (``Ramp(base, stride, n)`` is base + stride * ``Ramp(0, 1, n)``); a constant
    part as (its value, None)."""
    from ..ir import expr as E
    out = [] if out is None else out
    if isinstance(e, (E.Add, E.Sub)):
        _summands(e.a, scale, out)
        return _summands(e.b, -scale if isinstance(e, E.Sub) else scale, out)
    if isinstance(e, E.Mul) and isinstance(e.b, IntImm):
        return _summands(e.a, scale * e.b.value, out)
    if isinstance(e, E.Mul) and isinstance(e.a, IntImm):
        return _summands(e.b, scale * e.a.value, out)
    if isinstance(e, E.Ramp) and isinstance(e.stride, IntImm):
        _summands(e.base, scale, out)
        one = IntImm(e.stride.dtype, 1)
        out.append((scale * e.stride.value, E.Ramp(IntImm(e.stride.dtype, 0), one, e.lanes)))
        return out
    out.append((scale * e.value, None) if isinstance(e, IntImm) else (scale, e))
    return out


def _analyzer(ranges):
    """An Analyzer knowing each variable of ``ranges`` in ``[0, n)``."""
    from ..ir.arith.analyzer import Analyzer
    ana = Analyzer()
    for v, n in ranges.items():
        ana.bind(v, (0, n))
    return ana


def _sum(terms):
    """The expression of [(coefficient, term)]."""
    from ..ir import op as _op
    out = None
    for c, t in terms:
        t = _op.mul(t, c) if c != 1 else t
        out = t if out is None else _op.add(out, t)
    return out


def _fixed(term, loop):
    """A term of variables that hold one value in every thread and iteration of ``loop`` (not the
    lanes of a vector access, which have none)."""
    vs = collect_vars(term)
    return bool(vs) and not any(loop.moves(v) for v in vs)


def _guarded_top(x, shift, acc, loop, ana):
    """An upper bound of ``x`` (``shift * v`` plus terms of the threads and the body's loops) from a
    guard around the access: a copy guarded by ``G < N`` where ``G`` moves ``s`` times as fast as x
    with the loop (``outer * 112 + f < 1024`` for ``x = outer * 7 + f // 16``) has ``x = G // s``
    when the analyzer proves it, so x stays at most ``(N - 1) // s``, less what the guard's fixed
    terms add at their least.  None where no guard tells."""
    from ..ir import op as _op
    best = None
    for g, top in acc.guards:
        moving, fixed, w = [], [], 0
        for c, t in _summands(g):
            if t is loop.var:
                w += c
            if t is None or _fixed(t, loop):
                fixed.append((c, t))
            else:
                moving.append((c, t))
        if shift <= 0 or w <= 0 or w % shift or any(dt.lanes(t.dtype) != 1 for _, t in moving):
            continue
        least = sum(c for c, t in fixed if t is None) + sum(
            ana.bounds(_op.mul(t, c))[0] for c, t in fixed if t is not None)
        if least == -math.inf or not ana.can_prove_equal(x, _op.floordiv(_sum(moving), w // shift)):
            continue
        cap = (top - least) // (w // shift)
        best = cap if best is None else min(best, cap)
    return best


def apart(acc, loop):
    """Whether ``acc``'s index keeps each thread's elements its own across iterations of ``loop``, as the
    same index does within one (``thread_sync._same_thread``).

    With C = 0 (the loop's variable absent) it does when the index is the same in every iteration: it
    uses the threads, variables bound around the loop, and the body's loops over constant ranges
    (their own loops check those).  Otherwise split the index as ``x + high``, ``x = C * v + low``
    (``v`` the loop's variable, ``low`` the terms of smallest coefficients).  An element met in
    iterations ``j != j'`` needs ``high' - high`` (a multiple of the gcd of high's coefficients) to
    equal ``x - x'``, and, where that forces ``high' = high``, ``C * (j - j')`` to equal ``low' - low``
    (a multiple of the gcd of low's coefficients, within low's span).  So iterations keep apart when
    (1) no nonzero common multiple of C and low's gcd is within both low's span and ``C * (trips -
    1)``, and (2) high's gcd exceeds the span of x (which a guard around the access may bound:
    ``_guarded_top``).  ``k * 64 + tx`` with 64 threads keeps apart (span 63 < 64), so do ``tx * 64 +
    k`` with 64 trips and ``f % 16 * 36 + k * 4 + tz * 2 + f // 16``; ``k * 8 + g(tx)`` with g from 2
    to 10 does not (thread 0 at k = 1 meets thread 4 at k = 0).  Terms of variables bound around the
    loop and the same in every thread are the same in both accesses and drop out; others of unknown
    range leave the span unbounded."""
    shift, rest = 0, []
    for c, t in _summands(acc.index):
        if t is loop.var:
            shift += c
        elif t is None or c == 0 or _fixed(t, loop):
            continue
        elif loop.var in collect_vars(t):
            return False
        else:
            rest.append((c, t))
    ranges = acc.ranges or {}
    if shift == 0:
        return all(u in ranges or u not in loop.inner for u in collect_vars(acc.index))
    rest.sort(key=lambda x: abs(x[0]))
    ana = _analyzer(ranges)
    spans = []
    for c, t in rest:
        lo, hi = ana.bounds(t)
        spans.append(abs(c) * (hi - lo))
    coefs = [abs(c) for c, _ in rest]
    reach = abs(shift) * (loop.trips - 1)          # how far the loop's own term moves the index
    for k in range(len(rest) + 1):
        low = sum(spans[:k])
        step = math.lcm(abs(shift), math.gcd(*coefs[:k])) if k else abs(shift)
        if step <= min(low, reach):
            continue                                # two iterations may meet within x
        if k == len(rest):
            return True
        if math.gcd(*coefs[k:]) > min(reach + low, _guarded_span(shift, rest[:k], acc, loop, ana)):
            return True
    return False


def _guarded_span(shift, low, acc, loop, ana):
    """The span of ``x = shift * v + low`` that a guard around the access allows (infinite where none
    tells)."""
    if not acc.guards or any(dt.lanes(t.dtype) != 1 for _, t in low):
        return math.inf
    x = _sum([(shift, loop.var), *low])
    top = _guarded_top(x, shift, acc, loop, ana)
    lo = ana.bounds(x)[0]
    return math.inf if top is None or lo == -math.inf else top - lo


def _terms(e, scale=1, out=None):
    """``e`` as a sum [(constant coefficient, term)]: a constant part as (its value, None)."""
    from ..ir import expr as E
    out = [] if out is None else out
    if isinstance(e, E.Add):
        _terms(e.a, scale, out)
        return _terms(e.b, scale, out)
    if isinstance(e, E.Mul) and isinstance(e.b, IntImm):
        return _terms(e.a, scale * e.b.value, out)
    if isinstance(e, E.Mul) and isinstance(e.a, IntImm):
        return _terms(e.b, scale * e.a.value, out)
    out.append((scale * e.value, None) if isinstance(e, IntImm) else (scale, e))
    return out


def _digit(e):
    """(number, divisor, modulus) of ``e`` = ``number // divisor % modulus`` (modulus None where there is
    none, divisor 1 where there is no division)."""
    from ..ir import expr as E
    mod = None
    if isinstance(e, E.FloorMod) and isinstance(e.b, IntImm):
        e, mod = e.a, e.b.value
    if isinstance(e, E.FloorDiv) and isinstance(e.b, IntImm):
        return e.a, e.b.value, mod
    return e, 1, mod


def _mixed_radix(places):
    """Whether ``sum_k w_k * x_k`` over ``x_k`` in ``[0, n_k)`` is one-to-one: ``places`` [(w_k, n_k)], each
    weight beyond the largest sum the places of smaller weights make."""
    reach = 0
    for w, n in sorted(places):
        if w <= reach:
            return False
        reach += w * (n - 1)
    return True


def one_to_one(index, ranges):
    """Whether ``index`` is proved one-to-one in the variables it uses, each in ``[0, ranges[v])``: it is
    ``sum_i c_i * (f_i // d_i % m_i)`` (plus a constant), each number ``f`` a one-to-one sum of multiples
    of its own variables (plus a constant), its digits covering it exactly (``d_0 = 1``, ``d_(i+1) = d_i *
    m_i``, the last without a modulus), and every digit of every number put back together one-to-one.
    A fused copy loop storing its tensor transposed or with padded rows (``transform_layout``,
    ``storage_align``) writes such an index: each element from one iteration and thread only."""
    numbers = []                    # [number, its digits [(divisor, modulus, weight)]]
    for c, t in _terms(index):
        if t is None:
            continue
        f, div, mod = _digit(t)
        if c <= 0:
            return False
        for entry in numbers:
            if same_expr(entry[0], f):
                entry[1].append((div, mod, c))
                break
        else:
            numbers.append([f, [(div, mod, c)]])
    places, seen = [], set()
    for f, digits in numbers:
        top, inner = 0, []          # the number's largest value; its places
        for w, v in _terms(f):
            if v is None:
                if w < 0:
                    return False
                top += w
            elif not isinstance(v, Var) or v not in ranges or w <= 0 or v in seen:
                return False
            else:
                seen.add(v)
                inner.append((w, ranges[v]))
                top += w * (ranges[v] - 1)
        if not _mixed_radix(inner):
            return False
        digits.sort(key=lambda x: x[0])
        expect = 1
        for k, (div, mod, c) in enumerate(digits):
            if div != expect or (mod is None) != (k == len(digits) - 1) or (mod is not None and mod < 1):
                return False
            places.append((c, mod if mod is not None else top // div + 1))
            expect = div * (mod or 1)
    return bool(places) and _mixed_radix(places)
