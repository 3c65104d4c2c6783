"""The CPU execution engine: llvmlite's MCJIT, with libm and libgomp resolvable.

``initialize()`` sets LLVM up once for the host (llvmlite 0.50 forbids
``llvm.initialize()``; only the native target and asm printer are needed) and
loads libgomp into the process so that ``GOMP_parallel`` in generated code
resolves.  ``JitEngine`` owns one compiled LLVM module and keeps its code alive.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

import llvmlite.binding as llvm

from ..errors import BuildError

_STATE = {"init": False, "gomp": None}


def initialize():
    """Initialise LLVM for the host once and load libgomp (returns its path or None)."""
    if not _STATE["init"]:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _STATE["init"] = True
        for name in (ctypes.util.find_library("gomp"), "libgomp.so.1"):
            if not name:
                continue
            try:
                llvm.load_library_permanently(name)
            except RuntimeError:
                continue
            _STATE["gomp"] = name
            break
    return _STATE["gomp"]


def has_openmp():
    """True when libgomp is loaded, i.e. parallel loops can run on threads."""
    return initialize() is not None


@functools.lru_cache(maxsize=None)
def host_cpu():
    """(cpu name, feature string) of the machine we run on."""
    initialize()
    name = llvm.get_host_cpu_name()
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:
        features = ""
    return name, features


@functools.lru_cache(maxsize=None)
def host_feature_set():
    """Names of the CPU features the host has (without the leading '+')."""
    _, features = host_cpu()
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


def create_target_machine(cpu, features, opt=3, jit=False):
    """A TargetMachine for the host triple (a fresh one: MCJIT takes ownership of its own)."""
    initialize()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=jit,
                                        reloc="default", codemodel="jitdefault")


class JitEngine:
    """One optimised LLVM module compiled to machine code in this process."""

    def __init__(self, module_ref, cpu, features, opt=3):
        initialize()
        try:
            self._engine = llvm.create_mcjit_compiler(module_ref, create_target_machine(cpu, features, opt, jit=True))
            self._engine.finalize_object()
        except RuntimeError as e:
            raise BuildError(f"JIT compilation failed: {e}") from None

    def address(self, name):
        """Native address of function ``name`` (0 when absent)."""
        return self._engine.get_function_address(name)
