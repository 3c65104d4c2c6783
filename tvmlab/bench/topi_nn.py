"""``python -m tvmlab.bench.topi_nn``: ResNet-50's convolutions and classifier as fused topi.nn groups.

Each row builds one fused group (conv2d + bias + relu, or dense + bias), checks it against the
reference, and times both side by side: onnxruntime running the same one-node model (same threads),
or numpy.  Two forms of each convolution: ``topi.nn.conv2d_nchw`` (the kernel packed on every call)
and ``topi.nn.conv2d_NCHWc`` on data and kernel already in the blocked layouts (as a graph keeps
them, with constant weights transformed once); a third for the 3x3 unit-stride layers,
``topi.nn.conv2d_winograd_NCHWc`` with the transformed kernel (its GFLOP/s count the direct
convolution's operations, so they pass the machine's peak by what the algorithm saves).
"""
from __future__ import annotations

import numpy as np

from .. import te, topi
from ..runtime import ndarray as nd
from ..topi import testing as ref
from .peak import threads
from .suite import Row, _build, _poisoned, _prepare
from .timing import side_by_side

# (in channels, size, out channels, kernel, stride): one of each kind of ResNet-50 layer
LAYERS = [(3, 224, 64, 7, 2), (64, 56, 64, 3, 1), (256, 56, 64, 1, 1), (128, 28, 128, 3, 1),
          (256, 14, 256, 3, 1), (1024, 14, 2048, 1, 2), (512, 7, 512, 3, 1)]


