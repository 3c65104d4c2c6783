"""relay.frontend.from_pytorch on torch.jit.trace-d modules, against torch itself.

torch is optional: without it these tests skip (torch is not a dependency),
except the one that checks the clear error from_pytorch gives then.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tvmlab import relay
from tvmlab.errors import TVMLabError

HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (optional dependency)")


@pytest.mark.skipif(HAVE_TORCH, reason="torch is installed")
def test_without_torch_the_error_says_so():
    with pytest.raises(TVMLabError, match="needs torch"):
        relay.frontend.from_pytorch(object(), [("x", (1, 3))])


def _run(traced, shape, x):
    import tvmlab as tvm
    from tvmlab.contrib import graph_executor
    mod, params = relay.frontend.from_pytorch(traced, [("input0", shape)])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    g.set_input("input0", x)
    g.run()
    return g.get_output(0).numpy()


@needs_torch
def test_small_cnn_matches_torch():
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2, bias=False)
            self.pool = nn.MaxPool2d(2, ceil_mode=True)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = nn.functional.leaky_relu(self.conv2(y), 0.1) + 0.5 * nn.functional.avg_pool2d(y, 2)
            y = self.pool(y)
            y = nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)
            return torch.softmax(self.fc(y), dim=1)

    torch.manual_seed(0)
    net = Net().eval()
    with torch.no_grad():
        net.bn1.running_mean.uniform_(-0.5, 0.5)
        net.bn1.running_var.uniform_(0.5, 1.5)
    x = np.random.default_rng(0).standard_normal((1, 3, 14, 14)).astype(np.float32)
    traced = torch.jit.trace(net, torch.from_numpy(x))
    want = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(_run(traced, x.shape, x), want, rtol=1e-3, atol=1e-5)


@needs_torch
def test_mlp_with_view_and_cat():
    import torch
    import torch.nn as nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(12, 7), nn.Linear(12, 3)

        def forward(self, x):
            x = x.view(x.size(0), -1)
            return torch.cat([torch.tanh(self.a(x)), torch.sigmoid(self.b(x))], dim=1).transpose(0, 1)

    net = MLP().eval()
    x = np.random.default_rng(1).standard_normal((4, 3, 4)).astype(np.float32)
    traced = torch.jit.trace(net, torch.from_numpy(x))
    np.testing.assert_allclose(_run(traced, x.shape, x), net(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-3, atol=1e-5)


@needs_torch
def test_transposed_conv_hardswish_adaptive_max_pool():
    import torch
    import torch.nn as nn

    net = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), nn.Hardswish(),
                        nn.AdaptiveMaxPool2d(1),
                        nn.Flatten(), nn.Linear(6, 3), nn.LogSoftmax(dim=1)).eval()
    x = np.random.default_rng(2).standard_normal((2, 4, 5, 7)).astype(np.float32)
    traced = torch.jit.trace(net, torch.from_numpy(x))
    np.testing.assert_allclose(_run(traced, x.shape, x), net(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-3, atol=1e-5)


def _blocks():
    import torch
    import torch.nn as nn

    class SqueezeExcite(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.fc1, self.fc2 = nn.Conv2d(c, 4, 1), nn.Conv2d(4, c, 1)

        def forward(self, x):
            pooled = nn.functional.adaptive_avg_pool2d(x, 1)
            return x * torch.sigmoid(self.fc2(nn.functional.silu(self.fc1(pooled))))

    class InvertedResidual(nn.Module):           # MobileNet-style: relu6, depthwise, squeeze-excite
        def __init__(self):
            super().__init__()
            self.pw, self.bn1 = nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16)
            self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False)
            self.bn2, self.se, self.proj = nn.BatchNorm2d(16), SqueezeExcite(16), nn.Conv2d(16, 8, 1)

        def forward(self, x):
            y = nn.functional.relu6(self.bn1(self.pw(x)))
            y = nn.functional.hardtanh(self.bn2(self.dw(y)), 0.0, 6.0)
            return x + self.proj(self.se(y))

    class ChannelShuffle(nn.Module):             # chunk, view/transpose/contiguous, upsample, slices
        def forward(self, x):
            a, b = x.chunk(2, dim=1)
            n, c, h, w = x.shape
            y = torch.cat([a, torch.relu(b)], 1).view(n, 2, c // 2, h, w).transpose(1, 2).contiguous()
            y = nn.functional.interpolate(y.view(n, c, h, w), scale_factor=2, mode="nearest")
            return y[:, 1:5, ::2]

    class TransformerMLP(nn.Module):             # layer_norm, gelu, batched matmul, softmax
        def __init__(self):
            super().__init__()
            self.ln, self.fc, self.fc2 = nn.LayerNorm(12), nn.Linear(12, 24), nn.Linear(24, 12)

        def forward(self, x):
            h = self.fc2(nn.functional.gelu(self.fc(self.ln(x))))
            att = torch.softmax(torch.matmul(x, x.transpose(-1, -2)) / 3.0, dim=-1)
            return torch.matmul(att, h) + x[:, 0:1, :]

    return [(InvertedResidual, (1, 8, 9, 9)), (ChannelShuffle, (1, 8, 5, 6)), (TransformerMLP, (2, 5, 12))]


@needs_torch
@pytest.mark.parametrize("k", range(3), ids=["inverted_residual", "channel_shuffle", "transformer_mlp"])
def test_common_blocks(k):
    import torch
    cls, shape = _blocks()[k]
    torch.manual_seed(k)
    net = cls().eval()
    x = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
    traced = torch.jit.trace(net, torch.from_numpy(x))
    np.testing.assert_allclose(_run(traced, shape, x), net(torch.from_numpy(x)).detach().numpy(),
                               rtol=1e-3, atol=1e-5)


@needs_torch
def test_tvm_pytorch_tutorial_spelling():
    """TVM's "Compile PyTorch Models" tutorial steps: trace, eval, shape_list, Target with host, relay.build."""
    import torch
    import tvmlab as tvm
    from tvmlab.contrib import graph_executor
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(4, 2)).eval()
    img = np.random.default_rng(4).standard_normal((1, 3, 10, 10)).astype(np.float32)
    scripted_model = torch.jit.trace(model, torch.from_numpy(img)).eval()
    input_name = "input0"
    shape_list = [(input_name, img.shape)]
    mod, params = relay.frontend.from_pytorch(scripted_model, shape_list)
    target = tvm.target.Target("llvm", host="llvm")
    dev = tvm.cpu(0)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target, params=params)
    m = graph_executor.GraphModule(lib["default"](dev))
    m.set_input(input_name, tvm.nd.array(img))
    m.run()
    tvm_output = m.get_output(0)
    np.testing.assert_allclose(tvm_output.numpy(), model(torch.from_numpy(img)).detach().numpy(),
                               rtol=1e-3, atol=1e-5)


