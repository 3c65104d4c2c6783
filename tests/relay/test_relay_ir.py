"""The graph IR: construction, type inference (shapes, dtypes, clear errors), the text form, the registry."""
from __future__ import annotations

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.relay.op.registry import OpPattern


def infer(expr):
    mod = tvm.IRModule.from_expr(expr)
    mod = relay.transform.InferType()(mod)
    return mod["main"].body.checked_type


def shape_of(expr):
    return infer(expr).shape


def test_from_expr_main_and_free_vars():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,), dtype="float32")
    z = relay.add(x, y) * relay.const(2.0)
    assert [v.name_hint for v in relay.analysis.free_vars(z)] == ["x", "y"]
    mod = tvm.IRModule.from_expr(z)
    assert isinstance(mod["main"], relay.Function)
    assert [p.name_hint for p in mod["main"].params] == ["x", "y"]
    mod["other"] = relay.Function([x], relay.exp(x))
    assert "other" in mod and "def @other(%x" in str(mod)
    assert infer(z) == relay.TensorType((2, 3), "float32")


def test_checked_type_needs_infer_type():
    x = relay.var("x", shape=(2,))
    e = relay.exp(x)
    with pytest.raises(relay.RelayError, match="InferType"):
        e.checked_type


def test_text_form_shows_ops_attrs_and_types():
    x = relay.var("data", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1)))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(y))
    text = str(mod)
    assert "def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32])" in text
    assert "nn.conv2d(%data, %w, strides=[2, 2], padding=[1, 1, 1, 1])" in text
    assert "nn.relu(%0) /* ty=Tensor[(1, 4, 4, 4), float32] */" in text


@pytest.mark.parametrize("make, shape", [
    (lambda x: relay.nn.conv2d(x, relay.var("w", shape=(6, 2, 3, 3)), strides=(2, 1), padding=(1, 0, 2, 1),
                               dilation=(1, 2), groups=2), (2, 6, 5, 4)),
    (lambda x: relay.nn.conv2d_transpose(x, relay.var("w", shape=(4, 3, 3, 3)), strides=(2, 2), padding=(1, 1),
                                         output_padding=(1, 1)), (2, 3, 16, 14)),
    (lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2), ceil_mode=True), (2, 4, 4, 3)),
    (lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2)), (2, 4, 3, 3)),
    (lambda x: relay.nn.avg_pool2d(x, (2, 2), (2, 2), padding=(1, 1), count_include_pad=True), (2, 4, 5, 4)),
    (lambda x: relay.nn.global_avg_pool2d(x), (2, 4, 1, 1)),
    (lambda x: relay.reshape(x, (0, -1)), (2, 4 * 8 * 7)),
    (lambda x: relay.nn.batch_flatten(x), (2, 224)),
    (lambda x: relay.transpose(x, (0, 2, 3, 1)), (2, 8, 7, 4)),
    (lambda x: relay.sum(x, axis=(1, 3), keepdims=True), (2, 1, 8, 1)),
    (lambda x: relay.mean(x, axis=1, exclude=True), (4,)),
    (lambda x: relay.strided_slice(x, [0, 1, 0], [2, 4, 8], [1, 2, 3]), (2, 2, 3, 7)),
    (lambda x: relay.take(x, relay.const(np.array([[0, 2]], "int32")), axis=2), (2, 4, 1, 2, 7)),
    (lambda x: relay.concatenate([x, x], axis=1), (2, 8, 8, 7)),
    (lambda x: relay.expand_dims(relay.squeeze(relay.sum(x, axis=2, keepdims=True), [2]), 0, 2), (1, 1, 2, 4, 7)),
    (lambda x: relay.tile(x, (2, 1)), (2, 4, 16, 7)),
    (lambda x: relay.nn.pad(x, ((0, 0), (1, 2), (0, 0), (3, 0))), (2, 7, 8, 10)),
    (lambda x: relay.add(x, relay.var("b", shape=(8, 1))), (2, 4, 8, 7)),
    (lambda x: relay.split(x, [1, 3], axis=1)[2], (2, 1, 8, 7)),
])
def test_shapes(make, shape):
    x = relay.var("x", shape=(2, 4, 8, 7))
    assert shape_of(make(x)) == shape


def test_dense_matmul_batch_matmul_types():
    a = relay.var("a", shape=(5, 16))
    assert shape_of(relay.nn.dense(a, relay.var("w", shape=(10, 16)))) == (5, 10)
    assert shape_of(relay.nn.matmul(a, relay.var("b", shape=(16, 3)))) == (5, 3)
    x = relay.var("x", shape=(4, 5, 16))
    assert shape_of(relay.nn.batch_matmul(x, relay.var("y", shape=(1, 7, 16)))) == (4, 5, 7)
    t = infer(relay.nn.batch_norm(relay.var("d", shape=(1, 3, 4, 4)), *[relay.var(n, shape=(3,))
                                                                         for n in "gbmv"]).astuple())
    assert isinstance(t, relay.TupleType) and len(t.fields) == 3
    assert infer(relay.cast(a, "int32")).dtype == "int32"


