"""Calls from generated code into registered Python functions (``tir.call_packed``).

The C ABI is one entry point the JIT resolves by name::

    int32_t tvmlab_packed_call(int32_t site, int64_t *values)

``site`` numbers a call site: the registered name and what each argument is
(a buffer with its dtype and rank, an int, a float, a bool, a string), fixed
at build time.  ``values`` holds the runtime parts, 64 bits each: slot 0
receives the function's return value (an int or bool; anything else is 0), then for each
argument a buffer's address, shape and strides (in elements), an integer
sign-extended, a float as a double's bits.  Strings live in the site.

The trampoline (a ctypes CFUNCTYPE kept alive for the life of the process)
wraps buffers as NDArrays viewing that memory, calls the function and returns
0.  It never lets an exception unwind into native code: it keeps the exception
and returns 1, the generated code returns at once with an error code, and
the Function that was called raises ``PackedFuncError`` from it.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..errors import TVMLabError
from ..ir import dtype as dt
from .device import cpu
from .ndarray import NDArray
from .registry import get_global_func

_CPU = cpu(0)

SYMBOL = "tvmlab_packed_call"


class PackedFuncError(TVMLabError):
    """A function called through ``call_packed`` raised, or is not registered."""


_SITES = []          # site -> (name, kinds)
_SITE_IDS = {}       # (name, kinds) -> site
_PENDING = {}        # site -> exception raised in the call
_LOCK = threading.Lock()


def register_site(name, kinds):
    """The number of a call site calling ``name`` with arguments described by ``kinds``."""
    key = (name, tuple(kinds))
    with _LOCK:
        site = _SITE_IDS.get(key)
        if site is None:
            site = len(_SITES)
            _SITES.append(key)
            _SITE_IDS[key] = site
    return site


def site_of(site):
    return _SITES[site]


class _Memory:
    """Memory at an address, described to numpy through the array interface (no copy, no ctypes type)."""
    __slots__ = ("__array_interface__",)

    def __init__(self, addr, typestr, shape, strides):
        self.__array_interface__ = {"data": (addr, False), "shape": shape, "typestr": typestr,
                                    "strides": strides, "version": 3}


_TYPESTR = {}


def _view(addr, dtype, shape, strides):
    """An NDArray on the memory at ``addr`` (no copy)."""
    info = _TYPESTR.get(dtype)
    if info is None:
        np_dtype = np.dtype(dt.to_numpy(dtype))
        info = _TYPESTR[dtype] = (np_dtype, np_dtype.str, np_dtype.itemsize, np_dtype.name)
    np_dtype, typestr, size, name = info
    if 0 in shape or not addr:
        return NDArray(np.empty(shape, np_dtype), _CPU)
    arr = np.asarray(_Memory(addr, typestr, shape, tuple(s * size for s in strides)))
    out = NDArray.__new__(NDArray)       # NDArray's fields, without re-reading what we know
    out._arr, out._device, out._ptr, out._dtype = arr, _CPU, addr, name
    return out


def decode(site, values):
    """(name, Python arguments) of a call at ``site`` with the 64-bit ``values``."""
    name, kinds = _SITES[site]
    args, k = [], 1                 # values[0] receives the function's return value
    for kind in kinds:
        tag = kind[0]
        if tag == "str":
            args.append(kind[1])
        elif tag == "buffer":
            _, dtype, ndim = kind
            addr = values[k]
            shape = tuple(int(values[k + 1 + d]) for d in range(ndim))
            strides = tuple(int(values[k + 1 + ndim + d]) for d in range(ndim))
            args.append(_view(addr, dtype, shape, strides))
            k += 1 + 2 * ndim
        elif tag == "float":
            args.append(float(np.array([values[k]], np.int64).view(np.float64)[0]))
            k += 1
        elif tag == "bool":
            args.append(bool(values[k]))
            k += 1
        elif tag == "handle":
            args.append(ctypes.c_void_p(values[k] or None))
            k += 1
        else:      # int
            args.append(int(values[k]))
            k += 1
    return name, args


# Built-in packed functions, registered when first called: prefix -> module that registers them
_BUILTIN = {"tvm.contrib.cblas.": "tvmlab.contrib.cblas"}


def lookup(name):
    """The function registered as ``name``, loading tvmlab's built-in ones on demand; None if missing."""
    fn = get_global_func(name, allow_missing=True)
    if fn is None:
        for prefix, module in _BUILTIN.items():
            if name.startswith(prefix):
                import importlib
                importlib.import_module(module)
                fn = get_global_func(name, allow_missing=True)
    return fn


