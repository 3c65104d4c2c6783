"""Expression constructors with TVM's typing rules and light constant folding.

Typing: a Python literal takes the type of the typed operand it meets
(``A[i] + 1`` stays float32, ``i * 2`` stays int32); two typed operands of
different types meet at the wider one (int -> float, narrow -> wide).  A Python
int alone becomes int32 (int64 if it does not fit), a float float32, a bool bool.
"""
from __future__ import annotations

import math
import numbers

from ..errors import DSLError
from . import dtype as dt
from . import expr as E

# ------------------------------------------------------------ constants / convert


def const(value, dtype=None):
    """A constant of ``dtype`` (default: int32/int64 for ints, float32 for floats)."""
    if isinstance(value, E.Expr):
        return value if dtype is None else cast(dtype, value)
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, numbers.Integral):
            dtype = "int32" if -2**31 <= int(value) < 2**31 else "int64"
        elif isinstance(value, numbers.Real):
            dtype = "float32"
        else:
            raise DSLError(f"cannot make a constant from {value!r} ({type(value).__name__})")
    dtype = dt.canonical(dtype)
    kind, _, lanes = dt.parse(dtype)
    if lanes != 1:
        return E.Broadcast(const(value, dt.element_of(dtype)), lanes)
    if kind in ("float", "bfloat"):
        return E.FloatImm(dtype, float(value))
    if kind == "bool":
        return E.IntImm("bool", int(bool(value)))
    if kind in ("int", "uint"):
        if isinstance(value, float) and not value.is_integer():
            raise DSLError(f"constant {value!r} is not an integer but dtype is {dtype}")
        v = int(value)
        lo, hi = dt.min_value(dtype), dt.max_value(dtype)
        if not lo <= v <= hi:
            raise DSLError(f"constant {v} does not fit in {dtype} [{lo}, {hi}]")
        return E.IntImm(dtype, v)
    raise DSLError(f"cannot make a constant of dtype {dtype}")


def convert(value):
    """Turn a Python number, IterVar or 0-d tensor into an expression."""
    if isinstance(value, E.Expr):
        return value
    if isinstance(value, E.ExprOp):
        return value._as_expr()
    if isinstance(value, (numbers.Number, bool)):
        return const(value)
    try:
        import numpy as np
        if isinstance(value, np.generic):
            return const(value.item(), str(value.dtype))
    except ImportError:  # pragma: no cover
        pass
    raise DSLError(f"expected an expression or a number, got {type(value).__name__}: {value!r}")


def _is_literal(x):
    return isinstance(x, (numbers.Number, bool)) and not isinstance(x, E.ExprOp)


def _literal_as(value, dtype):
    """A Python literal converted to meet ``dtype`` (TVM's rule for constants)."""
    kind = dt.kind(dtype)
    ln = dt.lanes(dtype)
    if kind in ("float", "bfloat") or (kind in ("int", "uint") and isinstance(value, numbers.Integral)):
        c = const(value, dt.element_of(dtype))
    elif kind == "bool" and isinstance(value, (bool, numbers.Integral)):
        c = const(value, "int32" if not isinstance(value, bool) else "bool")
    else:
        c = const(value)
    return E.Broadcast(c, ln) if ln > 1 and dt.lanes(c.dtype) == 1 else c


def match_types(a, b):
    """Convert two operands to expressions of one common dtype."""
    if _is_literal(a) and not _is_literal(b):
        b = convert(b)
        a = _literal_as(a, b.dtype)
    elif _is_literal(b) and not _is_literal(a):
        a = convert(a)
        b = _literal_as(b, a.dtype)
    else:
        a, b = convert(a), convert(b)
    ta, tb = a.dtype, b.dtype
    if ta == tb:
        return a, b
    ka, ba, la = dt.parse(ta)
    kb, bb, lb = dt.parse(tb)
    if la != lb:
        if la == 1:
            a = E.Broadcast(a, lb)
        elif lb == 1:
            b = E.Broadcast(b, la)
        else:
            raise DSLError(f"operands have different vector lanes: {ta} and {tb}")
        return match_types(a, b)
    if ka == kb:
        target = ta if ba >= bb else tb
    elif ka in ("float", "bfloat") or kb in ("float", "bfloat"):
        target = ta if ka in ("float", "bfloat") else tb
        if ka in ("float", "bfloat") and kb in ("float", "bfloat"):
            target = ta if ka == "float" else tb          # bfloat16 meets an IEEE float: the IEEE one
    elif "bool" in (ka, kb):
        target = tb if ka == "bool" else ta
    else:  # int vs uint: the wider, signed on a tie
        if ba == bb:
            target = ta if ka == "int" else tb
        else:
            target = ta if ba > bb else tb
    return cast(target, a), cast(target, b)


