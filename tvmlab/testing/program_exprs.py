"""Expression trees of the random programs: each node renders TE source and evaluates with numpy.

Node kinds: tensor reads, index values, constants, unary and binary
arithmetic, comparisons, logic, select and casts.  ``bounds`` of every node
are tracked so that values stay in the ranges ``programs`` promises (no
overflow, finite floats); ``exact`` marks values the compiled code and numpy
compute bit for bit alike.
"""
from __future__ import annotations

import math

import numpy as np

FLOAT_LIMIT = 1e6        # bound on any float value
INT_LIMIT = 1 << 22      # bound on any int value (exact in float32, far from overflow)


def _np(dtype):
    return np.dtype(dtype)


def _is_float(dtype):
    return dtype.startswith("float")


# ---------------------------------------------------------------- expression nodes

class Node:
    """An expression: dtype, value bounds [lo, hi], and whether it is computed exactly."""
    dtype = "int32"
    lo = hi = 0.0
    exact = True

    @property
    def mag(self):
        return max(abs(self.lo), abs(self.hi))


class Index:
    """A tensor index: ``v + off``, ``(ext - 1 - v)`` or a constant."""

    def __init__(self, kind, name=None, value=0):
        self.kind, self.name, self.value = kind, name, value

    def py(self):
        if self.kind == "const":
            return str(self.value)
        if self.kind == "rev":
            return f"{self.value} - {self.name}"
        return self.name if self.value == 0 else f"{self.name} + {self.value}"

    def np(self, env):
        if self.kind == "const":
            return np.int64(self.value)
        if self.kind == "rev":
            return self.value - env[self.name]
        return env[self.name] + self.value


class Read(Node):
    def __init__(self, tensor, index):
        self.tensor, self.index = tensor, tuple(index)
        self.dtype, self.lo, self.hi, self.exact = tensor.dtype, tensor.lo, tensor.hi, tensor.exact

    def py(self):
        return f"{self.tensor.name}[{', '.join(i.py() for i in self.index)}]"

    def np(self, env):
        return self.tensor.value[tuple(i.np(env) for i in self.index)]


class IndexValue(Node):
    """A loop variable used as an int32 value."""

    def __init__(self, name, extent):
        self.name, self.lo, self.hi = name, 0, extent - 1

    def py(self):
        return self.name

    def np(self, env):
        return env[self.name].astype(np.int32)


class Const(Node):
    def __init__(self, value, dtype):
        self.value, self.dtype = value, dtype
        self.lo = self.hi = float(value)

    def py(self):
        return f"te.const({self.value!r}, {self.dtype!r})"

    def np(self, env):
        return np.array(self.value, dtype=self.dtype)


def _round_half_away(x):
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0).astype(x.dtype)


_UNARY = {
    # name: (py template, numpy function)
    "neg": ("(-{x})", lambda x, one: -x),
    "abs": ("te.abs({x})", lambda x, one: np.abs(x)),
    "exp": ("te.exp({x})", lambda x, one: np.exp(x)),
    "tanh": ("te.tanh({x})", lambda x, one: np.tanh(x)),
    "sigmoid": ("te.sigmoid({x})", lambda x, one: one / (one + np.exp(-x))),
    "log1p_abs": ("te.log(te.abs({x}) + {one})", lambda x, one: np.log(np.abs(x) + one)),
    "sqrt1p_abs": ("te.sqrt(te.abs({x}) + {one})", lambda x, one: np.sqrt(np.abs(x) + one)),
    "rsqrt1p_abs": ("te.rsqrt(te.abs({x}) + {one})",
                    lambda x, one: one / np.sqrt(np.abs(x) + one)),
    "floor": ("te.floor({x})", lambda x, one: np.floor(x)),
    "ceil": ("te.ceil({x})", lambda x, one: np.ceil(x)),
    "round": ("te.round({x})", lambda x, one: _round_half_away(x)),
}


class Unary(Node):
    def __init__(self, op, x):
        self.op, self.x, self.dtype = op, x, x.dtype
        lo, hi, m = x.lo, x.hi, x.mag
        if op == "neg":
            self.lo, self.hi = -hi, -lo
        elif op == "abs":
            self.lo = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
            self.hi = m
        elif op == "exp":
            self.lo, self.hi = math.exp(lo), math.exp(hi)
        elif op == "tanh":
            self.lo, self.hi = -1.0, 1.0
        elif op == "sigmoid":
            self.lo, self.hi = 0.0, 1.0
        elif op == "log1p_abs":
            self.lo, self.hi = 0.0, math.log1p(m)
        elif op == "sqrt1p_abs":
            self.lo, self.hi = 1.0, math.sqrt(1 + m)
        elif op == "rsqrt1p_abs":
            self.lo, self.hi = 1 / math.sqrt(1 + m), 1.0
        else:  # floor / ceil / round
            self.lo, self.hi = math.floor(lo), math.ceil(hi)
        self.exact = x.exact and op in ("neg", "abs", "floor", "ceil", "round")

    def py(self):
        one = Const(1.0 if _is_float(self.dtype) else 1, self.dtype).py()
        return _UNARY[self.op][0].format(x=self.x.py(), one=one)

    def np(self, env):
        return _UNARY[self.op][1](self.x.np(env), np.array(1, dtype=self.dtype))


def _trunc_div(a, b):
    q = np.abs(a.astype(np.int64)) // abs(int(b))
    return (np.sign(a) * np.sign(b) * q).astype(a.dtype)


