"""The Relay view: stages through the graph passes, fused groups drawn by kind, a group's TE schedule."""
from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("onnx")

import tvmlab as tvm  # noqa: E402
from tvmlab import relay  # noqa: E402
from tvmlab.bench import models  # noqa: E402
from tvmlab.errors import TVMLabError  # noqa: E402
from tvmlab.widgets import relay_view as rv  # noqa: E402


@pytest.fixture(scope="module")
def inception():
    return relay.frontend.from_onnx(models.inception_block())


def test_stages_follow_the_passes(inception):
    mod, params = inception
    view = rv.RelayView(mod, params)
    assert view.names[0] == "input" and view.names[-1] == "FuseOps"
    assert {"SimplifyInference", "FoldConstant", "AlterOpLayout", "FoldConstant (2)"} <= set(view.names)
    off = rv.RelayView(mod, params, disabled_pass=["AlterOpLayout"])
    assert "AlterOpLayout" not in off.names
    assert view.groups("input") == []
    groups = view.groups("FuseOps")
    assert groups, "FuseOps formed no groups"
    # every operator of the stage before FuseOps is in exactly one group afterwards
    assert sum(len(g.ops) for g in groups) == sum(view.counts(view.names[-2]).values())
    assert all(g.kind in rv.PATTERN_COLORS for g in groups)
    assert any(g.kind == "out-elemwise-fusable" and "conv2d" in g.ops[0] for g in groups)
    assert view.counts("AlterOpLayout").get("nn.contrib_conv2d_NCHWc") == 6


def test_graph_draws_one_box_per_group_in_its_kind_colour(inception):
    mod, params = inception
    view = rv.RelayView(mod, params)
    source = view.graph("FuseOps").source
    groups = view.groups("FuseOps")
    assert source.count("subgraph cluster_") == len(groups)
    for g in groups:
        assert f"{g.name} · {g.kind}" in source
    assert source.count("nn.contrib_conv2d_NCHWc\\n") == 6
    before = view.graph("input").source
    assert "subgraph cluster_" not in before
    assert rv.PATTERN_COLORS["out-elemwise-fusable"] in before   # conv2d filled with its kind's colour


