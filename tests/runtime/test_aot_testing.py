"""``tvmlab.testing.aot``: models built ahead of time, checked from a generated C program against the
graph executor's outputs; a wrong expected output is reported, a Corstone-300 runner is refused."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.errors import DeviceError, RuntimeArgError
from tvmlab.micro.testing.aot_test_utils import (AOT_CORSTONE300_RUNNER, AOT_DEFAULT_RUNNER,
                                                parametrize_aot_options)
from tvmlab.testing.aot import AOTTestFailure, AOTTestModel, compile_and_run, generate_ref_data

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in ("cc", "gcc", "clang")),
                                reason="no C compiler (cc, gcc or clang) for the test program")


def conv_relu(rng):
    """conv2d (stride 1, padding 1, 5 channels: no tile divides them) + bias + relu, weights as params."""
    x = relay.var("data", shape=(1, 3, 11, 9))
    w, b = relay.var("w", shape=(5, 3, 3, 3)), relay.var("b", shape=(5,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1), kernel_size=(3, 3)), b))
    params = {"w": rng.uniform(-1, 1, (5, 3, 3, 3)).astype("float32"), "b": rng.uniform(-1, 1, 5).astype("float32")}
    return tvm.IRModule.from_expr(relay.Function([x, w, b], y)), params


def conv_relu_numpy(x, w, b):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, 5, 11, 9), "float64")
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 11, j:j + 9], w[:, :, i, j])
    return np.maximum(out + b[None, :, None, None], 0)


def dense_model(rng):
    a, b = relay.var("a", shape=(3, 17)), relay.var("b", shape=(7, 17))
    return tvm.IRModule.from_expr(relay.Function([a, b], relay.nn.dense(a, b)))


def test_conv2d_relu_checked_from_c_against_the_graph_executor(rng, tmp_path):
    mod, params = conv_relu(rng)
    inputs = {"data": rng.uniform(-1, 1, (1, 3, 11, 9)).astype("float32")}
    outputs = generate_ref_data(mod, inputs, params)
    assert list(outputs) == ["output"]
    np.testing.assert_allclose(outputs["output"], conv_relu_numpy(inputs["data"], params["w"], params["b"]),
                               rtol=1e-5, atol=1e-5)
    assert (outputs["output"] > 0).any() and (outputs["output"] == 0).any()
    report = compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs=outputs, params=params),
                             AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=True, test_dir=tmp_path)
    assert "AOT_TEST_SUCCESS" in report
    assert (tmp_path / "main.c").exists() and (tmp_path / "default.h").exists()


def test_a_dense_model_and_two_models_in_one_program(rng):
    mod = dense_model(rng)
    inputs = {"a": rng.standard_normal((3, 17)).astype("float32"),
              "b": rng.standard_normal((7, 17)).astype("float32")}
    outputs = generate_ref_data(mod, inputs)
    np.testing.assert_allclose(outputs["output"], inputs["a"] @ inputs["b"].T, rtol=1e-5, atol=1e-5)
    conv, params = conv_relu(rng)
    x = {"data": rng.uniform(-1, 1, (1, 3, 11, 9)).astype("float32")}
    compile_and_run([AOTTestModel(module=mod, inputs=inputs, outputs=[outputs["output"]], name="dense"),
                     AOTTestModel(module=conv, inputs=x, outputs=generate_ref_data(conv, x, params), params=params,
                                  name="conv")],
                    AOT_DEFAULT_RUNNER, interface_api="packed", use_unpacked_api=False, target="c")


def test_an_integer_model_is_compared_exactly(rng):
    a = relay.var("a", shape=(4, 6), dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([a], relay.multiply(a, relay.const(3, "int32"))))
    x = rng.integers(-50, 50, (4, 6)).astype("int32")
    compile_and_run(AOTTestModel(module=mod, inputs={"a": x}, outputs={"output": x * 3}), AOT_DEFAULT_RUNNER,
                    "c", True)
    wrong = x * 3
    wrong[3, 5] += 1
    with pytest.raises(AOTTestFailure, match=r"1 of 24 elements differ.*index 23: got .*, expected"):
        compile_and_run(AOTTestModel(module=mod, inputs={"a": x}, outputs={"output": wrong}), AOT_DEFAULT_RUNNER,
                        "c", True)


def test_a_wrong_expected_output_is_reported(rng):
    mod = dense_model(rng)
    inputs = {"a": rng.standard_normal((3, 17)).astype("float32"),
              "b": rng.standard_normal((7, 17)).astype("float32")}
    expected = generate_ref_data(mod, inputs)["output"].copy()
    expected[1, 2] += 0.01                               # beyond the default tolerance, 0.001
    with pytest.raises(AOTTestFailure, match=r"model 'default' output 'output': 1 of 21 elements differ by more "
                                             r"than 0.001; first at flat index 9"):
        compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs={"output": expected}),
                        AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=True)
    # the same difference within the model's own tolerance passes
    compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs={"output": expected}, output_tolerance=0.02),
                    AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=True)


def test_bad_arguments_and_the_corstone_runner_raise_clear_errors(rng):
    mod = dense_model(rng)
    inputs = {"a": rng.standard_normal((3, 17)).astype("float32"),
              "b": rng.standard_normal((7, 17)).astype("float32")}
    good = AOTTestModel(module=mod, inputs=inputs, outputs={"output": np.ones((3, 7), "float32")})
    with pytest.raises(DeviceError, match="Corstone-300 FVP"):
        compile_and_run(good, AOT_CORSTONE300_RUNNER, "c", True)
    with pytest.raises(RuntimeArgError, match="use_unpacked_api=True"):
        compile_and_run(good, AOT_DEFAULT_RUNNER, "c", False)
    with pytest.raises(RuntimeArgError, match="no output named 'out'"):
        compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs={"out": np.ones((3, 7), "float32")}),
                        AOT_DEFAULT_RUNNER, "c", True)
    with pytest.raises(RuntimeArgError, match=r"input 'a' is float32\[3, 17\], got float64\[3, 17\]"):
        compile_and_run(AOTTestModel(module=mod, inputs={**inputs, "a": inputs["a"].astype("float64")},
                                     outputs={"output": np.ones((3, 7), "float32")}), AOT_DEFAULT_RUNNER, "c", True)
    with pytest.raises(RuntimeArgError, match="C identifier"):
        compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs=[], name="my model"),
                        AOT_DEFAULT_RUNNER, "c", True)


@parametrize_aot_options
def test_parametrize_aot_options_runs_each_host_combination(interface_api, use_unpacked_api, test_runner, rng):
    assert test_runner is AOT_DEFAULT_RUNNER        # the Corstone-300 combination is skipped
    mod = dense_model(rng)
    inputs = {"a": rng.standard_normal((3, 17)).astype("float32"),
              "b": rng.standard_normal((7, 17)).astype("float32")}
    compile_and_run(AOTTestModel(module=mod, inputs=inputs, outputs={"output": inputs["a"] @ inputs["b"].T}),
                    test_runner, interface_api, use_unpacked_api)


@tvm.testing.requires_corstone300
def test_the_corstone_marker_skips():
    raise AssertionError("requires_corstone300 should have skipped this test")
