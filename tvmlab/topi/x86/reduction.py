"""CPU schedules for reductions, pooling, softmax and normalisation, each handling a fused group.

    s = topi.x86.schedule_pool([topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max")], "NCHW")

Every reduction is computed inside the loop over its group's output, which is parallel over its outer
axes; injective stages around it are inlined.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp, PlaceholderOp
from ..generic import as_outputs
from ..utils import const_or_none, with_cpu_target
from .injective import TASK_PAD_BYTES, check_target, find_anchor, lanes_of, parallel_vectorize, post_order

def _reductions(outs):
    found = [op for o in outs for op in post_order(o.op) if op.reduce_axis]
    return list(dict.fromkeys(found))       # once each (two outputs of one stage reach the same ones)


def _shape(t):
    return tuple(const_or_none(x) for x in t.shape)


def _per_row(stage_shape, out_shape):
    """Whether a stage of ``stage_shape`` is indexed one row at a time by the output's outer axes."""
    if len(out_shape) < 2:
        return stage_shape == out_shape
    head = out_shape[:-1]
    return stage_shape in (head, head + (1,), out_shape)


def _vector_last(s, t, target):
    axes = s[t].op.axis
    last = const_or_none(t.shape[-1]) if axes else None
    lanes = lanes_of(t.dtype, target)
    if last is not None and last >= lanes and not t.op.reduce_axis:
        xo, xi = s[t].split(axes[-1], factor=lanes)
        s[t].vectorize(xi)


def _vector_reduce(s, t, outer, target):
    """A reduction whose last data axis is long enough: lanes of it accumulate side by side, the
    reduction loops outside them (pooling windows, sums over leading axes)."""
    last = const_or_none(t.shape[-1])
    lanes = lanes_of(t.dtype, target)
    if last is None or last < lanes:
        return
    xo, xi = s[t].split(s[t].op.axis[-1], factor=lanes)
    s[t].reorder(outer, xo, *s[t].op.reduce_axis, xi)
    s[t].vectorize(xi)


def _channels_last(op):
    """A pooling whose last axis is the channel (NHWC, NDHWC, NCHW16c): windows of whole vectors."""
    layout = op.attrs.get("layout", "") if op.attrs else ""
    return op.tag.startswith(("pool_", "adaptive_pool_")) and layout[-1:] in ("C", "c")


def _keeps_last(op):
    """Whether ``op`` (a topi reduction) keeps its input's last axis (reduces leading or middle ones)."""
    axis, ndim = tuple(op.attrs.get("axis", ())), op.attrs.get("ndim", 0)
    return bool(axis) and ndim - 1 not in axis


def _vector_reduce_at(s, t, target):
    """A reduction computed inside its reader's row loop that keeps the last axis: that axis in vector
    lanes, the reduction loops outside them."""
    last = const_or_none(t.shape[-1])
    lanes = lanes_of(t.dtype, target)
    if last is None or last < lanes:
        return
    axes = list(s[t].op.axis)
    xo, xi = s[t].split(axes[-1], factor=lanes)
    s[t].reorder(*axes[:-1], xo, *s[t].op.reduce_axis, xi)
    s[t].vectorize(xi)


def _vector_1d(s, out, reds, target):
    """A 1-D output of a reduction that keeps the input's last axis (column sums or means): lanes of that
    axis side by side, the reductions inside each vector of outputs; returns the outer (parallel) axis."""
    axis = s[out].op.axis[0]
    lanes = lanes_of(out.dtype, target)
    n = const_or_none(out.shape[0])
    if n is None or n < 2 * lanes:
        return axis
    if out.op.reduce_axis:
        if not _keeps_last(out.op):
            return axis
        xo, xi = s[out].split(axis, factor=lanes)
        s[out].reorder(xo, *s[out].op.reduce_axis, xi)
    elif any(_keeps_last(r) for r in reds):
        xo, xi = s[out].split(axis, factor=lanes)
    else:
        return axis
    s[out].vectorize(xi)
    return xo


def _trailing(op):
    """Whether ``op`` (a topi reduction) reduces its input's last axes: contiguous runs of elements."""
    axis, ndim = tuple(op.attrs.get("axis", ())), op.attrs.get("ndim", 0)
    return bool(axis) and axis == tuple(range(ndim - len(axis), ndim))


