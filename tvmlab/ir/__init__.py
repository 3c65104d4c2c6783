"""The IR: dtypes, expression and statement nodes, tensors, functors, printer."""
from . import dtype  # noqa: F401
from .expr import *  # noqa: F401,F403
from .function import Buffer, GlobalVar, IRModule, PrimFunc  # noqa: F401
from .stmt import *  # noqa: F401,F403
from .tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Tensor  # noqa: F401
from .tensor import Range as _Range
from .serialize import load_json, save_json  # noqa: F401
from .structural import assert_structural_equal, structural_equal, structural_hash  # noqa: F401
from .op import register_op_attr  # noqa: F401


class _RangeType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _Range)


class Range(metaclass=_RangeType):
    """TVM's ``tvm.ir.Range(begin, end)`` (or ``Range(end)``): [begin, end) as tvmlab's (min, extent) Range."""

    def __new__(cls, begin, end=None, span=None):
        from . import op as _op
        if end is None:
            begin, end = 0, begin
        begin, end = _op.convert(begin), _op.convert(end)
        return _Range(begin, _op.sub(end, begin))

    from_min_extent = staticmethod(_Range.from_min_extent)
