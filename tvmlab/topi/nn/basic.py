"""Bias, flatten, softmax, normalisation and LRN, as TVM's ``topi.nn``.

    Y = topi.nn.bias_add(X, b, axis=1); P = topi.nn.softmax(Y, axis=-1)
"""
from __future__ import annotations

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none, normalize_axis, prod, shape_str, unravel_index


def _float(op, x):
    check_tensor(op, x, "data")
    if not dt.is_float(x.dtype):
        raise OperatorError(f"{op} needs a float tensor, got {shape_str(x)}")


def _per_channel(op, x, vec, name, axis):
    check_tensor(op, vec, name, 1)
    n, m = const_or_none(x.shape[axis]), const_or_none(vec.shape[0])
    if n is not None and m is not None and n != m:
        raise OperatorError(f"{op}: {name} has {m} values but axis {axis} of {shape_str(x)} has {n}")
    if vec.dtype != x.dtype:
        raise OperatorError(f"{op}: {name} is {shape_str(vec)} but data is {shape_str(x)}; they need one dtype")


def bias_add(data, bias, axis=1):
    """``data + bias`` with ``bias`` (1-D) along ``axis``."""
    check_tensor("bias_add", data, "data")
    axis = normalize_axis("bias_add", axis, len(data.shape))
    _per_channel("bias_add", data, bias, "bias", axis)
    return te.compute(data.shape, lambda *i: data(*i) + bias(i[axis]), name="T_add", tag=tag.BROADCAST)


def flatten(data):
    """``data`` as (batch, everything else)."""
    check_tensor("flatten", data, "data")
    if len(data.shape) < 1:
        raise OperatorError(f"flatten needs at least 1 dimension, got {shape_str(data)}")
    rest = list(data.shape[1:])
    dim = prod(rest) if rest else 1
    return te.compute((data.shape[0], dim), lambda b, j: data(b, *unravel_index(j, rest)) if rest else data(b),
                      name="T_flatten", tag=tag.INJECTIVE)


def _softmax_stages(x, axis, name):
    n = len(x.shape)
    axis = normalize_axis(name, axis, n)
    k1 = te.reduce_axis((0, x.shape[axis]), name="k")
    red_shape = tuple(s for d, s in enumerate(x.shape) if d != axis)

    def at(i, k):
        return tuple(i[:axis]) + (k,) + tuple(i[axis:])
    mx = te.compute(red_shape, lambda *i: te.max(x(*at(i, k1)), axis=k1), name="T_softmax_maxelem",
                    tag=tag.COMM_REDUCE)
    ex = te.compute(x.shape, lambda *i: _op.exp(x(*i) - mx(*(i[:axis] + i[axis + 1:]))), name="T_softmax_exp",
                    tag=tag.ELEMWISE)
    k2 = te.reduce_axis((0, x.shape[axis]), name="k")
    sm = te.compute(red_shape, lambda *i: te.sum(ex(*at(i, k2)), axis=k2), name="T_softmax_expsum",
                    tag=tag.COMM_REDUCE)
    return axis, mx, ex, sm


