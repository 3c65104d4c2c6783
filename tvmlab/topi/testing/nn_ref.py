"""numpy references of dense, batched matmul, batch norm and friends (TVM's ``topi.testing`` names)."""
from __future__ import annotations

import numpy as np


def batch_matmul(x, y, out_dtype=None, trans_x=False, trans_y=True):
    """``x @ y`` per batch (y (b, N, K) read transposed by default); a batch of 1 broadcasts."""
    x = x.transpose(0, 2, 1) if trans_x else x
    y = y.transpose(0, 2, 1) if trans_y else y
    dtype = out_dtype or x.dtype
    return np.matmul(x.astype(np.float64 if "float" in str(dtype) else dtype),
                     y.astype(np.float64 if "float" in str(dtype) else dtype)).astype(dtype)


def dense(x, y, bias=None, use_bias=False, use_relu=False, out_dtype=None):
    """``x @ y.T (+ bias)``, optionally through relu."""
    dtype = out_dtype or x.dtype
    out = np.dot(x.astype(dtype), y.T.astype(dtype))
    if use_bias:
        out = out + bias.astype(dtype)
    return np.maximum(out, 0) if use_relu else out


def batch_norm(x, gamma, beta, moving_mean, moving_var, axis, epsilon, center, scale):
    """Inference batch norm along ``axis``: returns (out, moving_mean, moving_var)."""
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    out = (x - moving_mean.reshape(shape)) / np.sqrt(moving_var.reshape(shape) + epsilon)
    if scale:
        out = out * gamma.reshape(shape)
    if center:
        out = out + beta.reshape(shape)
    return [out.astype(x.dtype), moving_mean, moving_var]
