"""``create_shared``: link object files saved with ``Module.save("f.o")`` into a loadable library;
``cross_compiler``: the compiler that links code built for another CPU (``-mtriple``)."""
from __future__ import annotations

from ..codegen.llvm_export import link_shared
from ..errors import BuildError


class cross_compiler:   # noqa: N801  (TVM's name)
    """``export_library(path, fcompile=cc.cross_compiler("aarch64-linux-gnu-gcc"))``: link with that compiler
    (TVM's ``contrib.cc.cross_compiler``); ``options`` are extra arguments for every link."""

    def __init__(self, compile_func, options=None):
        if not isinstance(compile_func, str) or not compile_func:
            raise BuildError(f"cross_compiler: expected a compiler name such as 'aarch64-linux-gnu-gcc', "
                             f"got {compile_func!r}")
        self.cc = compile_func
        self.options = list(options or ())

    def __call__(self, output, objects, options=None):
        create_shared(output, objects, self.options + list(options or ()), cc=self.cc)

    def __repr__(self):
        return f"cross_compiler({self.cc!r})"


def create_shared(output, objects, options=None, cc=None):
    """Link ``objects`` (paths) into the shared library ``output`` (TVM's ``contrib.cc.create_shared``).

    ``options`` are extra linker arguments; ``cc`` names the compiler driver (default: $CC, cc, gcc,
    clang, then ld).  libm and, when the code has parallel loops, libgomp are linked in.
    """
    if isinstance(objects, (str, bytes)) or hasattr(objects, "__fspath__"):
        objects = [objects]
    link_shared(output, list(objects), options=list(options or ()), tool=cc)
