"""Helpers for the ONNX tests: one-node models, and running a model in onnxruntime and in tvmlab.

Outputs of tvmlab are poisoned with NaN before each run (by the executor's
fresh buffers and, here, by checking every element against onnxruntime).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from tvmlab.bench.models import finish_model


def rand(*shape, low=-1.0, high=1.0, dtype=np.float32, seed=None):
    rng = np.random.default_rng(seed if seed is not None else hash(shape) % 2**32)
    return rng.uniform(low, high, size=shape).astype(dtype)


def model(nodes, inputs, outputs, inits=None, opset=13):
    """``inputs``: {name: array} declared with their shapes; ``inits``: {name: array} initializers;
    ``outputs``: names (their types inferred) or (name, shape) pairs or (name, shape or None, elem_type)."""
    if isinstance(nodes, onnx.NodeProto):
        nodes = [nodes]
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) if isinstance(o, str) else
            helper.make_tensor_value_info(o[0], o[2] if len(o) > 2 else onnx.TensorProto.FLOAT,
                                          None if o[1] is None else list(o[1])) for o in outputs]
    inits = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    graph = helper.make_graph(nodes, "test", ins, outs, initializer=inits)
    return finish_model(graph, opset)


def run_ort(m, feeds):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def build(m, feeds=None, opt_level=3, **kw):
    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    shape = {k: v.shape for k, v in (feeds or {}).items()}
    mod, params = relay.frontend.from_onnx(m, shape=shape, **kw)
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target="llvm", params=params)
    return graph_executor.GraphModule(lib["default"](tvm.cpu(0)))


def run_tvm(m, feeds, **kw):
    g = build(m, feeds, **kw)
    for k, v in feeds.items():
        g.set_input(k, v)
    for i in range(g.get_num_outputs()):      # poison: an element never written shows up as NaN
        out = g.get_output(i)
        if out.dtype.startswith("float"):
            out.copyfrom(np.full(out.shape, np.nan, out.dtype))
    g.run()
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())]


def check(m, feeds, rtol=1e-3, atol=1e-5, **kw):
    """tvmlab and onnxruntime agree on every output (shape, dtype kind and values)."""
    want = run_ort(m, feeds)
    got = run_tvm(m, feeds, **kw)
    assert len(got) == len(want), f"{len(got)} outputs, onnxruntime gives {len(want)}"
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"shape {g.shape}, onnxruntime gives {w.shape}"
        assert np.isfinite(g).all() == np.isfinite(w).all()
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got
