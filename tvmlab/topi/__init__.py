"""Operator inventory: for each operator a compute (TE) and a CPU schedule built from tvmlab's primitives.

    C = topi.matmul(A, B); s = topi.schedule_matmul(C)     # then tvm.build(s, [A, B, C])
"""
from .elementwise import schedule_elementwise
from .softmax import schedule_softmax, softmax
# TVM's topi names: computes at the top level and in topi.nn, schedules in topi.x86 / cuda / generic
from . import cuda, generic, gpu, nn, tag, utils, x86  # noqa: E402,F401
from .nn import conv2d_nchw  # noqa: E402,F401  (one compute: topi.nn's)
from .x86 import schedule_conv2d_nchw, schedule_matmul  # noqa: E402,F401  (the CPU schedules)
from .broadcast import (add, broadcast_to, divide, equal, floor_divide, floor_mod, greater,  # noqa: F401
                        greater_equal, less, less_equal, logical_and, logical_or, maximum, minimum, mod,
                        multiply, not_equal, power, subtract)
from .math import (abs, cast, ceil, clip, cos, elemwise_sum, erf, exp, fast_erf, fast_exp, fast_tanh,  # noqa: F401
                   floor, identity, isfinite, isinf, isnan, log, negative, nearbyint, round, rsqrt, sigmoid, sign,
                   sin, sqrt, tanh, trunc)
from .reduction import all, any, argmax, argmin, max, mean, min, prod, sum  # noqa: F401
from . import image  # noqa: F401,E402
from .einsum import einsum  # noqa: F401,E402
from .logical import bitwise_not, logical_not  # noqa: F401,E402
from .broadcast import (bitwise_and, bitwise_or, bitwise_xor, left_shift, logical_xor,  # noqa: F401,E402
                        right_shift)
from .scan import cumprod, cumsum  # noqa: F401,E402
from .sort import argsort, sort, topk  # noqa: F401,E402
from .indexing import gather_nd, scatter_elements, scatter_nd  # noqa: F401,E402
from .trig import acos, asin, atan, cosh, sinh, tan  # noqa: F401,E402
from .transform import (concatenate, expand_dims, full, full_like, gather, layout_transform, matmul, repeat,  # noqa: F401
                        reshape, split, squeeze, stack, strided_slice, take, tile, transpose, where)

__all__ = ["add", "conv2d_nchw", "matmul", "schedule_conv2d_nchw", "schedule_elementwise", "schedule_matmul",
           "schedule_softmax", "softmax"]
# star-imports also get TVM's names (not those shadowing Python's builtins: sum, max, min, abs, round)
__all__ += ["cuda", "generic", "nn", "tag", "testing", "utils", "x86", "broadcast_to", "divide", "equal",
            "floor_divide", "floor_mod", "greater", "greater_equal", "less", "less_equal", "logical_and",
            "logical_or", "maximum", "minimum", "mod", "multiply", "not_equal", "power", "subtract", "cast",
            "ceil", "clip", "cos", "elemwise_sum", "erf", "exp", "fast_exp", "floor", "identity", "log", "nearbyint",
            "negative", "rsqrt",
            "sigmoid", "sin", "sqrt", "tanh", "argmax", "argmin", "mean", "prod", "concatenate", "expand_dims",
            "full", "full_like", "gather", "layout_transform", "repeat", "reshape", "split", "squeeze", "stack",
            "strided_slice", "take", "tile", "transpose", "where"]
from .absent import ABSENT_TARGETS as _ABSENT, absent_target as _absent_target  # noqa: E402
for _t in _ABSENT:      # TVM's target packages tvmlab has no backend for: usable in tables, raise when called
    globals()[_t] = _absent_target(__name__, _t)
from .creation import arange, expand_like, ndarray_size, one_hot, shape, sparse_to_dense, tensordot  # noqa: E402,F401
from .indexing import adv_index, matrix_set_diag, unravel_index  # noqa: E402,F401
from .math import reinterpret  # noqa: E402,F401
from .reorder import flip, reverse_sequence, sequence_mask, strided_set  # noqa: E402,F401
from .search import argwhere, searchsorted, unique  # noqa: E402,F401
from . import testing  # noqa: E402,F401
