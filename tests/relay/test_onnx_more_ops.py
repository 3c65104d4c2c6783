"""ONNX operators beyond classifiers, each alone against onnxruntime: comparisons, logic, Where,
ArgMax/ArgMin, ReduceProd, CumSum, Einsum, Resize (nearest and linear, every coordinate mode, opsets
10 to 19) and Upsample, and shape ops fed by static values.

Inputs are random (never zeros), shapes odd; outputs are checked element by element.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from onnx_util import check, model, rand, run_ort, run_tvm  # noqa: E402

mk = helper.make_node
BOOL, I64 = ("y", None, TensorProto.BOOL), ("y", None, TensorProto.INT64)


def exact(m, feeds, **kw):
    """tvmlab and onnxruntime give the same values and dtypes (bool and integer outputs)."""
    want, got = run_ort(m, feeds), run_tvm(m, feeds, **kw)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, f"dtype {g.dtype}, onnxruntime gives {w.dtype}"
        np.testing.assert_array_equal(g, w)
    return got


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_compare_broadcast(op):
    opset = 16 if op.endswith("Equal") and op != "Equal" else 13
    a = np.round(rand(3, 1, 5, low=-2, high=2, seed=1))       # rounded: equal elements happen
    b = np.round(rand(4, 1, low=-2, high=2, seed=2))
    exact(model(mk(op, ["a", "b"], ["y"]), {"a": a, "b": b}, [BOOL], opset=opset), {"a": a, "b": b})


def test_compare_ints():
    a = np.arange(-7, 8, dtype=np.int64).reshape(3, 5)
    b = np.array([3, -2, 0, 5, -7], np.int64)
    nodes = [mk("Equal", ["a", "b"], ["e"]), mk("Less", ["a", "b"], ["l"]), mk("Or", ["e", "l"], ["y"])]
    exact(model(nodes, {"a": a, "b": b}, [BOOL]), {"a": a, "b": b})


def test_logic_and_where():
    x, y = rand(2, 3, 7, seed=3), rand(3, 1, seed=4)
    nodes = [mk("Greater", ["x", "y"], ["g"]), mk("Less", ["x", "z"], ["l"]),
             mk("And", ["g", "l"], ["a"]), mk("Xor", ["a", "l"], ["o"]), mk("Not", ["o"], ["n"]),
             mk("Where", ["n", "x", "y"], ["w"])]
    inits = {"z": np.array(0.5, np.float32)}
    check(model(nodes, {"x": x, "y": y}, ["w"], inits), {"x": x, "y": y})
    exact(model(nodes[:5], {"x": x, "y": y}, [("n", None, TensorProto.BOOL)], inits), {"x": x, "y": y})


def test_where_broadcasts_all_three():
    c = rand(4, 1, 6, seed=5) > 0
    x, y = rand(1, 5, 1, seed=6), rand(6, seed=7)
    m = model(mk("Where", ["c", "x", "y"], ["w"]), {"c": c, "x": x, "y": y}, ["w"])
    check(m, {"c": c, "x": x, "y": y})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("attrs", [{}, {"axis": 2, "keepdims": 0}, {"axis": -2}],
                         ids=["default", "axis2_drop", "neg_axis"])
def test_arg(op, attrs):
    x = rand(3, 5, 7, seed=8)
    exact(model(mk(op, ["x"], ["y"], **attrs), {"x": x}, [I64]), {"x": x})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_ties_select_last_index(op, last):
    x = np.round(rand(4, 9, low=-2, high=2, seed=9))          # few values: ties on every row
    exact(model(mk(op, ["x"], ["y"], axis=1, select_last_index=last), {"x": x}, [I64], opset=12), {"x": x})


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), (None, 1)], ids=["one", "two", "all"])
def test_reduce_prod(opset, axes, keepdims):
    x = rand(3, 4, 5, low=0.5, high=1.5, seed=10)
    if axes is None:
        node, inits = mk("ReduceProd", ["x"], ["y"], keepdims=keepdims), {}
    elif opset >= 18:
        node, inits = mk("ReduceProd", ["x", "ax"], ["y"], keepdims=keepdims), {"ax": np.array(axes, np.int64)}
    else:
        node, inits = mk("ReduceProd", ["x"], ["y"], axes=axes, keepdims=keepdims), {}
    check(model(node, {"x": x}, ["y"], inits, opset=opset), {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}],
                         ids=["plain", "exclusive", "reverse", "both"])
@pytest.mark.parametrize("axis", [1, -1])
def test_cumsum(attrs, axis):
    x = rand(3, 7, 5, seed=11)
    inits = {"ax": np.array(axis, np.int64)}
    check(model(mk("CumSum", ["x", "ax"], ["y"], **attrs), {"x": x}, ["y"], inits, opset=14), {"x": x})


EINSUM = [("ij,jk->ik", [(3, 5), (5, 7)]), ("bij,bjk->bik", [(2, 3, 5), (2, 5, 4)]),
          ("ij->ji", [(3, 5)]), ("bhid,bhjd->bhij", [(2, 3, 5, 4), (2, 3, 6, 4)]),
          ("i,i->", [(7,), (7,)]), ("ij,kj->ik", [(4, 5), (3, 5)]), ("ii->i", [(5, 5)]),
          ("ij,j", [(3, 5), (5,)]), ("bij,jk->bik", [(2, 3, 5), (5, 1)])]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum(eq, shapes):
    feeds = {f"x{k}": rand(*s, seed=12 + k) for k, s in enumerate(shapes)}
    check(model(mk("Einsum", list(feeds), ["y"], equation=eq), feeds, ["y"], opset=12), feeds)


RESIZE_MODES = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]


@pytest.mark.parametrize("ctm", RESIZE_MODES)
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 1.5, 0.6], [1, 1, 0.5, 0.5]],
                         ids=["up", "odd", "down"])
def test_resize_linear(ctm, scales):
    x = rand(1, 3, 5, 7, seed=20)
    node = mk("Resize", ["x", "", "s"], ["y"], mode="linear", coordinate_transformation_mode=ctm)
    check(model(node, {"x": x}, ["y"], {"s": np.array(scales, np.float32)}), {"x": x})


@pytest.mark.parametrize("ctm,nearest", [("half_pixel", "round_prefer_floor"), ("asymmetric", "floor"),
                                         ("align_corners", "round_prefer_ceil"), ("half_pixel", "floor"),
                                         ("pytorch_half_pixel", "ceil"), ("tf_half_pixel_for_nn", "round_prefer_ceil")])
def test_resize_nearest_sizes(ctm, nearest):
    x = rand(2, 3, 5, 6, seed=21)
    node = mk("Resize", ["x", "", "", "sz"], ["y"], mode="nearest", coordinate_transformation_mode=ctm,
              nearest_mode=nearest)
    check(model(node, {"x": x}, ["y"], {"sz": np.array([2, 3, 8, 4], np.int64)}), {"x": x})


def test_resize_opset11_roi_and_opset10():
    x = rand(1, 2, 4, 5, seed=22)
    s = np.array([1, 1, 1.75, 2.5], np.float32)
    m11 = model(mk("Resize", ["x", "roi", "s"], ["y"], mode="linear"), {"x": x}, ["y"],
                {"s": s, "roi": np.zeros(0, np.float32)}, opset=11)
    check(m11, {"x": x})
    m10 = model(mk("Resize", ["x", "s"], ["y"], mode="linear"), {"x": x}, ["y"], {"s": s}, opset=10)
    check(m10, {"x": x})


@pytest.mark.parametrize("opset", [18, 19])
def test_resize_axes(opset):
    x = rand(1, 2, 5, 6, seed=23)
    ctm = "half_pixel_symmetric" if opset == 19 else "half_pixel"
    node = mk("Resize", ["x", "", "s"], ["y"], mode="linear", axes=[2, 3], coordinate_transformation_mode=ctm)
    check(model(node, {"x": x}, ["y"], {"s": np.array([2.0, 0.5], np.float32)}, opset=opset), {"x": x})


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_opset9(mode):
    x = rand(1, 3, 4, 5, seed=24)
    node = mk("Upsample", ["x", "s"], ["y"], mode=mode)
    check(model(node, {"x": x}, ["y"], {"s": np.array([1, 1, 2, 1.5], np.float32)}, opset=9), {"x": x})


def test_resize_refuses_antialias():
    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    x = rand(1, 2, 4, 4, seed=25)
    m = model(mk("Resize", ["x", "", "s"], ["y"], mode="linear", antialias=1), {"x": x}, ["y"],
              {"s": np.array([1, 1, .5, .5], np.float32)}, opset=18)
    with pytest.raises(TVMLabError, match="antialias"):
        relay.frontend.from_onnx(m)


def test_shape_subgraph_folds_to_expand():
    """Shape -> ConstantOfShape -> Equal -> Where -> Expand: exporters' shape arithmetic, folded at import."""
    x = rand(3, 1, 5, seed=26)
    nodes = [mk("Shape", ["x"], ["s"]), mk("ConstantOfShape", ["rank"], ["ones"],
                                          value=helper.make_tensor("v", TensorProto.INT64, [1], [1])),
             mk("Equal", ["target", "ones"], ["eq"]), mk("Where", ["eq", "ones", "target"], ["t"]),
             mk("Mul", ["t", "two"], ["t2"]), mk("Range", ["zero", "four", "one"], ["r"]),
             mk("ReduceProd", ["t2"], ["n"], keepdims=0),
             mk("Expand", ["x", "t"], ["y"]), mk("Cast", ["n"], ["nf"], to=1), mk("Add", ["y", "nf"], ["z"])]
    inits = {"rank": np.array([3], np.int64), "target": np.array([3, 4, 1], np.int64),
             "two": np.array(2, np.int64), "zero": np.array(0, np.int64), "four": np.array(4, np.int64),
             "one": np.array(1, np.int64)}
    check(model(nodes, {"x": x}, ["z"], inits), {"x": x})


