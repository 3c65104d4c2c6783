"""TVM's ``tvm._ffi``: where TVM code finds the error class (``tvm._ffi.base.TVMError``) and the
global function registry (``tvm._ffi.register_func`` / ``get_global_func``).

tvmlab has no C++ core to bind, so this is only those names, pointing at the Python ones.
"""
import sys as _sys

from . import errors as base
from .runtime.registry import get_global_func, list_global_func_names, register_func

_sys.modules[__name__ + ".base"] = base

__all__ = ["base", "get_global_func", "list_global_func_names", "register_func"]
