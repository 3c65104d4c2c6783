"""Layer normalisation, as TVM's ``topi.nn.layer_norm``: each row (the ``axis`` axes) scaled to mean 0 and
variance 1, then by ``gamma`` and ``beta``.

    Y = topi.nn.layer_norm(X, gamma, beta, axis=[-1], epsilon=1e-5)     # X (tokens, hidden)

The statistics are two sums over the row, of ``d = x - x[row, 0]`` and of ``d * d``: the mean is
``x0 + sum(d) / n``, the variance ``sum(d * d) / n - (sum(d) / n) ** 2``.  Both sums read the row as it is
(no pass that writes the centred row first), so ``topi.x86.schedule_layer_norm`` computes them and the
output one row at a time while the row is in cache; shifting by the row's first element keeps the
one-pass variance accurate when the mean is large against the spread (a plain ``E[x^2] - E[x]^2`` loses
the variance's digits to cancellation there).

Under a GPU target the statistics are the mean, then the sum of ``(x - mean) ** 2`` (attribute
``two_pass``): a GPU schedule keeps each thread's elements of the row in registers across both sums and the
output (``topi.cuda.rows``), so the second pass reads no memory, and every read of the row is at its own
element (the one-pass form's ``x[row, 0]`` would be a read of another thread's element).
"""
from __future__ import annotations

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, gpu_target_current, normalize_axis, shape_str


def layer_norm(data, gamma, beta, axis, epsilon=1e-5):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` over ``axis`` (an int or a list of axes); gamma and
    beta (either may be None) have the shape of those axes. Tag ``layer_norm``."""
    check_tensor("layer_norm", data, "data")
    if not dt.is_float(data.dtype):
        raise OperatorError(f"layer_norm needs a float tensor, got {shape_str(data)}")
    n = len(data.shape)
    axes = sorted({normalize_axis("layer_norm", a, n) for a in ([axis] if isinstance(axis, int) else axis)})
    if not axes:
        raise OperatorError("layer_norm: axis names no axis")
    row = [data.shape[a] for a in axes]
    for name, v in (("gamma", gamma), ("beta", beta)):
        if v is None:
            continue
        check_tensor("layer_norm", v, name, len(axes))
        if any(const_or_none(x) != const_or_none(y) for x, y in zip(v.shape, row)) or v.dtype != data.dtype:
            raise OperatorError(f"layer_norm: {name} is {shape_str(v)}, expected {data.dtype}{tuple(row)} "
                                f"(axes {axes} of {shape_str(data)})")
    kept = [d for d in range(n) if d not in axes]
    red = [te.reduce_axis((0, s), name=f"k{j}") for j, s in enumerate(row)]
    size = 1
    for s in row:
        size = size * s

    def full(outer, inner):
        idx = [None] * n
        for d, v in zip(kept, outer):
            idx[d] = v
        for d, v in zip(axes, inner):
            idx[d] = v
        return tuple(idx)

    if gpu_target_current():
        return _two_pass(data, gamma, beta, axes, kept, full, red, size, epsilon)
    zero = [0] * len(axes)

    def centred(outer, inner):
        return data(*full(outer, inner)) - data(*full(outer, zero))
    shape = tuple(data.shape[d] for d in kept)
    s1 = te.compute(shape, lambda *i: te.sum(centred(i, red), axis=red), name="T_layer_norm_sum")
    red2 = [te.reduce_axis((0, s), name=f"k{j}") for j, s in enumerate(row)]
    s2 = te.compute(shape, lambda *i: te.sum(centred(i, red2) * centred(i, red2), axis=red2),
                    name="T_layer_norm_sumsq")
    inv = _op.const(1.0, data.dtype) / _op.cast(data.dtype, size)
    eps = _op.const(float(epsilon), data.dtype)

    def out(*i):
        outer, inner = [i[d] for d in kept], [i[d] for d in axes]
        mean = s1(*outer) * inv
        var = _op.max(s2(*outer) * inv - mean * mean, _op.const(0.0, data.dtype))
        y = (centred(outer, inner) - mean) * _op.rsqrt(var + eps)
        if gamma is not None:
            y = y * gamma(*inner)
        if beta is not None:
            y = y + beta(*inner)
        return y
    return te.compute(data.shape, out, name="T_layer_norm", tag="layer_norm", attrs={"axis": tuple(axes)})


def _two_pass(data, gamma, beta, axes, kept, full, red, size, epsilon):
    """The GPU form (see the module docstring): the mean, then the sum of squared deviations from it."""
    shape = tuple(data.shape[d] for d in kept)
    inv = _op.const(1.0, data.dtype) / _op.cast(data.dtype, size)
    eps = _op.const(float(epsilon), data.dtype)
    s1 = te.compute(shape, lambda *i: te.sum(data(*full(i, red)), axis=red), name="T_layer_norm_sum")
    red2 = [te.reduce_axis((0, s), name=f"k{j}") for j, s in enumerate(data.shape[a] for a in axes)]

    def dev(outer, inner):
        return data(*full(outer, inner)) - s1(*outer) * inv
    s2 = te.compute(shape, lambda *i: te.sum(dev(i, red2) * dev(i, red2), axis=red2), name="T_layer_norm_sumsq")

    def out(*i):
        outer, inner = [i[d] for d in kept], [i[d] for d in axes]
        y = dev(outer, inner) * _op.rsqrt(s2(*outer) * inv + eps)
        if gamma is not None:
            y = y * gamma(*inner)
        if beta is not None:
            y = y + beta(*inner)
        return y
    return te.compute(data.shape, out, name="T_layer_norm", tag="layer_norm",
                      attrs={"axis": tuple(axes), "two_pass": 1})
