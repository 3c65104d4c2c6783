"""Transformer models as torch.onnx exports them (tvmlab.bench.models: BERT-, GPT-2- and ViT-style, small sizes)
through from_onnx, relay.build and the graph executor, against onnxruntime to 1e-4 relative.

They hold what such exports hold: Gather embeddings, LayerNormalization and its hand-written form, GELU as
Erf, as Tanh (with Pow) and as the opset-20 op, 4-D batched MatMul, Reshape / Transpose / Split of heads,
padding masks added to the scores, causal masks by Trilu + Where or a sliced constant, Softmax on the last
axis, and shape subgraphs (Shape / Gather / Unsqueeze / Concat / Range / Slice) that must fold to constants.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

from onnx_util import model, run_ort, run_tvm  # noqa: E402
from tvmlab import relay  # noqa: E402
from tvmlab.bench import models  # noqa: E402
from tvmlab.bench.graph import model_feeds  # noqa: E402

mk = helper.make_node
SMALL = dict(hidden=64, heads=4)


def close(got, want, rtol=1e-4):
    """Every output within ``rtol`` of onnxruntime's, relative to its largest magnitude (and elementwise)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.isfinite(g).all()
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * 0.1 * float(np.abs(w).max()))


def check_model(m, feeds=None, rtol=1e-4):
    feeds = feeds or model_feeds(m, seed=1)
    close(run_tvm(m, feeds), run_ort(m, feeds), rtol)
    return feeds


def test_bert_two_layers_with_padding_masks():
    m = models.bert(layers=2, seq=16, batch=2, vocab=100, max_pos=32, **SMALL)
    feeds = model_feeds(m, seed=3)
    feeds["attention_mask"][1, 5:] = 0          # the second sentence is shorter
    check_model(m, feeds)


def test_bert_hand_written_layer_norm_and_tanh_gelu():
    check_model(models.bert(layers=1, seq=32, vocab=50, opset=14, layer_norm="manual", gelu="tanh", **SMALL))


@pytest.mark.parametrize("causal, layer_norm, gelu, opset", [("trilu", "manual", "tanh", 14),
                                                              ("constant", "op", "erf", 17)])
def test_gpt2_causal_masks(causal, layer_norm, gelu, opset):
    check_model(models.gpt2(layers=2, seq=16, vocab=100, max_pos=64, causal=causal, layer_norm=layer_norm,
                            gelu=gelu, opset=opset, **SMALL))


def test_vit_patch_embedding_class_token_and_gelu_op():
    check_model(models.vit(layers=1, image=32, patch=8, classes=10, **SMALL))


def test_shape_subgraphs_fold_while_importing():
    """Reshape targets, positions (Range over Shape), sliced buffers and the causal mask are constants once
    the input shapes are known: no integer value in the imported graph is computed from constants only."""
    from tvmlab.relay.analysis import free_vars
    from tvmlab.relay.expr import Call, post_order
    for m in (models.gpt2(layers=1, seq=8, vocab=20, max_pos=16, **SMALL),
              models.bert(layers=1, seq=8, vocab=20, max_pos=16, **SMALL),
              models.vit(layers=1, image=16, patch=8, classes=4, **SMALL)):
        mod, params = relay.frontend.from_onnx(m, freeze_params=True)
        for n in post_order(mod["main"].body):
            if isinstance(n, Call) and "int" in str(getattr(n.checked_type, "dtype", "")):
                assert free_vars(n), f"{n.op.name} computes an integer value from constants only"


def test_layer_norm_imports_as_one_operator_and_the_written_form_becomes_it():
    import tvmlab as tvm
    for kind, opset in (("op", 17), ("manual", 14)):
        m = models.bert(layers=1, seq=8, vocab=20, max_pos=16, opset=opset, layer_norm=kind, **SMALL)
        mod, params = relay.frontend.from_onnx(m)
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target="llvm", params=params)
        names = str(lib.ir_mod)
        assert names.count("nn.layer_norm(") == 3 and "mean(" not in names, kind


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_op_and_layer_norm_over_several_axes(approximate):
    x = np.random.default_rng(4).standard_normal((2, 5, 37)).astype(np.float32) * 3
    m = model([mk("Gelu", ["x"], ["y"], approximate=approximate)], {"x": x}, ["y"], opset=20)
    close(run_tvm(m, {"x": x}), run_ort(m, {"x": x}))
    g = np.random.default_rng(5).uniform(0.5, 1.5, (5, 37)).astype(np.float32)
    m = model([mk("LayerNormalization", ["x", "g"], ["y"], axis=1, epsilon=1e-3)], {"x": x + 20}, ["y"],
              {"g": g}, opset=17)
    close(run_tvm(m, {"x": x + 20}), run_ort(m, {"x": x + 20}))
