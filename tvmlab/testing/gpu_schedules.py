"""GPU schedules written as TVM's tutorials write them, shared by the benchmarks and the tests."""
import numpy as np

from .. import te, tir


def opt_conv_hwcn(batch=4, in_channel=16, out_channel=64, in_size=7):
    """TVM's opt_conv_cuda tutorial schedule as written: HWCN conv2d (3x3, pad 1, stride 1),
    shared and local cache_read chains computed at a cache_write stage, 2 x 2 virtual threads,
    vectorized shared-memory copies.  Returns (schedule, [A, W, B], reference)."""
    kernel, pad = 3, 1
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    out_size = in_size - kernel + 2 * pad + 1
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: tir.if_then_else(
            tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn], tir.const(0.0, "float32")), name="Apad")
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute((out_size, out_size, out_channel, batch),
                   lambda yy, xx, ff, nn: te.sum(Apad[yy + ry, xx + rx, rc, nn] * W[ry, rx, rc, ff],
                                                 axis=[ry, rx, rc]), name="B")
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")
    tile, num_thread, step, vthread = 8, 8, 8, 2
    block_factor = tile * num_thread
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=block_factor)
    bx, ni = s[B].split(ni, factor=block_factor)
    tyz, fi = s[B].split(fi, nparts=vthread)
    txz, ni = s[B].split(ni, nparts=vthread)
    ty, fi = s[B].split(fi, nparts=num_thread)
    tx, ni = s[B].split(ni, nparts=num_thread)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(bz, te.thread_axis("blockIdx.z"))
    s[B].bind(by, te.thread_axis("blockIdx.y"))
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tyz, te.thread_axis((0, vthread), "vthread", name="vy"))
    s[B].bind(txz, te.thread_axis((0, vthread), "vthread", name="vx"))
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)
    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=step)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)          # before its reader AL is attached
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    for X in (AA, WW):
        yi, xi, ci, li = s[X].op.axis
        ty, ci = s[X].split(ci, nparts=num_thread)
        tx, li = s[X].split(li, nparts=num_thread)
        _, li = s[X].split(li, factor=4)
        s[X].reorder(ty, tx, yi, xi, ci, li)
        s[X].bind(ty, thread_y)
        s[X].bind(tx, thread_x)
        s[X].vectorize(li)

    def ref(a, w):
        ap = np.pad(a, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
        return sum(np.einsum("hwcn,cf->hwfn", ap[y:y + out_size, x:x + out_size], w[y, x])
                   for y in range(kernel) for x in range(kernel))
    return s, [A, W, B], ref


def row_sum_rfactor(m, n, threads=16, rows=32, where=None):
    """TVM's reduction tutorial for CUDA: the sum of each row of an m x n matrix, ``threads`` threads
    per row (rfactor of the inner split, bound to threadIdx.x, one writer by store predicate), ``rows``
    rows per block on threadIdx.y.  ``where(i)``: a condition on the row, as ``te.sum(..., where=)``.
    Returns (schedule, [A, B], reference)."""
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k, where=where(i) if where else None), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=threads)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=rows)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))

    def ref(a):
        out = a.astype("float64").sum(1)
        if where is not None:
            out[[not _truth(where(i)) for i in range(m)]] = 0
        return out
    return s, [A, B], ref


def _truth(cond):
    from ..ir.arith import Analyzer
    return Analyzer().can_prove(cond)
