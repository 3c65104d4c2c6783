"""tvmlab dtypes as LLVM type strings and constants.

Values of dtype bool are ``i1``; in memory (buffers, allocations) a bool takes
one byte, so loads and stores convert through ``i8``.  Scalar parameters follow
the C ABI that ctypes can call: bool travels as ``i8`` and float16 as ``float``.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..errors import BuildError
from ..ir import dtype as dt
from .llvm_ir import const, splat_const, vec

_FLOATS = {16: "half", 32: "float", 64: "double"}


@functools.lru_cache(maxsize=None)
def value_type(dtype):
    """The LLVM type of a value of ``dtype`` (vectors for lanes > 1)."""
    kind, bits, n = dt.parse(dtype)
    if kind == "bool":
        t = "i1"
    elif kind in ("int", "uint"):
        t = f"i{bits}"
    elif kind == "float":
        t = _FLOATS[bits]
    elif kind == "bfloat":
        t = "i16"           # bfloat16 is storage: its bits (lower.bf16_legalize computes in float32)
    elif kind == "handle":
        t = "ptr"
    else:  # pragma: no cover - dt.parse rejects anything else
        raise BuildError(f"no LLVM type for dtype {dtype!r}")
    return vec(t, n)


@functools.lru_cache(maxsize=None)
def memory_type(dtype):
    """The LLVM type of ``dtype`` as stored in memory (bool -> i8)."""
    kind, _, n = dt.parse(dtype)
    return vec("i8", n) if kind == "bool" else value_type(dtype)


@functools.lru_cache(maxsize=None)
def abi_type(dtype):
    """The LLVM type of a scalar parameter of ``dtype`` in the C ABI the runtime calls."""
    kind, bits, _ = dt.parse(dtype)
    if kind == "bool":
        return "i8"
    if kind == "float" and bits == 16:
        return "float"
    return value_type(dtype)


def element_size(dtype):
    """Bytes per element of ``dtype`` in memory."""
    return dt.itemsize(dt.element_of(dtype))


def round_float(value, bits):
    """``value`` rounded to the float format (overflow gives inf, as a conversion would)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float({16: np.float16, 32: np.float32, 64: np.float64}[bits](value))


def constant(dtype, value):
    """An LLVM constant of ``dtype`` (a splat for vector dtypes)."""
    kind, bits, n = dt.parse(dtype)
    t = value_type(dt.element_of(dtype))
    if kind == "float":
        c = const(t, round_float(value, bits))
    elif kind == "bool":
        c = const(t, int(bool(value)))
    elif kind in ("int", "uint"):
        v = int(value) & ((1 << bits) - 1)
        if v >= 1 << (bits - 1):
            v -= 1 << bits            # LLVM spells integers signed
        c = const(t, v)
    else:
        raise BuildError(f"cannot make a constant of dtype {dtype!r}")
    return splat_const(c, n)


def intrinsic_suffix(t):
    """LLVM's overload suffix for type ``t``: f32, v8f32, i64, v4i1, p0, v8p0."""
    if t.startswith("<"):
        n, e = t[1:-1].split(" x ")
        return f"v{n}{intrinsic_suffix(e)}"
    if t[0] == "i":
        return t
    suffix = {"half": "f16", "float": "f32", "double": "f64", "ptr": "p0"}.get(t)
    if suffix is None:
        raise BuildError(f"no intrinsic suffix for LLVM type {t}")
    return suffix
