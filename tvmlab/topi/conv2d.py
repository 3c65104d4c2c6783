"""2-D convolution in NCHW layout: the compute and a CPU schedule.

``conv2d_nchw(data, kernel, stride=1, padding=1)`` with data (N, C, H, W) and
kernel (O, C, KH, KW) gives (N, O, OH, OW).  The padded input is a stage of its
own, the kernel is packed into blocks of ``oc_block`` output channels
(``Kp[fo, c, ky, kx, fi] = kernel[fo * oc_block + fi, c, ky, kx]``, zero past O),
and the sum is computed in the blocked layout ``(N, O / oc_block, OH, OW,
oc_block)`` (TVM's NCHWc) before it is copied out in NCHW.  ``oc_block`` is
two vector registers of the target (16 float32 channels with AVX2).

The schedule computes a tile of ``width`` output columns x ``oc_block``
channels at a time, in registers: each reduction step (input channel, kernel
row, kernel column) loads the packed kernel's channel vectors once and
broadcasts ``width`` input values, ``width x vectors`` FMAs.  Tasks are (batch,
channel block, output row) triples spread over the cores; each tile is
written out to NCHW once its reduction is done.
"""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..errors import ScheduleError
from .utils import check_options, const_or_none, find_stage_input, pack_blocks, vector_block


# Set by tvmlab.autotvm when it is imported: ``hook(out, target)`` gives a tuned tile ``width`` or None.
config_hook = None


