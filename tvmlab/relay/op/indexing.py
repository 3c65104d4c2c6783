"""Indexing operators: ``relay.gather_nd`` (index tuples along indices' axis 0, TVM's layout; injective) and
``relay.scatter_elements`` (opaque: each output reduces over the updates that can land on it)."""
from __future__ import annotations

from ..base import TypeInferenceError
from ..ty import TensorType
from .registry import OpPattern, make_call, register
from .typerel import tensor_arg


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


def _scatter_nd_rel(types, attrs):
    t, ind, upd = tensor_arg(types, 0), tensor_arg(types, 1, "indices"), tensor_arg(types, 2, "updates")
    m = ind.shape[0] if ind.shape else None
    if "int" not in ind.dtype or m is None or m > len(t.shape) or upd.dtype != t.dtype or \
            tuple(upd.shape) != tuple(ind.shape[1:]) + tuple(t.shape[m:]):
        raise TypeInferenceError(f"scatter_nd: needs integer indices (M, Y..) with M <= {len(t.shape)} and {t.dtype} "
                                 f"updates (Y.., data.shape[M:]); got data {t.shape}, indices {ind.shape} "
                                 f"{ind.dtype}, updates {upd.shape} {upd.dtype}")
    return t


def _scatter_nd_compute(attrs, inputs, out_type):
    from ...topi.indexing import scatter_nd as f
    return [f(*inputs, mode=attrs.mode)]


register("scatter_nd", _scatter_nd_rel, OpPattern.OPAQUE, _scatter_nd_compute, {"mode": "update"}, 3)


def scatter_nd(data, indices, updates, mode="update"):
    """``relay.scatter_nd(data, indices, updates, mode="update" | "add" | "mul" | "min" | "max")``: indices
    (M, Y..) hold index tuples along axis 0 (TVM's layout)."""
    from ...topi.indexing import REDUCTIONS
    if mode not in REDUCTIONS:
        from ..base import RelayError
        raise RelayError(f"scatter_nd: mode must be one of {REDUCTIONS}, got {mode!r}")
    return make_call("scatter_nd", [data, indices, updates], mode=mode)


__all__ = ["gather_nd", "scatter_elements", "scatter_nd"]
