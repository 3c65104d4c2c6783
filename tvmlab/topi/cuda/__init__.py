"""CUDA schedules taking a list of outputs, as TVM's ``topi.cuda``.  The shared fallback,
``schedule_simple``, gives one GPU thread per output element (``num_threads`` per block), every
non-reduction stage inside the group inlined, each reduction computed by the thread that needs it;
multi-stage operators (Winograd, scans, searches, sorts, unique) get a kernel per stage instead.  Tuned
schedules live in their own modules: products (``dense``), convolution (``conv2d``), reductions
(``reduction``), softmax and layer norm (``softmax``, a kernel per group of rows from ``rows``) and
vectorized elementwise groups (``injective``); ``schedule_anchor`` picks one for relay's fused groups.

    s = topi.cuda.schedule_injective([out]); f = tvm.build(s, [A, out], target="cuda")
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..nn import (batch_matmul, conv1d_ncw, conv1d_nwc, conv1d_transpose_ncw, conv2d_hwcn, conv2d_nchw,  # noqa: F401
                  conv2d_transpose_nchw, conv3d_ncdhw, conv3d_ndhwc, conv3d_transpose_ncdhw, dense,
                  depthwise_conv2d_nchw, group_conv1d_ncw, group_conv1d_nwc, group_conv2d_nchw)
# (TVM spells the computes here too)

NUM_THREADS = 256


def _check(what, target):
    if str(target).split()[0] != "cuda":
        raise ScheduleError(f"topi.cuda.{what} is a CUDA schedule (target 'cuda'), got {target!r}")


def _bind_flat(s, t, num_threads):
    """Fuse ``t``'s axes and spread them over blocks of ``num_threads`` threads; returns the thread axis."""
    axes = list(s[t].op.axis)
    if not axes:
        raise ScheduleError(f"topi.cuda: output {t.op.name!r} is a scalar; the simple CUDA schedules need an "
                            f"output axis to spread over threads (reduce with keepdims=True or over fewer axes)")
    x = s[t].fuse(*axes) if len(axes) > 1 else axes[0]
    bx, tx = s[t].split(x, factor=num_threads)
    s[t].bind(bx, te.thread_axis("blockIdx.x"))
    s[t].bind(tx, te.thread_axis("threadIdx.x"))
    return tx


def _schedule(outs, target, what, num_threads, own_kernels):
    """Inline the injective stages; each other stage (a reduction, a search step) either gets a kernel of
    its own, a thread per element (``own_kernels``), or is computed at the thread of the first output."""
    from .. import tag as _tag
    _check(what, target)
    outs = as_outputs(outs, f"topi.cuda.{what}")
    s = te.create_schedule([o.op for o in outs])
    outputs = set(s.outputs)
    at_thread = []
    for st in list(s.stages):
        op = st.op
        if not isinstance(op, ComputeOp) or op in outputs:
            continue
        if not op.reduce_axis and (not own_kernels or _tag.is_injective(op.tag)):
            s[op].compute_inline()
        elif own_kernels and op.axis:
            _bind_flat(s, op.output(0), num_threads)
        else:
            at_thread.append(op)
    threads = {o.op: _bind_flat(s, o, num_threads) for o in outs}
    for op in at_thread:
        s[op].compute_at(s[outs[0]], threads[outs[0].op])
    return s


def schedule_simple(outs, target="cuda", what="schedule", num_threads=NUM_THREADS):
    """The shared schedule: inline every non-output stage without a reduction, compute each reduction at
    the thread of the output that reads it, one thread per output element."""
    return _schedule(outs, target, what, num_threads, own_kernels=False)


def schedule_each_stage(outs, target="cuda", what="schedule", num_threads=NUM_THREADS):
    """A schedule for multi-stage operators (Winograd, searches, unique): every injective stage inlined,
    every other stage (reductions, search steps) a kernel of its own with one thread per element (a
    scalar one at the thread of the first output), the outputs too."""
    return _schedule(outs, target, what, num_threads, own_kernels=True)


def _named(name, own_kernels=False):
    def schedule(outs, target="cuda"):
        return _schedule(outs, target, name, NUM_THREADS, own_kernels)
    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = (f"CUDA ``{name}``: " + ("a kernel per stage, a thread per element" if own_kernels else
                                                "one thread per output element") + " (see the module docstring).")
    return schedule