_BINARY = {
    "add": ("({a} + {b})", lambda a, b: a + b),
    "sub": ("({a} - {b})", lambda a, b: a - b),
    "mul": ("({a} * {b})", lambda a, b: a * b),
    "min": ("tvm.tir.min({a}, {b})", np.minimum),
    "max": ("tvm.tir.max({a}, {b})", np.maximum),
    # float division by a denominator kept away from zero
    "div1p": ("({a} / (te.abs({b}) + {one}))", lambda a, b: a / (np.abs(b) + np.array(1, a.dtype))),
    # integer division by a nonzero constant b
    "floordiv": ("tvm.tir.floordiv({a}, {b})", np.floor_divide),
    "floormod": ("tvm.tir.floormod({a}, {b})", np.mod),
    "truncdiv": ("tvm.tir.truncdiv({a}, {b})", _trunc_div),
    "truncmod": ("tvm.tir.truncmod({a}, {b})", np.fmod),
    "idiv_op": ("({a} // {b})", np.floor_divide),
    "imod_op": ("({a} % {b})", np.mod),
}


def _interval_mul(a, b):
    ps = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return min(ps), max(ps)


class Binary(Node):
    def __init__(self, op, a, b):
        self.op, self.a, self.b, self.dtype = op, a, b, a.dtype
        assert a.dtype == b.dtype, (op, a.dtype, b.dtype)
        if op == "add":
            self.lo, self.hi = a.lo + b.lo, a.hi + b.hi
        elif op == "sub":
            self.lo, self.hi = a.lo - b.hi, a.hi - b.lo
        elif op == "mul":
            self.lo, self.hi = _interval_mul(a, b)
        elif op == "min":
            self.lo, self.hi = min(a.lo, b.lo), min(a.hi, b.hi)
        elif op == "max":
            self.lo, self.hi = max(a.lo, b.lo), max(a.hi, b.hi)
        elif op == "div1p":
            self.lo, self.hi = min(a.lo, 0.0), max(a.hi, 0.0)
        elif op in ("floormod", "imod_op"):
            c = b.value
            self.lo, self.hi = (0, c - 1) if c > 0 else (c + 1, 0)
        elif op == "truncmod":
            c = abs(b.value)
            self.lo, self.hi = (-(c - 1) if a.lo < 0 else 0), (c - 1 if a.hi > 0 else 0)
        else:  # floordiv / truncdiv / idiv_op by constant
            c = b.value
            qs = [a.lo / c, a.hi / c]
            self.lo, self.hi = math.floor(min(qs)) - 1, math.ceil(max(qs)) + 1
        pow2 = isinstance(b, Const) and b.value != 0 and \
            math.frexp(abs(b.value))[0] == 0.5 and abs(b.value) <= 1024
        if _is_float(self.dtype):
            self.exact = a.exact and b.exact and (op in ("min", "max") or (op == "mul" and pow2))
        else:
            self.exact = True

    def py(self):
        one = Const(1.0, self.dtype).py() if _is_float(self.dtype) else "1"
        return _BINARY[self.op][0].format(a=self.a.py(), b=self.b.py(), one=one)

    def np(self, env):
        return _BINARY[self.op][1](self.a.np(env), self.b.np(env))


_CMP = {"lt": ("<", np.less), "le": ("<=", np.less_equal), "gt": (">", np.greater),
        "ge": (">=", np.greater_equal), "eq": ("==", np.equal), "ne": ("!=", np.not_equal)}


class Cmp(Node):
    dtype = "bool"

    def __init__(self, op, a, b):
        assert a.dtype == b.dtype and a.exact and b.exact
        self.op, self.a, self.b, self.lo, self.hi = op, a, b, 0, 1

    def py(self):
        return f"({self.a.py()} {_CMP[self.op][0]} {self.b.py()})"

    def np(self, env):
        return _CMP[self.op][1](self.a.np(env), self.b.np(env))


class Logic(Node):
    dtype = "bool"

    def __init__(self, op, a, b):
        self.op, self.a, self.b, self.lo, self.hi = op, a, b, 0, 1

    def py(self):
        return f"te.{'all' if self.op == 'and' else 'any'}({self.a.py()}, {self.b.py()})"

    def np(self, env):
        f = np.logical_and if self.op == "and" else np.logical_or
        return f(self.a.np(env), self.b.np(env))


class Select(Node):
    def __init__(self, kind, cond, a, b):
        self.kind, self.cond, self.a, self.b, self.dtype = kind, cond, a, b, a.dtype
        self.lo, self.hi = min(a.lo, b.lo), max(a.hi, b.hi)
        self.exact = a.exact and b.exact

    def py(self):
        fn = "te.if_then_else" if self.kind == "if_then_else" else "tvm.tir.Select"
        return f"{fn}({self.cond.py()}, {self.a.py()}, {self.b.py()})"

    def np(self, env):
        return np.where(self.cond.np(env), self.a.np(env), self.b.np(env))


class Cast(Node):
    def __init__(self, dtype, x):
        self.dtype, self.x = dtype, x
        if _is_float(dtype) or not _is_float(x.dtype):
            self.lo, self.hi = x.lo, x.hi
        else:
            self.lo, self.hi = math.trunc(x.lo), math.trunc(x.hi)
        if dtype == "bool":
            self.lo, self.hi = 0, 1
        # float64 -> float32 rounds the same way everywhere, so exactness carries over
        self.exact = x.exact

    def py(self):
        return f"{self.x.py()}.astype({self.dtype!r})"

    def np(self, env):
        return self.x.np(env).astype(self.dtype)
