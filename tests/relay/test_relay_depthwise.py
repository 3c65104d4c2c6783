"""Depthwise and grouped convolutions in the blocked layout: topi.nn.depthwise_conv2d_NCHWc, grouped
conv2d_NCHWc, and AlterOpLayout keeping MobileNet-shaped networks blocked from block to block."""
from __future__ import annotations

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay, te, topi
from tvmlab.errors import TVMLabError
from tvmlab.relay.analysis import count_calls
from tvmlab.relay.expr import Call, post_order
from tvmlab.topi.testing import layout_transform_python as lt

T = relay.transform
HASWELL = "llvm -mcpu=haswell"       # layout decisions pinned: 8 float32 lanes, channel blocks of up to 16


def _run(f, *arrays, out_shape):
    out = tvm.nd.array(np.full(out_shape, np.nan, "float32"))
    f(*[tvm.nd.array(a) for a in arrays], out)
    return out.numpy()


def _nchw_depthwise(x, w, stride, pad, dil):
    """Reference: topi.nn.depthwise_conv2d_nchw built with its own schedule."""
    X = te.placeholder(x.shape, name="X")
    W = te.placeholder(w.shape, name="W")
    Y = topi.nn.depthwise_conv2d_nchw(X, W, stride, pad, dil)
    f = tvm.build(topi.x86.schedule_depthwise_conv2d_nchw([Y]), [X, W, Y])
    return _run(f, x, w, out_shape=tuple(int(v) for v in Y.shape))


