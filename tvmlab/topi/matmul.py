"""Matrix multiplication: the compute (with B packed into column panels) and its CPU schedule.

``matmul(A, B)`` computes ``C[i, j] = sum_k A[i, k] * B[k, j]`` through a packed
copy of B, ``Bp[jo, k, ji] = B[k, jo * block + ji]`` (zero past the last
column): each panel of ``block`` columns is contiguous, so the innermost loop
of the schedule reads B with full-width vector loads, one cache line after the
other.  The packed copy is the only extra memory (``K * ceil(N / block) * block``
elements).  ``block`` is two vector registers of the target (16 float32
columns with AVX2, 32 with AVX-512).

``schedule_matmul(C)`` is the register-blocked kernel a BLAS would use, written
with schedule primitives: a ``rows x block`` tile of C is accumulated over the
whole reduction in a write cache that LLVM keeps in vector registers (rows
unrolled, columns vectorised; ``rows`` is as many as the target's registers
hold: 6 with AVX2's 16, 12 with AVX-512's 32) and stored once.  The columns are
cut into blocks whose B panels stay in the last-level cache, and the
(column block, row block) tasks are spread over the cores.

Few rows change the balance.  With at most ``SMALL_M`` rows (a constant) the
product is too small to pay for a pass over all of B, so B is read in place;
with at most ``STREAM_ROWS`` (a matrix-vector product, bound by memory) each
task streams whole rows of B into its columns of C, which stay in L1.
"""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..errors import ScheduleError
from ..ir import dtype as dt
from .utils import check_options, const_or_none, find_stage_input, pack_blocks, vector_block

MAX_ROWS = 12           # rows per register tile, at most
B_BLOCK_BYTES = 4 << 20  # the B panels of one column block: they stay in the last-level cache
K_UNROLL = 4            # reduction steps per unrolled loop body


def accumulate_in_registers(acc):
    """Schedule a register tile's update stage ``acc`` (rows x vector columns, one reduction):
    the reduction outermost in steps of K_UNROLL, each step unrolled over k and rows, the
    columns one vector, so the tile stays in registers for the whole reduction."""
    *_, ci, cj = acc.op.axis
    (ck,) = acc.op.reduce_axis
    ko, ki = acc.split(ck, factor=K_UNROLL)
    acc.reorder(ko, ki, ci, cj)
    acc.unroll(ki)
    acc.unroll(ci)
    acc.vectorize(cj)
SMALL_M = 16            # at most this many rows of A: B is read in place, not packed
STREAM_ROWS = 4         # at most this many: rows of B streamed whole (matrix-vector products)
STREAM_BYTES = 16 << 10  # the rows of C one task adds into when streaming: they stay in L1

# Set by tvmlab.autotvm when it is imported (topi does not import it): ``hook(C, target)`` gives
# tuned ``schedule_matmul`` options from the current dispatch context (apply_history_best), or None.
config_hook = None


