"""Expressions compiled once into closures ``f(ch, m)`` that evaluate over every simulated thread.

A scalar value is a Python/numpy scalar (the same in every thread) or an array of one element per
thread; a vector value (``lanes`` > 1) is an array (1 or threads, lanes).  Integers are int64, floats
float64 (rounding happens at stores, as in ``tvmlab.analysis.interp``).  ``m`` is the active mask; only
loads, shuffles and the arms of conditionals that contain them use it: ``if_then_else``, ``Select``
and the right operand of ``&&`` / ``||`` narrow it, as the C the CUDA target prints evaluates them.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import SimulationError
from ...ir import dtype as dt
from ...ir.functor import IRVisitor
from ...ir.tensor import IterVar

SHUFFLES = ("tvm_warp_shuffle", "tvm_warp_shuffle_down")


def _round_away(x):
    """C's round(): halves away from zero (numpy rounds them to even)."""
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _erf(fn):
    vec = np.frompyfunc(fn, 1, 1)
    return lambda x: vec(x).astype(np.float64) if isinstance(x, np.ndarray) else fn(float(x))


_UNARY = {"exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
          "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
          "rsqrt": lambda x: 1.0 / np.sqrt(x), "cbrt": np.cbrt, "sin": np.sin, "cos": np.cos, "tan": np.tan,
          "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos,
          "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
          "erf": _erf(math.erf), "erfc": _erf(math.erfc), "floor": np.floor, "ceil": np.ceil,
          "round": _round_away, "trunc": np.trunc, "nearbyint": np.rint, "rint": np.rint, "fabs": np.abs,
          "abs": np.abs, "isnan": np.isnan, "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
          "bitwise_not": np.invert}
_BINARY = {"pow": np.power, "fmod": np.fmod, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
           "fmin": np.fmin, "fmax": np.fmax, "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
           "bitwise_xor": np.bitwise_xor, "shift_left": np.left_shift, "shift_right": np.right_shift}


def _truncdiv(a, b):
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        if b == 0:
            return 0                      # only in threads that do not use it (a select's other arm)
        q = abs(a) // abs(b)
        return -q if (a < 0) != (b < 0) else q
    q = a // np.where(b == 0, 1, b)
    return q + ((q * b != a) & ((a < 0) != (b < 0)))


def _floordiv(a, b):
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        return a // b if b != 0 else 0
    return a // np.where(b == 0, 1, b)


def _floormod(a, b):
    if not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
        return a % b if b != 0 else 0
    return a % np.where(b == 0, 1, b)


def as_int(x, dtype):
    """``x`` converted to integer ``dtype`` (truncating floats, wrapping to its width), held in int64."""
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        arr = np.trunc(np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0))
    out = arr.astype(dt.to_numpy(dtype)).astype(np.int64)
    return out if out.ndim else out.item()


def as_float(x):
    return x.astype(np.float64) if isinstance(x, np.ndarray) else float(x)


def as_bool(x):
    return x.astype(bool) if isinstance(x, np.ndarray) else bool(x)


def narrow(ch, m, c):
    """The active mask ``m`` where condition ``c`` (scalar or per thread) also holds."""
    if not isinstance(c, np.ndarray):
        return m if c else None
    out = m & c if c.ndim == 1 else m & c.any(axis=1)
    if not out.any():
        return None
    return ch.full if out.all() else out


class _UsesMask(IRVisitor):
    def __init__(self):
        super().__init__()
        self.found = False

    def visit_Load(self, e):
        self.found = True

    def visit_Call(self, c):
        if c.op in SHUFFLES:
            self.found = True
        self.generic_visit(c)


def uses_mask(e):
    """Whether evaluating ``e`` touches memory or other threads (so it needs the exact active mask)."""
    v = _UsesMask()
    v.visit(e)
    return v.found


