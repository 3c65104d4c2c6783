"""Each ONNX operator alone, imported by relay.frontend.from_onnx and built, against onnxruntime.

Shapes are small and odd (split factors do not divide them); attributes and
inputs move between opsets (Reshape, Split, Squeeze/Unsqueeze, Reduce*,
Clip, Pad, Slice, Softmax), so both spellings are checked.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from onnx_util import check, model, rand  # noqa: E402

mk = helper.make_node


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", [((2, 3, 5), (2, 3, 5)), ((2, 3, 5), (5,)), ((3, 1, 5), (4, 1)),
                                    ((1,), (2, 3))])
def test_binary_broadcast(op, shapes):
    a, b = rand(*shapes[0], seed=1), rand(*shapes[1], low=0.5, high=2.0, seed=2)
    check(model(mk(op, ["a", "b"], ["y"]), {"a": a, "b": b}, ["y"]), {"a": a, "b": b})


def test_pow_and_variadic():
    a, b, c = rand(2, 7, low=0.5, high=2, seed=1), rand(7, seed=2), rand(2, 1, seed=3)
    nodes = [mk("Pow", ["a", "b"], ["p"]), mk("Max", ["p", "b", "c"], ["m"]),
             mk("Min", ["a", "c"], ["n"]), mk("Mean", ["m", "n", "a"], ["y"]), mk("Sum", ["y", "c"], ["z"])]
    feeds = {"a": a, "b": b, "c": c}
    check(model(nodes, feeds, ["z"]), feeds)


UNARY = [("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("Exp", {}), ("Neg", {}), ("Abs", {}),
         ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Erf", {}), ("Softsign", {}), ("Softplus", {}),
         ("Elu", {"alpha": 0.7}), ("Selu", {}), ("LeakyRelu", {"alpha": 0.2}),
         ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("Identity", {})]


@pytest.mark.parametrize("op,attrs", UNARY, ids=[u[0] for u in UNARY])
def test_unary(op, attrs):
    x = rand(2, 3, 7, low=-3, high=3, seed=4)
    check(model(mk(op, ["x"], ["y"], **attrs), {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("op", ["Log", "Sqrt", "Reciprocal"])
def test_unary_positive(op):
    x = rand(3, 11, low=0.1, high=4, seed=5)
    check(model(mk(op, ["x"], ["y"]), {"x": x}, ["y"]), {"x": x})


def test_hard_swish_opset14():
    x = rand(2, 9, low=-5, high=5, seed=6)
    check(model(mk("HardSwish", ["x"], ["y"]), {"x": x}, ["y"], opset=14), {"x": x})


@pytest.mark.parametrize("slope_shape", [(4, 1, 1), (6,), (1,)])
def test_prelu(slope_shape):
    x = rand(2, 4, 5, 6, seed=7)
    slope = rand(*slope_shape, low=0.05, high=0.5, seed=8)
    check(model(mk("PRelu", ["x", "s"], ["y"]), {"x": x}, ["y"], {"s": slope}), {"x": x})


@pytest.mark.parametrize("opset", [9, 13])
def test_clip(opset):
    x = rand(3, 8, low=-2, high=2, seed=9)
    if opset < 11:
        node, inits = mk("Clip", ["x"], ["y"], min=-0.5, max=0.7), {}
    else:
        node = mk("Clip", ["x", "lo", ""], ["y"])
        inits = {"lo": np.array(-0.5, np.float32)}
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


def test_cast():
    x = rand(4, 5, low=-3, high=3, seed=10)
    nodes = [mk("Cast", ["x"], ["i"], to=6), mk("Cast", ["i"], ["y"], to=1)]   # to int32 and back
    check(model(nodes, {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("kw", [
    dict(strides=[1, 1], pads=[1, 1, 1, 1]),
    dict(strides=[2, 2], pads=[0, 1, 2, 0], dilations=[1, 1]),
    dict(strides=[1, 2], pads=[2, 2, 2, 2], dilations=[2, 2]),
    dict(strides=[2, 2], auto_pad="SAME_UPPER"),
    dict(strides=[2, 1], auto_pad="SAME_LOWER"),
    dict(auto_pad="VALID"),
], ids=["pad1", "asym", "dilated", "same_upper", "same_lower", "valid"])
def test_conv(kw):
    x, w, b = rand(1, 6, 13, 11, seed=11), rand(10, 6, 3, 3, seed=12), rand(10, seed=13)
    node = mk("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], **kw)
    check(model(node, {"x": x}, ["y"], {"w": w, "b": b}), {"x": x})


def test_conv_groups_and_depthwise():
    x = rand(2, 8, 9, 10, seed=14)
    grouped = mk("Conv", ["x", "w"], ["g"], group=2, pads=[1, 1, 1, 1])
    depthwise = mk("Conv", ["g", "d"], ["y"], group=6, pads=[1, 1, 1, 1], strides=[2, 2])
    inits = {"w": rand(6, 4, 3, 3, seed=15), "d": rand(6, 1, 3, 3, seed=16)}
    check(model([grouped, depthwise], {"x": x}, ["y"], inits), {"x": x})


def test_conv1d():
    x, w = rand(2, 3, 17, seed=17), rand(5, 3, 4, seed=18)
    node = mk("Conv", ["x", "w"], ["y"], strides=[2], pads=[1, 2])
    check(model(node, {"x": x}, ["y"], {"w": w}), {"x": x})


@pytest.mark.parametrize("kw", [dict(strides=[2, 2]), dict(strides=[2, 2], pads=[1, 1, 1, 1],
                                                           output_padding=[1, 1]),
                                dict(strides=[1, 1], group=2)])
def test_conv_transpose(kw):
    x, w, b = rand(1, 4, 5, 7, seed=19), rand(4, 3, 3, 3, seed=20), rand(3 * kw.get("group", 1), seed=21)
    node = mk("ConvTranspose", ["x", "w", "b"], ["y"], **kw)
    check(model(node, {"x": x}, ["y"], {"w": w, "b": b}), {"x": x})


@pytest.mark.parametrize("attrs,cshape", [({}, (7,)), ({"transA": 1}, (3, 7)), ({"transB": 1, "alpha": 0.5,
                                          "beta": 2.0}, (1, 7)), ({"transA": 1, "transB": 1}, ())],
                         ids=["bias", "transA", "transB_alpha_beta", "both_scalar_c"])
def test_gemm(attrs, cshape):
    a = rand(*((5, 3) if attrs.get("transA") else (3, 5)), seed=22)
    b = rand(*((7, 5) if attrs.get("transB") else (5, 7)), seed=23)
    node = mk("Gemm", ["a", "b", "c"], ["y"], **attrs)
    check(model(node, {"a": a}, ["y"], {"b": b, "c": rand(*cshape, seed=24)}), {"a": a})


@pytest.mark.parametrize("sa,sb", [((3, 5), (5, 7)), ((2, 3, 5), (5, 4)), ((2, 3, 5), (2, 5, 4)),
                                   ((5,), (5, 3)), ((4, 5), (5,)), ((3, 1, 4, 5), (2, 5, 3))])
def test_matmul(sa, sb):
    a, b = rand(*sa, seed=25), rand(*sb, seed=26)
    check(model(mk("MatMul", ["a", "b"], ["y"]), {"a": a, "b": b}, ["y"]), {"a": a, "b": b})


@pytest.mark.parametrize("opset", [9, 15])
def test_batch_norm(opset):
    x = rand(2, 5, 4, 6, seed=27)
    inits = {"s": rand(5, low=0.5, high=1.5, seed=28), "b": rand(5, seed=29),
             "m": rand(5, seed=30), "v": rand(5, low=0.5, high=2, seed=31)}
    node = mk("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


def test_instance_norm_and_lrn():
    x = rand(2, 6, 5, 7, seed=32)
    nodes = [mk("InstanceNormalization", ["x", "s", "b"], ["n"], epsilon=1e-4),
             mk("LRN", ["n"], ["y"], size=3, alpha=1e-3, beta=0.6, bias=1.5)]
    inits = {"s": rand(6, low=0.5, high=1.5, seed=33), "b": rand(6, seed=34)}
    check(model(nodes, {"x": x}, ["y"], inits), {"x": x})


@pytest.mark.parametrize("op,kw", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[2, 2], auto_pad="SAME_UPPER", strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1)),
], ids=["max", "max_ceil_pad", "max_same", "avg_pad", "avg_include_pad", "avg_ceil"])
def test_pool(op, kw):
    x = rand(1, 3, 11, 10, seed=35)
    check(model(mk(op, ["x"], ["y"], **kw), {"x": x}, ["y"], opset=12), {"x": x})


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool(op):
    x = rand(2, 5, 7, 3, seed=36)
    check(model(mk(op, ["x"], ["y"]), {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (13, 1), (13, -1)])
def test_softmax_axis_semantics(op, opset, axis):
    """Before opset 13 axis=1 flattens axes 1.. into one softmax; from 13 on it is one axis."""
    x = rand(2, 3, 5, low=-3, high=3, seed=37)
    check(model(mk(op, ["x"], ["y"], axis=axis), {"x": x}, ["y"], opset=opset), {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split(opset):
    x = rand(3, 10, seed=38)
    if opset < 13:
        node, inits = mk("Split", ["x"], ["a", "b", "c"], axis=1, split=[2, 5, 3]), {}
    elif opset < 18:
        node, inits = mk("Split", ["x", "s"], ["a", "b", "c"], axis=-1), {"s": np.array([2, 5, 3], np.int64)}
    else:
        node, inits = mk("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3), {}   # 4, 4, 2
    check(model(node, {"x": x}, ["a", "b", "c"], inits, opset=opset), {"x": x})


def test_concat_transpose():
    a, b = rand(2, 3, 4, seed=39), rand(2, 5, 4, seed=40)
    nodes = [mk("Concat", ["a", "b"], ["c"], axis=-2), mk("Transpose", ["c"], ["y"], perm=[2, 0, 1]),
             mk("Transpose", ["y"], ["z"])]
    check(model(nodes, {"a": a, "b": b}, ["z"]), {"a": a, "b": b})


@pytest.mark.parametrize("target", [[0, -1], [-1, 3, 2], [3, 0, -1]])
def test_reshape_special_values(target):
    x = rand(2, 6, 3, seed=41)
    node = mk("Reshape", ["x", "s"], ["y"])
    check(model(node, {"x": x}, ["y"], {"s": np.array(target, np.int64)}), {"x": x})


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_flatten(axis):
    x = rand(2, 3, 4, 5, seed=42)
    check(model(mk("Flatten", ["x"], ["y"], axis=axis), {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    x = rand(3, 1, 4, seed=43)
    if opset < 13:
        nodes, inits = [mk("Unsqueeze", ["x"], ["u"], axes=[0, -1]), mk("Squeeze", ["u"], ["y"], axes=[0, 2])], {}
    else:
        nodes = [mk("Unsqueeze", ["x", "ua"], ["u"]), mk("Squeeze", ["u", "sa"], ["y"])]
        inits = {"ua": np.array([0, -1], np.int64), "sa": np.array([0, 2], np.int64)}
    check(model(nodes, {"x": x}, ["y"], inits, opset=opset), {"x": x})


@pytest.mark.parametrize("opset,mode", [(9, "constant"), (13, "constant"), (13, "reflect"), (13, "edge")])
def test_pad(opset, mode):
    x = rand(1, 2, 5, 6, seed=44)
    pads = [0, 0, 1, 2, 0, 1, 2, 1]
    if opset < 11:
        node, inits = mk("Pad", ["x"], ["y"], pads=pads, value=0.5, mode=mode), {}
    else:
        node = mk("Pad", ["x", "p", "v"], ["y"], mode=mode)
        inits = {"p": np.array(pads, np.int64), "v": np.array(0.5, np.float32)}
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


@pytest.mark.parametrize("opset", [9, 13])
def test_slice(opset):
    x = rand(5, 7, 9, seed=45)
    if opset < 10:
        node, inits = mk("Slice", ["x"], ["y"], starts=[1, -5], ends=[4, 100], axes=[0, 2]), {}
    else:
        node = mk("Slice", ["x", "b", "e", "a", "s"], ["y"])
        inits = {"b": np.array([1, -5], np.int64), "e": np.array([5, 2**62], np.int64),
                 "a": np.array([0, 2], np.int64), "s": np.array([2, 3], np.int64)}
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


@pytest.mark.parametrize("axis,indices", [(0, [2, -1, 0]), (1, [[1, 0], [3, -2]]), (2, 1)])
def test_gather(axis, indices):
    x = rand(4, 5, 3, seed=46)
    node = mk("Gather", ["x", "i"], ["y"], axis=axis)
    check(model(node, {"x": x}, ["y"], {"i": np.array(indices, np.int64)}), {"x": x})


def test_tile_expand():
    x = rand(3, 1, 2, seed=47)
    nodes = [mk("Tile", ["x", "r"], ["t"]), mk("Expand", ["t", "s"], ["y"])]
    inits = {"r": np.array([1, 2, 2], np.int64), "s": np.array([2, 1, 2, 1], np.int64)}
    check(model(nodes, {"x": x}, ["y"], inits), {"x": x})


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2",
          "ReduceLogSumExp"]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("opset,keepdims", [(13, 1), (18, 0)])
def test_reduce(op, opset, keepdims):
    """Axes are an attribute before opset 18 (13 for ReduceSum) and an input from then on."""
    x = rand(3, 4, 5, low=0.1, high=2, seed=48)
    axes = [0, -1]
    if opset >= (13 if op == "ReduceSum" else 18):
        node, inits = mk(op, ["x", "a"], ["y"], keepdims=keepdims), {"a": np.array(axes, np.int64)}
    else:
        node, inits = mk(op, ["x"], ["y"], axes=axes, keepdims=keepdims), {}
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


def test_reduce_all_axes():
    x = rand(3, 4, seed=49)
    check(model(mk("ReduceMean", ["x"], ["y"], keepdims=0), {"x": x}, ["y"]), {"x": x})


@pytest.mark.parametrize("opset", [9, 12])
def test_dropout_is_identity(opset):
    x = rand(3, 6, seed=50)
    nodes = [mk("Dropout", ["x"], ["d"]), mk("Relu", ["d"], ["y"])]
    check(model(nodes, {"x": x}, ["y"], opset=opset), {"x": x})


def test_shape_chain_folds_to_a_static_reshape():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch exports x.view(x.size(0), -1)."""
    x = rand(2, 3, 4, 5, seed=51)
    one = helper.make_tensor("one", 7, [1], [-1])
    nodes = [mk("Shape", ["x"], ["s"]), mk("Constant", [], ["zero"], value=helper.make_tensor("z", 7, [], [0])),
             mk("Gather", ["s", "zero"], ["n"]), mk("Unsqueeze", ["n", "ax"], ["n1"]),
             mk("Constant", [], ["m1"], value=one), mk("Concat", ["n1", "m1"], ["target"], axis=0),
             mk("Reshape", ["x", "target"], ["y"])]
    m = model(nodes, {"x": x}, [("y", (2, 60))], {"ax": np.array([0], np.int64)})
    check(m, {"x": x})
    from tvmlab import relay
    from tvmlab.relay.expr import post_order
    mod, _ = relay.frontend.from_onnx(m)
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, relay.Call)]
    assert [c.op.name for c in calls] == ["reshape"]


