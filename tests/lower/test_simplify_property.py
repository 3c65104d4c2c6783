"""Property tests: simplification never changes a value, and bounds contain every value.

Random integer expression trees over 2-4 variables with random (also negative)
ranges; a variable may range relative to another (``j in [i+lo, i+lo+ext)``) or
over a symbolic extent (``j in [lo, lo+n)``), so that symbolic proofs are
exercised.  A small reference evaluator in plain Python ints (floor semantics
for FloorDiv/FloorMod, C truncation for Div/Mod) evaluates the original and the
simplified tree at random points of the ranges.
"""
from __future__ import annotations

import math
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tvmlab.ir import expr as E
from tvmlab.ir import op
from tvmlab.ir.arith import Analyzer
from tvmlab.ir.arith.keys import KeyCache
from tvmlab.ir.tensor import Range

from int_eval import evaluate


# ------------------------------------------------------------ reference evaluator

def test_reference_evaluator_semantics():
    x = E.Var("x")
    env = {x: -7}
    assert evaluate(op.floordiv(x, 2), env) == -4
    assert evaluate(op.floormod(x, 2), env) == 1
    assert evaluate(op.truncdiv(x, 2), env) == -3
    assert evaluate(op.truncmod(x, 2), env) == -1
    assert evaluate(op.truncmod(x, -2), env) == -1
    assert evaluate(op.floormod(x, -2), env) == -1


# ------------------------------------------------------------ random programs
# The variable ``n`` is always present and ranges over [1, 1 + ext): it serves as
# a symbolic divisor and as a symbolic extent (``i in [lo, lo + n)``).

def _divisor(draw):
    return draw(st.sampled_from([2, 3, 4, 8, 16, -2, -3, -4, 5, 7, 1, -1]))


def _c(v):
    return op.const(v, "int32")


@st.composite
def trees(draw, names, n, depth):
    if depth == 0 or draw(st.integers(0, 5)) == 0:
        leaf = draw(st.integers(0, 4))
        if leaf == 0:
            return _c(draw(st.integers(-12, 12)))
        if leaf == 1:
            return E.Sub(draw(st.sampled_from(names)), draw(st.sampled_from(names)))
        return draw(st.sampled_from(names))
    kind = draw(st.sampled_from(["add", "sub", "mulc", "mul", "fdiv", "fmod", "tdiv", "tmod",
                                 "min", "max", "select", "linear", "pair", "nested", "symdiv"]))
    sub = trees(names, n, depth - 1)
    a = draw(sub)
    if kind == "add":
        return E.Add(a, draw(sub))
    if kind == "sub":
        return E.Sub(a, draw(sub))
    if kind == "mulc":
        return E.Mul(a, _c(draw(st.integers(-5, 8))))
    if kind == "mul":
        return E.Mul(a, draw(sub))
    if kind == "linear":   # the shapes split/fuse produce: a*c + b, and its quotient/remainder
        c = draw(st.sampled_from([2, 4, 8, 16]))
        lin = E.Add(E.Mul(a, _c(c)), draw(sub))
        return draw(st.sampled_from([lin, E.FloorDiv(lin, _c(c)), E.FloorMod(lin, _c(c)),
                                     E.FloorDiv(lin, _c(c * 2)), E.Div(lin, _c(c))]))
    if kind == "pair":     # (a // c) * c + a % c, with either rounding
        c = draw(st.sampled_from([2, 3, 4, 8, -3]))
        div, mod = draw(st.sampled_from([(E.FloorDiv, E.FloorMod), (E.Div, E.Mod),
                                         (E.FloorDiv, E.Mod)]))
        k = draw(st.sampled_from([1, 2, -1]))
        return E.Add(E.Mul(div(a, _c(c)), _c(c * k)), E.Mul(mod(a, _c(c)), _c(k)))
    if kind == "nested":
        c1, c2 = draw(st.sampled_from([2, 3, 4])), draw(st.sampled_from([2, 4, 8]))
        cls = draw(st.sampled_from([E.FloorDiv, E.FloorMod, E.Div, E.Mod]))
        k = _c(draw(st.integers(-9, 9)))
        return cls(E.Add(cls(a, _c(c1 * c2 if cls in (E.FloorMod, E.Mod) else c1)), k), _c(c2))
    if kind == "symdiv":   # by the positive symbol n
        cls = draw(st.sampled_from([E.FloorDiv, E.FloorMod, E.Div, E.Mod]))
        return cls(draw(st.sampled_from([a, E.Add(E.Mul(a, n), draw(sub))])), n)
    if kind in ("fdiv", "fmod", "tdiv", "tmod"):
        cls = {"fdiv": E.FloorDiv, "fmod": E.FloorMod, "tdiv": E.Div, "tmod": E.Mod}[kind]
        return cls(a, _c(_divisor(draw)))
    if kind in ("min", "max"):
        return (E.Min if kind == "min" else E.Max)(a, draw(sub))
    cmp = draw(st.sampled_from([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE]))
    cond = cmp(draw(sub), draw(sub))
    if draw(st.integers(0, 3)) == 0:
        cond = draw(st.sampled_from([E.And, E.Or]))(cond, cmp(draw(sub), draw(sub)))
    elif draw(st.integers(0, 4)) == 0:
        cond = E.Not(cond)
    return E.Select(cond, a, draw(sub))