@pytest.mark.parametrize("make, message", [
    (lambda: relay.add(relay.var("a", shape=(2, 3)), relay.var("b", shape=(4,))),
     r"add: shapes \(2, 3\) and \(4,\) do not broadcast"),
    (lambda: relay.add(relay.var("a", shape=(2,)), relay.var("b", shape=(2,), dtype="int32")),
     "add: dtype mismatch: lhs is float32, rhs is int32"),
    (lambda: relay.nn.conv2d(relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 5, 3, 3))),
     "nn.conv2d: data has 3 channels"),
    (lambda: relay.nn.dense(relay.var("x", shape=(2, 8)), relay.var("w", shape=(4, 9))),
     r"nn.dense: data \(2, 8\) and weight \(4, 9\) do not fit"),
    (lambda: relay.reshape(relay.var("x", shape=(2, 3)), (4, -1)), r"reshape: cannot reshape \(2, 3\)"),
    (lambda: relay.nn.bias_add(relay.var("x", shape=(1, 4, 2, 2)), relay.var("b", shape=(3,))),
     r"nn.bias_add: bias must have shape \(4,\)"),
    (lambda: relay.concatenate([relay.var("a", shape=(1, 2)), relay.var("b", shape=(2, 2))], axis=1),
     "concatenate: input 1 is Tensor"),
    (lambda: relay.sum(relay.var("x", shape=(2, 3)), axis=2), "sum: axis 2 is out of range for a tensor of rank 2"),
    (lambda: relay.split(relay.var("x", shape=(2, 5)), 2, axis=1)[0], "split: cannot split an axis of 5 into 2"),
    (lambda: relay.nn.conv2d(relay.var("x", shape=(1, 8, 8, 3)), relay.var("w", shape=(3, 3, 3, 4)),
                             data_layout="NHWC", kernel_layout="HWIO"),
     "nn.conv2d: only layout NCHW is supported, got 'NHWC'"),
    (lambda: relay.nn.max_pool2d(relay.var("x", shape=(1, 3, 4, 4)), (2, 2), layout="NHWC"),
     "nn.max_pool2d: only layouts NCHW and NCHW\\[x\\]c are supported"),
])
def test_type_errors_name_the_op(make, message):
    with pytest.raises(relay.TypeInferenceError, match=message):
        infer(make())


def test_construction_errors():
    x = relay.var("x", shape=(1, 3, 8, 8))
    with pytest.raises(relay.RelayError, match="unknown attribute"):
        relay.op.registry.make_call("nn.relu", [x], alpha=1)
    with pytest.raises(relay.RelayError, match="takes 2 argument"):
        relay.op.registry.make_call("add", [x])
    with pytest.raises(relay.RelayError, match="unknown operator 'nn.nope'"):
        relay.op.get("nn.nope")
    with pytest.raises(relay.RelayError, match="argument 1 must be a relay expression"):
        relay.add(x, "y")
    with pytest.raises(relay.RelayError, match="strides, dilation and groups must be >= 1"):
        relay.nn.conv2d(x, x, strides=(0, 1))
    with pytest.raises(relay.TypeInferenceError, match="parameter %x has no type"):
        infer(relay.Function([relay.var("x")], relay.var("x")))
    with pytest.raises(tvm.TVMLabError, match="expects an IRModule"):
        relay.transform.InferType()(relay.Function([x], x))


def test_registry_patterns_and_custom_compute():
    assert relay.op.get("nn.conv2d").pattern == OpPattern.OUT_ELEMWISE_FUSABLE
    assert relay.op.get("add").pattern == OpPattern.BROADCAST
    assert relay.op.get("exp").pattern == OpPattern.ELEMWISE
    assert relay.op.get("reshape").pattern == OpPattern.INJECTIVE
    assert relay.op.get("sum").pattern == OpPattern.COMM_REDUCE
    assert relay.op.get("nn.softmax").pattern == OpPattern.COMM_REDUCE      # takes its input's and output's ops
    assert relay.op.get("cumsum").pattern == OpPattern.OPAQUE
    names = relay.op.list_op_names()
    for required in ("nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.matmul", "nn.batch_matmul", "nn.bias_add",
                     "nn.batch_norm", "nn.relu", "nn.leaky_relu", "nn.prelu", "sigmoid", "tanh", "clip",
                     "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.lrn", "nn.softmax",
                     "nn.log_softmax", "power", "concatenate", "split", "reshape", "transpose", "squeeze",
                     "expand_dims", "nn.pad", "strided_slice", "take", "tile", "mean", "nn.instance_norm",
                     "nn.dropout", "layout_transform", "nn.contrib_conv2d_NCHWc"):
        assert required in names


def test_let_and_tuple_types():
    x = relay.var("x", shape=(3,))
    v = relay.var("v")
    body = relay.Let(v, relay.exp(x), relay.Tuple([v, relay.negative(v)]))
    t = infer(relay.Function([x], body))
    assert t == relay.TupleType([relay.TensorType((3,)), relay.TensorType((3,))])
    assert "let %v = " in body.astext()


def test_attrs_read_copy_and_stay_immutable():
    import copy
    import pickle
    y = relay.nn.conv2d(relay.var("x", shape=(1, 3, 8, 8)), relay.var("w", shape=(4, 3, 3, 3)), padding=(1, 2))
    assert y.attrs.padding == (1, 2, 1, 2) and y.attrs["groups"] == 1
    assert pickle.loads(pickle.dumps(y.attrs)) == y.attrs and copy.deepcopy(y.attrs).strides == (1, 1)
    with pytest.raises(relay.RelayError, match="immutable"):
        y.attrs.groups = 2
    with pytest.raises(AttributeError, match="no field 'nope'"):
        y.attrs.nope
