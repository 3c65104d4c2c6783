"""Neural-network operators (computes), spelled as in TVM's ``topi.nn``; schedules are in
``topi.x86`` (CPU), ``topi.cuda`` and ``topi.generic``.

    Y = topi.nn.relu(topi.nn.conv2d_nchw(X, W, strides=1, padding=1, dilation=1))
"""
from .basic import batch_norm, bias_add, flatten, instance_norm, log_softmax, lrn, softmax  # noqa: F401
from .conv2d import (conv2d, conv2d_hwcn, conv2d_NCHWc, conv2d_nchw, conv2d_transpose_nchw, depthwise_conv2d_nchw,  # noqa: F401
                     dilate, group_conv2d_nchw)
from .depthwise_conv2d import depthwise_conv2d_NCHWc  # noqa: F401
from .dense import batch_matmul, dense, dense_pack, matmul  # noqa: F401
from .layer_norm import layer_norm  # noqa: F401
from .elemwise import elu, gelu, hard_sigmoid, leaky_relu, prelu, relu, selu, softplus  # noqa: F401
from .pad import mirror_pad, pad  # noqa: F401
from .pooling import (adaptive_pool, adaptive_pool1d, adaptive_pool3d, global_pool, pool, pool1d, pool2d,  # noqa: F401
                      pool3d, poolnd)
from .pool_grad import pool_grad  # noqa: F401
from .utils import get_pad_tuple  # noqa: F401
from .conv import (conv, conv1d, conv1d_ncw, conv1d_nwc, conv2d_nhwc, conv3d_ncdhw, conv3d_ndhwc,  # noqa: F401,E402
                   depthwise_conv2d_nhwc, group_conv1d_ncw, group_conv1d_nwc, group_conv2d_nhwc)
from .conv_transpose import (conv1d_transpose_ncw, conv3d_transpose_ncdhw,  # noqa: F401,E402
                             group_conv2d_transpose_nchw)
from .utils import get_pad_tuple1d, get_pad_tuple3d  # noqa: F401,E402
from .depthwise_backward import (depthwise_conv2d_backward_input_nhwc,  # noqa: F401,E402
                                 depthwise_conv2d_backward_weight_nhwc)
from .basic import scale_shift_nchw, scale_shift_nchwc, scale_shift_nhwc  # noqa: F401,E402
from .winograd import (conv2d_winograd_NCHWc, conv2d_winograd_nchw, conv2d_winograd_nhwc,  # noqa: F401,E402
                       conv3d_winograd_ncdhw, conv2d_winograd_weight_transform, winograd_weight_transform_NCHWc)
from .upsampling import upsampling, upsampling3d  # noqa: F401,E402
from .space_depth import depth_to_space, space_to_depth  # noqa: F401,E402
from .loss import nll_loss  # noqa: F401,E402
from .lstm import lstm  # noqa: F401,E402
