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
from .pooling import adaptive_pool, global_pool, pool, pool2d  # noqa: F401
from .utils import get_pad_tuple  # noqa: F401
