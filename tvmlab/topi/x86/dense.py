"""CPU schedules for ``topi.nn.dense`` / ``matmul`` / ``batch_matmul``, each handling a fused group.

    out = topi.nn.relu(topi.nn.dense(X, W, b)); s = topi.x86.schedule_dense([out])
    C = topi.matmul(A, B); s = topi.x86.schedule_matmul(C)      # topi.schedule_matmul

The blocked product of ``topi.matmul`` gets the register-blocked kernel a BLAS would use, written with
schedule primitives: a ``rows x block`` tile of C is accumulated over the whole reduction in a write
cache that LLVM keeps in vector registers (rows unrolled, columns vectorised; ``rows`` is as many as the
target's registers hold: 6 with AVX2's 16, 12 with AVX-512's 32) and stored once.  The columns are cut
into blocks whose B panels stay in the last-level cache, and the (column block, row block) tasks are
spread over the cores.  With at most ``STREAM_ROWS`` rows and B read in place (a matrix-vector product,
bound by memory) each task streams whole rows of B into its columns of C, which stay in L1.

With W packed (more than ``SMALL_M`` rows of X, or a constant weight packed by the graph), ``dense`` gets the
same register tiles, passed through the group's elementwise stages (bias, activation) as they are stored; with
fewer rows than a tile holds (a batch-1 classifier), a tile of all of them spans several W panels.  With few
rows and W read in place, each output is a dot product of a row of W with a row of X: the reduction is
split into vector-wide partial sums (``rfactor``), and the output columns are spread over the cores.
A plain ``matmul`` and ``batch_matmul`` use the same register tiles, B read in place (or, transposed,
through packed panels), one task per (batch, row block).
"""
from __future__ import annotations

from ...codegen.llvm_vector import vector_registers
from ...errors import ScheduleError
from ...ir import dtype as dt
from ...ir.tensor import ComputeOp
from ..utils import check_options, const_or_none, find_stage_input, vector_block, with_cpu_target
from .injective import fused_group, lanes_of, schedule_others, transpose_blocks
from .matmul_kernel import intrin_matmul_tile

MAX_ROWS = 12           # rows per register tile, at most
B_BLOCK_BYTES = 4 << 20  # the B panels of one column block: they stay in the last-level cache
K_UNROLL = 4            # reduction steps per unrolled loop body
STREAM_ROWS = 4         # at most this many rows (B in place): rows of B streamed whole (matrix-vector products)
STREAM_BYTES = 16 << 10  # the rows of C one task adds into when streaming: they stay in L1
# at most this many W panels side by side in a register tile of few rows: MobileNet-V2's classifier (1280 -> 1000,
# batch 1) on znver3, one thread: 0.135 -> 0.079 ms with W in cache, 0.84 -> 0.53 ms with W cold (onnxruntime
# 0.79-0.94); two panels were as fast as four, three slower than one
WIDE_PANELS = 4
DOT_COLS = 16        # output columns of one parallel task in the dot-product form

# Set by tvmlab.autotvm when it is imported (topi does not import it): ``hook(C, target)`` gives
# tuned ``schedule_matmul`` options from the current dispatch context (apply_history_best), or None.
config_hook = None


