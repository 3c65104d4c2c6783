"""relay.backend.te_compiler: a Relay function lowered to the TE schedule relay.build compiles."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay


def _typed(func):
    return relay.transform.InferType()(tvm.IRModule.from_expr(func))["main"]


def test_lower_gives_the_schedule_that_builds_and_runs():
    x = relay.var("x", shape=(5, 37))
    y = relay.var("y", shape=(1, 37))
    func = _typed(relay.Function([x, y], relay.nn.relu(relay.add(x, y))))
    cf = relay.backend.te_compiler.get().lower(func, "llvm")
    assert [tuple(int(d) for d in t.shape) for t in cf.inputs] == [(5, 37), (1, 37)]
    f = tvm.build(cf.schedule, list(cf.inputs) + list(cf.outputs), "llvm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 37)).astype("float32")
    b = rng.standard_normal((1, 37)).astype("float32")
    out = tvm.nd.array(np.full((5, 37), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), np.maximum(a + b, 0), rtol=1e-6)


def test_lower_asks_for_types_first():
    x = relay.var("x", shape=(4,))
    with pytest.raises(tvm.TVMLabError, match="InferType"):
        relay.backend.te_compiler.get().lower(relay.Function([x], relay.add(x, x)), "llvm")


def test_int64_dims_reach_te_and_run():
    """A shape given with int64 dims keeps them: the TE placeholders, the loops (split ones too)
    and the built function index in int64, and the result is right."""
    n, m = tvm.tir.const(6, "int64"), tvm.tir.const(37, "int64")
    x = relay.var("x", shape=(n, m))
    y = relay.var("y", shape=(1, m))
    func = _typed(relay.Function([x, y], relay.add(x, y)))
    assert func.params[0].checked_type.shape == (6, 37)            # still ints to relay's own code
    assert [d.dtype for d in func.body.checked_type.te_shape] == ["int64", "int64"]
    assert "37i64" in func.astext()
    cf = relay.backend.te_compiler.get().lower(func, "llvm")
    assert [d.dtype for d in cf.inputs[0].shape] == ["int64", "int64"]
    assert cf.inputs[1].shape[0] == 1 and cf.inputs[1].shape[1].dtype == "int64"
    s = tvm.te.create_schedule(cf.outputs[0].op)
    outer, inner = s[cf.outputs[0]].split(s[cf.outputs[0]].op.axis[1], factor=8)
    assert outer.var.dtype == inner.var.dtype == "int64"
    f = tvm.build(s, list(cf.inputs) + list(cf.outputs), "llvm")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 37)).astype("float32")
    b = rng.standard_normal((1, 37)).astype("float32")
    out = tvm.nd.array(np.full((6, 37), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), out)
    np.testing.assert_allclose(out.numpy(), a + b, rtol=1e-6)


def test_take_with_int64_index_keeps_int64_and_narrows_a_small_constant():
    x = relay.var("x", shape=(tvm.tir.const(4, "int64"), tvm.tir.const(5, "int64")))
    for idx, want in ((7, 7), (-1, 19), (100, 19)):
        func = _typed(relay.Function([x], relay.take(x, relay.const(idx, "int64"))))
        cf = relay.backend.te_compiler.get().lower(func, "llvm")
        f = tvm.build(cf.schedule, list(cf.inputs) + list(cf.outputs), "llvm")
        a = np.random.default_rng(2).standard_normal((4, 5)).astype("float32")
        out = tvm.nd.array(np.full((), np.nan, "float32"))
        f(tvm.nd.array(a), out)
        assert out.numpy() == a.reshape(-1)[want]