def test_unsupported_einsum_ellipsis_names_node():
    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    a = rand(2, 3, 4, seed=27)
    m = model(mk("Einsum", ["a", "a"], ["y"], equation="...ij,...kj->...ik", name="e1"), {"a": a}, ["y"], opset=12)
    with pytest.raises(TVMLabError, match=r"Einsum node 'e1'.*ellipsis"):
        relay.frontend.from_onnx(m)
    for eq, bshape, msg in (("ij,jk->il", [3, 4], "output 'il' must be distinct letters"),
                            ("ij,jk->ik", [5, 4], "letter 'j' is 3 in one operand and 5")):
        m = helper.make_model(helper.make_graph(
            [mk("Einsum", ["a2", "b"], ["y"], equation=eq, name="e2")], "g",
            [helper.make_tensor_value_info("a2", TensorProto.FLOAT, [2, 3]),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, bshape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]), opset_imports=[helper.make_opsetid("", 12)])
        with pytest.raises(TVMLabError, match=rf"Einsum node 'e2'.*{msg}"):
            relay.frontend.from_onnx(m)


@pytest.mark.parametrize("opset,attrs", [(9, {"k": 3}), (10, {"axis": 1}), (11, {"largest": 0, "axis": -1}),
                                         (11, {"axis": 0})], ids=["k_attr", "opset10", "smallest", "axis0"])
