"""CPU schedules for injective operators and the helpers the other x86 schedules share.

    s = topi.x86.schedule_injective([out])

The output's outer axes are fused into parallel tasks; its last axis is split into vectors of the
target's width.  When the last axis is too short for a vector, every axis is fused first.
"""
from __future__ import annotations

from ... import te
from ...codegen.llvm_vector import vector_registers
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from .. import tag as _tag
from ..generic import as_outputs, default_schedule
from ..utils import const_or_none, with_cpu_target

TASK = 1 << 14      # elements per parallel task, at least
TASK_PAD_BYTES = 64 * 1024     # padded input rows a task makes itself (convolution, pooling): on the stack


def lanes_of(dtype, target="llvm"):
    return vector_registers(target).lanes(dtype)


def check_target(what, target):
    if str(target).split()[0] not in ("llvm", "cpu"):
        raise ScheduleError(f"{what} is a CPU schedule (target 'llvm'), got {target!r}")


def subtree(op):
    """``op`` and every compute operation it reads, transitively."""
    seen, stack = set(), [op]
    while stack:
        o = stack.pop()
        if o in seen or not isinstance(o, ComputeOp):
            continue
        seen.add(o)
        stack.extend(t.op for t in o.input_tensors)
    return seen


def find_anchor(outs, match):
    """The first compute feeding ``outs`` whose tag ``match`` accepts (a tag string or a predicate)."""
    pred = match if callable(match) else (lambda t: t in match)
    for o in outs:
        for op in post_order(o.op):
            if pred(op.tag):
                return op
    return None


def post_order(op):
    """The compute operations feeding ``op`` (itself included), consumers first."""
    order, seen = [], set()

    def walk(o):
        if o in seen or not isinstance(o, ComputeOp):
            return
        seen.add(o)
        for t in o.input_tensors:
            walk(t.op)
        order.append(o)
    walk(op)
    return order[::-1]


def inline_around(s, anchor, keep=()):
    """Inline every injective stage outside ``anchor``'s own subtree that is not an output or in ``keep``."""
    inside = subtree(anchor)
    outputs = set(s.outputs)
    for st in list(s.stages):
        op = st.op
        if op in inside or op in outputs or op in keep or not isinstance(op, ComputeOp):
            continue
        if _tag.is_injective(op.tag) or op.tag == "":
            if not op.reduce_axis:
                s[op].compute_inline()


def same_axes(a, b):
    """Whether tensors ``a`` and ``b`` have one constant shape (a stage of one can own the other's loops)."""
    return len(a.shape) == len(b.shape) and all(
        const_or_none(x) is not None and const_or_none(x) == const_or_none(y) for x, y in zip(a.shape, b.shape))


def fused_group(outs, tags, what, target):
    """The schedule of a group anchored on the operator tagged one of ``tags``, the stages around it
    inlined: ``(s, outs, anchor, tile_out)`` where ``tile_out`` is the tensor whose loops the anchor's
    tile goes into (the group's output when the elementwise tail can be inlined into it, else the anchor's)."""
    check_target(what, target)
    outs = as_outputs(outs, what)
    s = te.create_schedule([o.op for o in outs])
    anchor = find_anchor(outs, tags)
    if anchor is None:
        raise ScheduleError(f"{what}: no operator tagged {' / '.join(tags)} feeds {[o.op.name for o in outs]}")
    inline_around(s, anchor)
    out, at = outs[0], anchor.output(0)
    # with several outputs the anchor keeps its own loops (an output between it and outs[0] must be whole)
    fused = len(outs) == 1 and out.op is not anchor and same_axes(out, at)
    return s, outs, anchor, (out if fused else at)


def schedule_others(s, outs, anchor, tile_out, target):
    """Parallel, vectorised loops for the group's outputs other than the tiled one."""
    for o in outs:
        if o is not tile_out and o.op is not anchor and not o.op.reduce_axis:
            parallel_vectorize(s, o, target)
    return s


def transpose_blocks(s, packed, tile=16, lead=1):
    """Schedule a packing stage ``(blocks..., rows..., block)`` that transposes its source: the ``lead``
    leading block axes are the parallel tasks; ``tile`` rows x ``block`` lanes move at a time, the ``tile``
    reads along each source row unrolled (about 2x faster than a gather per packed vector; unrolling the
    lanes too would gain 2x more but cost seconds of build time per operator)."""
    axes = list(s[packed].op.axis)
    task = s[packed].fuse(*axes[:lead]) if lead > 1 else axes[0]
    rows = axes[lead:-1]
    r = s[packed].fuse(*rows) if len(rows) > 1 else rows[0]
    ro, ri = s[packed].split(r, factor=tile)
    s[packed].reorder(task, ro, axes[-1], ri)
    s[packed].parallel(task)
    s[packed].unroll(ri)


def parallel_vectorize(s, t, target="llvm"):
    """Parallel over ``t``'s fused outer axes, vectors over its last axis; returns the parallel axis."""
    st = s[t]
    axes = list(st.op.axis)
    if not axes:
        return None
    lanes = lanes_of(t.dtype, target)
    last = const_or_none(t.shape[-1])
    total = 1
    for d in t.shape:
        c = const_or_none(d)
        total = total * c if c is not None and total is not None else None
    small = total is not None and total <= TASK
    if "dst_layout" in (getattr(st.op, "attrs", None) or {}) and last is not None and last < lanes \
            and len(axes) >= 3 and not small:
        # a layout_transform into blocks narrower than a vector (an image's NCHW3c): rows in parallel, the
        # block unrolled, so no flat index is divided back into coordinates for every element
        outer = st.fuse(*axes[:-2]) if len(axes) > 3 else axes[0]
        st.parallel(outer)
        st.unroll(axes[-1])
        return outer
    if len(axes) == 1 or (last is not None and last < lanes):
        x = st.fuse(*axes) if len(axes) > 1 else axes[0]
        if small:
            if total > 1:
                xo, xi = st.split(x, factor=lanes)
                st.vectorize(xi)
            return None
        xo, xi = st.split(x, factor=TASK)
        xio, xii = st.split(xi, factor=lanes)
        st.parallel(xo)
        st.vectorize(xii)
        return xo
    outer = st.fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
    xo, xi = st.split(axes[-1], factor=lanes)
    if not small:
        st.parallel(outer)
    st.vectorize(xi)
    return outer


def schedule_injective_from_existing(s, out, target="llvm"):
    """Schedule the injective output ``out`` in ``s`` (parallel, vectorised)."""
    parallel_vectorize(s, out, target)
    return s


@with_cpu_target
def schedule_injective(outs, target=None):
    """Injective stages inlined; each output parallel over its outer axes and vectorised."""
    check_target("schedule_injective", target)
    outs = as_outputs(outs, "schedule_injective")
    s = default_schedule(outs, "schedule_injective")
    for o in outs:
        if isinstance(o.op, ComputeOp) and not o.op.reduce_axis:
            parallel_vectorize(s, o, target)
    return s


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
schedule_concatenate = schedule_injective
