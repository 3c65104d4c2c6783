"""Module and Function: compiled code callable from Python.

A backend describes each compiled function with a ``FuncSpec`` (parameter
names, dtypes, buffer shapes with symbolic dims, error codes) and its native
address.  ``Function`` checks every argument against the spec *before* the
native call, so a wrong count, dtype, shape or device raises a
RuntimeArgError naming the argument instead of corrupting memory.

Symbolic dims (a variable in a buffer shape) are bound from the first buffer
that has them; every later use must agree.  Scalar parameters that such a
binding determines are filled in, so the caller passes only buffers (as in
TVM); passing every parameter explicitly also works and is checked.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from ..errors import DeviceError, RuntimeArgError
from ..ir import dtype as dt
from .ndarray import NDArray
from .timer import make_time_evaluator

# ABI of scalar parameters: float16 travels as float, bool as one byte.
_CTYPES = {
    "bool": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float16": ctypes.c_float,
    "float32": ctypes.c_float, "float64": ctypes.c_double, "handle": ctypes.c_void_p,
}


_DIM_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
            "//": lambda a, b: a // b, "%": lambda a, b: a % b, "min": min, "max": max}


def _dim_fn(tree):
    """fn(env) -> int for a dim tree: an int, a var key (str), or [op, tree, tree]."""
    if isinstance(tree, int):
        return lambda env: tree
    if isinstance(tree, str):
        return lambda env: env[tree]
    op, a, b = tree
    f, fa, fb = _DIM_OPS[op], _dim_fn(a), _dim_fn(b)
    return lambda env: f(fa(env), fb(env))


class DimExpr:
    """A buffer dim given by an expression of shape variables, e.g. ``n * 2``.

    ``tree`` is plain data (``["*", "n", 2]``), so a spec can be stored with an
    exported library and rebuilt when it is loaded.
    """
    __slots__ = ("text", "tree", "fn")

    def __init__(self, text, tree):
        self.text = text      # how the dim is printed in messages
        self.tree = tree
        self.fn = _dim_fn(tree)   # fn(env: {var key: int}) -> int; KeyError if a var is unbound

    def __repr__(self):
        return self.text


def _dim_to_json(d):
    return {"text": d.text, "tree": d.tree} if isinstance(d, DimExpr) else d


def _dim_from_json(d):
    return DimExpr(d["text"], d["tree"]) if isinstance(d, dict) else d


class ParamSpec:
    """One parameter: a buffer (``kind == "buffer"``) or a scalar (``kind == "scalar"``).

    ``shape``/``strides`` entries are ints, var keys (str) or DimExpr; ``None``
    means unchecked.  ``var`` is a scalar's var key; ``written`` tells whether
    the function stores into a buffer (used to reject aliased outputs).
    """
    __slots__ = ("name", "kind", "dtype", "shape", "strides", "var", "written")

    def __init__(self, name, kind, dtype, shape=None, strides=None, var=None, written=False):
        self.name, self.kind, self.dtype = name, kind, dtype
        self.shape = None if shape is None else tuple(shape)
        self.strides = None if strides is None else tuple(strides)
        self.var, self.written = var, written

    def to_json(self):
        dims = (lambda ds: None if ds is None else [_dim_to_json(d) for d in ds])
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype, "shape": dims(self.shape),
                "strides": dims(self.strides), "var": self.var, "written": self.written}

    @classmethod
    def from_json(cls, d):
        dims = (lambda ds: None if ds is None else [_dim_from_json(x) for x in ds])
        return cls(d["name"], d["kind"], d["dtype"], dims(d["shape"]), dims(d["strides"]), d["var"],
                   d["written"])

    def __repr__(self):
        if self.kind == "buffer":
            shape = "?" if self.shape is None else ", ".join(str(d) for d in self.shape)
            return f"{self.name}: {self.dtype or 'any'}[{shape}]"
        return f"{self.name}: {self.dtype}"


class FuncSpec:
    """What the runtime knows about a compiled function."""

    def __init__(self, name, params, errors=None):
        self.name = name
        self.params = list(params)
        self.errors = dict(errors or {})   # return code -> ("assert" | "oom", message)
        dims = set()
        for p in self.params:
            if p.kind == "buffer":
                for d in (p.shape or ()) + (p.strides or ()):
                    if isinstance(d, str):
                        dims.add(d)
        self.inferred = [i for i, p in enumerate(self.params) if p.kind == "scalar" and p.var in dims]
        self.required = [i for i in range(len(self.params)) if i not in self.inferred]

    def signature(self):
        return f"{self.name}({', '.join(repr(p) for p in self.params)})"

    def to_json(self):
        """Plain data for JSON: what an exported library stores about this function."""
        return {"name": self.name, "params": [p.to_json() for p in self.params],
                "errors": [[code, kind, msg] for code, (kind, msg) in sorted(self.errors.items())]}

    @classmethod
    def from_json(cls, d):
        return cls(d["name"], [ParamSpec.from_json(p) for p in d["params"]],
                   {code: (kind, msg) for code, kind, msg in d["errors"]})


class ArgBinder:
    """Checks call arguments against a FuncSpec before any native or device code runs.

    Shared by every backend's callable: a subclass names its device
    (``_device_type``, ``_device_text``, ``_wrap``) and what the native call
    receives for an array (``_native``); it sets ``spec``, ``name``,
    ``_written`` (indices of written buffers) and ``_all``.
    """
    _device_type = "cpu"
    _device_text = "cpu"
    _wrap = "tvmlab.nd.array"

    def _native(self, a):
        return a._ptr

    def _expected(self):
        spec = self.spec
        names = ", ".join(spec.params[i].name for i in spec.required)
        text = f"{len(spec.required)} arguments ({names})"
        if spec.inferred:
            text += f" or all {len(spec.params)} ({', '.join(p.name for p in spec.params)})"
        return text

    def _where(self, argno, p):
        return f"{self.name}: argument {argno} '{p.name}'"

    def _bind(self, args, full_env=False):
        """``(native arguments by parameter, env)`` after checking every argument.

        ``env`` maps each symbolic dimension and scalar to its value; it is
        built only when needed unless ``full_env``.
        """
        spec = self.spec
        params = spec.params
        if len(args) == len(params):
            positions = self._all
        elif len(args) == len(spec.required):
            positions = spec.required
        else:
            raise RuntimeArgError(
                f"{self.name}: expected {self._expected()}, got {len(args)}; "
                f"signature: {spec.signature()}")
        cargs = [None] * len(params)
        env = origin = deferred = scalars = None
        if full_env:
            env, origin, deferred = {}, {}, []
        for argno, (i, a) in enumerate(zip(positions, args), 1):
            p = params[i]
            if p.kind != "buffer":
                if scalars is None:
                    scalars = []
                scalars.append((argno, p, a, i))
                continue
            if not isinstance(a, NDArray):
                hint = f" (wrap numpy arrays with {self._wrap})" if hasattr(a, "__array__") else ""
                raise RuntimeArgError(f"{self._where(argno, p)}: expected an NDArray, got {type(a).__name__}{hint}")
            if a._dtype != p.dtype and p.dtype is not None:
                raise RuntimeArgError(f"{self._where(argno, p)}: expected dtype {p.dtype}, got {a._dtype}")
            if a._device.device_type != self._device_type:
                raise RuntimeArgError(f"{self._where(argno, p)}: expected an array on {self._device_text}, got "
                                      f"one on {a._device!r} (copy it with {self._wrap})")
            shape = a.shape
            if p.shape is not None and shape != p.shape:      # equal tuples: every dim a matching int
                if len(shape) != len(p.shape):
                    raise RuntimeArgError(
                        f"{self._where(argno, p)}: expected a {len(p.shape)}-d array of shape "
                        f"{_shape_text(p.shape)}, got a {len(shape)}-d array of shape {shape}")
                if env is None:
                    env, origin, deferred = {}, {}, []
                self._match(p.shape, shape, "shape", argno, p, env, origin, deferred)
                if p.strides is not None:
                    arr = a._arr
                    step = arr.itemsize * dt.lanes(a._dtype)       # strides count elements
                    strides = tuple(x // step for x in arr.strides[:len(shape)])
                    self._match(p.strides, strides, "strides", argno, p, env, origin, deferred)
            cargs[i] = self._native(a)
        if scalars is not None:
            for argno, p, a, i in scalars:
                v = _scalar(self, argno, p, a)
                if p.var is not None and env is not None:
                    bound = env.get(p.var)
                    if bound is not None and bound != v:
                        raise RuntimeArgError(f"{self._where(argno, p)} is {v} but the shapes give "
                                              f"{p.var} = {bound} ({origin[p.var]})")
                    env[p.var] = v
                cargs[i] = v
        if env is not None:
            for i in spec.inferred:
                if cargs[i] is None:
                    if params[i].var not in env:
                        raise RuntimeArgError(f"{self.name}: no argument determines {params[i].name}")
                    cargs[i] = env[params[i].var]
            for d, got, what, argno, p, k in deferred:
                try:
                    want = d.fn(env)
                except KeyError as e:
                    raise RuntimeArgError(f"{self._where(argno, p)}: {what}[{k}] = {d} uses {e.args[0]}, "
                                          "which no argument determines") from None
                if want != got:
                    raise RuntimeArgError(f"{self._where(argno, p)}: {what}[{k}] is {got}, expected {d} = {want}")
        if self._written:
            self._check_alias(args, positions, cargs)
        return cargs, env

    def _match(self, dims, got, what, argno, p, env, origin, deferred):
        for k, d in enumerate(dims):
            g = got[k]
            if type(d) is int:
                if g != d:
                    raise RuntimeArgError(f"{self._where(argno, p)}: expected {what}[{k}] = {d}, got {g} "
                                          f"({what} {got})")
            elif d is None:
                continue
            elif type(d) is str:
                bound = env.get(d)
                if bound is None:
                    env[d] = g
                    origin[d] = f"bound by argument {argno} '{p.name}' {what}[{k}]"
                elif bound != g:
                    raise RuntimeArgError(f"{self._where(argno, p)}: {what}[{k}] is {g} but {d} = {bound} "
                                          f"({origin[d]})")
            else:
                deferred.append((d, g, what, argno, p, k))

    def _check_alias(self, args, positions, cargs):
        params = self.spec.params
        for w in self._written:
            ptr = cargs[w]
            for i, p in enumerate(params):
                if i != w and p.kind == "buffer" and cargs[i] == ptr and ptr is not None:
                    arr = args[list(positions).index(w)]
                    if arr.size == 0:
                        continue
                    first, second = sorted((i, w))
                    raise RuntimeArgError(
                        f"{self.name}: arguments '{params[first].name}' and '{params[second].name}' are the "
                        f"same array, but '{params[w].name}' is written by the function; pass a separate array")


class Function(ArgBinder):
    """A callable compiled function; arguments are checked before the native call."""

    def __init__(self, spec, address, owner, not_runnable=None):
        self.spec = spec
        self.name = spec.name
        self._owner = owner                 # keeps the JIT engine (and the code) alive
        self._not_runnable = not_runnable   # reason this code cannot run here, or None
        argtypes = [_CTYPES["handle"] if p.kind == "buffer" else _CTYPES[p.dtype] for p in spec.params]
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address) if address else None
        self._written = [i for i, p in enumerate(spec.params) if p.kind == "buffer" and p.written]
        self._all = list(range(len(spec.params)))
        # fast path: only buffers, all of constant shape (the common case) -> (dtype, shape) per argument
        static = all(p.kind == "buffer" and p.dtype is not None and p.shape is not None and p.strides is None
                     and all(type(d) is int for d in p.shape) for p in spec.params)
        # the numpy view's shape: an array of vector elements has the lanes as a last dimension
        self._static = [(p.dtype, p.shape + ((dt.lanes(p.dtype),) if dt.lanes(p.dtype) != 1 else ()))
                        for p in spec.params] if static else None

    def __repr__(self):
        return f"<Function {self.spec.signature()}>"

    def __call__(self, *args):
        cargs = self._static_pack(args) if self._static is not None else None
        if cargs is None:
            cargs = self._pack(args)
        rc = self._cfunc(*cargs)
        if rc:
            self._raise(rc)

    def prepare(self, *args):
        """Check ``args`` once; return a zero-argument callable doing one native call.

        The callable holds the arrays (and, through this function, the code), so
        they outlive it even when the caller drops its own references.
        """
        cargs = tuple(self._pack(args))
        cfunc, fail = self._cfunc, self._raise

        def call():
            rc = cfunc(*cargs)
            if rc:
                fail(rc)
        call.arrays = args
        return call

    def _raise(self, rc):
        kind, msg = self.spec.errors.get(rc, ("assert", f"failed with error code {rc}"))
        if kind.startswith("packed:"):        # a call_packed function raised (tvmlab.runtime.packed)
            from .packed import take_error
            raise take_error(int(kind[7:]), self.name)
        cls = DeviceError if kind == "oom" else RuntimeArgError
        raise cls(f"{self.name}: {msg}")

    # ------------------------------------------------------------ argument checks
    def _static_pack(self, args):
        """The native arguments when every check passes, else None (``_pack`` then explains why)."""
        if len(args) != len(self._static) or self._not_runnable:
            return None
        out = []
        for a, (dtype, shape) in zip(args, self._static):
            if type(a) is not NDArray or a._dtype != dtype or a._arr.shape != shape \
                    or a._device.device_type != "cpu":
                return None
            out.append(a._ptr)
        for w in self._written:
            if out.count(out[w]) > 1:
                return None
        return out

    def _pack(self, args):
        """Check ``args`` against the spec; return the native argument list."""
        if self._not_runnable:
            raise DeviceError(f"{self.name}: {self._not_runnable}")
        return self._bind(args)[0]


def compiler_choice(fcompile=None, cc=None, options=None):
    """``(compiler name or None, [options])`` from export_library's ``fcompile`` / ``cc`` / ``options``."""
    if fcompile is not None:
        if cc is not None:
            raise RuntimeArgError("export_library: give the compiler as fcompile= or as cc=, not both")
        if isinstance(fcompile, str):
            cc = fcompile
        elif isinstance(getattr(fcompile, "cc", None), str):
            cc, options = fcompile.cc, list(getattr(fcompile, "options", ())) + list(options or ())
        else:
            raise RuntimeArgError(f"export_library: fcompile must be a compiler name or "
                                  f"tvmlab.contrib.cc.cross_compiler(name), got {fcompile!r}")
    if cc is not None and not isinstance(cc, str):
        raise RuntimeArgError(f"export_library: cc must be a compiler name such as 'aarch64-linux-gnu-gcc', "
                              f"got {cc!r}")
    if isinstance(options, str):
        options = options.split()
    return cc, list(options or ())