def test_constant_node_and_opset21():
    x = rand(2, 5, seed=52)
    c = helper.make_tensor("c", 1, [5], rand(5, seed=53).tolist())
    nodes = [mk("Constant", [], ["k"], value=c), mk("Add", ["x", "k"], ["y"])]
    check(model(nodes, {"x": x}, ["y"], opset=21), {"x": x})


@pytest.mark.parametrize("opset,kw", [(11, {}), (13, {"coordinate_transformation_mode": "asymmetric",
                                                      "nearest_mode": "floor"}), (10, {})])
def test_resize_nearest(opset, kw):
    x = rand(1, 2, 3, 5, seed=54)
    scales = np.array([1, 1, 2, 3], np.float32)
    inits = {"s": scales}
    if opset >= 11:       # roi is a required (empty) input in opset 11, optional from 13
        node = mk("Resize", ["x", "roi" if opset == 11 else "", "s"], ["y"], mode="nearest", **kw)
        inits["roi"] = np.zeros(0, np.float32)
    else:
        node = mk("Resize", ["x", "s"], ["y"], mode="nearest")
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


def test_resize_refuses_what_it_cannot_do_exactly():
    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    x = rand(1, 2, 4, 4, seed=55)
    for attrs, scales in (({"mode": "bicubic"}, [1, 1, 2, 2]), ({}, [1, 2, 2, 2])):
        node = mk("Resize", ["x", "", "s"], ["y"], **attrs)
        m = model(node, {"x": x}, ["y"], {"s": np.array(scales, np.float32)})
        with pytest.raises(TVMLabError, match="Resize node"):
            relay.frontend.from_onnx(m)