def cast(dtype, value):
    """Cast ``value`` to ``dtype``; constants are folded."""
    value = convert(value)
    dtype = dt.canonical(dtype)
    if value.dtype == dtype:
        return value
    if dt.lanes(dtype) != dt.lanes(value.dtype):
        if dt.lanes(value.dtype) == 1:
            return E.Broadcast(cast(dt.element_of(dtype), value), dt.lanes(dtype))
        raise DSLError(f"cannot cast {value.dtype} to {dtype}: lanes differ")
    if isinstance(value, (E.IntImm, E.FloatImm)):
        v = value.value
        k = dt.kind(dtype)
        if k in ("float", "bfloat"):
            return E.FloatImm(dtype, float(v))
        if k == "bool":
            return E.IntImm("bool", int(bool(v)))
        if isinstance(v, float):
            if not math.isfinite(v):
                return E.Cast(dtype, value)
            v = int(v)
        lo, hi = dt.min_value(dtype), dt.max_value(dtype)
        if lo <= v <= hi:
            return E.IntImm(dtype, v)
        return E.Cast(dtype, value)
    if isinstance(value, E.Broadcast):
        return E.Broadcast(cast(dt.element_of(dtype), value.value), value.lanes)
    return E.Cast(dtype, value)


def _const_value(x):
    if isinstance(x, (E.IntImm, E.FloatImm)):
        return x.value
    return None


def _is_const(x, v):
    c = _const_value(x)
    return c is not None and c == v


def _int_of(x):
    return x.value if isinstance(x, E.IntImm) else None


# ------------------------------------------------------------ arithmetic


def add(a, b):
    a, b = match_types(a, b)
    ca, cb = _const_value(a), _const_value(b)
    if ca is not None and cb is not None:
        return const(ca + cb, a.dtype) if dt.is_float(a.dtype) else _wrap(ca + cb, a.dtype, E.Add, a, b)
    if ca == 0 and not dt.is_float(a.dtype):
        return b
    if cb == 0 and not dt.is_float(a.dtype):
        return a
    return E.Add(a, b)


def sub(a, b):
    a, b = match_types(a, b)
    ca, cb = _const_value(a), _const_value(b)
    if ca is not None and cb is not None:
        return const(ca - cb, a.dtype) if dt.is_float(a.dtype) else _wrap(ca - cb, a.dtype, E.Sub, a, b)
    if cb == 0 and not dt.is_float(a.dtype):
        return a
    return E.Sub(a, b)


def mul(a, b):
    a, b = match_types(a, b)
    ca, cb = _const_value(a), _const_value(b)
    if ca is not None and cb is not None:
        return const(ca * cb, a.dtype) if dt.is_float(a.dtype) else _wrap(ca * cb, a.dtype, E.Mul, a, b)
    if not dt.is_float(a.dtype):
        if ca == 1:
            return b
        if cb == 1:
            return a
        if ca == 0:
            return a
        if cb == 0:
            return b
    return E.Mul(a, b)


def _wrap(v, dtype, cls, a, b):
    """Fold an integer constant when it fits, otherwise keep the node."""
    if dt.kind(dtype) == "bool":
        return cls(a, b)
    lo, hi = dt.min_value(dtype), dt.max_value(dtype)
    return E.IntImm(dtype, v) if lo <= v <= hi else cls(a, b)


def neg(a):
    a = convert(a)
    if isinstance(a, E.IntImm) and dt.is_int(a.dtype) and not dt.is_uint(a.dtype):
        return const(-a.value, a.dtype)
    if isinstance(a, E.FloatImm):
        return const(-a.value, a.dtype)
    return sub(_literal_as(0, a.dtype), a)


def _check_nonzero(b, what):
    if isinstance(b, E.IntImm) and b.value == 0:
        raise DSLError(f"{what} by constant zero")


