"""TVM's ``topi.generic.conv2d``: the fallback schedules of the convolutions (injective stages inlined,
loops plain), importable from this module too."""
from . import (schedule_conv2d_hwcn, schedule_conv2d_nchw, schedule_conv2d_NCHWc,  # noqa: F401
               schedule_conv2d_nhwc, schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_nhwc)
