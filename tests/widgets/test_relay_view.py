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
