"""Data types are plain strings, as in TVM: "float32", "int8", "bool", "float32x8".

Strings keep user code simple (``A.dtype == "float32"``); the helpers here parse
them once (cached) into (kind, bits, lanes).
"""
from functools import lru_cache

from ..errors import DSLError

_KINDS = ("int", "uint", "float", "bfloat", "bool", "handle")
SUPPORTED = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
             "uint64", "bfloat16", "float16", "float32", "float64")
BF16_MAX = 3.3895313892515355e38     # largest finite bfloat16


@lru_cache(maxsize=None)
def parse(dtype):
    """Return (kind, bits, lanes) for a dtype string; raise DSLError if malformed."""
    if not isinstance(dtype, str):
        try:
            import numpy as np
            dtype = np.dtype(dtype).name
        except TypeError:
            raise DSLError(f"dtype must be a string such as 'float32', got {dtype!r}") from None
    base, lanes = dtype, 1
    if "x" in dtype:
        base, _, ln = dtype.partition("x")
        if not ln.isdigit() or int(ln) < 1:
            raise DSLError(f"malformed dtype {dtype!r}: lanes must be a positive integer")
        lanes = int(ln)
    if base == "bool":
        return ("bool", 1, lanes)
    if base == "handle":
        return ("handle", 64, lanes)
    if base == "bfloat16":
        return ("bfloat", 16, lanes)
    if base in ("float", "int", "uint"):       # TVM's short names: float32, int32, uint32
        return (base, 32, lanes)
    for kind in ("uint", "int", "float"):
        if base.startswith(kind) and base[len(kind):].isdigit():
            bits = int(base[len(kind):])
            ok = bits in ((16, 32, 64) if kind == "float" else (8, 16, 32, 64))
            if ok:
                return (kind, bits, lanes)
    raise DSLError(f"unknown dtype {dtype!r}; supported: {', '.join(SUPPORTED)}")


@lru_cache(maxsize=None)
def canonical(dtype):
    """Normalise a dtype given as a string or numpy dtype to tvmlab's string."""
    kind, bits, lanes = parse(dtype)
    return make(kind, bits, lanes)


@lru_cache(maxsize=None)
def make(kind, bits, lanes=1):
    if kind == "bool":
        base = "bool"
    elif kind == "handle":
        base = "handle"
    else:
        base = f"{kind}{bits}"
    return base if lanes == 1 else f"{base}x{lanes}"


def kind(dtype):
    return parse(dtype)[0]


def bits(dtype):
    return parse(dtype)[1]


def lanes(dtype):
    return parse(dtype)[2]


def element_of(dtype):
    """The scalar type of a (possibly vector) dtype."""
    k, b, _ = parse(dtype)
    return make(k, b, 1)


def with_lanes(dtype, n):
    k, b, _ = parse(dtype)
    return make(k, b, n)


def is_float(dtype):
    """IEEE floats and bfloat16."""
    return parse(dtype)[0] in ("float", "bfloat")


def is_bfloat16(dtype):
    return parse(dtype)[0] == "bfloat"


def is_int(dtype):
    """Signed or unsigned integer (bool excluded)."""
    return parse(dtype)[0] in ("int", "uint")


def is_uint(dtype):
    return parse(dtype)[0] == "uint"


def is_bool(dtype):
    return parse(dtype)[0] == "bool"


def is_handle(dtype):
    return parse(dtype)[0] == "handle"


def bool_like(dtype):
    """The boolean type with as many lanes as ``dtype``."""
    return make("bool", 1, lanes(dtype))


def itemsize(dtype):
    k, b, ln = parse(dtype)
    return (1 if k == "bool" else b // 8) * ln       # a bool is stored as one byte (numpy's bool_, LLVM's i8)


def to_numpy(dtype):
    """The numpy dtype holding ``dtype``'s elements: bfloat16 is kept as its bits (uint16)."""
    import numpy as np
    if is_bfloat16(dtype):
        return np.dtype("uint16")
    return np.dtype(element_of(dtype))


def min_value(dtype):
    """Smallest finite value of a scalar dtype, as a Python number."""
    import numpy as np
    k, b, _ = parse(dtype)
    if k == "bool":
        return False
    if k == "bfloat":
        return -BF16_MAX
    if k == "float":
        return float(np.finfo(to_numpy(dtype)).min)
    return int(np.iinfo(to_numpy(dtype)).min)


def max_value(dtype):
    import numpy as np
    k, b, _ = parse(dtype)
    if k == "bool":
        return True
    if k == "bfloat":
        return BF16_MAX
    if k == "float":
        return float(np.finfo(to_numpy(dtype)).max)
    return int(np.iinfo(to_numpy(dtype)).max)