def _shape_text(dims):
    """A shape spec as Python prints tuples: (16,), (n, 4)."""
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _scalar(fn, argno, p, value):
    """Convert a Python scalar for a scalar parameter, checking kind and range."""
    if type(value) is int and p.kind == "scalar" and p.dtype == "int32" and -2**31 <= value < 2**31:
        return value
    dtype = p.dtype
    if dt.kind(dtype) == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise RuntimeArgError(f"{fn._where(argno, p)}: expected a {dtype} number, got {type(value).__name__}")
        return float(value)
    if isinstance(value, (float, np.floating)) or not isinstance(value, (int, np.integer, np.bool_)):
        raise RuntimeArgError(f"{fn._where(argno, p)}: expected an integer ({dtype}), got "
                              f"{type(value).__name__} {value!r}")
    v = int(value)
    lo, hi = int(dt.min_value(dtype)), int(dt.max_value(dtype))
    if not lo <= v <= hi:
        raise RuntimeArgError(f"{fn._where(argno, p)}: {v} does not fit in {dtype} [{lo}, {hi}]")
    return v


class Module:
    """Compiled functions of one build, plus their sources.

    ``sources`` maps a format name to text or to a zero-argument callable
    producing it (formats that are costly to produce are made on demand).
    """

    def __init__(self, type_key, functions, entry_name, sources, aliases=None, exporter=None, path=None):
        self.type_key = type_key
        self._functions = dict(functions)
        self.entry_name = entry_name
        self._sources = dict(sources)
        self._aliases = dict(aliases or {})
        self.imported_modules = []
        self._exporter = exporter    # writes object files and libraries (the llvm backend's)
        self.path = path             # the library a loaded module came from

    def _export_check(self, what):
        if self._exporter is None:
            where = f"loaded from {self.path}" if self.path else f"a {self.type_key} module"
            raise RuntimeArgError(f"{what}: this module ({where}) cannot be written out; only modules "
                                  "built for target 'llvm' in this process can")

    def save(self, file_name, fmt=""):
        """Write the compiled code: an object file (``.o``), a shared library (``.so``), LLVM IR
        (``.ll``) or assembly (``.s``); ``fmt`` overrides the file name's extension."""
        self._export_check("save")
        fmt = fmt or os.path.splitext(os.fspath(file_name))[1].lstrip(".")
        self._exporter.save(os.fspath(file_name), fmt)

    def export_library(self, file_name, fcompile=None, cc=None, options=None):
        """Write a shared library that ``tvmlab.runtime.load_module`` loads in any process.  ``cc`` (or
        ``fcompile``: a compiler name or ``contrib.cc.cross_compiler(...)``) names the C compiler that links
        it (for code built with ``-mtriple``, that architecture's; default ``<triple>-gcc``); ``options`` are
        extra linker arguments."""
        self._export_check("export_library")
        cc, options = compiler_choice(fcompile, cc, options)
        self._exporter.export_library(os.fspath(file_name), cc=cc, options=options)

    @property
    def function_names(self):
        return list(self._functions)

    def __contains__(self, name):
        return name in self._functions

    def __call__(self, *args):
        return self.get_function(self.entry_name)(*args)

    def get_function(self, name, query_imports=False):
        f = self._functions.get(name)
        if f is None:
            raise RuntimeArgError(f"module has no function {name!r}; functions: {', '.join(self._functions)}")
        return f

    __getitem__ = get_function

    def get_source(self, fmt=""):
        key = self._aliases.get(fmt, fmt)
        src = self._sources.get(key)
        if src is None:
            known = sorted(set(self._sources) | set(self._aliases) - {""})
            raise RuntimeArgError(f"get_source: unknown format {fmt!r} for a {self.type_key} module; "
                                  f"known: {', '.join(known)}")
        if callable(src):
            src = self._sources[key] = src()
        return src

    def time_evaluator(self, func_name, dev, number=10, repeat=1, min_repeat_ms=0):
        """A function that, called with the usual arguments, returns a BenchmarkResult."""
        fn = self.get_function(func_name)
        return make_time_evaluator(fn.prepare, dev, number, repeat, min_repeat_ms, name=func_name)

    def __repr__(self):
        return f"Module({self.type_key}, functions=[{', '.join(self._functions)}])"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)
