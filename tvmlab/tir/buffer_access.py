"""TVM's ``tir.BufferStore`` / ``tir.BufferLoad``, built from a Buffer and its indices.

tvmlab's AST3 keeps flat ``Store`` / ``Load`` nodes (one flat index; ``.indices`` gives it
as a tuple), so these names build those nodes and ``isinstance`` checks against them see
every flat store and load, whoever made it.
"""
from __future__ import annotations

from ..errors import DSLError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.buffer import flat_index
from ..ir.expr import Load
from ..ir.function import Buffer
from ..ir.stmt import Store


class _NodeName(type):
    """A class whose instances are the AST3 node it names."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._node)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls._node)


def _flat(what, buffer, indices):
    if not isinstance(buffer, Buffer):
        raise DSLError(f"{what}: expected a Buffer (tvm.tir.decl_buffer) first, got "
                       f"{type(buffer).__name__}")
    if not isinstance(indices, (list, tuple)):
        raise DSLError(f"{what}: expected a list of indices, got {type(indices).__name__}")
    return flat_index(buffer, [_op.convert(i) for i in indices])


class BufferStore(metaclass=_NodeName):
    """``buffer[indices] = value`` as a flat ``Store``."""
    _node = Store

    def __new__(cls, buffer, value, indices, predicate=None):
        index = _flat("BufferStore", buffer, indices)
        value = _op.convert(value)
        want = dt.with_lanes(buffer.dtype, dt.lanes(value.dtype))
        if value.dtype != want:
            raise DSLError(f"BufferStore into {buffer.name}: value has type {value.dtype}, "
                           f"expected {want}")
        return Store(buffer.data, value, index, predicate)


class BufferLoad(metaclass=_NodeName):
    """``buffer[indices]`` as a flat ``Load``."""
    _node = Load

    def __new__(cls, buffer, indices, predicate=None):
        index = _flat("BufferLoad", buffer, indices)
        return Load(dt.with_lanes(buffer.dtype, dt.lanes(index.dtype)), buffer.data, index, predicate)
