"""Whole ONNX models through from_onnx, relay.build and the graph executor, against onnxruntime;
and the errors a bad model or a bad call gives.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from onnx_util import build, check, model, rand  # noqa: E402
from tvmlab import relay  # noqa: E402
from tvmlab.bench import models  # noqa: E402
from tvmlab.errors import TVMLabError  # noqa: E402

mk = helper.make_node


@pytest.mark.parametrize("opset", [9, 13, 21])
def test_residual_block(opset):
    x = rand(1, 16, 14, 14, seed=1)
    check(models.residual_block(opset=opset), {"data": x})


def test_inception_block():
    x = rand(2, 16, 12, 12, seed=2)
    check(models.inception_block(batch=2), {"data": x})


def test_small_cnn_odd_size():
    """31x31: no split factor divides the spatial sizes."""
    x = rand(1, 3, 31, 31, seed=3)
    check(models.small_cnn(size=31), {"data": x}, atol=1e-5)


def test_small_cnn_opt_level_0():
    """opt_level 0: no constant folding, no layout change, every operator its own kernel."""
    x = rand(1, 3, 32, 32, seed=4)
    check(models.small_cnn(), {"data": x}, opt_level=0)


def test_freeze_params_and_set_input_by_index():
    m = models.residual_block()
    mod, params = relay.frontend.from_onnx(m, freeze_params=True)
    assert params == {}
    assert [p.name_hint for p in mod["main"].params] == ["data"]
    g = build(m, freeze_params=True)
    x = rand(1, 16, 14, 14, seed=5)
    g.set_input(0, x)
    g.run()
    from onnx_util import run_ort
    np.testing.assert_allclose(g.get_output(0).numpy(), run_ort(m, {"data": x})[0], rtol=1e-3, atol=1e-5)


def test_params_are_initializers():
    mod, params = relay.frontend.from_onnx(models.small_cnn())
    names = [p.name_hint for p in mod["main"].params]
    assert names[0] == "data" and set(names[1:]) == set(params)
    assert all(params[k].shape == tuple(int(d) for d in v.type_annotation.shape)
               for k, v in zip(names[1:], mod["main"].params[1:]))


def test_multiple_outputs_and_int_input():
    x = rand(3, 8, seed=6)
    idx = np.array([2, 0, 1], np.int64)
    nodes = [mk("Gather", ["x", "i"], ["g"], axis=0), mk("Relu", ["g"], ["r"]), mk("Sigmoid", ["x"], ["s"])]
    check(model(nodes, {"x": x, "i": idx}, ["r", "s"]), {"x": x, "i": idx})


# ------------------------------------------------------------------ errors
def test_unknown_op_names_type_node_and_supported_list():
    nodes = [mk("Relu", ["x"], ["r"], name="ok"), mk("Frobnicate", ["r"], ["y"], name="mystery_node")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(relay.frontend.OpNotImplemented) as e:
        relay.frontend.from_onnx(m)
    msg = str(e.value)
    assert "Frobnicate" in msg and "mystery_node" in msg and "Conv" in msg and "Relu" in msg


def test_missing_input_shape_is_clear():
    graph = helper.make_graph([mk("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(relay.frontend.MissingInputShape, match=r"'x'.*\(\?, 3\).*shape="):
        relay.frontend.from_onnx(m)
    mod, _ = relay.frontend.from_onnx(m, shape={"x": (4, 3)})
    assert tuple(mod["main"].params[0].type_annotation.shape) == (4, 3)
    with pytest.raises(TVMLabError, match="dimension 1 is 3 in the model, but shape= gives 5"):
        relay.frontend.from_onnx(m, shape={"x": (4, 5)})
    with pytest.raises(TVMLabError, match="'y'.*not a graph input"):
        relay.frontend.from_onnx(m, shape={"x": (4, 3), "y": (4, 3)})


def test_bad_attribute_names_the_node():
    import onnx
    node = mk("Conv", ["x", "w"], ["y"], name="conv_a", group=3)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[onnx.numpy_helper.from_array(rand(6, 2, 3, 3, seed=9), "w")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(TVMLabError, match=r"Conv node 'conv_a'.*4 channels.*2 x group 3"):
        relay.frontend.from_onnx(m)


def test_runtime_computed_shape_input_is_refused():
    x, s = rand(2, 6, seed=10), np.array([3, 4], np.int64)
    m = model(mk("Reshape", ["x", "s"], ["y"], name="r"), {"x": x, "s": s}, [("y", (3, 4))])
    with pytest.raises(TVMLabError, match=r"Reshape node 'r'.*shape.*constant or an initializer"):
        relay.frontend.from_onnx(m)


def test_old_opset_is_refused():
    x = rand(2, 3, seed=11)
    m = model(mk("Relu", ["x"], ["y"]), {"x": x}, ["y"], opset=13)
    with pytest.raises(TVMLabError, match="opset 8 is not supported"):
        relay.frontend.from_onnx(m, opset=8)


def test_not_a_model():
    with pytest.raises(TVMLabError, match="ModelProto"):
        relay.frontend.from_onnx({"not": "a model"})


def test_wrong_input_dtype_at_set_input():
    g = build(models.residual_block())
    with pytest.raises(TVMLabError, match="float32"):
        g.set_input("data", rand(1, 16, 14, 14).astype(np.float64))
    with pytest.raises(TVMLabError, match="shape"):
        g.set_input("data", rand(1, 16, 14, 13))
    with pytest.raises(TVMLabError, match="nope"):
        g.set_input("nope", rand(1, 16, 14, 14))


def test_exported_model_runs_in_a_fresh_process(tmp_path):
    """lib.export_library + tvm.runtime.load_module in another interpreter, params included."""
    import subprocess
    import sys

    import tvmlab as tvm
    m = models.small_cnn(size=20)
    mod, params = relay.frontend.from_onnx(m)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    path = tmp_path / "cnn.so"
    lib.export_library(str(path))
    x = rand(1, 3, 20, 20, seed=12)
    np.save(tmp_path / "x.npy", x)
    script = f"""