@pytest.mark.parametrize("op,attrs,opset", [("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20),
                                            ("Mish", {}, 18), ("Celu", {"alpha": 0.6}, 12)],
                         ids=["gelu", "gelu_tanh", "mish", "celu"])
def test_newer_activations(op, attrs, opset):
    x = rand(2, 3, 7, low=-4, high=4, seed=56)
    check(model(mk(op, ["x"], ["y"], **attrs), {"x": x}, ["y"], opset=opset), {"x": x})


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(axis):
    x = rand(2, 5, 6, seed=57)
    shape = x.shape[axis:]
    inits = {"s": rand(*shape, low=0.5, high=1.5, seed=58), "b": rand(*shape, seed=59)}
    node = mk("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis, epsilon=1e-4)
    check(model(node, {"x": x}, ["y"], inits, opset=17), {"x": x})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = rand(4, 5, 3, seed=60)
    rng = np.random.default_rng(61)
    idx = rng.integers(-x.shape[axis], x.shape[axis], size=(2, 5, 3) if axis == 0 else
                       ((4, 2, 3) if axis == 1 else (4, 5, 2))).astype(np.int64)
    node = mk("GatherElements", ["x", "i"], ["y"], axis=axis)
    check(model(node, {"x": x}, ["y"], {"i": idx}), {"x": x})


@pytest.mark.parametrize("op,attrs", [("DepthToSpace", {"mode": "DCR"}), ("DepthToSpace", {"mode": "CRD"}),
                                      ("SpaceToDepth", {})])
def test_depth_space(op, attrs):
    x = rand(2, 8, 3, 4, seed=62) if op == "DepthToSpace" else rand(2, 3, 6, 4, seed=62)
    check(model(mk(op, ["x"], ["y"], blocksize=2, **attrs), {"x": x}, ["y"]), {"x": x})
