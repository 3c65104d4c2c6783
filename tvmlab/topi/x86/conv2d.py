"""CPU schedules for the convolutions of ``topi.nn``, each handling a fused group.

    out = topi.nn.relu(topi.nn.bias_add(topi.nn.conv2d_nchw(X, W, 1, 1, 1), b))
    s = topi.x86.schedule_conv2d_nchw([out])

The convolution (found by its tag) gets a blocked, register-tiled loop nest: a tile of ``width``
output columns x ``oc_block`` channels is summed in registers over the whole reduction.  The stages
after it (bias, batch norm, activation: injective with the convolution's shape) are inlined into the
group's output, which owns the tile loops, so each tile goes through bias and activation and is
written to memory once.  Injective producers of those stages (an ``expand_dims`` of the bias) are
inlined too.
"""
from __future__ import annotations

from ...codegen.llvm_vector import vector_registers
from ...ir.tensor import ComputeOp
from ..nn.conv2d import _largest_divisor
from ..utils import check_options, const_or_none, vector_block, with_cpu_target
from .injective import TASK_PAD_BYTES, fused_group, lanes_of, schedule_others, transpose_blocks

NCHW_TAGS = ("conv2d_nchw", "group_conv2d_nchw", "depthwise_conv2d_nchw")


# AutoTVM's hooks: (conv output, target) -> (register tile width, unroll_kw), or None for the defaults;
# the second for conv2d_NCHWc stages (the same tuned record: a workload is the NCHW convolution)
config_hook = None
nchwc_config_hook = None


# the input-lane loop of conv2d_NCHWc's reduction (one channel block, the innermost) unrolled: on znver3 (AVX2)
# the 1x1 layers of ResNet-50 ran 3-30% faster than with LLVM's unroll by two (1024 -> 256 at 14x14: 129 -> 158
# GFLOP/s); the whole model 3.8% (median of 5 paired runs), and unrolling the 3x3 layers' lanes too was worth 2.7%
# against the 1x1 layers' alone (median of 7).  LLVM takes longer over the unrolled code: ResNet-50 builds in
# about 28 s instead of 18 here (unrolling 8 of the 16 lanes: 20 s, but 25-55% slower 1x1 layers)
UNROLL_LANES = True
STREAM_ROWS = 4                 # output rows per task of register_tile_streamed


# accumulators of a register tile: half the registers, but at least this many where the registers allow.  With
# 16 registers (AVX2) half is 8, too few sums in flight for two FMA pipes: on znver3 the 4 x 16 tiles of ResNet-50's
# 1x1 and strided 3x3 layers ran 10-35% slower than 6 x 16 ones (and 7 x 16 spills)
MIN_ACCUMULATORS = 12