def test_topk_with_ties(opset, attrs):
    x = np.round(rand(4, 6, 5, low=-2, high=2, seed=28))          # few values: ties on every row
    k = attrs.pop("k", 3)
    if opset < 10:
        node, inits = mk("TopK", ["x"], ["v", "i"], k=k, **attrs), {}
    else:
        node, inits = mk("TopK", ["x", "k"], ["v", "i"], **attrs), {"k": np.array([k], np.int64)}
    outs = [("v", None, TensorProto.FLOAT), ("i", None, TensorProto.INT64)]
    exact(model(node, {"x": x}, outs, inits, opset=opset), {"x": x})


def test_topk_relay_sort_argsort():
    """relay.sort / relay.argsort are stable; relay.topk gives both outputs."""
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    a = np.round(rand(5, 8, low=-2, high=2, seed=29))
    x = relay.var("x", shape=a.shape)
    top = relay.topk(x, k=3, axis=0, is_ascend=True)
    body = relay.Tuple([relay.sort(x, axis=1), relay.argsort(x, axis=1, is_ascend=False), top[0], top[1]])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(body), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("x", a)
    g.run()
    got = [g.get_output(i).numpy() for i in range(4)]
    np.testing.assert_array_equal(got[0], np.sort(a, 1))
    np.testing.assert_array_equal(got[1], np.argsort(-a, 1, kind="stable"))
    order = np.argsort(a, 0, kind="stable")[:3]
    np.testing.assert_array_equal(got[3], order)
    np.testing.assert_array_equal(got[2], np.take_along_axis(a, order, 0))


