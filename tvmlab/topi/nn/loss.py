"""The negative log-likelihood loss, as TVM's ``topi.nn.nll_loss``."""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from ..utils import OperatorError, check_tensor


def nll_loss(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """``-predictions[n, targets[n, ...], ...] * weights[targets[n, ...]]`` per position (0 where the
    target is ``ignore_index``): "none" keeps them (targets' shape), "sum" adds them, "mean" divides
    the sum by the weights of the targets counted."""
    check_tensor("nll_loss", predictions, "predictions")
    check_tensor("nll_loss", targets, "targets", len(predictions.shape) - 1)
    check_tensor("nll_loss", weights, "weights", 1)
    if reduction not in ("mean", "sum", "none"):
        raise OperatorError(f"nll_loss: reduction must be mean, sum or none, got {reduction!r}")
    zero = _op.const(0, predictions.dtype)

    def counted(i):
        return targets(*i) != _op.const(ignore_index, targets.dtype)

    def loss(*i):
        c = _op.cast("int32", targets(*i))
        v = -predictions(*((i[0], c) + tuple(i[1:]))) * weights(c)
        return _op.select(counted(i), v, zero)
    losses = te.compute(targets.shape, loss, name="nll_loss", tag="elemwise")
    if reduction == "none":
        return losses
    ks = [te.reduce_axis((0, d), name=f"k{n}") for n, d in enumerate(targets.shape)]
    total = te.compute((), lambda: te.sum(losses(*ks), axis=ks), name="nll_loss_sum", tag="comm_reduce")
    if reduction == "sum":
        return total
    ks2 = [te.reduce_axis((0, d), name=f"w{n}") for n, d in enumerate(targets.shape)]
    wsum = te.compute((), lambda: te.sum(_op.select(counted(ks2), weights(_op.cast("int32", targets(*ks2))), zero),
                                         axis=ks2), name="nll_loss_weight", tag="comm_reduce")
    return te.compute((), lambda: total() / wsum(), name="nll_loss_mean", tag="elemwise")
