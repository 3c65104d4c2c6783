"""The IR: dtypes, expression and statement nodes, tensors, functors, printer."""
from . import dtype  # noqa: F401
from .expr import *  # noqa: F401,F403
from .function import Buffer, IRModule, PrimFunc  # noqa: F401
from .stmt import *  # noqa: F401,F403
from .tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Range, Tensor  # noqa: F401
from .serialize import load_json, save_json  # noqa: F401
from .structural import assert_structural_equal, structural_equal, structural_hash  # noqa: F401