@st.composite
def problems(draw):
    """(vars, specs, expr, seed); a spec is (lo, ext, dep, by_n): v in [lo (+dep), +ext or +n)."""
    n = E.SizeVar("n")
    nvars = draw(st.integers(2, 4))
    vs = [E.Var(x) for x in "ijkl"[:nvars - 1]]
    specs = [(1, draw(st.integers(1, 12)), None, False)]
    for k in range(len(vs)):
        lo = draw(st.integers(-20, 20))
        ext = draw(st.integers(1, 17))
        dep = vs[k - 1] if k > 0 and draw(st.integers(0, 3)) == 0 else None
        by_n = draw(st.integers(0, 3)) == 0
        specs.append((lo, ext, dep, by_n))
    vs = [n] + vs
    e = draw(trees(vs, n, draw(st.integers(1, 5))))
    seed = draw(st.integers(0, 2**32 - 1))
    return vs, specs, e, seed


def _range(n, spec):
    lo, ext, dep, by_n = spec
    return Range(_c(lo) if dep is None else E.Add(dep, _c(lo)), n if by_n else _c(ext))


def _analyzer(vs, specs):
    ana = Analyzer()
    for v, spec in zip(vs, specs):
        ana.bind(v, _range(vs[0], spec))
    return ana


def _points(vs, specs, seed, count=12):
    rnd = random.Random(seed)
    for _ in range(count):
        env = {}
        for v, (lo, ext, dep, by_n) in zip(vs, specs):
            base = lo + (env[dep] if dep is not None else 0)
            ext = env[vs[0]] if by_n else ext
            env[v] = rnd.choice([base, base + ext - 1, base + rnd.randrange(ext)])
        yield env


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_simplify_preserves_value_and_bounds_hold(prob):
    vs, specs, e, seed = prob
    ana = _analyzer(vs, specs)
    s = ana.simplify(e)
    lo, hi = ana.bounds(e)
    # relax all variables, then a random subset (the others stay symbols, as in bound inference)
    subset = [v for q, v in enumerate(vs) if (seed >> q) & 1]
    isets = [ana.int_set(e, {v: _range(vs[0], spec) for v, spec in zip(vs, specs)}),
             ana.int_set(e, {v: _range(vs[0], spec) for v, spec in zip(vs, specs) if v in subset})]
    for env in _points(vs, specs, seed):
        want = evaluate(e, env)
        got = evaluate(s, env)
        assert got == want, f"simplify({e}) = {s}: at {env} got {got}, want {want}"
        assert lo <= want <= hi, f"const_int_bound({e}) = {(lo, hi)} misses {want} at {env}"
        for iset in isets:
            if iset.has_lower_bound():
                assert evaluate(iset.min, env) <= want, f"int_set({e}) = {iset} at {env}"
            if iset.has_upper_bound():
                assert want <= evaluate(iset.max, env), f"int_set({e}) = {iset} at {env}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_simplify_is_idempotent(prob):
    vs, specs, e, _ = prob
    once = _analyzer(vs, specs).simplify(e)
    twice = _analyzer(vs, specs).simplify(once)
    keys = KeyCache()
    assert keys(once) == keys(twice), f"simplify({e}) = {once}, but simplify of that = {twice}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_can_prove_is_sound(prob):
    vs, specs, e, seed = prob
    ana = _analyzer(vs, specs)
    k = random.Random(seed).randint(-30, 30)
    for cond in (E.LT(e, op.const(k)), E.GE(e, op.const(k)), E.EQ(e, op.const(k))):
        if ana.can_prove(cond):
            for env in _points(vs, specs, seed):
                assert evaluate(cond, env), f"can_prove({cond}) but false at {env}"


def test_unbounded_vars_are_symbols():
    x, y = E.Var("x"), E.Var("y")
    e = E.Add(E.Mul(E.FloorDiv(x, op.const(4)), op.const(4)), E.FloorMod(x, op.const(4)))
    assert Analyzer().simplify(E.Sub(e, y)) is not None
    s = Analyzer().simplify(E.Sub(e, x))
    assert isinstance(s, E.IntImm) and s.value == 0
    lo, hi = Analyzer().bounds(x)
    assert lo == -math.inf and hi == math.inf


def test_a_quotient_written_as_a_sum_is_simplified_as_sums_are():
    """Found by test_simplify_is_idempotent: ``(min(n, n - i + 1) * 2 - 1) // 2`` became
    ``min(n - i + 1, n) - 1``, which a second pass turned into ``min(n - 1, n - i)``; the quotient's sum
    now gets the sums' rules at once."""
    n, i = E.SizeVar("n"), E.Var("i")
    specs = [(1, 1, None, False), (0, 3, None, False)]
    e = E.FloorDiv(E.Add(E.Mul(E.Min(n, E.Add(_c(1), E.Sub(n, i))), _c(2)), _c(-1)), _c(2))
    once = _analyzer([n, i], specs).simplify(e)
    twice = _analyzer([n, i], specs).simplify(once)
    assert str(once) == str(twice) == "T.min(n - 1, n - i)"


def test_two_quotients_whose_dividends_differ_by_a_multiple_of_the_divisor_differ_exactly():
    """Also found by test_simplify_is_idempotent: with i in [-1, 1), ``min(i // 8, (i * 8 + i) // 8)`` is
    ``(i * 9) // 8``, since (9i) // 8 - i // 8 is exactly i (the dividends differ by 8i); the first pass
    bounded that difference by [-1, 1] and kept the min, a second pass (the terms in the other order) did not."""
    n, i = E.SizeVar("n"), E.Var("i")
    specs = [(1, 1, None, False), (-1, 2, None, False)]
    e = E.Min(E.FloorDiv(i, _c(8)), E.FloorDiv(E.Add(E.Mul(i, _c(8)), i), _c(8)))
    once = _analyzer([n, i], specs).simplify(e)
    assert str(once) == str(_analyzer([n, i], specs).simplify(once)) == "i * 9 // 8"
