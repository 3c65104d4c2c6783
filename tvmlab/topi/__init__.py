"""Operator inventory: for each operator a compute (TE) and a CPU schedule built from tvmlab's primitives.

    C = topi.matmul(A, B); s = topi.schedule_matmul(C)     # then tvm.build(s, [A, B, C])
"""
from .conv2d import conv2d_nchw, schedule_conv2d_nchw
from .elementwise import add, schedule_elementwise
from .matmul import matmul, schedule_matmul
from .softmax import schedule_softmax, softmax

__all__ = ["add", "conv2d_nchw", "matmul", "schedule_conv2d_nchw", "schedule_elementwise", "schedule_matmul", "schedule_softmax", "softmax"]
