"""``tvm.runtime.convert``: Python values as IR values, as TVM's FFI converts them."""
from __future__ import annotations

from ..errors import DSLError
from ..ir import expr as E
from ..ir import op as _op


def convert(value):
    """Numbers -> IntImm/FloatImm, strings -> StringImm, lists/tuples/dicts element-wise.

    IR objects (expressions, tensors, iter vars, functions) are returned as they are.
    """
    if isinstance(value, str):
        return E.StringImm(value)
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    if value is None or callable(value) and not isinstance(value, E.ExprOp):
        return value
    try:
        return _op.convert(value)
    except DSLError:
        return value   # an IR object that is not an expression (a Buffer, a PrimFunc, ...)


const = _op.const