def _rnn_model(op, direction, layout=0, bias=True, init=True, peep=False, opset=14, **attrs):
    seq, batch, inp, hid = 4, 3, 5, 6
    dirs, g = (2 if direction == "bidirectional" else 1), {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    x = rand(*((batch, seq, inp) if layout else (seq, batch, inp)), seed=30)
    inits = {"W": rand(dirs, g * hid, inp, seed=31), "R": rand(dirs, g * hid, hid, seed=32)}
    names = ["x", "W", "R", "B" if bias else "", "", "h0" if init else ""]
    if bias:
        inits["B"] = rand(dirs, 2 * g * hid, seed=33)
    if init:
        inits["h0"] = rand(*((batch, dirs, hid) if layout else (dirs, batch, hid)), seed=34)
    outs = ["y", "yh"]
    if op == "LSTM":
        names.append("c0" if init else "")
        outs.append("yc")
        if init:
            inits["c0"] = rand(*((batch, dirs, hid) if layout else (dirs, batch, hid)), seed=35)
        if peep:
            names.append("P")
            inits["P"] = rand(dirs, 3 * hid, seed=36)
    if layout:
        attrs["layout"] = 1
    node = mk(op, names, outs, hidden_size=hid, direction=direction, **attrs)
    return model(node, {"x": x}, outs, inits, opset=opset), {"x": x}


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent(op, direction):
    check(*_rnn_model(op, direction), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", ["lstm_peephole", "gru_linear_before_reset_no_init",
                                  "lstm_no_bias_clip", "rnn_relu_opset9"])
def test_recurrent_variants(case):
    if case == "lstm_peephole":
        m = _rnn_model("LSTM", "bidirectional", peep=True)
    elif case == "gru_linear_before_reset_no_init":
        m = _rnn_model("GRU", "bidirectional", init=False, linear_before_reset=1)
    elif case == "lstm_no_bias_clip":
        m = _rnn_model("LSTM", "forward", bias=False, clip=0.7)
    else:
        m = _rnn_model("RNN", "forward", opset=9, activations=["Relu"])
    check(*m, rtol=1e-4, atol=1e-5)


def test_lstm_batch_first_layout():
    """layout=1 (onnxruntime refuses it): against the same LSTM in layout 0 with transposed data."""
    m1, feeds1 = _rnn_model("LSTM", "bidirectional", layout=1, peep=True)
    m0, _ = _rnn_model("LSTM", "bidirectional", layout=0, peep=True)
    x0 = feeds1["x"].transpose(1, 0, 2)
    for init in m0.graph.initializer:          # the same weights; initial states transposed
        if init.name in ("h0", "c0"):
            from onnx import numpy_helper
            src = next(i for i in m1.graph.initializer if i.name == init.name)
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(src).transpose(1, 0, 2), init.name))
    want = run_ort(m0, {"x": x0})
    got = run_tvm(m1, feeds1)
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- the relay operators behind these converters
def _fused_groups(expr):
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.relay.expr import Call, Function, post_order
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential([relay.transform.InferType(), relay.transform.FuseOps(2)])(mod)
    return [[e.op.name for e in post_order(n.op.body) if isinstance(e, Call)]
            for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Function)]