for _n in ("schedule_depthwise_conv2d_nchw",
           "schedule_group_conv2d_nchw", "schedule_conv2d_NCHWc", "schedule_lrn", "schedule_conv2d_transpose_nchw",
           "schedule_instance_norm", "schedule_conv2d_hwcn", "schedule_pool_grad", "schedule_conv1d_ncw",
           "schedule_conv1d_nwc", "schedule_group_conv1d_ncw", "schedule_group_conv1d_nwc",
           "schedule_conv1d_transpose_ncw", "schedule_conv2d_nhwc", "schedule_depthwise_conv2d_nhwc",
           "schedule_conv3d_ncdhw", "schedule_conv3d_ndhwc", "schedule_conv3d_transpose_ncdhw"):
    globals()[_n] = _named(_n)


def schedule_pool(outs, layout="NCHW", target="cuda"):
    """CUDA ``schedule_pool(outs, layout)`` (TVM's arguments; any layout): one thread per output element."""
    return schedule_simple(outs, target, "schedule_pool")


def schedule_adaptive_pool(outs, layout="NCHW", target="cuda"):
    """CUDA ``schedule_adaptive_pool(outs, layout)``: one thread per output element."""
    return schedule_simple(outs, target, "schedule_adaptive_pool")


def dense_small_batch(data, weight, bias=None, out_dtype=None):
    """``topi.nn.dense`` for the GPU, the weight read in place (TVM's ``topi.cuda.dense_small_batch``)."""
    from ..nn.dense import dense as _dense
    return _dense(data, weight, bias, out_dtype, packed=False)


dense_large_batch = dense_small_batch

from .dense import schedule_batch_matmul, schedule_dense, schedule_matmul, schedule_product  # noqa: E402,F401

schedule_dense_small_batch = schedule_dense_large_batch = schedule_dense

# relay's fused groups: the schedule of the group's anchor operator, by its tag
from .conv2d import schedule_conv2d_nchw, schedule_conv2d_nchw_direct  # noqa: E402,F401

_ANCHORS = {"dense": schedule_dense, "matmul": schedule_matmul, "batch_matmul": schedule_batch_matmul,
            "conv2d_nchw": schedule_conv2d_nchw}
_ROW_ANCHORS = {"softmax_output": "schedule_softmax", "log_softmax_output": "schedule_softmax",
                "layer_norm": "schedule_layer_norm"}


def _finishes_reduction(op):
    """Whether ``op`` is a topi reduction or directly finishes one (mean's division, argmax's pick)."""
    from .. import tag as _tag
    return any(getattr(o, "tag", "") in (_tag.COMM_REDUCE, _tag.COMM_REDUCE_IDX)
               for o in [op] + [t.op for t in getattr(op, "input_tensors", [])])


def schedule_anchor(outs, anchor, target="cuda", what="schedule"):
    """The CUDA schedule of a fused group whose anchor (its most complex operator) is ``anchor``: a tiled
    one for products (dense, matmul, batch_matmul, conv2d), one kernel per row for softmax and layer norm,
    ``schedule_reduce`` for reductions, the vectorized ``schedule_injective`` for injective groups, else
    ``schedule_simple``."""
    from .. import tag as _tag
    op = getattr(anchor, "op", None)
    tag = getattr(op, "tag", "")
    fn = _ANCHORS.get(tag)
    if fn is not None:
        return fn(outs, target)
    if tag in _ROW_ANCHORS:
        return globals()[_ROW_ANCHORS[tag]](outs, target)
    if op is not None and _finishes_reduction(op):
        return schedule_reduce(outs, target)
    if op is None or _tag.is_injective(tag):
        return schedule_injective(outs, target)
    return schedule_simple(outs, target, what)

from .depthwise_conv2d import (schedule_depthwise_conv2d_backward_input_nhwc,  # noqa: E402,F401
                               schedule_depthwise_conv2d_backward_weight_nhwc)


from .conv2d_winograd import (conv2d_nchw_winograd, conv2d_nchw_winograd_weight_transform,  # noqa: E402,F401
                              conv2d_nchw_winograd_without_weight_transform, schedule_conv2d_nchw_winograd,
                              schedule_conv2d_nchw_winograd_without_weight_transform)
