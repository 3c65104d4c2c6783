"""Ahead-of-time output of an LLVM build: object files and shared libraries that carry their spec.

``mod.save("f.o")`` writes an ELF object and ``mod.export_library("f.so")``
links one into a shared library with the system's C compiler (or ``ld``).
Both carry a JSON description of every function (parameters, shapes with
symbolic dims, error codes) and of the CPU the code was built for, returned
by the function ``__tvmlab_metadata``: ``tvmlab.runtime.load_module`` reads it
and checks arguments exactly as for a module built in this process.  Code
built for another architecture (``-mtriple``) is linked by that
architecture's C compiler: ``cc=`` names it, else ``<triple>-gcc`` is used
when it is on PATH.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from ..errors import BuildError
from ..runtime import llvm_jit
from ..runtime.library import FORMAT_VERSION, METADATA_SYMBOL


def metadata_ir(meta):
    """LLVM IR defining ``ptr @__tvmlab_metadata()``, which returns ``meta`` as NUL-terminated JSON."""
    data = json.dumps(meta, separators=(",", ":")).encode() + b"\0"
    text = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in data)
    return (f'@{METADATA_SYMBOL}.json = private unnamed_addr constant [{len(data)} x i8] c"{text}", align 1\n'
            f"define ptr @{METADATA_SYMBOL}() {{\n  ret ptr @{METADATA_SYMBOL}.json\n}}\n")


def _linker(tool=None, triple=None, compiler=False):
    """The C compiler (or, unless ``compiler``, linker) to link with: ``tool``, else for this machine $CC, cc,
    gcc, clang (then ld), for another architecture ``<triple>-gcc``."""
    if tool:
        if not shutil.which(tool):
            raise BuildError(f"create_shared: compiler {tool!r} not found on PATH")
        return shutil.which(tool)
    if not llvm_jit.is_host_triple(triple):
        found = shutil.which(f"{triple}-gcc")
        if found is None:
            raise BuildError(f"this code is built for {triple}; linking it needs that architecture's C compiler: "
                             f"pass cc='{triple}-gcc' (or another cross compiler); {triple}-gcc is not on PATH "
                             f"(on Debian: apt-get install gcc-{llvm_jit.triple_arch(triple)}-linux-gnu)")
        return found
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None if compiler else shutil.which("ld")


def uses_openmp(obj):
    """Whether ELF object bytes ``obj`` call into libgomp (their parallel loops)."""
    return any(s.startswith(("GOMP_", "omp_")) for s in llvm_jit.undefined_symbols(obj))


OPENMP_LIB = "-l:libgomp.so.1"


def run_tool(cmd, what):
    """Run a compiler or linker command; BuildError with its output when it fails."""
    run = subprocess.run([os.fspath(c) for c in cmd], capture_output=True, text=True)
    if run.returncode != 0:
        raise BuildError(f"{what} failed ({' '.join(map(os.fspath, cmd))}):\n"
                         f"{run.stderr.strip() or run.stdout.strip()}")


def link_shared(output, objects, options=(), tool=None, triple=None):
    """Link ELF ``objects`` (and C or assembly sources, when ``tool`` is a C compiler) into the shared
    library ``output``, with libm and, when used, libgomp."""
    for o in objects:
        if not os.path.isfile(o):
            raise BuildError(f"create_shared: no object file {o!r}")
    tool = _linker(tool, triple)
    if tool is None:
        raise BuildError("linking a shared library needs a C compiler or linker on PATH (cc, gcc, clang or ld); "
                         "none was found (on Debian: apt-get install gcc)")
    libs = ["-lm"]
    for o in objects:
        if os.fspath(o).endswith((".o", ".obj")):
            with open(o, "rb") as f:
                if uses_openmp(f.read()) and OPENMP_LIB not in libs:
                    libs.append(OPENMP_LIB)
    run_tool([tool, "-shared", "-o", output, *objects, *libs, *options], f"linking {output}")


class LLVMExporter:
    """What ``Module.save`` / ``export_library`` need of one LLVM build: its IR, CPU and specs."""

    def __init__(self, ll_text, cpu, features, opt, specs, entry, triple=None):
        self.ll_text, self.cpu, self.features, self.opt = ll_text, cpu, features, opt
        self.specs, self.entry = specs, entry
        self.triple = triple or llvm.get_process_triple()

    def metadata(self):
        return {"version": FORMAT_VERSION, "entry": self.entry, "cpu": self.cpu, "features": self.features,
                "triple": self.triple, "functions": [s.to_json() for s in self.specs]}

    def target_machine(self):
        return llvm_jit.create_target_machine(self.cpu, self.features, self.opt, reloc="pic", triple=self.triple)

    def object_code(self, extra_ir=None, metadata=None, internal=()):
        """The module as a position-independent ELF object, with its metadata (``metadata`` replaces
        ``self.metadata()``).  ``extra_ir``: LLVM IR linked in (it may call the module's functions);
        ``internal``: functions that get internal linkage (called only from inside the object)."""
        if "@tvmlab_packed_call(" in self.ll_text or '@"tvmlab_packed_call"' in self.ll_text:
            raise BuildError("this module calls registered Python functions (tir.call_packed), which live in this "
                             "process only; it cannot be written out as an object or library (save it as 'll')")
        meta = self.metadata() if metadata is None else metadata
        try:
            ref = llvm.parse_assembly(self.ll_text + "\n" + metadata_ir(meta))
            ref.verify()
            if extra_ir:
                other = llvm.parse_assembly(extra_ir)
                other.verify()
                other.triple, other.data_layout = ref.triple, ref.data_layout
                ref.link_in(other)
        except RuntimeError as e:
            raise BuildError(f"internal error: the module with its metadata is invalid LLVM IR: {e}") from None
        for name in internal:
            ref.get_function(name).linkage = "internal"
        return self.target_machine().emit_object(ref)

    def save(self, path, fmt):
        """Write ``path``: "o" (object), "ll" (LLVM IR), "s" (assembly) or "so" (shared library)."""
        if fmt == "so":
            return self.export_library(path)
        if fmt in ("o", "obj"):
            data = self.object_code()
            with open(path, "wb") as f:
                f.write(data)
            return
        if fmt == "ll":
            text = self.ll_text
        elif fmt in ("s", "asm"):
            text = self.target_machine().emit_assembly(llvm.parse_assembly(self.ll_text))
        else:
            raise BuildError(f"save: unknown format {fmt!r} for an llvm module; use 'o', 'so', 'll' or 's' "
                             "(or a path ending in .o, .so, .ll or .s)")
        with open(path, "w") as f:
            f.write(text)

    def export_library(self, path, cc=None, options=()):
        with tempfile.TemporaryDirectory(prefix="tvmlab-export-") as tmp:
            obj = os.path.join(tmp, "lib.o")
            with open(obj, "wb") as f:
                f.write(self.object_code())
            link_shared(path, [obj], options, tool=cc, triple=self.triple)
