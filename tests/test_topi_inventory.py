"""topi functions relay's operators compute with (one implementation per operator), against numpy.

conv2d_NCHWc (relay's nn.contrib_conv2d_NCHWc) against conv2d_nchw through layout transforms; pooling in
NCHW[x]c with ceil mode and count_include_pad; pad modes; TVM's older ``topi.nn.pooling.pool`` spelling.
Outputs are poisoned with NaN by ``check_build``.
"""
import numpy as np
import pytest

from tvmlab import te, topi
from tvmlab.topi import testing as ref
from tvmlab.topi.utils import OperatorError

x86 = topi.x86
TARGET = "llvm -mcpu=haswell"


def ph(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


def blocked_ref(x, k, ic, oc, stride, padding, dilation):
    """NCHW{ic}c data and OIHW{ic}i{oc}o kernel -> the NCHW{oc}c result of conv2d_nchw_python."""
    xn = ref.layout_transform_python(x, f"NCHW{ic}c", "NCHW")
    ofo, icb, kh, kw, _, _ = k.shape
    kn = k.transpose(0, 5, 1, 4, 2, 3).reshape(ofo * oc, icb * ic, kh, kw)
    out = ref.conv2d_nchw_python(xn, kn, stride, padding, dilation)
    return ref.layout_transform_python(out, "NCHW", f"NCHW{oc}c")


@pytest.mark.parametrize("c,o,ic,oc,hw,k,stride,padding,dilation", [
    (8, 16, 8, 16, (9, 8), 3, 1, 1, 1),
    (12, 20, 4, 10, (7, 11), 3, 2, (1, 0, 2, 1), 1),      # uneven, asymmetric padding, stride 2
    (6, 6, 3, 2, (10, 9), 3, (1, 2), 2, 2),               # dilation, strides per axis
    (16, 8, 16, 8, (13, 13), 7, 2, 3, 1),                 # a 7x7 stem-like window
    (4, 12, 4, 4, (5, 6), 1, 1, 0, 1),                    # 1x1, no padding stage
])
def test_conv2d_NCHWc_matches_nchw(c, o, ic, oc, hw, k, stride, padding, dilation, check_build):
    X = ph((1, c // ic, *hw, ic), "X")
    W = ph((o // oc, c // ic, k, k, ic, oc), "W")
    b = ph((1, o // oc, 1, 1, oc), "b")
    conv = topi.nn.conv2d_NCHWc(X, W, stride, padding, dilation, f"NCHW{ic}c", f"NCHW{oc}c")
    assert conv.op.tag == "conv2d_NCHWc" and conv.op.attrs["oc_block"] == oc
    out = topi.nn.relu(topi.add(conv, b))

    def want(x, w, bb):
        return np.maximum(blocked_ref(x, w, ic, oc, stride, padding, dilation) + bb, 0)
    check_build(x86.schedule_conv2d_NCHWc([out], target=TARGET), [X, W, b, out], want, rtol=1e-4, atol=1e-4)
    check_build(x86.schedule_conv2d_NCHWc([conv], target=TARGET), [X, W, conv],
                lambda x, w: blocked_ref(x, w, ic, oc, stride, padding, dilation), rtol=1e-4, atol=1e-4)


def test_conv2d_NCHWc_residual_tail_and_symbolic_batch(check_build):
    n = te.var("n")
    X, W = ph((n, 2, 6, 7, 4), "X"), ph((3, 2, 3, 3, 4, 8), "W")
    R = ph((n, 3, 6, 7, 8), "R")
    out = topi.nn.relu(topi.add(topi.nn.conv2d_NCHWc(X, W, 1, 1, 1, "NCHW4c", "NCHW8c"), R))
    check_build(x86.schedule_conv2d_NCHWc([out], target=TARGET), [X, W, R, out],
                lambda x, w, r: np.maximum(blocked_ref(x, w, 4, 8, 1, 1, 1) + r, 0), env={"n": 2},
                rtol=1e-4, atol=1e-4)


def test_conv2d_NCHWc_errors():
    X, W = ph((1, 2, 6, 6, 4), "X"), ph((3, 2, 3, 3, 4, 8), "W")
    with pytest.raises(OperatorError, match="NCHW4c"):
        topi.nn.conv2d_NCHWc(X, W, 1, 1, 1, "NCHW8c", "NCHW8c")
    with pytest.raises(OperatorError, match="do not match"):
        topi.nn.conv2d_NCHWc(X, ph((3, 3, 3, 3, 4, 8), "W2"), 1, 1, 1, "NCHW4c", "NCHW8c")
    with pytest.raises(OperatorError, match="larger than the padded input"):
        topi.nn.conv2d_NCHWc(X, ph((3, 2, 9, 9, 4, 8), "W3"), 1, 0, 1, "NCHW4c", "NCHW8c")
