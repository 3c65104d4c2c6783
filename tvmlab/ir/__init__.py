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


class MemoryInfo:
    """What a special memory scope holds (TVM's node, returned by a ``tvm.info.mem.<scope>`` function):
    ``unit_bits`` (addressing unit), ``max_simd_bits`` (alignment of packed buffers),
    ``max_num_bits`` (capacity), ``head_address``."""

    def __init__(self, unit_bits=8, max_simd_bits=32, max_num_bits=2 ** 62, head_address=None):
        self.unit_bits, self.max_simd_bits = int(unit_bits), int(max_simd_bits)
        self.max_num_bits, self.head_address = int(max_num_bits), head_address

    def __repr__(self):
        return (f"MemoryInfo(unit_bits={self.unit_bits}, max_simd_bits={self.max_simd_bits}, "
                f"max_num_bits={self.max_num_bits})")


_NODE_TYPES = {"MemoryInfo": MemoryInfo}


def make_node(type_key, **fields):
    """TVM's ``tvm.ir.make_node(type_key, **fields)`` for the node types tvmlab reads from Python
    (``"MemoryInfo"``)."""
    from ..errors import TVMLabError
    cls = _NODE_TYPES.get(type_key)
    if cls is None:
        raise TVMLabError(f"make_node: tvmlab makes {sorted(_NODE_TYPES)} nodes, not {type_key!r}")
    try:
        return cls(**fields)
    except TypeError as e:
        raise TVMLabError(f"make_node({type_key!r}): {e}") from None
