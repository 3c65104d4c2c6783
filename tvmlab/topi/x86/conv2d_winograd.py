"""CPU schedule of ``topi.nn.conv2d_winograd_NCHWc`` and the element-wise tail fused after it.

    U = topi.nn.winograd_weight_transform_NCHWc(W, 4, 16)          # a constant in a model
    out = topi.nn.relu(topi.nn.conv2d_winograd_NCHWc(X, U, 1))
    s = topi.x86.schedule_conv2d_winograd_NCHWc([out])

The input transform runs one task per (tile, channel block): its row pass into a small local array, then
its column pass, each point unrolled over a vector of channels, so each sum holds only the transform's
non-zero constants.  The product ``M`` is one matrix product per point, register-tiled as
``topi.x86.schedule_batch_matmul`` tiles: tiles x a block of output channels, summed over the input
channels, prefetching the kernel slice of a later task as it goes.  The output is stored one m x m tile
at a time (the row pass of the inverse transform into a local array first, the points unrolled), through
the tail (bias, activation, residual add) on the way.
"""
from __future__ import annotations

from ...codegen.llvm_vector import vector_registers
from ..nn.conv2d import _largest_divisor
from ..utils import const_or_none, with_cpu_target
from .conv2d import _run_time
from .dense import K_UNROLL, accumulate_in_registers, tile_rows
from .injective import fused_group, schedule_others

TAG = "conv2d_winograd_NCHWc"
# tasks ahead whose slice of the transformed kernel the product prefetches (0: none).  U is larger than the
# kernel (1.8x for F(2x2), 4x for F(4x4)) and comes from memory on every run of a model; each task reads its
# own slice once.  ResNet-50 (side by side, one process): 3.5-5% faster on one thread, 2-3.6% on two, with
# one task ahead; two: 1-4% more on one thread, no change on two; four: no change
PREFETCH = 2


def product_rows(tiles, most, vectors=1):
    """Rows of the product's register tile (each row ``vectors`` registers of sums): a divisor of ``tiles``
    from ``most`` down to half of it when there is one (49 tiles on AVX-512: 7 rows, not 4 x 12 and a tail of
    one row that runs at a quarter of the speed: too few sums in flight to hide the FMA latency; one thread,
    alone: 3.5% faster on 256 channels at 14 x 14 (F(2x2)), 5% on 128 at 28 x 28 (F(4x4))).  Else the count in
    that range whose tiles take the fewest FMA issue slots (``topi.x86.conv2d``'s model: a tile of fewer than
    eight sums takes as long as one of eight): 49 tiles on AVX2, where 7 rows of two registers spill, are cut
    into 5-row tiles and a 4-row tail (98 slots, not 8 x 6 and 1: 104); ResNet-50's two such layers ran 1-9%
    faster so on znver3, one thread and two."""
    most = min(most, tiles)
    d = _largest_divisor(tiles, most)
    if 2 * d >= most:
        return d
    return min(range(most, (most + 1) // 2 - 1, -1), key=lambda rows: _run_time(tiles, rows, vectors))


@with_cpu_target
def schedule_conv2d_winograd_NCHWc(outs, target=None):
    """Schedule a fused group whose anchor is ``conv2d_winograd_NCHWc``."""
    s, outs, conv, out = fused_group(outs, (TAG,), "schedule_conv2d_winograd_NCHWc", target)
    m = int(conv.attrs["tile_size"])
    Y1 = next(t for t in conv.input_tensors if t.op.name.endswith("_Y1"))
    M = Y1.op.input_tensors[0]
    V = M.op.input_tensors[0]
    V1 = V.op.input_tensors[0]
    block = const_or_none(V1.op.input_tensors[0].shape[4])     # the data's channel block

    # input transform: per (tile, channel block), the rows pass into a small local array, then the columns
    e, p, c = s[V].op.axis
    co, ci = s[V].split(c, factor=block)
    s[V].reorder(p, co, e, ci)
    task = s[V].fuse(p, co)
    s[V].parallel(task)
    s[V].unroll(e)
    s[V].vectorize(ci)
    s[V1].compute_at(s[V], task)
    e1, b, _, c1 = s[V1].op.axis
    s[V1].unroll(e1)
    s[V1].unroll(b)
    s[V1].vectorize(c1)

    ob = const_or_none(M.shape[3])
    rows = product_rows(const_or_none(M.shape[2]), tile_rows(ob, M.dtype, target),
                        vector_registers(target).holding(ob, M.dtype))
    acc = s.cache_write(M, "global")
    e, k, p, ki = s[M].op.axis
    po, pi = s[M].split(p, factor=rows)
    s[M].reorder(e, k, po, pi, ki)
    s[M].parallel(s[M].fuse(e, k))
    s[M].unroll(pi)
    s[M].vectorize(ki)
    s[acc].compute_at(s[M], po)
    steps = accumulate_in_registers(s[acc])
    if PREFETCH:
        # the next task's slice of U (contiguous after this one), a few lines at each step: U is streamed
        # from memory on every run, and the hardware prefetcher stops at the end of each task's slice
        channels = const_or_none(M.op.reduce_axis[0].dom.extent)
        s[acc].prefetch(M.op.input_tensors[1], steps, PREFETCH * -(-channels // K_UNROLL))

    # output transform: one m x m tile at a time, the rows pass first
    if out.op is not conv:
        s[conv].compute_inline()
    bn, k, y, x, ki = s[out].op.axis
    yo, yi = s[out].split(y, factor=m)
    xo, xi = s[out].split(x, factor=m)
    s[out].reorder(bn, k, yo, xo, yi, xi, ki)
    s[out].parallel(s[out].fuse(bn, k, yo))
    s[out].unroll(yi)
    s[out].unroll(xi)
    s[out].vectorize(ki)
    s[Y1].compute_at(s[out], xo)
    i, b, *_, k1 = s[Y1].op.axis
    s[Y1].unroll(i)
    s[Y1].unroll(b)
    s[Y1].vectorize(k1)
    return schedule_others(s, outs, conv, out, target)