@pytest.mark.parametrize("c, m, h, w, stride, pad, dil, ib, ob", [
    (32, 1, 13, 17, 1, 1, 1, 16, 16),            # uneven rows, unit stride
    (32, 1, 15, 11, 2, 1, 1, 8, 8),              # stride 2 over odd sizes
    (16, 1, 10, 9, 1, (2, 0, 1, 3), 2, 16, 16),  # asymmetric padding, dilation 2
    (24, 2, 11, 9, 2, (1, 0, 2, 1), 1, 8, 16),   # channel multiplier 2, output block twice the input's
    (12, 2, 7, 8, 1, 1, (2, 1), 12, 8),          # multiplier 2, blocks that do not line up
])
def test_depthwise_nchwc_matches_nchw_through_layout_transforms(rng, c, m, h, w, stride, pad, dil, ib, ob):
    x = rng.standard_normal((1, c, h, w)).astype("float32")
    k = rng.standard_normal((c, m, 3, 3)).astype("float32")
    bias = rng.standard_normal(c * m).astype("float32")
    want = np.clip(_nchw_depthwise(x, k, stride, pad, dil) + bias[None, :, None, None], 0, 6)
    Xc = te.placeholder((1, c // ib, h, w, ib), name="Xc")
    Wc = te.placeholder((c * m // ob, 1, 3, 3, 1, ob), name="Wc")
    Bc = te.placeholder((1, c * m // ob, 1, 1, ob), name="Bc")
    conv = topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, stride, pad, dil, f"NCHW{ib}c", f"NCHW{ob}c")
    assert conv.op.tag == "depthwise_conv2d_NCHWc" and conv.op.attrs["multiplier"] == m
    out = topi.clip(topi.add(conv, Bc), 0.0, 6.0)             # the relu6 tail fuses into the tile
    s = topi.x86.schedule_depthwise_conv2d_NCHWc([out])
    f = tvm.build(s, [Xc, Wc, Bc, out])
    got = _run(f, lt(x, "NCHW", f"NCHW{ib}c"), lt(k.reshape(c * m, 1, 3, 3), "OIHW", f"OIHW1i{ob}o"),
               lt(bias.reshape(1, c * m, 1, 1), "NCHW", f"NCHW{ob}c"), out_shape=tuple(int(v) for v in out.shape))
    np.testing.assert_allclose(lt(got, f"NCHW{ob}c", "NCHW"), want, rtol=1e-5, atol=1e-5)


def test_depthwise_nchwc_symbolic_batch(rng):
    n = te.var("n")
    Xc = te.placeholder((n, 2, 9, 10, 8), name="Xc")
    Wc = te.placeholder((2, 1, 3, 3, 1, 8), name="Wc")
    Y = topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, 2, 1, 1, "NCHW8c", "NCHW8c")
    f = tvm.build(topi.x86.schedule_depthwise_conv2d_NCHWc([Y]), [Xc, Wc, Y])
    x = rng.standard_normal((3, 16, 9, 10)).astype("float32")
    k = rng.standard_normal((16, 1, 3, 3)).astype("float32")
    got = _run(f, lt(x, "NCHW", "NCHW8c"), lt(k, "OIHW", "OIHW1i8o"), out_shape=(3, 2, 5, 5, 8))
    np.testing.assert_allclose(lt(got, "NCHW8c", "NCHW"), _nchw_depthwise(x, k, 2, 1, 1), rtol=1e-5, atol=1e-5)


def test_depthwise_nchwc_bad_input_names_what_is_wrong():
    Xc = te.placeholder((1, 2, 8, 8, 8), name="Xc")
    with pytest.raises(TVMLabError, match="NCHW8c"):
        topi.nn.depthwise_conv2d_NCHWc(Xc, te.placeholder((2, 1, 3, 3, 1, 8)), 1, 1, 1, "NCHW16c", "NCHW8c")
    with pytest.raises(TVMLabError, match="C\\*M/oc, 1, KH, KW, 1, oc"):
        topi.nn.depthwise_conv2d_NCHWc(Xc, te.placeholder((2, 2, 3, 3, 8, 8)), 1, 1, 1, "NCHW8c", "NCHW8c")
    with pytest.raises(TVMLabError, match="multiple"):
        topi.nn.depthwise_conv2d_NCHWc(Xc, te.placeholder((3, 1, 3, 3, 1, 8)), 1, 1, 1, "NCHW8c", "NCHW8c")
    with pytest.raises(TVMLabError, match="strides"):
        topi.nn.depthwise_conv2d_NCHWc(Xc, te.placeholder((2, 1, 3, 3, 1, 8)), 0, 1, 1, "NCHW8c", "NCHW8c")


def test_grouped_conv2d_nchwc_matches_group_conv2d_nchw(rng):
    g, c, o, h, w = 2, 32, 16, 9, 7
    x = rng.standard_normal((1, c, h, w)).astype("float32")
    k = rng.standard_normal((o, c // g, 3, 3)).astype("float32")
    X, W = te.placeholder(x.shape, name="X"), te.placeholder(k.shape, name="W")
    R = topi.nn.group_conv2d_nchw(X, W, 2, 1, 1, g)
    want = _run(tvm.build(topi.x86.schedule_conv2d_nchw([R]), [X, W, R]), x, k, out_shape=(1, o, 5, 4))
    Xc = te.placeholder((1, c // 8, h, w, 8), name="Xc")
    Wc = te.placeholder((o // 4, c // g // 8, 3, 3, 8, 4), name="Wc")
    Y = topi.nn.conv2d_NCHWc(Xc, Wc, 2, 1, 1, "NCHW8c", "NCHW4c", groups=g)
    f = tvm.build(topi.x86.schedule_conv2d_NCHWc([Y]), [Xc, Wc, Y])
    got = _run(f, lt(x, "NCHW", "NCHW8c"), lt(k, "OIHW", "OIHW8i4o"), out_shape=(1, o // 4, 5, 4, 4))
    np.testing.assert_allclose(lt(got, "NCHW4c", "NCHW"), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TVMLabError, match="groups=3"):
        topi.nn.conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW8c", "NCHW4c", groups=3)


# ------------------------------------------------------------------ graph level
def _const(rng, *shape, scale=0.3):
    return relay.const((rng.standard_normal(shape) * scale).astype("float32"))


def _relu6(x):
    return relay.clip(x, 0.0, 6.0)


def _inverted_residual(rng, x, c, cout, stride, t=4):
    hidden = c * t
    y = _relu6(relay.nn.bias_add(relay.nn.conv2d(x, _const(rng, hidden, c, 1, 1)), _const(rng, hidden)))
    y = relay.nn.conv2d(y, _const(rng, hidden, 1, 3, 3), strides=(stride, stride), padding=(1, 1), groups=hidden)
    y = _relu6(relay.nn.bias_add(y, _const(rng, hidden)))
    y = relay.nn.bias_add(relay.nn.conv2d(y, _const(rng, cout, hidden, 1, 1)), _const(rng, cout))
    return relay.add(x, y) if stride == 1 and c == cout else y


def _mobilenet_blocks(rng, size=13):
    x = relay.var("x", shape=(1, 16, size, size))
    y = _inverted_residual(rng, x, 16, 16, 1)
    y = _inverted_residual(rng, y, 16, 32, 2)
    y = _inverted_residual(rng, y, 32, 32, 1)
    return relay.Function([x], y)


def _layout_transforms(mod):
    return [(n.attrs.src_layout, n.attrs.dst_layout) for n in post_order(mod["main"].body)
            if isinstance(n, Call) and getattr(n.op, "name", "") == "layout_transform"
            and n.attrs.src_layout != "OIHW"]


def _alter(f):
    mod = tvm.IRModule.from_expr(f)
    with tvm.transform.PassContext(opt_level=3):
        return tvm.transform.Sequential([T.InferType(), T.AlterOpLayout(HASWELL), T.FoldConstant()])(mod)


def test_alter_op_layout_keeps_mobilenet_blocks_blocked(rng):
    mod = _alter(_mobilenet_blocks(rng))
    body = mod["main"].body
    assert count_calls(body, "nn.conv2d") == 0
    assert count_calls(body, "nn.contrib_depthwise_conv2d_NCHWc") == 3
    assert count_calls(body, "nn.contrib_conv2d_NCHWc") == 6
    # the data goes in once and the result out once: nothing between blocks (weights folded at compile time)
    assert _layout_transforms(mod) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]
    dw = [n for n in post_order(body) if isinstance(n, Call) and n.op.name == "nn.contrib_depthwise_conv2d_NCHWc"]
    assert [d.attrs.kernel_layout for d in dw] == ["OIHW1i16o"] * 3


def _build_run(f, x, disabled=()):
    from tvmlab.contrib import graph_executor
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(disabled)):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", x)
    out = g.get_output(0)
    out.copyfrom(np.full(out.shape, np.nan, "float32"))
    g.run()
    return g.get_output(0).numpy()


def test_mobilenet_blocks_blocked_equal_unblocked(rng):
    f = _mobilenet_blocks(rng)
    x = rng.standard_normal((1, 16, 13, 13)).astype("float32")
    want = _build_run(f, x, disabled=["AlterOpLayout"])
    got = _build_run(f, x)
    assert np.isfinite(want).all() and np.abs(want).max() > 0.1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups, converted", [(2, True), (16, False)])
def test_grouped_conv_blocked_only_when_the_block_divides_a_group(rng, groups, converted):
    x16 = relay.var("x", shape=(1, 16, 9, 9))
    y = relay.nn.relu(relay.nn.conv2d(x16, _const(rng, 64, 16, 1, 1)))          # a blocked producer
    y = relay.nn.relu(relay.nn.conv2d(y, _const(rng, 64, 64 // groups, 3, 3), padding=(1, 1), groups=groups))
    f = relay.Function([x16], relay.nn.conv2d(y, _const(rng, 16, 64, 1, 1)))
    mod = _alter(f)
    body = mod["main"].body
    if converted:     # 32 channels a group, blocks of 16: conv2d_NCHWc with groups, no transform between
        assert count_calls(body, "nn.conv2d") == 0
        assert [n.attrs.groups for n in post_order(body) if isinstance(n, Call)
                and n.op.name == "nn.contrib_conv2d_NCHWc"] == [1, groups, 1]
        assert _layout_transforms(mod) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]
    else:             # 4 channels a group: the grouped conv stays in NCHW, with transforms around it
        assert count_calls(body, "nn.conv2d") == 1
        assert _layout_transforms(mod) == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW"), ("NCHW", "NCHW16c"),
                                           ("NCHW16c", "NCHW")]
    xv = rng.standard_normal((1, 16, 9, 9)).astype("float32")
    np.testing.assert_allclose(_build_run(f, xv), _build_run(f, xv, disabled=["AlterOpLayout"]), rtol=1e-4,
                               atol=1e-4)


def test_depthwise_multiplier_blocked_in_a_graph(rng):
    x = relay.var("x", shape=(1, 8, 10, 10))
    y = relay.nn.relu(relay.nn.conv2d(x, _const(rng, 16, 8, 1, 1)))
    y = relay.nn.conv2d(y, _const(rng, 32, 1, 3, 3), strides=(2, 2), padding=(1, 1), groups=16)  # multiplier 2
    f = relay.Function([x], relay.nn.relu(y))
    mod = _alter(f)
    assert count_calls(mod["main"].body, "nn.contrib_depthwise_conv2d_NCHWc") == 1
    assert _layout_transforms(mod) == [("NCHW", "NCHW8c"), ("NCHW16c", "NCHW")]
    xv = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    np.testing.assert_allclose(_build_run(f, xv), _build_run(f, xv, disabled=["AlterOpLayout"]), rtol=1e-4,
                               atol=1e-4)


def test_contrib_depthwise_type_errors_name_the_layouts():
    x = relay.var("x", shape=(1, 2, 8, 8, 8))
    w = relay.var("w", shape=(2, 1, 3, 3, 1, 8))
    y = relay.nn.contrib_depthwise_conv2d_nchwc(x, w, data_layout="NCHW8c", kernel_layout="OIHW8i8o")
    with pytest.raises(TVMLabError, match="OIHW8i8o"):
        T.InferType()(tvm.IRModule.from_expr(y))
    y = relay.nn.contrib_depthwise_conv2d_nchwc(x, w, padding=(1, 1), data_layout="NCHW8c",
                                                kernel_layout="OIHW1i8o")
    mod = T.InferType()(tvm.IRModule.from_expr(y))
    assert tuple(mod["main"].body.checked_type.shape) == (1, 2, 8, 8, 8)
    with pytest.raises(TVMLabError, match="strides and dilation must be >= 1"):
        relay.nn.contrib_depthwise_conv2d_nchwc(x, w, strides=(0, 1), kernel_layout="OIHW1i8o")
    wrong = relay.var("w", shape=(3, 1, 3, 3, 1, 8))       # 24 outputs from 16 inputs: no multiplier
    with pytest.raises(TVMLabError, match="multiple"):
        T.InferType()(tvm.IRModule.from_expr(relay.nn.contrib_depthwise_conv2d_nchwc(
            x, wrong, data_layout="NCHW8c", kernel_layout="OIHW1i8o")))


def test_small_mobilenet_onnx_matches_onnxruntime(rng):
    pytest.importorskip("onnxruntime")
    from tvmlab.bench import models
    from onnx_util import check
    m = models.mobilenet_v2(size=32, classes=10, width_mult=0.25)
    check(m, {"data": rng.standard_normal((1, 3, 32, 32)).astype("float32")}, rtol=1e-3, atol=1e-4)


def test_whole_mobilenet_v2_has_no_layout_transform_between_blocks():
    pytest.importorskip("onnx")
    from tvmlab.bench import models
    m = models.mobilenet_v2(size=64, classes=10)
    mod, params = relay.frontend.from_onnx(m, shape={"data": (1, 3, 64, 64)})
    with tvm.transform.PassContext(opt_level=3):
        mod, _ = relay.optimize(mod, HASWELL, params=params)
    body = mod["main"].body
    lts = [(n.attrs.src_layout, n.attrs.dst_layout) for n in post_order(body, enter_functions=True)
           if isinstance(n, Call) and getattr(n.op, "name", "") == "layout_transform"]
    # the image goes in once (3 channels: one block of 3), the pooled features come out once
    assert lts == [("NCHW", "NCHW3c"), ("NCHW16c", "NCHW")]
    assert count_calls(body, "nn.contrib_depthwise_conv2d_NCHWc") == 17 and count_calls(body, "nn.conv2d") == 0


def test_generic_fallback_schedule_agrees(rng):
    Xc = te.placeholder((1, 2, 9, 8, 8), name="Xc")
    Wc = te.placeholder((2, 1, 3, 3, 1, 8), name="Wc")
    Y = topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, (2, 1), (0, 1, 2, 1), 1, "NCHW8c", "NCHW8c")
    f = tvm.build(topi.generic.schedule_depthwise_conv2d_NCHWc([Y]), [Xc, Wc, Y])
    x = rng.standard_normal((1, 16, 9, 8)).astype("float32")
    k = rng.standard_normal((16, 1, 3, 3)).astype("float32")
    got = _run(f, lt(x, "NCHW", "NCHW8c"), lt(k, "OIHW", "OIHW1i8o"), out_shape=tuple(int(v) for v in Y.shape))
    want = _nchw_depthwise(x, k, (2, 1), (0, 1, 2, 1), 1)
    np.testing.assert_allclose(lt(got, "NCHW8c", "NCHW"), want, rtol=1e-5, atol=1e-5)


def test_depthwise_nchwc_tiles_that_do_not_divide_the_output(rng):
    Xc = te.placeholder((1, 2, 13, 17, 8), name="Xc")
    Wc = te.placeholder((2, 1, 3, 3, 1, 8), name="Wc")
    Y = topi.nn.relu(topi.nn.depthwise_conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW8c", "NCHW8c"))
    s = topi.x86.schedule_depthwise_conv2d_NCHWc([Y], width=5, rows=4)      # 13 rows, 17 columns
    f = tvm.build(s, [Xc, Wc, Y])
    x = rng.standard_normal((1, 16, 13, 17)).astype("float32")
    k = rng.standard_normal((16, 1, 3, 3)).astype("float32")
    got = _run(f, lt(x, "NCHW", "NCHW8c"), lt(k, "OIHW", "OIHW1i8o"), out_shape=(1, 2, 13, 17, 8))
    np.testing.assert_allclose(lt(got, "NCHW8c", "NCHW"), np.maximum(_nchw_depthwise(x, k, 1, 1, 1), 0),
                               rtol=1e-5, atol=1e-5)
