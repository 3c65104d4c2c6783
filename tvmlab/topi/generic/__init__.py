"""Fallback schedules for any target, spelled as TVM's ``topi.generic``: injective stages inlined, the
rest left at the root in their plain loop order (correct everywhere, fast nowhere).

    s = topi.generic.schedule_injective([out])
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import Tensor
from ..utils import traverse_inline


def as_outputs(outs, what):
    """``outs`` (a Tensor or a list of them) as a list of Tensors; ScheduleError otherwise."""
    outs = [outs] if isinstance(outs, Tensor) else list(outs) if isinstance(outs, (list, tuple)) else None
    if not outs or any(not isinstance(o, Tensor) for o in outs):
        raise ScheduleError(f"{what} takes a tensor or a list of output tensors")
    return outs


def default_schedule(outs, what="schedule"):
    """A schedule of ``outs`` with every injective non-output stage inlined."""
    outs = as_outputs(outs, what)
    s = te.create_schedule([o.op for o in outs])
    for o in outs:
        traverse_inline(s, o.op)
    return s


def _fallback(name):
    def schedule(outs, layout=None):
        return default_schedule(outs, f"generic.{name}")
    schedule.__name__ = schedule.__qualname__ = name
    schedule.__doc__ = (f"Fallback ``{name}``: injective stages inlined, loops left plain (``layout``, as "
                        f"``schedule_pool(outs, layout)`` passes it, changes nothing).")
    return schedule


for _n in ("schedule_injective", "schedule_elemwise", "schedule_broadcast", "schedule_reduce", "schedule_pool",
           "schedule_adaptive_pool", "schedule_softmax", "schedule_conv2d_nchw", "schedule_conv2d_hwcn",
           "schedule_group_conv2d_nchw",
           "schedule_depthwise_conv2d_nchw", "schedule_conv2d_NCHWc", "schedule_depthwise_conv2d_NCHWc",
           "schedule_conv2d_transpose_nchw",
           "schedule_dense", "schedule_matmul", "schedule_batch_matmul", "schedule_lrn", "schedule_extern",
           "schedule_concatenate", "schedule_pool_grad", "schedule_batch_norm",
           "schedule_conv1d_ncw", "schedule_conv1d_nwc", "schedule_group_conv1d_ncw", "schedule_group_conv1d_nwc",
           "schedule_conv1d_transpose_ncw", "schedule_conv2d_nhwc", "schedule_group_conv2d_nhwc",
           "schedule_depthwise_conv2d_nhwc", "schedule_group_conv2d_transpose_nchw", "schedule_conv3d_ncdhw",
           "schedule_conv3d_ndhwc", "schedule_conv3d_transpose_ncdhw", "schedule_lstm", "schedule_unique",
           "schedule_argwhere", "schedule_sort", "schedule_argsort", "schedule_topk", "schedule_scan"):
    globals()[_n] = _fallback(_n)
