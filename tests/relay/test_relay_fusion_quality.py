"""Fusion and layout quality on inception, residual and small CNN graphs: which groups form, how many
layout_transforms remain and where, and that the outputs still match onnxruntime / numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay
from tvmlab.bench import models
from tvmlab.contrib import graph_executor
from tvmlab.relay.build_module import optimize
from tvmlab.relay.expr import Call, Function, post_order

ort = pytest.importorskip("onnxruntime")

AVX2 = "llvm -mcpu=core-avx2"       # pinned: channel blocks follow the vector width (16 float32 here)


def _import(model):
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    mod, params = relay.frontend.from_onnx(model, shape={"data": shape}, dtype="float32")
    return mod, params, shape


def _groups(model, target=AVX2, **ctx):
    """[(op names in order, anchor pattern)] of each fused group of ``model`` after the full pipeline."""
    mod, params, _ = _import(model)
    with tvm.transform.PassContext(opt_level=3, **ctx):
        out, _ = optimize(mod, target=target, params=params)
    groups = []
    for n in post_order(out["main"].body):
        if isinstance(n, Call) and isinstance(n.op, Function):
            groups.append([c.op.name for c in post_order(n.op.body) if isinstance(c, Call)])
    return groups


def _layout_transforms(model, target=AVX2):
    mod, params, _ = _import(model)
    with tvm.transform.PassContext(opt_level=3):
        out, _ = optimize(mod, target=target, params=params)
    res = []
    for n in post_order(out["main"].body):
        if isinstance(n, Call) and isinstance(n.op, Function):
            for c in post_order(n.op.body):
                if isinstance(c, Call) and c.op.name == "layout_transform":
                    res.append((c.attrs.src_layout, c.attrs.dst_layout))
    return res


def _run_vs_ort(model, **ctx):
    mod, params, shape = _import(model)
    x = np.random.default_rng(1).standard_normal(shape).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"data": x})[0]
    with tvm.transform.PassContext(opt_level=3, **ctx):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x)
    m.run()
    got = m.get_output(0).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


# -- fusion -------------------------------------------------------------------------------------------
def test_inception_each_conv_takes_its_bias_and_relu():
    groups = _groups(models.inception_block())
    convs = [g for g in groups if "nn.contrib_conv2d_NCHWc" in g]
    assert len(convs) == 6
    for g in convs:        # every conv of the block has a bias and a relu, applied in the conv's group
        assert g == ["nn.contrib_conv2d_NCHWc", "add", "nn.relu"], g
    concat = [g for g in groups if "concatenate" in g]
    assert len(concat) == 1
    assert set(concat[0]) <= {"concatenate", "layout_transform"}, concat[0]   # no element-wise tail in it


def test_inception_fusion_off_keeps_every_op_alone():
    groups = _groups(models.inception_block(), disabled_pass=["FuseOps"])
    assert all(len(g) == 1 for g in groups)


def test_tail_read_twice_by_the_concat_group_stays_with_the_conv():
    x = relay.var("x", shape=(1, 8, 6, 6))
    w = relay.const(np.random.default_rng(0).standard_normal((8, 8, 1, 1)).astype("float32"))
    r = relay.nn.relu(relay.nn.conv2d(x, w, channels=8, kernel_size=(1, 1)))
    out = relay.concatenate([r, relay.exp(r)], axis=1)
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    from tvmlab.relay.transform.fuse_ops import find_groups
    from tvmlab.relay.transform.infer_type import infer_function
    f = mod["main"]
    infer_function(f)
    gs = find_groups(f.body)
    conv = next(n for n in gs if isinstance(n, Call) and n.op.name == "nn.conv2d")
    relu = next(n for n in gs if isinstance(n, Call) and n.op.name == "nn.relu")
    exp = next(n for n in gs if isinstance(n, Call) and n.op.name == "exp")
    assert gs[conv] is gs[relu]             # relu is written once by the conv's group ...
    assert gs[exp] is gs[f.body] and gs[relu] is not gs[f.body]   # ... and read twice by the concatenate


def test_elementwise_chain_without_anchor_still_fuses_into_concatenate():
    x = relay.var("x", shape=(1, 4, 5, 5))
    y = relay.var("y", shape=(1, 4, 5, 5))
    out = relay.concatenate([relay.nn.relu(relay.add(x, y)), relay.exp(y)], axis=1)
    f = relay.Function([x, y], out)
    from tvmlab.relay.transform.fuse_ops import find_groups
    from tvmlab.relay.transform.infer_type import infer_function
    infer_function(f)
    gs = find_groups(f.body)
    assert len({id(g) for g in gs.values()}) == 1


# -- layout ------------------------------------------------------------------------------------------
def test_inception_pool_and_concat_stay_blocked():
    lts = _layout_transforms(models.inception_block())
    # the input once (shared by three convs and the pool); the branches' blocks differ (8, 8, 4, 4), so each
    # goes back to NCHW inside the concatenate's group
    assert sorted(lts) == sorted([("NCHW", "NCHW16c"), ("NCHW8c", "NCHW"), ("NCHW8c", "NCHW"),
                                  ("NCHW4c", "NCHW"), ("NCHW4c", "NCHW")])
    groups = _groups(models.inception_block())
    pool = next(g for g in groups if "nn.max_pool2d" in g)
    assert "layout_transform" not in pool


def test_small_cnn_transforms_only_at_the_ends():
    lts = _layout_transforms(models.small_cnn())
    assert lts == [("NCHW", "NCHW3c"), ("NCHW16c", "NCHW")]    # into the first conv; before flatten
    groups = _groups(models.small_cnn())
    flat = next(g for g in groups if "nn.batch_flatten" in g)
    assert flat == ["nn.global_avg_pool2d", "layout_transform", "nn.batch_flatten"]   # the pool takes its tail


def test_residual_block_input_transformed_once():
    lts = _layout_transforms(models.residual_block())
    assert lts == [("NCHW", "NCHW16c"), ("NCHW16c", "NCHW")]   # the skip reads the same blocked input
    groups = _groups(models.residual_block())
    # the second conv takes its bias, the skip add and the relu; the output's layout_transform stands alone
    assert ["nn.contrib_conv2d_NCHWc", "add", "add", "nn.relu"] in groups
    assert groups[-1] == ["layout_transform"]


def test_concat_of_differently_blocked_convs_matches_numpy():
    rng = np.random.default_rng(2)
    x = relay.var("data", shape=(1, 16, 6, 6))
    a = relay.nn.conv2d(x, relay.const(rng.standard_normal((16, 16, 1, 1)).astype("float32")), channels=16,
                        kernel_size=(1, 1))
    b = relay.nn.conv2d(x, relay.const(rng.standard_normal((3, 16, 1, 1)).astype("float32")), channels=3,
                        kernel_size=(1, 1))
    out = relay.nn.relu(relay.concatenate([a, b], axis=1))
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = optimize(mod, target=AVX2)
        lib = relay.build(mod, target="llvm")
    cat = [c for c in post_order(opt["main"].body) if isinstance(c, Call) and isinstance(c.op, Function)
           and any(isinstance(i, Call) and i.op.name == "concatenate" for i in post_order(c.op.body))]
    assert cat[0].checked_type.shape == (1, 19, 6, 6)
    xv = rng.standard_normal((1, 16, 6, 6)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", xv)
    m.run()
    from tvmlab.topi.testing import conv2d_nchw_python
    ref = np.concatenate([conv2d_nchw_python(xv, lit.data.numpy(), 1, 0) for lit in (a.args[1], b.args[1])], axis=1)
    np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def test_pool_read_by_something_else_stays_nchw():
    x = relay.var("data", shape=(1, 16, 8, 8))
    out = relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = optimize(tvm.IRModule.from_expr(relay.Function([x], out)), target=AVX2)
    assert "layout_transform" not in str(opt)


# -- outputs --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["inception_block", "small_cnn", "residual_block"])
def test_outputs_match_onnxruntime(name):
    _run_vs_ort(getattr(models, name)())


def test_inception_with_odd_size_matches_onnxruntime():
    _run_vs_ort(models.inception_block(channels=12, size=7, seed=3))


def test_profiles_side_by_side_with_onnxruntime():
    from tvmlab.bench import graph as gbench
    model = models.small_cnn(size=16)
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype("float32")
    by_op, run_ms = gbench.ort_profile(model, x, nthreads=1, runs=3)
    assert {"Conv", "Gemm", "Softmax"} <= set(by_op) and all(ms > 0 for ms in by_op.values()) and run_ms > 0
    assert "Conv" in gbench.format_ort_profile(by_op, run_ms)
    gmod, _ = gbench.compile_onnx(model, {"data": (1, 3, 16, 16)})
    rep = gmod.profile(number=1, repeat=1, data=x)
    names = [r["name"] for r in rep.rows]
    assert sum("conv2d" in n for n in names) == 4 and any("softmax" in n for n in names)
    # the global pool took the layout_transform and the flatten: no kernel of its own for them
    assert not any(n.startswith("fused_layout_transform_nn_batch_flatten") for n in names)
    o = gbench.node_overhead(nodes=8, rounds=1)
    assert o["native"] > 0 and o["python"] > 0


def test_image_channels_are_packed_inside_the_first_conv():
    groups = _groups(models.small_cnn())
    assert groups[0] == ["layout_transform", "nn.contrib_conv2d_NCHWc", "add", "nn.relu"]
    assert sum(g.count("layout_transform") for g in groups) == 2        # the other one follows the global pool
    # 16 channels are whole vector blocks: their transform stays a kernel of its own, as does one that two
    # convolutions read
    for c, readers in ((16, 1), (3, 2)):
        x = relay.var("x", shape=(1, c, 8, 8))
        ws = [relay.const(np.random.default_rng(k).standard_normal((16, c, 3, 3)).astype("float32"))
              for k in range(readers)]
        convs = [relay.nn.conv2d(x, w, padding=(1, 1)) for w in ws]
        body = convs[0] if readers == 1 else relay.add(convs[0], convs[1])
        mod = tvm.IRModule.from_expr(relay.Function([x], body))
        with tvm.transform.PassContext(opt_level=3):
            out, _ = optimize(mod, target=AVX2)
        got = [[c_.op.name for c_ in post_order(n.op.body) if isinstance(c_, Call)]
               for n in post_order(out["main"].body) if isinstance(n, Call) and isinstance(n.op, Function)]
        assert ["layout_transform"] in got, (c, readers, got)


def test_first_conv_with_packed_input_matches_numpy(rng):
    """Three channels packed inside the conv's kernel; one channel (NCHW1c) is a view of the input."""
    from tvmlab.topi import testing as ref
    for shape, stride in (((1, 3, 13, 11), 2), ((2, 1, 9, 9), 1)):
        x = relay.var("x", shape=shape)
        w = rng.standard_normal((20, shape[1], 3, 3)).astype("float32")
        y = relay.nn.relu(relay.nn.conv2d(x, relay.const(w), strides=(stride, stride), padding=(1, 1)))
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        xv = rng.standard_normal(shape).astype("float32")
        m.set_input("x", xv)
        m.run()
        want = np.maximum(ref.conv2d_nchw_python(xv, w, (stride, stride), (1, 1, 1, 1)), 0)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
