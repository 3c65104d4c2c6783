"""CPU schedules taking a list of outputs, as TVM's ``topi.x86``: each handles a fused group (its anchor
found by tag, injective producers inlined, elementwise consumers computed in the anchor's tile).

    s = topi.x86.schedule_conv2d_nchw([out]); f = tvm.build(s, [X, W, b, out])
"""
from ..nn import conv2d_hwcn, conv2d_NCHWc, conv2d_nchw, dense, dense_pack, depthwise_conv2d_nchw  # noqa: F401 (as TVM)
from .conv2d import (nchwc_blocks, schedule_conv2d_hwcn, schedule_conv2d_NCHWc, schedule_conv2d_nchw, schedule_conv2d_transpose_nchw,  # noqa: F401
                     schedule_depthwise_conv2d_nchw, schedule_group_conv2d_nchw)
from .depthwise_conv2d import schedule_depthwise_conv2d_NCHWc  # noqa: F401
from .dense import schedule_batch_matmul, schedule_dense, schedule_matmul  # noqa: F401
from .injective import (schedule_broadcast, schedule_concatenate, schedule_elemwise,  # noqa: F401
                        schedule_injective, schedule_injective_from_existing)
from .reduction import (schedule_adaptive_pool, schedule_instance_norm, schedule_layer_norm,  # noqa: F401
                        schedule_lrn, schedule_pool, schedule_reduce, schedule_softmax)