def _lanes_of_partials(s, op, target):
    """A reduction over one contiguous axis as a vector of partial results (``rfactor``), then one
    horizontal step: LLVM does not reorder a float reduction by itself."""
    if op.num_outputs != 1 or not op.reduce_axis:
        return
    vec = 2 * lanes_of(op.output(0).dtype, target)
    extent = 1
    for r in op.reduce_axis:
        e = const_or_none(r.dom.extent)
        extent = None if e is None or extent is None else extent * e
    if extent is None or extent < 2 * vec:
        return
    k = s[op].fuse(*op.reduce_axis) if len(op.reduce_axis) > 1 else op.reduce_axis[0]
    ko, ki = s[op].split(k, factor=vec)
    rf = s.rfactor(op.output(0), ki)
    axes = s[op].op.axis
    if axes:
        s[rf].compute_at(s[op], axes[-1])
    lanes = s[rf].op.axis[0]
    s[rf].reorder(*[a for a in s[rf].leaf_iter_vars if a is not lanes], lanes)
    s[rf].vectorize(lanes)


SERIAL_BYTES = 1 << 16      # a group reading and writing less than this runs on one thread (as the graph
                            # runner runs such kernels): waking a second thread costs more than its share


def _bytes(s):
    """Bytes of the group's inputs and outputs (infinite when a shape is symbolic)."""
    from ...ir.dtype import itemsize
    total = 0
    for st in s.stages:
        if isinstance(st.op, PlaceholderOp) or st.op in s.outputs:
            for t in [st.op.output(k) for k in range(st.op.num_outputs)]:
                n = 1
                for d in _shape(t):
                    if d is None:
                        return float("inf")
                    n *= d
                total += n * itemsize(t.dtype)
    return total


def _pad_rows_bytes(pad, pool):
    """Bytes of the padded input rows one output row of ``pool`` (channels last: ..., H, W, lanes) reads."""
    from ...ir.dtype import itemsize
    n = itemsize(pad.output(0).dtype)
    for d in [r.dom.extent for r in pool.reduce_axis[:-1]] + list(pad.output(0).shape[-2:]):   # window rows, W, lanes
        if const_or_none(d) is None:
            return float("inf")
        n *= const_or_none(d)
    return n