@needs_torch
def test_unsupported_op_and_bad_input_infos():
    import torch

    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.atan2(x, x)

    traced = torch.jit.trace(Odd(), torch.ones(3))
    with pytest.raises(relay.frontend.OpNotImplemented, match=r"aten::atan2.*Supported operators.*aten::relu"):
        relay.frontend.from_pytorch(traced, [("x", (3,))])
    relu = torch.jit.trace(torch.nn.ReLU(), torch.ones(3))
    with pytest.raises(TVMLabError, match="takes 1 inputs, but input_infos gives 2"):
        relay.frontend.from_pytorch(relu, [("x", (3,)), ("y", (3,))])
    with pytest.raises(TVMLabError, match=r"\(name, shape\)"):
        relay.frontend.from_pytorch(relu, ["x"])
    with pytest.raises(TVMLabError, match="expected a shape of ints and a dtype name"):
        relay.frontend.from_pytorch(relu, [("x", ((3,), "floaty"))])
    with pytest.raises(TVMLabError, match="must be positive"):
        relay.frontend.from_pytorch(relu, [("x", (0,))])
    with pytest.raises(TVMLabError, match="torch.jit.trace"):
        relay.frontend.from_pytorch(Odd(), [("x", (3,))])


@needs_torch
def test_torch_onnx_export_through_from_onnx(tmp_path):
    """A model exported by torch.onnx (Shape/Gather/Concat chains for view, Constant nodes) imports."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.bn = nn.BatchNorm2d(6)
            self.fc = nn.Linear(6 * 4 * 4, 5)

        def forward(self, x):
            y = nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
            return self.fc(y.view(y.size(0), -1))

    net = Net().eval()
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    path = tmp_path / "net.onnx"
    try:
        torch.onnx.export(net, (torch.from_numpy(x),), str(path), opset_version=13, dynamo=False,
                          input_names=["data"], output_names=["out"])
    except Exception as e:      # the exporter needs packages torch does not require (onnxscript, ...)
        pytest.skip(f"torch.onnx.export unavailable: {e}")
    from onnx_util import check
    check(onnx.load(str(path)), {"data": x})
