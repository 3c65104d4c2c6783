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
    out = ref.conv2d_nchw_python(xn, kn, stride, padding, dilation=dilation)
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


# ------------------------------------------------------------------ pooling in NCHW[x]c, TVM's older spelling

@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("k,stride,dilation,padding,ceil_mode,include_pad", [
    (3, 2, 1, (1, 1, 1, 1), True, False),
    (3, 2, 1, (0, 1, 2, 0), True, True),
    (2, 2, 1, 0, False, True),
    (3, 1, 2, (1, 2, 1, 0), False, False),
])
def test_pool2d_blocked_layout(kind, k, stride, dilation, padding, ceil_mode, include_pad, check_build):
    X = ph((2, 3, 11, 10, 4), "X")
    out = topi.nn.pool2d(X, k, stride, dilation, padding, kind, ceil_mode, "NCHW4c", include_pad)
    assert out.op.tag == f"pool_{kind}"

    def want(x):
        xn = ref.layout_transform_python(x, "NCHW4c", "NCHW")
        y = ref.pool2d_python(xn, k, stride, dilation, padding, kind, ceil_mode, include_pad)
        return ref.layout_transform_python(y, "NCHW", "NCHW4c")
    check_build(x86.schedule_pool([out], target=TARGET), [X, out], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_global_pool_blocked_layout(kind, check_build):
    X = ph((1, 2, 7, 9, 8), "X")
    out = topi.nn.global_pool(X, kind, "NCHW8c")
    assert tuple(out.shape) == (1, 2, 1, 1, 8)
    red = np.max if kind == "max" else np.mean
    check_build(x86.schedule_adaptive_pool([out], target=TARGET), [X, out],
                lambda x: red(x, axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-5)


def test_pool_layout_errors():
    with pytest.raises(OperatorError, match="NCHW8c"):
        topi.nn.pool2d(ph((1, 2, 5, 5, 4), "X"), 2, 2, 1, 0, "max", layout="NCHW8c")
    with pytest.raises(OperatorError, match="layout must be"):
        topi.nn.pool2d(ph((1, 2, 5, 5), "X"), 2, 2, 1, 0, "max", layout="NCWH")
    with pytest.raises(OperatorError, match="5"):
        topi.nn.global_pool(ph((1, 2, 5, 5), "X"), "avg", "NCHW4c")


def test_pooling_pool_tvm_spelling(check_build):
    from tvmlab.topi.nn.pooling import pool
    X = ph((1, 3, 9, 8), "X")
    out = pool(X, (3, 3), (2, 2), (1, 1, 1, 1), "avg", ceil_mode=True, count_include_pad=False)
    check_build(x86.schedule_pool([out], target=TARGET), [X, out],
                lambda x: ref.pool2d_python(x, 3, 2, 1, 1, "avg", True, False), rtol=1e-5, atol=1e-5)
    assert topi.nn.pool is pool


# ------------------------------------------------------------------ pad modes, nearbyint

@pytest.mark.parametrize("mode,np_mode", [("edge", "edge"), ("reflect", "reflect"), ("constant", "constant")])
def test_pad_modes(mode, np_mode, check_build):
    X = ph((2, 5, 4), "X")
    before, after = (0, 2, 3), (1, 4, 0)
    out = topi.nn.pad(X, before, after, 0.0, pad_mode=mode)
    assert out.op.tag == "injective,pad"
    check_build(x86.schedule_injective([out], target=TARGET), [X, out],
                lambda x: np.pad(x, list(zip(before, after)), mode=np_mode))


@pytest.mark.parametrize("mode", ["SYMMETRIC", "REFLECT"])
def test_mirror_pad(mode, check_build):
    n = te.var("n")
    X = ph((n, 6), "X")
    out = topi.nn.mirror_pad(X, (0, 3), (0, 2), mode=mode)
    check_build(x86.schedule_injective([out], target=TARGET), [X, out],
                lambda x: np.pad(x, [(0, 0), (3, 2)], mode=mode.lower()), env={"n": 3})


def test_pad_mode_errors():
    X = ph((2, 3), "X")
    with pytest.raises(OperatorError, match="pad_mode"):
        topi.nn.pad(X, (0, 1), pad_mode="wrap")
    with pytest.raises(OperatorError, match="size - 1"):
        topi.nn.pad(X, (0, 3), (0, 0), pad_mode="reflect")
    with pytest.raises(OperatorError, match="at most size"):
        topi.nn.mirror_pad(X, (0, 4), mode="SYMMETRIC")
    with pytest.raises(OperatorError, match="SYMMETRIC"):
        topi.nn.mirror_pad(X, (0, 1), mode="EDGE")


def test_nearbyint_rounds_halves_to_even(check_build):
    X = ph((12,), "X")
    out = topi.nearbyint(X)
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.2, 0.7, 4.5, 5.5, -0.49], "float32")
    check_build(x86.schedule_injective([out], target=TARGET), [X, out], np.round, inputs={"X": halves})


