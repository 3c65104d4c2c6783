"""Hybrid script run as plain Python on numpy arrays (emulation): what the intrinsics mean there.

``emulate`` puts ``HYBRID_GLOBALS`` into the script's module globals for the
duration of the call (scripts calling scripts nest) and takes them out again,
whatever happens; names the module already had come back as they were.
"""
from __future__ import annotations

import numpy


class bind:  # noqa: N801 - the script's name
    """``for i in bind("threadIdx.x", n)``: the n threads, one after another."""

    def __init__(self, tag, ext):
        self.tag, self.ext = tag, int(ext)

    def __iter__(self):
        return iter(range(self.ext))


def allocate(shape, dtype="float32", scope="global"):
    """A buffer of ``shape`` (zeros)."""
    del scope
    return numpy.zeros(shape, dtype=dtype)


def output_tensor(shape, dtype="float32"):
    """An output of ``shape`` (zeros)."""
    return numpy.zeros(shape, dtype=dtype)


def rsqrt(x):
    return 1 / numpy.sqrt(x)


def sigmoid(x):
    return 1 / (1 + numpy.exp(-x))


def popcount(x):
    """Number of set bits of ``x`` (two's complement, the width of its type)."""
    x = numpy.asarray(x)
    bits = x.dtype.itemsize * 8 if x.dtype.kind in "iu" else 32
    return bin(int(x) & ((1 << bits) - 1)).count("1")


def max_num_threads(allow_none=True):
    """Most threads in a block of the current target (``with tvm.target.Target(...)``)."""
    from ..codegen.registry import Target
    from ..errors import TVMLabError
    t = Target.current(allow_none=True)
    if t is None:
        raise TVMLabError("max_num_threads() needs a target: run inside `with tvm.target.Target(...)`")
    return t.max_num_threads


def _limit(which):
    def value(dtype):
        d = numpy.dtype(dtype)
        if d.kind == "f":
            return d.type(numpy.inf if which == "max" else -numpy.inf)
        info = numpy.iinfo(d)
        return d.type(info.max if which == "max" else info.min)
    return value


def ceil_div(a, b):
    return (a + b - 1) // b


HYBRID_GLOBALS = {
    "unroll": range, "vectorize": range, "parallel": range, "const_range": range, "bind": bind,
    "allocate": allocate, "output_tensor": output_tensor,
    "sqrt": numpy.sqrt, "rsqrt": rsqrt, "log": numpy.log, "log2": numpy.log2, "log10": numpy.log10,
    "exp": numpy.exp, "tanh": numpy.tanh, "sigmoid": sigmoid, "floor": numpy.floor, "ceil": numpy.ceil,
    "trunc": numpy.trunc, "abs": numpy.abs, "sin": numpy.sin, "cos": numpy.cos, "power": numpy.power,
    "popcount": popcount, "round": numpy.rint, "likely": lambda cond: cond,
    "int8": numpy.int8, "int16": numpy.int16, "int32": numpy.int32, "int64": numpy.int64,
    "uint8": numpy.uint8, "uint16": numpy.uint16, "uint32": numpy.uint32, "uint64": numpy.uint64,
    "float16": numpy.float16, "float32": numpy.float32, "float64": numpy.float64,
    "ceil_div": ceil_div, "max_num_threads": max_num_threads, "inf": _limit("max"), "ninf": _limit("min"),
}


def emulate(func, args, kwargs):
    """``func(*args, **kwargs)`` with the intrinsics in its globals."""
    g = func.__globals__
    saved = {k: g[k] for k in HYBRID_GLOBALS if k in g}
    g.update(HYBRID_GLOBALS)
    try:
        return func(*args, **kwargs)
    finally:
        for k in HYBRID_GLOBALS:
            g.pop(k, None)
        g.update(saved)
