"""The operators, passes and schedules transformer models compile to, against numpy on random data.

float32 erf / tanh written with vector arithmetic (their accuracy on a dense grid), topi.nn.layer_norm,
dense_pack over (batch, tokens, hidden) data, batch_matmul over several batch axes, SimplifyExpr's rewrites,
and the fused structure of a transformer layer (each check a property of the graph, never of the host).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay, te, topi
from tvmlab.relay import transform as T
from tvmlab.topi.nn import float_math

x86 = topi.x86


def ph(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


# ------------------------------------------------------------------ erf and tanh in vector code
@pytest.mark.parametrize("name, ref, ulps", [("erf", np.vectorize(math.erf), 3), ("tanh", np.tanh, 2)])
def test_float32_erf_and_tanh_within_a_few_ulp(name, ref, ulps):
    x = np.concatenate([np.linspace(-7, 7, 200003), np.logspace(-30, 1, 3001), -np.logspace(-30, 1, 3001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 4.0, 0.625, 30.0]]).astype(np.float32)
    X = ph(x.shape, "X")
    Y = getattr(float_math, name)(X)
    s = x86.schedule_injective([Y])
    assert "Ramp" in str(tvm.lower(s, [X, Y]))           # vector code: no per-lane libm calls
    f = tvm.build(s, [X, Y], "llvm")
    out = tvm.nd.array(np.full(x.shape, 7.0, np.float32))
    f(tvm.nd.array(x), out)
    got = out.numpy()
    want = ref(x.astype(np.float64))
    finite = np.isfinite(x)
    assert np.isnan(got[np.isnan(x)]).all() and np.array_equal(got[np.isinf(x)], np.sign(x[np.isinf(x)]))
    ulp = np.spacing(np.abs(want[finite]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[finite] - want[finite]) / ulp) <= ulps


def test_relay_erf_tanh_use_the_vector_forms_for_float32_only(check_build):
    X = ph((5, 37), "X", "float64")
    Y = float_math.erf(X)
    check_build(x86.schedule_injective([Y]), [X, Y], lambda x: np.vectorize(math.erf)(x), rtol=1e-12)


# ------------------------------------------------------------------ layer norm
@pytest.mark.parametrize("shape, axis, offset", [((2, 9, 37), -1, 0.0), ((3, 768), -1, 1000.0),
                                                 ((2, 5, 6), [1, 2], 5.0)])
def test_layer_norm_against_numpy(shape, axis, offset, check_build):
    """A row of mean 1000 and spread 1 keeps its variance (the sums are taken about the row's first element)."""
    X = ph(shape, "X")
    axes = [axis] if isinstance(axis, int) else axis
    row = tuple(shape[a] for a in axes)
    G, B = ph(row, "G"), ph(row, "B")
    Y = topi.nn.relu(topi.nn.layer_norm(X, G, B, axis, 1e-5))

    def ref(x, g, b):
        x = x.astype(np.float64)
        ax = tuple(a % len(shape) for a in axes)
        m, v = x.mean(axis=ax, keepdims=True), x.var(axis=ax, keepdims=True)
        return np.maximum((x - m) / np.sqrt(v + 1e-5) * g + b, 0)
    s = x86.schedule_layer_norm([Y])
    check_build(s, [X, G, B, Y], ref, rtol=1e-4, atol=1e-4,
                inputs={"X": np.random.default_rng(1).standard_normal(shape).astype(np.float32) + offset})


def test_layer_norm_errors_name_the_argument():
    from tvmlab.topi.utils import OperatorError
    with pytest.raises(OperatorError, match="gamma"):
        topi.nn.layer_norm(ph((4, 8), "X"), ph((7,), "G"), None, -1)
    with pytest.raises(OperatorError, match="float"):
        topi.nn.layer_norm(ph((4, 8), "X", "int32"), None, None, -1)


# ------------------------------------------------------------------ products over leading batch axes
def test_dense_pack_over_tokens_with_a_fused_tail(check_build):
    X, W, b = ph((2, 19, 24), "X"), ph((37, 24), "W"), ph((37,), "b")
    packed = topi.layout_transform(W, "NK", "NK16n")
    out = topi.nn.relu(topi.nn.dense_pack(X, packed, b, units=37))
    assert tuple(out.shape) == (2, 19, 37)
    check_build(x86.schedule_dense([out]), [X, W, b, out], lambda x, w, bb: np.maximum(x @ w.T + bb, 0),
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transpose_b", [True, False])
def test_batch_matmul_over_several_batch_axes(transpose_b, check_build):
    A = ph((2, 3, 13, 20), "A")
    B = ph((1, 3, 35, 20) if transpose_b else (1, 3, 20, 35), "B")         # batch axis 0 broadcasts
    out = topi.multiply(topi.nn.batch_matmul(A, B, transpose_b=transpose_b), 0.5)
    assert tuple(out.shape) == (2, 3, 13, 35)
    check_build(x86.schedule_batch_matmul([out]), [A, B, out],
                lambda a, b: 0.5 * (a @ (np.swapaxes(b, -1, -2) if transpose_b else b)), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ SimplifyExpr
def _ops(expr):
    from tvmlab.relay.expr import Call, post_order
    return [n.op.name for n in post_order(expr) if isinstance(n, Call) and hasattr(n.op, "name")]


def _simplify(body, params):
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    return T.SimplifyExpr()(T.InferType()(mod))["main"].body


def test_simplify_expr_finds_written_layer_norms_and_cheap_powers():
    x = relay.var("x", shape=(2, 6, 16))
    d = relay.subtract(x, relay.mean(x, axis=[-1], keepdims=True))
    v = relay.mean(relay.power(d, relay.const(np.float32(2.0))), axis=[2], keepdims=True)
    y = relay.divide(d, relay.sqrt(relay.add(v, relay.const(np.float32(1e-5)))))
    g = np.random.default_rng(0).uniform(0.5, 1.5, 16).astype(np.float32)
    y = relay.add(relay.multiply(y, relay.const(g)), relay.const(np.full(16, 0.25, np.float32)))
    z = relay.power(y, relay.const(np.float32(3.0))) / relay.const(np.float32(8.0))
    out = _simplify(z, [x])
    ops = _ops(out)
    assert ops.count("nn.layer_norm") == 1 and "mean" not in ops and "power" not in ops and "divide" not in ops
    from tvmlab.relay.expr import Call, post_order
    ln = next(n for n in post_order(out) if isinstance(n, Call) and n.op.name == "nn.layer_norm")
    np.testing.assert_array_equal(ln.args[1].value, g)
    xv = np.random.default_rng(1).standard_normal((2, 6, 16)).astype(np.float32)
    got = relay.create_executor("graph", tvm.IRModule.from_expr(relay.Function([x], z))).evaluate()(xv).numpy()
    m, s2 = xv.mean(-1, keepdims=True), xv.var(-1, keepdims=True)
    want = (((xv - m) / np.sqrt(s2 + 1e-5) * g + 0.25) ** 3) / 8
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_simplify_expr_keeps_what_it_cannot_make_exact():
    x = relay.var("x", shape=(4, 8))
    out = _simplify(relay.divide(relay.power(x, relay.const(np.float32(2.5))), relay.const(np.float32(3.0))), [x])
    assert _ops(out) == ["power", "divide"]
    d = relay.subtract(x, relay.mean(x, axis=[0], keepdims=True))        # not the last axis: left alone
    v = relay.mean(relay.multiply(d, d), axis=[0], keepdims=True)
    out = _simplify(relay.divide(d, relay.sqrt(relay.add(v, relay.const(np.float32(1e-5))))), [x])
    assert "nn.layer_norm" not in _ops(out)


def test_split_pieces_become_slices_that_fuse_into_their_readers():
    x = relay.var("x", shape=(2, 12))
    pieces = relay.split(relay.exp(x), 3, axis=1).astuple()
    parts = [relay.TupleGetItem(pieces, i) for i in range(3)]
    y = relay.Tuple([relay.negative(parts[0]), relay.sqrt(parts[1]), relay.abs(parts[2])])
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    names = sorted(lib.lowered.functions)
    assert not any(n == "fused_split" for n in names) and sum("strided_slice" in n for n in names) == 3
    xv = np.random.default_rng(2).random((2, 12)).astype(np.float32)
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("x", xv)
    m.run()
    e = np.exp(xv)
    for i, want in enumerate([-e[:, :4], np.sqrt(e[:, 4:8]), np.abs(e[:, 8:])]):
        np.testing.assert_allclose(m.get_output(i).numpy(), want, rtol=1e-6)


# ------------------------------------------------------------------ the fused structure of a layer
def _groups(model):
    mod, params = relay.frontend.from_onnx(model)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    from tvmlab.relay.expr import Call, Function, post_order
    out = []
    for n in post_order(lib.ir_mod["main"].body):
        if isinstance(n, Call) and isinstance(n.op, Function):
            out.append((_ops(n.op.body), n))
    return out, lib


def test_bert_layer_fuses_dense_bias_gelu_attention_and_layer_norm():
    pytest.importorskip("onnx")
    from tvmlab.bench import models
    groups, lib = _groups(models.bert(layers=1, hidden=64, heads=4, seq=32, vocab=50, max_pos=32))
    names = [g for g, _ in groups]
    # dense + bias + erf GELU: one kernel reading a weight packed at compile time
    ffn = [(g, c) for g, c in groups if g[0] == "nn.contrib_dense_pack" and "erf" in g]
    assert len(ffn) == 1 and ffn[0][0][-1] == "multiply"
    w = ffn[0][1].args[1]
    assert w.checked_type.shape[1:] == (64, w.checked_type.shape[2]) and len(w.checked_type.shape) == 3
    assert all("nn.dense" not in g for g in names)
    # scores: the product, its scale and the padding mask in one kernel; the softmax one kernel per row
    assert any(g[0] == "nn.batch_matmul" and "multiply" in g and "add" in g for g in names)
    assert sum(g == ["nn.softmax"] for g in names) == 1
    # each layer norm is one kernel (the embedding sum's with it); nothing spells it out
    assert sum("nn.layer_norm" in g for g in names) == 3 and not any("mean" in g for g in names)
    assert all(g.count("nn.layer_norm") <= 1 for g in names)


def test_elementwise_groups_over_rows_are_vector_code():
    x = relay.var("x", shape=(1, 20, 48))
    y = relay.tanh(relay.multiply(x, relay.const(np.float32(0.5))))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    (f,) = lib.lowered.functions.values()
    assert "Ramp" in str(f)


def test_injective_reads_of_a_products_tail_fuse_and_a_weight_is_packed_once():
    """An RNN step: the slice of the input projection added after the recurrent product is read in the
    product's tile; the steps share one packed copy of their constant weight."""
    x = relay.var("x", shape=(3, 4, 16))
    h0 = relay.var("h", shape=(4, 16))
    w = relay.const(np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32) * 0.3)
    h = h0
    for t in range(3):
        xt = relay.squeeze(relay.strided_slice(x, begin=[t], end=[t + 1], axes=[0]), axis=[0])
        h = relay.tanh(relay.add(xt, relay.nn.dense(h, w)))
    mod = tvm.IRModule.from_expr(relay.Function([x, h0], h))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    from tvmlab.relay.expr import Call, Function, post_order
    groups = [_ops(n.op.body) for n in post_order(lib.ir_mod["main"].body)
              if isinstance(n, Call) and isinstance(n.op, Function)]
    assert groups == [["strided_slice", "squeeze", "nn.contrib_dense_pack", "add", "tanh"]] * 3
    assert len([p for p in lib.get_params().values() if len(p.shape) == 3]) == 1
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    rng = np.random.default_rng(4)
    xv, hv = rng.standard_normal((3, 4, 16)).astype(np.float32), rng.standard_normal((4, 16)).astype(np.float32)
    m.set_input("x", xv)
    m.set_input("h", hv)
    m.run()
    wv = w.value
    for t in range(3):
        hv = np.tanh(xv[t] + hv @ wv.T)
    np.testing.assert_allclose(m.get_output(0).numpy(), hv, rtol=1e-5, atol=1e-5)


def test_causal_bool_mask_of_odd_width_in_the_scores_kernel():
    """A bool mask read as 9-lane vectors at byte offsets 9, 18, ... (a bool is one byte: claiming more
    alignment than the address has crashed the process)."""
    q, k = relay.var("q", shape=(2, 3, 9, 8)), relay.var("k", shape=(2, 3, 8, 9))
    keep = np.tri(9, 9, dtype=bool)
    s = relay.where(relay.const(keep), relay.nn.batch_matmul(q, k, transpose_b=False), relay.const(np.float32(-1e4)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([q, k], s)), target="llvm")
    assert len(lib.lowered.functions) == 1
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    rng = np.random.default_rng(5)
    qv, kv = rng.standard_normal((2, 3, 9, 8)).astype(np.float32), rng.standard_normal((2, 3, 8, 9)).astype(np.float32)
    m.set_input("q", qv)
    m.set_input("k", kv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), np.where(keep, qv @ kv, np.float32(-1e4)), rtol=1e-5,
                               atol=1e-5)
