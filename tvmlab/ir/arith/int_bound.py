"""Constant integer bounds: the inclusive range [lo, hi] an integer expression can take.

Bounds are Python ints, or ``-inf``/``inf`` (floats) when unbounded.  Index
arithmetic of 32 and 64 bits is treated as mathematical integers (no
wrap-around), so an unbound ``int32`` variable is (-inf, inf) and a
``SizeVar`` is [0, inf); narrower types and loaded values get their dtype's
range.  Vector expressions bound every lane at once.
"""
from __future__ import annotations

import math

from .. import dtype as dt
from .. import expr as E
from .memo import NodeMemo

INF = math.inf
EVERYTHING = (-INF, INF)


# ------------------------------------------------------------ interval arithmetic on (lo, hi)


def _mul(x, y):
    """Product where 0 * inf is 0 (a zero factor pins the value)."""
    if x == 0 or y == 0:
        return 0
    return x * y


def add(a, b):
    return (a[0] + b[0], a[1] + b[1])


def sub(a, b):
    return (a[0] - b[1], a[1] - b[0])


def mul(a, b):
    ps = (_mul(a[0], b[0]), _mul(a[0], b[1]), _mul(a[1], b[0]), _mul(a[1], b[1]))
    return (min(ps), max(ps))


def scale(a, k):
    """``a * k`` for an int constant ``k``."""
    if k >= 0:
        return (_mul(a[0], k), _mul(a[1], k))
    return (_mul(a[1], k), _mul(a[0], k))


def floordiv_const(x, c):
    """floor(x / c) for an int or infinite ``x`` and a nonzero int ``c``."""
    if x in (INF, -INF):
        return x if c > 0 else -x
    return x // c


def truncdiv_const(x, c):
    if x in (INF, -INF):
        return x if c > 0 else -x
    q = abs(x) // abs(c)
    return q if (x >= 0) == (c > 0) else -q


def _div(a, b, fdiv):
    """Bounds of a quotient; corners suffice when the divisor keeps one sign.  A divisor
    is never zero (dividing by zero is undefined), so a zero end of its range is dropped."""
    if b[0] == 0 < b[1]:
        b = (1, b[1])
    elif b[0] < 0 == b[1]:
        b = (b[0], -1)
    if b[0] > 0 or b[1] < 0:
        if b[0] in (-INF, INF) or b[1] in (-INF, INF):
            m = max(abs(a[0]), abs(a[1]))
            if b[0] > 0 and a[0] >= 0:
                return (0, a[1])
            return (-m, m)
        qs = [fdiv(x, y) for x in a for y in b]
        return (min(qs), max(qs))
    m = max(abs(a[0]), abs(a[1]))
    return (-m, m)


def floordiv(a, b):
    return _div(a, b, floordiv_const)


def truncdiv(a, b):
    return _div(a, b, truncdiv_const)


def floormod(a, b):
    if b[0] == b[1] and b[0] not in (-INF, INF) and b[0] != 0:
        c = b[0]
        if a[0] not in (-INF, INF) and a[1] not in (-INF, INF):
            q = a[0] // c
            if q == a[1] // c:
                lo, hi = a[0] - q * c, a[1] - q * c
                return (min(lo, hi), max(lo, hi))
        return (0, c - 1) if c > 0 else (c + 1, 0)
    if b[0] > 0:
        hi = b[1] - 1
        if a[0] >= 0:
            hi = min(hi, a[1])
        return (0, hi)
    if b[1] < 0:
        return (b[0] + 1, 0)
    m = max(abs(b[0]), abs(b[1])) - 1
    return (-m, m)


def truncmod(a, b):
    m = max(abs(b[0]), abs(b[1])) - 1
    return (max(min(a[0], 0), -m), min(max(a[1], 0), m))


def union(a, b):
    return (min(a[0], b[0]), max(a[1], b[1]))


def intersect(a, b):
    return (max(a[0], b[0]), min(a[1], b[1]))


def dtype_bound(dtype, is_size_var=False):
    """Bounds of a value of ``dtype`` about which nothing else is known."""
    kind, bits, _ = dt.parse(dtype)
    if kind == "bool":
        return (0, 1)
    if kind == "uint":
        return (0, (1 << bits) - 1 if bits < 32 else INF)
    if kind == "int":
        if is_size_var:
            return (0, INF if bits >= 32 else (1 << (bits - 1)) - 1)
        if bits < 32:
            return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return EVERYTHING


# ------------------------------------------------------------ the analysis


