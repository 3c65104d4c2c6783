"""relay.repeats: runs of structurally identical blocks, found along the graph's spine."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.errors import TVMLabError
from tvmlab.relay.expr import Call, Function, post_order
from tvmlab.relay.repeats import Repeats, find_repeats

RNG = np.random.default_rng(0)


def _w(*shape):
    return relay.const(RNG.standard_normal(shape).astype("float32"))


def _typed(body, params):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return mod["main"]


def _block(x, mask, wiring="residual"):
    """dense + bias, masked, relu, then an add that either closes a residual (x) or doubles the value."""
    t = relay.nn.relu(relay.add(relay.add(relay.nn.dense(x, _w(8, 8)), _w(8)), mask))
    return relay.add(t, x) if wiring == "residual" else relay.add(t, t)


def _mask(m):
    """A chain from a second input, used by every block: hangs off no block, so belongs to none."""
    return relay.multiply(relay.subtract(relay.const(1.0), relay.sigmoid(relay.exp(m))), relay.const(-1e4))


def _ops(units):
    out = Counter()
    for u in units:
        for n in (post_order(u.op.body) if isinstance(u.op, Function) else [u]):
            if isinstance(n, Call) and hasattr(n.op, "name"):
                out[n.op.name] += 1
    return out


def _check_blocks_alike(run):
    """An independent check: every block has the same operators, in the same topological order."""
    first = [getattr(u.op, "name", "group") for u in run.blocks[0]]
    for block in run.blocks[1:]:
        assert [getattr(u.op, "name", "group") for u in block] == first
        assert _ops(block) == _ops(run.blocks[0])


def test_three_repeats_of_a_block_between_a_prologue_and_an_epilogue():
    x, m = relay.var("x", shape=(4, 8)), relay.var("m", shape=(4, 8))
    mask = _mask(m)
    h = relay.nn.relu(relay.nn.dense(x, _w(8, 8)))            # prologue
    for _ in range(3):
        h = _block(h, mask)
    func = _typed(relay.nn.softmax(relay.nn.dense(h, _w(5, 8))), [x, m])  # epilogue
    rep = Repeats(func)
    assert rep.source is func.params[0]                       # the data input, not the mask
    runs = rep.runs
    assert len(runs) == 1 and runs[0].count == 3
    run = runs[0]
    _check_blocks_alike(run)
    assert _ops(run.blocks[0]) == {"nn.dense": 1, "add": 3, "nn.relu": 1}
    blocks = [set(b) for b in run.blocks]
    assert not (blocks[0] & blocks[1]) and not (blocks[1] & blocks[2])
    mask_units = [n for n in post_order(func.body) if isinstance(n, Call) and
                  n.op.name in ("exp", "sigmoid", "subtract", "multiply")]
    assert len(mask_units) == 4 and all(rep.block_of(u) is None for u in mask_units)
    assert all(rep.block_of(u) == (0, b) for b in range(3) for u in run.blocks[b])
    assert "nn.dense" in run.summary() and run.groups == 0


def test_a_graph_without_repeats_has_no_runs():
    x = relay.var("x", shape=(4, 8))
    a = relay.nn.relu(relay.nn.dense(x, _w(8, 8)))
    b = relay.sigmoid(relay.nn.dense(x, _w(8, 8)))
    func = _typed(relay.nn.softmax(relay.concatenate([a, b], axis=1)), [x])
    assert find_repeats(func) == []
    with pytest.raises(TVMLabError, match="needs a relay Function"):
        Repeats(func.body)


def test_equal_operators_wired_differently_are_not_one_run():
    """Block 2 has the operators of the others, but adds its value to itself instead of closing the
    residual: the run is the three blocks after it, never all five."""
    x, m = relay.var("x", shape=(4, 8)), relay.var("m", shape=(4, 8))
    mask, h = _mask(m), x
    for wiring in ("residual", "doubled", "residual", "residual", "residual"):
        h = _block(h, mask, wiring)
    func = _typed(h, [x, m])
    runs = find_repeats(func)
    assert [r.count for r in runs] == [3]
    doubled = [n for n in post_order(func.body)
               if isinstance(n, Call) and n.op.name == "add" and n.args[0] is n.args[1]]
    assert len(doubled) == 1 and all(doubled[0] not in b for b in runs[0].blocks)
    _check_blocks_alike(runs[0])


def test_two_runs_of_different_blocks_are_both_found():
    x = relay.var("x", shape=(4, 8))
    h = x
    for _ in range(2):
        h = relay.nn.relu(relay.add(relay.nn.dense(h, _w(8, 8)), _w(8)))
    h = relay.nn.dense(h, _w(6, 8))                           # width changes: a different block follows
    for _ in range(3):
        h = relay.sigmoid(relay.multiply(relay.nn.dense(h, _w(6, 6)), relay.const(0.5)))
    runs = find_repeats(_typed(h, [x]))
    assert [(r.count, dict(_ops(r.blocks[0]))) for r in runs] == [
        (2, {"nn.dense": 1, "add": 1, "nn.relu": 1}), (3, {"nn.dense": 1, "multiply": 1, "sigmoid": 1})]


@pytest.fixture(scope="module")
def bert2():
    pytest.importorskip("onnx")
    from tvmlab.bench import models
    return relay.frontend.from_onnx(models.bert(layers=2, hidden=32, heads=2, seq=8, vocab=50))


def test_bert_layers_are_the_repeats_before_and_after_fusion(bert2):
    from tvmlab.widgets.relay_view import RelayView
    mod, params = bert2
    view = RelayView(mod, params)
    for stage in view.names:
        runs = view.repeats(stage).runs
        assert [r.count for r in runs] == [2], stage
        _check_blocks_alike(runs[0])
        ops = _ops(runs[0].blocks[0])
        assert ops["nn.batch_matmul"] == 2 and ops["nn.softmax"] == 1 and ops["nn.layer_norm"] == 2, stage
        assert ops["erf"] == 1 and ops.get("nn.dense", 0) + ops.get("nn.contrib_dense_pack", 0) == 6, stage
    fused = view.repeats("FuseOps")
    run = fused.runs[0]
    assert run.groups == len(run.blocks[0])                   # after FuseOps a block is fused groups
    # what is outside the blocks: the embeddings (and their layer norm) and the padding mask
    outside = [g for g in view.groups("FuseOps") if fused.block_of(g.call) is None]
    assert sorted(op for g in outside for op in g.ops) == sorted(
        ["take", "add", "add", "nn.layer_norm", "expand_dims", "expand_dims", "cast", "subtract", "multiply"])


def test_twelve_layers_give_twelve_repeats():
    pytest.importorskip("onnx")
    from tvmlab.bench import models
    mod, params = relay.frontend.from_onnx(models.bert(layers=12, hidden=16, heads=2, seq=4, vocab=20))
    runs = find_repeats(relay.transform.InferType()(mod)["main"])
    assert [r.count for r in runs] == [12]
    _check_blocks_alike(runs[0])
