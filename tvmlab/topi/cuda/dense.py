"""CUDA schedules for dense, matmul and batch_matmul: shared-memory and register tiling.

Large products: each block computes a ``tile_m x tile_n`` tile of the output with ``threads_m x
threads_n`` threads, each thread ``tile_m / threads_m x tile_n / threads_n`` outputs kept in registers
(``cache_write(..., "local")``), strided by the thread count so neighbouring threads read neighbouring
shared-memory words (no bank conflicts, as TVM's virtual threads do).  The reduction runs in steps of
``tile_k``: the two ``tile x tile_k`` slices of the inputs are fetched into shared memory by all the
threads of the block together (cooperative fetching) and double buffered, so the next slice loads while
this one is used; each thread then reads its operands from shared memory into registers.  Where the
inputs' rows and ``tile_k`` are multiples of 4, each thread fetches 4 consecutive elements at once (a
vectorized loop: one float4 load; the shared rows keep their one-word padding against bank conflicts,
so the stores into shared memory are per lane).

Few rows (``M <= small_rows``, a matrix-vector product such as batch-1 inference): a block per group of
outputs, the reduction split over a warp's lanes (``rfactor``) and combined by warp shuffles.

Elementwise operators fused after the product (bias, activation) are computed where each output is
written.  Shapes the tiles do not divide are guarded.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..utils import const_or_none
from .tiling import cooperative_fetch, fetch_lanes, register_tile

TILE = 64          # output tile per block, each way
THREADS = 16       # threads per block, each way (16 x 16 = 256)
VTHREAD = 2        # virtual threads per block, each way
TILE_K = None      # reduction step held in shared memory (None: by the reduction's length)
SHARED_BYTES = 48 * 1024   # a block's static shared memory
SMALL_ROWS = 16    # at most this many rows: the matrix-vector schedule
WARP = 32


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


def shared_bytes(rows, cols, tile_k, elem=4):
    """Shared memory of the tiled schedule: two operand slices of ``rows`` and ``cols`` rows of ``tile_k``
    words (padded by one word, see storage_align), double buffered."""
    return 2 * (rows + cols) * (tile_k + 1) * elem


def hand_written(C, tile=TILE, threads=THREADS, tile_k=TILE_K, small_rows=SMALL_ROWS):
    """The hand-written choices for product ``C``: {"y", "x": (vthreads, threads, per thread), "tile_k",
    "unroll": (auto_unroll_max_step, unroll_explicit)}; with few rows {"lanes", "per_block", "unroll"}."""
    rows = const_or_none(C.op.axis[-2].dom.extent)
    if rows is not None and rows <= small_rows:
        return {"lanes": WARP, "per_block": 8, "unroll": (0, 1)}
    if tile % (threads * VTHREAD):
        raise ScheduleError(f"topi.cuda: tile {tile} must be a multiple of threads x vthreads "
                            f"({threads} x {VTHREAD})")
    if tile_k is None:
        # longer steps between barriers where the reduction is long (H100, fp32, 4096^3: 8 -> 23, 16 -> 27,
        # 32 -> 31 TFLOP/s at 64 x 64 tiles)
        k = const_or_none(C.op.reduce_axis[0].dom.extent) or 1 << 30
        tile_k = 32 if k >= 256 else 16 if k >= 16 else 8
        while tile_k > 8 and shared_bytes(tile, tile, tile_k) > SHARED_BYTES:
            tile_k //= 2
    split = (VTHREAD, threads, tile // (threads * VTHREAD))
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
    for X in (AA, BB):
        s[X].compute_at(s[CL], ko)
        s[X].double_buffer()
        if tile_k > 1:
            # rows tile_k + 1 words apart: the lanes of a warp read their rows from different banks
            s[X].storage_align(s[X].op.axis[-2], tile_k, 1)
        lanes = fetch_lanes(X) if vector_fetch else 1
        cooperative_fetch(s, X, (("threadIdx.y", ysplit[1]), ("threadIdx.x", xsplit[1])),
                          lanes if tile_k % lanes == 0 else 1)
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
    ``per_block`` outputs per block on threadIdx.y; one lane writes each output."""
    out = _out_stage(s, C, outs)
    _, ki = s[C].split(s[C].op.reduce_axis[0], factor=lanes)
    CF = s.rfactor(C, ki)
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
