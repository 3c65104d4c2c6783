"""``create_shared``: link object files saved with ``Module.save("f.o")`` into a loadable library."""
from __future__ import annotations

from ..codegen.llvm_export import link_shared


def create_shared(output, objects, options=None, cc=None):
    """Link ``objects`` (paths) into the shared library ``output`` (TVM's ``contrib.cc.create_shared``).

    ``options`` are extra linker arguments; ``cc`` names the compiler driver (default: $CC, cc, gcc,
    clang, then ld).  libm and, when the code has parallel loops, libgomp are linked in.
    """
    if isinstance(objects, (str, bytes)) or hasattr(objects, "__fspath__"):
        objects = [objects]
    link_shared(output, list(objects), options=list(options or ()), tool=cc)
