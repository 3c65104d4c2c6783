"""Matrix multiplication: the compute (with B packed into column panels) and its CPU schedule.

``matmul(A, B)`` computes ``C[i, j] = sum_k A[i, k] * B[k, j]`` through a packed
copy of B, ``Bp[jo, k, ji] = B[k, jo * block + ji]`` (zero past the last
column): each panel of ``block`` columns is contiguous, so the innermost loop
of the schedule reads B with full-width vector loads, one cache line after the
other.  The packed copy is the only extra memory (``K * ceil(N / block) * block``
elements).

``schedule_matmul(C)`` is the register-blocked kernel a BLAS would use, written
with schedule primitives: an ``rows x block`` tile of C is accumulated in a
write cache that LLVM keeps in vector registers (rows unrolled, columns
vectorised), the reduction is split into cache-sized chunks, and the rows are
spread over the cores.
"""
from __future__ import annotations

from .. import te
from ..errors import ScheduleError
from ..ir import expr as E
from .util import const_int, find_stage_input

BLOCK = 32      # columns per panel: two 16-float AVX-512 vectors
ROWS = 8        # rows per register tile: 8 x 2 vector accumulators
ROW_BLOCK = 64  # rows per task: their A block stays in L2 while the B panels stream through L1
K_CHUNK = 512   # reduction steps per pass over a tile: A rows (16 KB) and the B micro-panel (64 KB) stay in L1 / L2


def _zero(dtype):
    return E.FloatImm(dtype, 0.0) if "float" in dtype else E.IntImm(dtype, 0)


def _pack(shape, value, extent, limit, dtype, name):
    """A packing stage; ``value(...)`` is read only where ``extent(...) < limit`` (zero past the end)."""
    if const_int(limit) is not None and const_int(limit) % shape[2] == 0:
        return te.compute(shape, value, name=name)
    return te.compute(shape, lambda o, k, x: te.if_then_else(extent(o, x) < limit, value(o, k, x), _zero(dtype)),
                      name=name)


def matmul(A, B, block=BLOCK, rows=ROWS, name="C"):
    """``A @ B`` for 2-D tensors A (M, K) and B (K, N), through packed copies of both.

    B is packed into panels of ``block`` columns, A into panels of ``rows`` rows
    (``Ap[io, k, ii] = A[io * rows + ii, k]``), so the kernel reads both operands
    sequentially; ``rows=0`` reads A in place.
    """
    if len(A.shape) != 2 or len(B.shape) != 2:
        raise ScheduleError(f"matmul needs 2-D tensors, got A{tuple(A.shape)} and B{tuple(B.shape)}")
    M, K = A.shape
    K2, N = B.shape
    if const_int(K) is not None and const_int(K2) is not None and const_int(K) != const_int(K2):
        raise ScheduleError(f"matmul: A has {const_int(K)} columns but B has {const_int(K2)} rows")
    if A.dtype != B.dtype:
        raise ScheduleError(f"matmul: A is {A.dtype} but B is {B.dtype}")
    Bp = _pack(((N + block - 1) // block, K, block), lambda jo, k, ji: B[k, jo * block + ji],
               lambda jo, ji: jo * block + ji, N, B.dtype, name + "_packB")
    k = te.reduce_axis((0, K), name="k")
    if rows:
        Ap = _pack(((M + rows - 1) // rows, K, rows), lambda io, k, ii: A[io * rows + ii, k],
                   lambda io, ii: io * rows + ii, M, A.dtype, name + "_packA")
        return te.compute((M, N), lambda i, j: te.sum(Ap[i // rows, k, i % rows] * Bp[j // block, k, j % block],
                                                      axis=k),
                          name=name, tag="matmul", attrs={"block": block, "rows": rows})
    return te.compute((M, N), lambda i, j: te.sum(A[i, k] * Bp[j // block, k, j % block], axis=k),
                      name=name, tag="matmul", attrs={"block": block, "rows": 0})


def schedule_matmul(C, target="llvm", rows=ROWS, row_block=ROW_BLOCK, k_chunk=K_CHUNK):
    """The CPU schedule for ``C = matmul(A, B)``; returns the Schedule."""
    if str(target).split()[0] != "llvm":
        raise ScheduleError(f"schedule_matmul has a schedule for target 'llvm', got {target!r}")
    if getattr(C.op, "tag", "") != "matmul":
        raise ScheduleError(f"schedule_matmul needs the output of topi.matmul, got {C.op.name!r}")
    block = int(C.op.attrs["block"])
    packed_rows = int(C.op.attrs["rows"])
    rows = packed_rows or rows
    Bp = find_stage_input(C, "_packB")
    s = te.create_schedule(C.op)

    # pack B: one panel per task, contiguous vector stores
    jp, kp, bp = s[Bp].op.axis
    s[Bp].vectorize(bp)
    s[Bp].parallel(jp)

    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    M, K = const_int(C.shape[0]), const_int(k.dom.extent)
    if M is not None:
        row_block = min(row_block, -(-M // rows) * rows)
    if k_chunk is None:
        # the whole reduction per tile: accumulate in a write cache held in registers, store once
        CC = s.cache_write(C, "global")
        io, ii = s[C].split(i, factor=row_block)
        jo, ji = s[C].split(j, factor=block)
        iio, iii = s[C].split(ii, factor=rows)
        s[C].reorder(io, jo, iio, iii, ji)
        s[C].parallel(io)
        s[C].unroll(iii)
        s[C].vectorize(ji)
        s[CC].compute_at(s[C], iio)
        ci, cj = s[CC].op.axis
        (ck,) = s[CC].op.reduce_axis
        ko, ki = s[CC].split(ck, factor=4)
        s[CC].reorder(ko, ki, ci, cj)
        s[CC].unroll(ki)
        s[CC].unroll(ci)
        s[CC].vectorize(cj)
    else:
        if K is not None:          # one chunk when K is small: no guard on the reduction
            k_chunk = min(k_chunk, -(-K // 4) * 4)
        io, ii = s[C].split(i, factor=row_block)
        jo, ji = s[C].split(j, factor=block)
        ko, ki = s[C].split(k, factor=k_chunk)
        iio, iii = s[C].split(ii, factor=rows)
        kio, kii = s[C].split(ki, factor=4)
        s[C].reorder(io, ko, jo, iio, kio, kii, iii, ji)
        s[C].parallel(io)
        s[C].unroll(kii)
        s[C].unroll(iii)
        s[C].vectorize(ji)
    if packed_rows:
        Ap = find_stage_input(C, "_packA")
        if k_chunk is None:      # read by the write cache: a parallel pass of its own
            s[Ap].parallel(s[Ap].op.axis[0])
        else:                    # this task's rows, packed just before use (per thread, still in cache)
            s[Ap].compute_at(s[C], io)
        s[Ap].unroll(s[Ap].op.axis[2])
    return s
