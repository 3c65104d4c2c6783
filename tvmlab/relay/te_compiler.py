"""``relay.backend.te_compiler``: a Relay function lowered to its TE schedule, as TVM spells it.

``te_compiler.get().lower(func, target)`` gives the ``CachedFunc`` that relay.build
compiles for one fused group: the TE ``inputs`` (one placeholder per parameter),
``outputs`` and the ``schedule`` the target's strategy picked, so a user can look
at (or lower by hand) what one operator group becomes.
"""
from __future__ import annotations

from .base import RelayError


class CachedFunc:
    """One lowered function: ``inputs``, ``outputs`` (TE tensors), ``schedule``, ``func_name``."""

    def __init__(self, func_name, inputs, outputs, schedule, target):
        self.func_name, self.inputs, self.outputs = func_name, inputs, outputs
        self.schedule, self.target = schedule, target

    def __repr__(self):
        return f"CachedFunc({self.func_name!r}, {len(self.inputs)} inputs, {len(self.outputs)} outputs)"


class TECompiler:
    """Lowers Relay functions (type-inferred, calls of operators on the parameters) to TE."""

    def lower(self, func, target="llvm", mod_name="default"):
        from ..codegen.registry import Target
        from .build_module import group_tensors
        from .expr import Function
        from .schedules import schedule_default, schedule_group
        if not isinstance(func, Function):
            raise RelayError(f"te_compiler.lower: expected a relay.Function, got {type(func).__name__}")
        if any(getattr(p, "_checked_type", None) is None for p in func.params):
            raise RelayError("te_compiler.lower: the function has no types yet; run relay.transform.InferType "
                             "on its module first")
        target = target if isinstance(target, Target) else Target(str(target))
        inputs, outs, anchor = group_tensors(func)
        try:
            s = schedule_group(outs, anchor, target)
        except Exception:   # noqa: BLE001  (as relay.build: fall back to the plain schedule)
            inputs, outs, anchor = group_tensors(func)
            s = schedule_default(outs, target, False)
        return CachedFunc(f"{mod_name}_main", inputs, outs, s, target)


_COMPILER = TECompiler()


def get():
    """The process-wide TE compiler."""
    return _COMPILER
