"""CPU schedule for ``topi.nn.depthwise_conv2d_NCHWc`` and the fused group around it.

    out = topi.clip(topi.add(topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW16c", "NCHW16c"), Bc), 0, 6)
    s = topi.x86.schedule_depthwise_conv2d_NCHWc([out])

Tasks are (batch, channel block, output row), run in parallel; each sums a
register tile of ``width`` output columns x the channel block (in vector lanes)
over the unrolled window, then passes it through the group's element-wise tail
(bias, relu6, a residual add) before the one store.  The padded input is made
just before the tasks that read it, per row task (a few rows of one channel
block), so it never goes through memory as a whole tensor.
"""
from __future__ import annotations

from ...ir.tensor import ComputeOp
from ..conv2d import register_tile_blocked
from ..utils import with_cpu_target
from .injective import fused_group, schedule_others


@with_cpu_target
def schedule_depthwise_conv2d_NCHWc(outs, target=None, width=None):
    """Schedule a fused group whose anchor is ``depthwise_conv2d_NCHWc`` (``width``: the register tile's
    output columns; chosen from the vector registers when None)."""
    s, outs, conv, tile_out = fused_group(outs, ("depthwise_conv2d_NCHWc",), "schedule_depthwise_conv2d_NCHWc",
                                          target)
    ct = conv.output(0)
    acc = s.cache_write(ct, "global") if tile_out.op is conv else ct
    register_tile_blocked(s, tile_out, acc, target, width)
    for r in s[acc].op.reduce_axis:
        s[acc].unroll(r)
    task = s[tile_out].leaf_iter_vars[0]    # the parallel (batch, channel block, row) tasks
    for t in conv.input_tensors:
        if isinstance(t.op, ComputeOp):     # the padded input: the rows a task reads, made in the task
            s[t.op].compute_at(s[tile_out], task)
            s[t.op].vectorize(s[t.op].op.axis[-1])
    return schedule_others(s, outs, conv, tile_out, target)
