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
