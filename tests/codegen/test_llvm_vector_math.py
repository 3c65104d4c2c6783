"""Vector tanh and sigmoid on the LLVM target: inline (no libm call per lane), within a few ulp of float64
numpy, special values (NaN, infinities, -0, overflowing exp) as numpy gives them."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te


def _build(fn, n, lanes=16):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: fn(A[i]), name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=lanes)
    s[B].vectorize(xi)
    return tvm.build(s, [A, B], "llvm")


def _inputs(n, rng):
    x = np.concatenate([rng.uniform(-12, 12, n // 2), rng.uniform(-0.7, 0.7, n // 4),
                        rng.uniform(-1e-3, 1e-3, n - n // 2 - n // 4)]).astype(np.float32)
    x[:10] = [0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -100.0, 1e-30, 0.625, -0.625]
    return x


@pytest.mark.parametrize("name,want", [
    ("tanh", np.tanh),
    ("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x))),
])
def test_vector_tanh_sigmoid_match_numpy(name, want, rng):
    n = 1003                            # 16 lanes do not divide it: a scalar tail too
    f = _build(getattr(te, name), n)
    x = _inputs(n, rng)
    out = tvm.nd.array(np.full(n, np.nan, np.float32))
    f(tvm.nd.array(x), out)
    got = out.numpy()
    with np.errstate(over="ignore"):
        ref = want(x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    tol = 4 * np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
    if name == "sigmoid":               # sigmoid(-100) is subnormal: exp(100) overflows and gives 0
        tol = np.maximum(tol, 1e-37)
    assert (np.abs(got[ok] - ref[ok]) <= tol).all()
    if name == "tanh":
        assert np.signbit(got[1]) and got[7] == np.float32(1e-30)


def test_vector_tanh_and_sigmoid_call_no_libm():
    for fn in (te.tanh, te.sigmoid):
        asm = _build(fn, 64).get_source("asm")
        assert "tanhf" not in asm and "expf" not in asm
