"""CUDA schedules for softmax, log-softmax and layer norm: the whole row operation in one kernel.

    s = topi.cuda.schedule_softmax([topi.nn.softmax(X, axis=-1)])
    s = topi.cuda.schedule_layer_norm([topi.nn.layer_norm(X, gamma, beta, axis=[-1])])

Softmax's row max, its sum of exponentials and the normalisation, and layer norm's two row sums and the
normalisation, run in one kernel with a warp per row (rows of up to 512 elements, eight rows a block) or a
block per row (longer rows): the reductions combine across the row's threads with warp shuffles and every
thread keeps the results in registers, then writes its share of the row (``topi.cuda.rows``).  Rows a
multiple of 128 long are read once: each thread's 4 consecutive elements (and softmax's exponentials of
them) stay in its registers for the reductions and the output; other rows recompute the exponentials
where read.  Stages relay fuses after the operator
(a cast, a residual add) join the same kernel.  A softmax over another axis than the last keeps the plain
schedule, a thread per output element.
"""
from __future__ import annotations

from ...errors import ScheduleError
from ..generic import as_outputs
from .rows import reduces_innermost, reductions, schedule_rows


def _row_kernel(outs, target, what):
    from . import _check, schedule_simple
    _check(what, target)
    outs = as_outputs(outs, f"topi.cuda.{what}")
    if all(reduces_innermost(r) for r in reductions(outs)):
        try:
            return schedule_rows(outs, what)
        except ScheduleError:
            pass
    return schedule_simple(outs, target, what)


def schedule_softmax(outs, target="cuda"):
    """CUDA ``schedule_softmax`` (softmax and log_softmax over the last axis): one kernel, a warp or a block
    per row (see the module docstring)."""
    return _row_kernel(outs, target, "schedule_softmax")


def schedule_layer_norm(outs, target="cuda"):
    """CUDA ``schedule_layer_norm`` (``topi.nn.layer_norm`` over trailing axes): one kernel, a warp or a
    block per row."""
    return _row_kernel(outs, target, "schedule_layer_norm")
