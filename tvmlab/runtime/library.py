"""load_module: a shared library written by ``Module.export_library``, callable like the module it came from.

The library's ``__tvmlab_metadata()`` returns JSON describing each function
(see ``tvmlab.codegen.llvm_export``); the loaded functions check their
arguments against it before any native call, and refuse to run code built for
CPU features this machine lacks.  A library for another architecture is
refused before it is opened; an ahead-of-time model's library (its metadata
has an "aot" plan) loads as its factory.
"""
from __future__ import annotations

import ctypes
import json
import os

from ..errors import RuntimeArgError
from . import llvm_jit
from .module import FuncSpec, Function, Module

METADATA_SYMBOL = "__tvmlab_metadata"
FORMAT_VERSION = 1

# Symbols generated code may call (libm, libc): a function of that name gets the symbol ``tvmlab_fn_<name>``.
_LIBM = ("exp exp2 exp10 expm1 log log2 log10 log1p sqrt cbrt sin cos tan sinh cosh tanh asin acos atan "
         "asinh acosh atanh atan2 hypot erf erfc pow fmod floor ceil round roundeven trunc nearbyint rint "
         "fabs copysign nextafter ldexp frexp sincos fmin fmax fma").split()
LIBRARY_SYMBOLS = frozenset(_LIBM + [n + "f" for n in _LIBM] + "memcpy memmove memset bzero malloc calloc realloc "
                            "free aligned_alloc posix_memalign abort exit".split())
MANGLE_PREFIX = "tvmlab_fn_"


def function_symbol(name):
    """The native symbol of generated function ``name``: the name itself, unless that is a C library
    function the code may call (a function "floor" would capture the calls to libm's floor)."""
    return MANGLE_PREFIX + name if name in LIBRARY_SYMBOLS else name


_MACHINES = {3: "x86", 62: "x86_64", 40: "arm", 183: "aarch64", 243: "riscv", 8: "mips", 20: "ppc", 21: "ppc64",
             22: "s390x"}


def elf_machine(path):
    """The ELF ``e_machine`` of file ``path`` (62 for x86_64, 183 for aarch64), or None if it is no ELF file."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def _check_machine(path):
    mine, theirs = elf_machine("/proc/self/exe"), elf_machine(path)
    if mine is not None and theirs is not None and mine != theirs:
        name = lambda m: _MACHINES.get(m, f"ELF machine {m}")  # noqa: E731
        raise RuntimeArgError(f"load_module: {path!r} holds code for {name(theirs)}, but this machine is "
                              f"{name(mine)}; run it where the CPU is {name(theirs)} (from C, with its header; "
                              f"or under qemu-{name(theirs)})")


def load_module(path, fmt=""):
    """Load a shared library made by ``export_library`` (or ``contrib.cc.create_shared`` of saved objects)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise RuntimeArgError(f"load_module: no file {path!r}")
    if path.endswith((".o", ".obj")) or fmt in ("o", "obj"):
        raise RuntimeArgError(f"load_module: {path!r} is an object file; link it first with "
                              "tvmlab.contrib.cc.create_shared(out_so, [object]) and load the .so")
    _check_machine(path)
    llvm_jit.initialize()          # libgomp in the process, for parallel loops
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as e:
        raise RuntimeArgError(f"load_module: cannot load {path!r}: {e}") from None
    try:
        get = getattr(lib, METADATA_SYMBOL)
    except AttributeError:
        raise RuntimeArgError(f"load_module: {path!r} is not a library exported by tvmlab "
                              f"(it has no {METADATA_SYMBOL})") from None
    get.restype = ctypes.c_char_p
    get.argtypes = []
    try:
        meta = json.loads(get().decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise RuntimeArgError(f"load_module: the metadata of {path!r} is unreadable: {e}") from None
    if meta.get("version") != FORMAT_VERSION:
        raise RuntimeArgError(f"load_module: {path!r} has metadata version {meta.get('version')!r}; this tvmlab "
                              f"reads version {FORMAT_VERSION} (export it again)")
    reason = llvm_jit.not_runnable(meta["cpu"], meta["features"], meta.get("triple"))
    functions = {}
    for f in meta["functions"]:
        spec = FuncSpec.from_json(f)
        address = ctypes.cast(lib[function_symbol(spec.name)], ctypes.c_void_p).value
        functions[spec.name] = Function(spec, address, lib, reason)
    module = Module("llvm", functions, meta["entry"], {}, path=path)
    if "aot" in meta:                               # a whole model, compiled ahead of time
        if reason:
            raise RuntimeArgError(f"load_module: {path!r}: {reason}")
        from ..contrib.aot_executor import load_aot
        return load_aot(module, meta["aot"], lib)
    if os.path.isfile(path + ".graph.json"):     # a whole model: graph and params beside the library
        from ..contrib.graph_executor import load_factory
        return load_factory(module, path)
    return module