class ExprCompiler:
    """Compiles expressions of one kernel; ``kc`` supplies the statement being compiled (its site) and
    the memory and shuffle operations of the machine."""

    def __init__(self, kc):
        self.kc = kc

    def __call__(self, e):
        if isinstance(e, IterVar):
            e = e.var
        fn = getattr(self, "c_" + type(e).__name__, None)
        if fn is None:
            raise SimulationError(f"{self.kc.name}: the GPU simulator cannot evaluate {type(e).__name__} "
                                  f"expressions ({e})")
        return fn(e)

    # ---------------------------------------------------------------- leaves
    def c_IntImm(self, e):
        v = bool(e.value) if e.dtype == "bool" else int(e.value)
        return lambda ch, m: v

    def c_FloatImm(self, e):
        v = float(e.value)
        return lambda ch, m: v

    def c_StringImm(self, e):
        v = e.value
        return lambda ch, m: v

    def c_Var(self, e):
        def var(ch, m):
            try:
                return ch.env[e]
            except KeyError:
                raise SimulationError(f"{self.kc.name}: variable {e.name} is not bound (a kernel parameter "
                                      "without a value, or a thread index the launch does not define)") from None
        return var

    c_SizeVar = c_Var

    def c_Cast(self, e):
        f, to = self(e.value), dt.element_of(e.dtype)
        if dt.is_float(to):
            return lambda ch, m: as_float(f(ch, m))
        if dt.is_bool(to):
            return lambda ch, m: as_bool(f(ch, m))
        if dt.element_of(e.value.dtype) == to:
            return f
        return lambda ch, m: as_int(f(ch, m), to)

    # ---------------------------------------------------------------- arithmetic
    def _bin(self, e, op):
        fa, fb = self(e.a), self(e.b)
        return lambda ch, m: op(fa(ch, m), fb(ch, m))

    def c_Add(self, e): return self._bin(e, lambda a, b: a + b)
    def c_Sub(self, e): return self._bin(e, lambda a, b: a - b)
    def c_Mul(self, e): return self._bin(e, lambda a, b: a * b)

    def c_Div(self, e):
        if dt.is_float(e.dtype):
            return self._bin(e, np.divide)
        return self._bin(e, _truncdiv)

    def c_Mod(self, e):
        if dt.is_float(e.dtype):
            return self._bin(e, np.fmod)
        return self._bin(e, lambda a, b: a - b * _truncdiv(a, b))

    def c_FloorDiv(self, e):
        if dt.is_float(e.dtype):
            return self._bin(e, lambda a, b: np.floor(np.divide(a, b)))
        return self._bin(e, _floordiv)

    def c_FloorMod(self, e):
        if dt.is_float(e.dtype):
            return self._bin(e, lambda a, b: a - np.floor(np.divide(a, b)) * b)
        return self._bin(e, _floormod)

    def c_Min(self, e): return self._bin(e, np.minimum)
    def c_Max(self, e): return self._bin(e, np.maximum)
    def c_EQ(self, e): return self._bin(e, lambda a, b: a == b)
    def c_NE(self, e): return self._bin(e, lambda a, b: a != b)
    def c_LT(self, e): return self._bin(e, lambda a, b: a < b)
    def c_LE(self, e): return self._bin(e, lambda a, b: a <= b)
    def c_GT(self, e): return self._bin(e, lambda a, b: a > b)
    def c_GE(self, e): return self._bin(e, lambda a, b: a >= b)

    def _logic(self, e, is_and):
        fa, fb = self(e.a), self(e.b)
        op = np.logical_and if is_and else np.logical_or
        if not uses_mask(e.b):
            return lambda ch, m: op(fa(ch, m), fb(ch, m))

        def short_circuit(ch, m):         # C's && / ||: the right side runs where it decides the result
            a = fa(ch, m)
            mb = narrow(ch, m, a if is_and else np.logical_not(a))
            if mb is None:
                return a
            return op(a, fb(ch, mb))
        return short_circuit

    def c_And(self, e): return self._logic(e, True)
    def c_Or(self, e): return self._logic(e, False)

    def c_Not(self, e):
        f = self(e.a)
        return lambda ch, m: np.logical_not(f(ch, m))

    # ---------------------------------------------------------------- choice
    def _choose(self, cond, tv, fv, vector):
        fc, ft, ff = self(cond), self(tv), self(fv)
        col = (lambda c: c[:, None] if isinstance(c, np.ndarray) and c.ndim == 1 else c) if vector \
            else (lambda c: c)
        if not (uses_mask(tv) or uses_mask(fv)):
            def select(ch, m):
                c = fc(ch, m)
                if not isinstance(c, np.ndarray):
                    return ft(ch, m) if c else ff(ch, m)
                return np.where(col(c), ft(ch, m), ff(ch, m))
            return select

        def guarded(ch, m):               # each arm runs only in the threads that take it
            c = fc(ch, m)
            if not isinstance(c, np.ndarray):
                return ft(ch, m) if c else ff(ch, m)
            mt, mf = narrow(ch, m, c), narrow(ch, m, np.logical_not(c))
            if mf is None:
                return ft(ch, mt)
            if mt is None:
                return ff(ch, mf)
            return np.where(col(c), ft(ch, mt), ff(ch, mf))
        return guarded

    def c_Select(self, e):
        vector = dt.lanes(e.dtype) > 1 and dt.lanes(e.condition.dtype) == 1
        return self._choose(e.condition, e.true_value, e.false_value, vector)

    # ---------------------------------------------------------------- vectors
    def c_Ramp(self, e):
        fb, fs, lanes = self(e.base), self(e.stride), e.lanes
        steps = np.arange(lanes, dtype=np.int64)
        return lambda ch, m: np.reshape(fb(ch, m), (-1, 1)) + np.reshape(fs(ch, m), (-1, 1)) * steps

    def c_Broadcast(self, e):
        f, lanes = self(e.value), e.lanes
        return lambda ch, m: np.repeat(np.reshape(f(ch, m), (-1, 1)), lanes, axis=1)

    def c_Let(self, e):
        fv, fb, var = self(e.value), self(e.body), e.var

        def let(ch, m):
            ch.env[var] = fv(ch, m)
            return fb(ch, m)
        return let

    # ---------------------------------------------------------------- memory and calls
    def c_Load(self, e):
        fi = self(e.index)
        fp = self(e.predicate) if e.predicate is not None else None
        return self.kc.load(e, fi, fp)

    def c_Call(self, e):
        op, args = e.op, e.args
        if op == "likely":
            return self(args[0])
        if op == "if_then_else":
            vector = dt.lanes(e.dtype) > 1 and dt.lanes(args[0].dtype) == 1
            return self._choose(args[0], args[1], args[2], vector)
        if op in SHUFFLES:
            if len(args) != 3:
                raise SimulationError(f"{self.kc.name}: {op} takes (value, {'delta' if op.endswith('down') else 'lane'}"
                                      f", width), got {len(args)} arguments: {e}")
            return self.kc.shuffle(e, *(self(a) for a in args))
        fs = [self(a) for a in args]
        if op == "popcount" and len(fs) == 1:
            from ..interp import _popcount
            f, dtype = fs[0], args[0].dtype
            return lambda ch, m: _popcount(f(ch, m), dtype).astype(np.int64)
        if op in _UNARY and len(fs) == 1:
            f, fn = fs[0], _UNARY[op]
            if op in ("abs", "bitwise_not", "isnan"):
                return lambda ch, m: fn(f(ch, m))
            return lambda ch, m: fn(as_float(f(ch, m)))
        if op in _BINARY and len(fs) == 2:
            fa, fb, fn = fs[0], fs[1], _BINARY[op]
            return lambda ch, m: fn(fa(ch, m), fb(ch, m))
        raise SimulationError(f"{self.kc.name}: the GPU simulator does not know the intrinsic {op!r} ({e})")
