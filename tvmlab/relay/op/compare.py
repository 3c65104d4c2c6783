"""Comparisons, logical operators, ``where`` and ``gather_nd``: ``relay.less(a, b)``, ``relay.logical_not(c)`` ...

Comparisons broadcast as numpy does and give bool tensors; the logical
operators take bool (or any numeric: non-zero is true) tensors. All are
broadcast patterns, so FuseOps merges them with their neighbours.
"""
from __future__ import annotations

from ..base import TypeInferenceError
from ..ty import TensorType
from .registry import OpPattern, make_call, register
from .typerel import broadcast_shape, same_dtype, tensor_arg


def _cmp_rel(types, attrs):
    a, b = tensor_arg(types, 0, "lhs"), tensor_arg(types, 1, "rhs")
    same_dtype(a, b)
    return TensorType(broadcast_shape(a.shape, b.shape), "bool")


def _binary(name, topi_name=None):
    def compute(attrs, inputs, out_type):
        from ... import topi
        from ...topi import logical
        fn = getattr(topi, topi_name or name, None) or getattr(logical, topi_name or name)
        return [fn(*inputs)]
    register(name, _cmp_rel, OpPattern.BROADCAST, compute, {}, 2)

    def ctor(lhs, rhs):
        return make_call(name, [lhs, rhs])
    ctor.__name__ = name
    ctor.__doc__ = f"``relay.{name}(lhs, rhs)``: a bool tensor, numpy broadcasting."
    return ctor


equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")


def _not_rel(types, attrs):
    return TensorType(tensor_arg(types, 0).shape, "bool")


def _not_compute(attrs, inputs, out_type):
    from ...topi.logical import logical_not as f
    return [f(inputs[0])]


register("logical_not", _not_rel, OpPattern.ELEMWISE, _not_compute, {}, 1)


def logical_not(data):
    """``relay.logical_not(data)``: a bool tensor."""
    return make_call("logical_not", [data])


def _where_rel(types, attrs):
    c, x, y = (tensor_arg(types, k, w) for k, w in enumerate(("condition", "x", "y")))
    same_dtype(x, y, "x", "y")
    if c.dtype != "bool" and "int" not in c.dtype:
        raise TypeInferenceError(f"where: condition must be bool (or integer), got {c.dtype}")
    return TensorType(broadcast_shape(broadcast_shape(c.shape, x.shape), y.shape), x.dtype)


def _where_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.where(*inputs)]


register("where", _where_rel, OpPattern.BROADCAST, _where_compute, {}, 3)


def where(condition, x, y):
    """``relay.where(condition, x, y)``: ``x`` where ``condition`` holds, else ``y`` (broadcast together)."""
    return make_call("where", [condition, x, y])


__all__ = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "logical_not", "where"]


def _gather_nd_rel(types, attrs):
    t, ind = tensor_arg(types, 0), tensor_arg(types, 1, "indices")
    if "int" not in ind.dtype:
        raise TypeInferenceError(f"gather_nd: indices must be integers, got {ind.dtype}")
    m, b = ind.shape[0] if ind.shape else 0, attrs.batch_dims
    if not ind.shape or b < 0 or b + m > len(t.shape) or len(ind.shape) < 1 + b:
        raise TypeInferenceError(f"gather_nd: indices {ind.shape} with batch_dims={b} do not index data {t.shape}")
    return TensorType(t.shape[:b] + ind.shape[1 + b:] + t.shape[b + m:], t.dtype)


def _gather_nd_compute(attrs, inputs, out_type):
    from ...topi.indexing import gather_nd as f
    return [f(inputs[0], inputs[1], attrs.batch_dims)]


register("gather_nd", _gather_nd_rel, OpPattern.INJECTIVE, _gather_nd_compute, {"batch_dims": 0, "index_rank": None},
         2)


def gather_nd(data, indices, batch_dims=0, index_rank=None):
    """``relay.gather_nd(data, indices, batch_dims=0)``: indices (M, B.., Y..) hold index tuples along axis 0."""
    return make_call("gather_nd", [data, indices], batch_dims=int(batch_dims), index_rank=index_rank)


__all__ += ["gather_nd"]


def _scatter_rel(types, attrs):
    t, ind, upd = tensor_arg(types, 0), tensor_arg(types, 1, "indices"), tensor_arg(types, 2, "updates")
    if "int" not in ind.dtype or ind.shape != upd.shape or len(ind.shape) != len(t.shape) or upd.dtype != t.dtype:
        raise TypeInferenceError(f"scatter_elements: needs integer indices and {t.dtype} updates of one shape and "
                                 f"data's rank; got data {t.shape}, indices {ind.shape} {ind.dtype}, updates "
                                 f"{upd.shape} {upd.dtype}")
    from .typerel import norm_axis
    norm_axis(attrs.axis, len(t.shape))
    return t


def _scatter_compute(attrs, inputs, out_type):
    from ...topi.indexing import scatter_elements as f
    return [f(*inputs, axis=attrs.axis, reduction=attrs.reduction)]


register("scatter_elements", _scatter_rel, OpPattern.OPAQUE, _scatter_compute, {"axis": 0, "reduction": "update"}, 3)


def scatter_elements(data, indices, updates, axis=0, reduction="update"):
    """``relay.scatter_elements(data, indices, updates, axis=0, reduction="update" | "add" | "mul" | "min" |
    "max")`` (ONNX ScatterElements)."""
    from ...topi.indexing import REDUCTIONS
    if reduction not in REDUCTIONS:
        from ..base import RelayError
        raise RelayError(f"scatter_elements: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return make_call("scatter_elements", [data, indices, updates], axis=int(axis), reduction=reduction)


__all__ += ["scatter_elements"]
