"""CPU schedule for ``topi.nn.depthwise_conv2d_NCHWc`` and the fused group around it.

    out = topi.clip(topi.add(topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW16c", "NCHW16c"), Bc), 0, 6)
    s = topi.x86.schedule_depthwise_conv2d_NCHWc([out])

Tasks are (batch, channel block, a few output rows), run in parallel; each sums a
register tile of ``width`` output columns x the channel block (in vector lanes)
over the unrolled window, then passes it through the group's element-wise tail
(bias, relu6, a residual add) before the one store.  Each task pads the input
rows it reads (of one channel block) itself, so the padded input never goes
through memory as a whole tensor and needs no parallel pass of its own.
"""
from __future__ import annotations

from ...ir.tensor import ComputeOp
from .conv2d import register_tile_blocked
from ..utils import const_or_none
from ..utils import with_cpu_target
from .injective import fused_group, schedule_others


def _rows(oh):
    """Output rows per task: up to 4 (the padded rows a task makes are reused by the next output row; 3x3
    stride 1: 6 input rows for 4 output rows, not 3 for 1), a divisor of the height so no task is partial."""
    if oh is None or oh < 8:
        return 1
    return next(r for r in (4, 2, 1) if oh % r == 0)


@with_cpu_target
def schedule_depthwise_conv2d_NCHWc(outs, target=None, width=None, rows=None):
    """Schedule a fused group whose anchor is ``depthwise_conv2d_NCHWc`` (``width``: the register tile's
    output columns, chosen from the vector registers when None; ``rows``: output rows per task)."""
    s, outs, conv, tile_out = fused_group(outs, ("depthwise_conv2d_NCHWc",), "schedule_depthwise_conv2d_NCHWc",
                                          target)
    ct = conv.output(0)
    acc = s.cache_write(ct, "global") if tile_out.op is conv else ct
    rows = rows or _rows(const_or_none(tile_out.shape[2]))
    task = register_tile_blocked(s, tile_out, acc, target, width, rows)
    for r in s[acc].op.reduce_axis:
        s[acc].unroll(r)
    for t in conv.input_tensors:
        if isinstance(t.op, ComputeOp):     # the padded input: the rows a task reads, made in the task
            s[t.op].compute_at(s[tile_out], task)
            s[t.op].vectorize(s[t.op].op.axis[-1])
    return schedule_others(s, outs, conv, tile_out, target)


def _fallback_schedule(cfg, wkl):
    """The fallback AutoTVM config of a depthwise convolution (TVM's helper): channel blocks and a
    register tile of output columns dividing the output width."""
    from .conv2d_avx_common import _fallback_schedule as conv_fallback
    conv_fallback(cfg, wkl)
