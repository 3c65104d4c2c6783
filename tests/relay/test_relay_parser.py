"""tvm.parser: Relay text back to modules; print -> parse -> structurally equal."""
import re

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.bench import models


def _typed(mod):
    return relay.transform.InferType()(mod)


@pytest.mark.parametrize("model", ["small_cnn", "residual_block", "inception_block"])
def test_round_trip_of_onnx_models(model):
    mod, _ = relay.frontend.from_onnx(getattr(models, model)(), {})
    mod = _typed(mod)
    text = mod.astext()
    back = _typed(tvm.parser.parse(text))
    tvm.ir.assert_structural_equal(mod, back)
    assert back.astext() == text


def test_tvm_text_with_version_header_and_defaults():
    mod = tvm.parser.fromtext("""
        #[version = "0.0.5"]
        def @main(%a : Tensor[(1, 3, 32, 32), float32], %b : Tensor[(3, 3, 5, 5), float32]) {
            nn.conv2d(%a, %b, data_layout="NCHW", kernel_layout="OIHW")   // a comment
        }""")
    call = mod["main"].body
    assert call.op.name == "nn.conv2d" and call.attrs.data_layout == "NCHW" and call.attrs.groups == 1
    assert _typed(mod)["main"].body.checked_type == relay.TensorType((1, 3, 28, 28), "float32")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    w = np.random.default_rng(1).standard_normal((3, 3, 5, 5)).astype("float32")
    lib = relay.build(mod, target="llvm")
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("a", x)
    m.set_input("b", w)
    m.run()
    ref = np.zeros((1, 3, 28, 28), "float32")
    for i in range(5):
        for j in range(5):
            ref += np.einsum("nchw,oc->nohw", x[:, :, i:i + 28, j:j + 28], w[:, :, i, j])
    np.testing.assert_allclose(m.get_output(0).numpy(), ref, rtol=1e-4, atol=1e-4)


def test_lets_tuples_fields_constants_and_local_functions():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y")
    t = relay.Tuple([y, relay.add(y, relay.const(1.5))])
    inner_p = relay.var("p", shape=(2, 3))
    inner = relay.Function([inner_p], relay.multiply(inner_p, relay.const(2, "int64").astype("float32")))
    body = relay.Let(y, relay.nn.relu(x), relay.Call(inner, [relay.TupleGetItem(t, 1)]))
    mod = _typed(tvm.IRModule.from_expr(relay.Function([x], body)))
    text = mod.astext()
    assert "let %y" in text and "2i64" in text and "1.5f" in text
    back = _typed(tvm.parser.parse(text))
    tvm.ir.assert_structural_equal(mod, back)


def test_int64_dims_scalars_and_names_with_dots():
    e = tvm.parser.parse_expr("fn (%layer1.0.w: Tensor[(4i64, 2), float32], %s: float32) "
                              "{ %0 = (%layer1.0.w, %s); %0.0 }")
    shape = e.params[0].type_annotation.shape
    assert shape == (4, 2) and shape[0].dtype == "int64" and not hasattr(shape[1], "dtype")
    assert e.params[1].type_annotation == relay.TensorType((), "float32")
    assert isinstance(e.body, relay.TupleGetItem) and e.body.index == 0


def test_meta_constants_come_from_the_table():
    c = relay.const(np.arange(6, dtype="float32").reshape(2, 3))
    mod = tvm.parser.parse("def @main(%x: Tensor[(2, 3), float32]) { add(%x, meta[relay.Constant][0]) }",
                           init_meta_table={"relay.Constant": [c]})
    assert mod["main"].body.args[1] is c
    with pytest.raises(relay.RelayParseError, match=r"1:\d+: .*init_meta_table"):
        tvm.parser.parse("def @main(%x: Tensor[(2, 3), float32]) { add(%x, meta[relay.Constant][0]) }")


@pytest.mark.parametrize("text, where, what", [
    ("def @main(%x: Tensor[(2), float32]) {\n  nn.nothing(%x)\n}", "2:3", "unknown operator 'nn.nothing'"),
    ("def @main(%x: Tensor[(2), float32]) {\n  nn.relu(%y)\n}", "2:11", "%y is not defined"),
    ("def @main(%x: Tensor[(2), float32]) {\n  nn.softmax(%x, axes=1)\n}", "2:18", "no attribute 'axes'"),
    ("def @main(%x: Tensor[(?), float32]) { %x }", "1:23", "dynamic dimensions"),
    ("def @main(%x: Tensor[(2), floaty]) { %x }", "1:27", "unknown dtype 'floaty'"),
    ("def @main(%x: Tensor[(2), float32]) { add(%x, %x }", "1:50", "expected ')'"),
    ("def @main(%x: Tensor[(2), float32]) { %x } }", "1:44", "expected 'def"),
])
def test_errors_name_line_and_column(text, where, what):
    with pytest.raises(relay.RelayParseError, match=f"from_string:{where}: .*{re.escape(what)}"):
        tvm.parser.parse(text)
    assert issubclass(relay.RelayParseError, tvm.TVMLabError)
