"""Element-wise addition: the compute and a bandwidth-bound CPU schedule."""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..errors import ScheduleError

UNROLL = 4      # vector registers per loop step
TASK = 1 << 16  # elements per parallel task: large enough that launching it costs little


def add(A, B, name="C"):
    """``A + B`` for two tensors of one shape and dtype."""
    if len(A.shape) != len(B.shape) or A.dtype != B.dtype:
        raise ScheduleError(f"add needs tensors of one shape and dtype, got {A.dtype}{tuple(A.shape)} "
                            f"and {B.dtype}{tuple(B.shape)}")
    return te.compute(A.shape, lambda *i: A[i] + B[i], name=name, tag="elemwise")


def schedule_elementwise(C, target="llvm"):
    """Flatten, split into parallel tasks, and vectorise the inside of each task."""
    if str(target).split()[0] != "llvm":
        raise ScheduleError(f"schedule_elementwise has a schedule for target 'llvm', got {target!r}")
    s = te.create_schedule(C.op)
    axes = list(s[C].op.axis)
    x = s[C].fuse(*axes) if len(axes) > 1 else axes[0]
    xo, xi = s[C].split(x, factor=TASK)
    lanes = vector_registers(target).lanes(C.dtype)
    xio, xii = s[C].split(xi, factor=lanes * UNROLL)
    xiio, xiii = s[C].split(xii, factor=lanes)
    s[C].parallel(xo)
    s[C].unroll(xiio)
    s[C].vectorize(xiii)
    return s
