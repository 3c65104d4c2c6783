"""Relay operators compute with topi (one implementation each): attrs topi gained for relay, against onnxruntime."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tvmlab as tvm  # noqa: E402
from tvmlab import relay  # noqa: E402
from tvmlab.bench.models import finish_model  # noqa: E402
from tvmlab.contrib import graph_executor  # noqa: E402


def run_both(node, inputs, consts):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = finish_model(graph, 13)          # the lowest IR version opset 13 allows: any onnxruntime reads it
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    mod, params = relay.frontend.from_onnx(m, shape={k: v.shape for k, v in inputs.items()})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm -mcpu=x86-64", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, v in inputs.items():
        gm.set_input(k, v)
    gm.run()
    return gm.get_output(0).numpy(), ref


@pytest.mark.parametrize("c,o,groups,k,stride,pad,dil,out_pad", [
    (4, 6, 1, 3, 2, 1, 1, 1),
    (4, 6, 2, 3, 2, 1, 2, 1),      # grouped and dilated
    (6, 9, 3, 2, 1, 0, 3, 0),      # dilation larger than the stride
    (8, 8, 8, 4, 2, 1, 1, 0),      # depthwise
])
def test_conv_transpose_groups_dilation_via_topi(c, o, groups, k, stride, pad, dil, out_pad):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c, 7, 8)).astype("float32")
    w = rng.standard_normal((c, o // groups, k, k)).astype("float32")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=groups, kernel_shape=[k, k],
                            strides=[stride] * 2, pads=[pad] * 4, dilations=[dil] * 2, output_padding=[out_pad] * 2)
    got, ref = run_both(node, {"x": x}, {"w": w})
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_relay_nn_ops_are_topi_computes():
    """The tensors relay's registry builds carry topi's tags (no second set of computes)."""
    from tvmlab import te
    from tvmlab.relay.op.registry import get
    x = te.placeholder((1, 4, 5, 6), name="x")
    seen = {}
    for name, attrs in (("nn.softmax", {"axis": 1}), ("nn.log_softmax", {"axis": -1}),
                        ("nn.lrn", {"size": 3, "axis": 1, "bias": 1.0, "alpha": 1e-4, "beta": 0.75})):
        call = getattr(relay.nn, name[3:])(relay.var("x", shape=(1, 4, 5, 6)), **attrs)
        out = get(name).compute(call.attrs, [x], None)
        seen[name] = out[0].op.tag
    assert seen == {"nn.softmax": "softmax_output", "nn.log_softmax": "log_softmax_output", "nn.lrn": "lrn"}


# ------------------------------------------------------------------ one compute per operator: relay is glue over topi

def test_relay_operator_modules_have_no_computes_of_their_own():
    """relay's operator files turn attributes into topi arguments; the computes live in topi only."""
    import pathlib
    import re
    root = pathlib.Path(relay.__file__).parent
    for path in [root / "layout.py", *sorted((root / "op").glob("*.py"))]:
        src = path.read_text()
        assert not re.search(r"\bte\.compute\(", src), f"{path.name} defines a compute: move it into topi"


def build_run(out, inputs, opt_level=3):
    f = relay.Function(relay.analysis.free_vars(out), out)
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm -mcpu=x86-64", params=None)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input(**inputs)
    gm.run()
    return [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]


