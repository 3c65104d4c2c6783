"""Ahead-of-time output of an LLVM build: object files and shared libraries that carry their spec.

``mod.save("f.o")`` writes an ELF object and ``mod.export_library("f.so")``
links one into a shared library with the system's C compiler (or ``ld``).
Both carry a JSON description of every function (parameters, shapes with
symbolic dims, error codes) and of the CPU the code was built for, returned
by the function ``__tvmlab_metadata``: ``tvmlab.runtime.load_module`` reads it
and checks arguments exactly as for a module built in this process.
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


def _linker(tool=None):
    if tool:
        if not shutil.which(tool):
            raise BuildError(f"create_shared: compiler {tool!r} not found on PATH")
        return shutil.which(tool)
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return shutil.which("ld")


def link_shared(output, objects, options=(), tool=None):
    """Link ELF ``objects`` into the shared library ``output``, with libm and, when used, libgomp."""
    for o in objects:
        if not os.path.isfile(o):
            raise BuildError(f"create_shared: no object file {o!r}")
    tool = _linker(tool)
    if tool is None:
        raise BuildError("linking a shared library needs a C compiler or linker on PATH (cc, gcc, clang or ld); "
                         "none was found (on Debian: apt-get install gcc)")
    libs = ["-lm"]
    for o in objects:
        with open(o, "rb") as f:
            undefined = llvm_jit.undefined_symbols(f.read())
        if any(s.startswith(("GOMP_", "omp_")) for s in undefined) and "-l:libgomp.so.1" not in libs:
            libs.append("-l:libgomp.so.1")
    cmd = [tool, "-shared", "-o", os.fspath(output), *map(os.fspath, objects), *libs, *options]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise BuildError(f"linking {output} failed ({' '.join(cmd)}):\n{run.stderr.strip() or run.stdout.strip()}")


class LLVMExporter:
    """What ``Module.save`` / ``export_library`` need of one LLVM build: its IR, CPU and specs."""

    def __init__(self, ll_text, cpu, features, opt, specs, entry):
        self.ll_text, self.cpu, self.features, self.opt = ll_text, cpu, features, opt
        self.specs, self.entry = specs, entry

    def metadata(self):
        return {"version": FORMAT_VERSION, "entry": self.entry, "cpu": self.cpu, "features": self.features,
                "functions": [s.to_json() for s in self.specs]}

    def object_code(self):
        """The module as a position-independent ELF object, with its metadata."""
        if "@tvmlab_packed_call(" in self.ll_text or '@"tvmlab_packed_call"' in self.ll_text:
            raise BuildError("this module calls registered Python functions (tir.call_packed), which live in this "
                             "process only; it cannot be written out as an object or library (save it as 'll')")
        try:
            ref = llvm.parse_assembly(self.ll_text + "\n" + metadata_ir(self.metadata()))
            ref.verify()
        except RuntimeError as e:
            raise BuildError(f"internal error: the module with its metadata is invalid LLVM IR: {e}") from None
        tm = llvm_jit.create_target_machine(self.cpu, self.features, self.opt, reloc="pic")
        return tm.emit_object(ref)

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
            tm = llvm_jit.create_target_machine(self.cpu, self.features, self.opt, reloc="pic")
            text = tm.emit_assembly(llvm.parse_assembly(self.ll_text))
        else:
            raise BuildError(f"save: unknown format {fmt!r} for an llvm module; use 'o', 'so', 'll' or 's' "
                             "(or a path ending in .o, .so, .ll or .s)")
        with open(path, "w") as f:
            f.write(text)

    def export_library(self, path):
        with tempfile.TemporaryDirectory(prefix="tvmlab-export-") as tmp:
            obj = os.path.join(tmp, "lib.o")
            with open(obj, "wb") as f:
                f.write(self.object_code())
            link_shared(path, [obj])
