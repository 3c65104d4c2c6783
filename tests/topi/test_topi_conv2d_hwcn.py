"""topi.nn.conv2d_hwcn (batch innermost) with its x86 / generic schedules, against numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te, topi
from tvmlab.errors import TVMLabError


def ref_hwcn(a, w, stride, pads, dil):
    h, wd, c, n = a.shape
    kh, kw, _, o = w.shape
    pt, pl, pb, pr = pads
    ap = np.zeros((h + pt + pb, wd + pl + pr, c, n), a.dtype)
    ap[pt:pt + h, pl:pl + wd] = a
    oh = (h + pt + pb - ((kh - 1) * dil + 1)) // stride + 1
    ow = (wd + pl + pr - ((kw - 1) * dil + 1)) // stride + 1
    out = np.zeros((oh, ow, o, n))
    for i in range(kh):
        for j in range(kw):
            patch = ap[i * dil:i * dil + (oh - 1) * stride + 1:stride, j * dil:j * dil + (ow - 1) * stride + 1:stride]
            out += np.einsum("yxcn,co->yxon", patch, w[i, j])
    return out


def run(f, args, out_shape):
    out = tvm.nd.array(np.full(out_shape, np.nan, "float32"))
    f(*[tvm.nd.array(a) for a in args], out)
    return out.numpy()


@pytest.mark.parametrize("sched", ["x86", "generic"])
@pytest.mark.parametrize("shape,kernel,stride,padding,dil,pads", [
    ((9, 10, 5, 2), (3, 3, 5, 7), 2, "SAME", 1, (1, 1, 1, 1)),     # 7 channels: not a multiple of the lanes
    ((8, 7, 3, 1), (3, 2, 3, 9), 1, (1, 0), 2, (1, 0, 1, 0)),       # dilation, uneven window
    ((6, 6, 4, 3), (1, 1, 4, 16), 1, "VALID", 1, (0, 0, 0, 0)),     # no padding stage
])
def test_conv_bias_relu_matches_numpy(sched, shape, kernel, stride, padding, dil, pads):
    rng = np.random.default_rng(0)
    A = te.placeholder(shape, name="A")
    W = te.placeholder(kernel, name="W")
    B = te.placeholder((1, kernel[3], 1), name="bias")
    with tvm.target.Target("llvm -mcpu=x86-64"):
        C = topi.nn.conv2d_hwcn(A, W, stride, padding, dil)
        R = topi.nn.relu(topi.add(C, B))
        s = getattr(topi, sched).schedule_conv2d_hwcn([R])
    f = tvm.build(s, [A, W, B, R], target="llvm -mcpu=x86-64")
    a = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal(kernel).astype("float32")
    b = rng.standard_normal((1, kernel[3], 1)).astype("float32")
    got = run(f, [a, w, b], [int(x) for x in R.shape])
    np.testing.assert_allclose(got, np.maximum(ref_hwcn(a, w, stride, pads, dil) + b, 0), rtol=1e-4, atol=1e-4)
    assert C.op.tag == "conv2d_hwcn"


def test_bare_conv_scheduled_alone():
    rng = np.random.default_rng(1)
    A = te.placeholder((7, 7, 6, 2), name="A")
    W = te.placeholder((3, 3, 6, 5), name="W")
    C = topi.nn.conv2d_hwcn(A, W, 1, 1, 1)
    s = topi.x86.schedule_conv2d_hwcn(C)
    f = tvm.build(s, [A, W, C], target="llvm -mcpu=x86-64")
    a = rng.standard_normal((7, 7, 6, 2)).astype("float32")
    w = rng.standard_normal((3, 3, 6, 5)).astype("float32")
    np.testing.assert_allclose(run(f, [a, w], (7, 7, 5, 2)), ref_hwcn(a, w, 1, (1, 1, 1, 1), 1), rtol=1e-4, atol=1e-4)


def test_bad_inputs_are_clear_errors():
    A = te.placeholder((7, 7, 6, 2), name="A")
    with pytest.raises(TVMLabError, match="expects 4"):
        topi.nn.conv2d_hwcn(A, te.placeholder((3, 3, 4, 5), name="W"), 1, 1, 1)
    with pytest.raises(TVMLabError, match="4-D"):
        topi.nn.conv2d_hwcn(te.placeholder((7, 7, 6), name="A3"), te.placeholder((3, 3, 6, 5), name="W"), 1, 1, 1)
    with pytest.raises(TVMLabError, match="padding"):
        topi.nn.conv2d_hwcn(A, te.placeholder((3, 3, 6, 5), name="W"), 1, "FULL", 1)
    with pytest.raises(TVMLabError, match="conv2d_hwcn"):
        topi.x86.schedule_conv2d_hwcn([topi.nn.relu(A)])