def _return_value(name, ret):
    """The int the call evaluates to: an int or bool the function returns, else 0 (None, an array that
    ``copyto`` returned, ...)."""
    if isinstance(ret, (bool, int, np.integer, np.bool_)):
        if not -2**63 <= int(ret) < 2**63:
            raise PackedFuncError(f"packed function {name!r} returned {ret}, which does not fit in 64 bits")
        return int(ret)
    return 0


def _dispatch(site, values):
    try:
        name, args = decode(site, values)
        fn = lookup(name)
        if fn is None:
            raise PackedFuncError(f"global function {name!r} is not registered (tvm.register_func)")
        values[0] = _return_value(name, fn(*args))
        return 0
    except BaseException as e:     # noqa: BLE001 - nothing may unwind into native code
        with _LOCK:
            _PENDING[site] = e      # the latest: one left by an earlier call never shadows a new one
        return 1


_CALLBACK_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64))
_TRAMPOLINE = _CALLBACK_TYPE(_dispatch)        # module global: alive as long as the process
_STATE = {"symbol": False}


def ensure_symbol():
    """Make ``tvmlab_packed_call`` resolvable by the JIT (once per process)."""
    if not _STATE["symbol"]:
        import llvmlite.binding as llvm
        llvm.add_symbol(SYMBOL, ctypes.cast(_TRAMPOLINE, ctypes.c_void_p).value)
        _STATE["symbol"] = True


def host_call(call, buffer_of, scalar_of, func_name):
    """Run a ``tvm_call_packed`` Call node from host code run by Python (a GPU build's host function):
    buffers are the arrays ``buffer_of(data_var)`` gives (device arrays), scalars ``scalar_of(expr)``."""
    name = call.args[0].value
    args = []
    for a in call.args[1:]:
        if type(a).__name__ == "StringImm":
            args.append(a.value)
        elif getattr(a, "op", None) == "tvm_stack_make_array":
            off = a.args[2]
            if getattr(off, "value", 0) != 0:
                raise PackedFuncError(f"{func_name}: packed function {name!r}: a buffer with an element offset "
                                      "cannot be passed from GPU host code")
            args.append(buffer_of(a.args[0]))
        else:
            args.append(scalar_of(a))
    fn = lookup(name)
    if fn is None:
        raise PackedFuncError(f"{func_name}: global function {name!r} is not registered (tvm.register_func)")
    try:
        fn(*args)
    except Exception as e:      # noqa: BLE001 - reported as the call's error
        raise PackedFuncError(f"{func_name}: packed function {name!r} raised {type(e).__name__}: {e}") from e


def take_error(site, func_name):
    """The PackedFuncError to raise after a call of ``func_name`` failed at ``site``."""
    with _LOCK:
        exc = _PENDING.pop(site, None)
    name = _SITES[site][0] if 0 <= site < len(_SITES) else "?"
    if isinstance(exc, PackedFuncError):
        err = PackedFuncError(f"{func_name}: {exc}")
    elif exc is not None:
        err = PackedFuncError(f"{func_name}: packed function {name!r} raised {type(exc).__name__}: {exc}")
    else:
        err = PackedFuncError(f"{func_name}: packed function {name!r} failed")
    err.__cause__ = exc
    return err


__all__ = ["PackedFuncError", "register_site", "ensure_symbol", "take_error", "decode", "SYMBOL"]
