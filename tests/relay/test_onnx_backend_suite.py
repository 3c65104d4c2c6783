"""ONNX's own backend test models (shipped in the onnx wheel) through from_onnx and relay.build, against
their stored outputs (``tvmlab.bench.onnx_suite``); skipped when the installed onnx ships no test data.

The PyTorch suites are opset 6 and are upgraded by onnx.version_converter while importing; every case
passes (3-D convolutions and pools included), and the counts must not drop.
The light CNNs (two minutes) run with the slow tests (``--run-slow``); one of them always runs.
"""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("onnx")

from tvmlab.bench import onnx_suite  # noqa: E402

if onnx_suite.data_dir() is None:
    pytest.skip("the installed onnx ships no backend test data", allow_module_level=True)

PASSING = {"pytorch-operator": 35, "pytorch-converted": 82}


@pytest.mark.parametrize("suite", sorted(PASSING))
def test_pytorch_suites_pass(suite):
    cases = onnx_suite.run([suite])
    passed, total = onnx_suite.counts(cases)[suite]
    failing = {c.name: c.reason for c in cases if c.status != "pass"}
    assert passed >= PASSING[suite], failing


@pytest.mark.parametrize("name", ["light_squeezenet"])
def test_light_models(name):
    (case,) = onnx_suite.run(["light"], only=name)
    assert case.status == "pass", case.reason


@pytest.mark.slow
def test_light_suite_passes():
    cases = onnx_suite.run(["light"])
    assert onnx_suite.counts(cases)["light"] == (9, 9), [(c.name, c.reason) for c in cases if c.status != "pass"]


def test_old_opsets_are_upgraded_with_a_warning():
    import glob
    import os

    import onnx

    from tvmlab import relay
    path = os.path.join(onnx_suite.data_dir(), "pytorch-operator", "test_operator_exp", "model.onnx")
    model = onnx.load(path)
    assert model.opset_import[0].version < relay.frontend.onnx.MIN_OPSET
    with pytest.warns(relay.frontend.onnx.OpsetConversionWarning, match="opset 6 was converted to opset 9"):
        relay.frontend.from_onnx(model, shape={"0": (3, 4)})
    assert glob.glob(os.path.join(os.path.dirname(path), "test_data_set_*"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a current model imports without one
        from tvmlab.bench import models
        relay.frontend.from_onnx(models.residual_block())
