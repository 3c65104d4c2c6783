"""CUDA schedules for dense, matmul and batch_matmul: shared-memory and register tiling.

Large products: each block computes a ``tile_m x tile_n`` tile of the output with ``threads_m x
threads_n`` threads (16 x 16), each thread's outputs kept in registers (``cache_write(..., "local")``):
4 x 4 in 64 x 64 tiles, or 8 x 8 in 128 x 128 tiles where those still make ``LARGE_BLOCKS`` blocks
(two runs of 4 each way, 64 apart).  The reduction runs in steps of ``tile_k``: the two ``tile x
tile_k`` slices of the inputs are fetched into shared memory by all the threads of the block together
(cooperative fetching, float4 loads where the rows are multiples of 4) and double buffered, so the next
slice loads while this one is used.  The slices are stored as rows of k (``transform_layout``; the copy
of a k-innermost operand transposes, four words stored per float4 read, walked in 32-byte pieces so a
warp's stores hit distinct banks), so a thread's 4 consecutive rows or columns for one k are one float4
read from shared memory: 8 x 8 outputs take 4 reads per 64 FMAs.

Few rows (``M <= small_rows``, a matrix-vector product such as batch-1 inference): a block per group of
outputs, the reduction split over a warp's lanes (``rfactor``) and combined by warp shuffles.

Elementwise operators fused after the product (bias, activation) are computed where each output is
written.  Shapes the tiles do not divide are guarded.
"""
from __future__ import annotations

from ... import te
from ...codegen.cuda_vector import VECTOR_TYPES
from ...errors import ScheduleError
from ...ir import dtype as dt
from ...ir.expr import ProducerLoad
from ...ir.functor import post_order_visit
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..utils import const_or_none
from .tiling import cooperative_fetch, fetch_lanes, register_tile

TILE = None        # output tile per block, each way (None: LARGE_TILE for large products, else SMALL_TILE)
SMALL_TILE = 64
LARGE_TILE = 128
LARGE_BLOCKS = 256  # blocks the large tiles must make (about two per multiprocessor of an H100)
THREADS = 16       # threads per block, each way (16 x 16 = 256)
VTHREAD = 2        # virtual threads per block, each way
TILE_K = None      # reduction step held in shared memory (None: by the reduction's length)
SHARED_BYTES = 48 * 1024   # a block's static shared memory
SMALL_ROWS = 16    # at most this many rows: the matrix-vector schedule
WARP = 32
# operands in shared memory as rows of k (a thread's rows or columns for one k side by side, read as one
# float4), each row 4 words past a multiple of 32 so the transposing stores of the copy spread over banks
K_OUTER = True
ROW_ALIGN = (32, 4)
SECTOR = 32        # bytes of a global memory transaction
GEMV_LANES = 4     # consecutive elements a lane of the matrix-vector schedule reads at once


def _product(outs, what):
    """The group's product stage (tag dense / matmul / batch_matmul) and the outputs."""
    outs = as_outputs(outs, f"topi.cuda.{what}")
    found = []

    def visit(t):
        op = t.op
        if not isinstance(op, ComputeOp) or op in [f.op for f in found]:
            return
        if op.reduce_axis and len(op.reduce_axis) == 1 and len(op.axis) in (2, 3):
            found.append(t)
            return
        for x in op.input_tensors:
            visit(x)
    for o in outs:
        visit(o)
    if not found:
        raise ScheduleError(f"topi.cuda.{what}: no product (a compute over one reduce axis of a 2-D or 3-D "
                            f"output) among the outputs {[o.op.name for o in outs]}")
    return found[0], outs


def _inline_rest(s, product, outs):
    for st in list(s.stages):
        op = st.op
        if isinstance(op, ComputeOp) and op is not product.op and op not in [o.op for o in outs] \
                and not op.reduce_axis:
            s[op].compute_inline()


# tvmlab.autotvm sets this: ``config_hook(product, target)`` returns the choices of the current dispatch
# context's config for the product's workload (the keys of ``hand_written``), or None for the hand-written ones
config_hook = None


def _row(n):
    """Words of a shared row of ``n`` elements padded to ROW_ALIGN."""
    f, o = ROW_ALIGN
    return n + (f + o - n % f) % f


def shared_bytes(rows, cols, tile_k, elem=4):
    """Shared memory of the tiled schedule, double buffered: two operand slices of ``rows`` and ``cols``
    elements by ``tile_k``, stored as ``tile_k`` padded rows (K_OUTER), else as rows of ``tile_k`` padded
    by one word (see storage_align)."""
    if K_OUTER:
        return 2 * tile_k * (_row(rows) + _row(cols)) * elem
    return 2 * (rows + cols) * (tile_k + 1) * elem