def _ort_conv(w, b, stride, pad):
    """A callable running Conv + Relu in onnxruntime (None when it is not installed)."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y0"], strides=[stride] * 2, pads=[pad] * 4),
             helper.make_node("Relu", ["y0"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads()
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return lambda a: sess.run(None, {"x": a})[0]


def _numpy_conv(w, b, stride, pad):
    def run(a):
        return np.maximum(ref.conv2d_nchw_python(a, w, stride, pad) + b[None, :, None, None], 0)
    return run


def _winograd_weight(w, ob, m=4):
    """``topi.nn.winograd_weight_transform_NCHWc`` of a constant kernel, in numpy."""
    from ..topi.nn.winograd import winograd_matrices
    o, c, r, _ = w.shape
    g = winograd_matrices(m, r)[2]
    u = np.einsum("ea,ocab,fb->efco", g, w.astype(np.float64), g).reshape(-1, c, o // ob, ob)
    return np.ascontiguousarray(u.transpose(0, 2, 1, 3)).astype(np.float32)


def conv(c, h, o, k, stride, blocked, winograd=False):
    pad = k // 2

    def row(rng):
        a = rng.standard_normal((1, c, h, h), dtype=np.float32)
        w = (rng.standard_normal((o, c, k, k), dtype=np.float32) / np.sqrt(c * k * k)).astype(np.float32)
        b = rng.standard_normal(o, dtype=np.float32)
        reference = _ort_conv(w, b, stride, pad)
        ref_name = "ort" if reference is not None else "numpy"
        reference = reference or _numpy_conv(w, b, stride, pad)
        oh = (h + 2 * pad - k) // stride + 1
        want = reference(a)
        if winograd:
            ic, oc = topi.x86.nchwc_blocks(c, o)
            u = _winograd_weight(w, oc)
            X = te.placeholder((1, c // ic, h, h, ic), name="data")
            U = te.placeholder(u.shape, name="U")
            B = te.placeholder((1, o // oc, 1, 1, oc), name="bias")
            out = topi.nn.relu(topi.add(topi.nn.conv2d_winograd_NCHWc(X, U, pad), B))
            f, build_s = _build(topi.x86.schedule_conv2d_winograd_NCHWc([out]), [X, U, B, out])
            args = [ref.layout_transform_python(a, "NCHW", f"NCHW{ic}c"), u, b.reshape(1, o // oc, 1, 1, oc)]
            to = _poisoned((1, o // oc, oh, oh, oc))
            check = lambda: ref.layout_transform_python(to.numpy(), f"NCHW{oc}c", "NCHW")  # noqa: E731
            name = f"winograd{k} {h}px {c}->{o}"
        elif blocked:
            ic, oc = topi.x86.nchwc_blocks(c, o)
            X = te.placeholder((1, c // ic, h, h, ic), name="data")
            W = te.placeholder((o // oc, c // ic, k, k, ic, oc), name="kernel")
            B = te.placeholder((1, o // oc, 1, 1, oc), name="bias")
            out = topi.nn.relu(topi.add(topi.nn.conv2d_NCHWc(X, W, stride, pad, 1, f"NCHW{ic}c", f"NCHW{oc}c"), B))
            f, build_s = _build(topi.x86.schedule_conv2d_NCHWc([out]), [X, W, B, out])
            args = [ref.layout_transform_python(a, "NCHW", f"NCHW{ic}c"),
                    w.reshape(o // oc, oc, c // ic, ic, k, k).transpose(0, 2, 4, 5, 3, 1).copy(),
                    b.reshape(1, o // oc, 1, 1, oc)]
            to = _poisoned((1, o // oc, oh, oh, oc))
            check = lambda: ref.layout_transform_python(to.numpy(), f"NCHW{oc}c", "NCHW")  # noqa: E731
            name = f"NCHWc{k} {h}px {c}->{o}/{stride}"
        else:
            X = te.placeholder((1, c, h, h), name="data")
            W = te.placeholder((o, c, k, k), name="kernel")
            B = te.placeholder((o,), name="bias")
            out = topi.nn.relu(topi.nn.bias_add(topi.nn.conv2d_nchw(X, W, stride, pad, 1), B))
            f, build_s = _build(topi.x86.schedule_conv2d_nchw([out]), [X, W, B, out])
            args = [a, w, b]
            to = _poisoned((1, o, oh, oh))
            check = to.numpy
            name = f"conv{k} {h}px {c}->{o}/{stride}"
        call = _prepare(f, *[nd.array(x) for x in args], to)
        call()
        np.testing.assert_allclose(check(), want, rtol=1e-3, atol=1e-3)
        kt, rt = side_by_side(call, lambda: reference(a))
        return Row(name, ref_name, kt, rt, build_s, flops=2.0 * o * c * k * k * oh * oh)
    return row


def dense(m, k, n):
    def row(rng):
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        X, W, B = te.placeholder((m, k), name="x"), te.placeholder((n, k), name="w"), te.placeholder((n,), name="b")
        out = topi.nn.dense(X, W, B)
        f, build_s = _build(topi.x86.schedule_dense([out]), [X, W, B, out])
        to = _poisoned((m, n))
        call = _prepare(f, nd.array(x), nd.array(w), nd.array(b), to)
        call()
        res = np.empty((m, n), np.float32)
        np.testing.assert_allclose(to.numpy(), x @ w.T + b, rtol=1e-3, atol=1e-3)
        kt, rt = side_by_side(call, lambda: np.add(np.matmul(x, w.T, out=res), b, out=res))
        return Row(f"dense {m}x{k}->{n}+bias", "numpy", kt, rt, build_s, flops=2.0 * m * k * n)
    return row


def _ort_single(node, inits=()):
    """A callable running one ONNX node on input "x" in onnxruntime (None when it is not installed)."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return None
    graph = helper.make_graph([node], "op", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads()
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return lambda a: sess.run(None, {"x": a})[0]


def single(name, shape, make, schedule, node, numpy_ref, inits=()):
    """A row for one operator (pooling, depthwise convolution) against onnxruntime's node (numpy without it)."""
    def row(rng):
        from onnx import helper, numpy_helper
        a = rng.standard_normal(shape, dtype=np.float32)
        consts = {k: v(rng) for k, v in inits}
        X = te.placeholder(shape, name="x")
        params = {k: te.placeholder(v.shape, name=k) for k, v in consts.items()}
        out = make(X, **params)
        f, build_s = _build(schedule([out]), [X, *params.values(), out])
        reference = _ort_single(helper.make_node(*node[:3], **node[3]),
                                [numpy_helper.from_array(v, k) for k, v in consts.items()])
        ref_name = "ort" if reference is not None else "numpy"
        reference = reference or (lambda x: numpy_ref(x, **consts))
        to = _poisoned(tuple(int(d) for d in out.shape))
        call = _prepare(f, nd.array(a), *[nd.array(v) for v in consts.values()], to)
        call()
        np.testing.assert_allclose(to.numpy(), reference(a), rtol=1e-4, atol=1e-4)
        kt, rt = side_by_side(call, lambda: reference(a))
        return Row(name, ref_name, kt, rt, build_s, bytes=4.0 * (a.size + to.numpy().size))
    return row


OPS = [
    single("maxpool 3x3/2 112px 64", (1, 64, 112, 112), lambda x: topi.nn.pool2d(x, 3, 2, 1, 1, "max"),
           lambda outs: topi.x86.schedule_pool(outs, "NCHW"),
           ("MaxPool", ["x"], ["y"], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
           lambda x: ref.pool2d_python(x, 3, 2, 1, 1, "max")),
    single("global avgpool 7px 2048", (1, 2048, 7, 7), lambda x: topi.nn.global_pool(x, "avg"),
           topi.x86.schedule_adaptive_pool, ("GlobalAveragePool", ["x"], ["y"], {}),
           lambda x: x.mean(axis=(2, 3), keepdims=True)),
    single("depthwise3 112px 32", (1, 32, 112, 112), lambda x, w: topi.nn.depthwise_conv2d_nchw(x, w, 1, 1, 1),
           topi.x86.schedule_depthwise_conv2d_nchw, ("Conv", ["x", "w"], ["y"], {"group": 32, "pads": [1, 1, 1, 1]}),
           lambda x, w: ref.depthwise_conv2d_nchw_python(x, w, 1, 1),
           inits=[("w", lambda rng: rng.standard_normal((32, 1, 3, 3), dtype=np.float32))]),
    # reductions over a leading / middle axis (what relay's sum / mean / max groups get)
    single("mean axis 1 32x256x64", (32, 256, 64), lambda x: topi.mean(x, (1,), True), topi.x86.schedule_reduce,
           ("ReduceMean", ["x"], ["y"], {"axes": [1], "keepdims": 1}), lambda x: x.mean(axis=1, keepdims=True)),
    single("max axis 0 512x512", (512, 512), lambda x: topi.max(x, (0,), True), topi.x86.schedule_reduce,
           ("ReduceMax", ["x"], ["y"], {"axes": [0], "keepdims": 1}), lambda x: x.max(axis=0, keepdims=True)),
]

ROWS = [conv(*layer, blocked=False) for layer in LAYERS] + [conv(*layer, blocked=True) for layer in LAYERS] + \
    [conv(*layer, blocked=True, winograd=True) for layer in LAYERS if layer[3] == 3 and layer[4] == 1] + \
    [dense(1, 2048, 1000)] + OPS


if __name__ == "__main__":
    from .table import run
    run(ROWS)