def tile_width(ow, oc_block, dtype, target="llvm"):
    """Output columns per register tile: as many as the accumulators allow, fewer where that makes fewer
    column tiles (each pays the loads of its weights and the loop around it once; a tile past the row's
    end is guarded)."""
    regs = vector_registers(target)
    vectors = regs.holding(oc_block, dtype)
    accumulators = max(regs.count // 2, min(MIN_ACCUMULATORS, regs.count - vectors - 1))
    most = max(1, accumulators // vectors)
    if ow is None:
        return most
    return min(range(min(most, ow), 0, -1), key=lambda w: -(-ow // w) * (w + vectors))


def register_tile(s, out, blocked, oc_block, target, width=None, unroll_kw=False):
    """Tile ``out`` (N, O, OH, OW) over (batch, channel block, row) tasks; each task computes
    ``blocked`` (the NCHWc sum) one (width x oc_block) register tile at a time, channels in
    vector lanes, accumulated over the whole reduction (its kernel-column loop unrolled with
    ``unroll_kw``)."""
    width = width or tile_width(const_or_none(out.shape[3]), oc_block, out.dtype, target)
    b, f, y, x = s[out].op.axis
    fo, fi = s[out].split(f, factor=oc_block)
    xo, xi = s[out].split(x, factor=width)
    s[out].reorder(b, fo, y, xo, fi, xi)
    s[out].parallel(s[out].fuse(b, fo, y))
    s[out].unroll(fi)
    _accumulate_tile(s, blocked, out, xo, unroll_kw)


def register_tile_blocked(s, out, acc, target, width=None, rows=None, unroll_kw=False, rows_outer=False):
    """As ``register_tile`` for an output already in NCHWc (N, O/b, OH, OW, b): tasks are (batch,
    channel block, row) -- or ``rows`` rows -- each computing ``acc`` one (width x b) register tile at a
    time; ``rows_outer`` orders them (batch, row, channel block), every output block of a row before the
    next row.  Returns the task axis."""
    block = const_or_none(out.shape[4])
    width = width or tile_width(const_or_none(out.shape[3]), block, out.dtype, target)
    b, fo, y, x, fi = s[out].op.axis
    ys = s[out].split(y, factor=rows) if rows else (y,)
    xo, xi = s[out].split(x, factor=width)
    if rows_outer:
        s[out].reorder(b, ys[0], fo, *ys[1:], xo, xi, fi)
        task = s[out].fuse(b, ys[0], fo)
    else:
        s[out].reorder(b, fo, *ys, xo, xi, fi)
        task = s[out].fuse(b, fo, ys[0])
    s[out].parallel(task)
    s[out].vectorize(fi)
    _accumulate_tile(s, acc, out, xo, unroll_kw)
    return task


def register_tile_streamed(s, out, acc, target, width=None, rows=None):
    """As ``register_tile_blocked``, for a kernel whose slice per channel block is too large to stay in L2
    between the rows of a task: tasks of ``rows`` output rows, the reduction over input-channel blocks
    outermost in each, so every block of the kernel is read from memory once and used for all the task's
    rows while in L1 (the partial sums, rows x width x oc, wait in a small buffer).  Returns the task axis."""
    block = const_or_none(out.shape[4])
    width = width or tile_width(const_or_none(out.shape[3]), block, out.dtype, target)
    task = _row_tasks(s, out, acc, rows or STREAM_ROWS)
    cb, cf, cy, cx, cfi = s[acc].op.axis
    rco, ry, rx, rci = s[acc].op.reduce_axis
    cxo, cxi = s[acc].split(cx, factor=width)
    s[acc].reorder(cb, cf, rco, cy, cxo, ry, rx, rci, cxi, cfi)
    _unroll_tile(s, acc, cxi, cfi)
    return task


def register_tile_flat(s, out, acc, target, rows, width=None, stream=False):
    """As ``register_tile_blocked``, with a task's output pixels as one run: tasks of ``rows`` output rows,
    and the register tiles cut from their ``rows * OW`` pixels rather than from each row, so a row whose
    width the tile does not divide leaves no narrow tile at its end (7 columns: tiles of 4 + 3 per row, 8
    and 6 sums in flight; 49 pixels: tiles of 5).  The tiles' sums go to a small buffer per task, which the
    group's elementwise stages then read; with ``stream`` the input-channel blocks are the outermost loop
    of the task, as ``register_tile_streamed`` has them.  Returns the task axis."""
    task = _row_tasks(s, out, acc, rows)
    pixels = rows * const_or_none(out.shape[3])
    width = width or tile_width(pixels, const_or_none(out.shape[4]), out.dtype, target)
    cb, cf, cy, cx, cfi = s[acc].op.axis
    cp = s[acc].fuse(cy, cx)
    cpo, cpi = s[acc].split(cp, factor=width)
    if stream:
        rco, *rest = s[acc].op.reduce_axis
        s[acc].reorder(cb, cf, rco, cpo, *rest, cpi, cfi)
    else:
        s[acc].reorder(cb, cf, cpo, *s[acc].op.reduce_axis, cpi, cfi)
    _unroll_tile(s, acc, cpi, cfi)
    return task


def _row_tasks(s, out, acc, rows):
    """Parallel tasks of ``rows`` output rows of ``out`` (N, O/b, OH, OW, b), its channel lanes vectorised and
    ``acc`` computed whole in each task (a buffer of the task's rows).  Returns the task axis."""
    b, fo, y, x, fi = s[out].op.axis
    yo, yi = s[out].split(y, factor=rows)
    task = s[out].fuse(b, fo, yo)
    s[out].parallel(task)
    s[out].vectorize(fi)
    s[acc].compute_at(s[out], task)
    return task


def _unroll_tile(s, acc, cols, lanes):
    """A register tile of ``acc``: its columns (and the input lanes, UNROLL_LANES) unrolled, channels in
    vector lanes."""
    if _unroll_lanes(acc):
        s[acc].unroll(s[acc].op.reduce_axis[-1])
    s[acc].unroll(cols)
    s[acc].vectorize(lanes)


def _unroll_lanes(acc):
    """Whether ``acc``'s input-lane loop is unrolled: UNROLL_LANES, for conv2d_NCHWc's (``rci``, innermost)."""
    return UNROLL_LANES and acc.op.reduce_axis[-1].var.name == "rci"


def _accumulate_tile(s, acc, out, at, unroll_kw=False):
    # ``acc`` (N, O/b, OH, OW, b) computed at ``out``'s column tile: the reduction outside, the tile's
    # columns unrolled and its channels in vector lanes; ``unroll_kw`` unrolls the kernel columns too
    s[acc].compute_at(s[out], at)
    cb, cf, cy, cx, cfi = s[acc].op.axis
    s[acc].reorder(cb, cf, cy, *s[acc].op.reduce_axis, cx, cfi)
    if unroll_kw:
        s[acc].unroll(next(r for r in s[acc].op.reduce_axis if r.var.name == "rx"))
    _unroll_tile(s, acc, cx, cfi)


def _schedule_inputs(s, blocked, skip=()):
    """Parallel, vectorised passes for the padded input and the packed kernel feeding ``blocked``."""
    for t in blocked.op.input_tensors:
        op = t.op
        if not isinstance(op, ComputeOp) or op in skip:
            continue
        for src in op.input_tensors:          # e.g. a depthwise multiplier's flattened kernel
            if isinstance(src.op, ComputeOp):
                s[src.op].compute_inline()
        axes = list(s[op].op.axis)
        if op.name.endswith("_packK"):
            transpose_blocks(s, op.output(0))
        elif op.name.endswith("_pad_pack"):
            s[op].parallel(s[op].fuse(axes[0], axes[1]))
            s[op].vectorize(axes[-1])
        else:                                 # the padded input (N, C, H, W)
            s[op].parallel(s[op].fuse(axes[0], axes[1]))
            s[op].vectorize(axes[-1])


def _direct(s, conv, out, target):
    """A depthwise convolution in NCHW: (batch, channel, row) tasks, the padded rows made just before use,
    a vector of output columns accumulated over the unrolled window."""
    b, f, y, x = s[out].op.axis
    row = s[out].fuse(b, f, y)
    s[out].parallel(row)
    xo, xi = s[out].split(x, factor=lanes_of(out.dtype, target))
    ry, rx = s[conv].op.reduce_axis
    if out.op is conv:
        s[out].reorder(row, xo, ry, rx, xi)
    else:
        s[out].vectorize(xi)
        s[conv].compute_at(s[out], xo)
        xi = s[conv].op.axis[3]
        s[conv].reorder(ry, rx, xi)
    s[conv].unroll(ry)
    s[conv].unroll(rx)
    s[conv].vectorize(xi)
    for t in conv.input_tensors:
        if isinstance(t.op, ComputeOp):      # the padded input
            s[t.op].compute_at(s[out], row)


def _schedule_blocked(outs, tags, what, target, width, unroll_kw=None):
    s, outs, conv, tile_out = fused_group(outs, tags, what, target)
    if conv.attrs.get("direct"):
        _direct(s, conv, tile_out, target)
        return schedule_others(s, outs, conv, tile_out, target)
    blocked = conv.input_tensors[0]
    _schedule_inputs(s, blocked)
    if tile_out.op is not conv:
        s[conv].compute_inline()     # the NCHW copy: each tile goes through the tail as it is written
    if config_hook is not None and width is None and unroll_kw is None:
        width, unroll_kw = config_hook(conv.output(0), target) or (None, None)
    register_tile(s, tile_out, blocked, int(conv.attrs["oc_block"]), target, width, bool(unroll_kw))
    return schedule_others(s, outs, conv, tile_out, target)


@with_cpu_target
def schedule_conv2d_nchw(outs, target=None, width=None, unroll_kw=None):
    """Schedule a fused group whose anchor is an NCHW convolution (plain, grouped or depthwise): tasks
    of (batch, channel block, output row), each computing the blocked sum one register tile of ``width``
    output columns x ``oc_block`` channels at a time (channels in vector lanes), the tile's elementwise
    tail applied as it is written; ``unroll_kw`` unrolls the loop over the kernel's columns."""
    check_options("schedule_conv2d_nchw", width=width)
    if unroll_kw is not None and not isinstance(unroll_kw, bool):
        from ...errors import ScheduleError
        raise ScheduleError(f"schedule_conv2d_nchw: unroll_kw must be True, False or None, got {unroll_kw!r}")
    return _schedule_blocked(outs, NCHW_TAGS, "schedule_conv2d_nchw", target, width, unroll_kw)


schedule_group_conv2d_nchw = schedule_conv2d_nchw
schedule_depthwise_conv2d_nchw = schedule_conv2d_nchw


@with_cpu_target
def schedule_conv2d_hwcn(outs, target=None):
    """Schedule a fused group anchored on ``topi.nn.conv2d_hwcn``: a task per output row; for each output
    pixel the sum over the window and input channels runs with the output channels (x batch) in vector
    lanes, then the elementwise tail (bias, activation) is applied to that pixel."""
    s, outs, conv, tile_out = fused_group(outs, ("conv2d_hwcn",), "schedule_conv2d_hwcn", target)
    lanes = lanes_of(conv.output(0).dtype, target)
    pad = conv.input_tensors[0]
    if isinstance(pad.op, ComputeOp):
        s[pad.op].parallel(s[pad.op].op.axis[0])
    y, x, f, b = s[tile_out].op.axis
    s[tile_out].parallel(y)
    if tile_out.op is not conv:
        fo, fi = s[tile_out].split(f, factor=lanes)
        s[tile_out].reorder(y, x, b, fo, fi)
        s[tile_out].vectorize(fi)
        s[conv].compute_at(s[tile_out], x)
        y, x, f, b = s[conv].op.axis
    ry, rx, rc = s[conv].op.reduce_axis
    fo, fi = s[conv].split(f, factor=lanes)
    s[conv].reorder(y, x, ry, rx, rc, b, fo, fi)
    s[conv].vectorize(fi)
    return schedule_others(s, outs, conv, tile_out, target)


@with_cpu_target
def nchwc_blocks(in_channels, out_channels, dtype="float32", target=None):
    """``(ic_bn, oc_bn)`` for ``conv2d_NCHWc`` on ``target``: the largest channel blocks dividing each count,
    at most two vector registers wide (16 float32 on AVX2, 32 on AVX-512).  Graph-level layout passes
    use them: data "NCHW" -> f"NCHW{ic_bn}c", kernel "OIHW" -> f"OIHW{ic_bn}i{oc_bn}o"."""
    vb = vector_block(dtype, target)
    return _largest_divisor(int(in_channels), vb), _largest_divisor(int(out_channels), vb)


PARALLEL_PAD_BYTES = 256 * 1024
# a kernel slice per output-channel block at least this large is streamed (register_tile_streamed): on
# ResNet-50 its 3x3 stride-2 layers of 256 and 512 channels (288 and 576 KB); 1.5-3.7% faster at two threads
# and 0-4% at one (side by side, one process); the 1x1 layers of 2048 inputs (256 KB) were 0-2.5% slower.
# (A map whose rows are too short for the register tile is tiled flat instead: the 512-channel layer, at 7 x 7,
# 2-13% faster tiled so on one thread and 2-8% on two, in runs of 10-20 timings side by side)
STREAM_KERNEL_BYTES = 288 * 1024
# and a slice this large of a strided kernel with a window (3x3 stride 2): each of its input blocks (9 KB on
# AVX2) is used for a whole task in L1 where a per-row task reads the slice from L2 once per register tile.  On
# znver3 (AVX2, 74 and 147 KB slices) ResNet-50's 3x3 stride-2 layers of 128 and 256 channels ran 4% and 6%
# faster on one thread, 2% and 9% on two (minimum of 150 calls each, side by side).  3x3 stride-1 layers of the
# same slices were even or up to 4% slower so, and a 1x1 kernel 5-25% slower (its sums would go through the
# task's buffer every 16 reduction steps).
STREAM_WINDOW_BYTES = 64 * 1024


def _bytes(t):
    from ...ir import dtype as dt
    n = dt.itemsize(t.dtype)
    for d in t.shape:
        n *= const_or_none(d) or 1
    return n


def _task_pad_bytes(conv, pad, rows=1):
    """Bytes of the padded input one (batch, channel block, ``rows`` output rows) task reads."""
    from ...ir import dtype as dt
    kh = const_or_none(conv.input_tensors[1].shape[2]) or 1
    dh = int(conv.attrs["dilation"][0]) if "dilation" in conv.attrs else 1
    sh = int(conv.attrs["strides"][0]) if "strides" in conv.attrs else 1
    n = ((rows - 1) * sh + (kh - 1) * dh + 1) * dt.itemsize(pad.dtype)
    for d in (pad.shape[1], pad.shape[3], pad.shape[4]):
        n *= const_or_none(d) or 1
    return n


FLAT_TILES = True
FLAT_PIXELS = 64            # pixels per task of register_tile_flat at most (a 7 x 7 map: all of it)
FLAT_MIN_TASKS = 16         # and at least this many tasks (batch x channel blocks x row groups) for the threads


def _tile_time(width, vectors):
    # FMA issue slots of a (width x vectors) register tile per reduction step: each sum waits out the FMA's
    # latency, so a tile of fewer sums than two pipes x four cycles takes as long as one of eight
    return max(width * vectors, 8)


def _run_time(count, width, vectors):
    """FMA issue slots per reduction step of ``count`` pixels (or rows) cut into register tiles of ``width``,
    the last one shorter."""
    full, rest = divmod(count, width)
    return full * _tile_time(width, vectors) + (_tile_time(rest, vectors) if rest else 0)


def _flat_rows(out, target):
    """Rows per task of ``register_tile_flat`` for a convolution whose rows tile worse than a run of its
    pixels does, or None.  On znver3, one thread, alone: ResNet-50's 7 x 7 layers 5-15% faster (1x1 512 ->
    2048: 1.50 -> 1.35 ms), MobileNet-V2's 7-12%.  Its 56-wide rows (tiles of 6 and one of 2) run as they were:
    as runs of one or two rows they were 5-50% slower (the extra pass over the buffer; 64 -> 256 channels), and
    a task takes at most FLAT_PIXELS pixels."""
    oh, ow, block = (const_or_none(out.shape[i]) for i in (2, 3, 4))
    if None in (oh, ow, block):
        return None
    vectors = vector_registers(target).holding(block, out.dtype)

    def waste(pixels):
        return _run_time(pixels, tile_width(pixels, block, out.dtype, target), vectors) / (pixels * vectors)

    others = 1
    for d in out.shape[:2]:
        others *= const_or_none(d) or FLAT_MIN_TASKS
    fits = [r for r in range(2, oh + 1) if oh % r == 0 and r * ow <= FLAT_PIXELS and others * oh // r >= FLAT_MIN_TASKS]
    rows = max(fits, default=None, key=lambda r: (-waste(r * ow), r))
    return rows if rows and waste(rows * ow) < waste(ow) - 0.05 else None


def _has_window(conv):
    """Whether ``conv``'s kernel spans more than one pixel (its (O/oc, C/ic, KH, KW, ic, oc) kernel)."""
    k = conv.input_tensors[1].shape
    return (const_or_none(k[2]) or 1) * (const_or_none(k[3]) or 1) > 1


def _strided(conv):
    """Whether ``conv`` has a stride above one."""
    return "strides" in conv.attrs and any(int(v) > 1 for v in conv.attrs["strides"])


def _stream_bytes(conv):
    """The kernel slice per output block from which ``conv``'s tasks stream its input blocks."""
    return STREAM_WINDOW_BYTES if _has_window(conv) and _strided(conv) else STREAM_KERNEL_BYTES


def _skips_pixels(conv):
    """Whether ``conv`` is a 1x1 kernel with a stride: its tasks then go row by row, each row's output blocks
    together.  Channel block by channel block, each block's pass read the input rows again from L3, the lines
    of the pixels the stride skips too (ResNet-50's 256 -> 512 downsampling at 56 x 56: 32 passes over 1.6 MB);
    row by row, a row of the input stays in L2 for all the output blocks.  On znver3, one thread, in a run of the
    model: that layer 14% faster, 512 -> 1024 at 28 x 28 3.5%.  1x1 kernels without a stride were 2-12% slower
    so: their output block's weights no longer stay in L1 over the rows."""
    return not _has_window(conv) and _strided(conv)


def _kernel_slice_bytes(conv):
    """Bytes of the kernel one output-channel block reads: (C/ic, KH, KW, ic, oc) of (O/oc, ...)."""
    k = conv.input_tensors[1]
    return _bytes(k) // max(1, const_or_none(k.shape[0]) or 1)


@with_cpu_target
def schedule_conv2d_NCHWc(outs, target=None, width=None):
    """Schedule a fused group whose anchor is ``conv2d_NCHWc``: a (``width`` x ``oc``) register tile
    accumulated over the reduction, then passed through the group's elementwise stages."""
    s, outs, conv, tile_out = fused_group(outs, ("conv2d_NCHWc",), "schedule_conv2d_NCHWc", target)
    ct = conv.output(0)
    unroll_kw = False
    if nchwc_config_hook is not None and width is None:
        width, unroll_kw = nchwc_config_hook(ct, target) or (None, False)
    # the tiling: register tiles cut from a run of several rows' pixels, from each row of a task of several
    # rows (a kernel too large for L2, streamed), or from each row of a task of one
    flat = _flat_rows(tile_out, target) if FLAT_TILES and width is None else None
    large = _kernel_slice_bytes(conv) >= _stream_bytes(conv)
    streamed = not flat and large and const_or_none(tile_out.shape[2]) is not None
    rows = flat or (STREAM_ROWS if streamed else 1)
    in_task = []
    for t in conv.input_tensors:
        if isinstance(t.op, ComputeOp):     # the padded input, a transformed kernel
            axes = s[t.op].op.axis
            # a large padded input (a stem's image) and the layout transform feeding it are split by rows
            # over the threads; a small one is made in each task, the rows it reads (no pass of its own
            # before the parallel loop: 13-22% faster on the small CNN's convolutions)
            big = len(axes) == 5 and t is conv.input_tensors[0] and _bytes(t) >= PARALLEL_PAD_BYTES
            if big:
                for src in t.op.input_tensors:
                    if isinstance(src.op, ComputeOp) and not src.op.reduce_axis and len(src.shape) == 5 and \
                            s[src.op].attach_type != "inline" and all(src.op is not o.op for o in outs):
                        s[src.op].parallel(s[src.op].fuse(*s[src.op].op.axis[:3]))
            elif len(axes) == 5 and t is conv.input_tensors[0] and \
                    _task_pad_bytes(conv, t, rows) <= TASK_PAD_BYTES and \
                    not any(isinstance(x.op, ComputeOp) for x in t.op.input_tensors):
                # (a layout transform feeding it stays a pass of its own: read in place by the padding, a
                # gather per element, the small CNN's first layer took 18 us instead of 12)
                in_task.append(t)
                continue
            s[t.op].parallel(s[t.op].fuse(*axes[:3 if big else 2]))
            s[t.op].vectorize(axes[-1])
    acc = s.cache_write(ct, "global") if tile_out.op is conv else ct
    if flat:
        # (streamed too with a window: ResNet-50's 3x3 stride-2 layer of 512 channels 2% faster on one thread,
        # 8% on two; its 1x1 2048 -> 512 layer 5% slower so)
        task = register_tile_flat(s, tile_out, acc, target, flat, width, stream=large and _has_window(conv))
    elif streamed:
        task = register_tile_streamed(s, tile_out, acc, target, width)
    else:
        task = register_tile_blocked(s, tile_out, acc, target, width, unroll_kw=unroll_kw,
                                     rows_outer=_skips_pixels(conv))
    for t in in_task:
        s[t.op].compute_at(s[tile_out], task)
        s[t.op].vectorize(s[t.op].op.axis[-1])
    return schedule_others(s, outs, conv, tile_out, target)


@with_cpu_target
def schedule_conv2d_transpose_nchw(outs, target=None, width=None):
    """Schedule a fused group whose anchor is a transposed convolution: the NCHW convolution's register
    tiles over the spread and padded input."""
    return _schedule_blocked(outs, ("conv2d_transpose_nchw",), "schedule_conv2d_transpose_nchw", target, width)
