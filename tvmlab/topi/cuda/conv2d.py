"""CUDA schedule for the direct NCHW convolution: output channels and pixels tiled over a block, the input
channels stepped through shared memory.

Each thread keeps a register tile of outputs: ``fi`` output channels times ``ix`` consecutive pixels of
a row (``register_tiles``: a run of 7 pixels where 7 divides the row, 4 to 16 channels), so each word
it reads from shared memory feeds several multiply-adds: a weight (read as a float4 of channels) serves
the run, and a window pixel serves the channels and, across the kernel's columns, up to ``kw`` pixels
of the run.  Threads ``(threadIdx.z, threadIdx.y, threadIdx.x)`` are channel groups, rows and runs of
the block's tile (``REGISTER_TILES = False``: the tiles before, 8 x 7 x 7 threads of 8 channels by 2
pixels ``TX`` apart as virtual threads).
The input channels run in steps of ``rc``: each step fetches the padded input window the tile reads
(its halo included) and the kernel slice for the block's channels into shared memory, all threads of the
block together, double buffered where it fits; the window is then read once for every kernel position.
The slice is stored with the output channels innermost (``transform_layout``), so a thread's channels for
one kernel position are aligned float4 reads, not scalar ones; the window's rows are padded
(``window_pitch``) so the pixels a warp reads at once lie in distinct banks.
Elementwise operators after the convolution (bias, batch norm, activation, a residual add) are computed
where each output is written.  Shapes the tiles do not divide are guarded.

This is the direct form ``topi.nn.conv2d_nchw`` computes under a GPU target (attribute ``direct``);
other convolutions get the one-thread-per-output schedule.
"""
from __future__ import annotations

import numpy as np

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..utils import const_or_none
from .tiling import cooperative_fetch, register_tile

FB = 64            # output channels per block
TF, VF = 8, 2      # threads and virtual threads along the channels
SHARED_BYTES = 48 * 1024
SHARED_BANKS = 32
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


# A thread's outputs: ``PER_THREAD`` output channels (read as float4s from the kernel slice) times a run of
# consecutive pixels along a row (7 where 7 divides the row, as in ResNet's 112 / 56 / 28 / 14 / 7, else
# 4 to 8), so each input word a thread reads from shared memory serves its channels and, across the
# kernel's columns, several of its pixels: about 6 multiply-adds per word read for a 3x3 kernel, against
# 1.6 with a thread per 2 pixels.  A 7-pixel run also puts the lanes of a row 7 words apart, in distinct
# banks.  A block is about ``PLANE`` threads of pixels (rows of the tile, a warp where the shape allows)
# times channel groups up to ``BLOCK_THREADS`` threads; channels per thread (then channel groups) halve
# until the output has ``TARGET_BLOCKS`` blocks, about two per multiprocessor of an H100; ``hand_written``
# shrinks them further where one input channel's step would not fit shared memory (a 7 x 7 kernel).
REGISTER_TILES = True          # False: the tiles before (a thread per 2 pixels of 8 channels, 392 threads)
PER_THREAD = 16
PLANE = 32
BLOCK_THREADS = 128
TARGET_BLOCKS = 256
MAX_THREADS_Z = 64             # CUDA's limit on threadIdx.z, which the channel groups take
UNROLL_LIMIT = 512             # multiply-adds of one input channel's unrolled body (see ``_tiled``)