def test_dense_on_3d_data_and_depthwise_conv():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 7)).astype("float32")
    w = rng.standard_normal((5, 7)).astype("float32")
    d = relay.nn.dense(relay.var("x", shape=x.shape), relay.var("w", shape=w.shape))
    (got,) = build_run(d, {"x": x, "w": w})
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-5, atol=1e-5)
    xi = rng.standard_normal((1, 6, 9, 8)).astype("float32")
    wd = rng.standard_normal((6, 1, 3, 3)).astype("float32")
    c = relay.nn.conv2d(relay.var("x", shape=xi.shape), relay.var("w", shape=wd.shape), strides=(2, 1),
                        padding=(1, 1), groups=6)
    (got,) = build_run(c, {"x": xi, "w": wd})
    want = np.stack([ref_conv(xi[:, k:k + 1], wd[k:k + 1], (2, 1), 1) for k in range(6)], 1)[:, :, 0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def ref_conv(x, w, stride, pad):
    from tvmlab.topi.testing import conv2d_nchw_python
    return conv2d_nchw_python(x.astype("float64"), w.astype("float64"), stride, pad)


def test_int8_conv2d_accumulates_in_int32():
    rng = np.random.default_rng(4)
    x = rng.integers(-9, 9, (1, 4, 6, 5)).astype("int8")
    w = rng.integers(-9, 9, (6, 4, 3, 3)).astype("int8")
    c = relay.nn.conv2d(relay.var("x", shape=x.shape, dtype="int8"), relay.var("w", shape=w.shape, dtype="int8"),
                        padding=(1, 1), out_dtype="int32")
    (got,) = build_run(c, {"x": x, "w": w})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, ref_conv(x, w, 1, 1).round().astype("int32"))