def _schedule_group(outs, target, what, anchor_pred=None):
    check_target(what, target)
    outs = as_outputs(outs, what)
    s = te.create_schedule([o.op for o in outs])
    reds = _reductions(outs)
    if anchor_pred is not None and find_anchor(outs, anchor_pred) is None:
        raise ScheduleError(f"{what}: no matching operator feeds {[o.op.name for o in outs]}")
    out = outs[0]
    plain = [st.op for st in s.stages if isinstance(st.op, ComputeOp) and not st.op.reduce_axis
             and st.op not in s.outputs]
    readers = {}
    for st in s.stages:
        for t in st.op.input_tensors:
            readers.setdefault(t.op, []).append(st.op)
    # an elementwise stage read by a reduction and another stage (softmax's exponentials) is kept, not recomputed
    shared = [op for op in plain if len(readers.get(op, [])) > 1 and any(r.reduce_axis for r in readers[op])]
    # a padded copy read by a pooling window: unguarded reads; in NCHW made row by row, just before use
    pads = [op for op in plain if op.tag == "injective,pad" and op.name == "T_pool_pad"]
    for op in plain:
        if op not in shared and op not in pads:
            s[op].compute_inline()
    oshape = _shape(out)
    axes = list(s[out].op.axis)
    few = _bytes(s) < SERIAL_BYTES
    # max pooling with channels last (NCHW16c, NHWC): a task per output row, the padded input rows it reads
    # made in the task (in L1), not a pass of their own over the whole padded input
    max_pool = out.op if out.op.tag == "pool_max" else next(
        (r for r in reds if r.tag == "pool_max" and _shape(r.output(0)) == oshape), None)   # (a tail after it)
    rows = max_pool is not None and _channels_last(max_pool) and len(axes) >= 4 and not few
    if len(axes) >= 2:
        lead = axes[:-2] if rows else axes[:-1]
        outer = s[out].fuse(*lead) if len(lead) > 1 else lead[0]
        if not few:
            s[out].parallel(outer)
        if not out.op.reduce_axis:
            _vector_last(s, out, target)
        elif out.op.tag in ("comm_reduce", "comm_reduce_idx") or _channels_last(out.op):
            _vector_reduce(s, out, outer, target)
    elif axes:
        outer = _vector_1d(s, out, reds, target)
        if not few:
            s[out].parallel(outer)
    else:
        outer = None
    if out.op.reduce_axis and _trailing(out.op):
        _lanes_of_partials(s, out.op, target)      # a sum over rows: partial sums in vector lanes
    at_outer = set()
    inner_reds = [r for r in reds if r is not out.op and r not in s.outputs]
    for op in inner_reds + shared[::-1]:     # a shared stage after the readers it waits for (consumers first)
        t = op.output(0)
        ok = outer is not None and _per_row(_shape(t), oshape)
        if op in shared:     # every reader must run inside the same loop
            ok = ok and all(r is out.op or r in at_outer for r in readers[op])
        if ok:
            at_outer.add(op)
            s[op].compute_at(s[out], outer)
            if rows and op is max_pool:
                _vector_reduce(s, t, s[op].op.axis[-2], target)     # each column's window, lanes in vectors
            elif len(t.shape) == len(out.shape) and len(out.shape) >= 2 and not op.reduce_axis:
                _vector_last(s, t, target)
            elif op.reduce_axis and _keeps_last(op):
                _vector_reduce_at(s, t, target)       # mean's sum over a leading axis: lanes of the kept one
            elif op.reduce_axis and (const_or_none(out.shape[-1]) == const_or_none(op.reduce_axis[0].dom.extent)
                                     or _trailing(op)):
                _lanes_of_partials(s, op, target)      # a row reduction (softmax's max and sum, argmax's)
        elif s[op].op.axis:
            axes = s[op].op.axis
            s[op].parallel(s[op].fuse(*axes) if len(axes) > 1 else axes[0])
            if _trailing(op):
                _lanes_of_partials(s, op, target)
    for op in pads:
        pool = readers[op][0]
        in_rows = rows and _pad_rows_bytes(op, pool) <= TASK_PAD_BYTES
        per_row = pool.attrs.get("layout") == "NCHW" or in_rows
        if outer is not None and per_row and (pool is out.op or pool in at_outer):
            s[op].compute_at(s[out], outer)
            if in_rows:
                _vector_last(s, op.output(0), target)
        elif _channels_last(pool) and len(op.axis) >= 4:
            pa = s[op].op.axis          # (..., H, W, lanes): rows in parallel, the lanes (one condition) in vectors
            s[op].parallel(s[op].fuse(*pa[:-2]))
            _vector_last(s, op.output(0), target)
        else:
            pa = s[op].op.axis
            s[op].parallel(s[op].fuse(pa[0], pa[1]))
    for o in outs[1:]:
        if not o.op.reduce_axis and o.op is not out.op:     # (the other output of a two-output stage is done)
            parallel_vectorize(s, o, target)
    return s


@with_cpu_target
def schedule_reduce(outs, target=None):
    """Sum / mean / max / min / argmax groups: parallel over the output, the reduction inside."""
    return _schedule_group(outs, target, "schedule_reduce")


@with_cpu_target
def schedule_pool(outs, layout="NCHW", target=None):
    """Max / average pooling groups (tag ``pool_*``)."""
    return _schedule_group(outs, target, "schedule_pool", lambda t: t.startswith("pool_"))


@with_cpu_target
def schedule_adaptive_pool(outs, target=None):
    """Global and adaptive pooling groups (tag ``adaptive_pool_*``)."""
    return _schedule_group(outs, target, "schedule_adaptive_pool", lambda t: t.startswith("adaptive_pool_"))


@with_cpu_target
def schedule_softmax(outs, target=None):
    """Softmax / log-softmax groups: per output row, the max, the exponentials, their sum, then the output."""
    return _schedule_group(outs, target, "schedule_softmax",
                           lambda t: t in ("softmax_output", "log_softmax_output"))


@with_cpu_target
def schedule_lrn(outs, target=None):
    """Local response normalisation."""
    return _schedule_group(outs, target, "schedule_lrn", lambda t: t == "lrn")


@with_cpu_target
def schedule_instance_norm(outs, target=None):
    """Instance normalisation."""
    return _schedule_group(outs, target, "schedule_instance_norm", lambda t: t == "instance_norm")



@with_cpu_target
def schedule_layer_norm(outs, target=None):
    """Layer normalisation groups (tag ``layer_norm``): per row, the two sums (vector partial sums), then the
    output with the element-wise ops after it, while the row is in cache."""
    return _schedule_group(outs, target, "schedule_layer_norm", lambda t: t == "layer_norm")
