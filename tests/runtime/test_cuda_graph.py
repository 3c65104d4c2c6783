"""tvm.contrib.cuda_graph: a model's kernel launches captured once and replayed as one CUDA graph."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.contrib import graph_executor
from tvmlab.contrib.cuda_graph import cuda_graph_executor


def _model(rng):
    x = relay.var("x", shape=(4, 24))
    w = relay.const(rng.standard_normal((36, 24)).astype("float32"))
    y = relay.nn.softmax(relay.nn.relu(relay.nn.dense(x, w))) * relay.const(2.0)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="cuda")
    want = lambda xv: 2 * _softmax(np.maximum(xv @ w.data.numpy().T, 0))   # noqa: E731
    return lib, want


def _softmax(a):
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_needs_a_cuda_device(rng):
    lib, _ = _model(rng)
    with pytest.raises(tvm.TVMLabError, match=r"CUDA graphs run on a CUDA device \(tvm.cuda\(0\)\), got cpu\(0\)"):
        cuda_graph_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu(0))
    assert hasattr(tvm.contrib.cuda_graph, "cuda_graph_executor")


@pytest.mark.skipif(not tvm.cuda(0).exist, reason="no CUDA device on this machine: capturing a CUDA graph needs "
                    "the driver (the same model's kernels run on the simulator in test_relay_build)")
def test_replays_with_new_inputs(rng):
    lib, want = _model(rng)
    dev = tvm.cuda(0)
    m = cuda_graph_executor.create(lib.get_graph_json(), lib, dev)
    plain = graph_executor.GraphModule(lib["default"](dev))
    for _ in range(3):                     # the first run captures, the others replay
        xv = rng.standard_normal((4, 24)).astype("float32")
        m.run(x=xv)
        plain.run(x=xv)
        np.testing.assert_allclose(m.get_output(0).numpy(), want(xv), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(m.get_output(0).numpy(), plain.get_output(0).numpy(), rtol=0, atol=0)
    assert m.cuda_graph.kernels == len(m.module.calls) >= 2
    bare = cuda_graph_executor.create(lib.get_graph_json(), lib.get_lib(), dev)     # params set by hand, as in TVM
    with pytest.raises(tvm.TVMLabError, match="no CUDA graph captured yet"):
        bare.run_cuda_graph()
    bare.set_input(**lib.get_params())
    bare.run(x=xv)
    np.testing.assert_allclose(bare.get_output(0).numpy(), want(xv), rtol=1e-4, atol=1e-5)
