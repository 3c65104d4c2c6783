"""Small helpers shared by the operator definitions."""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir import expr as E


def const_int(x):
    """The value of a constant dimension (int or IntImm), else None."""
    if isinstance(x, E.IntImm):
        return x.value
    return x if isinstance(x, int) else None


def find_stage_input(out, suffix):
    """The input tensor of ``out``'s operation whose name ends with ``suffix``."""
    for t in out.op.input_tensors:
        if t.op.name.endswith(suffix):
            return t
    raise ScheduleError(f"{out.op.name} reads no tensor named '*{suffix}'; build it with the matching topi compute")