def test_fusion_by_pattern_of_new_ops():
    from tvmlab import relay
    x, y = relay.var("x", shape=(4, 9)), relay.var("y", shape=(9,))
    # comparisons, logic and where are broadcast ops: one kernel; argmax takes its injective input
    sel = relay.where(relay.logical_and(relay.less(x, y), relay.logical_not(relay.equal(x, y))), x, y)
    assert _fused_groups(relay.argmax(relay.exp(sel), axis=1)) == \
        [["less", "equal", "logical_not", "logical_and", "where", "exp", "argmax"]]
    # einsum is complex-out-fusable: its element-wise tail joins it; cumsum and topk stay alone
    e = relay.nn.relu(relay.einsum([x, relay.transpose(x)], "ij,jk->ik"))
    assert _fused_groups(e)[-1] == ["einsum", "nn.relu"]
    assert ["cumsum"] in _fused_groups(relay.exp(relay.cumsum(relay.exp(x), axis=1)))
    assert ["topk"] in _fused_groups(relay.topk(relay.exp(x), k=2, ret_type="values"))


def test_relay_types_and_text():
    import tvmlab as tvm
    from tvmlab import relay
    x = relay.var("x", shape=(2, 3, 5, 7))
    body = relay.Tuple([relay.greater(x, relay.const(0.0)), relay.argmin(x, axis=2, keepdims=True),
                        relay.image.resize2d(x, size=(9, 4), method="nearest_neighbor"),
                        relay.prod(x, axis=[1, 3]), relay.topk(x, k=2, axis=1).astuple()])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(body))
    ty = mod["main"].body.checked_type.fields
    assert [(f.shape, f.dtype) for f in ty[:4]] == [((2, 3, 5, 7), "bool"), ((2, 3, 1, 7), "int32"),
                                                    ((2, 3, 9, 4), "float32"), ((2, 5), "float32")]
    assert [(f.shape, f.dtype) for f in ty[4].fields] == [((2, 2, 5, 7), "float32"), ((2, 2, 5, 7), "int32")]
    text = str(mod)
    assert "image.resize2d(" in text and "argmin(" in text and "greater(" in text


def test_bad_uses_are_clear_errors():
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    x, i = relay.var("x", shape=(3, 4)), relay.var("i", shape=(3, 4), dtype="int32")
    f = relay.var("f", shape=(2, 4))
    for bad, msg in ((lambda: relay.argmax(x), "give one axis"),
                     (lambda: relay.image.resize2d(x, size=(2, 2), method="area"), "method must be one of"),
                     (lambda: relay.image.resize2d(x, size=(0, 2)), "two positive ints"),
                     (lambda: relay.topk(x, k=relay.const(2)), "k must be a static int"),
                     (lambda: relay.einsum([x], 5), "equation must be a string")):
        with pytest.raises(TVMLabError, match=msg):
            bad()
    for expr, msg in ((relay.less(x, i), "dtype mismatch"), (relay.where(x, x, x), "condition must be bool"),
                      (relay.einsum([x, x], "ij,kl->ijm"), "output 'ijm'"),
                      (relay.einsum([x, relay.transpose(x)], "ij,ij->i"), "letter 'i' is 3"),
                      (relay.topk(x, k=5, axis=1).astuple(), "k must be in 1..4"),
                      (relay.image.resize2d(x, size=(2, 2)), "4-D"), (relay.cumsum(x, axis=2), "out of range"),
                      (relay.gather_nd(x, f), "indices must be integers"),
                      (relay.scatter_elements(x, f, f), "needs integer indices")):
        with pytest.raises(TVMLabError, match=msg):
            relay.transform.InferType()(tvm.IRModule.from_expr(expr))


