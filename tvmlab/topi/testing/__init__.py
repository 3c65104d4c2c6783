"""numpy references of the topi operators and TVM's per-target dispatch helpers, as TVM's
``tvm.topi.testing``.

    ref = topi.testing.conv2d_nchw_python(x, w, (1, 1), (1, 1, 1, 1), groups=1, dilation=(1, 1))
    s = topi.testing.get_injective_schedule(target)([out])
"""
from .common import (compare_numpy_tvm, dispatch, get_broadcast_schedule, get_conv2d_nchw_implement,  # noqa: F401
                     get_elemwise_schedule, get_injective_schedule, get_reduce_schedule)
from .reference import (adaptive_pool_python, batch_norm_python, conv2d_nchw_python,  # noqa: F401
                        conv2d_transpose_nchw_python, depthwise_conv2d_nchw_python, instance_norm_python,
                        layout_transform_python, log_softmax_python, lrn_python, pool2d_python, softmax_python)
from .transform_ref import (gather_nd_python, gather_python, matrix_set_diag, one_hot, sequence_mask,  # noqa: F401
                            strided_set_python, strided_slice_python)
from .pool_ref import adaptive_pool, pool_grad_nchw, poolnd_python  # noqa: F401
from .nn_ref import batch_matmul, batch_norm, dense, lstm_python, nll_loss  # noqa: F401
from .conv_ref import (conv1d_ncw_python, conv1d_transpose_ncw_python, conv2d_hwcn_python,  # noqa: F401
                       conv2d_nhwc_python, conv3d_ncdhw_python, conv3d_ndhwc_python, conv3d_transpose_ncdhw_python,
                       conv_nd_python, conv_transpose_nd_python, depthwise_conv2d_python_nchw,
                       depthwise_conv2d_python_nchwc, depthwise_conv2d_python_nhwc, dilate_python,
                       group_conv1d_ncw_python)
from .image_ref import (affine_grid_python, crop_and_resize_python, grid_sample_python, resize1d_python,  # noqa: F401
                        resize2d_python, resize3d_python)
from .transform_ref import depth_to_space_python, searchsorted_ref, space_to_depth_python  # noqa: F401