def conv2d_nchw(data, kernel, stride=1, padding=1, name="conv2d", oc_block=None, target="llvm"):
    """Convolution of ``data`` (N, C, H, W) with ``kernel`` (O, C, KH, KW), zero padding, no dilation.

    ``oc_block`` (default ``vector_block(dtype, target)``) is the packed kernel's channel block.
    """
    if len(data.shape) != 4 or len(kernel.shape) != 4:
        raise ScheduleError(f"conv2d_nchw needs 4-D data and kernel, got {tuple(data.shape)} and "
                            f"{tuple(kernel.shape)}")
    n, c, h, w = data.shape
    o, c2, kh, kw = kernel.shape
    if const_or_none(c) is not None and const_or_none(c2) is not None and const_or_none(c) != const_or_none(c2):
        raise ScheduleError(f"conv2d_nchw: data has {const_or_none(c)} channels but the kernel expects "
                            f"{const_or_none(c2)}")
    if not isinstance(stride, int) or stride < 1 or not isinstance(padding, int) or padding < 0:
        raise ScheduleError(f"conv2d_nchw: stride must be an int >= 1 and padding an int >= 0, "
                            f"got {stride!r} and {padding!r}")
    check_options("conv2d_nchw", oc_block=oc_block)
    oc_block = vector_block(data.dtype, target) if oc_block is None else oc_block
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (w + 2 * padding - kw) // stride + 1
    zero = te.const(0, data.dtype)
    if padding:
        pad = te.compute((n, c, h + 2 * padding, w + 2 * padding),
                         lambda b, ch, y, x: te.if_then_else(
                             te.all(y >= padding, y < h + padding, x >= padding, x < w + padding),
                             data[b, ch, y - padding, x - padding], zero), name=name + "_pad")
    else:
        pad = te.compute(data.shape, lambda b, ch, y, x: data[b, ch, y, x], name=name + "_pad")
    packed = pack_blocks(((o + oc_block - 1) // oc_block, c, kh, kw, oc_block),
                         lambda fo, ch, y, x, fi: kernel[fo * oc_block + fi, ch, y, x], o, kernel.dtype,
                         name + "_packK")
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    blocked = te.compute((n, (o + oc_block - 1) // oc_block, oh, ow, oc_block),
                         lambda b, fo, y, x, fi: te.sum(pad[b, rc, y * stride + ry, x * stride + rx] *
                                                        packed[fo, rc, ry, rx, fi], axis=[rc, ry, rx]),
                         name=name + "_NCHWc")
    return te.compute((n, o, oh, ow), lambda b, f, y, x: blocked[b, f // oc_block, y, x, f % oc_block],
                      name=name, tag="conv2d_nchw", attrs={"oc_block": oc_block})


def tile_width(ow, oc_block, dtype, target="llvm"):
    """Output columns per register tile: accumulators fill half the registers; a divisor of ``ow`` when one
    is close, so no column tile needs a guard."""
    regs = vector_registers(target)
    vectors = regs.holding(oc_block, dtype)
    width = max(1, regs.count // (2 * vectors))
    if ow is not None:
        width = min(width, ow)
        exact = next((w for w in range(width, (width + 1) // 2 - 1, -1) if ow % w == 0), None)
        width = exact or width
    return width


def schedule_conv2d_nchw(out, target="llvm", width=None):
    """Channel-blocked, register-tiled direct convolution (see the module docstring)."""
    if str(target).split()[0] != "llvm":
        raise ScheduleError(f"schedule_conv2d_nchw has a schedule for target 'llvm', got {target!r}")
    if getattr(out.op, "tag", "") != "conv2d_nchw":
        raise ScheduleError(f"schedule_conv2d_nchw needs the output of topi.conv2d_nchw, got {out.op.name!r}")
    check_options("schedule_conv2d_nchw", width=width)
    if config_hook is not None and width is None:
        width = config_hook(out, target)
    oc_block = int(out.op.attrs["oc_block"])
    blocked = find_stage_input(out, "_NCHWc")
    pad = find_stage_input(blocked, "_pad")
    packed = find_stage_input(blocked, "_packK")
    s = te.create_schedule(out.op)
    pb, pc, py, px = s[pad].op.axis
    s[pad].parallel(s[pad].fuse(pb, pc))
    s[pad].vectorize(px)
    fo, ch, ky, kx, fi = s[packed].op.axis
    s[packed].parallel(fo)
    s[packed].vectorize(fi)

    register_tile(s, out, blocked, oc_block, target, width)
    return s


def register_tile(s, out, blocked, oc_block, target, width=None):
    """Tile ``out`` (N, O, OH, OW) over (batch, channel block, row) tasks; each task computes
    ``blocked`` (the NCHWc sum) one (width x oc_block) register tile at a time, channels in
    vector lanes, accumulated over the whole reduction."""
    width = width or tile_width(const_or_none(out.shape[3]), oc_block, out.dtype, target)
    b, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, factor=oc_block)
    xo, xi = s[out].split(x, factor=width)
    s[out].reorder(b, fo, y, xo, fi, xi)
    s[out].parallel(s[out].fuse(b, fo, y))
    s[out].unroll(fi)
    _accumulate_tile(s, blocked, out, xo)


def register_tile_blocked(s, out, acc, target, width=None, rows=None):
    """As ``register_tile`` for an output already in NCHWc (N, O/b, OH, OW, b): tasks are (batch,
    channel block, row) -- or ``rows`` rows -- each computing ``acc`` one (width x b) register tile at a
    time.  Returns the task axis."""
    block = const_or_none(out.shape[4])
    width = width or tile_width(const_or_none(out.shape[3]), block, out.dtype, target)
    b, fo, y, x, fi = s[out].op.axis
    ys = s[out].split(y, factor=rows) if rows else (y,)
    xo, xi = s[out].split(x, factor=width)
    s[out].reorder(b, fo, *ys, xo, xi, fi)
    task = s[out].fuse(b, fo, ys[0])
    s[out].parallel(task)
    s[out].vectorize(fi)
    _accumulate_tile(s, acc, out, xo)
    return task


def _accumulate_tile(s, acc, out, at):
    # ``acc`` (N, O/b, OH, OW, b) computed at ``out``'s column tile: the reduction outside, the tile's
    # columns unrolled and its channels in vector lanes
    s[acc].compute_at(s[out], at)
    cb, cf, cy, cx, cfi = s[acc].op.axis
    s[acc].reorder(cb, cf, cy, *s[acc].op.reduce_axis, cx, cfi)
    s[acc].unroll(cx)
    s[acc].vectorize(cfi)
