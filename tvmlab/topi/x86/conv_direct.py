"""CPU schedules for the direct convolutions of ``topi.nn.conv`` (1-D, NHWC, 3-D, their transposes),
each handling a fused group.

    out = topi.nn.relu(topi.nn.conv3d_ndhwc(X, W, 1, 1, 1)); s = topi.x86.schedule_conv3d_ndhwc([out])

One parallel task per row of the output (all its axes but the last, fused); the last axis (output
channels in a channels-last layout, output columns otherwise) goes in vector lanes, and each vector of
outputs is summed over the window and input channels before the group's elementwise tail (bias,
activation) is applied to it.  The padded (or spread) input is made once, in parallel; a rearranged
kernel (depthwise, transposed) is read through its index expression.
"""
from __future__ import annotations

from ...ir.tensor import ComputeOp
from ..nn.conv import DIRECT_TAGS
from ..utils import const_or_none, with_cpu_target
from .injective import fused_group, lanes_of, parallel_vectorize, schedule_others

TRANSPOSE_TAGS = ("conv1d_transpose_ncw", "conv3d_transpose_ncdhw")


def _vector_axis(s, t, lanes):
    """Split the last axis of stage ``t`` into (outer, lanes); None when it is narrower than a vector."""
    last = s[t].op.axis[-1]
    n = const_or_none(t.shape[-1])
    if n is None or n < lanes:
        return None
    return s[t].split(last, factor=lanes)


def schedule_direct(outs, tags, what, target):
    """Schedule a fused group anchored on a direct convolution tagged one of ``tags``."""
    s, outs, conv, tile_out = fused_group(outs, tags, what, target)
    for t in conv.input_tensors:
        op = t.op
        if not isinstance(op, ComputeOp):
            continue
        if op.tag == "injective":           # a rearranged kernel: read through its index expression
            s[op].compute_inline()
            continue
        for src in op.input_tensors:        # the spread input of a transposed convolution reads data only
            if isinstance(src.op, ComputeOp):
                s[src.op].compute_inline()
        parallel_vectorize(s, t, target)
    lanes = lanes_of(conv.output(0).dtype, target)
    axes = list(s[tile_out].op.axis)
    row = s[tile_out].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
    s[tile_out].parallel(row)
    split = _vector_axis(s, tile_out, lanes)
    red = list(s[conv].op.reduce_axis)
    if tile_out.op is conv:
        if split is not None:
            xo, xi = split
            s[conv].reorder(row, xo, *red, xi)
            s[conv].vectorize(xi)
        return schedule_others(s, outs, conv, tile_out, target)
    if split is not None:
        xo, xi = split
        s[tile_out].vectorize(xi)
        s[conv].compute_at(s[tile_out], xo)
    else:
        s[conv].compute_at(s[tile_out], axes[-1] if len(axes) > 1 else row)
    cx = s[conv].op.axis[-1]
    s[conv].reorder(*red, cx)
    if split is not None:
        s[conv].vectorize(cx)
    return schedule_others(s, outs, conv, tile_out, target)


def _named(name, tags):
    @with_cpu_target
    def schedule(outs, target=None):
        return schedule_direct(outs, tags, name, target)
    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = f"CPU ``{name}``: see the module docstring."
    return schedule


schedule_conv1d_ncw = _named("schedule_conv1d_ncw", DIRECT_TAGS)
schedule_conv1d_nwc = _named("schedule_conv1d_nwc", DIRECT_TAGS)
schedule_group_conv1d_ncw = _named("schedule_group_conv1d_ncw", DIRECT_TAGS)
schedule_group_conv1d_nwc = _named("schedule_group_conv1d_nwc", DIRECT_TAGS)
schedule_conv2d_nhwc = _named("schedule_conv2d_nhwc", DIRECT_TAGS)
schedule_group_conv2d_nhwc = _named("schedule_group_conv2d_nhwc", DIRECT_TAGS)
schedule_depthwise_conv2d_nhwc = _named("schedule_depthwise_conv2d_nhwc", DIRECT_TAGS)
schedule_conv3d_ncdhw = _named("schedule_conv3d_ncdhw", DIRECT_TAGS)
schedule_conv3d_ndhwc = _named("schedule_conv3d_ndhwc", DIRECT_TAGS)
schedule_conv1d_transpose_ncw = _named("schedule_conv1d_transpose_ncw", TRANSPOSE_TAGS)
schedule_conv3d_transpose_ncdhw = _named("schedule_conv3d_transpose_ncdhw", TRANSPOSE_TAGS)