import numpy as np, tvmlab as tvm
from tvmlab.contrib import graph_executor
g = graph_executor.GraphModule(tvm.runtime.load_module({str(path)!r})["default"](tvm.cpu(0)))
g.set_input("data", np.load({str(tmp_path / 'x.npy')!r}))
g.run()
np.save({str(tmp_path / 'y.npy')!r}, g.get_output(0).numpy())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    from onnx_util import run_ort
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), run_ort(m, {"data": x})[0], rtol=1e-3, atol=1e-5)


def test_path_input_and_dtype_by_name(tmp_path):
    import onnx
    x, idx = rand(3, 8, seed=13), np.array([2, 0], np.int64)
    nodes = [mk("Gather", ["x", "i"], ["g"], axis=0), mk("Relu", ["g"], ["y"])]
    m = model(nodes, {"x": x, "i": idx}, ["y"])
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    mod, _ = relay.frontend.from_onnx(str(path), dtype={"x": "float32"})
    kinds = {p.name_hint: p.type_annotation.dtype for p in mod["main"].params}
    assert kinds == {"x": "float32", "i": "int64"}        # the int input keeps its declared dtype
    with pytest.raises(TVMLabError, match="'z'.*not a graph input"):
        relay.frontend.from_onnx(m, dtype={"z": "float32"})
    with pytest.raises(TVMLabError, match="dtype of input 'x' must be a dtype.*'floaty'"):
        relay.frontend.from_onnx(m, dtype={"x": "floaty"})
    with pytest.raises(TVMLabError, match="shape= must map input names"):
        relay.frontend.from_onnx(m, shape=[(3, 8)])


def test_graph_benchmark_checks_and_reports(capsys):
    """The benchmark's plumbing (not its timings): builds checked against onnxruntime, a row per variant,
    the pass-off ratio against the full pipeline, and a per-kernel profile."""
    from tvmlab.bench import graph as gbench
    rows = gbench.bench_model("residual", models.residual_block(size=8), (1, 16, 8, 8),
                              variants=gbench.VARIANTS[:2], rounds=1, min_ms=1)
    assert [r.variant for r in rows] == ["tvmlab", "no FuseOps"]
    assert all(r.max_rel_err < 1e-3 and r.tvmlab_s > 0 and r.ort_s > 0 for r in rows)
    assert rows[0].slowdown == 1.0 and rows[1].slowdown > 0
    table = gbench.format_table(rows)
    assert "no FuseOps" in table and "pass off" in table
    gmod, _ = gbench.compile_onnx(models.residual_block(size=8), {"data": (1, 16, 8, 8)})
    gmod.set_input("data", rand(1, 16, 8, 8))
    gmod.run()
    prof = gbench.profile(gmod, number=1, rounds=1)
    assert len(prof) == len(gmod.module.calls) and all(ms > 0 for _, ms, _ in prof)
    assert "kernel calls" in gbench.format_profile(prof)


def test_constant_index_out_of_range_names_the_node():
    x = rand(4, 3, seed=14)
    m = model(mk("Gather", ["x", "i"], ["y"], name="pick"), {"x": x}, [("y", (2, 3))],
              {"i": np.array([1, 9], np.int64)})
    with pytest.raises(TVMLabError, match=r"Gather node 'pick'.*out of range for axis 0 of size 4"):
        relay.frontend.from_onnx(m)


def test_tvm_onnx_tutorial_runs_with_only_imports_changed():
    """TVM's "Compile ONNX Models" tutorial, spelled as it is there (positional shape dict, create_executor)."""
    import tvmlab as tvm
    onnx_model = models.small_cnn(size=24)
    x = rand(1, 3, 24, 24, seed=15)
    target = "llvm"
    input_name = "data"
    shape_dict = {input_name: x.shape}
    mod, params = relay.frontend.from_onnx(onnx_model, shape_dict)
    with tvm.transform.PassContext(opt_level=1):
        executor = relay.build_module.create_executor("graph", mod, tvm.cpu(0), target, params).evaluate()
    dtype = "float32"
    tvm_output = executor(tvm.nd.array(x.astype(dtype))).numpy()
    from onnx_util import run_ort
    np.testing.assert_allclose(tvm_output, run_ort(onnx_model, {"data": x})[0], rtol=1e-3, atol=1e-5)


def test_control_flow_is_reported_as_unsupported():
    then = helper.make_graph([mk("Relu", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    other = helper.make_graph([mk("Neg", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    node = mk("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(relay.frontend.OpNotImplemented, match=r"If in node 'branch'"):
        relay.frontend.from_onnx(m)
