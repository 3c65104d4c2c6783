"""numpy references for the graph-level tests (float64 inside)."""
from __future__ import annotations

import numpy as np


def conv2d(x, w, stride=(1, 1), pad=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    x = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (wd - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og].astype("float64")
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out


def conv2d_transpose(x, w, stride=(1, 1), pad=(0, 0, 0, 0), output_padding=(0, 0)):
    n, c, h, wd = x.shape
    _, o, kh, kw = w.shape
    sh, sw = stride
    full = np.zeros((n, o, (h - 1) * sh + kh + output_padding[0], (wd - 1) * sw + kw + output_padding[1]))
    for i in range(kh):
        for j in range(kw):
            full[:, :, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw] += \
                np.einsum("nchw,co->nohw", x.astype("float64"), w[:, :, i, j].astype("float64"))
    return full[:, :, pad[0]:full.shape[2] - pad[2], pad[1]:full.shape[3] - pad[3]]


def pool2d(x, kind, k, s, pad, ceil_mode=False, count_include_pad=False):
    n, c, h, w = x.shape
    outs = []
    for size, kk, ss, p0, p1 in ((h, k[0], s[0], pad[0], pad[2]), (w, k[1], s[1], pad[1], pad[3])):
        span = size + p0 + p1 - kk
        o = (span + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (o - 1) * ss >= size + p0:
            o -= 1
        outs.append(o)
    oh, ow = outs
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            y0, x0 = y * s[0] - pad[0], xx * s[1] - pad[1]
            ys, xs = slice(max(y0, 0), min(y0 + k[0], h)), slice(max(x0, 0), min(x0 + k[1], w))
            win = x[:, :, ys, xs].astype("float64")
            if kind == "max":
                out[:, :, y, xx] = win.max(axis=(2, 3))
            else:
                if count_include_pad:
                    cnt = (min(y0 + k[0], h + pad[2]) - max(y0, -pad[0])) * \
                          (min(x0 + k[1], w + pad[3]) - max(x0, -pad[1]))
                else:
                    cnt = win.shape[2] * win.shape[3]
                out[:, :, y, xx] = win.sum(axis=(2, 3)) / cnt
    return out


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def batch_norm(x, g, b, m, v, eps=1e-5):
    sh = (1, -1, 1, 1)
    return (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + eps) * g.reshape(sh) + b.reshape(sh)
