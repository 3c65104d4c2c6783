"""What every backend asks of a lowered module: its functions, and which buffers they write."""
from __future__ import annotations

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.function import IRModule, PrimFunc
from ..ir.functor import IRVisitor


def functions_of(mod, builder):
    """``{name: PrimFunc}`` of ``mod`` (an IRModule or one PrimFunc); ``builder`` names the caller."""
    if isinstance(mod, PrimFunc):
        return {mod.name: mod}
    if isinstance(mod, IRModule):
        if not mod.functions:
            raise BuildError("cannot build an empty IRModule")
        return mod.functions
    raise BuildError(f"{builder} expects an IRModule or a PrimFunc, got {type(mod).__name__}")


class _Writes(IRVisitor):
    def __init__(self):
        super().__init__()
        self.vars = set()

    def visit_Store(self, s):
        self.vars.add(s.buffer_var)
        self.generic_visit(s)

    def visit_Call(self, c):
        if c.op in ("call_extern", "call_pure_extern"):
            self.vars.update(a for a in c.args if isinstance(a, E.Var) and a.dtype == "handle")
        self.generic_visit(c)


def written_buffers(stmt):
    """Buffer variables ``stmt`` may write: stored to, or handed to an external call.

    The runtime checks that no output aliases an input, and device backends
    copy back only what a kernel writes.
    """
    w = _Writes()
    w.visit(stmt)
    return w.vars


class _VectorAllocs(IRVisitor):
    def __init__(self):
        super().__init__()
        self.found = []

    def visit_Allocate(self, s):
        if dt.lanes(s.dtype) != 1:
            self.found.append((s.buffer_var.name, s.dtype))
        self.generic_visit(s)


def refuse_vector_elements(funcs, target):
    """Raise BuildError when a function has a tensor of vector elements ("float32x2"): only the
    llvm backend lays them out (lanes side by side, indices counting scalars)."""
    for f in funcs:
        found = [(b.name, b.dtype) for b in f.buffer_map.values() if dt.lanes(b.dtype) != 1]
        allocs = _VectorAllocs()
        allocs.visit(f.body)
        for name, dtype in found + allocs.found:
            raise BuildError(f"{f.name}: tensor {name} has vector elements ({dtype}), which the {target} "
                             f"target does not support; build for llvm, or use a scalar dtype "
                             f"({dt.element_of(dtype)}) with one more dimension of {dt.lanes(dtype)}")
