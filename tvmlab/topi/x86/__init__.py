"""CPU schedules taking a list of outputs, as TVM's ``topi.x86``: each handles a fused group (its anchor
found by tag, injective producers inlined, elementwise consumers computed in the anchor's tile).

    s = topi.x86.schedule_conv2d_nchw([out]); f = tvm.build(s, [X, W, b, out])
"""
from ..nn import batch_matmul, conv2d_hwcn, conv2d_NCHWc, conv2d_nchw, dense, depthwise_conv2d_nchw  # noqa: F401 (as TVM)
from .conv2d import (nchwc_blocks, schedule_conv2d_hwcn, schedule_conv2d_NCHWc, schedule_conv2d_nchw,  # noqa: F401
                     schedule_conv2d_transpose_nchw, schedule_depthwise_conv2d_nchw, schedule_group_conv2d_nchw)
from .conv2d_winograd import schedule_conv2d_winograd_NCHWc  # noqa: F401
from .depthwise_conv2d import schedule_depthwise_conv2d_NCHWc  # noqa: F401
from .dense import (dense_nopack, dense_pack, schedule_batch_matmul, schedule_dense, schedule_dense_nopack,  # noqa: F401
                    schedule_dense_pack, schedule_matmul)
from .injective import (schedule_broadcast, schedule_concatenate, schedule_elemwise,  # noqa: F401
                        schedule_injective, schedule_injective_from_existing)
from .reduction import (schedule_adaptive_pool, schedule_instance_norm, schedule_layer_norm,  # noqa: F401
                        schedule_lrn, schedule_pool, schedule_reduce, schedule_softmax)
from ..nn import conv2d_transpose_nchw, conv3d_ncdhw, conv3d_ndhwc, conv3d_transpose_ncdhw  # noqa: F401,E402
from .conv_direct import (schedule_conv1d_ncw, schedule_conv1d_nwc, schedule_conv1d_transpose_ncw,  # noqa: F401,E402
                          schedule_conv2d_nhwc, schedule_conv3d_ncdhw, schedule_conv3d_ndhwc,
                          schedule_conv3d_transpose_ncdhw, schedule_depthwise_conv2d_nhwc, schedule_group_conv1d_ncw,
                          schedule_group_conv1d_nwc, schedule_group_conv2d_nhwc)
from ..nn import depthwise_conv2d_NCHWc  # noqa: F401,E402
from . import conv2d_avx_common  # noqa: F401,E402
from ..indexing import scatter_nd  # noqa: F401,E402
