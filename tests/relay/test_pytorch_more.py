"""from_pytorch on traced modules using comparisons, where, argmax, cumsum, prod, einsum, bmm, dtype casts
and interpolation (nearest and bilinear, any size), plus a small segmentation-style CNN and an MLP,
each against torch's own output on random inputs (tvmlab's outputs poisoned with NaN before the run).

torch is optional: without it every test here skips with that reason.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed (optional dependency)")


def _build(net, *xs):
    import torch

    import tvmlab as tvm
    from tvmlab import relay
    from tvmlab.contrib import graph_executor
    net = net.eval()
    with torch.no_grad():
        traced = torch.jit.trace(net, tuple(torch.from_numpy(x) for x in xs))
        want = net(*(torch.from_numpy(x) for x in xs))
    infos = [(f"input{k}", (x.shape, str(x.dtype))) for k, x in enumerate(xs)]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, x in enumerate(xs):
        g.set_input(f"input{k}", x)
    for i in range(g.get_num_outputs()):
        out = g.get_output(i)
        if out.dtype.startswith("float"):
            out.copyfrom(np.full(out.shape, np.nan, out.dtype))
    g.run()
    wants = want if isinstance(want, (tuple, list)) else [want]
    return [g.get_output(i).numpy() for i in range(g.get_num_outputs())], [w.numpy() for w in wants]


def check(net, *xs, rtol=1e-4, atol=1e-5):
    got, want = _build(net, *xs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{g.shape} {g.dtype} vs torch {w.shape} {w.dtype}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def rand(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def _module(fn):
    import torch

    class M(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)
    return M()


def test_compare_where_logic_and_to():
    import torch

    def f(x, y):
        pos = x > 0
        small = torch.logical_and(x.abs() < 0.5, y <= x)
        keep = torch.logical_or(pos, torch.logical_not(small))
        n = (x * 4).to(torch.int64)
        return torch.where(keep, x * 2, y), (x != y).to(torch.float32) + (x >= 0.25).float(), torch.eq(x, x), \
            n > -1.5, torch.where(n < 2, n, n * 3)
    check(_module(f), rand(3, 7, seed=1), rand(3, 7, seed=2))


@pytest.mark.parametrize("dim,keep", [(1, False), (-1, True), (None, False)])
def test_argmax_argmin(dim, keep):
    import torch
    check(_module(lambda x: (torch.argmax(x, dim=dim, keepdim=keep), torch.argmin(x, dim=dim, keepdim=keep))),
          rand(4, 9, 5, seed=3))


def test_cumsum_prod_einsum_bmm():
    import torch

    def f(a, b):
        att = torch.einsum("bid,bjd->bij", a, b)
        return torch.cumsum(att, dim=2), torch.prod(a, dim=1), torch.bmm(att, b), torch.einsum("bij->bji", a)
    check(_module(f), rand(2, 5, 4, seed=4, low=0.5, high=1.5), rand(2, 6, 4, seed=5))


@pytest.mark.parametrize("kw", [dict(scale_factor=2, mode="nearest"), dict(size=(7, 10), mode="nearest"),
                                dict(scale_factor=1.5, mode="bilinear", align_corners=False),
                                dict(size=(9, 4), mode="bilinear", align_corners=True),
                                dict(size=(3, 13), mode="bilinear", align_corners=False),
                                dict(scale_factor=1.5, mode="bicubic", align_corners=False),
                                dict(size=(4, 9), mode="bicubic", align_corners=True)],
                         ids=["nearest_x2", "nearest_size", "bilinear_x1.5", "bilinear_corners", "bilinear_size",
                              "bicubic_x1.5", "bicubic_corners"])
def test_interpolate(kw):
    import torch.nn.functional as F
    check(_module(lambda x: F.interpolate(x, **kw)), rand(2, 3, 5, 6, seed=6))


def test_small_segmentation_cnn():
    """conv-bn-relu, pool, conv, bilinear upsampling back, skip concat, 1x1 head, per-pixel argmax."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.mid = nn.Conv2d(8, 8, 3, padding=1)
            self.head = nn.Conv2d(16, 5, 1)

        def forward(self, x):
            e = self.enc(x)
            m = F.relu(self.mid(F.max_pool2d(e, 2)))
            up = F.interpolate(m, size=e.shape[2:], mode="bilinear", align_corners=False)
            logits = self.head(torch.cat([e, up], dim=1))
            return logits, logits.argmax(dim=1)
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        for p in net.enc[1].parameters():
            p.uniform_(0.5, 1.5)
        net.enc[1].running_mean.uniform_(-0.2, 0.2)
        net.enc[1].running_var.uniform_(0.5, 1.5)
    check(net, rand(2, 3, 11, 13, seed=7), rtol=1e-3, atol=1e-4)


