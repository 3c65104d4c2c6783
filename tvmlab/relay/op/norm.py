"""``nn.layer_norm``: normalisation over a row (TVM's operator), computed by ``topi.nn.layer_norm``.

A reduction by pattern: FuseOps gives it the injective operators computing its input and the element-wise
ones after it, and ``topi.x86.schedule_layer_norm`` makes the group one kernel that handles one row at a
time (the two sums and the output while the row is in cache).  The ONNX and PyTorch frontends emit it for
LayerNormalization / ``aten::layer_norm``; ``relay.transform.SimplifyExpr`` finds it in the hand-written form
(ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) that older exports contain.
"""
from __future__ import annotations

from ..base import TypeInferenceError
from .registry import OpPattern, make_call, register
from .typerel import norm_axis, tensor_arg


def _rel(types, attrs):
    d = tensor_arg(types, 0)
    if "float" not in d.dtype:
        raise TypeInferenceError(f"layer_norm needs a float tensor, got {d.dtype}")
    a = norm_axis(attrs.axis, len(d.shape))
    for k, what in ((1, "gamma"), (2, "beta")):
        v = tensor_arg(types, k, what)
        if v.shape != (d.shape[a],) or v.dtype != d.dtype:
            raise TypeInferenceError(f"{what} must be {d.dtype}[{d.shape[a]}] (axis {a} of {d.shape}), got {v!r}")
    return d


def _compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    x, g, b = inputs
    return [topi_nn.layer_norm(x, g if attrs.scale else None, b if attrs.center else None, attrs.axis,
                               attrs.epsilon)]


register("nn.layer_norm", _rel, OpPattern.COMM_REDUCE, _compute,
         {"axis": -1, "epsilon": 1e-5, "center": True, "scale": True}, 3)


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5, center=True, scale=True):
    """``relay.nn.layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5)``: ``(x - mean) / sqrt(var + epsilon)
    * gamma + beta`` over ``axis``; ``center=False`` / ``scale=False`` leave out beta / gamma."""
    return make_call("nn.layer_norm", [data, gamma, beta], axis=int(axis), epsilon=float(epsilon),
                     center=bool(center), scale=bool(scale))