def true_div(a, b):
    """``a / b``: float division.  Integer operands are ambiguous, as in TVM."""
    a, b = match_types(a, b)
    if not dt.is_float(a.dtype):
        raise DSLError(
            f"`/` between integer expressions ({a} / {b}) is ambiguous: use `//` or "
            "tir.floordiv for floor division, tir.truncdiv for C division, or cast to float")
    ca, cb = _const_value(a), _const_value(b)
    if ca is not None and cb is not None and cb != 0:
        return const(ca / cb, a.dtype)
    return E.Div(a, b)


def div(a, b):
    """Division with C semantics: truncating for integers, exact for floats."""
    a, b = match_types(a, b)
    if dt.is_float(a.dtype):
        return true_div(a, b)
    return truncdiv(a, b)


def truncdiv(a, b):
    a, b = match_types(a, b)
    _require_int(a, "truncdiv")
    _check_nonzero(b, "truncdiv")
    ca, cb = _int_of(a), _int_of(b)
    if ca is not None and cb is not None:
        q = abs(ca) // abs(cb)
        return const(q if (ca >= 0) == (cb >= 0) else -q, a.dtype)
    if cb == 1:
        return a
    return E.Div(a, b)


def truncmod(a, b):
    a, b = match_types(a, b)
    _require_int(a, "truncmod")
    _check_nonzero(b, "truncmod")
    ca, cb = _int_of(a), _int_of(b)
    if ca is not None and cb is not None:
        r = abs(ca) % abs(cb)
        return const(r if ca >= 0 else -r, a.dtype)
    if cb == 1:
        return _literal_as(0, a.dtype)
    return E.Mod(a, b)


