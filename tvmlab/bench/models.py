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


# ---------------------------------------------------------------- transformers, as torch.onnx exports them
class TransformerBuilder(OnnxBuilder):
    """The pieces of BERT-, GPT-2- and ViT-style graphs spelled as ``torch.onnx.export`` writes them:
    ``MatMul`` by a (in, out) weight then ``Add`` of the bias, heads split by a ``Reshape`` whose shape is
    computed from ``Shape`` / ``Gather`` / ``Unsqueeze`` / ``Concat``, ``Transpose``, 4-D ``MatMul``.

    ``layer_norm``: "op" (LayerNormalization, opset 17) or "manual" (ReduceMean / Sub / Pow / Sqrt / Div);
    ``gelu``: "erf" (x * 0.5 * (1 + erf(x / sqrt 2))), "tanh" (GPT-2's gelu_new, with Pow) or "op" (Gelu,
    opset 20)."""

    def __init__(self, seed=0, opset=17, layer_norm="op", gelu="erf"):
        need = max(17 if layer_norm == "op" else 0, 20 if gelu == "op" else 0)
        if opset < need:
            raise ValueError(f"layer_norm={layer_norm!r}, gelu={gelu!r} need opset {need} or later, got {opset}")
        if layer_norm not in ("op", "manual") or gelu not in ("erf", "tanh", "op"):
            raise ValueError(f"layer_norm must be 'op' or 'manual', gelu 'erf', 'tanh' or 'op'; got "
                             f"{layer_norm!r}, {gelu!r}")
        super().__init__(seed, opset)
        self.ln_kind, self.gelu_kind = layer_norm, gelu

    def const(self, value, dtype=np.float32, prefix="c"):
        return self.weight(prefix, np.asarray(value, dtype))

    def ints(self, values):
        return self.const(values, np.int64, "shape")

    def unsqueeze(self, x, axes):
        if self.opset >= 13:
            return self.op("Unsqueeze", [x, self.ints(axes)])
        return self.op("Unsqueeze", [x], axes=list(axes))

    def reduce_mean(self, x, axes):
        if self.opset >= 18:
            return self.op("ReduceMean", [x, self.ints(axes)], keepdims=1)
        return self.op("ReduceMean", [x], axes=list(axes), keepdims=1)

    def dim(self, x, axis):
        """``x.size(axis)`` as torch exports it: a 1-element int64 tensor (Shape, Gather, Unsqueeze)."""
        s = self.op("Gather", [self.op("Shape", [x]), self.const(axis, np.int64, "axis")], axis=0)
        return self.unsqueeze(s, [0])

    def view(self, x, sizes):
        """``x.view(...)`` with sizes from ``x.size(i)`` (ints: that axis of ``x``) or constants (tuples)."""
        parts = [self.dim(x, s) if isinstance(s, int) else self.ints(list(s)) for s in sizes]
        return self.op("Reshape", [x, self.op("Concat", parts, axis=0)])

    def linear(self, x, cin, cout, std=None):
        std = 1.0 / np.sqrt(cin) if std is None else std
        w = self.weight("w", (self.rng.standard_normal((cin, cout)) * std).astype(np.float32))
        b = self.weight("b", self.rng.uniform(-0.1, 0.1, cout).astype(np.float32))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x, hidden, eps=1e-5):
        g = self.weight("ln_g", self.rng.uniform(0.8, 1.2, hidden).astype(np.float32))
        b = self.weight("ln_b", self.rng.uniform(-0.1, 0.1, hidden).astype(np.float32))
        if self.ln_kind == "op":
            return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)
        d = self.op("Sub", [x, self.reduce_mean(x, [-1])])
        var = self.reduce_mean(self.op("Pow", [d, self.const(2.0)]), [-1])
        y = self.op("Div", [d, self.op("Sqrt", [self.op("Add", [var, self.const(eps)])])])
        return self.op("Add", [self.op("Mul", [y, g]), b])

    def gelu(self, x):
        if self.gelu_kind == "op":
            return self.op("Gelu", [x])
        if self.gelu_kind == "erf":
            e = self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0))])])
            return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.const(1.0)])]), self.const(0.5)])
        cube = self.op("Pow", [x, self.const(3.0)])
        inner = self.op("Add", [x, self.op("Mul", [cube, self.const(0.044715)])])
        t = self.op("Tanh", [self.op("Mul", [inner, self.const(np.sqrt(2.0 / np.pi))])])
        return self.op("Mul", [self.op("Mul", [x, self.const(0.5)]), self.op("Add", [t, self.const(1.0)])])

    def heads(self, x, heads, head_dim, key=False):
        """(B, S, H) -> (B, heads, S, d), or (B, heads, d, S) for a key (``transpose(-1, -2)`` folded in)."""
        y = self.view(x, [0, 1, (heads, head_dim)])
        return self.op("Transpose", [y], perm=[0, 2, 3, 1] if key else [0, 2, 1, 3])

    def merge_heads(self, x, hidden):
        y = self.op("Transpose", [x], perm=[0, 2, 1, 3])
        return self.view(y, [0, 1, (hidden,)])

    def attention(self, q, k, v, heads, head_dim, hidden, mask=None, causal=None):
        """softmax(q k^T / sqrt(d) + mask) v, heads merged back; ``mask`` is added, ``causal`` (a bool
        (S, S) tensor) selects the scores kept (``Where``, the rest set to the float minimum)."""
        s = self.op("Div", [self.op("MatMul", [q, k]), self.const(np.sqrt(head_dim))])
        if causal is not None:
            s = self.op("Where", [causal, s, self.const(np.finfo(np.float32).min)])
        if mask is not None:
            s = self.op("Add", [s, mask])
        p = self.op("Softmax", [s], axis=-1 if self.opset >= 13 else 3)
        return self.merge_heads(self.op("MatMul", [p, v]), hidden)

    def mlp(self, x, hidden, inner):
        return self.linear(self.gelu(self.linear(x, hidden, inner)), inner, hidden)

    def embedding(self, ids, vocab, hidden, std=0.5):
        table = self.weight("emb", (self.rng.standard_normal((vocab, hidden)) * std).astype(np.float32))
        return self.op("Gather", [table, ids], axis=0)


