"""TVM's ``topi.gpu``: GPU operators shared by the GPU targets; here the CUDA computes and schedules of
``topi.cuda`` (one thread per output element)."""
from ..cuda import (dense_large_batch, dense_small_batch, schedule_conv2d_nhwc, schedule_dense_large_batch,  # noqa: F401
                    schedule_dense_small_batch)
from ..nn import conv2d_nhwc  # noqa: F401