def test_take_slice_pad_round_glue():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 6)).astype("float32")
    xv = relay.var("x", shape=x.shape)
    idx = np.array([[0, -1, 7], [-6, 3, -9]], "int32")            # negatives count from the end, then clamp
    outs = [relay.take(xv, relay.const(idx), axis=1),
            relay.take(xv, relay.const(idx), axis=1, mode="wrap"),
            relay.strided_slice(xv, [4, 5], [-10, 0], [-2, -3]),
            relay.nn.pad(xv, ((1, 2), (3, 0)), pad_mode="reflect"),
            relay.nn.pad(xv, ((2, 0), (1, 4)), pad_mode="edge"),
            relay.round(xv * relay.const(2.0))]
    got = build_run(relay.Tuple(outs), {"x": x})
    norm = np.where(idx < 0, idx + 6, idx)
    want = [np.take(x, norm, axis=1, mode="clip"), np.take(x, idx, axis=1, mode="wrap"), x[4::-2, 5:0:-3],
            np.pad(x, ((1, 2), (3, 0)), mode="reflect"), np.pad(x, ((2, 0), (1, 4)), mode="edge"), np.round(x * 2)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pools_after_blocked_convolution(kind):
    """At opt_level 3 the pools read the NCHW[x]c output of the convolution (topi.nn.pool2d in that layout)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 8, 11, 10)).astype("float32")
    w = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    c = relay.nn.relu(relay.nn.conv2d(relay.var("x", shape=x.shape), relay.const(w), padding=(1, 1)))
    if kind == "max":
        p = relay.nn.max_pool2d(c, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True)
    else:
        p = relay.nn.avg_pool2d(c, (3, 3), (2, 2), padding=(0, 1, 1, 0), ceil_mode=True, count_include_pad=True)
    g = relay.nn.global_avg_pool2d(p)
    got = build_run(relay.Tuple([p, g]), {"x": x})
    from tvmlab.topi.testing import pool2d_python
    cv = np.maximum(ref_conv(x, w, 1, 1), 0)
    pad = (1, 1, 1, 1) if kind == "max" else (0, 1, 1, 0)
    want = pool2d_python(cv, 3, 2, 1, pad, kind, True, kind == "avg")
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], want.mean(axis=(2, 3), keepdims=True), rtol=1e-4, atol=1e-4)


def test_glue_ops_compile_for_cuda():
    """The same topi computes go through the CUDA path (NVRTC compiles here; running needs a GPU)."""
    w = np.random.default_rng(7).standard_normal((6, 1, 3, 3)).astype("float32")
    x = relay.var("x", shape=(1, 6, 11, 10))
    c = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), padding=(1, 1), groups=6))
    outs = [relay.nn.max_pool2d(c, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True),
            relay.nn.avg_pool2d(c, (3, 3), (2, 2), padding=(0, 1, 1, 0), ceil_mode=True, count_include_pad=True),
            relay.nn.global_avg_pool2d(c), relay.nn.pad(c, ((0, 0), (0, 0), (1, 2), (2, 1)), pad_mode="reflect"),
            relay.take(c, relay.const(np.array([0, -1, 3], "int32")), axis=1), relay.round(c),
            relay.strided_slice(c, [0, 5], [1, 0], [1, -2])]
    try:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.Tuple(outs))), target="cuda")
    except tvm.TVMLabError as e:
        if "NVRTC" in str(e) or "nvcc" in str(e):
            pytest.skip(f"no CUDA compiler here: {e}")
        raise
    src = lib.get_lib().get_source()
    assert src.count("__global__") == len(lib.get_lib().function_names) >= 7
    xv = np.random.default_rng(8).standard_normal((1, 6, 11, 10)).astype("float32")
    if tvm.cuda(0).exist:
        m = graph_executor.GraphModule(lib["default"](tvm.cuda(0)))
        m.set_input("x", xv)
        m.run()
        got = m.get_output(3).numpy()
    else:                                   # every kernel on the thread-level simulator
        got = tvm.testing.simulate_graph(lib, x=xv)[3]
    cv = np.maximum(np.stack([ref_conv(xv[:, k:k + 1], w[k:k + 1], 1, 1)[:, 0] for k in range(6)], 1), 0)
    np.testing.assert_allclose(got, np.pad(cv, ((0, 0), (0, 0), (1, 2), (2, 1)), mode="reflect"), rtol=1e-4, atol=1e-4)


def test_anchor_schedules_apply_without_falling_back(monkeypatch):
    """Each group anchored at a topi operator gets its topi.x86 schedule: a failure in scheduling or lowering
    would fall back to a plain, unvectorised schedule silently (correct but slow)."""
    from tvmlab.relay import schedules
    fallbacks, anchors = [], []
    plain, by_anchor = schedules.schedule_default, schedules.schedule_group

    def recording_default(outs, target, vectorize=True):
        if not vectorize:
            fallbacks.append([o.op.name for o in outs])
        return plain(outs, target, vectorize)

    def recording_group(outs, anchor, target):
        anchors.append(anchor.op.tag)
        return by_anchor(outs, anchor, target)
    monkeypatch.setattr(schedules, "schedule_default", recording_default)
    monkeypatch.setattr(schedules, "schedule_group", recording_group)
    rng = np.random.default_rng(9)
    x = relay.var("x", shape=(1, 8, 12, 12))

    def conv(v, o, c, k=3, groups=1, stride=1):
        w = rng.standard_normal((o, c // groups, k, k)).astype("float32") * 0.2
        return relay.nn.conv2d(v, relay.const(w), strides=(stride, stride), padding=(k // 2, k // 2), groups=groups)
    a = relay.nn.relu(relay.nn.bias_add(conv(x, 16, 8), relay.const(rng.standard_normal(16).astype("float32"))))
    p = relay.nn.max_pool2d(a, (3, 3), (2, 2), padding=(1, 1))
    b = relay.nn.relu(relay.add(conv(p, 16, 16), p))
    d = relay.nn.relu(conv(b, 16, 16, groups=16))
    q = relay.nn.avg_pool2d(d, (2, 2), (2, 2), count_include_pad=True)
    g = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(q))
    y = relay.nn.softmax(relay.nn.dense(g, relay.const(rng.standard_normal((10, 16)).astype("float32"))))
    sums = [relay.sum(b, axis=1), relay.mean(b, axis=[1, 2], keepdims=True), relay.max(b, axis=0)]
    xv = rng.standard_normal((1, 8, 12, 12)).astype("float32")
    got = build_run(relay.Tuple([y] + sums), {"x": xv})
    assert fallbacks == []
    assert {"conv2d_NCHWc", "pool_max", "pool_avg", "depthwise_conv2d_NCHWc", "adaptive_pool_avg", "dense_pack",
            "softmax_output", "comm_reduce"} <= set(anchors)
    np.testing.assert_allclose(got[0].sum(), 1.0, rtol=1e-5)
    bv = build_run(b, {"x": xv})[0]
    for g_, w_ in zip(got[1:], [bv.sum(axis=1), bv.mean(axis=(1, 2), keepdims=True), bv.max(axis=0)]):
        np.testing.assert_allclose(g_, w_, rtol=1e-4, atol=1e-4)


def test_dilated_avg_pool():
    from tvmlab.topi.testing import pool2d_python
    x = np.random.default_rng(10).standard_normal((2, 3, 9, 10)).astype("float32")
    xv = relay.var("x", shape=x.shape)
    outs = [relay.nn.avg_pool2d(xv, (3, 2), (2, 1), (2, 3), padding=(1, 0, 2, 1),
                                ceil_mode=ceil, count_include_pad=inc) for ceil, inc in ((True, False), (False, True))]
    got = build_run(relay.Tuple(outs), {"x": x}, opt_level=0)
    for g, (ceil, inc) in zip(got, ((True, False), (False, True))):
        np.testing.assert_allclose(g, pool2d_python(x, (3, 2), (2, 1), (2, 3), (1, 0, 2, 1), "avg", ceil, inc),
                                   rtol=1e-5, atol=1e-5)


def test_reflect_pad_wider_than_the_axis_is_a_type_error():
    x = relay.var("x", shape=(2, 3))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.pad(x, ((0, 0), (3, 0)), pad_mode="reflect")))
    with pytest.raises(tvm.TVMLabError, match="size - 1"):
        relay.transform.InferType()(mod)


def test_contrib_conv2d_nchwc_constructor():
    from tvmlab.topi.testing import layout_transform_python
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 8, 7, 9)).astype("float32")
    w = rng.standard_normal((12, 8, 3, 3)).astype("float32")
    xv = relay.var("x", shape=x.shape)
    xc = relay.layout_transform(xv, "NCHW", "NCHW4c")
    wc = relay.layout_transform(relay.const(w), "OIHW", "OIHW4i6o")
    y = relay.nn.contrib_conv2d_nchwc(xc, wc, strides=(2, 1), padding=(1, 2), channels=12, kernel_size=(3, 3),
                                      data_layout="NCHW4c", kernel_layout="OIHW4i6o", out_layout="NCHW6c")
    (got,) = build_run(relay.layout_transform(y, "NCHW6c", "NCHW"), {"x": x}, opt_level=0)
    np.testing.assert_allclose(got, ref_conv(x, w, (2, 1), (1, 2)), rtol=1e-4, atol=1e-4)
    assert layout_transform_python(got, "NCHW", "NCHW6c").shape == (1, 2, 4, 11, 6)
    with pytest.raises(tvm.TVMLabError, match="groups must be >= 1"):
        relay.nn.contrib_conv2d_nchwc(xc, wc, groups=0)
    grouped = relay.nn.contrib_conv2d_nchwc(xc, wc, groups=2, data_layout="NCHW4c", kernel_layout="OIHW4i6o",
                                            out_layout="NCHW6c")     # the weight holds all 8 inputs: not 2 groups
    with pytest.raises(tvm.TVMLabError, match="do not fit"):
        relay.transform.InferType()(tvm.IRModule.from_expr(grouped))
    bad = relay.nn.contrib_conv2d_nchwc(xc, wc, data_layout="NCHW4c", kernel_layout="OIHW4i6o", out_layout="NCHW4c")
    with pytest.raises(tvm.TVMLabError, match="do not form"):
        relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([xv], bad)))


def test_reduction_groups_take_the_x86_reduce_schedule(check_build):
    """A group anchored at a topi reduction (sum, or mean's division after one) is scheduled by
    topi.x86.schedule_reduce: lanes of the kept last axis accumulate side by side (vector code)."""
    from tvmlab import te, topi
    from tvmlab.relay.schedules import schedule_group
    target = tvm.target.Target("llvm -mcpu=haswell")
    X = te.placeholder((6, 37, 40), name="X")
    for fn, ref_fn in ((topi.sum, np.sum), (topi.mean, np.mean), (topi.max, np.max)):
        Y = fn(X, (1,), False)
        s = schedule_group([Y], Y, target)
        assert "ramp" in str(tvm.lower(s, [X, Y])).lower(), fn.__name__
        check_build(s, [X, Y], lambda x, ref_fn=ref_fn: ref_fn(x, axis=1), rtol=1e-5, atol=1e-5)
