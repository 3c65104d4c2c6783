"""CUDA schedule for the direct NCHW convolution: output channels and pixels tiled over a block, the input
channels stepped through shared memory.

A block computes ``FB`` output channels of a ``TY x (TX * VX)`` tile of pixels (of one image): threads
``(threadIdx.z, threadIdx.y, threadIdx.x) = (TF, TY, TX)``, each thread ``FB / TF`` channels of ``VX``
pixels ``TX`` apart (so neighbouring threads read and write neighbouring words), split over ``VF x VX``
virtual threads; a weight read from shared memory serves all of a thread's pixels.
The input channels run in steps of ``rc_step``: each step fetches the padded input window the tile reads
(its halo included) and the kernel slice for the block's channels into shared memory, all threads of the
block together, double buffered where it fits; the window is then read once for every kernel position.
The slice is stored with the output channels innermost (``transform_layout``), so a thread's channels for
one kernel position are one aligned float4 read, not four.
Elementwise operators after the convolution (bias, batch norm, activation, a residual add) are computed
where each output is written.  Shapes the tiles do not divide are guarded.

This is the direct form ``topi.nn.conv2d_nchw`` computes under a GPU target (attribute ``direct``);
other convolutions get the one-thread-per-output schedule.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..utils import const_or_none
from .tiling import cooperative_fetch, register_tile

FB = 64            # output channels per block
TF, VF = 8, 2      # threads and virtual threads along the channels
SHARED_BYTES = 48 * 1024
# fewer blocks than this and one thread per output is faster (H100, ResNet-50: batch 1 took 4.97 ms with
# every convolution one thread per output, 10.98 ms with every one tiled; batch 16 27.6 and 15.6 ms)
MIN_BLOCKS = 128


def find_direct_conv(outs):
    """The direct NCHW convolution among ``outs``' stages (tag ``conv2d_nchw``, attribute ``direct``), or None."""
    seen = set()

    def visit(t):
        op = t.op
        if not isinstance(op, ComputeOp) or op in seen:
            return None
        seen.add(op)
        if op.tag == "conv2d_nchw" and op.attrs.get("direct") and op.reduce_axis:
            return t
        for x in op.input_tensors:
            r = visit(x)
            if r is not None:
                return r
        return None
    for o in outs:
        r = visit(o)
        if r is not None:
            return r
    return None


def _pixel_tile(extent):
    """Threads along one pixel axis: 7 where it divides (ResNet's 112 / 56 / 28 / 14 / 7), else 8."""
    if extent is not None and extent % 7 == 0:
        return 7
    if extent is not None and extent < 8:
        return extent
    return 8


# tvmlab.autotvm sets this: ``config_hook(conv, target)`` returns the choices of the current dispatch
# context's config for the convolution's workload (the keys of ``hand_written``), or None
config_hook = None


# the kernel slice in shared memory: output channels innermost (a thread's channels side by side, read as
# one float4), each row of them padded to 4 past a multiple of 32 words so the copy's stores, which walk the
# kernel in its own order (coalesced reads), fall into 8 banks, not one
KERNEL_ROW_ALIGN = (32, 4)
CHANNELS_INNERMOST = True      # False: the slice in the kernel's own order (a word per read), as before


def kernel_row(fb):
    """Words per row of the shared kernel slice holding ``fb`` output channels (see KERNEL_ROW_ALIGN)."""
    if not CHANNELS_INNERMOST:
        return fb
    f, o = KERNEL_ROW_ALIGN
    return fb + (f + o - fb % f) % f


def shared_bytes(conv, choices, elem=4):
    """Shared memory of one step of the tiled schedule (``choices`` as ``hand_written`` gives them): the
    kernel slice of the block's channels and the padded input window the block's pixels read."""
    kh, kw = (const_or_none(x) for x in conv.op.input_tensors[1].shape[2:])
    sh, sw = conv.op.attrs["strides"]
    dh, dw = conv.op.attrs["dilation"]
    fb, rows, cols = (v * t * i for v, t, i in (choices["f"], choices["y"], choices["x"]))
    step, ry, rx = choices["rc"], min(choices["ry"], kh), min(choices["rx"], kw)
    win_h = (rows - 1) * sh + (ry - 1) * dh + 1
    win_w = (cols - 1) * sw + (rx - 1) * dw + 1
    return (kernel_row(fb) * step * ry * rx + step * win_h * (win_w + 1)) * elem


