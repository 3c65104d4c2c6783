"""CPU schedules for ``topi.nn.dense`` / ``matmul`` / ``batch_matmul``, each handling a fused group.

    out = topi.nn.relu(topi.nn.dense(X, W, b)); s = topi.x86.schedule_dense([out])

With W packed (more than ``SMALL_M`` rows of X), the loop nest is ``topi.schedule_matmul``'s: a
``rows x block`` tile accumulated over the whole reduction in registers, then passed through the
group's elementwise stages (bias, activation) as it is stored.  With few rows (batch-1 inference),
each output is a dot product of a row of W with a row of X, read in place: the reduction is split
into vector-wide partial sums (``rfactor``), and the output columns are spread over the cores.
``matmul`` and ``batch_matmul`` use the same register tiles, B read in place (or, transposed, through
packed panels), one task per (batch, row block).
"""
from __future__ import annotations

from ...ir.tensor import ComputeOp
from ..matmul import accumulate_in_registers, tile_rows
from ..utils import vector_block
from ..utils import const_or_none, with_cpu_target
from .injective import fused_group, lanes_of, schedule_others, transpose_blocks

DOT_COLS = 16        # output columns of one parallel task in the dot-product form


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
    *lead, i, j = s[out].op.axis       # leading axes (dense_pack of (..., M, K) data): a product each
    M = const_or_none(out.shape[-2])
    if M is not None:
        rows = min(rows, M)            # few rows (an RNN step, a batch-1 classifier): a tile of all of them
    row_block = 2 * rows if M is None else min(2 * rows, -(-M // rows) * rows)
    io, ii = s[out].split(i, factor=row_block)
    jo, ji = s[out].split(j, factor=block)
    iio, iii = s[out].split(ii, factor=rows)
    s[out].reorder(jo, *lead, io, iio, iii, ji)
    outer = s[out].fuse(jo, *lead, io)
    if not _tiny(out, dense):
        s[out].parallel(outer)
    s[out].unroll(iii)
    s[out].vectorize(ji)
    s[acc].compute_at(s[out], iio)
    accumulate_in_registers(s[acc])


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
def schedule_matmul(outs, target=None):
    """Schedule a fused group whose anchor is ``topi.nn.matmul``: register tiles, B read in place
    (a transposed B is ``dense``, scheduled by ``schedule_dense``)."""
    s, outs, mm, out = fused_group(outs, ("matmul", "dense", "dense_pack"), "schedule_matmul", target)
    if mm.tag in ("dense", "dense_pack"):
        return schedule_dense(outs, target)
    _register_tiles(s, mm, out, vector_block(out.dtype, target), target)
    return schedule_others(s, outs, mm, out, target)


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