def test_bad_onnx_attributes_name_the_node():
    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    cases = [(mk("TopK", ["x", "k"], ["v", "i"], name="t"), {"k": np.array([9], np.int64)}, "TopK node 't'.*K must"),
             (mk("CumSum", ["x", "ax"], ["y"], name="c"), {"ax": np.array(4, np.int64)}, "CumSum node 'c'.*axis 4"),
             (mk("ArgMax", ["x"], ["y"], axis=3, name="a"), {}, "ArgMax node 'a'.*axis 3")]
    for node, inits, msg in cases:
        m = helper.make_model(helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
            [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
            initializer=[__import__("onnx").numpy_helper.from_array(v, k) for k, v in inits.items()]),
            opset_imports=[helper.make_opsetid("", 13)])
        with pytest.raises(TVMLabError, match=msg):
            relay.frontend.from_onnx(m)


def test_new_ops_build_for_cuda():
    """The new operators' groups compile to CUDA (NVRTC here) and, where a GPU is, match numpy."""
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    xv, yv = rand(2, 3, 5, 6, seed=50), rand(6, seed=51)
    x, y = relay.var("x", shape=xv.shape), relay.var("y", shape=yv.shape)
    outs = [relay.where(relay.logical_or(relay.less(x, y), relay.logical_not(relay.greater(x, y))), x, y),
            relay.argmax(relay.exp(x), axis=3), relay.prod(x, axis=[1]), relay.cumsum(x, axis=2, exclusive=True),
            relay.topk(x, k=2, axis=3, ret_type="indices"), relay.einsum([x, x], "bcij,bckj->bik"),
            relay.image.resize2d(x, size=(7, 4), method="linear")]
    try:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Tuple(outs)), target="cuda")
    except tvm.TVMLabError as e:
        if "NVRTC" in str(e) or "nvcc" in str(e):
            pytest.skip(f"no CUDA compiler here: {e}")
        raise
    assert lib.get_lib().get_source().count("__global__") >= len(outs)
    if tvm.cuda(0).exist:
        m = graph_executor.GraphModule(lib["default"](tvm.cuda(0)))
        m.set_input("x", xv)
        m.set_input("y", yv)
        m.run()
        got = [m.get_output(i).numpy() for i in range(len(outs))]
    else:                                   # every kernel on the thread-level simulator
        got = tvm.testing.simulate_graph(lib, x=xv, y=yv)
    np.testing.assert_array_equal(got[0], np.where((xv < yv) | ~(xv > yv), xv, yv))
    np.testing.assert_array_equal(got[1], xv.argmax(3))
    np.testing.assert_allclose(got[2], xv.prod(1), rtol=1e-5)
    np.testing.assert_allclose(got[3], np.cumsum(xv, 2) - xv, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[4], np.argsort(-xv, 3, kind="stable")[..., :2])
    np.testing.assert_allclose(got[5], np.einsum("bcij,bckj->bik", xv, xv), rtol=1e-5, atol=1e-5)
    assert got[6].shape == (2, 3, 7, 4) and np.isfinite(got[6]).all()


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_small_k_of_long_axis_with_ties_and_infinities(largest):
    """k <= a quarter of the axis: picked one pass per element (the other path than the ranks above)."""
    x = np.round(rand(3, 29, 4, low=-3, high=3, seed=41))
    x[0, 5, :] = -np.inf
    x[1, 7, :] = np.inf
    x[2, :, 0] = 1.0                                       # a whole row of ties
    node = mk("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)
    outs = [("v", None, TensorProto.FLOAT), ("i", None, TensorProto.INT64)]
    exact(model(node, {"x": x}, outs, {"k": np.array([5], np.int64)}, opset=11), {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"exclusive": 1, "reverse": 1}, {"reverse": 1}], ids=["plain", "both", "rev"])
def test_cumsum_long_axis_in_blocks(attrs):
    """An axis longer than 32 is summed in blocks of about sqrt(n) (53: blocks of 8, the last one short)."""
    x = rand(3, 53, 2, seed=42)
    inits = {"ax": np.array(1, np.int64)}
    check(model(mk("CumSum", ["x", "ax"], ["y"], **attrs), {"x": x}, ["y"], inits, opset=14), {"x": x},
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op,attrs,opset", [("ThresholdedRelu", {"alpha": 0.3}, 13),
                                            ("Shrink", {"lambd": 0.4, "bias": 0.1}, 13),
                                            ("Sign", {}, 13), ("Hardmax", {}, 13), ("Hardmax", {"axis": 1}, 11),
                                            ("MeanVarianceNormalization", {}, 13)],
                         ids=["thresholded_relu", "shrink", "sign", "hardmax13", "hardmax11", "mvn"])
