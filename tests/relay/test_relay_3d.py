"""relay.nn.conv3d, max_pool3d and avg_pool3d (NCDHW) against numpy, fused with a bias and an activation."""
from __future__ import annotations

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.relay.base import RelayError
from tvmlab.topi import testing as ref


def _run(expr, **inputs):
    f = relay.Function(relay.analysis.free_vars(expr), expr)
    return relay.create_executor("graph", tvm.IRModule.from_expr(f)).evaluate()(**inputs).numpy()


@pytest.mark.parametrize("stride, padding, dilation, groups", [(1, (1, 1, 1), 1, 1), (2, (1, 0, 2, 0, 1, 1), 1, 2),
                                                               ((1, 2, 1), 0, 2, 4)])
def test_conv3d_with_bias_and_relu(stride, padding, dilation, groups):
    rng = np.random.default_rng(0)
    xv = rng.standard_normal((2, 4, 7, 8, 9)).astype(np.float32)
    wv = rng.standard_normal((8, 4 // groups, 3, 2, 3)).astype(np.float32)
    bv = rng.standard_normal(8).astype(np.float32)
    x, w = relay.var("x", shape=xv.shape), relay.var("w", shape=wv.shape)
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv3d(x, w, strides=stride, padding=padding, dilation=dilation,
                                                        groups=groups), relay.const(bv)))
    got = _run(y, x=xv, w=wv)
    pad = padding if isinstance(padding, tuple) and len(padding) == 6 else \
        (padding if isinstance(padding, tuple) else (padding,) * 3) * 2
    xp = np.pad(xv, [(0, 0), (0, 0)] + [(pad[k], pad[k + 3]) for k in range(3)])
    want = ref.conv3d_ncdhw_python(xp, _dilate(wv, dilation), stride, 0, groups=groups)
    np.testing.assert_allclose(got, np.maximum(want + bv[:, None, None, None], 0), rtol=1e-4, atol=1e-4)


def _dilate(w, d):
    if d == 1:
        return w
    o, i, *ks = w.shape
    out = np.zeros((o, i) + tuple((k - 1) * d + 1 for k in ks), w.dtype)
    out[:, :, ::d, ::d, ::d] = w
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("ceil_mode, count_include_pad", [(False, False), (True, True)])
def test_pool3d(kind, ceil_mode, count_include_pad):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((1, 3, 7, 6, 9)).astype(np.float32)
    x = relay.var("x", shape=xv.shape)
    kw = dict(pool_size=(3, 2, 3), strides=(2, 2, 2), padding=(1, 0, 1, 1, 0, 1), ceil_mode=ceil_mode)
    y = relay.nn.max_pool3d(x, **kw) if kind == "max" else \
        relay.nn.avg_pool3d(x, count_include_pad=count_include_pad, **kw)
    got = _run(y, x=xv)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(xv, [(0, 0), (0, 0), (1, 1 + 4), (0, 4), (1, 1 + 4)], constant_values=fill)
    ones = np.pad(np.ones_like(xv), [(0, 0), (0, 0), (1, 1 + 4), (0, 4), (1, 1 + 4)])
    inside = np.pad(np.ones_like(xv), [(0, 0), (0, 0), (1, 1), (0, 0), (1, 1)], constant_values=1)
    for d in range(got.shape[2]):
        for h in range(got.shape[3]):
            for w in range(got.shape[4]):
                win = (slice(None), slice(None), slice(2 * d, 2 * d + 3), slice(2 * h, 2 * h + 2),
                       slice(2 * w, 2 * w + 3))
                if kind == "max":
                    want = xp[win].max(axis=(2, 3, 4))
                else:
                    n = (np.pad(inside, [(0, 0), (0, 0), (0, 4), (0, 4), (0, 4)])[win] if count_include_pad
                         else ones[win]).sum(axis=(2, 3, 4))
                    want = np.where(np.isfinite(xp[win]), xp[win], 0).sum(axis=(2, 3, 4)) / n
                np.testing.assert_allclose(got[:, :, d, h, w], want, rtol=1e-5, atol=1e-6)


def test_3d_errors_name_the_problem():
    x = relay.var("x", shape=(1, 2, 4, 4))
    with pytest.raises(tvm.TVMLabError, match="5-D"):
        _run(relay.nn.max_pool3d(x, pool_size=2), x=np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(RelayError, match="padding"):
        relay.nn.conv3d(relay.var("y", shape=(1, 2, 4, 4, 4)), relay.var("w", shape=(2, 2, 1, 1, 1)), padding=(1, 2))
