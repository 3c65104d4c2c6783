"""Loading an ONNX file: a file that is not a model is a FrontendError naming it; what
onnx.checker finds wrong with a model becomes a warning and the import goes on (as TVM's)."""
from __future__ import annotations

import numpy as np
import pytest

from tvmlab import relay
from tvmlab.relay.frontend.common import FrontendError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from tvmlab.relay.frontend.onnx import ModelCheckWarning  # noqa: E402


def _relu_model(x_shape=(2, 3)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("content, why", [(bytes(range(7, 250, 3)) * 4, "is not an ONNX model: DecodeError"),
                                          (b"", "the file is empty")])
def test_corrupt_file_is_a_frontend_error_naming_it(tmp_path, content, why):
    path = tmp_path / "broken.onnx"
    path.write_bytes(content)
    with pytest.raises(FrontendError, match="broken.onnx") as e:
        relay.frontend.from_onnx(str(path))
    assert why in str(e.value)
    with pytest.raises(FrontendError, match="no ONNX model file at .*missing.onnx"):
        relay.frontend.from_onnx(tmp_path / "missing.onnx")


def test_model_file_loads_and_runs(tmp_path):
    path = tmp_path / "relu.onnx"
    onnx.save(_relu_model(), str(path))
    mod, params = relay.frontend.from_onnx(path)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    out = relay.create_executor("graph", mod, params=params).evaluate()(x)
    np.testing.assert_allclose(out.numpy(), np.maximum(x, 0))


def test_checker_findings_are_warnings():
    m = _relu_model(x_shape=None)        # an input type without a shape: the checker objects
    with pytest.warns(ModelCheckWarning, match="onnx.checker: .*shape"):
        mod, _ = relay.frontend.from_onnx(m, shape={"x": (2, 3)})
    assert "nn.relu" in str(mod)