def bert(layers=12, hidden=768, heads=12, seq=128, batch=1, vocab=30522, inner=None, max_pos=512, seed=0,
         opset=17, layer_norm="op", gelu="erf"):
    """A BERT-style encoder (post-norm): inputs "input_ids" and "attention_mask" (int64, (batch, seq)),
    output the last hidden state (batch, seq, hidden). Word, position and token-type embeddings (Gather;
    positions a constant slice of a buffer), the padding mask as ``(1 - mask) * float min`` added to the
    scores, separate Q/K/V projections, erf GELU. ``bert()`` is BERT-base; ``bert(layers=2, hidden=64,
    heads=4, seq=16, vocab=100)`` a small one for tests."""
    b = TransformerBuilder(seed, opset, layer_norm, gelu)
    head_dim, inner = hidden // heads, inner or 4 * hidden
    ids = b.input("input_ids", (batch, seq), np.int64)
    mask = b.input("attention_mask", (batch, seq), np.int64)
    pos_buf = b.const(np.arange(max_pos)[None], np.int64, "position_ids")
    pos = b.op("Slice", [pos_buf, b.ints([0]), b.dim(ids, 1), b.ints([1])])
    types = b.const(np.zeros((1, max_pos)), np.int64, "token_type_ids")
    types = b.op("Slice", [types, b.ints([0]), b.dim(ids, 1), b.ints([1])])
    x = b.op("Add", [b.embedding(ids, vocab, hidden), b.embedding(types, 2, hidden)])
    x = b.layer_norm(b.op("Add", [x, b.embedding(pos, max_pos, hidden)]), hidden, 1e-12)
    m = b.op("Cast", [b.unsqueeze(b.unsqueeze(mask, [1]), [2])], to=b.onnx.TensorProto.FLOAT)
    m = b.op("Mul", [b.op("Sub", [b.const(1.0), m]), b.const(np.finfo(np.float32).min)])
    for _ in range(layers):
        q, k, v = (b.linear(x, hidden, hidden) for _ in range(3))
        a = b.attention(b.heads(q, heads, head_dim), b.heads(k, heads, head_dim, key=True),
                        b.heads(v, heads, head_dim), heads, head_dim, hidden, mask=m)
        x = b.layer_norm(b.op("Add", [b.linear(a, hidden, hidden), x]), hidden, 1e-12)
        x = b.layer_norm(b.op("Add", [b.mlp(x, hidden, inner), x]), hidden, 1e-12)
    return b.model([x], "bert")


