"""Pieces the tiled CUDA schedules share (dense, conv2d): the register tile and shared copies of a
product, and cooperative fetching of a shared copy by every thread of the block."""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir import dtype as dt
from ...ir.tensor import ComputeOp
from ..utils import const_or_none


def register_tile(s, product, out, operands):
    """Inline every injective stage but ``product`` and ``out``; keep ``product``'s sums in registers (a
    ``local`` cache of it when it is the output, else the stage itself, its tail computed where the output
    is written); copy each of ``operands`` into shared memory for it.  Returns (local stage, shared copies)."""
    for st in list(s.stages):
        op = st.op
        if isinstance(op, ComputeOp) and op is not product.op and op is not out.op and not op.reduce_axis:
            s[op].compute_inline()
    if out.op is product.op:
        local = s.cache_write(product, "local")
    else:
        s[product].set_scope("local")
        local = product
    return local, [s.cache_read(t, "shared", [local]) for t in operands]


def fetch_lanes(copy, widest=16):
    """Elements a thread fetches at once into shared ``copy``: as many as fill ``widest`` bytes (a CUDA
    vector type: float4, half2, ...) where the copy's rows and its source's rows are multiples of them
    (so the wide accesses can be aligned), else 1."""
    from ...codegen.cuda_vector import VECTOR_TYPES
    dtype = str(copy.dtype)
    source = copy.op.input_tensors[0] if copy.op.input_tensors else None
    rows = [const_or_none(copy.shape[-1]), const_or_none(source.shape[-1]) if source is not None else None]
    for lanes in (4, 2):
        if (dtype, lanes) in VECTOR_TYPES and lanes * dt.itemsize(dtype) <= widest \
                and all(r is not None and r % lanes == 0 for r in rows):
            return lanes
    return 1


def cooperative_fetch(s, copy, threads, lanes=1, axes=None):
    """Spread the elements of shared ``copy`` over the block's threads: ``threads`` is ((tag, extent), ...),
    outermost first, as the output binds them.  With ``lanes`` > 1 each thread copies ``lanes`` consecutive
    elements at once (a vectorized loop: one wide load and store on CUDA where aligned), as TVM's
    ``s[AA].vectorize(...)`` after the split does; the caller picks ``lanes`` dividing the extent of the
    copied region's last axis (``fetch_lanes``), else the guarded lanes keep the loop serial.  ``axes``: the
    copy's loops in the order the threads walk them (default its tensor's axes)."""
    if not isinstance(lanes, int) or lanes < 1:
        raise ScheduleError(f"cooperative_fetch of {copy.op.name}: lanes must be a positive int, got {lanes!r}")
    axes = list(s[copy].op.axis) if axes is None else list(axes)
    if lanes > 1:
        axes[-1], vec = s[copy].split(axes[-1], factor=lanes)
        s[copy].vectorize(vec)
    fused = s[copy].fuse(*axes)
    total = 1
    for _, n in threads:
        total *= n
    _, t = s[copy].split(fused, factor=total)
    for tag, n in threads[:-1]:
        total //= n
        outer, t = s[copy].split(t, nparts=n)
        s[copy].bind(outer, te.thread_axis(tag))
    s[copy].bind(t, te.thread_axis(threads[-1][0]))
