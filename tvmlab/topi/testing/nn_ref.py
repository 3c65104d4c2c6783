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


def lstm_python(Xs, Wi, Wh, Bi=None, Bh=None, h_init=None, c_init=None, proj=None, p_i=None, p_f=None, p_o=None,
                f_act="sigmoid", g_act="tanh", h_act="tanh", reverse=False, weight_layout="IFGO"):
    """An LSTM over Xs (T, B, F), gates packed in ``weight_layout`` order; returns (hs, cs) per step."""
    act = {"sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh}
    f_act, g_act, h_act = act[f_act], act[g_act], act[h_act]
    steps, batch, _ = Xs.shape
    hidden = Wi.shape[0] // 4
    idx = {c: weight_layout.index(c) for c in "IFGO"}
    h = np.zeros((batch, Wh.shape[1])) if h_init is None else h_init.astype(np.float64)
    c = np.zeros((batch, hidden)) if c_init is None else c_init.astype(np.float64)
    hs, cs = [], []
    for t in range(steps):
        x = Xs[steps - 1 - t if reverse else t].astype(np.float64)
        pre = x @ Wi.T + h @ Wh.T
        pre = pre + (Bi if Bi is not None else 0) + (Bh if Bh is not None else 0)
        g = {k: pre[:, v * hidden:(v + 1) * hidden] for k, v in idx.items()}
        ig, fg = g["I"], g["F"]
        if p_i is not None and p_f is not None:
            ig, fg = ig + p_i * c, fg + p_f * c
        c = f_act(fg) * c + f_act(ig) * g_act(g["G"])
        og = g["O"] + (p_o * c if p_o is not None else 0)
        h = f_act(og) * h_act(c)
        if proj is not None:
            h = h @ proj.T
        hs.append(h)
        cs.append(c)
    return np.stack(hs).astype(Xs.dtype), np.stack(cs).astype(Xs.dtype)


def nll_loss(predictions, targets, weights, reduction="mean", ignore_index=-100):
    """The negative log-likelihood loss: per position ``-predictions[n, target, ...] * weights[target]``."""
    losses = np.zeros(targets.shape)
    total_weight = 0.0
    for pos in np.ndindex(targets.shape):
        cls = targets[pos]
        if cls != ignore_index:
            losses[pos] = -predictions[(pos[0], cls) + pos[1:]] * weights[cls]
            total_weight += weights[cls]
    if reduction == "mean":
        return np.sum(losses) / total_weight
    return np.sum(losses) if reduction == "sum" else losses
