"""CUDA ``schedule_reduce``: reductions scheduled by the axes they reduce.

    s = topi.cuda.schedule_reduce([topi.sum(X, axis=-1)]); f = tvm.build(s, [X, S], target="cuda")

* **rows** (the reduced axes are the innermost ones: ``sum(x, axis=-1)``, ``argmax(x, axis=1)``, relay's
  ``mean`` as a sum and a division): a warp per row for rows of up to 512 elements, eight rows a block, a
  block of 256 or 512 threads per row for longer ones; each thread sums a strided part (coalesced loads)
  and the parts combine across the threads with warp shuffles (``topi.cuda.rows``).  Stages after the
  reduction with its shape (mean's division, argmax's pick) are written by the row's first thread in the
  same kernel; injective stages before it are inlined into the loads.
* **columns** (outer axes reduced, ``sum(x, axis=0)``): a thread per kept element, the reduction serial in
  the thread; neighbouring threads read neighbouring elements, so every load of a warp is one transaction.
  With fewer than 32K kept elements (too few threads to fill a GPU) the reduction is also split over 8
  threads along ``threadIdx.y``, each summing every 8th row, combined through shared memory.
* **everything** (a scalar, or ones with ``keepdims``): a block of 256 threads combining strided parts;
  a long input (more than 64K elements) is cut first into chunks of 4096 elements, one block each, whose
  totals a second kernel combines; a scalar computed from a total (``mean(x)``) is one block.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..utils import const_or_none
from .rows import WARP, inline_rest, reduce_length, reduces_innermost, reductions, schedule_rows, spread_reduction

BLOCK = 256
CHUNK = 4096            # elements per block in the first kernel of a two-kernel total
TWO_KERNELS = 1 << 16   # totals of more elements than this take two kernels
FEW_COLUMNS = 1 << 15   # column reductions keeping fewer elements split their reduction over threads too
COLUMN_SPLIT = 8


def _rows_reduced_all(op):
    return all(const_or_none(iv.dom.extent) == 1 for iv in op.axis)


def schedule_total(outs, num_threads=BLOCK):
    """The whole input reduced to one value (``outs``: that reduction), see the module docstring."""
    main = outs[0]
    s = te.create_schedule(main.op)
    inline_rest(s, ())
    n = reduce_length(main.op)
    tx = te.thread_axis((0, num_threads), "threadIdx.x")
    if n is not None and n > TWO_KERNELS:
        rax = list(s[main].op.reduce_axis)
        k = s[main].fuse(*rax) if len(rax) > 1 else rax[0]
        chunks = (n + CHUNK - 1) // CHUNK
        ko, _ = s[main].split(k, nparts=chunks)
        block = s.rfactor(main, ko)               # block[c]: the total of chunk c, one block each
        block = block[0] if isinstance(block, (list, tuple)) else block
        baxes = list(s[block].op.axis)           # the chunk axis, and main's axes of extent 1 (keepdims)
        c = s[block].fuse(*baxes) if len(baxes) > 1 else baxes[0]
        s[block].bind(c, te.thread_axis("blockIdx.x"))
        btx = te.thread_axis((0, num_threads), "threadIdx.x")
        spread_reduction(s, block, btx, num_threads)
        s[block].set_store_predicate(btx.var.equal(0))
    spread_reduction(s, main, tx, num_threads)
    s[main].set_store_predicate(tx.var.equal(0))
    return s


def schedule_columns(outs, ty_n=COLUMN_SPLIT):
    """A reduction over outer axes with few kept elements (``outs``: it, or one stage of its shape after it):
    32 kept elements a block along ``threadIdx.x`` (coalesced), the reduction split over ``ty_n`` threads
    along ``threadIdx.y``, each summing every ``ty_n``-th element, combined across them."""
    out = outs[0]
    (red,) = reductions(outs)
    s = te.create_schedule(out.op)
    inline_rest(s, ())
    ty = te.thread_axis((0, ty_n), "threadIdx.y")
    if red is out.op:
        spread_reduction(s, out, ty, ty_n)
    axes = list(s[out].op.axis)
    x = s[out].fuse(*axes) if len(axes) > 1 else axes[0]
    bx, tx = s[out].split(x, factor=WARP)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    s[out].set_store_predicate(ty.var.equal(0))
    if red is not out.op:
        s[red].compute_at(s[out], tx)
        spread_reduction(s, red.output(0), ty, ty_n)
    return s


def _few_columns(main, reds):
    """Whether one column reduction (``reds``) keeps few enough elements that splitting its reduction pays."""
    if len(reds) != 1 or not main.op.axis or \
            [const_or_none(x) for x in main.shape] != [const_or_none(x) for x in reds[0].output(0).shape]:
        return False
    kept = 1
    for x in main.shape:
        kept = None if kept is None or const_or_none(x) is None else kept * const_or_none(x)
    n = reduce_length(reds[0])
    return kept is not None and kept < FEW_COLUMNS and n is not None and n >= 4 * COLUMN_SPLIT


def schedule_reduce(outs, target="cuda", num_threads=BLOCK):
    """CUDA ``schedule_reduce`` of a (fused) reduction group: rows, columns or the total, as the module
    docstring says; any other group (several reductions that do not share rows, several outputs) gets
    ``schedule_simple``, a thread per output element."""
    from . import _check, schedule_simple
    _check("schedule_reduce", target)
    outs = as_outputs(outs, "topi.cuda.schedule_reduce")
    reds = reductions(outs)
    main = outs[0]
    if len(outs) == 1 and isinstance(main.op, ComputeOp) and reds:
        last = reds[-1]
        if main.op is last and len(reds) == 1 and (not main.op.axis or _rows_reduced_all(main.op)):
            return schedule_total(outs, num_threads)
        if all(reduces_innermost(r) for r in reds) or not main.op.axis:    # rows, or a scalar after a total
            try:
                return schedule_rows(outs, "schedule_reduce")
            except ScheduleError:
                pass
        elif _few_columns(main, reds):
            return schedule_columns(outs)
    return schedule_simple(outs, target, "schedule_reduce", num_threads)
