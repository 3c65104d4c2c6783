"""relay.build + the graph executor against numpy: every operator, small networks, export/load, clear errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tvmlab.topi import testing as ref
import tvmlab as tvm
from tvmlab import relay
from tvmlab.contrib import graph_executor


def poison_graph(m):
    """NaN in every tensor a kernel writes, so a kernel that skips an element is caught."""
    ex = m.module
    for nid, node in enumerate(ex.nodes):
        if node["op"] == "tvm_op" and node["attrs"]["func_name"] != "__nop":     # a __nop's output is a view
            for k in range(int(node["attrs"]["num_outputs"])):
                arr = ex.entries[ex.row_ptr[nid] + k]._arr
                if arr.dtype.kind == "f":
                    arr[...] = np.nan


def compile_run(expr_or_func, inputs, params=None, opt_level=3):
    f = expr_or_func if isinstance(expr_or_func, relay.Function) else \
        relay.Function(relay.analysis.free_vars(expr_or_func), expr_or_func)
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    poison_graph(m)
    m.set_input(**inputs)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())], lib


def rand(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype("float32")


UNARY = [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)),
         ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("tanh", np.tanh), ("negative", np.negative),
         ("abs", np.abs), ("floor", np.floor), ("ceil", np.ceil)]
BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply), ("divide", np.divide),
          ("power", np.power), ("maximum", np.maximum), ("minimum", np.minimum)]


def test_elementwise_and_broadcast_ops(rng):
    x = relay.var("x", shape=(3, 1, 5))
    y = relay.var("y", shape=(4, 1))
    xv, yv = rand(rng, 3, 1, 5, lo=0.5, hi=2), rand(rng, 4, 1, lo=0.5, hi=2)
    outs = [getattr(relay, n)(x) for n, _ in UNARY] + [getattr(relay, n)(x, y) for n, _ in BINARY]
    outs += [relay.clip(x, 0.8, 1.5), relay.nn.relu(x - relay.const(1.0)),
             relay.nn.leaky_relu(x - relay.const(1.0), 0.2)]
    got, _ = compile_run(relay.Tuple(outs), {"x": xv, "y": yv})
    want = [f(xv) for _, f in UNARY] + [f(xv, yv) for _, f in BINARY]
    want += [np.clip(xv, 0.8, 1.5), np.maximum(xv - 1, 0), np.where(xv > 1, xv - 1, 0.2 * (xv - 1))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_reductions_and_layout_ops(rng):
    xv = rand(rng, 2, 3, 5, 4)
    x = relay.var("x", shape=xv.shape)
    idx = np.array([[3, 0], [-1, 2]], "int32")
    outs = [relay.sum(x, axis=(1, 3)), relay.mean(x, axis=2, keepdims=True), relay.max(x, axis=0),
            relay.min(x, axis=None), relay.reshape(x, (0, -1, 4)), relay.transpose(x, (3, 1, 0, 2)),
            relay.squeeze(relay.expand_dims(x, 1), [1]), relay.strided_slice(x, [1, 0, 4], [2, 3, 0], [1, 2, -2]),
            relay.take(x, relay.const(idx), axis=2), relay.tile(x, (1, 2, 1, 1)),
            relay.nn.pad(x, ((0, 0), (1, 0), (2, 1), (0, 3)), pad_value=0.5),
            relay.concatenate([x, relay.exp(x)], axis=3), relay.nn.batch_flatten(x),
            relay.split(x, [1, 4], axis=2)[1], relay.broadcast_to(relay.sum(x, 1, keepdims=True), (2, 3, 5, 4))]
    got, _ = compile_run(relay.Tuple(outs), {"x": xv})
    want = [xv.sum((1, 3)), xv.mean(2, keepdims=True), xv.max(0), xv.min(), xv.reshape(2, -1, 4),
            xv.transpose(3, 1, 0, 2), xv, xv[1:2, 0:3:2, 4:0:-2], np.take(xv, np.where(idx < 0, idx + 5, idx), axis=2),
            np.tile(xv, (1, 2, 1, 1)), np.pad(xv, ((0, 0), (1, 0), (2, 1), (0, 3)), constant_values=0.5),
            np.concatenate([xv, np.exp(xv)], 3), xv.reshape(2, -1), xv[:, :, 1:4],
            np.broadcast_to(xv.sum(1, keepdims=True), xv.shape)]
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")


def test_layout_transform_out_of_blocks_into_short_rows(rng):
    """NCHW16c -> NCHW with 7-wide rows (a network's output at 7x7): rows in parallel, no vector index divided back
    into coordinates for every element (that form was 20x slower)."""
    xv = rand(rng, 1, 80, 7, 7, 16)
    x = relay.var("x", shape=xv.shape)
    (got,), lib = compile_run(relay.layout_transform(x, "NCHW16c", "NCHW"), {"x": xv})
    np.testing.assert_array_equal(got, xv.transpose(0, 1, 4, 2, 3).reshape(1, 1280, 7, 7))
    ll = lib.get_lib().get_source("ll")
    assert "urem <" not in ll and "udiv <" not in ll and "masked.gather" not in ll


@pytest.mark.parametrize("stride, pad, dilation, groups", [
    ((1, 1), (1, 1, 1, 1), (1, 1), 1), ((2, 2), (1, 0, 2, 1), (1, 1), 1), ((1, 2), (0, 0, 0, 0), (2, 1), 1),
    ((1, 1), (1, 1, 1, 1), (1, 1), 6), ((2, 1), (1, 1, 1, 1), (1, 1), 2)])
def test_conv2d_variants(rng, stride, pad, dilation, groups):
    xv = rand(rng, 2, 6, 9, 7)
    wv = rand(rng, 12, 6 // groups, 3, 3)
    x, w = relay.var("x", shape=xv.shape), relay.var("w", shape=wv.shape)
    y = relay.nn.conv2d(x, w, strides=stride, padding=pad, dilation=dilation, groups=groups)
    for level in ((0, 3) if stride == (2, 2) or groups > 1 else (3,)):     # 0: topi's NCHW, 3: NCHWc
        got, _ = compile_run(y, {"x": xv}, {"w": wv}, opt_level=level)
        np.testing.assert_allclose(got[0], ref.conv2d_nchw_python(xv, wv, stride, pad, groups, dilation),
                                   rtol=1e-4, atol=1e-4)


def test_conv2d_transpose(rng):
    xv, wv = rand(rng, 1, 4, 5, 6), rand(rng, 4, 3, 3, 3)
    x, w = relay.var("x", shape=xv.shape), relay.var("w", shape=wv.shape)
    y = relay.nn.conv2d_transpose(x, w, strides=(2, 2), padding=(1, 1), output_padding=(1, 0))
    got, _ = compile_run(y, {"x": xv, "w": wv})
    np.testing.assert_allclose(got[0], ref.conv2d_transpose_nchw_python(xv, wv, (2, 2), (1, 1, 1, 1), (1, 0)),
                               rtol=1e-4, atol=1e-4)


def test_pools(rng):
    xv = rand(rng, 1, 3, 7, 8)
    x = relay.var("x", shape=xv.shape)
    outs = [relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True),
            relay.nn.avg_pool2d(x, (3, 2), (2, 2), padding=(1, 0, 1, 1), count_include_pad=True),
            relay.nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True),
            relay.nn.global_avg_pool2d(x), relay.nn.global_max_pool2d(x)]
    got, _ = compile_run(relay.Tuple(outs), {"x": xv})
    want = [ref.pool2d_python(xv, (3, 3), (2, 2), 1, (1, 1, 1, 1), "max", True, False, drop_pad_windows=True),
            ref.pool2d_python(xv, (3, 2), (2, 2), 1, (1, 0, 1, 1), "avg", False, True, drop_pad_windows=True),
            ref.pool2d_python(xv, (3, 3), (2, 2), 1, (1, 1, 1, 1), "avg", True, False, drop_pad_windows=True),
            xv.mean((2, 3), keepdims=True), xv.max((2, 3), keepdims=True)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_pools_after_blocked_convolutions(rng):
    xv, wv = rand(rng, 1, 3, 9, 9), rand(rng, 16, 3, 3, 3)
    x = relay.var("x", shape=xv.shape)
    y = relay.nn.relu(relay.nn.conv2d(x, relay.const(wv), padding=(1, 1)))
    outs = [relay.nn.max_pool2d(y, (3, 3), (2, 2), padding=(1, 1)),
            relay.nn.avg_pool2d(y, (2, 2), (2, 2), ceil_mode=True),
            relay.nn.batch_flatten(relay.nn.global_avg_pool2d(y))]
    c = np.maximum(ref.conv2d_nchw_python(xv, wv, 1, (1, 1, 1, 1)), 0)
    want = [ref.pool2d_python(c, (3, 3), (2, 2), 1, (1, 1, 1, 1), "max", False, False, drop_pad_windows=True),
            ref.pool2d_python(c, (2, 2), (2, 2), 1, (0, 0, 0, 0), "avg", True, False, drop_pad_windows=True),
            c.mean((2, 3))]
    for level in (0, 3):
        got, lib = compile_run(relay.Function([x], relay.Tuple(outs)), {"x": xv}, opt_level=level)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    assert 'layout="NCHW' in str(lib.ir_mod)


def test_normalisations_and_softmax(rng):
    xv = rand(rng, 2, 6, 3, 4)
    g, b, a = rand(rng, 6, lo=0.5, hi=1.5), rand(rng, 6), rand(rng, 6)
    x = relay.var("x", shape=xv.shape)
    outs = [relay.nn.softmax(x, axis=1), relay.nn.log_softmax(x),
            relay.nn.lrn(x, size=3, alpha=0.5, beta=0.75, bias=2.0),
            relay.nn.instance_norm(x, relay.const(g), relay.const(b), epsilon=1e-3),
            relay.nn.prelu(x, relay.const(a))]
    got, _ = compile_run(relay.Tuple(outs), {"x": xv})
    sq = np.pad(xv ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    win = sq[:, 0:6] + sq[:, 1:7] + sq[:, 2:8]
    mu = xv.mean((2, 3), keepdims=True)
    var = xv.var((2, 3), keepdims=True)
    want = [ref.softmax_python(xv, 1), np.log(ref.softmax_python(xv, -1)), xv / (2.0 + 0.5 / 3 * win) ** 0.75,
            (xv - mu) / np.sqrt(var + 1e-3) * g.reshape(1, 6, 1, 1) + b.reshape(1, 6, 1, 1),
            np.where(xv > 0, xv, xv * a.reshape(1, 6, 1, 1))]
    for k, (gg, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(gg, w, rtol=1e-4, atol=1e-5, err_msg=f"output {k}")


def test_matmuls(rng):
    av, bv, cv = rand(rng, 3, 10), rand(rng, 10, 7), rand(rng, 2, 3, 10)
    a, b, c = (relay.var(n, shape=v.shape) for n, v in (("a", av), ("b", bv), ("c", cv)))
    outs = [relay.nn.matmul(a, b), relay.nn.matmul(b, a, transpose_a=True, transpose_b=True),
            relay.nn.batch_matmul(c, relay.expand_dims(relay.transpose(b), 0)),
            relay.nn.dense(c, relay.transpose(b)), relay.nn.batch_matmul(c, c, transpose_b=False, transpose_a=True)]
    got, _ = compile_run(relay.Tuple(outs), {"a": av, "b": bv, "c": cv})
    want = [av @ bv, (av @ bv).T, cv @ bv, cv @ bv, None]
    want[4] = np.einsum("bki,bkj->bij", cv, cv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_mlp(rng):
    xv = rand(rng, 4, 20)
    w1, b1, w2, b2 = rand(rng, 33, 20), rand(rng, 33), rand(rng, 10, 33), rand(rng, 10)
    x = relay.var("x", shape=(4, 20))
    p = {n: relay.var(n, shape=v.shape) for n, v in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))}
    h = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, p["w1"]), p["b1"]))
    y = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(h, p["w2"]), p["b2"]))
    got, lib = compile_run(y, {"x": xv}, {"w1": w1, "b1": b1, "w2": w2, "b2": b2})
    want = ref.softmax_python(np.maximum(xv @ w1.T + b1, 0) @ w2.T + b2)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-6)
    assert set(lib.get_params()) == {"p0", "p1", "p2", "p3"}


def residual_block(rng, c=16):
    x = relay.var("data", shape=(1, c, 10, 10))
    params = {}

    def conv_bn(inp, name, k, cin, cout):
        params[name + "_w"] = rand(rng, cout, cin, k, k) * 0.3
        for s, lo, hi in (("_g", 0.5, 1.5), ("_b", -0.5, 0.5), ("_m", -0.5, 0.5), ("_v", 0.5, 1.5)):
            params[name + s] = rand(rng, cout, lo=lo, hi=hi)
        y = relay.nn.conv2d(inp, relay.var(name + "_w", shape=(cout, cin, k, k)), padding=(k // 2, k // 2))
        return relay.nn.batch_norm(y, *[relay.var(name + s, shape=(cout,)) for s in ("_g", "_b", "_m", "_v")])[0]
    y = relay.nn.relu(conv_bn(x, "c1", 3, c, c))
    y = conv_bn(y, "c2", 3, c, c)
    out = relay.nn.relu(relay.add(y, x))
    return relay.Function(relay.analysis.free_vars(out), out), params


def residual_ref(xv, p):
    def cb(inp, n, k):
        conv = ref.conv2d_nchw_python(inp, p[n + "_w"], 1, (k // 2,) * 4)
        return ref.batch_norm_python(conv, p[n + "_g"], p[n + "_b"], p[n + "_m"], p[n + "_v"])
    y = np.maximum(cb(xv, "c1", 3), 0)
    return np.maximum(cb(y, "c2", 3) + xv, 0)


def test_residual_block_with_and_without_optimisation(rng):
    f, params = residual_block(rng)
    xv = rand(rng, 1, 16, 10, 10)
    want = residual_ref(xv, params)
    for level in (1, 3):        # 1: fused, batch norm folded at run time, NCHW; 3: folded weights, NCHWc
        got, lib = compile_run(f, {"data": xv}, params, opt_level=level)
        np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4, err_msg=f"opt_level={level}")
    text = str(lib.ir_mod)
    assert "nn.contrib_conv2d_NCHWc" in text and "nn.batch_norm" not in text
    # the skip add now fuses into the second conv's group, so every intermediate is alive at once
    # here and there is nothing to reuse; the plan must never take more than one buffer per value
    # (reuse itself is checked on ResNet-18 below)
    assert lib.memory_plan["planned_bytes"] <= lib.memory_plan["unplanned_bytes"]


def test_inception_style_concat_block(rng):
    xv = rand(rng, 1, 8, 6, 6)
    x = relay.var("x", shape=xv.shape)
    w1, w3, wp = rand(rng, 4, 8, 1, 1), rand(rng, 6, 8, 3, 3), rand(rng, 5, 8, 1, 1)
    b1 = relay.nn.relu(relay.nn.conv2d(x, relay.const(w1)))
    b3 = relay.nn.relu(relay.nn.conv2d(x, relay.const(w3), padding=(1, 1)))
    bp = relay.nn.conv2d(relay.nn.avg_pool2d(x, (3, 3), (1, 1), padding=(1, 1)), relay.const(wp))
    y = relay.concatenate([b1, b3, bp], axis=1)
    got, _ = compile_run(relay.Function([x], y), {"x": xv})
    pool = ref.pool2d_python(xv, (3, 3), (1, 1), 1, (1, 1, 1, 1), "avg", False, False, drop_pad_windows=True)
    want = np.concatenate([np.maximum(ref.conv2d_nchw_python(xv, w1, 1, 0), 0),
                           np.maximum(ref.conv2d_nchw_python(xv, w3, 1, (1, 1, 1, 1)), 0),
                           ref.conv2d_nchw_python(pool, wp, 1, 0)], axis=1)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)


def test_concatenate_of_blocked_convolutions(rng):
    xv = rand(rng, 1, 8, 5, 5)
    x = relay.var("x", shape=xv.shape)
    ws = [rand(rng, o, 8, 3, 3) for o in (32, 64)]
    y = relay.concatenate([relay.nn.relu(relay.nn.conv2d(x, relay.const(w), padding=(1, 1))) for w in ws], axis=1)
    got, lib = compile_run(relay.Function([x], relay.nn.global_avg_pool2d(y)), {"x": xv})
    want = np.concatenate([np.maximum(ref.conv2d_nchw_python(xv, w, 1, (1, 1, 1, 1)), 0) for w in ws], 1).mean((2, 3),
                                                                                                   keepdims=True)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)


def test_identical_groups_share_one_function(rng):
    x = relay.var("x", shape=(4, 8))
    y = relay.exp(relay.negative(x))
    z = relay.exp(relay.negative(relay.cumsum(y, axis=1)))     # a scan stays a kernel of its own
    got, lib = compile_run(z, {"x": rand(rng, 4, 8)})
    assert sorted(lib.lowered.functions) == ["fused_cumsum", "fused_negative_exp"]
    assert len(lib.lowered.functions) == 2
    xv = rand(rng, 4, 8)                    # scalars that print alike at 6 digits still differ
    a = relay.nn.softmax(x * relay.const(1.0000001))      # a softmax takes the multiply computing its input
    got, lib = compile_run(relay.Tuple([a, relay.nn.softmax(a * relay.const(1.0000002))]), {"x": xv})
    assert len(lib.lowered.functions) == 2


def test_graph_executor_api_and_errors(rng):
    f, params = residual_block(rng, c=4)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm", params=params)
    import json
    g = json.loads(lib.get_graph_json())
    assert {"nodes", "arg_nodes", "heads", "node_row_ptr", "attrs"} <= set(g)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = rand(rng, 1, 4, 10, 10)
    m.set_input(0, xv)
    np.testing.assert_array_equal(m.get_input("data").numpy(), xv)
    m.run()
    out = tvm.nd.empty((1, 4, 10, 10), "float32")
    m.get_output(0, out)
    np.testing.assert_allclose(out.numpy(), residual_ref(xv, params), rtol=1e-4, atol=1e-4)
    assert m.get_num_outputs() == 1
    assert m.get_input_info() == ({"data": (1, 4, 10, 10)}, {"data": "float32"})
    with pytest.raises(tvm.TVMLabError, match="input 'data': expected dtype float32, got float64"):
        m.set_input("data", xv.astype("float64"))
    with pytest.raises(tvm.TVMLabError, match=r"input 'data': expected shape \(1, 4, 10, 10\), got \(4, 10, 10\)"):
        m.set_input("data", xv[0])
    with pytest.raises(tvm.TVMLabError, match="no input 'image'; inputs: data"):
        m.set_input("image", xv)
    m.set_input(**params)           # TVM's idiom: weights already bound at build time are skipped
    with pytest.raises(tvm.TVMLabError, match="input 'data': expected dtype float32, got int64"):
        m.set_input(data=np.zeros((1, 4, 10, 10), "int64"), **params)
    with pytest.raises(tvm.TVMLabError, match="input index 9 is out of range"):
        m.set_input(9, xv)
    with pytest.raises(tvm.TVMLabError, match="output index 1 is out of range"):
        m.get_output(1)
    res = m.benchmark(tvm.cpu(0), number=1, repeat=2)
    assert len(res.results) == 2 and res.mean > 0
    with pytest.raises(tvm.TVMLabError, match="not a graph JSON"):
        graph_executor.create("{nodes: 1", lib.get_lib(), tvm.cpu(0))
    with pytest.raises(tvm.TVMLabError, match=r"it lacks \['heads'"):
        graph_executor.create('{"nodes": [], "arg_nodes": [], "node_row_ptr": [0], "attrs": {}}', lib.get_lib(),
                              tvm.cpu(0))
    with pytest.raises(tvm.TVMLabError, match="no compiled library was given"):
        graph_executor.create(lib.get_graph_json(), None, tvm.cpu(0))
    with pytest.raises(tvm.TVMLabError, match="GraphModule needs lib"):
        graph_executor.GraphModule(lib)
    m2 = graph_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu(0))
    m2.set_input("data", xv, **{k: v for k, v in lib.get_params().items()})
    m2.run()
    np.testing.assert_allclose(m2.get_output(0).numpy(), out.numpy())


def test_build_errors():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x, relay.var("w", shape=(3,))], relay.add(x, relay.var("w", shape=(3,))))
    with pytest.raises(tvm.TVMLabError, match=r"param 'w': expected float32\[3\], got float32\[4\]"):
        relay.build(tvm.IRModule.from_expr(relay.Function([x, f.params[1]], relay.add(x, f.params[1]))),
                    params={"w": np.ones(4, "float32")})
    with pytest.raises(tvm.TVMLabError, match="compiles graphs for targets 'llvm' .* and 'cuda'; got 'opengl'"):
        relay.build(tvm.IRModule.from_expr(relay.exp(x)), target="opengl")
    with pytest.raises(tvm.TVMLabError, match="relay.build expects an IRModule"):
        relay.build(relay.exp(x))
    with pytest.raises(relay.TypeInferenceError, match="nn.dense"):
        relay.build(tvm.IRModule.from_expr(relay.nn.dense(x, relay.var("w", shape=(4, 5)))))


def test_export_and_load_in_a_fresh_process(rng, tmp_path):
    f, params = residual_block(rng, c=4)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm", params=params)
    path = tmp_path / "model.so"
    lib.export_library(str(path))
    xv = rand(rng, 1, 4, 10, 10)
    np.save(tmp_path / "x.npy", xv)
    code = (
        "import numpy as np, tvmlab as tvm, sys\n"
        "from tvmlab.contrib import graph_executor\n"
        f"lib = tvm.runtime.load_module({str(path)!r})\n"
        "m = graph_executor.GraphModule(lib['default'](tvm.cpu(0)))\n"
        f"m.set_input('data', np.load({str(tmp_path / 'x.npy')!r})); m.run()\n"
        f"np.save({str(tmp_path / 'y.npy')!r}, m.get_output(0).numpy())\n"
        "assert 'tvmlab.relay' not in sys.modules, 'loading a model must not need the compiler'\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), residual_ref(xv, params), rtol=1e-4, atol=1e-4)
    os.remove(str(path) + ".params.npz")
    with pytest.raises(tvm.TVMLabError, match=r"model.so.params.npz is missing; the model's parameters \(p0"):
        tvm.runtime.load_module(str(path))


def test_unbound_params_are_inputs(rng):
    xv, wv = rand(rng, 2, 5), rand(rng, 3, 5)
    x, w = relay.var("x", shape=(2, 5)), relay.var("w", shape=(3, 5))
    got, lib = compile_run(relay.nn.dense(x, w), {"x": xv, "w": wv})
    np.testing.assert_allclose(got[0], xv @ wv.T, rtol=1e-5)
    assert lib.get_params() == {}


def test_lets_shared_values_and_trivial_graphs(rng):
    xv = rand(rng, 3, 4)
    x = relay.var("x", shape=(3, 4))
    v = relay.var("v")
    body = relay.Let(v, relay.exp(x), relay.Tuple([v * relay.const(2.0), relay.negative(v), x]))
    got, _ = compile_run(relay.Function([x], body), {"x": xv})
    np.testing.assert_allclose(got[0], 2 * np.exp(xv), rtol=1e-6)
    np.testing.assert_allclose(got[1], -np.exp(xv), rtol=1e-6)
    np.testing.assert_array_equal(got[2], xv)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], x)))
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("x", xv)
    m.run()
    np.testing.assert_array_equal(m.get_output(0).numpy(), xv)
    with pytest.raises(tvm.TVMLabError, match="no compiled function"):
        lib.export_library("unused.so")
    with pytest.raises(tvm.TVMLabError, match=r"distinct names; \['x'\]"):
        relay.build(tvm.IRModule.from_expr(relay.Function([x, relay.var("x", shape=(3, 4))], x)))


def test_registered_schedule_and_compute_are_used(rng):
    from tvmlab import te
    from tvmlab.relay.schedules import schedule_default
    op = relay.op.get("nn.softmax")
    old_compute, old_schedules = op.compute, dict(op.schedules)
    seen = []

    def my_schedule(attrs, outs, target):
        seen.append((attrs.axis, [o.op.name for o in outs]))
        return schedule_default(outs, target)

    def my_compute(attrs, inputs, out_type):    # a softmax that ignores the max: fine for small inputs
        x = inputs[0]
        k = te.reduce_axis((0, out_type.shape[1]), name="k")
        s = te.compute((out_type.shape[0],), lambda i: te.sum(te.exp(x[i, k]), axis=k), name="expsum")
        return [te.compute(out_type.shape, lambda i, j: te.exp(x[i, j]) / s[i], name="my_softmax")]
    try:
        relay.op.register_schedule("nn.softmax", my_schedule)
        relay.op.register_compute("nn.softmax", my_compute)
        xv = rand(rng, 3, 5)
        got, _ = compile_run(relay.nn.softmax(relay.var("x", shape=(3, 5))), {"x": xv})
        np.testing.assert_allclose(got[0], ref.softmax_python(xv), rtol=1e-5)
        assert seen == [(-1, ["my_softmax"])]
    finally:
        op.compute, op.schedules = old_compute, old_schedules


def _lifetimes_disjoint(graph):
    """No two op outputs sharing a storage id are alive at once (from their producer to their last reader)."""
    nodes, ptr = graph["nodes"], graph["node_row_ptr"]
    sids = graph["attrs"]["storage_id"][1]
    heads = {ptr[n] + k for n, k, _ in graph["heads"]}
    life, root = {}, {}         # a __nop's output is a view: its reads and its being an output are its input's
    for nid, node in enumerate(nodes):
        if node["op"] == "tvm_op" and node["attrs"]["func_name"] == "__nop":
            i, k, _ = node["inputs"][0]
            root[ptr[nid]] = root.get(ptr[i] + k, ptr[i] + k)
            assert sids[ptr[nid]] == sids[root[ptr[nid]]]
        elif node["op"] == "tvm_op":
            for k in range(ptr[nid + 1] - ptr[nid]):
                life[ptr[nid] + k] = [nid, nid]
        for i, k, _ in node.get("inputs", []):
            e = root.get(ptr[i] + k, ptr[i] + k)
            if e in life:
                life[e][1] = max(life[e][1], nid)
    for h in heads:
        if root.get(h, h) in life:
            life[root.get(h, h)][1] = len(nodes)
    by_sid = {}
    for e, (a, b) in life.items():
        by_sid.setdefault(sids[e], []).append((a, b))
    for spans in by_sid.values():
        spans.sort()
        for (a1, b1), (a2, b2) in zip(spans, spans[1:]):
            if a2 <= b1:
                return False
    return len(set(by_sid)) < len(life)     # and something was shared


def test_memory_plan_shares_storage_only_between_disjoint_lifetimes():
    import json
    from tvmlab.relay.testing import resnet
    mod, params = resnet.get_workload(num_layers=18, image_shape=(3, 32, 32), num_classes=10)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert _lifetimes_disjoint(json.loads(lib.get_graph_json()))
    plan = lib.memory_plan
    assert plan["planned_bytes"] * 2 < plan["unplanned_bytes"]
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    m.set_input("data", x)
    m.run()
    y = m.get_output(0).numpy()
    assert np.isfinite(y).all()
    assert abs(float(y.sum()) - 1.0) < 1e-4


def test_integer_and_half_dtypes(rng):
    xv = rng.integers(-50, 50, (4, 5)).astype("int32")
    iv = np.array([4, -1, 0], "int64")                     # int64 indices, negative from the end (as ONNX)
    dv = rng.uniform(0, 1, (4, 5)).astype("float16")
    x, i, d = relay.var("x", shape=(4, 5), dtype="int32"), relay.var("i", shape=(3,), dtype="int64"), \
        relay.var("d", shape=(4, 5), dtype="float16")
    out = relay.Tuple([x * relay.const(3) + x, relay.take(relay.cast(x, "float32"), i, axis=1),
                       relay.sum(x, axis=1), d + d, relay.cast(d, "float32")])
    got, _ = compile_run(relay.Function([x, i, d], out), {"x": xv, "i": iv, "d": dv})
    np.testing.assert_array_equal(got[0], 4 * xv)
    np.testing.assert_array_equal(got[1], xv[:, [4, 4, 0]].astype("float32"))
    np.testing.assert_array_equal(got[2], xv.sum(1))
    np.testing.assert_allclose(got[3].astype("float32"), (dv + dv).astype("float32"), rtol=1e-3)
    assert got[4].dtype == np.float32 and got[3].dtype == np.float16


def test_build_for_cuda(rng):
    """Every group compiles to CUDA (one thread per output element); it runs where a GPU is."""
    f, params = residual_block(rng, c=4)
    y = relay.nn.softmax(relay.nn.batch_flatten(f.body))
    f = relay.Function(f.params, y)
    try:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(f), target="cuda", params=params)
    except tvm.TVMLabError as e:
        if "NVRTC" in str(e) or "nvcc" in str(e):
            pytest.skip(f"no CUDA compiler here: {e}")
        raise
    src = lib.get_lib().get_source()
    assert src.count("__global__") >= len(lib.get_lib().function_names) >= 3
    assert "nn.contrib_conv2d_NCHWc" not in str(lib.ir_mod)          # layouts are a CPU matter
    with pytest.raises(tvm.TVMLabError, match="export_library: a model built for cuda cannot be written out"):
        lib.export_library("unused.so")
    with pytest.raises(tvm.TVMLabError, match=r"built for cuda: create it on tvm.cuda\(0\)"):
        lib["default"](tvm.cpu(0))
    xv = rand(rng, 1, 4, 10, 10)
    want = ref.softmax_python(residual_ref(xv, params).reshape(1, -1))
    (got,) = tvm.testing.simulate_graph(lib, data=xv)          # every kernel, thread by thread
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    if not tvm.cuda(0).exist:
        with pytest.raises(tvm.TVMLabError):
            lib["default"](tvm.cuda(0))
        return
    m = graph_executor.GraphModule(lib["default"](tvm.cuda(0)))
    m.set_input("data", xv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-6)


def test_create_executor_and_the_older_build_spelling(rng):
    xv, yv = rand(rng, 2, 3), rand(rng, 3)
    x, y = relay.var("x", shape=(2, 3)), relay.var("y", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.exp(x) * y))
    out = relay.create_executor("graph", mod, tvm.cpu(0), "llvm").evaluate()(xv, tvm.nd.array(yv))
    np.testing.assert_allclose(out.numpy(), np.exp(xv) * yv, rtol=1e-6)
    f = relay.create_executor(mod=mod, params={"y": yv}).evaluate()
    np.testing.assert_allclose(f(x=xv).numpy(), np.exp(xv) * yv, rtol=1e-6)
    with pytest.raises(tvm.TVMLabError, match="takes 1 inputs"):
        f(xv, yv)
    with tvm.transform.PassContext(opt_level=3):
        graph, lib, params = relay.build(mod, target="llvm", params={"y": yv})
    m = graph_executor.create(graph, lib, tvm.cpu(0))
    m.set_input("x", xv)
    m.set_input(**params)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.exp(xv) * yv, rtol=1e-6)


def test_profile_times_every_kernel_call(rng):
    x = relay.var("x", shape=(1, 4, 9, 9))
    w = relay.const(rand(rng, 8, 4, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    z = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(relay.nn.max_pool2d(y, (2, 2), (2, 2))))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], z)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = rand(rng, 1, 4, 9, 9)
    rep = m.profile(number=2, repeat=2, x=xv)
    ex = m.module
    kernels = [n["attrs"]["func_name"] for n in ex.nodes if n["op"] == "tvm_op"]
    assert sorted(r["name"] for r in rep.rows) == sorted(kernels)
    assert [r["ms"] for r in rep.rows] == sorted((r["ms"] for r in rep.rows), reverse=True)
    assert all(r["ms"] > 0 for r in rep.rows) and rep.run_ms > 0
    assert abs(sum(r["percent"] for r in rep.rows) - 100) < 1e-6
    out = next(r for r in rep.rows if r["node"] == ex.graph["heads"][0][0])
    assert out["shape"] == (1, 8) and out["dtype"] == "float32"
    text = rep.table()
    assert all(k[:59] in text for k in kernels) and f"{len(kernels)} kernel calls" in text
    assert rep.csv().count("\n") == len(kernels)
    assert sum(c for c, _ in rep.by_kernel().values()) == len(kernels)
    per = m.run_individual(number=1, repeat=1)
    assert len(per) == len(kernels) and all(t > 0 for t in per)
    # profiling ran the graph on the input it was given: the output is still right
    poison_graph(m)
    m.run()
    ref_y = np.maximum(ref.conv2d_nchw_python(xv, w.data.numpy(), 1, (1, 1, 1, 1)), 0)
    ref_z = ref_y[:, :, :8, :8].reshape(1, 8, 4, 2, 4, 2).max(axis=(3, 5)).mean(axis=(2, 3))
    np.testing.assert_allclose(m.get_output(0).numpy(), ref_z, rtol=1e-4, atol=1e-5)
    with pytest.raises(tvm.errors.RuntimeArgError, match="number and repeat"):
        m.profile(number=0)
    with pytest.raises(tvm.errors.RuntimeArgError, match="number and repeat"):
        m.run_individual(repeat=1.5)


def test_native_runner_calls_every_kernel_in_order_and_stops_at_a_failure(rng):
    from tvmlab import te
    from tvmlab.contrib.native_runner import make_runner
    from tvmlab.runtime.packed import PackedFuncError
    seen = []

    def bad(x, y):
        seen.append(float(x.numpy()[0]))
        raise ValueError("boom in the graph")
    tvm.register_func("test.native_runner.bad", bad, override=True)
    A = te.placeholder((8,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2 + 1, name="B")
    f_ok = tvm.build(te.create_schedule(B.op), [A, B], name="twice_plus_one")["twice_plus_one"]
    E = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("test.native_runner.bad", ins[0], outs[0]),
                  name="E")
    f_bad = tvm.build(te.create_schedule(E.op), [A, E], name="raises")["raises"]
    a = tvm.nd.array(rand(rng, 8))
    b, c, d = (tvm.nd.array(np.full(8, np.nan, "float32")) for _ in range(3))
    ok = make_runner([f_ok, f_ok], [[a, b], [b, c]])
    assert ok is not None
    ok()
    np.testing.assert_allclose(c.numpy(), (a.numpy() * 2 + 1) * 2 + 1, rtol=1e-6)
    c.copyfrom(np.full(8, np.nan, "float32"))
    runner = make_runner([f_ok, f_bad, f_ok], [[a, b], [b, c], [c, d]])
    import ctypes
    from tvmlab.runtime import llvm_jit
    # tiny kernels run on one thread, and the thread count is restored even when one fails
    assert runner.serial == ([0, 1, 2] if llvm_jit.has_openmp() else [])
    gomp = ctypes.CDLL(llvm_jit.initialize()) if llvm_jit.has_openmp() else None
    before = gomp.omp_get_max_threads() if gomp else None
    with pytest.raises(PackedFuncError, match="boom in the graph"):
        runner()
    assert gomp is None or gomp.omp_get_max_threads() == before
    assert seen == [pytest.approx(float(a.numpy()[0]) * 2 + 1)]        # the first kernel ran before it
    assert np.isnan(d.numpy()).all()                                    # the one after it did not
    # a graph built for the CPU runs through one native call, a one-kernel graph too (so each run picks
    # its thread count as the others do)
    x = relay.var("x", shape=(3, 5))
    for expr, kernels in ((relay.exp(relay.sum(x, axis=1)), 1), (relay.cumsum(relay.exp(x), axis=1), 2)):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], expr)), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        assert m.module.runner is not None and len(m.module.calls) == kernels
        xv = np.random.default_rng(0).standard_normal((3, 5)).astype("float32")
        m.set_input("x", xv)
        m.run()
        want = np.exp(xv.sum(axis=1)) if kernels == 1 else np.cumsum(np.exp(xv), axis=1)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5)


@pytest.mark.parametrize("env, want", [({}, {"GOMP_SPINCOUNT": "5000"}), ({"GOMP_SPINCOUNT": "50"}, {}),
                                       ({"OMP_WAIT_POLICY": "active"}, {}),
                                       ({"TVM_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "1", "GOMP_SPINCOUNT": "5000"}),
                                       ({"TVM_NUM_THREADS": "1", "OMP_NUM_THREADS": "2"},
                                        {"OMP_NUM_THREADS": "1", "GOMP_SPINCOUNT": "5000"})])
def test_openmp_settings_only_where_the_user_did_not_choose(env, want):
    """libgomp's spin is bounded unless the user chose a wait policy; TVM_NUM_THREADS wins over
    OMP_NUM_THREADS, as in TVM; both reach libgomp only, the process environment stays the user's."""
    code = ("import ctypes, json, os, tvmlab.runtime.llvm_jit as j; before = dict(os.environ); j.initialize(); "
            "print(json.dumps([j.thread_settings(), dict(os.environ) == before, "
            "ctypes.CDLL(j.initialize()).omp_get_max_threads()]))")
    base = {k: v for k, v in os.environ.items()
            if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "TVM_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    settings, unchanged, threads = json.loads(out)
    assert settings == want
    assert unchanged
    if "TVM_NUM_THREADS" in env:
        assert threads == int(env["TVM_NUM_THREADS"])


def test_bad_tvm_num_threads_is_a_clear_error():
    code = "import tvmlab.runtime.llvm_jit as j; j.initialize()"
    res = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TVM_NUM_THREADS": "many"},
                         capture_output=True, text=True)
    assert res.returncode != 0 and "TVM_NUM_THREADS must be a positive number" in res.stderr


def test_debug_executor_gives_each_nodes_output_and_time(rng):
    from tvmlab.contrib.debugger import debug_executor
    x = relay.var("x", shape=(3, 8))
    a = relay.cumsum(relay.exp(x), axis=1)             # exp | cumsum | negative | cumsum | add: storage reused
    b = relay.cumsum(relay.negative(a), axis=1)
    y = relay.add(b, relay.const(1.0))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu(0))
    xv = rand(rng, 3, 8)
    m.set_input("x", xv)
    poison_graph(m)
    m.run()

    want = [np.exp(xv), np.cumsum(np.exp(xv), axis=1), -np.cumsum(np.exp(xv), axis=1)]
    want += [np.cumsum(want[2], axis=1), np.cumsum(want[2], axis=1) + 1]
    np.testing.assert_allclose(m.get_output(0).numpy(), want[-1], rtol=1e-5)
    times = m.last_node_times()
    assert [name for _, name, _ in times] == [n["name"] for n in m.module.nodes if n["op"] == "tvm_op"]
    assert all(t > 0 for _, _, t in times)
    for (nid, name, _), w in zip(times, want):     # every node's value, though later nodes reuse storage
        np.testing.assert_allclose(m.debug_get_output(nid).numpy(), w, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(m.debug_get_output(times[0][1]).numpy(), want[0], rtol=1e-5)
    np.testing.assert_allclose(m.debug_get_output("x").numpy(), xv)
    assert len(m.profile(number=1, repeat=1).rows) == len(times)
    with pytest.raises(tvm.errors.RuntimeArgError, match="out of range"):
        m.debug_get_output(99)
    with pytest.raises(tvm.errors.RuntimeArgError, match="no node named 'nope'"):
        m.debug_get_output("nope")
    fresh = debug_executor.create(lib.get_graph_json(), lib, tvm.cpu(0))
    with pytest.raises(tvm.errors.RuntimeArgError, match="run\\(\\) the graph first"):
        fresh.last_node_times()


def test_reshape_only_groups_are_views_without_a_kernel(rng):
    import json
    x = relay.var("x", shape=(2, 3, 4))
    a = relay.cumsum(relay.exp(x), axis=-1)
    b = relay.cumsum(relay.reshape(a, (6, 4)), axis=-1)             # a view between two kernels
    c = relay.expand_dims(relay.squeeze(relay.reshape(b, (1, 24))), 0)     # a chain of views: one __nop
    d = relay.cumsum(relay.nn.batch_flatten(relay.exp(b)), axis=-1)     # the flatten fuses into the exp's group
    f = relay.Function([x], relay.Tuple([c, relay.reshape(x, (24,)), d, relay.reshape(d, (4, 6))]))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    g = json.loads(lib.get_graph_json())
    names = [n["name"] for n in g["nodes"] if n["op"] == "tvm_op"]
    assert names.count("__nop") == 4 and "__nop" not in lib.get_lib().function_names
    assert _lifetimes_disjoint(g)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    assert len(m.module.calls) == len(names) - 4
    xv = rand(rng, 2, 3, 4)
    m.set_input("x", xv)
    poison_graph(m)
    m.run()

    def softmax(v):         # the scans of this test
        return np.cumsum(v, axis=-1)
    bv = softmax(softmax(np.exp(xv)).reshape(6, 4))
    dv = softmax(np.exp(bv).reshape(6, 4))
    for i, want in enumerate([bv.reshape(1, 24), xv.reshape(24), dv, dv.reshape(4, 6)]):
        np.testing.assert_allclose(m.get_output(i).numpy(), want, rtol=1e-5, err_msg=f"output {i}")
    xv2 = rand(rng, 2, 3, 4)            # a view of an input follows the input
    m.set_input("x", xv2)
    m.run()
    np.testing.assert_allclose(m.get_output(1).numpy(), xv2.reshape(24))
    from tvmlab.contrib.debugger import debug_executor
    dbg = debug_executor.create(lib.get_graph_json(), lib, tvm.cpu(0))
    dbg.set_input("x", xv)
    nop = names.index("__nop") + 1      # node ids: x is node 0
    np.testing.assert_allclose(dbg.debug_get_output(nop).numpy(), softmax(np.exp(xv)).reshape(6, 4), rtol=1e-5)
    # a graph of views only compiles nothing and still runs
    with tvm.transform.PassContext(opt_level=3):
        only = relay.build(tvm.IRModule.from_expr(relay.Function([x], relay.reshape(x, (4, 6)))), target="llvm")
    m = graph_executor.GraphModule(only["default"](tvm.cpu(0)))
    m.set_input("x", xv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), xv.reshape(4, 6))


