"""The blocked Winograd convolution (``topi.nn.conv2d_winograd_NCHWc`` with its x86 schedule) and its use by
relay.build for 3x3 convolutions, against the direct convolution on random data."""
import json

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te, topi
from tvmlab.topi import testing as ref
from tvmlab.topi.utils import OperatorError

TARGET = "llvm"


def _nchwc(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2).copy()


@pytest.mark.parametrize("c,o,h,w,pad,ib,ob", [
    (16, 24, 9, 11, 1, 8, 8),          # tiles that do not divide the output; blocks of one vector
    (16, 16, 8, 6, (0, 2, 1, 0), 16, 8),  # uneven padding, a two-vector input block
    (16, 32, 26, 28, 1, 16, 16),       # 7 x 7 = 49 tiles: 7-row register tiles (AVX-512), 5 and 4 (AVX2)
])
def test_winograd_nchwc_with_tail_matches_direct(c, o, h, w, pad, ib, ob, rng):
    x = rng.standard_normal((1, c, h, w)).astype("float32")
    k = rng.standard_normal((o, c, 3, 3)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    W = te.placeholder((o, c, 3, 3), name="W")
    U = topi.nn.winograd_weight_transform_NCHWc(W, 4, ob)
    fu = tvm.build(te.create_schedule(U.op), [W, U], TARGET)
    u = tvm.nd.array(np.full([int(d) for d in U.shape], np.nan, "float32"))
    fu(tvm.nd.array(k), u)

    X = te.placeholder((1, c // ib, h, w, ib), name="X")
    Up = te.placeholder(U.shape, name="U")
    B = te.placeholder((1, o // ob, 1, 1, ob), name="B")
    conv = topi.nn.conv2d_winograd_NCHWc(X, Up, pad)
    out = topi.nn.relu(conv + B)
    s = topi.x86.schedule_conv2d_winograd_NCHWc([out], target=TARGET)
    f = tvm.build(s, [X, Up, B, out], TARGET)
    got = tvm.nd.array(np.full([int(d) for d in out.shape], np.nan, "float32"))
    f(tvm.nd.array(_nchwc(x, ib)), u, tvm.nd.array(bias.reshape(1, o // ob, 1, 1, ob).copy()), got)

    pt, pl, pb, pr = (pad,) * 4 if isinstance(pad, int) else pad
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    want = np.maximum(ref.conv2d_nchw_python(xp, k, 1, 0) + bias[None, :, None, None], 0)
    np.testing.assert_allclose(got.numpy(), _nchwc(want, ob), rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_product_rows_divide_the_tiles_when_they_can():
    from tvmlab.topi.x86.conv2d_winograd import product_rows
    assert product_rows(49, 12) == 7           # not 4 x 12 and a tail of one
    assert product_rows(196, 12) == 7 and product_rows(16, 12) == 8 and product_rows(36, 12) == 12
    assert product_rows(9, 12) == 9            # fewer tiles than rows: all of them
    # no divisor near: the fewest FMA issue slots (a tile of fewer than 8 sums counts as 8); ties: more rows
    assert product_rows(53, 12) == 11          # 4 x 11 + 9: 53 slots, not 4 x 12 + 8
    assert product_rows(49, 6, vectors=2) == 5  # AVX2 (two registers a row): 9 x 10 + 8, not 8 x 12 + 8
    assert product_rows(54, 6, vectors=2) == 6 and product_rows(16, 6, vectors=2) == 4


def test_winograd_nchwc_checks_its_operands():
    X = te.placeholder((1, 2, 8, 8, 8), name="X")
    with pytest.raises(OperatorError, match="do not match"):
        topi.nn.conv2d_winograd_NCHWc(X, te.placeholder((36, 2, 24, 8), name="U"), 1)   # C 16 != 24
    with pytest.raises(OperatorError, match="do not divide"):
        topi.nn.winograd_weight_transform_NCHWc(te.placeholder((12, 16, 3, 3), name="W"), 4, 8)


def _residual(channels, size, seed=0):
    from tvmlab.bench import models
    return models.residual_block(channels=channels, size=size, seed=seed), (1, channels, size, size)


def _build(model, shape, **config):
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    mod, params = relay.frontend.from_onnx(model, shape={"data": shape})
    with tvm.transform.PassContext(opt_level=3, config=config):
        lib = relay.build(mod, target=TARGET, params=params)
    names = [n["name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]
    return graph_executor.GraphModule(lib["default"](tvm.cpu(0))), names


@pytest.mark.parametrize("size", [12, 16])     # F(2x2, 3x3) at 12 x 12, F(4x4, 3x3) at 16 x 16
def test_relay_build_uses_winograd_for_wide_3x3_convs(rng, size):
    ort = pytest.importorskip("onnxruntime")
    model, shape = _residual(64, size)
    x = rng.standard_normal(shape).astype("float32")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"data": x})[0]
    outs = {}
    for on in (True, False):
        g, names = _build(model, shape, **{"relay.conv2d_winograd": on})
        assert any("winograd" in n for n in names) == on, names
        g.set_input("data", x)
        g.run()
        outs[on] = g.get_output(0).numpy()
        np.testing.assert_allclose(outs[on], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_narrow_or_small_convs_stay_direct():
    model, shape = _residual(16, 12)           # 16 channels: the transforms would cost what they save
    _, names = _build(model, shape)
    assert not any("winograd" in n for n in names), names
    model, shape = _residual(64, 4)            # F(2x2, 3x3): 4 output tiles
    _, names = _build(model, shape)
    assert not any("winograd" in n for n in names), names
    model, shape = _residual(64, 7)            # 16 tiles of F(2x2) (4 of F(4x4)): Winograd
    _, names = _build(model, shape)
    assert any("winograd" in n for n in names), names


def test_small_outputs_take_the_smaller_winograd_tile():
    from tvmlab import relay
    from tvmlab.relay.transform.alter_op_layout import winograd_tile
    w = relay.const(np.ones((64, 64, 3, 3), "float32"))
    for size, m in ((7, 2), (14, 2), (15, 4), (28, 4), (56, 4)):
        x = relay.var("x", shape=(1, 64, size, size))
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], relay.nn.conv2d(
            x, w, padding=(1, 1)))))
        assert winograd_tile(mod["main"].body) == m, size


def test_product_prefetches_the_kernel_slices_of_later_tasks(monkeypatch):
    # each task of the product reads its own slice of U (C x ob) once from memory: the product prefetches the
    # slice PREFETCH tasks ahead, a few lines at each reduction step, and the result is unchanged
    from tvmlab.topi.x86 import conv2d_winograd as xw
    from tvmlab.topi.x86.dense import K_UNROLL
    c, o, ob = 64, 32, 16
    X = te.placeholder((1, c // 16, 8, 8, 16), name="X")
    U = te.placeholder((16, o // ob, c, ob), name="U")
    out = topi.nn.relu(topi.nn.conv2d_winograd_NCHWc(X, U, 1, tile_size=2))
    args = [X, U, out]
    rng = np.random.default_rng(1)
    x = tvm.nd.array(rng.standard_normal([int(d) for d in X.shape]).astype("float32"))
    u = tvm.nd.array(rng.standard_normal([int(d) for d in U.shape]).astype("float32"))
    got = {}
    for ahead in (0, xw.PREFETCH):
        monkeypatch.setattr(xw, "PREFETCH", ahead)
        s = xw.schedule_conv2d_winograd_NCHWc([out], target=TARGET)
        text = str(tvm.lower(s, args, simple_mode=True))
        assert ("T.prefetch" in text) == (ahead > 0), text
        if ahead:
            # U's offset of the prefetched slice: PREFETCH slices of c x ob ahead
            pf = next(ln for ln in text.splitlines() if "T.prefetch" in ln)
            assert "address_of(U[" in pf and f"+ {ahead * c * ob}]" in pf, pf
            assert f"range({c // K_UNROLL})" in text, text
        y = tvm.nd.array(np.full([int(d) for d in out.shape], np.nan, "float32"))
        tvm.build(s, args, TARGET)(x, u, y)
        got[ahead] = y.numpy()
    assert not np.isnan(got[0]).any()
    np.testing.assert_array_equal(got[0], got[xw.PREFETCH])
