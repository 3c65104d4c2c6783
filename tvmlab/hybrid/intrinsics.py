"""What the functions a hybrid script calls mean when the script is parsed into IR.

``runtime.py`` gives the same names their meaning when the script runs as
Python (emulation); the two tables list the same functions.
"""
from __future__ import annotations

import numbers

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op

LOOPS = {"range": "serial", "unroll": "unrolled", "parallel": "parallel", "vectorize": "vectorized",
         "const_range": "const", "bind": "bind"}


class Alloc:
    """The value of ``output_tensor(...)`` / ``allocate(...)``: what the assigned name will be."""
    __slots__ = ("shape", "dtype", "scope")

    def __init__(self, shape, dtype, scope):
        self.shape, self.dtype, self.scope = shape, dtype, scope


def _args(p, node, name, args, kwargs, names, required):
    """Positional and keyword arguments matched to ``names``; the first ``required`` are needed."""
    if len(args) > len(names):
        p.error(node, f"{name}() takes at most {len(names)} arguments ({', '.join(names)}), got {len(args)}")
    out = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            p.error(node, f"{name}() has no argument {k!r}; it takes {', '.join(names)}")
        if k in out:
            p.error(node, f"{name}() got argument {k!r} twice")
        out[k] = v
    missing = [n for n in names[:required] if n not in out]
    if missing:
        p.error(node, f"{name}() needs {', '.join(missing)}")
    return out


def _alloc(p, node, name, args, kwargs):
    names = ("shape", "dtype") if name == "output_tensor" else ("shape", "dtype", "scope")
    a = _args(p, node, name, args, kwargs, names, 1)
    shape = a["shape"]
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    dims = []
    for k, d in enumerate(shape):
        e = p.expr(node, d, f"{name}: shape[{k}]")
        if not dt.is_int(e.dtype):
            p.error(node, f"{name}: shape[{k}] must be an integer, got {e} of type {e.dtype}")
        dims.append(e)
    dtype = a.get("dtype", "float32")
    if not isinstance(dtype, str):
        p.error(node, f"{name}: dtype must be a string such as 'float32', got {dtype!r}")
    try:
        dtype = dt.canonical(dtype)
    except Exception:
        p.error(node, f"{name}: unknown dtype {dtype!r}")
    scope = a.get("scope", "global")
    if scope not in ("global", "shared", "local"):
        p.error(node, f"{name}: scope must be 'global', 'shared' or 'local', got {scope!r}")
    return Alloc(tuple(dims), dtype, "output" if name == "output_tensor" else scope)


def _len(p, node, name, args, kwargs):
    a = _args(p, node, name, args, kwargs, ("x",), 1)["x"]
    if isinstance(a, (list, tuple)):
        return _op.const(len(a), "int32")
    shape = getattr(a, "shape", None)
    if shape is None:
        p.error(node, f"len() of {a!r}: expected a tensor or a list")
    if len(shape) != 1:
        p.error(node, f"len() of tensor {a.name}, which has {len(shape)} dimensions; use {a.name}.shape[k]")
    return _op.convert(shape[0])


def _unary(fn):
    def call(p, node, name, args, kwargs):
        a = _args(p, node, name, args, kwargs, ("x",), 1)["x"]
        return fn(p.expr(node, a, f"{name}()"))
    return call


def _binary(fn):
    def call(p, node, name, args, kwargs):
        a = _args(p, node, name, args, kwargs, ("a", "b"), 2)
        if all(isinstance(v, numbers.Number) for v in a.values()):
            return fn(_op.convert(a["a"]), _op.convert(a["b"]))
        return fn(p.expr(node, a["a"], f"{name}()"), p.expr(node, a["b"], f"{name}()"))
    return call


def _cast(p, node, name, args, kwargs):
    a = _args(p, node, name, args, kwargs, ("x",), 1)["x"]
    return _op.cast(name, p.expr(node, a, f"{name}()"))


def _ceil_div(p, node, name, args, kwargs):
    a = _args(p, node, name, args, kwargs, ("a", "b"), 2)
    x, y = p.expr(node, a["a"], "ceil_div()"), p.expr(node, a["b"], "ceil_div()")
    return _op.floordiv(_op.sub(_op.add(x, y), 1), y)


def _max_num_threads(p, node, name, args, kwargs):
    _args(p, node, name, args, kwargs, ("allow_none",), 0)
    from ..codegen.registry import Target
    t = Target.current(allow_none=True)
    if t is None:
        p.error(node, "max_num_threads() needs a target: parse the script inside `with tvm.target.Target(...)`")
    return _op.const(t.max_num_threads, "int32")


def _limit(fn):
    def call(p, node, name, args, kwargs):
        d = _args(p, node, name, args, kwargs, ("dtype",), 1)["dtype"]
        if not isinstance(d, str):
            p.error(node, f"{name}() takes a dtype string, got {d!r}")
        return fn(d)
    return call


def _likely(p, node, name, args, kwargs):
    a = _args(p, node, name, args, kwargs, ("cond",), 1)["cond"]
    return _op.likely(p.expr(node, a, "likely()"))


CALLS = {
    "output_tensor": _alloc, "allocate": _alloc, "len": _len,
    "min": _binary(_op.min), "max": _binary(_op.max), "power": _binary(_op.power),
    "ceil_div": _ceil_div, "likely": _likely, "max_num_threads": _max_num_threads,
    "inf": _limit(_op.max_value), "ninf": _limit(_op.min_value),
}
for _n in ("sqrt", "rsqrt", "log", "log2", "log10", "exp", "tanh", "sigmoid", "floor", "ceil", "trunc", "abs",
           "sin", "cos", "popcount"):
    CALLS[_n] = _unary(getattr(_op, _n))
CALLS["round"] = _unary(_op.nearbyint)
for _n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
           "float64"):
    CALLS[_n] = _cast

NAMES = set(CALLS) | set(LOOPS)


def is_const(e):
    return isinstance(e, (E.IntImm, E.FloatImm))