def tile_rows(block, dtype, target="llvm"):
    """Rows of the register tile: as many as leave registers for one B row and a broadcast of A."""
    regs = vector_registers(target)
    vectors = regs.holding(block, dtype)
    return max(1, min(MAX_ROWS, (regs.count - vectors - 1) // vectors))


def accumulate_in_registers(acc, block=None):
    """Schedule a register tile's update stage ``acc`` (rows x vector columns, one reduction):
    the reduction outermost in steps of K_UNROLL, each step unrolled over k and rows, the
    columns one vector (or, with ``block``, panels of ``block`` columns, unrolled), so the tile stays in
    registers for the whole reduction.  Returns the loop of the steps."""
    *_, ci, cj = acc.op.axis
    (ck,) = acc.op.reduce_axis
    ko, ki = acc.split(ck, factor=K_UNROLL)
    cols = (cj,)
    if block is not None:
        cols = acc.split(cj, factor=block)
    acc.reorder(ko, ki, ci, *cols)
    acc.unroll(ki)
    acc.unroll(ci)
    if len(cols) == 2:
        acc.unroll(cols[0])
    acc.vectorize(cols[-1])
    return ko


def register_tiles_in_blocks(s, acc, out, rows, row_block, block, panels=None, parallel=True, wide=1):
    """Tasks of ``row_block`` rows of ``out`` (its last two axes; any before them are batches), each
    computing ``acc`` one ``rows x block`` register tile at a time (``rows x wide * block``: ``wide``
    panels side by side), accumulated over the whole reduction; with ``panels``, the columns are cut into
    blocks of that many panels of ``block``, outermost.  The tasks run on the cores unless
    ``parallel=False`` (one thread)."""
    *lead, i, j = s[out].op.axis
    io, ii = s[out].split(i, factor=row_block)
    jo, ji = s[out].split(j, factor=block * wide)
    outer, inner = (jo,), ()
    if panels is not None:
        outer, inner = s[out].split(jo, factor=panels)
        outer, inner = (outer,), (inner,)
    iio, iii = s[out].split(ii, factor=rows)
    s[out].reorder(*outer, *lead, io, *inner, iio, iii, ji)
    task = s[out].fuse(*outer, *lead, io)
    if parallel:
        s[out].parallel(task)
    s[out].unroll(iii)
    s[out].vectorize(ji)
    s[acc].compute_at(s[out], iio)
    accumulate_in_registers(s[acc], block if wide > 1 else None)


def _dot(s, dense, out, target):
    """Few rows: vector partial sums over k, one column block per task."""
    lanes = lanes_of(dense.output(0).dtype, target)
    (k,) = s[dense].op.reduce_axis
    K = const_or_none(k.dom.extent)
    vec = 2 * lanes if K is None or K >= 2 * lanes else max(1, K)
    ko, ki = s[dense].split(k, factor=vec)
    rf = s.rfactor(dense.output(0), ki)
    i, j = s[out].op.axis
    jo, ji = s[out].split(j, factor=DOT_COLS)
    s[out].reorder(jo, i, ji)
    s[out].parallel(jo)
    if out.op is dense:
        s[rf].compute_at(s[dense], ji)
    else:
        s[dense].compute_at(s[out], ji)
        s[rf].compute_at(s[dense], s[dense].op.axis[-1])
    lanes_axis = s[rf].op.axis[0]
    s[rf].reorder(*[a for a in s[rf].leaf_iter_vars if a is not lanes_axis], lanes_axis)
    s[rf].vectorize(lanes_axis)


def _packed(s, dense, out, target):
    """Register-tiled: rows x block tiles of the output, W panels packed."""
    block = int(dense.attrs["block"])
    for wp in dense.input_tensors:
        if isinstance(wp.op, ComputeOp) and wp.op.name.endswith("_pack"):
            transpose_blocks(s, wp)
    rows = tile_rows(block, dense.output(0).dtype, target)
    if out.op is dense:
        acc = s.cache_write(dense.output(0), "global")
    else:
        acc = dense
    M = const_or_none(out.shape[-2])   # leading axes (dense_pack of (..., M, K) data): a product each
    wide = 1
    if M is not None and M < rows:
        # few rows (an RNN step, a batch-1 classifier): a tile of all of them, as many panels wide as the
        # accumulators allow, so that many independent sums (and streams of W) are in flight
        wide = min(WIDE_PANELS, rows // M)
        rows = M
    row_block = 2 * rows if M is None else min(2 * rows, -(-M // rows) * rows)
    register_tiles_in_blocks(s, acc, out, rows, row_block, block, parallel=not _tiny(out, dense), wide=wide)


SERIAL_MACS = 1 << 17   # a product of fewer multiply-adds (an RNN step's, a few microseconds) runs on one thread


def _tiny(out, dense):
    """Whether the product is too small to pay for waking and joining a thread team (static shapes only)."""
    n = 1
    for d in list(out.shape) + [dense.reduce_axis[0].dom.extent]:
        v = const_or_none(d)
        if v is None:
            return False
        n *= v
    return n < SERIAL_MACS


@with_cpu_target
def schedule_dense(outs, target=None):
    """Schedule a fused group whose anchor is ``dense`` / ``dense_pack``."""
    s, outs, dense, tile_out = fused_group(outs, ("dense", "dense_pack"), "schedule_dense", target)
    if int(dense.attrs.get("packed", 0)):
        _packed(s, dense, tile_out, target)
    else:
        _dot(s, dense, tile_out, target)
    return schedule_others(s, outs, dense, tile_out, target)


def dense_nopack(data, weight, bias=None, out_dtype=None):
    """``topi.nn.dense`` with the weight read in place: each output a vectorised dot product (TVM's
    x86 ``dense_nopack``)."""
    from ..nn.dense import dense
    return dense(data, weight, bias, out_dtype, packed=False)


def dense_pack(data, weight, bias=None, out_dtype=None):
    """``topi.nn.dense`` with the weight (N, K) packed into vector-wide panels inside the operator, for
    register tiles (TVM's x86 ``dense_pack``; ``topi.nn.dense_pack`` takes an already packed weight)."""
    from ..nn.dense import dense
    return dense(data, weight, bias, out_dtype, packed=True)


def schedule_dense_nopack(outs, target=None):
    """``schedule_dense`` of a ``dense_nopack`` group."""
    return schedule_dense(outs, target)


def schedule_dense_pack(outs, target=None):
    """``schedule_dense`` of a ``dense_pack`` group."""
    return schedule_dense(outs, target)


def _register_tiles(s, anchor, out, block, target):
    """``rows x block`` tiles of ``out`` (its last two axes; any axes before them are batches), each
    accumulated over the whole reduction in registers, one task per (batch, row block)."""
    rows = tile_rows(block, out.dtype, target)
    acc = s.cache_write(anchor.output(0), "global") if out.op is anchor else anchor
    *batch, i, j = s[out].op.axis
    io, ii = s[out].split(i, factor=rows)
    jo, ji = s[out].split(j, factor=block)
    s[out].reorder(*batch, io, jo, ii, ji)
    s[out].parallel(s[out].fuse(*batch, io) if batch else io)
    s[out].unroll(ii)
    s[out].vectorize(ji)
    s[acc].compute_at(s[out], jo)
    accumulate_in_registers(s[acc])


@with_cpu_target
def schedule_matmul(outs, target=None, rows=None, row_block=None, k_chunk=None, col_block=None, tensorize=False):
    """Schedule a fused group whose anchor is ``topi.nn.matmul`` (``topi.schedule_matmul``).

    The blocked product of ``topi.matmul`` gets the BLAS kernel's loop nest: ``rows`` (register tile rows,
    default ``tile_rows``), ``row_block`` (rows per task, default two tiles) and ``col_block`` (columns per
    block, default: its B panels fill ``B_BLOCK_BYTES``) shape the loops.  ``k_chunk=None`` accumulates
    each tile over the whole reduction in registers; a number instead accumulates in C, ``k_chunk``
    reduction steps at a time.  ``tensorize=True`` computes each register tile with the LLVM micro-kernel
    of ``matmul_kernel`` (B packed, and A too -- ``topi.matmul(A, B, rows=R)`` -- unless a tile height near
    ``tile_rows`` divides the rows of A).  A fused tail (bias, activation) goes through each register tile
    as it is stored; ``k_chunk`` and ``tensorize`` need the product as the output.

    A plain product gets register tiles, B read in place (a transposed B is ``dense``, scheduled by
    ``schedule_dense``)."""
    s, outs, mm, out = fused_group(outs, ("matmul", "dense", "dense_pack"), "schedule_matmul", target)
    check_options("schedule_matmul", rows=rows, row_block=row_block, k_chunk=k_chunk, col_block=col_block)
    if "packed_b" in (mm.attrs or {}):
        _schedule_blocked(s, mm.output(0), out, target, rows, row_block, k_chunk, col_block, tensorize)
        return schedule_others(s, outs, mm, out, target)
    if tensorize or any(x is not None for x in (rows, row_block, k_chunk, col_block)):
        raise ScheduleError(f"schedule_matmul: rows, row_block, k_chunk, col_block and tensorize shape the blocked "
                            f"product of topi.matmul (topi.nn.matmul(..., blocked=True)); {mm.name!r} is not one")
    if mm.tag in ("dense", "dense_pack"):
        return schedule_dense(outs, target)
    _register_tiles(s, mm, out, vector_block(out.dtype, target), target)
    return schedule_others(s, outs, mm, out, target)


def _col_block(K, dtype):
    """Columns per block whose B panels (``K`` rows each) fill ``B_BLOCK_BYTES``."""
    return B_BLOCK_BYTES // ((K or 512) * max(1, dt.parse(dtype)[1] // 8))


def _schedule_blocked(s, C, out, target, rows, row_block, k_chunk, col_block, tensorize):
    """``schedule_matmul`` of ``C = topi.matmul(A, B)``, its tiles' loops in ``out``."""
    alone = out.op is C.op
    if not alone and (tensorize or k_chunk is not None):
        raise ScheduleError(f"schedule_matmul: k_chunk and tensorize need the product {C.op.name!r} as the output, "
                            f"got {out.op.name!r} computed from it")
    options = (rows, row_block, k_chunk, col_block)
    if config_hook is not None and alone and not tensorize and all(x is None for x in options):
        rows, row_block, k_chunk, col_block = (config_hook(C, target) or {}).get("options", (None,) * 4)
    block = int(C.op.attrs["block"])
    packed_rows = int(C.op.attrs["rows"])
    tuned = any(x is not None for x in (rows, row_block, k_chunk, col_block))
    rows = packed_rows or rows or tile_rows(block, C.dtype, target)
    row_block = row_block or 2 * rows
    if tensorize:
        return _schedule_tensorized(s, C, target, col_block)
    if int(C.op.attrs["packed_b"]):
        # pack B: one panel per task, contiguous vector stores
        Bp = find_stage_input(C, "_packB")
        jp, kp, bp = s[Bp].op.axis
        s[Bp].vectorize(bp)
        s[Bp].parallel(jp)
    (k,) = s[C].op.reduce_axis
    M, K = const_or_none(C.shape[0]), const_or_none(k.dom.extent)
    if not int(C.op.attrs["packed_b"]) and M is not None and M <= STREAM_ROWS and not tuned and alone:
        return _stream(s, C, M, target)
    if M is not None:
        row_block = min(row_block, -(-M // rows) * rows)
    if k_chunk is None:
        # each tile accumulates over the whole reduction in a write cache held in registers, stored once
        N = const_or_none(C.shape[1])
        panels = max(1, (col_block or _col_block(K, C.dtype)) // block)
        if N is not None:
            count = -(-N // block)
            panels = min(panels, count)
            if col_block is None:
                # column blocks of whole, equal runs of panels: a last, shorter block leaves its columns'
                # guards in the inner loop (128 x 768 x 2304 at one thread: 4 GFLOP/s with blocks of 85 of the
                # 144 panels, 56 with 72)
                panels = max(d for d in range(1, panels + 1) if count % d == 0)
        acc = s.cache_write(C, "global") if alone else C
        register_tiles_in_blocks(s, acc, out, rows, row_block, block, panels)
    else:
        task = _accumulate_in_chunks(s, C, rows, row_block, block, k_chunk, K)
    if packed_rows:
        Ap = find_stage_input(C, "_packA")
        if k_chunk is None:      # read by the write cache: a parallel pass of its own
            s[Ap].parallel(s[Ap].op.axis[0])
        else:                    # this task's rows, packed just before use (per thread, still in cache)
            s[Ap].compute_at(s[C], task)
        s[Ap].unroll(s[Ap].op.axis[2])


def _stream(s, C, M, target):
    """Matrix-vector: memory-bound, so stream whole rows of B once, each added into the (few) rows of C
    of this task's columns, which stay in the first-level cache."""
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    lanes = vector_registers(target).lanes(C.dtype)
    cols = max(lanes, STREAM_BYTES // (M * max(1, dt.parse(C.dtype)[1] // 8)) // lanes * lanes)
    N = const_or_none(C.shape[1])
    if N is not None:           # at least two tasks
        cols = max(lanes, min(cols, -(-N // (2 * lanes)) * lanes))
    jo, ji = s[C].split(j, factor=cols)
    jio, jii = s[C].split(ji, factor=lanes)
    ko, ki = s[C].split(k, factor=K_UNROLL)     # K_UNROLL rows of B per load and store of C
    s[C].reorder(jo, ko, i, jio, ki, jii)
    s[C].parallel(jo)
    s[C].unroll(ki)
    s[C].vectorize(jii)


def _accumulate_in_chunks(s, C, rows, row_block, block, k_chunk, K):
    """Register tiles accumulated in C, ``k_chunk`` reduction steps at a time; returns the task axis."""
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    if K is not None:          # one chunk when K is small: no guard on the reduction
        k_chunk = min(k_chunk, -(-K // K_UNROLL) * K_UNROLL)
    io, ii = s[C].split(i, factor=row_block)
    jo, ji = s[C].split(j, factor=block)
    ko, ki = s[C].split(k, factor=k_chunk)
    iio, iii = s[C].split(ii, factor=rows)
    kio, kii = s[C].split(ki, factor=K_UNROLL)
    s[C].reorder(io, ko, jo, iio, kio, kii, iii, ji)
    s[C].parallel(io)
    s[C].unroll(kii)
    s[C].unroll(iii)
    s[C].vectorize(ji)
    return io


def _schedule_tensorized(s, C, target, col_block):
    """``schedule_matmul(C, tensorize=True)``: the blocked schedule with micro-kernel tiles.

    Each ``rows x block`` tile is computed by the kernel into a write cache (one tile of registers,
    stored once) and copied into C, whose edge tiles are guarded; the packed panels of A and B are
    padded, so the kernel never reads past them.
    """
    rows, block = int(C.op.attrs["rows"]), int(C.op.attrs["block"])
    M = const_or_none(C.shape[0])
    a_rows = False
    if not rows and int(C.op.attrs["packed_b"]) and M is not None:
        # A read in place: a tile height near the registers' that divides M (no edge tile to read past A)
        most = tile_rows(block, C.dtype, target)
        fits = [d for d in range(most, (most + 1) // 2 - 1, -1) if d and M % d == 0]
        if fits:
            rows, a_rows = fits[0], True
    if not rows or not int(C.op.attrs["packed_b"]):
        raise ScheduleError("schedule_matmul(tensorize=True) needs B packed, and A packed (build C with "
                            "topi.matmul(A, B, rows=R), R rows per tile: topi.x86.dense.tile_rows gives the "
                            "target's) unless a tile height near R divides the rows of A (a constant)")
    packs = [find_stage_input(C, "_packB")] + ([] if a_rows else [find_stage_input(C, "_packA")])
    for P in packs:
        s[P].parallel(s[P].op.axis[0])
        s[P].vectorize(s[P].op.axis[2])
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    K = const_or_none(k.dom.extent)
    col_block = col_block or _col_block(K, C.dtype)
    # Every tile the kernel computes must lie in the packed panels (the edge tiles are
    # padded), so the column blocks hold a number of panels that divides the panel count.
    N = const_or_none(C.shape[1])
    panels = 1
    if N is not None:
        count = -(-N // block)
        panels = max(d for d in range(1, min(count, max(1, col_block // block)) + 1) if count % d == 0)
    CC = s.cache_write(C, "global")
    io, ii = s[C].split(i, factor=rows)
    jo, ji = s[C].split(j, factor=block)
    jc, jb = s[C].split(jo, factor=panels)
    s[C].reorder(io, jc, jb, ii, ji)
    s[C].parallel(s[C].fuse(io, jc))
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], jb)
    s[CC].tensorize(s[CC].op.axis[0], intrin_matmul_tile(rows, block, k.dom.extent, C.dtype, target, a_rows))


@with_cpu_target
def schedule_batch_matmul(outs, target=None):
    """Schedule a fused group whose anchor is ``batch_matmul``: register tiles of each product (B's panels
    packed first when it is transposed), one task per (batch, row block)."""
    s, outs, bm, out = fused_group(outs, ("batch_matmul",), "schedule_batch_matmul", target)
    for t in bm.input_tensors:
        if isinstance(t.op, ComputeOp) and t.op.name.endswith("_pack"):
            transpose_blocks(s, t, lead=len(t.shape) - 2)
    _register_tiles(s, bm, out, int(bm.attrs["block"]), target)
    return schedule_others(s, outs, bm, out, target)