def test_where_based_ops(op, attrs, opset):
    x = rand(2, 3, 4, 5, low=-1, high=1, seed=43)
    x[0, 0, 0, :2] = 0.0 if op == "Sign" else x[0, 0, 0, :2]
    check(model(mk(op, ["x"], ["y"], **attrs), {"x": x}, [("y", x.shape)], opset=opset), {"x": x})


def test_isnan_isinf():
    x = rand(3, 8, seed=44)
    x[0, 1], x[1, 2], x[2, 3] = np.nan, np.inf, -np.inf
    nodes = [mk("IsNaN", ["x"], ["a"]), mk("IsInf", ["x"], ["b"]), mk("IsInf", ["x"], ["c"], detect_negative=0),
             mk("Or", ["a", "c"], ["d"]), mk("Xor", ["d", "b"], ["y"])]
    exact(model(nodes, {"x": x}, [BOOL]), {"x": x})


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(axis):
    idx = np.array([[0, 3, -1], [2, -4, 1]], np.int64)
    inits = {"d": np.array(4, np.int64), "v": np.array([0.25, 2.5], np.float32)}
    check(model(mk("OneHot", ["i", "d", "v"], ["y"], axis=axis), {"i": idx}, ["y"], inits, opset=11), {"i": idx})


@pytest.mark.parametrize("upper,k", [(1, 0), (0, 0), (1, 2), (0, -1)])
def test_trilu(upper, k):
    x = rand(2, 4, 6, seed=45)
    check(model(mk("Trilu", ["x", "k"], ["y"], upper=upper), {"x": x}, ["y"], {"k": np.array(k, np.int64)}, opset=14),
          {"x": x})


@pytest.mark.parametrize("ctm,exclude,a", [("half_pixel", 0, -0.75), ("align_corners", 0, -0.5),
                                           ("asymmetric", 1, -0.75), ("pytorch_half_pixel", 1, -0.5)])
@pytest.mark.parametrize("scales", [[1, 1, 2, 1.5], [1, 1, 0.6, 0.8]], ids=["up", "down"])
def test_resize_cubic(ctm, exclude, a, scales):
    x = rand(1, 2, 6, 7, seed=46)
    node = mk("Resize", ["x", "", "s"], ["y"], mode="cubic", coordinate_transformation_mode=ctm,
              exclude_outside=exclude, cubic_coeff_a=a)
    check(model(node, {"x": x}, ["y"], {"s": np.array(scales, np.float32)}), {"x": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dshape,ishape,b,opset", [((4, 5, 3), (2, 2), 0, 11), ((4, 5, 3), (3, 2, 1), 0, 11),
                                                   ((4, 5, 3), (2, 3), 0, 12), ((3, 5, 4), (3, 2, 1), 1, 12),
                                                   ((2, 3, 5, 4), (2, 3, 2), 2, 13)],
                         ids=["pairs", "rows", "full", "batch1", "batch2"])
def test_gather_nd(dshape, ishape, b, opset):
    x = rand(*dshape, seed=47)
    rng = np.random.default_rng(48)
    m = ishape[-1]
    hi = np.array(dshape[b:b + m])
    idx = (rng.integers(0, 1 << 16, size=ishape) % hi) - rng.integers(0, 2, size=ishape) * hi   # some negative
    attrs = {"batch_dims": b} if opset >= 12 else {}
    check(model(mk("GatherND", ["x", "i"], ["y"], **attrs), {"x": x}, ["y"], {"i": idx.astype(np.int64)}, opset=opset),
          {"x": x})


@pytest.mark.parametrize("axis,reduction,opset", [(0, None, 13), (1, None, 10), (-1, "add", 16), (0, "mul", 16),
                                                  (1, "max", 18), (0, "min", 18)])