class ConstIntBound(NodeMemo):
    """Bounds of expressions given bounds of variables (``var_bound(v) -> (lo, hi) or None``).

    Results are memoised per node; ``clear()`` forgets them when bindings change.
    """

    def __init__(self, var_bound):
        super().__init__()
        self.var_bound = var_bound

    def _eval(self, e):
        t = type(e)
        if t is E.IntImm:
            return (e.value, e.value)
        if dt.parse(e.dtype)[0] not in ("int", "uint", "bool"):
            return EVERYTHING
        if isinstance(e, E.Var):
            b = self.var_bound(e)
            if b is not None:
                return b
            return dtype_bound(e.dtype, isinstance(e, E.SizeVar))
        fn = _RULES.get(t)
        if fn is not None:
            return fn(self, e)
        return dtype_bound(e.dtype)


def _binary(combine):
    def rule(self, e):
        return combine(self(e.a), self(e.b))
    return rule


def _cast(self, e):
    target = dtype_bound(e.dtype)
    src = e.value.dtype
    if not (dt.is_int(src) or dt.is_bool(src)):
        return target
    b = self(e.value)
    if target[0] <= b[0] and b[1] <= target[1]:
        return b
    return target


def _select(self, e):
    c = self(e.condition)
    if c[0] >= 1:
        return self(e.true_value)
    if c[1] <= 0:
        return self(e.false_value)
    return union(self(e.true_value), self(e.false_value))


def _ramp(self, e):
    return add(self(e.base), mul(self(e.stride), (0, e.lanes - 1)))


def _let(self, e):
    return self(e.body)


def _shift(a, s, right):
    """Corners of ``a >> s`` / ``a << s`` for a shift amount known to lie in [0, 62]."""
    if s[0] < 0 or s[1] > 62:
        return None

    def one(v, k):
        if v in (-INF, INF):
            return v
        return v >> k if right else v << k
    vals = [one(v, k) for v in a for k in s]
    return (min(vals), max(vals))


def _call(self, e):
    if e.op == "likely" and e.args:
        return self(e.args[0])
    if e.op == "if_then_else" and len(e.args) == 3:
        return union(self(e.args[1]), self(e.args[2]))
    if e.op in ("shift_right", "shift_left") and len(e.args) == 2:
        b = _shift(self(e.args[0]), self(e.args[1]), e.op == "shift_right")
        if b is not None:
            return intersect(b, dtype_bound(e.dtype))
    if e.op == "bitwise_and" and len(e.args) == 2:
        a, b = self(e.args[0]), self(e.args[1])
        if a[0] >= 0 or b[0] >= 0:       # a non-negative operand bounds the result
            return (0, min(x[1] for x in (a, b) if x[0] >= 0))
    if e.op == "abs" and e.args:
        lo, hi = self(e.args[0])
        if lo >= 0:
            return (lo, hi)
        if hi <= 0:
            return (-hi, -lo)
        return (0, max(-lo, hi))
    return dtype_bound(e.dtype)


def _bool(self, e):
    return (0, 1)


def _compare(decide):
    """A comparison is known (1 or 0) when the operands' bounds decide it, as for a Select whose
    condition compares constants (a constant index wrapped from the end when negative)."""
    def rule(self, e):
        if not dt.is_int(e.a.dtype) and not dt.is_uint(e.a.dtype):
            return (0, 1)
        known = decide(self(e.a), self(e.b))
        return (0, 1) if known is None else (int(known), int(known))
    return rule


def _decide_lt(a, b):
    return True if a[1] < b[0] else (False if a[0] >= b[1] else None)


def _decide_le(a, b):
    return True if a[1] <= b[0] else (False if a[0] > b[1] else None)


def _decide_eq(a, b):
    if a[0] == a[1] == b[0] == b[1]:
        return True
    return False if a[1] < b[0] or b[1] < a[0] else None


def _negate(decide):
    def rule(a, b):
        known = decide(a, b)
        return None if known is None else not known
    return rule


def _not(self, e):
    lo, hi = self(e.a)
    return (1 - hi, 1 - lo) if dt.is_bool(e.dtype) else (0, 1)


_RULES = {
    E.Add: _binary(add),
    E.Sub: _binary(sub),
    E.Mul: _binary(mul),
    E.FloorDiv: _binary(floordiv),
    E.FloorMod: _binary(floormod),
    E.Div: _binary(truncdiv),
    E.Mod: _binary(truncmod),
    E.Min: _binary(lambda a, b: (min(a[0], b[0]), min(a[1], b[1]))),
    E.Max: _binary(lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))),
    E.Cast: _cast,
    E.Select: _select,
    E.Ramp: _ramp,
    E.Broadcast: lambda self, e: self(e.value),
    E.Let: _let,
    E.Call: _call,
    E.Not: _not,
}
for _c in (E.And, E.Or):
    _RULES[_c] = _bool
_RULES[E.LT] = _compare(_decide_lt)
_RULES[E.LE] = _compare(_decide_le)
_RULES[E.GT] = _compare(lambda a, b: _decide_lt(b, a))
_RULES[E.GE] = _compare(lambda a, b: _decide_le(b, a))
_RULES[E.EQ] = _compare(_decide_eq)
_RULES[E.NE] = _compare(_negate(_decide_eq))
