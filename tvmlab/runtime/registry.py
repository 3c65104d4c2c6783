"""The global function registry: TVM's ``tvm.register_func`` / ``tvm.get_global_func``.

Named Python callables that generated code (``call_packed``), external
stages and backends find by name; target builders are registered here as
``codegen.build_<target>``.
"""
from __future__ import annotations

from ..errors import TVMLabError

_FUNCS = {}


def register_func(func_name, f=None, override=False):
    """Register ``f`` under ``func_name``; used bare, as ``@register_func`` or ``@register_func("name")``."""
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str) or not func_name:
        raise TVMLabError(f"register_func: the name must be a non-empty string, got {func_name!r}")

    def register(fn):
        if not callable(fn):
            raise TVMLabError(f"register_func({func_name!r}): expected a callable, got {fn!r}")
        if func_name in _FUNCS and not override:
            raise TVMLabError(f"global function {func_name!r} is already registered; "
                              f"pass override=True to replace it")
        _FUNCS[func_name] = fn
        return fn

    return register(f) if f is not None else register


def get_global_func(name, allow_missing=False):
    """The function registered as ``name``; None when missing and ``allow_missing``."""
    fn = _FUNCS.get(name)
    if fn is None and not allow_missing:
        near = sorted(k for k in _FUNCS if k.split(".")[0] == name.split(".")[0])
        hint = f"; registered under {name.split('.')[0]!r}: {near}" if near else ""
        raise TVMLabError(f"global function {name!r} is not registered{hint}")
    return fn


def list_global_func_names():
    return sorted(_FUNCS)


def remove_global_func(name):
    if name not in _FUNCS:
        raise TVMLabError(f"global function {name!r} is not registered")
    del _FUNCS[name]
