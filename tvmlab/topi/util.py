"""Small helpers shared by the operator definitions."""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..errors import ScheduleError
from ..ir import expr as E

VECTORS = 2     # vector registers across a packed block: the width of a register tile


def vector_block(dtype, target="llvm"):
    """Elements of ``dtype`` in ``VECTORS`` vector registers of ``target`` (16 float32 with AVX2, 32 with AVX-512)."""
    return VECTORS * vector_registers(target).lanes(dtype)


def pack_blocks(shape, value, limit, dtype, name):
    """A packing stage of ``shape`` whose first axis counts blocks of ``shape[-1]`` along a dimension of
    size ``limit``: ``value(*index)`` where ``index[0] * block + index[-1] < limit``, zero past the end."""
    block = shape[-1]
    if const_int(limit) is not None and const_int(limit) % block == 0:
        return te.compute(shape, value, name=name)
    zero = E.FloatImm(dtype, 0.0) if "float" in dtype else E.IntImm(dtype, 0)
    return te.compute(shape, lambda *i: te.if_then_else(i[0] * block + i[-1] < limit, value(*i), zero), name=name)


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


def check_options(op, **options):
    """Raise ScheduleError unless every option given (not None) is an int >= 1."""
    for name, value in options.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ScheduleError(f"{op}: {name} must be an int >= 1 (or None for the default), got {value!r}")
