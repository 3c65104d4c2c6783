"""The CPU execution engine: llvmlite's MCJIT, with libm and libgomp resolvable.

``initialize()`` sets LLVM up once for the host (llvmlite 0.50 forbids
``llvm.initialize()``; only the native target and asm printer are needed) and
loads libgomp into the process so that ``GOMP_parallel`` in generated code
resolves.  Code for another CPU (``-mtriple=aarch64-linux-gnu``) needs LLVM's
other back ends, set up the first time such a triple is asked for.
``JitEngine`` owns one compiled LLVM module and keeps its code alive.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import struct

import llvmlite.binding as llvm

from ..errors import BuildError

_STATE = {"init": False, "gomp": None, "threads": {}, "all_targets": False}


def initialize():
    """Initialise LLVM for the host once and load libgomp (returns its path or None)."""
    if not _STATE["init"]:
        chosen = thread_environment()
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _STATE["init"] = True
        saved = {k: os.environ.get(k) for k in chosen}
        os.environ.update(chosen)          # libgomp reads its settings once, when it loads
        try:
            for name in (ctypes.util.find_library("gomp"), "libgomp.so.1"):
                if not name:
                    continue
                try:
                    llvm.load_library_permanently(name)
                except RuntimeError:
                    continue
                _STATE["gomp"] = name
                break
        finally:
            for k, v in saved.items():     # ... and nothing else in the process sees them
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        _STATE["threads"] = chosen
    return _STATE["gomp"]


SPINCOUNT = "5000"


def thread_environment():
    """The variables tvmlab hands libgomp as it loads it (they are removed from ``os.environ`` again,
    so child processes and other libraries see the user's environment unchanged):

    - ``OMP_NUM_THREADS`` from ``TVM_NUM_THREADS`` when that is set: as in TVM, it wins over
      ``OMP_NUM_THREADS`` and sets how many threads a parallel loop uses.
    - ``GOMP_SPINCOUNT=5000`` unless the user chose (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``):
      libgomp's idle threads spin ~300000 pauses (milliseconds) before sleeping; on a machine where
      another process holds a core, every parallel region then waits for a spinning thread's time
      slice (a 0.1 ms model ran at 5-50 ms).  5000 pauses (about 0.1 ms) stay awake between the
      kernels of one run and between runs back to back: with 1000 (about 25 us) the workers slept
      between runs, and on a virtual machine a sleeping vCPU took about 0.1 ms to wake, which made
      a 0.02 ms model take 0.12 ms in 40% of stretches.

    Neither applies when another library (xgboost, torch) loaded libgomp first."""
    chosen = {}
    n = os.environ.get("TVM_NUM_THREADS", "").strip()
    if n:
        if not (n.isdigit() and int(n) > 0):
            raise BuildError(f"TVM_NUM_THREADS must be a positive number of threads, got {n!r}")
        chosen["OMP_NUM_THREADS"] = n
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        chosen["GOMP_SPINCOUNT"] = SPINCOUNT
    return chosen


def thread_settings():
    """What tvmlab gave libgomp when it loaded it ({} before the first build)."""
    return dict(_STATE["threads"])


def num_threads():
    """Threads a parallel loop uses: ``TVM_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the CPUs
    this process may run on."""
    for var in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
        env = os.environ.get(var, "").split(",")[0].strip()
        if env.isdigit() and int(env) > 0:
            return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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


PORTABLE_CPUS = ("generic", "x86-64")


_ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64", "x86-64": "x86_64"}


def triple_arch(triple):
    """The architecture a target triple names ("aarch64" for "aarch64-linux-gnu")."""
    arch = triple.split("-")[0]
    return _ARCH_ALIASES.get(arch, arch)


def _triple_os(triple):
    """The system a triple names, past its vendor ("linux" for "x86_64-unknown-linux-gnu")."""
    return next((w for w in triple.split("-")[1:] if w not in ("unknown", "pc", "none")), "")


def is_host_triple(triple):
    """Whether code for ``triple`` runs here: the same architecture and system as this process."""
    if triple is None:
        return True
    host = llvm.get_process_triple()
    return triple_arch(triple) == triple_arch(host) and _triple_os(triple) == _triple_os(host)


def check_triple(triple):
    """``triple`` as the code generator takes it: this process's own when it names this machine, else the
    triple itself once LLVM knows a back end for it (BuildError if none)."""
    if is_host_triple(triple):
        return llvm.get_process_triple()
    initialize()
    if not _STATE["all_targets"]:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _STATE["all_targets"] = True
    try:
        llvm.Target.from_triple(triple)
    except RuntimeError as e:
        raise BuildError(f"-mtriple={triple}: LLVM has no back end for it ({str(e).strip()}); "
                         "try aarch64-linux-gnu, armv7a-linux-gnueabihf or riscv64-linux-gnu") from None
    return triple


def not_runnable(cpu, features, triple=None):
    """Why code built for ``cpu`` with ``features`` (LLVM's "+f,-g" list) cannot run on this
    machine, or None: code for another architecture cannot, another named CPU may use
    instructions this one lacks, and so may an added feature it does not have."""
    if not is_host_triple(triple):
        arch = triple_arch(triple)
        return (f"this code was built for {triple} ({arch}), but this machine is {llvm.get_process_triple()}; "
                f"export it with export_library(path, cc=...) and run it where the CPU is {arch} (or under "
                f"qemu-{arch})")
    host, _ = host_cpu()
    if cpu not in (host, "native", *PORTABLE_CPUS):
        return (f"this code was built for -mcpu={cpu} but this machine's CPU is {host}; it may use "
                "instructions this CPU lacks (build with target 'llvm' to run it here)")
    missing = [f[1:] for f in (features or "").split(",") if f.startswith("+") and f[1:] not in host_feature_set()]
    if missing:
        return f"this code was built with +{', +'.join(missing)}, which this CPU ({host}) lacks"
    return None


def create_target_machine(cpu, features, opt=3, jit=False, reloc="default", triple=None):
    """A TargetMachine for ``triple`` (default: the host's; a fresh one: MCJIT takes ownership of its own);
    ``reloc="pic"`` for code that goes into a shared library."""
    initialize()
    target = llvm.Target.from_triple(check_triple(triple))
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=jit, reloc=reloc,
                                        codemodel="jitdefault" if reloc == "default" else "default")


def undefined_symbols(obj):
    """Names of the symbols a little-endian ELF object file (32 or 64 bit) uses but does not define
    (from .symtab and .strtab)."""
    sections = {}
    for sec in llvm.ObjectFileRef.from_data(obj).sections():
        name = sec.name()
        name = name.decode() if isinstance(name, bytes) else name
        if name in (".symtab", ".strtab"):
            sections[name] = sec.data()
    symtab, strtab = sections.get(".symtab", b""), sections.get(".strtab", b"")
    size, shndx_at = (16, 14) if obj[4:5] == b"\x01" else (24, 6)    # ELFCLASS32 or ELFCLASS64
    names = []
    for off in range(size, len(symtab) - size + 1, size):   # entry 0 is the null symbol
        st_name = struct.unpack_from("<I", symtab, off)[0]
        shndx = struct.unpack_from("<H", symtab, off + shndx_at)[0]
        if shndx == 0 and st_name:
            names.append(strtab[st_name:strtab.index(b"\0", st_name)].decode())
    return names


class JitEngine:
    """One optimised LLVM module compiled to machine code in this process.

    MCJIT links a call to a symbol it cannot find (a compiler-rt helper such as
    ``__truncdfhf2`` that LLVM's backend may emit) to address 0, so calling it
    would crash the process; every symbol the object needs is checked here and a
    missing one fails the build instead.
    """

    def __init__(self, module_ref, cpu, features, opt=3):
        initialize()
        objects = []
        try:
            self._engine = llvm.create_mcjit_compiler(module_ref, create_target_machine(cpu, features, opt, jit=True))
            self._engine.set_object_cache(lambda _module, buf: objects.append(buf))
            self._engine.finalize_object()
        except RuntimeError as e:
            raise BuildError(f"JIT compilation failed: {e}") from None
        missing = sorted({n for obj in objects for n in undefined_symbols(obj)
                          if not llvm.address_of_symbol(n)})
        if missing:
            self._engine = None
            raise BuildError(f"JIT compilation failed: the machine code calls {', '.join(missing)}, which this "
                             "process does not provide (a compiler runtime helper LLVM emitted for an operation "
                             "this CPU lacks)")

    def __del__(self):
        # the blocks the module's workspace pool keeps (codegen.llvm_workspace) go back to libc with it
        engine = getattr(self, "_engine", None)
        if engine is None:
            return
        try:
            addr = engine.get_function_address("__tvmlab_ws_release")
            if addr:
                ctypes.CFUNCTYPE(None)(addr)()
        except Exception:       # interpreter shutdown: ctypes or llvmlite already gone
            pass

    def address(self, name):
        """Native address of function ``name`` (0 when absent)."""
        return self._engine.get_function_address(name)