def test_cuda_schedules_for_blocked_conv_and_pools():
    """topi.cuda.schedule_conv2d_NCHWc, and schedule_pool / schedule_adaptive_pool with TVM's (outs, layout)."""
    import tvmlab
    from tvmlab.errors import TVMLabError
    X, W = ph((1, 2, 9, 8, 4), "X"), ph((3, 2, 3, 3, 4, 8), "W")
    conv = topi.nn.relu(topi.nn.conv2d_NCHWc(X, W, 2, 1, 1, "NCHW4c", "NCHW8c"))
    pool = topi.nn.pool2d(X, 3, 2, 1, 1, "max", True, "NCHW4c")
    gp = topi.nn.global_pool(X, "avg", "NCHW4c")
    groups = [(topi.cuda.schedule_conv2d_NCHWc([conv]), [X, W, conv],
               lambda x, w: np.maximum(blocked_ref(x, w, 4, 8, 2, 1, 1), 0)),
              (topi.cuda.schedule_pool([pool], "NCHW4c"), [X, pool], lambda x: ref.layout_transform_python(
                  ref.pool2d_python(ref.layout_transform_python(x, "NCHW4c", "NCHW"), 3, 2, 1, 1, "max", True),
                  "NCHW", "NCHW4c")),
              (topi.cuda.schedule_adaptive_pool([gp], layout="NCHW4c"), [X, gp],
               lambda x: x.mean(axis=(2, 3), keepdims=True))]
    for s, args, fn in groups:
        try:
            f = tvmlab.build(s, args, "cuda")
        except TVMLabError as e:
            if "NVRTC is not available" in str(e) or "neither NVRTC" in str(e):
                pytest.skip(f"no CUDA compiler here: {e}")
            raise
        assert "threadIdx.x" in f.imported_modules[0].get_source()
        rng = np.random.default_rng(0)
        ins = [rng.standard_normal([int(d) for d in t.shape]).astype("float32") for t in args[:-1]]
        out = np.full([int(d) for d in args[-1].shape], np.nan, "float32")
        tvmlab.testing.simulate(f, *ins, out)              # the kernels, thread by thread
        np.testing.assert_allclose(out, fn(*ins), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ layout_transform and its numpy reference

@pytest.mark.parametrize("shape,src,dst", [
    ((2, 12, 3, 5), "NCHW", "NCHW4c"), ((2, 3, 3, 5, 4), "NCHW4c", "NCHW"), ((1, 2, 3, 4, 8), "NCHW8c", "NCHW4c"),
    ((1, 10, 3, 2), "NCHW", "NCHW4c"),                      # a last block past the 10 channels: zeros
    ((16, 8, 3, 3), "OIHW", "OIHW4i8o"), ((37, 24), "NK", "NK16n"), ((2, 3, 4, 12), "NHWC", "NCHW4c"),
])
def test_layout_transform_against_numpy_reference(shape, src, dst, check_build):
    X = ph(shape, "X")
    Y = topi.layout_transform(X, src, dst)
    check_build(x86.schedule_injective([Y], target=TARGET), [X, Y], lambda x: ref.layout_transform_python(x, src, dst))


def test_relay_folds_constant_layouts_with_the_numpy_reference():
    from tvmlab.relay.layout import transform_array
    w = np.random.default_rng(1).standard_normal((16, 8, 3, 3)).astype("float32")
    got = transform_array(w, "OIHW", "OIHW4i8o")
    assert got.shape == (2, 2, 3, 3, 4, 8)
    np.testing.assert_array_equal(got[1, 0, 2, 1, 3, 5], w[1 * 8 + 5, 0 * 4 + 3, 2, 1])


# ------------------------------------------------------------------ reductions over a leading or middle axis

@pytest.mark.parametrize("fn", ["mean", "sum"])
@pytest.mark.parametrize("shape,axes,keep", [((6, 37, 40), (1,), False), ((300, 24), (0,), True),
                                             ((5, 3, 33), (0, 1), False), ((300, 24), (0,), False)])
def test_reductions_over_leading_axes_accumulate_in_vector_lanes(fn, shape, axes, keep, check_build):
    """topi.x86.schedule_reduce on sum and mean (a sum, then a division) over leading axes: the kept last axis
    in vector lanes (1-D outputs too), the reduced axes looping outside them."""
    X = ph(shape, "X")
    Y = getattr(topi, fn)(X, axes, keep)
    s = x86.schedule_reduce([Y], target=TARGET)
    text = str(tvm_lower(s, [X, Y]))
    acc = [line for line in text.splitlines() if "[T.Ramp" in line.split("=")[0] and " + X[T.Ramp" in line]
    assert acc, text
    check_build(s, [X, Y], lambda x: getattr(np, fn)(x, axis=axes, keepdims=keep), rtol=1e-5, atol=1e-5)


def tvm_lower(s, args):
    import tvmlab
    return tvmlab.lower(s, args)