def test_group_schedule_builds_and_computes_the_group(inception):
    mod, params = inception
    view = rv.RelayView(mod, params, disabled_pass=["AlterOpLayout"])      # NCHW groups
    k = next(g.index for g in view.groups() if g.ops == ["nn.conv2d", "nn.bias_add", "nn.relu"])
    s, args = view.group_schedule(k)
    f = tvm.build(s, args, target="llvm")
    rng = np.random.default_rng(0)
    arrays = [tvm.nd.array(rng.standard_normal([int(d) for d in t.shape]).astype(t.dtype)) for t in args[:-1]]
    out = tvm.nd.array(np.full([int(d) for d in args[-1].shape], np.nan, "float32"))
    f(*arrays, out)
    x, w, b = (a.numpy() for a in arrays)
    ref = np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]) + b[None, :, None, None]
    np.testing.assert_allclose(out.numpy(), np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def test_bad_arguments(inception):
    mod, params = inception
    with pytest.raises(TVMLabError, match="IRModule with a Relay function"):
        rv.RelayView("not a module")
    with pytest.raises(TVMLabError, match="not a parameter of main"):
        rv.RelayView(mod, {"nope": np.zeros(3, np.float32)})
    view = rv.RelayView(mod, params)
    with pytest.raises(TVMLabError, match="unknown stage"):
        view.graph("Nope")
    with pytest.raises(TVMLabError, match="out of range"):
        view.group_schedule(999)


def test_explore_opens_the_relay_explorer(inception):
    pytest.importorskip("ipywidgets")
    mod, params = inception
    ex = tvm.explore(mod, params=params, benchmark=False)
    from tvmlab.widgets.relay_explorer import RelayExplorer
    assert isinstance(ex, RelayExplorer)
    assert ex.stage == "FuseOps"
    assert len(ex._groups.options) == len(ex.groups())
    ex.show("input")
    assert ex._groups.options == () and ex._open.disabled
    assert "20 operators" in ex._summary.value
    ex.show("FuseOps")
    k = ex._groups.options[0][1]
    op_explorer = ex.open_group(k)
    from tvmlab.widgets.explorer import Explorer
    assert isinstance(op_explorer, Explorer) and ex.group_explorer is op_explorer
    assert re.search(r"operator explorer on <code>fused_", ex._status.value)


def test_operators_new_since_the_stage_before_are_outlined(inception):
    from tvmlab.widgets.colors import CHANGED_EDGE
    mod, params = inception
    view = rv.RelayView(mod, params)
    assert CHANGED_EDGE not in view.graph("input").source
    k = view.names.index("AlterOpLayout")
    fresh = rv.new_since(view.module(k)["main"], view.module(k - 1)["main"])
    names = [n.op.name for n in fresh]
    assert names.count("nn.contrib_conv2d_NCHWc") == 6 and "layout_transform" in names
    assert "nn.conv2d" not in names
    assert view.graph("AlterOpLayout").source.count(CHANGED_EDGE) == len(fresh)
    assert CHANGED_EDGE not in view.graph("FuseOps").source    # fusion groups operators, changes none


def test_profile_times_every_kernel_of_the_build(inception):
    pytest.importorskip("ipywidgets")
    mod, params = inception
    ex = tvm.explore(mod, params=params, benchmark=False)
    rows = ex.measure(number=1, rounds=1)
    assert rows and all(ms > 0 for _, ms, _ in rows)
    group_names = {g.name for g in ex.groups()}
    assert all(any(name == g or name.startswith(g + "_") for g in group_names) for name, _, _ in rows)
    assert "kernel calls" in ex._profile.value and ex.last_profile is rows


# ---------------------------------------------------------------- repeated blocks
@pytest.fixture(scope="module")
def bert3():
    return relay.frontend.from_onnx(models.bert(layers=3, hidden=32, heads=2, seq=8, vocab=50))


def test_a_graph_without_repeats_draws_as_before(inception):
    mod, params = inception
    view = rv.RelayView(mod, params)
    for stage in view.names:
        assert view.repeats(stage).runs == []
        assert view.graph(stage).source == view.graph(stage, collapse=False).source
    with pytest.raises(TVMLabError, match="no repeated blocks"):
        view.graph(expand=0)


def test_repeated_blocks_fold_and_one_opens(bert3):
    mod, params = bert3
    view = rv.RelayView(mod, params)
    run = view.repeats().runs[0]
    assert run.count == 3
    full = view.graph(collapse=False).source
    assert full.count("nn.batch_matmul\\n") == 6 and "repeated block" not in full
    folded = view.graph().source
    assert folded.count("repeated block ×3") == 1 and folded.count("shape=box3d") == 1
    assert "nn.batch_matmul\\n" not in folded and "nn.contrib_dense_pack ×6" in folded
    # the groups outside the blocks (embedding, mask) are drawn as before
    assert folded.count("subgraph cluster_") == 2
    opened = view.graph(expand=1).source
    assert "block 1 of 3" in opened and "block 3 of 3" in opened and opened.count("shape=box3d") == 2
    assert "subgraph cluster_block0_1" in opened
    assert opened.count("nn.batch_matmul\\n") == 2                  # one block's two, drawn in full
    assert opened.count("subgraph cluster_") == 2 + 1 + run.groups
    first = view.graph(expand=(0, 0)).source
    assert "blocks 2–3 of 3 (×2)" in first and first.count("block 1 of 3") == 1     # the opened block's box
    for bad, why in ((3, "block 3 out of range"), ((1, 0), "run 1 out of range"), ("x", "block index")):
        with pytest.raises(TVMLabError, match=why):
            view.graph(expand=bad)
    with pytest.raises(TVMLabError, match="needs collapse=True"):
        view.graph(collapse=False, expand=0)


def test_folded_and_opened_views_render(bert3):
    from tvmlab.widgets.graph import dot_missing_reason, to_svg
    if dot_missing_reason():
        pytest.skip(dot_missing_reason())
    mod, params = bert3
    view = rv.RelayView(mod, params)
    for stage in ("input", "FuseOps"):
        for expand in (None, 0, 2):
            svg, why = to_svg(view.graph(stage, expand=expand))
            assert why is None and svg.startswith("<svg"), (stage, expand, why)
            assert ("repeated block ×3" in svg) == (expand is None)
            assert (expand is None) or f"block {expand + 1} of 3" in svg


def test_explorer_opens_one_block_at_a_time(bert3):
    pytest.importorskip("ipywidgets")
    mod, params = bert3
    ex = tvm.explore(mod, params=params, benchmark=False)
    assert [r.count for r in ex.repeats()] == [3] and ex.expanded is None
    assert "3 repeated blocks" in ex._summary.value
    assert ex._blocks.layout.display is None
    assert any("· block 2" in label for label, _ in ex._groups.options)
    folded = ex._graph.value
    ex.expand(1)
    assert ex.expanded == (0, 1) and ex._graph.value != folded
    ex._blocks.value = (0, 2)                    # the menu does the same
    assert ex.expanded == (0, 2)
    with pytest.raises(TVMLabError, match="out of range"):
        ex.expand(7)
    assert ex.expanded == (0, 2)
    ex.show("input")                             # the opened block stays open across stages
    assert ex.expanded == (0, 2)
    ex.expand_all()
    assert ex.expanded == "all"
    ex.collapse()
    assert ex.expanded is None
    ex.show("FuseOps")
    assert ex._graph.value == folded


def test_explorer_hides_the_menu_without_repeats(inception):
    pytest.importorskip("ipywidgets")
    mod, params = inception
    ex = tvm.explore(mod, params=params, benchmark=False)
    assert ex.repeats() == [] and ex._blocks.layout.display == "none"
    assert "repeated" not in ex._summary.value