def softmax(x, axis=-1):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (tag ``softmax_output``)."""
    _float("softmax", x)
    axis, mx, ex, sm = _softmax_stages(x, axis, "softmax")
    return te.compute(x.shape, lambda *i: ex(*i) / sm(*(i[:axis] + i[axis + 1:])), name="T_softmax_norm",
                      tag="softmax_output", attrs={"axis": axis})


def log_softmax(x, axis=-1):
    """``x - max - log(sum(exp(x - max)))`` along ``axis`` (tag ``log_softmax_output``)."""
    _float("log_softmax", x)
    axis, mx, ex, sm = _softmax_stages(x, axis, "log_softmax")
    return te.compute(x.shape, lambda *i: x(*i) - mx(*(i[:axis] + i[axis + 1:])) -
                      _op.log(sm(*(i[:axis] + i[axis + 1:]))),
                      name="T_log_softmax_norm", tag="log_softmax_output", attrs={"axis": axis})


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True, scale=True,
               training=False, momentum=0.1):
    """Inference batch norm: ``(data - mean) / sqrt(var + eps) * gamma + beta`` along ``axis``.

    Returns ``[out, moving_mean, moving_var]`` as TVM does (the statistics unchanged, as copies)."""
    _float("batch_norm", data)
    if training:
        raise OperatorError("batch_norm: training=True is not supported (inference only)")
    axis = normalize_axis("batch_norm", axis, len(data.shape))
    for nm, v in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean), ("moving_var", moving_var)):
        _per_channel("batch_norm", data, v, nm, axis)
    eps = _op.const(epsilon, data.dtype)

    def f(*i):
        c = i[axis]
        y = (data(*i) - moving_mean(c)) * _op.rsqrt(moving_var(c) + eps)
        if scale:
            y = y * gamma(c)
        if center:
            y = y + beta(c)
        return y
    out = te.compute(data.shape, f, name="T_batch_norm", tag=tag.BROADCAST)
    # the statistics are returned as copies, so all three can be outputs of one function (as TVM)
    return [out] + [_copy(v, f"T_batch_norm_{nm}") for nm, v in (("mean", moving_mean), ("var", moving_var))]


def _copy(t, name):
    return te.compute(t.shape, lambda *i: t(*i), name=name, tag=tag.ELEMWISE)


def instance_norm(data, gamma, beta, axis=None, epsilon=1e-5, channel_axis=1):
    """``(x - mean) / sqrt(var + eps) * gamma[c] + beta[c]``, mean and variance over ``axis``
    (default: every axis after the channel axis), per batch element and channel."""
    _float("instance_norm", data)
    n = len(data.shape)
    channel_axis = normalize_axis("instance_norm", channel_axis, n)
    axes = list(range(2, n)) if axis is None else sorted(normalize_axis("instance_norm", a, n)
                                                         for a in ([axis] if isinstance(axis, int) else axis))
    _per_channel("instance_norm", data, gamma, "gamma", channel_axis)
    _per_channel("instance_norm", data, beta, "beta", channel_axis)
    count = _op.cast(data.dtype, prod([data.shape[a] for a in axes]))
    keep = [d for d in range(n) if d not in axes]
    red_shape = tuple(data.shape[d] for d in keep)

    def full(i, ks):
        idx, it, r = [], iter(i), iter(ks)
        for d in range(n):
            idx.append(next(r) if d in axes else next(it))
        return idx
    k1 = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]
    red = {"axis": tuple(axes), "ndim": n}
    s1 = te.compute(red_shape, lambda *i: te.sum(data(*full(i, k1)), axis=k1), name="T_in_sum", tag=tag.COMM_REDUCE,
                    attrs=red)
    mean = te.compute(red_shape, lambda *i: s1(*i) / count, name="T_in_mean", tag=tag.ELEMWISE)
    k2 = [te.reduce_axis((0, data.shape[a]), name=f"k{a}") for a in axes]

    def sq(*i):
        d = data(*full(i, k2)) - mean(*i)
        return te.sum(d * d, axis=k2)
    s2 = te.compute(red_shape, sq, name="T_in_sqsum", tag=tag.COMM_REDUCE, attrs=red)
    eps = _op.const(epsilon, data.dtype)

    def out(*i):
        r = tuple(i[d] for d in keep)
        c = i[channel_axis]
        return (data(*i) - mean(*r)) * _op.rsqrt(s2(*r) / count + eps) * gamma(c) + beta(c)
    return te.compute(data.shape, out, name="T_instance_norm", tag="instance_norm")


def lrn(data, size, axis=1, alpha=0.0001, beta=0.75, bias=2.0):
    """Local response normalisation across ``axis``:
    ``data / (bias + alpha / size * sum of squares over the size-wide window) ** beta``."""
    _float("lrn", data)
    if not isinstance(size, int) or size < 1:
        raise OperatorError(f"lrn: size must be an int >= 1, got {size!r}")
    n = len(data.shape)
    axis = normalize_axis("lrn", axis, n)
    lo = (size - 1) // 2
    k = te.reduce_axis((0, size), name="k")
    extent = data.shape[axis]

    def sqsum(*i):
        c = i[axis] + k - lo
        idx = list(i)
        idx[axis] = _op.min(_op.max(c, 0), extent - 1)
        v = data(*idx)
        inb = _op.all(c >= 0, c < extent)
        return te.sum(_op.if_then_else(inb, v * v, _op.const(0, data.dtype)), axis=k)
    s = te.compute(data.shape, sqsum, name="T_lrn_sqsum", tag=tag.COMM_REDUCE)
    a = _op.const(alpha / size, data.dtype)
    return te.compute(data.shape, lambda *i: data(*i) / _op.power(_op.const(bias, data.dtype) + a * s(*i),
                                                                   _op.const(beta, data.dtype)),
                      name="T_lrn", tag="lrn")


def scale_shift_nchw(Input, Scale, Shift):
    """``Input * Scale[c] + Shift[c]`` for NCHW data (TVM's batch-norm-like affine, per channel)."""
    return te.compute(Input.shape, lambda b, c, y, x: Input[b, c, y, x] * Scale[c] + Shift[c],
                      name="ScaleShift", tag=tag.BROADCAST)


def scale_shift_nhwc(Input, Scale, Shift):
    """``Input * Scale[c] + Shift[c]`` for NHWC data."""
    return te.compute(Input.shape, lambda b, y, x, c: Input[b, y, x, c] * Scale[c] + Shift[c],
                      name="ScaleShift", tag=tag.BROADCAST)


def scale_shift_nchwc(Input, Scale, Shift):
    """``Input * Scale[cb, ci] + Shift[cb, ci]`` for blocked NCHW[x]c data (Scale (C/x, x))."""
    return te.compute(Input.shape, lambda b, cb, y, x, ci: Input[b, cb, y, x, ci] * Scale[cb, ci] + Shift[cb, ci],
                      name="ScaleShift", tag=tag.BROADCAST)