def test_small_kernels_run_on_one_thread_and_the_thread_count_is_restored(rng):
    import ctypes
    from tvmlab.runtime import llvm_jit
    if not llvm_jit.has_openmp():
        pytest.skip("libgomp is not available: every kernel runs on one thread anyway")
    gomp = ctypes.CDLL(llvm_jit.initialize())
    x = relay.var("x", shape=(1, 4, 64, 64))
    w = relay.const(rand(rng, 8, 4, 3, 3))
    big = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))                 # 64 KB in, 128 KB out
    y = relay.nn.softmax(relay.nn.batch_flatten(relay.nn.global_avg_pool2d(big)))   # 8 floats
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["AlterOpLayout"]):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    ex = m.module
    serial = [ex.nodes[ex.call_nodes[k]]["name"] for k in ex.runner.serial]
    assert any("softmax" in n for n in serial) and not any("conv2d" in n for n in serial)
    before = gomp.omp_get_max_threads()
    xv = rand(rng, 1, 4, 64, 64)
    m.set_input("x", xv)
    poison_graph(m)
    m.run()
    assert gomp.omp_get_max_threads() == before
    conv = np.maximum(ref.conv2d_nchw_python(xv, w.data.numpy(), 1, (1, 1, 1, 1)), 0).mean(axis=(2, 3))
    e = np.exp(conv - conv.max(axis=1, keepdims=True))
    np.testing.assert_allclose(m.get_output(0).numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_thread_choice_switches_to_the_faster_count_and_backs_off():
    from tvmlab.contrib.native_runner import ThreadChoice
    c = ThreadChoice(4, first=4, longest=16, gain=0.8, slow=1.25, window=3, burst=3, clock=lambda: 0.0)

    def runs(k, times):
        used = []
        for _ in range(k):
            n = c.next()
            used.append(n)
            c.record(n, times[n])
        return used
    # steady runs on all threads: no probe at all
    assert runs(50, {4: 1.0, 1: 3.0}) == [4] * 50
    # a core is taken, all threads slow down: a probe of one thread (3 runs) wins and runs switch to it;
    # probes of all threads then lose and come 4, 8, 16, 16 runs apart
    seq = "".join(map(str, runs(72, {4: 5.0, 1: 3.0})))
    assert seq == "44" + "111" + "1" * 4 + "444" + "1" * 8 + "444" + "1" * 16 + "444" + "1" * 16 + "444" + "1" * 11
    assert c.use == 1 and c.interval == 16
    # idle again: the next probe of all threads wins and runs go back to them
    seq = "".join(map(str, runs(25, {4: 1.0, 1: 3.0})))
    assert seq == "1" * 5 + "4" * 20 and c.use == 4
    assert ThreadChoice(1).next() == 1      # one thread: nothing to choose


def test_thread_choice_probes_by_time_too_and_ignores_runs_after_idle_gaps():
    from tvmlab.contrib.native_runner import ThreadChoice
    now = [0.0]
    c = ThreadChoice(2, first=4, longest=1024, gain=0.8, slow=1.25, window=3, burst=3, max_wait=0.05,
                     clock=lambda: now[0])

    def runs(k, times, gap=0.0):
        used = []
        for _ in range(k):
            n = c.next()
            used.append(n)
            now[0] += times[n]
            c.record(n, times[n], gap)
        return "".join(map(str, used))
    runs(20, {2: 1e-4, 1: 3e-4})
    # a contended stretch: one thread wins, then probes of both lose until the interval is 1024 runs
    while not (c.interval == 1024 and c.count == 0 and not c.probe):   # up to just after a lost probe
        runs(1, {2: 5e-4, 1: 3e-4})
    assert c.use == 1
    # contention gone: by run count the next probe would be up to 1024 runs away; by time it comes within
    # max_wait (0.05 s = 167 runs of 0.3 ms) and runs go back to both threads
    seq = runs(400, {2: 1e-4, 1: 3e-4})
    assert "222" in seq and seq.index("222") <= 170 and seq.endswith("2" * 50) and c.use == 2
    # runs after idle gaps (the threads slept) are slow but not counted: no switch
    assert runs(30, {2: 5e-4, 1: 3e-4}, gap=1.0) == "2" * 30 and c.use == 2


def test_thread_choice_waits_out_the_slow_start_after_an_idle_spell():
    """After an idle spell the cores may stay slow for milliseconds: runs in the next ``warm`` seconds are
    not counted and start no probe, so a burst's slow start does not move a model to one thread; a
    slowdown that lasts past them still does."""
    from tvmlab.contrib.native_runner import ThreadChoice
    now = [0.0]
    c = ThreadChoice(2, first=4, longest=1024, gain=0.8, slow=1.25, window=3, burst=3, max_wait=0.05,
                     warm=0.02, clock=lambda: now[0])

    def runs(k, times, gap=0.0):
        used = []
        for _ in range(k):
            now[0] += gap               # the idle spell, then the run
            n = c.next()
            used.append(n)
            now[0] += times[n]
            c.record(n, times[n], gap)
            gap = 0.0
        return "".join(map(str, used))
    runs(20, {2: 1e-4, 1: 3e-4})
    # a burst after 0.2 s idle: 15 ms of slow runs on both threads, then fast ones
    seq = runs(30, {2: 5e-4, 1: 3e-4}, gap=0.2) + runs(50, {2: 1e-4, 1: 3e-4})
    assert seq == "2" * 80 and c.use == 2
    # the slowdown outlasts the warm-up: a probe of one thread wins
    runs(200, {2: 5e-4, 1: 3e-4}, gap=0.2)
    assert c.use == 1
    # on one thread, the next burst starts with a probe of both, which wins once they are fast again
    seq = runs(10, {2: 1e-4, 1: 3e-4}, gap=0.2)
    assert seq.startswith("222") and c.use == 2


def test_adaptive_threads_restores_the_thread_count_and_can_be_turned_off(rng):
    import ctypes
    from tvmlab.runtime import llvm_jit
    x = relay.var("x", shape=(1, 8, 32, 32))
    w = relay.const(rand(rng, 8, 8, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))), w, padding=(1, 1)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = rand(rng, 1, 8, 32, 32)
    m.set_input("x", xv)
    gomp = ctypes.CDLL(llvm_jit.initialize()) if llvm_jit.has_openmp() else None
    before = gomp.omp_get_max_threads() if gomp else None
    assert m.adaptive_threads == (before is not None and before > 1)
    outs = []
    for _ in range(40):     # crosses probes on one thread: the answers do not change
        poison_graph(m)
        m.run()
        outs.append(m.get_output(0).numpy())
    if gomp:
        assert gomp.omp_get_max_threads() == before
    h = np.maximum(ref.conv2d_nchw_python(xv, w.data.numpy(), 1, (1, 1, 1, 1)), 0)
    want = np.maximum(ref.conv2d_nchw_python(h, w.data.numpy(), 1, (1, 1, 1, 1)), 0)
    for o in outs:
        np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-5)
    m.adaptive_threads = False
    assert not m.adaptive_threads and m.module.runner.choice is None
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-5)


