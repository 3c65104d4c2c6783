"""CPU schedules of fused groups, chosen by the group's anchor (its most complex operator).

Every group is scheduled from its outputs: stages without a reduction are
inlined into their readers (a chain of element-wise operators becomes one
loop), reductions are computed at the root over parallel outer axes, and the
outputs are flattened, vectorised and spread over the cores.  A conv2d group
built on ``topi.conv2d_nchw`` gets that operator's register-tiled schedule
with the fused element-wise tail applied as each tile is written out.
"""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..ir.tensor import PlaceholderOp

TASK = 1 << 14      # output elements per parallel task, at least


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d.value) if hasattr(d, "value") else int(d)
    return n


def _lanes(dtype, target):
    try:
        return vector_registers(target).lanes(dtype)
    except Exception:
        return 4


def inline_injective(s, keep=()):
    """Inline every stage without a reduction that is not an output or in ``keep``."""
    outs = set(s.outputs)
    for stage in list(s.stages):
        op = stage.op
        if isinstance(op, PlaceholderOp) or op in outs or op in keep or not hasattr(op, "reduce_axis"):
            continue
        if not op.reduce_axis:
            stage.compute_inline()


def schedule_flat(s, t, target, vectorize=True):
    """Flatten ``t``'s axes, vectorise the inside, and split the rest into parallel tasks."""
    stage = s[t]
    axes = list(stage.op.axis)
    if not axes:
        return
    total = _size(t.shape)
    if stage.op.reduce_axis:
        outer = [a for a in axes]
        keep = []
        n = 1
        for a in outer:             # parallel over leading axes worth at least a few tasks
            keep.append(a)
            n *= _size([a.dom.extent])
            if n >= 64:
                break
        if n > 1:
            fused = stage.fuse(*keep) if len(keep) > 1 else keep[0]
            stage.parallel(fused)
        return
    x = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    lanes = _lanes(t.dtype, target)
    if vectorize and total >= 2 * lanes:
        x, xi = stage.split(x, factor=lanes)
        stage.vectorize(xi)
        total //= lanes
        if total * lanes >= 2 * TASK:
            xo, _ = stage.split(x, factor=max(1, TASK // lanes))
            stage.parallel(xo)
    elif total >= 2 * TASK:
        xo, _ = stage.split(x, factor=TASK)
        stage.parallel(xo)


def schedule_default(outs, target, vectorize=True):
    """Injective stages inlined, reductions at the root over parallel axes, outputs flattened (see module doc)."""
    s = te.create_schedule([o.op for o in outs])
    inline_injective(s)
    for stage in list(s.stages):
        op = stage.op
        if isinstance(op, PlaceholderOp) or op in s.outputs or getattr(stage, "attach_type", None) == "inline":
            continue
        if getattr(op, "reduce_axis", None):
            schedule_flat(s, op.output(0), target, vectorize)
    for o in outs:
        schedule_flat(s, o, target, vectorize)
    return s


def _stage_input(t, suffix):
    for x in t.op.input_tensors:
        if x.op.name.endswith(suffix):
            return x
    return None


def schedule_conv2d_fused(outs, conv, target):
    """topi.conv2d_nchw's register-tiled schedule with the group's element-wise tail inlined into the output.

    ``conv`` is the conv2d tensor (tag "conv2d_nchw"); ``outs[0]`` has its shape.
    """
    from ..topi.conv2d import tile_width
    from ..topi.util import const_int
    out = outs[0]
    blocked = _stage_input(conv, "_NCHWc")
    pad = _stage_input(blocked, "_pad")
    packed = _stage_input(blocked, "_packK")
    s = te.create_schedule(out.op)
    inline_injective(s, keep={blocked.op, pad.op, packed.op})
    oc_block = int(conv.op.attrs["oc_block"])
    pb, pc, py, px = s[pad].op.axis
    s[pad].parallel(s[pad].fuse(pb, pc))
    s[pad].vectorize(px)
    fo, ch, ky, kx, fi = s[packed].op.axis
    s[packed].parallel(fo)
    s[packed].vectorize(fi)
    width = tile_width(const_int(out.shape[3]), oc_block, out.dtype, target)
    b, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, factor=oc_block)
    xo, xi = s[out].split(x, factor=width)
    s[out].reorder(b, fo, y, xo, fi, xi)
    s[out].parallel(s[out].fuse(b, fo, y))
    s[out].unroll(fi)
    s[blocked].compute_at(s[out], xo)
    cb, cf, cy, cx, cfi = s[blocked].op.axis
    rc, ry, rx = s[blocked].op.reduce_axis
    s[blocked].reorder(cb, cf, cy, rc, ry, rx, cx, cfi)
    s[blocked].unroll(cx)
    s[blocked].vectorize(cfi)
    return s


def schedule_group(outs, anchor_tensor, target):
    """The schedule of one fused group (``anchor_tensor``: the anchor operator's output)."""
    tag = getattr(anchor_tensor.op, "tag", "") if anchor_tensor is not None else ""
    if tag == "conv2d_nchw" and len(outs) == 1 and \
            tuple(map(str, outs[0].shape)) == tuple(map(str, anchor_tensor.shape)):
        return schedule_conv2d_fused(outs, anchor_tensor, target)
    if tag == "conv2d_NCHWc" and len(outs) == 1:
        from .layout import schedule_conv2d_nchwc
        return schedule_conv2d_nchwc(outs, anchor_tensor, target)
    return schedule_default(outs, target)