def hand_written(conv, out, fb=FB, tf=TF, vf=VF, vx=None):
    """The hand-written choices for convolution ``conv`` with output ``out``: {"f", "y", "x": (vthreads,
    threads, per thread), "rc": input channels per step, "ry", "rx": kernel rows / columns per step,
    "unroll": (auto_unroll_max_step, unroll_explicit)}."""
    if fb % (tf * vf):
        raise ScheduleError(f"topi.cuda.schedule_conv2d_nchw: fb={fb} must be a multiple of tf x vf = {tf} x {vf}")
    _, _, oh, ow = (const_or_none(x) for x in out.shape)
    kh, kw = (const_or_none(x) for x in conv.op.input_tensors[1].shape[2:])
    ty_n, tx_n = _pixel_tile(oh), _pixel_tile(ow)
    if vx is None:
        vx = 2 if ow is not None and ow >= 2 * tx_n else 1
    choices = {"f": (vf, tf, fb // (tf * vf)), "y": (1, ty_n, 1), "x": (vx, tx_n, 1), "ry": kh, "rx": kw,
               "unroll": (0, 1)}
    # input channels per step: as many as fit a block's shared memory (twice, to double buffer)
    channels = const_or_none(conv.op.reduce_axis[0].dom.extent) or 1 << 30
    step = next((c for c in (16, 8, 4, 2, 1) if shared_bytes(conv, {**choices, "rc": c}) <= SHARED_BYTES), 1)
    choices["rc"] = min(step, channels)
    return choices


def schedule_conv2d_nchw_direct(outs, target="cuda", fb=FB, tf=TF, vf=VF, vx=None):
    """The tiled schedule of a group whose anchor is a direct NCHW convolution (see the module docstring):
    ``fb`` output channels per block over ``tf`` threads and ``vf`` virtual threads, ``vx`` pixels per
    thread along each row (virtual threads too; default 2 where the rows are wide enough, else 1)."""
    out, conv = _direct_outputs(outs, target)
    return _tiled(out, conv, hand_written(conv, out, fb, tf, vf, vx))


def _direct_outputs(outs, target):
    if str(target).split()[0] != "cuda":
        raise ScheduleError(f"topi.cuda.schedule_conv2d_nchw is a CUDA schedule (target 'cuda'), got {target!r}")
    outs = as_outputs(outs, "topi.cuda.schedule_conv2d_nchw")
    conv = find_direct_conv(outs)
    if conv is None:
        raise ScheduleError("topi.cuda.schedule_conv2d_nchw: no direct NCHW convolution among the outputs (build "
                            "the compute under `with tvm.target.Target('cuda')`)")
    if len(outs) != 1 or len(outs[0].shape) != 4:
        raise ScheduleError(f"topi.cuda.schedule_conv2d_nchw: one 4-D output expected, got "
                            f"{[o.op.name for o in outs]}")
    return outs[0], conv


def _tiled(out, conv, choices):
    """The tiled schedule with ``choices`` (see ``hand_written``).  A split whose inner part would be
    trivial is left out, so the hand-written choices give the loops they always gave."""
    from .dense import kernel_scope
    s = te.create_schedule([out.op])
    data, kernel = conv.op.input_tensors
    OL, (AA, WW) = register_tile(s, conv, out, [data, kernel])
    kh, kw = (const_or_none(x) for x in kernel.shape[2:])
    (vf, tf, fi), (vy, ty_n, iy), (vx, tx_n, ix) = choices["f"], choices["y"], choices["x"]

    n, f, y, x = s[out].op.axis
    scope, n = kernel_scope(s, out, n, choices["unroll"])
    bf, fr = s[out].split(f, factor=vf * tf * fi)
    vf_ax, fr = s[out].split(fr, nparts=vf)
    tf_ax, fi_ax = s[out].split(fr, nparts=tf)
    by, yr = s[out].split(y, factor=vy * ty_n * iy)
    vy_ax, yr = s[out].split(yr, nparts=vy) if vy > 1 else (None, yr)
    ty, yi = s[out].split(yr, nparts=ty_n) if iy > 1 else (yr, None)
    bx, xr = s[out].split(x, factor=vx * tx_n * ix)
    vx_ax, xr = s[out].split(xr, nparts=vx)      # pixel tx + tx_n * v: neighbouring threads, neighbouring words
    tx, xi = s[out].split(xr, nparts=tx_n) if ix > 1 else (xr, None)
    order = [scope, n, bf, by, bx, vf_ax, vy_ax, vx_ax, tf_ax, ty, tx, fi_ax, yi, xi]
    s[out].reorder(*[a for a in order if a is not None])
    bz = s[out].fuse(n, bf)
    s[out].bind(bz, te.thread_axis("blockIdx.z"))
    s[out].bind(by, te.thread_axis("blockIdx.y"))
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(vf_ax, te.thread_axis("vthread", name="vf"))
    if vy_ax is not None:
        s[out].bind(vy_ax, te.thread_axis("vthread", name="vy"))
    s[out].bind(vx_ax, te.thread_axis("vthread", name="vx"))
    s[out].bind(tf_ax, te.thread_axis("threadIdx.z"))
    s[out].bind(ty, te.thread_axis("threadIdx.y"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    for ax in (fi_ax, yi, xi):
        if ax is not None:
            s[out].unroll(ax)
    s[OL].compute_at(s[out], tx)

    # the input channels in steps of rc (kernel rows and columns in steps of ry / rx where those split them)
    rc, ry, rx = s[OL].op.reduce_axis
    channels = const_or_none(rc.dom.extent) or 1 << 30
    step = min(choices["rc"], channels)
    rco, rci = s[OL].split(rc, factor=step)
    outer, attach, extent = [rco], rco, -(-channels // step)
    for ax, n_k, part in ((ry, kh, choices["ry"]), (rx, kw, choices["rx"])):
        if part < n_k:
            o, i = s[OL].split(ax, factor=part)
            outer.append(o)
            attach, extent = o, -(-n_k // part)
            if ax is ry:
                ry = i
            else:
                rx = i
    ol_axes = list(s[OL].op.axis)
    s[OL].reorder(*outer, rci, ry, rx, *ol_axes)
    for ax in (ry, rx, *ol_axes):
        s[OL].unroll(ax)
    double = 2 * shared_bytes(conv, choices) <= SHARED_BYTES and extent > 1
    threads = (("threadIdx.z", tf), ("threadIdx.y", ty_n), ("threadIdx.x", tx_n))
    # the kernel slice stored (input channel, row, column, output channel), fetched in the kernel's order
    if CHANNELS_INNERMOST:
        o, i, h, w = s[WW].op.axis
        s[WW].transform_layout(lambda o, i, h, w: [i, h, w, o])
        s[WW].reorder(o, i, h, w)
        s[WW].storage_align(w, *KERNEL_ROW_ALIGN)
    for X in (AA, WW):
        s[X].compute_at(s[OL], attach)
        if double:
            s[X].double_buffer()
        cooperative_fetch(s, X, threads)
    return s


def tiled_blocks(out):
    """How many blocks the tiled schedule gives output ``out`` (N, O, OH, OW), or None if not constant."""
    n, o, oh, ow = (const_or_none(x) for x in out.shape)
    if None in (n, o, oh, ow):
        return None
    ty_n, tx_n = _pixel_tile(oh), _pixel_tile(ow)
    vx = 2 if ow >= 2 * tx_n else 1
    return n * -(-o // FB) * -(-oh // ty_n) * -(-ow // (tx_n * vx))


def schedule_conv2d_nchw(outs, target="cuda"):
    """CUDA ``schedule_conv2d_nchw``: the tiled schedule for the direct convolution a GPU target computes
    where it makes ``MIN_BLOCKS`` blocks or more; else (a small batch-1 layer, which the tiles would spread
    over a few of the GPU's multiprocessors) and for the blocked form (a compute made outside a GPU target),
    one thread per output element.  Inside an AutoTVM dispatch context with a config for the workload, the
    tiled schedule with the config's choices."""
    from . import schedule_simple
    outs = as_outputs(outs, "topi.cuda.schedule_conv2d_nchw")
    conv = find_direct_conv(outs)
    if conv is not None and len(outs) == 1 and len(outs[0].shape) == 4 and config_hook is not None:
        choices = config_hook(conv, target)
        if choices is not None:
            out, conv = _direct_outputs(outs, target)
            return _tiled(out, conv, choices)
    if conv is None or len(outs) != 1 or (tiled_blocks(outs[0]) or 0) < MIN_BLOCKS:
        return schedule_simple(outs, target, "schedule_conv2d_nchw")
    return schedule_conv2d_nchw_direct(outs, target)