def _run_length(ow):
    """Consecutive pixels of a row one thread computes: 7 where 7 divides the row, else the run of 8 to 4
    (or the whole row, if shorter) that leaves the fewest guarded pixels."""
    if ow % 7 == 0:
        return 7
    if ow <= 8:
        return ow
    return min(range(8, 3, -1), key=lambda r: -(-ow // r) * r - ow)


def _prod(split):
    v, t, i = split
    return v * t * i


def _blocks(n, o, oh, ow, f, y, x):
    return n * -(-o // _prod(f)) * -(-oh // _prod(y)) * -(-ow // _prod(x))


def register_tiles(n, o, oh, ow):
    """(f, y, x) splits (vthreads, threads, per thread) of the output's channels, rows and columns for the
    register tiles described above; ``None`` for a symbolic extent (treated as large)."""
    big = 1 << 20
    n, o, oh, ow = (big if v is None else v for v in (n, o, oh, ow))
    run = _run_length(ow)
    tx = min(-(-ow // run), 8)
    fit = max(1, PLANE // tx)
    rows = [d for d in range(fit, 0, -1) if oh % d == 0][0]
    ty = rows if 2 * rows > fit else min(oh, fit)           # a divisor of the rows, unless a poor one
    tf = 1
    while 2 * tf * tx * ty <= BLOCK_THREADS and 2 * tf <= MAX_THREADS_Z:
        tf *= 2
    fi = min(PER_THREAD, max(4, 1 << (o - 1).bit_length()))      # no more channels a thread than there are
    while True:
        tf = min(tf, max(1, -(-o // fi)))
        f, y, x = (1, tf, fi), (1, ty, 1), (1, tx, run)
        if _blocks(n, o, oh, ow, f, y, x) >= TARGET_BLOCKS or (fi == 4 and tf == 1):
            return f, y, x
        if fi > 4:
            fi //= 2
        else:
            tf //= 2


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


def _window(conv, choices):
    """(rows, columns) of the padded input window one step of the tiled schedule reads."""
    kh, kw = (const_or_none(x) for x in conv.op.input_tensors[1].shape[2:])
    sh, sw = conv.op.attrs["strides"]
    dh, dw = conv.op.attrs["dilation"]
    rows, cols = _prod(choices["y"]), _prod(choices["x"])
    ry, rx = min(choices["ry"], kh), min(choices["rx"], kw)
    return (rows - 1) * sh + (ry - 1) * dh + 1, (cols - 1) * sw + (rx - 1) * dw + 1


# the input window's rows in shared memory are WINDOW_PITCH words apart: its columns, padded so that the
# pixels a warp's threads read fall into as few words of one bank as any pitch allows (``window_pitch``)
WINDOW_PITCH = True


def window_pitch(conv, choices, warp=32, banks=SHARED_BANKS):
    """Words from one row of the shared input window to the next: the least of ``columns`` to
    ``columns + banks - 1`` whose worst warp reads the fewest distinct words from one bank, where each
    thread reads at its first pixel (every read of a thread is that, plus an offset all threads share;
    threads of other channel groups read the same words, served once)."""
    _, cols = _window(conv, choices)
    if not WINDOW_PITCH:
        return cols
    sh, sw = conv.op.attrs["strides"]
    (_, tf, _), (_, ty, iy), (_, tx, ix) = choices["f"], choices["y"], choices["x"]
    lane = np.arange(tf * ty * tx)
    row, col = (lane // tx) % ty * iy * sh, lane % tx * ix * sw
    warps = [slice(w, w + warp) for w in range(0, len(lane), warp)]

    def worst(pitch):
        depth = 1
        for w in warps:
            words = np.unique(row[w] * pitch + col[w])
            depth = max(depth, np.bincount(words % banks).max())
        return depth
    return min(range(cols, cols + banks), key=lambda p: (worst(p), p))


def shared_bytes(conv, choices, elem=4):
    """Shared memory of one step of the tiled schedule (``choices`` as ``hand_written`` gives them): the
    kernel slice of the block's channels and the padded input window the block's pixels read."""
    kh, kw = (const_or_none(x) for x in conv.op.input_tensors[1].shape[2:])
    fb = _prod(choices["f"])
    step, ry, rx = choices["rc"], min(choices["ry"], kh), min(choices["rx"], kw)
    win_h, _ = _window(conv, choices)
    return (kernel_row(fb) * step * ry * rx + step * win_h * window_pitch(conv, choices)) * elem


def hand_written(conv, out, fb=None, tf=None, vf=None, vx=None):
    """The hand-written choices for convolution ``conv`` with output ``out``: {"f", "y", "x": (vthreads,
    threads, per thread), "rc": input channels per step, "ry", "rx": kernel rows / columns per step,
    "unroll": (auto_unroll_max_step, unroll_explicit)}.  With ``REGISTER_TILES`` (and no ``fb`` / ``tf`` /
    ``vf`` / ``vx`` given) the tiles of ``register_tiles``; else ``fb`` channels a block over ``tf`` threads
    and ``vf`` virtual threads, ``vx`` pixels a thread along a row (virtual threads too)."""
    _, _, oh, ow = (const_or_none(x) for x in out.shape)
    kh, kw = (const_or_none(x) for x in conv.op.input_tensors[1].shape[2:])
    if REGISTER_TILES and (fb, tf, vf, vx) == (None,) * 4:
        f, y, x = register_tiles(*(const_or_none(d) for d in out.shape))
        choices = {"f": f, "y": y, "x": x, "ry": kh, "rx": kw, "unroll": (0, 1)}
        # a large kernel (7 x 7) under many channels a block: fewer channels (then rows) until one input
        # channel's step fits shared memory
        while shared_bytes(conv, {**choices, "rc": 1}) > SHARED_BYTES:
            (_, tf_, fi), (_, ty, _) = choices["f"], choices["y"]
            if fi > 4 or tf_ > 1:
                choices["f"] = (1, tf_, fi // 2) if fi > 4 else (1, tf_ // 2, fi)
            elif ty > 1:
                choices["y"] = (1, ty // 2, 1)
            else:
                break
    else:
        fb, tf, vf = fb or FB, tf or TF, vf or VF
        if fb % (tf * vf):
            raise ScheduleError(f"topi.cuda.schedule_conv2d_nchw: fb={fb} must be a multiple of tf x vf = "
                                f"{tf} x {vf}")
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


def schedule_conv2d_nchw_direct(outs, target="cuda", fb=None, tf=None, vf=None, vx=None):
    """The tiled schedule of a group whose anchor is a direct NCHW convolution (see the module docstring):
    the register tiles, or, given any of ``fb`` / ``tf`` / ``vf`` / ``vx``, the earlier tiles with ``fb``
    output channels per block over ``tf`` threads and ``vf`` virtual threads, ``vx`` pixels per thread
    along each row (virtual threads too; default 2 where the rows are wide enough, else 1)."""
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
    # the kernel's columns and the thread's outputs unrolled (NVRTC then reuses a window pixel across the
    # columns); its rows too, unless that makes a body of more than UNROLL_LIMIT multiply-adds (a 7 x 7
    # kernel over a large tile: a long build for no fewer reads, each row reading its own pixels)
    body = fi * iy * ix * vf * vy * vx * min(choices["rx"], kw or 1)
    for ax in ((ry, rx, *ol_axes) if body * min(choices["ry"], kh or 1) <= UNROLL_LIMIT else (rx, *ol_axes)):
        s[OL].unroll(ax)
    double = 2 * shared_bytes(conv, choices) <= SHARED_BYTES and extent > 1
    threads = (("threadIdx.z", tf), ("threadIdx.y", ty_n), ("threadIdx.x", tx_n))
    # the kernel slice stored (input channel, row, column, output channel), fetched in the kernel's order
    if CHANNELS_INNERMOST:
        o, i, h, w = s[WW].op.axis
        s[WW].transform_layout(lambda o, i, h, w: [i, h, w, o])
        s[WW].reorder(o, i, h, w)
        s[WW].storage_align(w, *KERNEL_ROW_ALIGN)
    _, cols = _window(conv, choices)
    pitch = window_pitch(conv, choices)
    if pitch != cols:
        s[AA].storage_align(s[AA].op.axis[2], SHARED_BANKS, pitch % SHARED_BANKS)
    for X in (AA, WW):
        s[X].compute_at(s[OL], attach)
        if double:
            s[X].double_buffer()
        cooperative_fetch(s, X, threads)
    return s


def tiled_blocks(out):
    """How many blocks of 64 channels by 7 x 14 pixels (the tiles before ``REGISTER_TILES``, which
    ``MIN_BLOCKS`` was measured with) cover output ``out`` (N, O, OH, OW), or None if not constant: the
    measure of a layer's size the dispatcher compares with ``MIN_BLOCKS``."""
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
