"""``decl_buffer``: a Buffer that IR written by hand (ir_builder, extern stages) indexes directly.

Extern stages get one Buffer per input and output; hand-written IR reads and
writes them at flat indices (``vload`` / ``vstore``, ``ir_builder.buffer_ptr``)
and storage flattening later points each at its tensor's memory.
"""
from __future__ import annotations

import numbers

from ..errors import DSLError
from . import dtype as dt
from . import op as _op
from .expr import Expr, Var
from .function import Buffer


def _index_list(indices):
    indices = tuple(indices) if isinstance(indices, (list, tuple)) else (indices,)
    out = []
    for k, x in enumerate(indices):
        e = _op.convert(x)
        if not dt.is_int(e.dtype) or dt.lanes(e.dtype) != 1:
            raise DSLError(f"buffer index {k} must be a scalar integer, got {e} of type {e.dtype}")
        out.append(e)
    return out


def flat_index(buf, indices):
    """The flat element index of ``indices`` into ``buf`` (one per dimension), elem_offset included;
    a single index into a buffer of higher rank is already flat (TVM's ``ptr[i]``)."""
    indices = _index_list(indices)
    if len(indices) == 1 and len(buf.shape) != 1:
        return _op.add(buf.elem_offset, indices[0])
    if len(indices) != len(buf.shape):
        raise DSLError(f"buffer {buf.name} has {len(buf.shape)} dimensions, accessed with {len(indices)} indices")
    return buf._flat(indices)


def decl_buffer(shape, dtype="float32", name="buffer", data=None, strides=None, elem_offset=None,
                scope="", data_alignment=-1, offset_factor=0, buffer_type="", axis_separators=None):
    """Declare a buffer of ``shape`` and ``dtype`` (TVM's ``tvm.tir.decl_buffer``).

    ``data`` is the pointer Var (made when omitted), ``strides`` the element
    strides (row-major when omitted), ``elem_offset`` where element 0 lives.
    """
    if isinstance(shape, (numbers.Integral, Expr)):
        shape = (shape,)
    try:
        shape = tuple(_op.convert(s) for s in shape)
    except (TypeError, DSLError):
        raise DSLError(f"decl_buffer {name!r}: shape must be a tuple of integers, got {shape!r}") from None
    for k, s in enumerate(shape):
        if not dt.is_int(s.dtype):
            raise DSLError(f"decl_buffer {name!r}: shape[{k}] must be an integer, got {s} ({s.dtype})")
    try:
        dtype = dt.canonical(dtype)
    except Exception:
        raise DSLError(f"decl_buffer {name!r}: unknown dtype {dtype!r}") from None
    if strides is not None:
        strides = tuple(_op.convert(s) for s in strides)
        if len(strides) != len(shape):
            raise DSLError(f"decl_buffer {name!r}: {len(strides)} strides for {len(shape)} dimensions")
    if data is not None and not (isinstance(data, Var) and dt.is_handle(data.dtype)):
        raise DSLError(f"decl_buffer {name!r}: data must be a handle Var (te.var(name, 'handle')), got {data!r}")
    if axis_separators:
        raise DSLError(f"decl_buffer {name!r}: axis_separators are not supported")
    if elem_offset is None and offset_factor:
        elem_offset = Var(f"{name}_elem_offset", "int32")
    return Buffer(name, shape, dtype, data, strides, scope or "global",
                  None if elem_offset is None else _op.convert(elem_offset), offset_factor)


__all__ = ["decl_buffer", "flat_index"]
