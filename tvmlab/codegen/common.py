"""What every backend asks of a lowered module: its functions, and which buffers they write."""
from __future__ import annotations

from ..errors import BuildError
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
