"""CUDA schedules of the NHWC depthwise convolution's gradients (TVM's ``topi.cuda.depthwise_conv2d``):
one thread per gradient element, its reduction in the thread."""
from __future__ import annotations

from . import schedule_simple


def schedule_depthwise_conv2d_backward_input_nhwc(outs, target="cuda"):
    """One thread per input-gradient element."""
    return schedule_simple(outs, target, "schedule_depthwise_conv2d_backward_input_nhwc")


def schedule_depthwise_conv2d_backward_weight_nhwc(outs, target="cuda"):
    """One thread per filter-gradient element."""
    return schedule_simple(outs, target, "schedule_depthwise_conv2d_backward_weight_nhwc")