def floordiv(a, b):
    a, b = match_types(a, b)
    if dt.is_float(a.dtype):
        return floor(true_div(a, b))  # noqa: F821  (floor is made below, with the other float intrinsics)
    _check_nonzero(b, "floordiv")
    ca, cb = _int_of(a), _int_of(b)
    if ca is not None and cb is not None:
        return const(ca // cb, a.dtype)
    if cb == 1:
        return a
    return E.FloorDiv(a, b)


def floormod(a, b):
    a, b = match_types(a, b)
    if dt.is_float(a.dtype):
        return sub(a, mul(b, floor(true_div(a, b))))  # noqa: F821
    _check_nonzero(b, "floormod")
    ca, cb = _int_of(a), _int_of(b)
    if ca is not None and cb is not None:
        return const(ca % cb, a.dtype)
    if cb == 1:
        return _literal_as(0, a.dtype)
    return E.FloorMod(a, b)


def _require_int(a, what):
    if not dt.is_int(a.dtype):
        raise DSLError(f"{what} needs integer operands, got {a.dtype}")


def min(a, b):  # noqa: A001 - TVM's name
    a, b = match_types(a, b)
    ca, cb = _const_value(a), _const_value(b)
    if ca is not None and cb is not None:
        return a if ca <= cb else b
    return E.Min(a, b)


def max(a, b):  # noqa: A001
    a, b = match_types(a, b)
    ca, cb = _const_value(a), _const_value(b)
    if ca is not None and cb is not None:
        return a if ca >= cb else b
    return E.Max(a, b)


def _cmp(cls, fn):
    def build(a, b):
        a, b = match_types(a, b)
        ca, cb = _const_value(a), _const_value(b)
        if ca is not None and cb is not None:
            return const(bool(fn(ca, cb)), "bool")
        return cls(a, b)
    build.__name__ = cls.__name__.lower()
    return build


eq = _cmp(E.EQ, lambda x, y: x == y)
ne = _cmp(E.NE, lambda x, y: x != y)
lt = _cmp(E.LT, lambda x, y: x < y)
le = _cmp(E.LE, lambda x, y: x <= y)
gt = _cmp(E.GT, lambda x, y: x > y)
ge = _cmp(E.GE, lambda x, y: x >= y)


def _as_bool(x, what):
    x = convert(x)
    if not dt.is_bool(x.dtype):
        if dt.is_int(x.dtype) or dt.is_float(x.dtype):
            return ne(x, 0)
        raise DSLError(f"{what} needs boolean operands, got {x.dtype}")
    return x


def logical_and(a, b):
    a, b = _as_bool(a, "and"), _as_bool(b, "and")
    for x, y in ((a, b), (b, a)):
        if isinstance(x, E.IntImm):
            return y if x.value else x
    return E.And(a, b)


def logical_or(a, b):
    a, b = _as_bool(a, "or"), _as_bool(b, "or")
    for x, y in ((a, b), (b, a)):
        if isinstance(x, E.IntImm):
            return x if x.value else y
    return E.Or(a, b)


def logical_not(a):
    a = _as_bool(a, "not")
    if isinstance(a, E.IntImm):
        return const(not a.value, "bool")
    return E.Not(a)


def all(*conds):  # noqa: A001
    """Logical and of all conditions (TVM's ``tir.all``)."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        raise DSLError("tir.all needs at least one condition")
    out = _as_bool(conds[0], "all")
    for c in conds[1:]:
        out = logical_and(out, c)
    return out


def any(*conds):  # noqa: A001
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        raise DSLError("tir.any needs at least one condition")
    out = _as_bool(conds[0], "any")
    for c in conds[1:]:
        out = logical_or(out, c)
    return out


def _bitwise(name, fold):
    def build(a, b):
        a, b = match_types(a, b)
        if dt.is_bool(a.dtype):
            return logical_and(a, b) if name == "bitwise_and" else (
                logical_or(a, b) if name == "bitwise_or" else ne(a, b))
        _require_int(a, name)
        ca, cb = _int_of(a), _int_of(b)
        if ca is not None and cb is not None:
            return _wrap(fold(ca, cb), a.dtype, lambda x, y: E.Call(a.dtype, name, (x, y)), a, b)
        return E.Call(a.dtype, name, (a, b))
    build.__name__ = name
    return build


bitwise_and = _bitwise("bitwise_and", lambda x, y: x & y)
bitwise_or = _bitwise("bitwise_or", lambda x, y: x | y)
bitwise_xor = _bitwise("bitwise_xor", lambda x, y: x ^ y)
shift_left = _bitwise("shift_left", lambda x, y: x << y)
shift_right = _bitwise("shift_right", lambda x, y: x >> y)


def bitwise_not(a):
    a = convert(a)
    if dt.is_bool(a.dtype):
        return logical_not(a)
    _require_int(a, "bitwise_not")
    return E.Call(a.dtype, "bitwise_not", (a,))


def popcount(x):
    """The number of 1 bits of an integer in its own width (two's complement), of ``x``'s dtype."""
    x = convert(x)
    _require_int(x, "popcount")
    if isinstance(x, E.IntImm):
        return E.IntImm(x.dtype, bin(x.value & ((1 << dt.bits(x.dtype)) - 1)).count("1"))
    return E.Call(x.dtype, "popcount", (x,))


def select(cond, t, f):
    cond = _as_bool(cond, "Select")
    t, f = match_types(t, f)
    if isinstance(cond, E.IntImm):
        return t if cond.value else f
    return E.Select(cond, t, f)


def if_then_else(cond, t, f):
    """Conditional that evaluates only the taken branch (safe for out-of-bounds reads)."""
    cond = _as_bool(cond, "if_then_else")
    t, f = match_types(t, f)
    if isinstance(cond, E.IntImm):
        return t if cond.value else f
    return E.Call(t.dtype, "if_then_else", (cond, t, f))


def likely(cond):
    cond = _as_bool(cond, "likely")
    return E.Call(cond.dtype, "likely", (cond,))


def call_extern(dtype, func_name, *args):
    """A call of the C function ``func_name`` returning ``dtype``, bound at build time.

    The LLVM target links it from the process (libm's ``expf``, ...), CUDA from the
    device library (``__expf``), GLSL from the shading language (``exp``); a
    name the target cannot resolve fails the build.  It is never vectorised.
    Arguments are passed with their own dtypes, as C would see a prototype-less
    call: write ``powf(x, 2.0)`` for a float32 ``x`` and cast where the C
    function wants another type (``x.astype("float64")`` for ``pow``).
    """
    return _extern("call_extern", dtype, func_name, args)


def call_pure_extern(dtype, func_name, *args):
    """``call_extern`` of a function without side effects (same code; the name says so)."""
    return _extern("call_pure_extern", dtype, func_name, args)


def _extern(kind, dtype, func_name, args):
    if not isinstance(func_name, str) or not func_name.isidentifier():
        raise DSLError(f"{kind}: the function name must be a C identifier string, got {func_name!r}")
    try:
        dtype = dt.canonical(dtype)
    except Exception:
        raise DSLError(f"{kind} {func_name}: unknown return dtype {dtype!r}") from None
    values = []
    for k, a in enumerate(args):
        try:
            values.append(convert(a))
        except Exception:
            raise DSLError(f"{kind} {func_name}: argument {k} must be an expression or a number, "
                           f"got {a!r}") from None
    return E.Call(dtype, kind, (E.StringImm(func_name),) + tuple(values))


# ------------------------------------------------------------ math intrinsics

FLOAT_UNARY = ("exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
               "sigmoid", "floor", "ceil", "round", "trunc", "erf", "sin", "cos", "tan",
               "sinh", "cosh", "asin", "acos", "atan", "nearbyint")


def _float_unary(name):
    def build(x):
        x = convert(x)
        if not dt.is_float(x.dtype):
            if name in ("floor", "ceil", "round", "trunc", "nearbyint") and dt.is_int(x.dtype):
                return x
            raise DSLError(f"{name} needs a float argument, got {x.dtype} ({x}); use .astype('float32')")
        if isinstance(x, E.FloatImm):
            v = _fold_unary(name, x.value)
            if v is not None:
                return const(v, x.dtype)
        return E.Call(x.dtype, name, (x,))
    build.__name__ = name
    build.__doc__ = f"Elementwise {name} of a float expression."
    return build


def _fold_unary(name, v):
    fn = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "floor": math.floor,
          "ceil": math.ceil, "tanh": math.tanh, "trunc": math.trunc}.get(name)
    try:
        return float(fn(v)) if fn else None
    except (ValueError, OverflowError):
        return None


for _name in FLOAT_UNARY:
    globals()[_name] = _float_unary(_name)


def abs(x):  # noqa: A001
    x = convert(x)
    if dt.is_uint(x.dtype) or dt.is_bool(x.dtype):
        return x
    if isinstance(x, (E.IntImm, E.FloatImm)):
        return const(builtins_abs(x.value), x.dtype)
    return E.Call(x.dtype, "fabs" if dt.is_float(x.dtype) else "abs", (x,))


def builtins_abs(v):
    return v if v >= 0 else -v


def power(x, y):
    x, y = match_types(x, y)
    if not dt.is_float(x.dtype):
        raise DSLError(f"pow needs float operands, got {x.dtype}")
    return E.Call(x.dtype, "pow", (x, y))


pow = power  # noqa: A001


def fmod(x, y):
    x, y = match_types(x, y)
    if not dt.is_float(x.dtype):
        return truncmod(x, y)
    return E.Call(x.dtype, "fmod", (x, y))


def isnan(x):
    x = convert(x)
    if not dt.is_float(x.dtype):
        return const(False, dt.bool_like(x.dtype))
    return E.Call(dt.bool_like(x.dtype), "isnan", (x,))


def min_value(dtype):
    """The smallest value of ``dtype`` (``-inf`` for floats, as a reduction identity)."""
    dtype = dt.canonical(dtype)
    if dt.is_float(dtype):
        return const(-math.inf, dtype)
    return const(dt.min_value(dtype), dtype)


def max_value(dtype):
    dtype = dt.canonical(dtype)
    if dt.is_float(dtype):
        return const(math.inf, dtype)
    return const(dt.max_value(dtype), dtype)


# ------------------------------------------------------------------ TVM's op registry spellings
_OP_ATTRS = {}   # (op name without "tir.", attr key) -> value


def register_op_attr(op_name, attr_key, value=None, level=10):
    """Record an attribute of an operator (TVM's ``TCallEffectKind``, ...); kept for reference."""
    name = op_name[4:] if op_name.startswith("tir.") else op_name
    _OP_ATTRS[(name, attr_key)] = value
    return value


def call_intrin(dtype, func_name, *args):
    """A call of intrinsic ``func_name`` ("tir.mylog"); a target lowers it by an intrinsic rule."""
    if not isinstance(func_name, str) or not func_name:
        raise DSLError(f"call_intrin needs an operator name such as 'tir.exp', got {func_name!r}")
    name = func_name[4:] if func_name.startswith("tir.") else func_name
    dtype = "void" if dtype == "void" else dt.canonical(dtype)      # "void": a statement's call
    return E.Call(dtype, name, tuple(E.StringImm(a) if isinstance(a, str) else convert(a) for a in args))


class CallEffectKind:
    """TVM's effect kinds for ``register_op_attr(name, "TCallEffectKind", ...)``."""
    ExprAnnotation, Pure, ReadState, UpdateState, Opaque = 0, 1, 2, 3, 4
