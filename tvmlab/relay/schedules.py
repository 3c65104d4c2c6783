"""CPU schedules of fused groups, chosen by the group's anchor (its most complex operator).

Every group is scheduled from its outputs: stages without a reduction are
inlined into their readers (a chain of element-wise operators becomes one
loop), reductions are computed at the root over parallel outer axes, and the
outputs are flattened, vectorised and spread over the cores.  A group
anchored at a ``topi.nn`` operator (conv2d in NCHW or NCHW[x]c after
AlterOpLayout, grouped convolutions, dense, matmul, ...) gets the matching
``topi.x86`` schedule, the fused element-wise tail applied as each register
tile is written out; a group anchored at a topi reduction (sum, mean, max,
argmax, ...) gets ``topi.x86.schedule_reduce`` (lanes of the kept last axis
accumulated side by side: about 10x the plain schedule when the reduced axis
is not the last).
"""
from __future__ import annotations

from .. import te
from ..codegen.llvm_vector import vector_registers
from ..ir.tensor import PlaceholderOp

TASK = 1 << 14      # output elements per parallel task, at least


def _size(shape):
    n = 1
    for d in shape:
        n *= int(d.value) if hasattr(d, "value") else int(d)
    return n


def _lanes(dtype, target):
    try:
        return vector_registers(target).lanes(dtype)
    except Exception:
        return 4


def inline_injective(s, keep=()):
    """Inline every stage without a reduction that is not an output or in ``keep``."""
    outs = set(s.outputs)
    for stage in list(s.stages):
        op = stage.op
        if isinstance(op, PlaceholderOp) or op in outs or op in keep or not hasattr(op, "reduce_axis"):
            continue
        if not op.reduce_axis:
            stage.compute_inline()


def schedule_flat(s, t, target, vectorize=True):
    """Flatten ``t``'s axes, vectorise the inside, and split the rest into parallel tasks."""
    stage = s[t]
    axes = list(stage.op.axis)
    if not axes:
        return
    total = _size(t.shape)
    if stage.op.reduce_axis:
        keep = []
        n = 1
        for a in axes:              # parallel over leading axes worth at least a few tasks
            keep.append(a)
            n *= _size([a.dom.extent])
            if n >= 64:
                break
        if n > 1:
            fused = stage.fuse(*keep) if len(keep) > 1 else keep[0]
            stage.parallel(fused)
        return
    lanes = _lanes(t.dtype, target)
    last = _size([axes[-1].dom.extent])
    if "dst_layout" in (getattr(stage.op, "attrs", None) or {}) and len(axes) >= 3 and last < lanes:
        # a layout_transform out of blocks into a short last axis (NCHW16c -> NCHW at 7x7): rows in parallel,
        # each a short loop (topi's), not a flat vector index divided back into coordinates for every element
        # (20x slower: 0.65 ms for a 1280 x 7 x 7 output)
        from ..topi.x86.injective import parallel_vectorize
        parallel_vectorize(s, t, target)
        return
    if vectorize and len(axes) > 1 and last >= lanes:
        # vectors along the last axis, tasks of whole rows: a vector split of a fused axis would index
        # through divisions that the vectorizer cannot turn into a ramp (the loop would stay scalar)
        rows = stage.fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
        _, xi = stage.split(axes[-1], factor=lanes)
        stage.vectorize(xi)
        if total >= 2 * TASK:
            ro, _ = stage.split(rows, factor=max(1, TASK // last))
            stage.parallel(ro)
        return
    x = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    if vectorize and total >= 2 * lanes:
        x, xi = stage.split(x, factor=lanes)
        stage.vectorize(xi)
        total //= lanes
        if total * lanes >= 2 * TASK:
            xo, _ = stage.split(x, factor=max(1, TASK // lanes))
            stage.parallel(xo)
    elif total >= 2 * TASK:
        xo, _ = stage.split(x, factor=TASK)
        stage.parallel(xo)


def schedule_default(outs, target, vectorize=True):
    """Injective stages inlined, reductions at the root over parallel axes, outputs flattened (see module doc)."""
    s = te.create_schedule([o.op for o in outs])
    inline_injective(s)
    for stage in list(s.stages):
        op = stage.op
        if isinstance(op, PlaceholderOp) or op in s.outputs or getattr(stage, "attach_type", None) == "inline":
            continue
        if getattr(op, "reduce_axis", None):
            schedule_flat(s, op.output(0), target, vectorize)
    for o in outs:
        schedule_flat(s, o, target, vectorize)
    return s


def schedule_group(outs, anchor_tensor, target):
    """The schedule of one fused group (``anchor_tensor``: the anchor operator's output)."""
    tag = getattr(anchor_tensor.op, "tag", "") if anchor_tensor is not None else ""
    topi_schedule = _TOPI.get(tag)
    if topi_schedule is None and anchor_tensor is not None and _topi_reduction(anchor_tensor.op):
        topi_schedule = "schedule_reduce"
    if topi_schedule is not None:
        from ..topi import x86
        return getattr(x86, topi_schedule)(outs, target=target)
    return schedule_default(outs, target)


def _topi_reduction(op):
    """Whether ``op`` is (or directly finishes, as mean's division or argmax's pick) a topi reduction."""
    return any(getattr(o, "tag", "") in ("comm_reduce", "comm_reduce_idx")
               for o in [op] + [t.op for t in getattr(op, "input_tensors", [])])


# anchors computed by topi.nn: their topi.x86 schedule (each takes the fused group's outputs)
_TOPI = {"conv2d_nchw": "schedule_conv2d_nchw", "conv2d_NCHWc": "schedule_conv2d_NCHWc",
         "conv2d_winograd_NCHWc": "schedule_conv2d_winograd_NCHWc",
         "depthwise_conv2d_NCHWc": "schedule_depthwise_conv2d_NCHWc",
         "group_conv2d_nchw": "schedule_conv2d_nchw", "depthwise_conv2d_nchw": "schedule_conv2d_nchw",
         "dense": "schedule_dense", "dense_pack": "schedule_dense",
         "matmul": "schedule_matmul", "batch_matmul": "schedule_batch_matmul",
         "softmax_output": "schedule_softmax", "log_softmax_output": "schedule_softmax", "lrn": "schedule_lrn",
         "instance_norm": "schedule_instance_norm", "layer_norm": "schedule_layer_norm",
         "conv3d_ncdhw": "schedule_conv3d_ncdhw", "conv2d_transpose_nchw": "schedule_conv2d_transpose_nchw",
         "pool_max": "schedule_pool", "pool_avg": "schedule_pool", "adaptive_pool_max": "schedule_adaptive_pool",
         "adaptive_pool_avg": "schedule_adaptive_pool"}
