"""Pieces the tiled CUDA schedules share (dense, conv2d): the register tile and shared copies of a
product, and cooperative fetching of a shared copy by every thread of the block."""
from __future__ import annotations

from ... import te
from ...ir.tensor import ComputeOp


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


def cooperative_fetch(s, copy, threads):
    """Spread the elements of shared ``copy`` over the block's threads: ``threads`` is ((tag, extent), ...),
    outermost first, as the output binds them."""
    fused = s[copy].fuse(*s[copy].op.axis)
    total = 1
    for _, n in threads:
        total *= n
    _, t = s[copy].split(fused, factor=total)
    for tag, n in threads[:-1]:
        total //= n
        outer, t = s[copy].split(t, nparts=n)
        s[copy].bind(outer, te.thread_axis(tag))
    s[copy].bind(t, te.thread_axis(threads[-1][0]))