def gpt2(layers=12, hidden=768, heads=12, seq=128, batch=1, vocab=50257, max_pos=1024, seed=0, opset=14,
         layer_norm="manual", gelu="tanh", causal="trilu"):
    """A GPT-2-style decoder (pre-norm): input "input_ids" (int64, (batch, seq)), output the final hidden
    state after ``ln_f``. One (hidden, 3 hidden) projection split into Q, K, V (``Split``), positions from
    ``Range`` over the input's length, the causal mask either ``Trilu`` of ones (``causal="trilu"``) or
    a constant lower-triangular buffer sliced to the length (``"constant"``), applied with ``Where``;
    tanh GELU with ``Pow``. ``gpt2()`` is GPT-2 small (without the LM head)."""
    b = TransformerBuilder(seed, opset, layer_norm, gelu)
    head_dim = hidden // heads
    ids = b.input("input_ids", (batch, seq), np.int64)
    n = b.op("Gather", [b.op("Shape", [ids]), b.const(1, np.int64, "axis")], axis=0)
    pos = b.unsqueeze(b.op("Range", [b.const(0, np.int64), n, b.const(1, np.int64)]), [0])
    x = b.op("Add", [b.embedding(ids, vocab, hidden), b.embedding(pos, max_pos, hidden, std=0.1)])
    length = b.unsqueeze(n, [0])
    if causal == "trilu":
        ones = b.op("ConstantOfShape", [b.op("Concat", [length, length], axis=0)],
                    value=b.onnx.helper.make_tensor("one", b.onnx.TensorProto.BOOL, [1], [True]))
        keep = b.op("Trilu", [ones], upper=0)
    elif causal == "constant":
        buf = b.const(np.tril(np.ones((max_pos, max_pos), bool))[None, None], bool, "bias")
        zero = b.ints([0, 0])
        keep = b.op("Slice", [buf, zero, b.op("Concat", [length, length], axis=0), b.ints([2, 3])])
    else:
        raise ValueError(f"causal must be 'trilu' or 'constant', got {causal!r}")
    for _ in range(layers):
        qkv = b.linear(b.layer_norm(x, hidden), hidden, 3 * hidden)
        if b.opset >= 13:
            q, k, v = b.op("Split", [qkv, b.ints([hidden] * 3)], n_out=3, axis=2)
        else:
            q, k, v = b.op("Split", [qkv], n_out=3, axis=2, split=[hidden] * 3)
        a = b.attention(b.heads(q, heads, head_dim), b.heads(k, heads, head_dim, key=True),
                        b.heads(v, heads, head_dim), heads, head_dim, hidden, causal=keep)
        x = b.op("Add", [x, b.linear(a, hidden, hidden)])
        x = b.op("Add", [x, b.mlp(b.layer_norm(x, hidden), hidden, 4 * hidden)])
    return b.model([b.layer_norm(x, hidden)], "gpt2")


def vit(layers=12, hidden=768, heads=12, image=224, patch=16, channels=3, classes=1000, batch=1, seed=0,
        opset=20, layer_norm="op", gelu="op"):
    """A ViT-style encoder (pre-norm): input "pixel_values" (batch, channels, image, image), output the
    class logits. Patch embedding by a strided Conv, ``flatten(2).transpose(1, 2)`` (a Reshape with a
    computed shape and a Transpose), a class token expanded to the batch and concatenated in front, a
    position embedding added; the classifier reads the class token (Gather). ``vit()`` is ViT-B/16."""
    b = TransformerBuilder(seed, opset, layer_norm, gelu)
    head_dim, tokens = hidden // heads, (image // patch) ** 2 + 1
    x = b.input("pixel_values", (batch, channels, image, image))
    std = 1.0 / np.sqrt(channels * patch * patch)
    w = b.weight("patch_w", (b.rng.standard_normal((hidden, channels, patch, patch)) * std).astype(np.float32))
    pb = b.weight("patch_b", b.rng.uniform(-0.1, 0.1, hidden).astype(np.float32))
    x = b.op("Conv", [x, w, pb], kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.op("Transpose", [b.view(x, [0, 1, (-1,)])], perm=[0, 2, 1])
    cls = b.weight("cls", (b.rng.standard_normal((1, 1, hidden)) * 0.5).astype(np.float32))
    size = b.op("Concat", [b.dim(x, 0), b.ints([-1, -1])], axis=0)      # expand(batch, -1, -1) as torch writes it
    size = b.op("Where", [b.op("Equal", [size, b.ints([-1])]), b.ints([1]), size])
    cls = b.op("Expand", [cls, size])
    pos = b.weight("pos", (b.rng.standard_normal((1, tokens, hidden)) * 0.1).astype(np.float32))
    x = b.op("Add", [b.op("Concat", [cls, x], axis=1), pos])
    for _ in range(layers):
        h = b.layer_norm(x, hidden, 1e-12)
        q, k, v = (b.linear(h, hidden, hidden) for _ in range(3))
        a = b.attention(b.heads(q, heads, head_dim), b.heads(k, heads, head_dim, key=True),
                        b.heads(v, heads, head_dim), heads, head_dim, hidden)
        x = b.op("Add", [b.linear(a, hidden, hidden), x])
        x = b.op("Add", [b.mlp(b.layer_norm(x, hidden, 1e-12), hidden, 4 * hidden), x])
    x = b.layer_norm(x, hidden, 1e-12)
    first = b.op("Gather", [x, b.const(0, np.int64, "index")], axis=1)
    return b.model([b.gemm(first, hidden, classes)], "vit")
