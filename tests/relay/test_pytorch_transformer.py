"""from_pytorch's converters for transformer modules (embedding, masked_fill, tril / triu, rsub, baddbmm,
split, expand, arange, type_as, scaled_dot_product_attention).

Each converter is called on Relay inputs as from_pytorch calls it, built and compared with numpy (no torch
needed); with torch installed, a traced BERT-style block is compared with torch itself.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.relay.frontend import pytorch as pt

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _eval(build, inputs):
    """``build(ctx, *vars)`` -> relay expr (or list), run on ``inputs`` (numpy arrays)."""
    ctx = pt._Ctx()
    xs = [relay.var(f"x{k}", shape=v.shape, dtype=str(v.dtype)) for k, v in enumerate(inputs)]
    out = build(ctx, *xs)
    body = relay.Tuple(out) if isinstance(out, list) else out
    f = relay.create_executor("graph", tvm.IRModule.from_expr(relay.Function(xs, body))).evaluate()
    got = f(*inputs)
    return [g.numpy() for g in got] if isinstance(got, list) else got.numpy()


def conv(name):
    return pt.CONVERTERS[f"aten::{name}"]


def test_embedding_masked_fill_and_triangles():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((10, 4)).astype(np.float32)
    ids = rng.integers(0, 10, (2, 5)).astype(np.int64)
    got = _eval(lambda c, t, i: conv("embedding")(c, [t, i, -1, False, False]), [table, ids])
    np.testing.assert_array_equal(got, table[ids])
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    mask = rng.random((1, 1, 5, 5)) < 0.5
    got = _eval(lambda c, v, m: conv("masked_fill")(c, [v, m, -1e9]), [x, mask])
    np.testing.assert_array_equal(got, np.where(mask, np.float32(-1e9), x))
    for name, ref in (("tril", np.tril), ("triu", np.triu)):
        for d in (0, 1, -2):
            got = _eval(lambda c, v: conv(name)(c, [v, d]), [x])
            np.testing.assert_array_equal(got, ref(x, d), err_msg=f"{name} {d}")


def test_rsub_baddbmm_split_expand_arange_type_as():
    rng = np.random.default_rng(1)
    m = (rng.random((2, 1, 1, 6)) < 0.7).astype(np.float32)
    np.testing.assert_allclose(_eval(lambda c, v: conv("rsub")(c, [v, 1.0, 1]), [m]), 1.0 - m)
    a, b1, b2 = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4, 5), (3, 4, 7), (3, 7, 5)))
    got = _eval(lambda c, x, y, z: conv("baddbmm")(c, [x, y, z, 0.5, 2.0]), [a, b1, b2])
    np.testing.assert_allclose(got, 0.5 * a + 2.0 * (b1 @ b2), rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((2, 7, 12)).astype(np.float32)
    parts = _eval(lambda c, v: conv("split")(c, [v, 5, -1]), [x])
    assert [p.shape[-1] for p in parts] == [5, 5, 2]
    np.testing.assert_array_equal(np.concatenate(parts, -1), x)
    parts = _eval(lambda c, v: conv("split_with_sizes")(c, [v, [4, 4, 4], 2]), [x])
    np.testing.assert_array_equal(parts[1], x[..., 4:8])
    cls = rng.standard_normal((1, 1, 12)).astype(np.float32)
    np.testing.assert_array_equal(_eval(lambda c, v: conv("expand")(c, [v, [3, -1, -1], False]), [cls]),
                                  np.broadcast_to(cls, (3, 1, 12)))
    np.testing.assert_array_equal(_eval(lambda c, v, w: conv("expand_as")(c, [v, w]), [cls, x[:, :1]]),
                                  np.broadcast_to(cls, (2, 1, 12)))
    got = _eval(lambda c, v: relay.add(v, conv("arange")(c, [7, 4, None, None, False])), [np.zeros(7, np.int64)])
    np.testing.assert_array_equal(got, np.arange(7))
    got = _eval(lambda c, v: relay.add(v, conv("arange")(c, [1, 9, 2, 6, None, None, False])), [np.zeros(4, "f4")])
    np.testing.assert_array_equal(got, np.arange(1, 9, 2))
    got = _eval(lambda c, v, w: conv("type_as")(c, [v, w]), [np.arange(4).astype(np.int64), x])
    assert got.dtype == np.float32


@pytest.mark.parametrize("causal, mask", [(False, None), (True, None), (False, "bool"), (False, "float")])
def test_scaled_dot_product_attention(causal, mask):
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 9, 8)).astype(np.float32) for _ in range(3))
    inputs = [q, k, v]
    if mask == "bool":
        inputs.append(rng.random((2, 1, 9, 9)) < 0.8)
        inputs[-1][..., 0] = True
    elif mask == "float":
        inputs.append(rng.standard_normal((1, 1, 9, 9)).astype(np.float32))

    def build(c, *xs):
        return conv("scaled_dot_product_attention")(c, [xs[0], xs[1], xs[2], xs[3] if mask else None, 0.0,
                                                         causal, None])
    got = _eval(build, inputs)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(8)
    if causal:
        s = np.where(np.tri(9, 9, dtype=bool), s, -np.inf)
    if mask == "bool":
        s = np.where(inputs[3], s, -np.inf)
    elif mask == "float":
        s = s + inputs[3]
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (optional dependency)")
def test_traced_bert_block_matches_torch():
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, vocab=50, hidden=32, heads=4):
            super().__init__()
            self.heads, self.emb = heads, nn.Embedding(vocab, hidden)
            self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.ff1, self.ff2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, ids, mask):
            x = self.emb(ids)
            b, n, h = x.shape
            q, k, v = self.qkv(x).split(h, dim=-1)
            q, k, v = (t.view(b, n, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
            s = q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5
            s = s.masked_fill(torch.tril(torch.ones(n, n)) == 0, float("-inf"))
            s = s + (1.0 - mask[:, None, None, :].float()) * -10000.0
            a = torch.softmax(s, dim=-1) @ v
            x = self.ln1(x + self.out(a.transpose(1, 2).reshape(b, n, h)))
            return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x), approximate="tanh")))

    torch.manual_seed(0)
    net = Block().eval()
    ids = torch.randint(0, 50, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.int64)
    mask[1, 8:] = 0
    with torch.no_grad():
        traced = torch.jit.trace(net, (ids, mask))
        want = net(ids, mask).numpy()
    mod, params = relay.frontend.from_pytorch(traced, [("ids", ((2, 12), "int64")), ("mask", ((2, 12), "int64"))])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("ids", ids.numpy())
    m.set_input("mask", mask.numpy())
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