def _blocks(C, tile):
    """Blocks of ``tile`` x ``tile`` outputs the product ``C`` makes (None if its shape is not constant)."""
    dims = [const_or_none(x) for x in C.shape]
    if None in dims:
        return None
    n = -(-dims[-2] // tile) * -(-dims[-1] // tile)
    for d in dims[:-2]:
        n *= d
    return n


def _thread_split(tile, threads):
    """(vthreads, threads, per thread) of one way of the tile: with the operands stored k outermost
    (K_OUTER), a thread's outputs are runs of 4 (one float4 read each), the runs ``tile / vthreads`` apart;
    else VTHREAD virtual threads of consecutive outputs (TVM's bank-conflict avoidance)."""
    if tile % threads:
        raise ScheduleError(f"topi.cuda: tile {tile} must be a multiple of threads ({threads})")
    per = tile // threads
    if K_OUTER:
        return (per // 4, threads, 4) if per > 4 and per % 4 == 0 else (1, threads, per)
    if tile % (threads * VTHREAD):
        raise ScheduleError(f"topi.cuda: tile {tile} must be a multiple of threads x vthreads "
                            f"({threads} x {VTHREAD})")
    return (VTHREAD, threads, tile // (threads * VTHREAD))


def hand_written(C, tile=TILE, threads=THREADS, tile_k=TILE_K, small_rows=SMALL_ROWS):
    """The hand-written choices for product ``C``: {"y", "x": (vthreads, threads, per thread), "tile_k",
    "unroll": (auto_unroll_max_step, unroll_explicit)}; with few rows {"lanes", "per_block", "unroll"}.
    ``tile`` None: LARGE_TILE where that still makes LARGE_BLOCKS blocks, else SMALL_TILE."""
    rows = const_or_none(C.op.axis[-2].dom.extent)
    if rows is not None and rows <= small_rows:
        return {"lanes": WARP, "per_block": 8, "unroll": (0, 1)}
    if tile is None:
        # 8 x 8 outputs a thread in 128 x 128 tiles halve the shared reads and the L2 bytes per FMA of
        # 4 x 4 in 64 x 64, but a 1024^3 product would make only 64 blocks of them for 132 multiprocessors
        tile = LARGE_TILE if K_OUTER and (_blocks(C, LARGE_TILE) or 0) >= LARGE_BLOCKS else SMALL_TILE
    split = _thread_split(tile, threads)
    if tile_k is None:
        # longer steps between barriers where the reduction is long (H100, fp32, 4096^3: 8 -> 23, 16 -> 27,
        # 32 -> 31 TFLOP/s at 64 x 64 tiles)
        k = const_or_none(C.op.reduce_axis[0].dom.extent) or 1 << 30
        tile_k = 32 if k >= 256 else 16 if k >= 16 else 8
        while tile_k > 8 and shared_bytes(tile, tile, tile_k) > SHARED_BYTES:
            tile_k //= 2
    return {"y": split, "x": split, "tile_k": tile_k, "unroll": (0, 1)}


def schedule_product(outs, target="cuda", what="schedule_dense", tile=TILE, threads=THREADS, tile_k=TILE_K,
                     small_rows=SMALL_ROWS):
    """The tiled schedule of a dense / matmul / batch_matmul group (see the module docstring).  Inside an
    AutoTVM dispatch context (and with the default options) the context's config chooses the tiles."""
    if str(target).split()[0] != "cuda":
        raise ScheduleError(f"topi.cuda.{what} is a CUDA schedule (target 'cuda'), got {target!r}")
    C, outs = _product(outs, what)
    s = te.create_schedule([o.op for o in outs])
    _inline_rest(s, C, outs)
    choices = None
    if config_hook is not None and (tile, threads, tile_k, small_rows) == (TILE, THREADS, TILE_K, SMALL_ROWS):
        choices = config_hook(C, target)
    if choices is None:
        choices = hand_written(C, tile, threads, tile_k, small_rows)
    if "lanes" in choices:
        return _matrix_vector(s, C, outs, choices["per_block"], choices["lanes"], choices["unroll"])
    return _tiled(s, C, outs, choices["y"], choices["x"], choices["tile_k"], choices["unroll"],
                  choices.get("vector_fetch", True))


def kernel_scope(s, out, axis, unroll):
    """TVM's unrolling knobs as pragmas on a loop of extent 1 around the kernel (split off ``axis``, which
    must be the output's outermost); returns (scope or None, the rest of ``axis``).  The hand-written
    choice (0, 1) adds nothing."""
    if tuple(unroll) == (0, 1):
        return None, axis
    scope, axis = s[out].split(axis, nparts=1)
    s[out].pragma(scope, "auto_unroll_max_step", int(unroll[0]))
    s[out].pragma(scope, "unroll_explicit", bool(unroll[1]))
    return scope, axis


def _out_stage(s, C, outs):
    """The stage whose loops carry the threads: the single output (C itself, or an elementwise tail)."""
    if len(outs) != 1:
        raise ScheduleError(f"topi.cuda: a product group with {len(outs)} outputs; schedule each separately")
    out = outs[0]
    if out.op is not C.op:
        if len(out.op.axis) != len(C.op.axis):
            raise ScheduleError(f"topi.cuda: the output {out.op.name!r} does not have the product's shape")
    return out


def _split3(s, out, axis, split):
    """Split ``axis`` into block, virtual thread, thread and per-thread loops: ``split`` = (vthreads,
    threads, per thread); element block * tile + v * (tile / vthreads) + t * per + i."""
    v, t, i = split
    b, rest = s[out].split(axis, factor=v * t * i)
    va, rest = s[out].split(rest, nparts=v)
    ta, ia = s[out].split(rest, nparts=t)
    return b, va, ta, ia


def _k_dim(C, operand):
    """Which dimension of ``operand`` the product's reduction variable indexes (None if none alone)."""
    k = C.op.reduce_axis[0].var
    found = []

    def visit(n):
        if isinstance(n, ProducerLoad) and n.producer is operand:
            found.extend(d for d, e in enumerate(n.indices) if e is k)
    post_order_visit(C.op.body[0], visit)
    return found[0] if len(set(found)) == 1 else None


def _k_outer(s, copy, k_dim, lanes, tile_k):
    """Store shared ``copy`` with the reduction axis outermost of its last two (rows of ``k``), each row
    padded to ``ROW_ALIGN``, so the consecutive rows or columns a thread owns for one ``k`` are one aligned
    vector read.  Returns the copy's loops in the order to fetch them: its source's order (coalesced global
    reads), except that a transposed copy is walked in 32-byte pieces of its rows (one sector each), a warp
    covering 16 rows or more, so that the transposing stores of a warp fall into distinct banks."""
    axes = list(s[copy].op.axis)
    n = len(axes)
    if k_dim == n - 1:          # k innermost in the source (A, and dense's weight): stored transposed
        s[copy].transform_layout(lambda *ax: [*ax[:-2], ax[-1], ax[-2]])
        s[copy].reorder(*axes)
        s[copy].storage_align(axes[-1], *ROW_ALIGN)
        piece = SECTOR // dt.itemsize(str(copy.dtype))
        if lanes > 1 and piece % lanes == 0 and tile_k > piece and tile_k % piece == 0:
            ko, ki = s[copy].split(axes[-1], factor=piece)
            s[copy].reorder(*axes[:-2], ko, axes[-2], ki)
            return [*axes[:-2], ko, axes[-2], ki]
    elif k_dim == n - 2:        # k already outer (matmul's B)
        s[copy].storage_align(axes[-2], *ROW_ALIGN)
    return axes


def _tiled(s, C, outs, ysplit, xsplit, tile_k, unroll=(0, 1), vector_fetch=True):
    out = _out_stage(s, C, outs)
    A, B = C.op.input_tensors[:2]
    CL, (AA, BB) = register_tile(s, C, out, [A, B])
    AL = s.cache_read(AA, "local", [CL])
    BL = s.cache_read(BB, "local", [CL])
    axes = list(s[out].op.axis)
    scope, axes[0] = kernel_scope(s, out, axes[0], unroll)
    y, x = axes[-2], axes[-1]
    # row by*tile + vy*(tile/VT) + ty*(per/VT) + ym: each thread owns VT x VT small register tiles, one per
    # virtual thread, so neighbouring threads read words of shared memory VT tiles apart
    by, vy, ty, ym = _split3(s, out, y, ysplit)
    bx, vx, tx, xm = _split3(s, out, x, xsplit)
    lead = axes[:-2]
    s[out].reorder(*([scope] if scope is not None else []), *lead, by, bx, vy, vx, ty, tx, ym, xm)
    if lead:
        s[out].bind(s[out].fuse(*lead) if len(lead) > 1 else lead[0], te.thread_axis("blockIdx.z"))
    s[out].bind(by, te.thread_axis("blockIdx.y"))
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(vy, te.thread_axis("vthread", name="vy"))
    s[out].bind(vx, te.thread_axis("vthread", name="vx"))
    s[out].bind(ty, te.thread_axis("threadIdx.y"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[out], tx)
    k = s[CL].op.reduce_axis[0]
    ko, ki = s[CL].split(k, factor=tile_k)
    cl_axes = list(s[CL].op.axis)
    s[CL].reorder(ko, ki, *cl_axes)
    for X, src, split in ((AA, A, ysplit), (BB, B, xsplit)):
        s[X].compute_at(s[CL], ko)
        s[X].double_buffer()
        k_dim = _k_dim(C, src)
        # the copied region's last axis: tile_k long where k is innermost in the source, else a tile's rows
        last = tile_k if k_dim in (None, len(X.shape) - 1) else split[0] * split[1] * split[2]
        lanes = fetch_lanes(X) if vector_fetch else 1
        lanes = lanes if last % lanes == 0 else 1
        fetch = None
        if K_OUTER:
            fetch = _k_outer(s, X, k_dim, lanes, tile_k)
        elif tile_k > 1:
            # rows tile_k + 1 words apart: the lanes of a warp read their rows from different banks
            s[X].storage_align(s[X].op.axis[-2], tile_k, 1)
        cooperative_fetch(s, X, (("threadIdx.y", ysplit[1]), ("threadIdx.x", xsplit[1])), lanes, fetch)
    for X in (AL, BL):
        s[X].compute_at(s[CL], ki)
        for ax in s[X].op.axis:
            s[X].unroll(ax)
    # constant indices into the per-thread tiles keep them in registers
    s[CL].unroll(ki)
    for ax in cl_axes[-2:]:
        s[CL].unroll(ax)
    s[out].unroll(ym)
    s[out].unroll(xm)
    return s


def _matrix_vector(s, C, outs, per_block=8, lanes=WARP, unroll=(0, 1)):
    """Few rows: each output's reduction over ``lanes`` threads (a warp: rfactor, combined by shuffles),
    ``per_block`` outputs per block on threadIdx.y; one lane writes each output.  Where both operands
    keep k innermost and the reduction is a whole number of ``lanes x 4``, each lane reads 4 consecutive
    elements of each at a time (one float4 into registers), not one."""
    out = _out_stage(s, C, outs)
    k = s[C].op.reduce_axis[0]
    K = const_or_none(k.dom.extent)
    operands = C.op.input_tensors[:2]
    wide = K is not None and K % (lanes * GEMV_LANES) == 0 and \
        all(_k_dim(C, t) == len(t.shape) - 1 and (str(t.dtype), GEMV_LANES) in VECTOR_TYPES for t in operands)
    if wide:
        ko, kv = s[C].split(k, factor=GEMV_LANES)
        _, ki = s[C].split(ko, factor=lanes)
    else:
        _, ki = s[C].split(k, factor=lanes)
    CF = s.rfactor(C, ki)
    if wide:
        step = s[CF].op.reduce_axis[0]
        for t in operands:
            local = s.cache_read(t, "local", [CF])
            s[local].compute_at(s[CF], step)
            s[local].vectorize(s[local].op.axis[-1])
    axes = list(s[out].op.axis)
    scope, axes[0] = kernel_scope(s, out, axes[0], unroll)
    if scope is not None:
        s[out].reorder(scope, *axes)
    fused = s[out].fuse(*axes) if len(axes) > 1 else axes[0]
    bx, ty = s[out].split(fused, factor=per_block)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(ty, te.thread_axis("threadIdx.y"))
    lane = te.thread_axis("threadIdx.x")
    if out.op is not C.op:
        s[C].compute_at(s[out], ty)
        s[out].set_store_predicate(lane.var.equal(0))
    s[C].bind(s[C].op.reduce_axis[0], lane)
    s[CF].compute_at(s[C], s[C].op.reduce_axis[0])
    s[C].set_store_predicate(lane.var.equal(0))
    return s


def schedule_dense(outs, target="cuda"):
    """CUDA ``schedule_dense``: tiled (shared memory, registers, double buffering) or matrix-vector."""
    return schedule_product(outs, target, "schedule_dense")


def schedule_matmul(outs, target="cuda"):
    """CUDA ``schedule_matmul``: as ``schedule_dense``."""
    return schedule_product(outs, target, "schedule_matmul")


def schedule_batch_matmul(outs, target="cuda"):
    """CUDA ``schedule_batch_matmul``: as ``schedule_dense``, one grid layer (blockIdx.z) per batch."""
    return schedule_product(outs, target, "schedule_batch_matmul")