def test_mlp_classifier():
    import torch
    from torch import nn
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(20, 32), nn.ELU(), nn.Dropout(0.3), nn.Linear(32, 16), nn.ReLU(),
                        nn.Linear(16, 7), nn.LogSoftmax(dim=-1))
    check(net, rand(5, 20, seed=8), rtol=1e-4, atol=1e-5)


def test_unknown_dtype_in_to_is_a_clear_error():
    import torch

    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    net = _module(lambda x: x.to(torch.complex64).real)
    traced = torch.jit.trace(net, (torch.from_numpy(rand(2, 3, seed=9)),))
    with pytest.raises(TVMLabError):
        relay.frontend.from_pytorch(traced, [("input0", (2, 3))])


def test_topk_sort_and_max_with_indices():
    import torch

    def f(x):
        v, i = torch.topk(x, 3, dim=1)
        s, si = torch.sort(x, dim=-1, descending=True)
        m, mi = torch.max(x, dim=2, keepdim=True)
        return v, i, s, si, m, mi, torch.min(x, dim=0)[0], torch.max(x)
    check(_module(f), rand(3, 6, 5, seed=10))


@pytest.mark.parametrize("kind,kw", [("LSTM", dict(num_layers=2)), ("LSTM", dict(bidirectional=True, batch_first=True)),
                                     ("GRU", dict(bidirectional=True)), ("GRU", dict(num_layers=2, bias=False)),
                                     ("RNN", dict(nonlinearity="relu")), ("RNN", dict(batch_first=True))],
                         ids=["lstm_2layers", "lstm_bidir_batch_first", "gru_bidir", "gru_2layers_nobias",
                              "rnn_relu", "rnn_tanh_batch_first"])
def test_recurrent_layers(kind, kw):
    import torch
    torch.manual_seed(2)
    layer = getattr(torch.nn, kind)(5, 6, **kw)
    x = rand(*((3, 4, 5) if kw.get("batch_first") else (4, 3, 5)), seed=11)
    with_state = kind != "RNN"

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = layer

        def forward(self, x):
            y, state = self.rnn(x)
            return (y,) + (tuple(state) if kind == "LSTM" else (state,)) if with_state else y
    check(Net(), x, rtol=1e-4, atol=1e-5)


def test_filled_tensors():
    import torch

    def f(x):
        return x + torch.ones_like(x) * 2 - torch.full((3, 1), 0.5) + torch.zeros(x.shape[1])
    check(_module(f), rand(3, 4, seed=12))


@pytest.mark.parametrize("opset", [12, 17])
def test_torch_onnx_export_of_newer_ops(tmp_path, opset):
    """What torch.onnx writes for interpolate, comparisons, where, argmax, topk, cumsum, einsum and an LSTM
    imports through from_onnx and matches onnxruntime."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx
    import torch
    import torch.nn.functional as F

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.lstm = torch.nn.LSTM(4, 5, bidirectional=True)

        def forward(self, x):
            y = F.interpolate(torch.relu(self.conv(x)), scale_factor=2, mode="bilinear", align_corners=False)
            y = torch.where(y > 0.1, y, torch.zeros_like(y)) + F.interpolate(y, size=(12, 14), mode="nearest")
            seq = y.mean(dim=2).permute(2, 0, 1)                     # (W, N, C)
            out, _ = self.lstm(seq)
            scores = torch.einsum("wnc,wnd->ncd", out, out).cumsum(dim=2)
            return scores, torch.argmax(y, dim=1), torch.topk(out, 2, dim=2)[0]
    torch.manual_seed(3)
    net = Net().eval()
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 7)).astype(np.float32)
    path = tmp_path / "net.onnx"
    try:
        torch.onnx.export(net, (torch.from_numpy(x),), str(path), opset_version=opset, dynamo=False,
                          input_names=["data"])
    except Exception as e:      # the exporter needs packages torch does not require (onnxscript, ...)
        pytest.skip(f"torch.onnx.export unavailable: {e}")
    from onnx_util import check
    check(onnx.load(str(path)), {"data": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [(2, 3), (4, 6), 1])
def test_adaptive_pooling_to_dividing_sizes(size):
    import torch.nn.functional as F
    check(_module(lambda x: (F.adaptive_avg_pool2d(x, size), F.adaptive_max_pool2d(x, size))),
          rand(2, 3, 4, 6, seed=13))


def test_adaptive_pooling_to_other_sizes_is_a_clear_error():
    import torch
    import torch.nn.functional as F

    from tvmlab import relay
    from tvmlab.errors import TVMLabError
    traced = torch.jit.trace(_module(lambda x: F.adaptive_avg_pool2d(x, (3, 4))), (torch.from_numpy(rand(1, 2, 5, 6)),))
    with pytest.raises(TVMLabError, match="adaptive pooling of 5x6 to 3x4"):
        relay.frontend.from_pytorch(traced, [("input0", (1, 2, 5, 6))])
