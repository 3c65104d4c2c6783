"""ONNX models built with onnx.helper and random weights (nothing downloaded).

``resnet50()`` is ResNet-50 v1.5 shaped (bottlenecks 3-4-6-3, stride in the
3x3 convolution, 224x224 input); ``small_cnn()``, ``residual_block()`` and
``inception_block()`` are the small networks the tests, notebook 08 and
``python -m tvmlab.bench.graph`` share. Weights are scaled (He
initialisation, batch-norm statistics near 1) so activations stay in range
through fifty layers and comparisons with onnxruntime stay meaningful.
"""
from __future__ import annotations

import numpy as np


class OnnxBuilder:
    """Appends nodes and random initializers; ``model()`` wraps them as a checked ModelProto."""

    def __init__(self, seed=0, opset=13):
        import onnx
        self.onnx = onnx
        self.h = onnx.helper
        self.rng = np.random.default_rng(seed)
        self.opset = opset
        self.nodes, self.inits, self.inputs = [], [], []
        self._count = 0

    def name(self, prefix):
        self._count += 1
        return f"{prefix}{self._count}"

    def input(self, name, shape, dtype=np.float32):
        elem = self.h.np_dtype_to_tensor_dtype(np.dtype(dtype))
        self.inputs.append(self.h.make_tensor_value_info(name, elem, list(shape)))
        return name

    def weight(self, prefix, value):
        name = self.name(prefix)
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type.lower() + "_") for _ in range(n_out)]
        self.nodes.append(self.h.make_node(op_type, list(inputs), outs, name=self.name(op_type + "_n"),
                                           **attrs))
        return outs[0] if n_out == 1 else outs

    # -- layers -------------------------------------------------------------
    def conv(self, x, cin, cout, k, stride=1, pad=None, groups=1, bias=False):
        pad = k // 2 if pad is None else pad
        std = np.sqrt(2.0 / (cin // groups * k * k))
        w = self.weight("w", (self.rng.standard_normal((cout, cin // groups, k, k)) * std).astype(np.float32))
        ins = [x, w]
        if bias:
            ins.append(self.weight("b", self.rng.uniform(-0.1, 0.1, cout).astype(np.float32)))
        return self.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                       group=groups)

    def bn(self, x, c, scale=1.0):
        r = self.rng
        params = [r.uniform(0.5, 1.0, c) * scale, r.uniform(-0.1, 0.1, c),
                  r.uniform(-0.1, 0.1, c), r.uniform(0.5, 1.5, c)]
        names = [self.weight(p, v.astype(np.float32)) for p, v in zip(("gamma", "beta", "mean", "var"), params)]
        return self.op("BatchNormalization", [x] + names, epsilon=1e-5)

    def relu(self, x):
        return self.op("Relu", [x])

    def gemm(self, x, cin, cout):
        w = self.weight("fc_w", (self.rng.standard_normal((cout, cin)) / np.sqrt(cin)).astype(np.float32))
        b = self.weight("fc_b", self.rng.uniform(-0.1, 0.1, cout).astype(np.float32))
        return self.op("Gemm", [x, w, b], transB=1)

    def model(self, outputs, name="model"):
        outs = [self.h.make_tensor_value_info(o, self.onnx.TensorProto.FLOAT, None) for o in outputs]
        graph = self.h.make_graph(self.nodes, name, self.inputs, outs, initializer=self.inits)
        return finish_model(graph, self.opset)


def finish_model(graph, opset):
    """A checked ModelProto of ``graph`` at ``opset``: outputs get their inferred types, the IR version
    is the oldest that carries the opset (what onnxruntime reads)."""
    import onnx
    h = onnx.helper
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="tvmlab")
    model.ir_version = h.find_min_ir_version_for([h.make_opsetid("", opset)])
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    for out in model.graph.output:
        for info in list(inferred.graph.output) + list(inferred.graph.value_info):
            if info.name == out.name and info.type.tensor_type.HasField("shape"):
                out.type.CopyFrom(info.type)
                break
    onnx.checker.check_model(model)
    return model


def _bottleneck(b, x, cin, width, stride):
    cout = width * 4
    y = b.relu(b.bn(b.conv(x, cin, width, 1), width))
    y = b.relu(b.bn(b.conv(y, width, width, 3, stride=stride), width))
    y = b.bn(b.conv(y, width, cout, 1), cout, scale=0.2)
    short = x
    if stride != 1 or cin != cout:
        short = b.bn(b.conv(x, cin, cout, 1, stride=stride), cout)
    return b.relu(b.op("Add", [y, short])), cout


def resnet50(batch=1, size=224, classes=1000, seed=0, opset=13):
    """ResNet-50 v1.5 with random weights: input "data" (batch, 3, size, size), output logits."""
    b = OnnxBuilder(seed, opset)
    x = b.input("data", (batch, 3, size, size))
    x = b.relu(b.bn(b.conv(x, 3, 64, 7, stride=2, pad=3), 64))
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for k in range(blocks):
            x, c = _bottleneck(b, x, c, width, stride if k == 0 else 1)
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    return b.model([b.gemm(x, c, classes)], "resnet50")


def small_cnn(batch=1, size=32, classes=10, seed=0, opset=13):
    """conv-bn-relu, max pool, a residual pair of convs, global pool, dense, softmax."""
    b = OnnxBuilder(seed, opset)
    x = b.input("data", (batch, 3, size, size))
    x = b.relu(b.bn(b.conv(x, 3, 16, 3), 16))
    x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    y = b.relu(b.bn(b.conv(x, 16, 16, 3), 16))
    y = b.bn(b.conv(y, 16, 16, 3), 16, scale=0.5)
    x = b.relu(b.op("Add", [x, y]))
    x = b.relu(b.conv(x, 16, 32, 3, stride=2, bias=True))
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    x = b.op("Softmax", [b.gemm(x, 32, classes)], axis=1)
    return b.model([x], "small_cnn")


def residual_block(batch=1, channels=16, size=14, seed=0, opset=13):
    """relu(x + bn(conv(relu(bn(conv(x))))))."""
    b = OnnxBuilder(seed, opset)
    x = b.input("data", (batch, channels, size, size))
    y = b.relu(b.bn(b.conv(x, channels, channels, 3), channels))
    y = b.bn(b.conv(y, channels, channels, 3), channels)
    return b.model([b.relu(b.op("Add", [x, y]))], "residual_block")


def inception_block(batch=1, channels=16, size=12, seed=0, opset=13):
    """Four branches (1x1; 1x1-3x3; 1x1-5x5; 3x3 max pool-1x1) concatenated on channels."""
    b = OnnxBuilder(seed, opset)
    x = b.input("data", (batch, channels, size, size))
    b1 = b.relu(b.conv(x, channels, 8, 1, bias=True))
    b2 = b.relu(b.conv(b.relu(b.conv(x, channels, 6, 1, bias=True)), 6, 8, 3, bias=True))
    b3 = b.relu(b.conv(b.relu(b.conv(x, channels, 4, 1, bias=True)), 4, 4, 5, bias=True))
    pool = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    b4 = b.relu(b.conv(pool, channels, 4, 1, bias=True))
    return b.model([b.op("Concat", [b1, b2, b3, b4], axis=1)], "inception_block")


def mobilenet_v2(batch=1, size=224, classes=1000, width_mult=0.5, seed=0, opset=13):
    """MobileNet-V2 with random weights: input "data" (batch, 3, size, size), output logits.

    Inverted residual blocks (1x1 expand + relu6, 3x3 depthwise stride 1/2 +
    relu6, 1x1 project, residual add when shapes agree), relu6 as ``Clip``;
    ``width_mult`` scales the channels (rounded to multiples of 8, as the paper)."""
    b = OnnxBuilder(seed, opset)

    def ch(c):
        return max(8, int(c * width_mult + 4) // 8 * 8)

    def relu6(x):
        return b.op("Clip", [x, b.weight("lo", np.float32(0.0)), b.weight("hi", np.float32(6.0))])

    x = b.input("data", (batch, 3, size, size))
    c = ch(32)
    x = relu6(b.bn(b.conv(x, 3, c, 3, stride=2), c))
    for t, cout, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                          (6, 160, 3, 2), (6, 320, 1, 1)):
        cout = ch(cout)
        for k in range(n):
            stride = s if k == 0 else 1
            hidden = c * t
            y = x if t == 1 else relu6(b.bn(b.conv(x, c, hidden, 1), hidden))
            y = relu6(b.bn(b.conv(y, hidden, hidden, 3, stride=stride, groups=hidden), hidden))
            y = b.bn(b.conv(y, hidden, cout, 1), cout, scale=0.3)
            x = b.op("Add", [x, y]) if stride == 1 and c == cout else y
            c = cout
    last = max(1280, ch(1280))
    x = relu6(b.bn(b.conv(x, c, last, 1), last))
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    return b.model([b.gemm(x, last, classes)], "mobilenet_v2")
