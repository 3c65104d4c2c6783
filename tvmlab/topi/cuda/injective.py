"""CUDA ``schedule_injective``: elementwise, broadcast and layout groups as wide loads and stores.

    s = topi.cuda.schedule_injective([topi.add(A, B)]); f = tvm.build(s, [A, B, C], target="cuda")

Every output's axes are fused into one; when the innermost axis is a multiple of 4 (or 2) elements of a
type CUDA has a vector for (``float4``, ``int4``, ``half2``, ...), each thread handles that many
consecutive elements as one vectorized group, printed as a 128-bit load and store
(``tvmlab.codegen.cuda_vector``); the groups are spread over blocks of 256 threads, the last block guarded
when the block does not divide them.  A large output (a million groups or more) gives each thread 4
groups, 256 groups apart, unrolled: four wide loads of each operand in flight before the first store.
A broadcast operand along the inner axis stays one wide load (the inner axis is a multiple of the
width); an operand read across (a transpose) is gathered lane by lane.  Other shapes keep the flat
schedule, a thread per element.
"""
from __future__ import annotations

from ... import te
from ...codegen.cuda_vector import VECTOR_TYPES
from ..generic import as_outputs
from ..utils import const_or_none
from .rows import inline_rest, reductions

NUM_THREADS = 256
MANY_GROUPS = 1 << 20     # vector groups from which each thread takes PER_THREAD of them (a few waves of an H100)
PER_THREAD = 4


def vector_lanes(t):
    """The vector width for output ``t``: 4 or 2 when its innermost extent is a multiple and CUDA has that
    vector of its dtype, else 1."""
    if not t.shape:
        return 1
    last = const_or_none(t.shape[-1])
    if last is None:
        return 1
    for lanes in (4, 2):
        if last % lanes == 0 and (t.dtype, lanes) in VECTOR_TYPES:
            return lanes
    return 1


def bind_vector(s, t, num_threads=NUM_THREADS):
    """Split ``t``'s innermost axis into groups of ``vector_lanes(t)`` elements and fuse the groups with the
    outer axes, a thread per group over blocks of ``num_threads``; returns the thread axis (None, scheduling
    nothing, when the width is 1).  Splitting before fusing keeps every index a plain ramp over the lanes."""
    lanes = vector_lanes(t)
    axes = list(s[t].op.axis)
    if lanes == 1 or not axes:
        return None
    xo, xv = s[t].split(axes[-1], factor=lanes)
    x = s[t].fuse(*axes[:-1], xo) if len(axes) > 1 else xo
    total = 1
    for d in t.shape:
        total = None if total is None or const_or_none(d) is None else total * const_or_none(d)
    if total is not None and total // lanes >= MANY_GROUPS:
        # a large output: each thread PER_THREAD groups a block apart (unrolled), so several wide loads
        # are in flight per thread before the first store, with every warp's access still contiguous
        bx, rest = s[t].split(x, factor=num_threads * PER_THREAD)
        i, tx = s[t].split(rest, factor=num_threads)
        s[t].unroll(i)
    else:
        bx, tx = s[t].split(x, factor=num_threads)
    s[t].bind(bx, te.thread_axis("blockIdx.x"))
    s[t].bind(tx, te.thread_axis("threadIdx.x"))
    s[t].vectorize(xv)
    return tx


def schedule_injective(outs, target="cuda", num_threads=NUM_THREADS):
    """CUDA ``schedule_injective``: every non-output stage inlined, each output vectorized as the module
    docstring says, else a thread per element.  A stage with a reduction in the group falls back to
    ``schedule_simple`` (the reduction computed by the thread that needs it)."""
    from . import _bind_flat, _check, schedule_simple
    _check("schedule_injective", target)
    outs = as_outputs(outs, "topi.cuda.schedule_injective")
    if reductions(outs):
        return schedule_simple(outs, target, "schedule_injective", num_threads)
    s = te.create_schedule([o.op for o in outs])
    inline_rest(s, ())
    for o in outs:
        if bind_vector(s, o, num_threads) is None:
            _bind_flat(s, o, num_threads)
    return s