def test_scatter_elements(axis, reduction, opset):
    x = rand(4, 6, seed=49)
    ishape = (3, 4)
    rng = np.random.default_rng(50)
    n = x.shape[axis]
    if reduction is None:       # distinct targets per line (duplicates are order-dependent without a reduction)
        idx = np.stack([rng.permutation(n)[:ishape[axis]] for _ in range(ishape[1 - axis])], axis=1 - axis)
    else:
        idx = rng.integers(0, n, size=ishape)
    idx = idx - (rng.integers(0, 2, size=ishape) * n)             # some negative
    upd = rand(*ishape, seed=51, low=0.5, high=1.5)
    attrs = {"axis": axis} | ({"reduction": reduction} if reduction else {})
    op = "Scatter" if opset < 11 else "ScatterElements"
    if opset < 11:
        idx = idx % n                       # Scatter (opset 9-10) takes no negative indices
    m = model(mk(op, ["x", "i", "u"], ["y"], **attrs), {"x": x, "u": upd}, ["y"],
              {"i": idx.astype(np.int64)}, opset=opset)
    check(m, {"x": x, "u": upd})


@pytest.mark.parametrize("op", ["Sin", "Cos", "Tan", "Sinh", "Cosh", "Asin", "Acos", "Atan"])
def test_trig(op):
    x = rand(3, 7, low=-0.9, high=0.9, seed=52)
    check(model(mk(op, ["x"], ["y"]), {"x": x}, ["y"]), {"x": x}, rtol=1e-5, atol=1e-6)


def test_mod():
    a = np.random.default_rng(53).integers(-20, 20, size=(3, 5)).astype(np.int32)
    b = np.array([3, -4, 5, -7, 2], np.int32)
    fa = rand(3, 5, low=-5, high=5, seed=54)
    fb = rand(5, low=0.5, high=2, seed=55) * np.array([1, -1, 1, -1, 1], np.float32)
    nodes = [mk("Mod", ["a", "b"], ["y"]), mk("Mod", ["a", "b"], ["z"], fmod=1)]
    exact(model(nodes, {"a": a, "b": b}, [("y", None, TensorProto.INT32), ("z", None, TensorProto.INT32)]),
          {"a": a, "b": b})
    check(model(mk("Mod", ["a", "b"], ["y"], fmod=1), {"a": fa, "b": fb}, ["y"]), {"a": fa, "b": fb})


@pytest.mark.parametrize("dshape,ishape,reduction,opset", [((4, 5, 3), (2, 2), None, 13),
                                                           ((4, 5), (3, 1), None, 11),
                                                           ((4, 5, 3), (2, 3, 3), "add", 16),
                                                           ((4, 5), (6, 2), "mul", 16),
                                                           ((6,), (4, 1), "max", 18), ((3, 4), (2,), "min", 18)],
                         ids=["rows", "slices", "add", "mul_dupes", "max_1d", "min_one_tuple"])
def test_scatter_nd(dshape, ishape, reduction, opset):
    x = rand(*dshape, seed=56)
    m = ishape[-1]
    rng = np.random.default_rng(57)
    n_pos = int(np.prod(ishape[:-1]))
    dims = np.array(dshape[:m])
    if reduction is None:      # distinct targets (duplicates are order-dependent without a reduction)
        flat = rng.permutation(int(np.prod(dims)))[:n_pos]
        idx = np.stack(np.unravel_index(flat, dims), axis=-1).reshape(ishape)
    else:
        idx = rng.integers(0, 1 << 16, size=ishape) % dims
    idx = idx - rng.integers(0, 2, size=ishape) * dims                 # some negative
    upd = rand(*(ishape[:-1] + dshape[m:]), seed=58, low=0.5, high=1.5)
    attrs = {"reduction": reduction} if reduction else {}
    m_ = model(mk("ScatterND", ["x", "i", "u"], ["y"], **attrs), {"x": x, "u": upd}, ["y"],
               {"i": idx.astype(np.int64)}, opset=opset)
    check(m_, {"x": x, "u": upd})
