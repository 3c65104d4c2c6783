"""Parameters of a function as the OpenGL runtime sees them, shared by fragment and compute builds."""
from __future__ import annotations

from ..errors import BuildError
from ..ir import expr as E
from .llvm_build import _py_fn, func_spec
from .llvm_codegen import signature


def params_of(func):
    """(spec, {buffer Var: parameter index}, {scalar Var: var key}) of ``func``."""
    spec = func_spec(func.name, func, {})
    bufs, keys = {}, {}
    for i, p in enumerate(signature(func)):
        b = func.buffer_map.get(p)
        if b is not None:
            bufs[b.data] = i
            bufs[p] = i
        elif p.dtype == "handle":
            raise BuildError(f"{func.name}: parameter {p.name} is a raw handle; the OpenGL target needs "
                             "tensor arguments")
        else:
            keys[p] = spec.params[i].var
    return spec, bufs, keys


def size_fn(extents, keys, what):
    """``env -> int``: the product of ``extents`` (Exprs of shape variables)."""
    def key(v):
        k = keys.get(v)
        if k is None:
            raise BuildError(f"{what} depends on {v.name}, which is not a parameter of the function")
        return k
    fns = []
    for x in extents:
        fn = _py_fn(x if isinstance(x, E.Expr) else E.IntImm("int32", int(x)), key)
        if fn is None:
            raise BuildError(f"{what} has a size the OpenGL runtime cannot evaluate: {x}")
        fns.append(fn)

    def size(env):
        n = 1
        for f in fns:
            n *= f(env)
        return n
    return size
