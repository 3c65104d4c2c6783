"""The arithmetic package: rewrites, bounds, proofs, intervals, and the simplify pass."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tvmlab.errors import DSLError, LoweringError
from tvmlab.ir import expr as E
from tvmlab.ir import op
from tvmlab.ir import stmt as S
from tvmlab.ir.arith import Analyzer, IntervalSet, eval_interval, intersect, simplify, union
from tvmlab.ir.arith.keys import KeyCache
from tvmlab.ir.functor import collect_vars, post_order_visit, substitute
from tvmlab.ir.tensor import IterVar, Range
from tvmlab.lower.simplify import simplify_stmt

from int_eval import evaluate

fd, fm, td, tm = op.floordiv, op.floormod, op.truncdiv, op.truncmod
i, j, k, x, y, z = (E.Var(c) for c in "ijkxy z".replace(" ", ""))
io, ii, f = E.Var("io"), E.Var("ii"), E.Var("f")
n, m = E.SizeVar("n"), E.SizeVar("m")
ZERO = op.const(0)


def same(a, b):
    keys = KeyCache()
    return keys(op.convert(a)) == keys(op.convert(b))


def ana_with(**ranges):
    ana = Analyzer()
    for name, r in ranges.items():
        ana.bind(globals()[name], r)
    return ana


def check_equal_on_points(e, s, ranges, count=40):
    """``e`` and ``s`` agree on random points of ``ranges`` ({var: (lo, extent)})."""
    rnd = random.Random(0)
    free = [v for v in collect_vars(e) if v not in ranges]
    for _ in range(count):
        env = {v: rnd.randrange(lo, lo + ext) for v, (lo, ext) in ranges.items()}
        env.update({v: rnd.randrange(0 if isinstance(v, E.SizeVar) else -50, 50) for v in free})
        assert evaluate(e, env) == evaluate(s, env), f"{e} vs {s} at {env}"


# ------------------------------------------------------------ rewrite table

R8 = {"j": (0, 8)}
REWRITES = [
    # linear forms and identities
    ((i * 4 + j) - i * 4, {}, j),
    ((i + 1) * 2 - 2 * i, {}, 2),
    (x + y - x, {}, y),
    (y + x, {}, x + y),
    (x * 3 + y * 2 - x * 3 - y, {}, y),
    (x - x, {}, 0),
    (E.Add(x, ZERO), {}, x),
    (E.Mul(x, op.const(1)), {}, x),
    (E.Mul(x, ZERO), {}, 0),
    (E.Sub(E.Mul(x, op.const(2)), x), {}, x),
    ((x + 1) * 4 - 4, {}, x * 4),
    ((x + y) * 3 - y * 3, {}, x * 3),
    ((i * n + j) - n * i, {}, j),
    (E.Sub(E.Mul(E.Add(x, y), z), E.Mul(z, y)), {}, x * z),
    # floordiv / floormod
    (fd(i * 8 + j, 8), R8, i),
    (fm(i * 8 + j, 8), R8, j),
    (fd(io * 16 + ii, 16), {"ii": (0, 16)}, io),
    (fm(io * 16 + ii, 16), {"ii": (0, 16)}, ii),
    (fd(i * 8 + j, 4), R8, i * 2 + fd(j, 4)),
    (fd(E.Var("x") * 1, 1), {}, None),
    (fd(x, 1), {}, x),
    (fm(x, 1), {}, 0),
    (fd(fd(x, 4), 8), {}, fd(x, 32)),
    (fd(fd(x, 4) + 1, 8), {}, fd(x + 4, 32)),
    (fm(x, 8), {"x": (0, 8)}, x),
    (fm(x, 8), {"x": (16, 8)}, x - 16),
    (fd(x, 8), {"x": (16, 8)}, 2),
    (fd(x, 8) * 8 + fm(x, 8), {}, x),
    (fd(x, 8) * 16 + fm(x, 8) * 2, {}, x * 2),
    (x - fd(x, 8) * 8, {}, fm(x, 8)),
    (fd(x + 9, 8), {}, fd(x + 1, 8) + 1),
    (fd(x * 4 + 2, 8), {}, fd(x, 2)),
    (fm(x * 4 + 2, 8), {}, fm(x, 2) * 4 + 2),
    (fm(fm(x, 16) + 3, 8), {}, fm(x + 3, 8)),
    (fd(x * 6, 3), {}, x * 2),
    (fm(x * 6 + y * 3, 3), {}, 0),
    (fd(fm(x, 8), 8), {}, 0),
    (fd(i, n), {"i": Range(0, n)}, 0),
    (fm(i, n), {"i": Range(0, n)}, i),
    (fd(i * n + j, n), {"j": Range(0, n)}, i),
    (fm(i * n + j, n), {"j": Range(0, n)}, j),
    (fd(j - i, 8), {"i": (0, 100), "j": Range(i, 8)}, 0),
    # truncating division where the sign is known
    (td(x, 8), {"x": (0, 100)}, td(x, 8)),
    (td(i * 8 + j, 8), {"i": (0, 10), **R8}, i),
    (tm(i * 8 + j, 8), {"i": (0, 10), **R8}, j),
    (tm(x, 8), {"x": (-7, 15)}, x),
    (td(x, 8), {"x": (-7, 15)}, 0),
    (td(x, -1), {}, 0 - x),
    (tm(x, 1), {}, 0),
    (td(x, 8) * 8 + tm(x, 8), {}, x),
    # min / max
    (op.min(x, x), {}, x),
    (op.max(x, x + 1), {}, x + 1),
    (op.min(x, x - 3), {}, x - 3),
    (op.min(x, 4), {"x": (0, 4)}, x),
    (op.max(x, 4), {"x": (0, 4)}, 4),
    (op.min(4, x), {}, op.min(x, 4)),
    (op.min(op.min(x, 4), 2), {}, op.min(x, 2)),
    (op.min(i, n), {"i": Range(0, n)}, i),
    (op.max(i + 1, n), {"i": Range(0, n)}, n),
    (op.min(fd(n + 3, 4), fd(n, 4)), {}, fd(n, 4)),
    (op.min(x, y) - op.min(y, x), {}, 0),
    # a min / max in a sum takes in the terms that cancel in a branch
    (op.max(x, y) - x, {}, op.max(y - x, 0)),
    (x + op.max(y - x, z), {}, op.max(x + z, y)),
    (x - op.max(x, y), {}, op.min(x - y, 0)),
    (op.min(x, y) - x + 5, {}, op.min(y - x, 0) + 5),
    (op.max(x, 1) - 1, {}, op.max(x - 1, 0)),
    (x * 4 + op.max(op.max(x * 4, 1) - x * 4, 0) - 1, {}, op.max(x * 4 - 1, 0)),
    (x * 4 + op.max(y, 3), {}, x * 4 + op.max(y, 3)),        # nothing cancels: unchanged
    # comparisons and logic
    (i < n, {"i": Range(0, n)}, True),
    (i * 4 + j < 4 * n, {"i": Range(0, n), "j": (0, 4)}, True),
    (i * 4 + j >= 0, {"i": Range(0, n), "j": (0, 4)}, True),
    (n >= 0, {}, True),
    (n < 0, {}, False),
    (i < 0, {"i": (0, 10)}, False),
    (x + 1 < y, {}, x < y - 1),
    (x > y, {}, y < x),
    (x >= 4, {}, E.LE(op.const(4), x)),
    (y == x, {}, x == y),
    (x + 1 == x, {}, False),
    (x * 2 != x * 2, {}, False),
    (op.logical_and(x < y, x < y), {}, x < y),
    (op.logical_not(x < y), {}, E.LE(y, x)),
    (op.logical_not(op.logical_not(x < y)), {}, x < y),
    (op.logical_and(x < y, op.logical_not(x < y)), {}, False),
    (op.logical_or(x < y, op.logical_not(x < y)), {}, True),
    (op.logical_and(x < 5, x < 3), {}, x < 3),
    (op.logical_or(x < 5, x < 3), {}, x < 5),
    (op.logical_and(x < 5, x > 7), {}, False),
    (op.logical_and(x < 5, i < 10), {"i": (0, 10)}, x < 5),
    (op.logical_or(x < 5, i < 10), {"i": (0, 10)}, True),
    # select
    (E.Select(x < 0, y, y), {}, y),
    (E.Select(x < 0, y, z), {"x": (0, 5)}, z),
    (E.Select(i < n, y, z), {"i": Range(0, n)}, y),
]


@pytest.mark.parametrize("e, ranges, want", REWRITES, ids=[str(r[0]) for r in REWRITES])
def test_rewrite_table(e, ranges, want):
    ana = ana_with(**ranges)
    got = ana.simplify(e)
    if want is not None:
        want = op.const(want) if isinstance(want, bool) else want
        assert same(got, want), f"simplify({e}) = {got}, want {want}"
    consts = {globals()[k]: r for k, r in ranges.items() if isinstance(r, tuple)}
    if len(consts) == len(ranges):
        check_equal_on_points(e, got, consts)
    assert same(ana_with(**ranges).simplify(got), got), "not idempotent"


DIGITS = [      # an index taken apart into digits, put back together (floor division: any sign)
    (op.floormod(op.floordiv(x, 16), 9) * 16 + op.floormod(x, 16), op.floormod(x, 144)),
    (op.floordiv(x, 2304) * 2304 + op.floormod(op.floordiv(x, 144), 16) * 144
     + op.floormod(op.floordiv(x, 16), 9) * 16 + op.floormod(x, 16), x),
    (op.floormod(op.floordiv(x, 16), 9) * 32 + op.floormod(x, 16) * 2 + y, op.floormod(x, 144) * 2 + y),
    (op.floormod(op.floordiv(x, 16), 9) * 16 + op.floormod(x, 8), None),      # not digits of one number
]


@pytest.mark.parametrize("e, want", DIGITS, ids=[str(d[0]) for d in DIGITS])
def test_merge_digits(e, want):
    from tvmlab.ir.arith.analyzer import Analyzer
    got = Analyzer(merge_digits=True).simplify(e)
    if want is not None:
        assert same(got, want), f"simplify({e}) = {got}, want {want}"
    check_equal_on_points(e, got, {x: (-300, 3000), y: (-5, 5)})
    if want is not None:
        assert not same(simplify(e), want)       # off by default


def test_results_are_canonical():
    a = simplify((x * 2 + y) - (z + x))
    b = simplify(y + (x - z))
    assert same(a, b)
    assert same(simplify(op.min(x + 1, y)), simplify(op.min(y, 1 + x)))
    assert same(simplify((x + y) * (x - y)), simplify((y * -1 + x) * (y + x)))


def test_unbound_arguments_and_symbols():
    # without bindings nothing about j is known: the quotient stays
    s = simplify(fd(i * 8 + j, 8))
    assert same(s, i + fd(j, 8))
    assert same(simplify(fd(i * 8 + j, 8), {j: Range(0, 8)}), i)
    assert same(simplify(fd(i * 8 + j, 8), {j: (0, 8)}), i)


# ------------------------------------------------------------ constant folding


@pytest.mark.parametrize("e, want", [
    (E.Add(op.const(3), op.const(4)), 7), (E.Sub(op.const(3), op.const(4)), -1),
    (E.Mul(op.const(-3), op.const(4)), -12),
    (E.FloorDiv(op.const(-7), op.const(2)), -4), (E.FloorMod(op.const(-7), op.const(2)), 1),
    (E.FloorDiv(op.const(7), op.const(-2)), -4), (E.FloorMod(op.const(7), op.const(-2)), -1),
    (E.Div(op.const(-7), op.const(2)), -3), (E.Mod(op.const(-7), op.const(2)), -1),
    (E.Min(op.const(3), op.const(-1)), -1), (E.Max(op.const(3), op.const(-1)), 3),
    (E.LT(op.const(3), op.const(4)), True), (E.GE(op.const(3), op.const(4)), False),
    (E.EQ(op.const(3), op.const(3)), True), (E.NE(op.const(3), op.const(3)), False),
    (E.And(op.const(True), op.const(False)), False), (E.Or(op.const(True), op.const(False)), True),
    (E.Not(op.const(True)), False),
    (E.Select(op.const(True), op.const(1), op.const(2)), 1),
    (E.Cast("int32", op.const(2.75)), 2), (E.Cast("int32", op.const(-2.75)), -2),
    (E.Call("int32", "if_then_else", (op.const(False), op.const(1), op.const(2))), 2),
    (E.Call("bool", "likely", (E.LT(op.const(1), op.const(2)),)), True),
])
def test_constant_folding(e, want):
    got = simplify(e)
    assert isinstance(got, E.IntImm) and got.value == int(want), f"{e} -> {got}"


def test_float_folding_is_in_dtype_precision_and_never_reassociates():
    a, b = op.const(0.1, "float32"), op.const(0.2, "float32")
    got = simplify(E.Add(a, b))
    assert got.value == float(np.float32(0.1) + np.float32(0.2))
    assert simplify(E.Mul(op.const(3.0, "float64"), op.const(0.5, "float64"))).value == 1.5
    assert simplify(E.Cast("float32", op.const(3))).value == 3.0
    v = E.Var("v", "float32")
    kept = E.Add(E.Add(v, op.const(1.0, "float32")), op.const(2.0, "float32"))
    assert same(simplify(kept), kept)
    assert same(simplify(E.Sub(v, v)), E.Sub(v, v))           # NaN - NaN is not 0
    assert same(simplify(E.LT(v, v)), E.LT(v, v))
    assert same(simplify(E.Not(E.LT(v, op.const(1.0, "float32")))),
                E.Not(E.LT(v, op.const(1.0, "float32"))))     # not (v < 1) != (1 <= v) for NaN


# ------------------------------------------------------------ vectors


def test_ramp_and_broadcast_arithmetic():
    one, c8 = op.const(1), op.const(8)
    assert same(simplify(E.Add(E.Ramp(x, one, 4), E.Broadcast(y, 4))), E.Ramp(x + y, one, 4))
    assert same(simplify(E.Add(E.Broadcast(y, 4), E.Ramp(x, one, 4))), E.Ramp(x + y, one, 4))
    assert same(simplify(E.Sub(E.Broadcast(y, 4), E.Ramp(x, one, 4))),
                E.Ramp(y - x, op.const(-1), 4))
    assert same(simplify(E.Add(E.Broadcast(x, 4), E.Broadcast(y, 4))), E.Broadcast(x + y, 4))
    assert same(simplify(E.Mul(E.Ramp(x, one, 4), E.Broadcast(op.const(3), 4))),
                E.Ramp(x * 3, op.const(3), 4))
    assert same(simplify(E.Add(E.Ramp(x, one, 4), E.Ramp(y, op.const(2), 4))),
                E.Ramp(x + y, op.const(3), 4))
    assert same(simplify(E.Ramp(x, ZERO, 4)), E.Broadcast(x, 4))
    assert same(simplify(E.FloorDiv(E.Ramp(i * 8, one, 8), E.Broadcast(c8, 8))), E.Broadcast(i, 8))
    assert same(simplify(E.FloorMod(E.Ramp(i * 8, one, 8), E.Broadcast(c8, 8))),
                E.Ramp(ZERO, one, 8))
    assert same(simplify(E.FloorDiv(E.Ramp(i * 8 + 4, one, 4), E.Broadcast(c8, 4))),
                E.Broadcast(i, 4))
    assert same(simplify(E.FloorDiv(E.Ramp(x, c8, 4), E.Broadcast(c8, 4))),
                E.Ramp(fd(x, 8), one, 4))
    assert same(simplify(E.FloorMod(E.Ramp(x, op.const(16), 4), E.Broadcast(c8, 4))),
                E.Broadcast(fm(x, 8), 4))
    # lanes that cross a multiple of 8 keep the division
    crossing = E.FloorDiv(E.Ramp(i * 8 + 6, one, 4), E.Broadcast(c8, 4))
    assert isinstance(simplify(crossing), E.FloorDiv)
    lt = E.LT(E.Ramp(j * 4, one, 4), E.Broadcast(op.const(32), 4))
    assert same(simplify(lt, {j: (0, 8)}), E.Broadcast(op.const(True), 4))


def test_vector_rewrites_keep_values():
    env_ranges = {i: (-5, 10), x: (-20, 40)}
    one = op.const(1)
    for e in [E.FloorDiv(E.Ramp(i * 8 + 3, one, 4), E.Broadcast(op.const(8), 4)),
              E.FloorMod(E.Ramp(i * 8 + 3, one, 4), E.Broadcast(op.const(8), 4)),
              E.FloorDiv(E.Ramp(x, op.const(8), 4), E.Broadcast(op.const(8), 4)),
              E.FloorMod(E.Ramp(x, op.const(-8), 4), E.Broadcast(op.const(4), 4)),
              E.Mul(E.Sub(E.Broadcast(x, 4), E.Ramp(i, op.const(3), 4)), E.Broadcast(one, 4))]:
        check_equal_on_points(e, simplify(e), env_ranges)


# ------------------------------------------------------------ bounds


@pytest.mark.parametrize("e, ranges, want", [
    (i * 4 + j, {"i": (0, 8), "j": (0, 4)}, (0, 31)),
    (fd(x, 8), {"x": (-9, 30)}, (-2, 2)),
    (fm(x, 8), {}, (0, 7)),
    (fm(x, -8), {}, (-7, 0)),
    (fm(x, 8), {"x": (10, 4)}, (2, 5)),
    (tm(x, 8), {"x": (-20, 10)}, (-7, 0)),
    (td(x, 4), {"x": (-9, 30)}, (-2, 5)),
    (op.min(x, 3), {"x": (0, 10)}, (0, 3)),
    (op.max(x, y), {"x": (0, 10), "y": (-4, 2)}, (0, 9)),
    (E.Select(x < y, op.const(3), op.const(-2)), {}, (-2, 3)),
    (x - x, {}, (0, 0)),
    (x, {}, (-math.inf, math.inf)),
    (n, {}, (0, math.inf)),
    (n * 2 + 1, {}, (1, math.inf)),
    (i - n, {"i": Range(0, n)}, (-math.inf, math.inf)),
    (E.Cast("int32", E.Var("b", "uint8")), {}, (0, 255)),
    (E.Load("int8", E.Var("buf", "handle"), x), {}, (-128, 127)),
    (x < y, {}, (0, 1)),
])
def test_const_int_bound(e, ranges, want):
    assert ana_with(**ranges).bounds(e) == want


def test_can_prove_with_symbolic_extents():
    ana = ana_with(i=Range(0, n), j=(0, 4))
    assert ana.can_prove(i < n)
    assert ana.can_prove(i * 4 + j < n * 4)
    assert ana.can_prove(i * 4 + j <= n * 4 - 1)
    assert not ana.can_prove(i * 4 + j < n * 4 - 1)
    assert not ana.can_prove(i < n - 1)
    assert ana.can_prove(n - i >= 1)
    assert not ana.can_prove(x < y)
    ana.bind(k, Range(i, 3))                    # k in [i, i + 3): depends on i
    assert ana.can_prove(k - i < 3)
    assert ana.can_prove(k < n + 2)
    assert not ana.can_prove(k < n)


def test_can_prove_equal():
    ana = ana_with(j=(0, 8))
    assert ana.can_prove_equal(fd(i * 8 + j, 8), i)
    assert ana.can_prove_equal((x + 1) * 3, 3 + x * 3)
    assert not ana.can_prove_equal(x, y)
    v = E.Var("v", "float32")
    assert ana.can_prove_equal(E.Add(v, op.const(1.0, "float32")),
                               E.Add(v, op.const(1.0, "float32")))


def test_bindings_scoped_substituted_and_checked():
    ana = Analyzer()
    with ana.with_bindings(j, Range(0, 8)):
        assert same(ana.simplify(fm(i * 8 + j, 8)), j)
        with ana.with_bindings({i: (0, 4)}):
            assert ana.bounds(i * 8 + j) == (0, 31)
        assert ana.bounds(i) == (-math.inf, math.inf)
    assert same(ana.simplify(fm(i * 8 + j, 8)), fm(j, 8))
    ana.bind(x, y * 2 + 1)                      # an expression binding substitutes
    assert same(ana.simplify(x - y), y + 1)
    assert ana.can_prove(fm(x, 2) == 1)
    with pytest.raises(LoweringError, match="uses z"):
        ana.bind(z, z + 1)
    with pytest.raises(DSLError, match="simplify_stmt"):
        ana.simplify(S.Evaluate(ZERO))
    with pytest.raises(DSLError, match="Var or IterVar"):
        ana.bind(op.const(3), (0, 4))
    iv = IterVar(Range(op.const(0), op.const(16)), E.Var("t"), "thread", "threadIdx.x")
    ana.bind(iv, iv.dom)
    assert ana.can_prove(iv.var < 16)


def test_let_expression_binds_its_variable():
    v = E.Var("v")
    e = E.Let(v, i * 8 + j, fd(v, 8))
    assert same(simplify(e, {j: (0, 8)}), i)             # index arithmetic is inlined
    assert same(simplify(E.Let(v, op.const(3), v + 1)), op.const(4))
    ld = E.Load("int32", E.Var("buf", "handle"), x)
    kept = simplify(E.Let(v, ld * 8 + j, fd(v, 8) + fm(v, 8)), {j: (0, 8)})
    assert isinstance(kept, E.Let) and same(kept.value, ld * 8 + j)


# ------------------------------------------------------------ intervals


def test_interval_of_split_and_fuse_indices():
    ana = Analyzer()
    s = ana.int_set(io * 8 + ii, {ii: Range(0, 8)})
    assert same(s.min, io * 8) and same(s.max, io * 8 + 7)
    s = ana.int_set(io * 8 + ii, {io: Range(0, 4), ii: Range(0, 8)})
    assert same(s.min, 0) and same(s.max, 31)
    s = ana.int_set(fd(f, 8), {f: Range(0, 64)})
    assert same(s.min, 0) and same(s.max, 7)
    s = ana.int_set(fm(f, 8), {f: Range(0, 64)})
    assert same(s.min, 0) and same(s.max, 7)
    s = ana.int_set(fm(f, 16), {f: Range(16, 8)})
    assert same(s.min, 0) and same(s.max, 7)
    s = ana.int_set(i * 4 + j, {i: Range(0, n), j: Range(0, 4)})
    assert same(s.min, 0) and same(s.max, n * 4 - 1)
    s = ana.int_set(fd(i, 4), {i: Range(0, n)})
    assert same(s.min, 0) and same(s.max, fd(n - 1, 4))
    s = ana.int_set(k - i, {i: Range(0, 10), k: Range(i, 3)})    # k follows i
    assert same(s.min, 0) and same(s.max, 2)
    s = ana.int_set(x * y, {x: Range(-2, 5), y: Range(1, 3)})
    assert same(s.min, -6) and same(s.max, 6)
    s = ana.int_set(op.min(x, y), {x: Range(0, n)})
    assert ana.can_prove_equal(s.min, op.min(y, 0))
    assert ana.can_prove_equal(s.max, op.min(y, n - 1))
    s = ana.int_set(x, {x: IntervalSet(op.const(1), op.const(5))})
    assert same(s.min, 1) and same(s.max, 5)


def test_interval_of_a_mod_whose_range_stays_in_one_block():
    """A tile of a split index taken modulo a larger block: the tile never wraps, so the interval
    is the tile itself, not [0, block) (bounds of a stage computed at a tile of a fused axis)."""
    ana = Analyzer()
    for v, r in ((i, Range(0, 2)), (j, Range(0, 4))):
        ana.bind(v, r)
    s = ana.int_set(fd(fm(i * 128 + (j * 32 + k), 128), 2), {k: Range(0, 32)})
    assert same(s.min, j * 16) and same(s.max, j * 16 + 15)
    s = ana.int_set(fm(x * 3 + k, 6), {k: Range(0, 3)})          # 3 divides both x * 3 and 6
    for xv in range(12):
        lo, hi = (int(simplify(substitute(e, {x: op.const(xv)}))) for e in (s.min, s.max))
        assert (lo, hi) == (xv * 3 % 6, xv * 3 % 6 + 2)
    s = ana.int_set(fm(x * 3 + k, 8), {k: Range(0, 3)})          # 3 does not divide 8: may wrap
    assert same(s.min, 0) and same(s.max, 7)


def test_interval_of_unbounded_and_point_expressions():
    s = eval_interval(fd(x, y), {x: Range(0, 4)})      # y may be negative: |x // y| <= |x|
    assert same(s.min, -3) and same(s.max, 3)
    s = eval_interval(fd(x, y), {x: Range(0, n)})
    assert not s.has_lower_bound() and not s.has_upper_bound()
    s = eval_interval(y * 2, {x: Range(0, 4)})
    assert s.is_single_point() and same(s.min, y * 2)
    s = eval_interval(E.Load("int32", E.Var("buf", "handle"), x), {x: Range(0, 4)})
    assert s.is_everything()
    s = eval_interval(n + x, {x: Range(0, 4)})
    assert same(s.min, n) and same(s.max, n + 3)
    s = eval_interval(E.Ramp(x * 4, op.const(1), 4), {x: Range(0, 8)})
    assert same(s.min, 0) and same(s.max, 31)


def test_interval_set_api():
    a = IntervalSet(op.const(0), n - 1)
    b = IntervalSet(op.const(2), n + 4)
    u, w = union(a, b), intersect(a, b)
    assert same(u.min, 0) and same(u.max, n + 4)
    assert same(w.min, 2) and same(w.max, n - 1)
    assert same(a.union(b).max, u.max)
    r = a.to_range()
    assert same(r.min, 0) and same(r.extent, n)
    s = IntervalSet.from_range(Range(x, op.const(5)))
    assert same(s.min, x) and same(s.max, x + 4)
    assert IntervalSet.single_point(x).is_single_point()
    assert not a.is_single_point()
    assert IntervalSet.everything().is_everything()
    e = intersect(IntervalSet.everything(), a)
    assert same(e.min, 0) and same(e.max, n - 1)
    assert union(IntervalSet.everything(), a).is_everything()
    with pytest.raises(LoweringError, match="unbounded"):
        IntervalSet.everything().to_range()
    assert "inf" in repr(IntervalSet.everything())


# ------------------------------------------------------------ the statement pass


def _store(index, value=None):
    return S.Store(E.Var("A", "handle"), value if value is not None else op.const(1.0), index)


def _stores(stmt):
    out = []
    post_order_visit(stmt, lambda s: out.append(s) if isinstance(s, S.Store) else None)
    return out


def _count(stmt, cls):
    out = []
    post_order_visit(stmt, lambda s: out.append(s) if isinstance(s, cls) else None)
    return len(out)


def test_simplify_stmt_folds_guards_inside_loops():
    guard = op.likely(i * 4 + j < 64)
    body = S.IfThenElse(guard, _store(i * 4 + j), _store(op.const(-1)))
    loop = S.For(i, op.const(0), op.const(16), "serial",
                 S.For(j, op.const(0), op.const(4), "serial", body))
    out = simplify_stmt(loop)
    assert _count(out, S.IfThenElse) == 0
    (st,) = _stores(out)
    assert same(st.index, i * 4 + j)
    # not provable with a larger loop: the guard stays (and keeps its else branch)
    big = loop.replace(extent=op.const(17))
    out = simplify_stmt(big)
    assert _count(out, S.IfThenElse) == 1 and len(_stores(out)) == 2
    # a guard that never holds keeps only the else branch
    never = S.For(i, op.const(0), op.const(4), "serial",
                  S.IfThenElse(i >= 4, _store(i), _store(i + 100)))
    (st,) = _stores(simplify_stmt(never))
    assert same(st.index, i + 100)


def test_simplify_stmt_symbolic_guard_and_select():
    body = S.IfThenElse(op.likely(i < n), _store(E.Select(i < n, i, op.const(0))))
    out = simplify_stmt(S.For(i, op.const(0), n, "serial", body))
    assert _count(out, S.IfThenElse) == 0
    (st,) = _stores(out)
    assert same(st.index, i)


def test_simplify_stmt_loops_of_extent_zero_and_one():
    inner = S.For(j, op.const(0), op.const(0), "serial", _store(j))
    out = simplify_stmt(S.seq(inner, _store(op.const(7))))
    assert _count(out, S.For) == 0 and len(_stores(out)) == 1
    one = S.For(j, op.const(3), op.const(1), "serial", _store(fd(j * 8 + i, 8)))
    out = simplify_stmt(S.For(i, op.const(0), op.const(8), "serial", one))
    assert _count(out, S.For) == 1
    (st,) = _stores(out)
    assert same(st.index, 3)
    # a loop whose extent simplifies to 0 disappears
    out = simplify_stmt(S.For(j, op.const(0), n - n, "serial", _store(j)))
    assert _count(out, S.For) == 0 and not _stores(out)


def test_simplify_stmt_thread_extent_and_let():
    tx = IterVar(Range(op.const(0), op.const(32)), E.Var("threadIdx.x"), "thread", "threadIdx.x")
    guarded = S.IfThenElse(tx.var < 32, _store(fm(tx.var, 32)))
    out = simplify_stmt(S.AttrStmt(tx, "thread_extent", op.const(32), guarded))
    assert isinstance(out, S.AttrStmt) and _count(out, S.IfThenElse) == 0
    (st,) = _stores(out)
    assert same(st.index, tx.var)
    v = E.Var("v")
    let = S.LetStmt(v, i * 8 + j, _store(fd(v, 8)))
    out = simplify_stmt(S.For(j, op.const(0), op.const(8), "serial", let))
    (st,) = _stores(out)
    assert same(st.index, i) and _count(out, S.LetStmt) == 0
    let = S.LetStmt(v, op.const(5), _store(v + 1))
    (st,) = _stores(simplify_stmt(let))
    assert same(st.index, 6)


def test_simplify_stmt_uses_given_analyzer_and_leaves_it_unchanged():
    ana = Analyzer()
    ana.bind(n, Range(op.const(1), op.const(8)))
    out = simplify_stmt(S.IfThenElse(n < 9, _store(n)), ana)
    assert not isinstance(out, S.IfThenElse)
    assert ana.bounds(n) == (1, 8)
    assert ana.bounds(i) == (-math.inf, math.inf)


# ------------------------------------------------------------ speed


@pytest.mark.timeout(120)
def test_simplifying_tiled_matmul_indices_finishes():
    """The index expressions of a 3-level tiled matmul, simplified under their loop bindings.

    A guard against exponential rewriting (it takes well under a second); no wall-clock assert,
    which a shared machine would make flaky."""
    loops = [E.Var(nm) for nm in ("i.o", "j.o", "k.o", "i.i", "j.i", "k.i")]
    exts = [32, 32, 64, 32, 32, 16]
    io_, jo, ko, ii_, ji, ki = loops
    ana = Analyzer()
    for v, e in zip(loops, exts):
        ana.bind(v, Range(op.const(0), op.const(e)))
    for _ in range(50):
        row, col, red = io_ * 32 + ii_, jo * 32 + ji, ko * 16 + ki
        exprs = [row * 1024 + red, red * 1024 + col, row * 1024 + col,
                 fd(row, 32), fm(col, 32), op.likely(red < 1024), op.min(row + 1, 1024)]
        for e in exprs:
            ana.simplify(e)
        ana.bind(ki, Range(op.const(0), op.const(16)))     # drop the memo, as a new scope does
    assert same(ana.simplify(fd(io_ * 32 + ii_, 32)), io_)
