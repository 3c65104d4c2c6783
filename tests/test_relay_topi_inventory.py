"""Relay operators compute with topi (one implementation each): attrs topi gained for relay, against onnxruntime."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tvmlab as tvm  # noqa: E402
from tvmlab import relay  # noqa: E402
from tvmlab.contrib import graph_executor  # noqa: E402


def run_both(node, inputs, consts):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
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