def matmul(A, B, transp_a=False, transp_b=False, block=None, rows=0, name="C", target="llvm", pack_b=None):
    """``A @ B`` for 2-D tensors A (M, K) and B (K, N), through a packed copy of B.

    ``transp_a`` / ``transp_b`` (TVM's ``topi.matmul(a, b, transp_a, transp_b)``) read A as (K, M) / B as
    (N, K), in place (nothing is packed).

    ``block`` is the B panel width (default: ``vector_block(dtype, target)``, two vector registers).
    ``rows > 0`` also packs A into panels of ``rows`` rows
    (``Ap[io, k, ii] = A[io * rows + ii, k]``, a parallel pass of its own); the
    default reads A in place, which costs no extra memory and is as fast.
    ``pack_b`` (default: unless A has at most ``SMALL_M`` rows, a constant) packs B;
    with few rows a pass over all of B costs more than reading its rows in place.
    """
    if len(A.shape) != 2 or len(B.shape) != 2:
        raise ScheduleError(f"matmul needs 2-D tensors, got A{tuple(A.shape)} and B{tuple(B.shape)}")
    if transp_a or transp_b:
        return _transposed(A, B, bool(transp_a), bool(transp_b), name)
    M, K = A.shape
    K2, N = B.shape
    if const_or_none(K) is not None and const_or_none(K2) is not None and const_or_none(K) != const_or_none(K2):
        raise ScheduleError(f"matmul: A has {const_or_none(K)} columns but B has {const_or_none(K2)} rows")
    if A.dtype != B.dtype:
        raise ScheduleError(f"matmul: A is {A.dtype} but B is {B.dtype}")
    check_options("matmul", block=block, rows=rows or None)
    if pack_b not in (None, True, False):
        raise ScheduleError(f"matmul: pack_b must be True, False or None (choose), got {pack_b!r}")
    block = vector_block(A.dtype, target) if block is None else block
    if pack_b is None:
        pack_b = rows > 0 or const_or_none(M) is None or const_or_none(M) > SMALL_M
    if not pack_b:
        if rows:
            raise ScheduleError("matmul: rows > 0 packs A, which needs pack_b (B packed too)")
        k = te.reduce_axis((0, K), name="k")
        return te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k),
                          name=name, tag="matmul", attrs={"block": block, "rows": 0, "packed_b": 0})
    Bp = pack_blocks(((N + block - 1) // block, K, block), lambda jo, k, ji: B[k, jo * block + ji], N, B.dtype,
                     name + "_packB")
    k = te.reduce_axis((0, K), name="k")
    if rows:
        Ap = pack_blocks(((M + rows - 1) // rows, K, rows), lambda io, k, ii: A[io * rows + ii, k], M, A.dtype,
                         name + "_packA")
        return te.compute((M, N), lambda i, j: te.sum(Ap[i // rows, k, i % rows] * Bp[j // block, k, j % block],
                                                      axis=k),
                          name=name, tag="matmul", attrs={"block": block, "rows": rows, "packed_b": 1})
    return te.compute((M, N), lambda i, j: te.sum(A[i, k] * Bp[j // block, k, j % block], axis=k),
                      name=name, tag="matmul", attrs={"block": block, "rows": 0, "packed_b": 1})


def _transposed(A, B, ta, tb, name):
    """``op(A) @ op(B)`` with A and/or B read transposed: plain loops (``schedule_matmul`` is for A @ B)."""
    M, K = (A.shape[1], A.shape[0]) if ta else tuple(A.shape)
    K2, N = (B.shape[1], B.shape[0]) if tb else tuple(B.shape)
    if const_or_none(K) is not None and const_or_none(K2) is not None and const_or_none(K) != const_or_none(K2):
        raise ScheduleError(f"matmul: op(A) has {const_or_none(K)} columns but op(B) has {const_or_none(K2)} rows "
                            f"(transp_a={ta}, transp_b={tb})")
    if A.dtype != B.dtype:
        raise ScheduleError(f"matmul: A is {A.dtype} but B is {B.dtype}")
    k = te.reduce_axis((0, K), name="k")
    return te.compute((M, N), lambda i, j: te.sum((A[k, i] if ta else A[i, k]) * (B[j, k] if tb else B[k, j]),
                                                  axis=k), name=name, tag="matmul_transposed")


def tile_rows(block, dtype, target="llvm"):
    """Rows of the register tile: as many as leave registers for one B row and a broadcast of A."""
    regs = vector_registers(target)
    vectors = regs.holding(block, dtype)
    return max(1, min(MAX_ROWS, (regs.count - vectors - 1) // vectors))


def schedule_matmul(C, target="llvm", rows=None, row_block=None, k_chunk=None, col_block=None,
                    tensorize=False):
    """The CPU schedule for ``C = matmul(A, B)``; returns the Schedule.

    ``rows`` (register tile rows, default ``tile_rows``), ``row_block`` (rows
    per task, default two tiles) and ``col_block`` (columns per block, default:
    its B panels fill ``B_BLOCK_BYTES``) shape the loops.  ``k_chunk=None``
    accumulates each tile over the whole reduction in registers; a number
    instead accumulates in C, ``k_chunk`` reduction steps at a time.
    ``tensorize=True`` computes each register tile with the LLVM micro-kernel
    of ``matmul_kernel`` (C must come from ``matmul(A, B, rows=R)``: A and B
    packed).
    """
    if str(target).split()[0] != "llvm":
        raise ScheduleError(f"schedule_matmul has a schedule for target 'llvm', got {target!r}")
    if getattr(C.op, "tag", "") != "matmul":
        raise ScheduleError(f"schedule_matmul needs the output of topi.matmul, got {C.op.name!r}")
    check_options("schedule_matmul", rows=rows, row_block=row_block, k_chunk=k_chunk, col_block=col_block)
    if config_hook is not None and not tensorize and all(x is None for x in (rows, row_block, k_chunk, col_block)):
        rows, row_block, k_chunk, col_block = (config_hook(C, target) or {}).get("options", (None,) * 4)
    block = int(C.op.attrs["block"])
    packed_rows = int(C.op.attrs["rows"])
    tuned = any(x is not None for x in (rows, row_block, k_chunk, col_block))
    rows = packed_rows or rows or tile_rows(block, C.dtype, target)
    row_block = row_block or 2 * rows
    if tensorize:
        from .matmul_kernel import schedule_tensorized
        return schedule_tensorized(C, target, col_block)
    s = te.create_schedule(C.op)
    if int(C.op.attrs.get("packed_b", 1)):
        # pack B: one panel per task, contiguous vector stores
        Bp = find_stage_input(C, "_packB")
        jp, kp, bp = s[Bp].op.axis
        s[Bp].vectorize(bp)
        s[Bp].parallel(jp)

    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    M, K = const_or_none(C.shape[0]), const_or_none(k.dom.extent)
    if not int(C.op.attrs.get("packed_b", 1)) and M is not None and M <= STREAM_ROWS and not tuned:
        # matrix-vector: memory-bound, so stream whole rows of B once, each added into the
        # (few) rows of C of this task's columns, which stay in the first-level cache
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
        return s
    if M is not None:
        row_block = min(row_block, -(-M // rows) * rows)
    if k_chunk is None:
        # each tile accumulates over the whole reduction in a write cache held in registers, stored once
        if col_block is None:
            col_block = B_BLOCK_BYTES // ((K or 512) * max(1, dt.parse(C.dtype)[1] // 8))
        N = const_or_none(C.shape[1])
        panels = max(1, col_block // block)
        if N is not None:
            panels = min(panels, -(-N // block))
        CC = s.cache_write(C, "global")
        io, ii = s[C].split(i, factor=row_block)
        jo, ji = s[C].split(j, factor=block)
        jc, jb = s[C].split(jo, factor=panels)
        iio, iii = s[C].split(ii, factor=rows)
        s[C].reorder(jc, io, jb, iio, iii, ji)
        s[C].parallel(s[C].fuse(jc, io))
        s[C].unroll(iii)
        s[C].vectorize(ji)
        s[CC].compute_at(s[C], iio)
        accumulate_in_registers(s[CC])
    else:
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
    if packed_rows:
        Ap = find_stage_input(C, "_packA")
        if k_chunk is None:      # read by the write cache: a parallel pass of its own
            s[Ap].parallel(s[Ap].op.axis[0])
        else:                    # this task's rows, packed just before use (per thread, still in cache)
            s[Ap].compute_at(s[C], io)
        s[Ap].unroll(s[Ap].op.axis[2])
    return s