from ..nn.winograd import conv2d_winograd_nhwc as conv2d_nhwc_winograd_direct  # noqa: E402,F401
from ..nn.winograd import conv3d_winograd_ncdhw as conv3d_ncdhw_winograd  # noqa: E402,F401

_ANCHORS["conv2d_nchw_winograd"] = schedule_conv2d_nchw_winograd
schedule_conv2d_nhwc_winograd_direct = _named("schedule_conv2d_nhwc_winograd_direct", True)
schedule_conv3d_ncdhw_winograd = _named("schedule_conv3d_ncdhw_winograd", True)


def conv2d_nhwc_winograd_tensorcore(*args, **kwargs):
    """TVM's tensor-core Winograd (NHWC) is not built: tvmlab's tensor cores run products
    (``dense_tensorcore``, ``batch_matmul_tensorcore``); its CUDA Winograd is ``conv2d_nchw_winograd``."""
    raise ScheduleError("topi.cuda.conv2d_nhwc_winograd_tensorcore is not built: use "
                        "topi.cuda.conv2d_nhwc_winograd_direct (or conv2d_nchw_winograd, tiled), or dense_tensorcore "
                        "/ batch_matmul_tensorcore for float16 products")


schedule_conv2d_nhwc_winograd_tensorcore = conv2d_nhwc_winograd_tensorcore


# TVM's CUDA computes of the scans, searches and sorts: the generic computes, scheduled a kernel per stage
from ..scan import cumprod, cumsum  # noqa: E402,F401
from ..search import argwhere, searchsorted, unique  # noqa: E402,F401
from ..sort import argsort, sort, topk  # noqa: E402,F401
from ..indexing import scatter_nd  # noqa: E402,F401

schedule_scan = _named("schedule_scan", True)
schedule_extern = _named("schedule_extern", True)
schedule_argwhere = _named("schedule_argwhere", True)
schedule_sort = _named("schedule_sort", True)
schedule_argsort = _named("schedule_argsort", True)
schedule_topk = _named("schedule_topk", True)


from .reduction import schedule_reduce  # noqa: E402,F401
from .softmax import schedule_layer_norm, schedule_softmax  # noqa: E402,F401
from .injective import schedule_injective  # noqa: E402,F401

schedule_elemwise = schedule_broadcast = schedule_injective


# CUDA C has no bit cast operator: reinterpret becomes its intrinsic functions (or a cast between the
# signed and unsigned integers of one width, which keeps the bits)
_BITCAST = {("float32", "int32"): "__float_as_int", ("int32", "float32"): "__int_as_float",
            ("float32", "uint32"): "__float_as_uint", ("uint32", "float32"): "__uint_as_float",
            ("float64", "int64"): "__double_as_longlong", ("int64", "float64"): "__longlong_as_double",
            ("float16", "int16"): "__half_as_short", ("int16", "float16"): "__short_as_half",
            ("float16", "uint16"): "__half_as_ushort", ("uint16", "float16"): "__ushort_as_half"}


def _reinterpret_rule(call):
    from ...ir import dtype as dt
    from ...ir import op as _op
    x = call.args[0]
    src, dst = x.dtype, call.dtype
    if (src, dst) in _BITCAST:
        return _op.call_pure_extern(dst, _BITCAST[(src, dst)], x)
    if dt.is_int(src) and dt.is_int(dst):
        return _op.cast(dst, x)
    if (src, dst) == ("float64", "uint64"):
        return _op.cast(dst, _op.call_pure_extern("int64", "__double_as_longlong", x))
    if (src, dst) == ("uint64", "float64"):
        return _op.call_pure_extern(dst, "__longlong_as_double", _op.cast("int64", x))
    return None


from ...lower.intrin_rules import register_intrin_rule  # noqa: E402

register_intrin_rule("cuda", "reinterpret", _reinterpret_rule, level=5, override=True)


from .tensorcore import (batch_matmul_tensorcore, dense_tensorcore, schedule_batch_matmul_tensorcore,  # noqa: E402,F401
                         schedule_dense_tensorcore)

# relay's float16 products on tensor cores (relay.op.nn picks the computes where tensorcore_fits)
_ANCHORS["dense_tensorcore"] = lambda outs, target="cuda": schedule_dense_tensorcore(outs)
_ANCHORS["batch_matmul_tensorcore"] = lambda outs, target="cuda": schedule_batch_matmul_tensorcore(outs)