def test_cuda_groups_compile_in_parallel_and_a_failed_compile_builds_its_group_again(rng, monkeypatch):
    """relay.build(target="cuda") hands each group's NVRTC compile to a pool of threads while the next group
    lowers.  A compile that fails there (made to fail in the pool's threads) builds its group again in
    this thread, with the fallback schedules lower_group tries, and the model still computes its result."""
    import threading

    from tvmlab.codegen import cuda_build
    from tvmlab.relay import build_module
    real, threads, rebuilt = cuda_build.compile_cuda, set(), []

    def compile_cuda(src, arch, cubin=True):
        name = threading.current_thread().name
        threads.add(name.split("_")[0])
        if name.startswith("tvmlab-nvrtc") and "softmax" in src:
            raise tvm.TVMLabError("NVRTC could not compile the generated CUDA C: (made to fail)")
        return real(src, arch, cubin)
    monkeypatch.setattr(cuda_build, "compile_cuda", compile_cuda)
    real_lower = build_module.lower_group
    monkeypatch.setattr(build_module, "lower_group", lambda fn, name, target: rebuilt.append(name) or
                        real_lower(fn, name, target))
    f, params = residual_block(rng, c=4)
    f = relay.Function(f.params, relay.nn.softmax(relay.nn.batch_flatten(f.body)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(f), target="cuda -arch=sm_80", params=params)
    assert threads == {"tvmlab-nvrtc", "MainThread"}
    again = [n for n in rebuilt if rebuilt.count(n) == 2]
    assert again and all("softmax" in n for n in again)
    xv = rand(rng, 1, 4, 10, 10)
    (got,) = tvm.testing.simulate_graph(lib, data=xv)
    np.testing.assert_allclose(got, ref.softmax_python(residual_ref(xv, params).reshape(1, -1)), rtol=1e-4,
                               atol=1e-6)
