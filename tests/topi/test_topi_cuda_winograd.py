"""topi.cuda's Winograd convolution (F(4x4, 3x3) and F(2x2, 3x3), NCHW): four kernels checked thread by thread
(and on a GPU where there is one) against numpy, relay.build(target="cuda") choosing it, its AutoTVM template."""
import json
import re

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import autotvm, relay, te, topi
from tvmlab.autotvm import topi_templates
from tvmlab.autotvm.space import ConfigError
from tvmlab.relay.transform import winograd_cuda
from tvmlab.relay.transform.infer_type import infer_function
from tvmlab.topi.nn.winograd import winograd_matrices
from tvmlab.topi.testing import conv2d_nchw_python


def _source(f):
    return f.imported_modules[0].get_source()


def _kernels(src):
    return src.count("__global__")


@pytest.mark.parametrize("N,C,H,W,O,P,m", [
    (2, 5, 10, 11, 70, 1, 4),            # F(4x4): tiles, channels and output channels the blocks do not divide
    (1, 3, 7, 6, 5, 1, 2),               # a small output: F(2x2)
    (1, 4, 12, 9, 6, (0, 1, 2, 1), 4),   # padding unequal on each side
])
def test_matches_numpy(cuda_run, rng, N, C, H, W, O, P, m):
    X, Wt = te.placeholder((N, C, H, W), name="X"), te.placeholder((O, C, 3, 3), name="W")
    Y = topi.cuda.conv2d_nchw_winograd(X, Wt, 1, P, 1, "float32")
    assert Y.op.attrs["tile_size"] == m
    f = tvm.build(topi.cuda.schedule_conv2d_nchw_winograd([Y]), [X, Wt, Y], "cuda")
    src = _source(f)
    assert _kernels(src) == 4 and "__shared__" in src and "float winograd_input_tile[" in src
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((O, C, 3, 3)).astype("float32")
    want = conv2d_nchw_python(x, w, 1, P)
    *_, got = cuda_run(f, x, w, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_product_reads_four_outputs_a_thread_as_one_float4(cuda_run, rng):
    """The batched product gives each thread 4 consecutive output channels and 4 consecutive tiles, both
    operands stored channels outermost: each is one float4 read per input channel, 8 FMAs per read.  The
    tiles axis takes a width that divides the tile count where one does (48 tiles: 12 threads of 4), so
    no read of the last tile is guarded (a guarded read stays scalar)."""
    from tvmlab.topi.cuda import conv2d_winograd as wino
    assert wino._product_tile(784, 16) == (1, 14, 4) and wino._product_tile(3136, 16) == (1, 16, 4)
    fmas, loads, product = _product_counts(cuda_run, rng, 3, 8, 16, 32)
    assert loads and not re.search(r"ld\.shared\.f32", product) and fmas >= 8 * loads


def _product_counts(cuda_run, rng, N, C, H, O):
    """(FMAs, float4 shared reads, PTX) of the batched product of a Winograd convolution built with the
    schedule's own choices, after checking the convolution against numpy."""
    X, Wt = te.placeholder((N, C, H, H), name="X"), te.placeholder((O, C, 3, 3), name="W")
    Y = topi.cuda.conv2d_nchw_winograd(X, Wt, 1, 1, 1, "float32")
    f = tvm.build(topi.cuda.schedule_conv2d_nchw_winograd([Y]), [X, Wt, Y], "cuda")
    ptx = f.imported_modules[0].get_source("ptx")
    product = next(k for k in ptx.split(".entry")[1:] if "ld.shared" in k)
    x = rng.standard_normal((N, C, H, H)).astype("float32")
    w = rng.standard_normal((O, C, 3, 3)).astype("float32")
    want = conv2d_nchw_python(x, w, 1, 1)
    *_, got = cuda_run(f, x, w, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return len(re.findall(r"fma\.rn\.f32", product)), len(re.findall(r"ld\.shared\.v4\.f32", product)), product


def _transformed(w, m):
    """U (alpha, alpha, C, O) = G g G^T in numpy."""
    _, _, g = winograd_matrices(m, 3)
    return np.ascontiguousarray(np.einsum("ea,ocab,ub->euco", g, w.astype("float64"), g), dtype="float32")


def test_without_weight_transform_with_bias_relu(cuda_run, rng):
    """The transformed kernel read as it is; bias and relu computed where the inverse transform writes."""
    N, C, H, W, O, m = 1, 6, 9, 9, 10, 4
    X, U = te.placeholder((N, C, H, W), name="X"), te.placeholder((m + 2, m + 2, C, O), name="U")
    B = te.placeholder((O, 1, 1), name="B")
    conv = topi.cuda.conv2d_nchw_winograd_without_weight_transform(X, U, 1, 1, 1, "float32")
    Y = topi.nn.relu(topi.add(conv, B))
    s = topi.cuda.schedule_conv2d_nchw_winograd_without_weight_transform([Y])
    f = tvm.build(s, [X, U, B, Y], "cuda")
    assert _kernels(_source(f)) == 3            # no weight transform
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((O, C, 3, 3)).astype("float32")
    b = rng.standard_normal((O, 1, 1)).astype("float32")
    want = np.maximum(conv2d_nchw_python(x, w, 1, 1) + b, 0)
    *_, got = cuda_run(f, x, _transformed(w, m), b, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_transforms_use_only_nonzero_constants_and_compile_with_nvrtc():
    X, Wt = te.placeholder((1, 8, 16, 16), name="X"), te.placeholder((16, 8, 3, 3), name="W")
    Y = topi.cuda.conv2d_nchw_winograd(X, Wt, 1, 1, 1, "float32")
    f = tvm.build(topi.cuda.schedule_conv2d_nchw_winograd([Y]), [X, Wt, Y], "cuda")
    src = _source(f)
    # the constant selects folded away: no multiply by zero, no index compare on a transform point
    assert "* 0.000000e+00f" not in src and "* 0.0f" not in src and "* (-0.0f)" not in src
    bt = winograd_matrices(4, 3)[1]
    data_pack = src[src.index("default_function_kernel1("):src.index("default_function_kernel2(")]
    # rows then columns (6 each): a multiply for each constant of B^T that is neither 0 nor 1, no more
    assert len(re.findall(r"\* \(?-?\d+\.\d+f\)?", data_pack)) == 12 * int(np.count_nonzero((bt != 0) & (bt != 1)))
    ptx = f.imported_modules[0].get_source("ptx")
    assert all(f".entry default_function_kernel{k}" in ptx for k in range(4))


def test_errors_are_clear():
    X, Wt = te.placeholder((1, 4, 8, 8), name="X"), te.placeholder((4, 4, 3, 3), name="W")
    with pytest.raises(tvm.TVMLabError, match="unit strides"):
        topi.cuda.conv2d_nchw_winograd(X, Wt, 2, 1, 1, "float32")
    with pytest.raises(tvm.TVMLabError, match="not \\(O, C, 3, 3\\)"):
        topi.cuda.conv2d_nchw_winograd(X, te.placeholder((4, 4, 5, 5), name="K"), 1, 1, 1, "float32")
    with pytest.raises(tvm.TVMLabError, match="transformed"):
        topi.cuda.conv2d_nchw_winograd_without_weight_transform(X, Wt, 1, 1, 1, "float32")
    Y = topi.cuda.conv2d_nchw_winograd(X, Wt, 1, 1, 1, "float32")
    with pytest.raises(tvm.TVMLabError, match="CUDA schedule"):
        topi.cuda.schedule_conv2d_nchw_winograd([Y], target="llvm")
    with pytest.raises(tvm.TVMLabError, match="no Winograd convolution"):
        topi.cuda.schedule_conv2d_nchw_winograd_without_weight_transform([topi.nn.relu(X)])


# ------------------------------------------------------------------ relay


def _conv_call(shape, o, strides=(1, 1), constant=True, kernel=3, groups=1):
    x = relay.var("x", shape=shape)
    w = relay.const(np.ones((o, shape[1] // groups, kernel, kernel), "float32")) if constant else \
        relay.var("w", shape=(o, shape[1] // groups, kernel, kernel))
    y = relay.nn.conv2d(x, w, strides=strides, padding=(1, 1), groups=groups)
    f = relay.Function([x] + ([] if constant else [w]), y)
    infer_function(f)
    return f.body


def test_the_rule():
    use = winograd_cuda.use_winograd_cuda
    assert use(_conv_call((16, 64, 56, 56), 64))              # ResNet-50's first stage at batch 16
    assert use(_conv_call((4, 256, 14, 14), 256))             # 4 x 16 tiles of 4x4
    assert not use(_conv_call((1, 256, 14, 14), 256))         # 16 tiles at batch 1: too few
    assert not use(_conv_call((1, 512, 7, 7), 512))
    assert not use(_conv_call((16, 32, 56, 56), 64))          # few input channels
    assert not use(_conv_call((16, 64, 56, 56), 64, strides=(2, 2)))
    assert not use(_conv_call((16, 64, 56, 56), 64, constant=False))
    assert not use(_conv_call((16, 64, 56, 56), 64, kernel=1))
    assert not use(_conv_call((16, 64, 56, 56), 64, groups=2))


def _graph(rng, N, C, H, W, O):
    x = relay.var("x", shape=(N, C, H, W))
    w = rng.standard_normal((O, C, 3, 3)).astype("float32")
    b = rng.standard_normal(O).astype("float32")
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, relay.const(w), padding=(1, 1)), relay.const(b)))
    return tvm.IRModule.from_expr(relay.Function([x], y)), w, b


def _func_names(lib):
    return [n["attrs"]["func_name"] for n in json.loads(lib.get_graph_json())["nodes"] if n["op"] == "tvm_op"]


def test_relay_build_picks_it_and_the_config_turns_it_off(monkeypatch, rng):
    monkeypatch.setattr(winograd_cuda, "MIN_CHANNELS", 4)       # a small graph taken as a big one is
    monkeypatch.setattr(winograd_cuda, "MIN_TILES", 4)
    N, C, H, W, O = 2, 5, 9, 10, 7
    mod, w, b = _graph(rng, N, C, H, W, O)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="cuda")
    assert _func_names(lib) == ["fused_nn_contrib_conv2d_winograd_without_weight_transform_nn_bias_add_nn_relu"]
    assert "winograd_bgemm" in lib.get_lib().imported_modules[0].get_source()
    assert any(p.shape == (6, 6, C, O) for p in lib.get_params().values())     # the folded weight transform
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    (got,) = tvm.testing.simulate_graph(lib, x=x)
    want = np.maximum(conv2d_nchw_python(x, w, 1, 1) + b[None, :, None, None], 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with tvm.transform.PassContext(opt_level=3, config={"relay.conv2d_winograd": False}):
        off = relay.build(mod, target="cuda")
    assert _func_names(off) == ["fused_nn_conv2d_nn_bias_add_nn_relu"]


# ------------------------------------------------------------------ AutoTVM

TASK = ("conv2d_nchw_winograd.cuda", (2, 6, 9, 10, 7, 3, 3, 1, 1, 1, "float32"))


def test_template_knobs_and_fallback(monkeypatch):
    task = autotvm.task.create(*TASK, target="cuda")
    assert list(task.config_space.space_map) == ["tile_b", "tile_y", "tile_x", "tile_rc", "auto_unroll_max_step",
                                                 "unroll_explicit"]
    assert task.flop == 2 * 2 * 7 * 9 * 10 * 6 * 9
    wg = pytest.importorskip("tvmlab.topi.cuda.conv2d_winograd")
    X, Wt = te.placeholder((2, 6, 9, 10), name="data"), te.placeholder((7, 6, 3, 3), name="kernel")
    Y = topi.cuda.conv2d_nchw_winograd(X, Wt, 1, 1, 1, "float32")
    with monkeypatch.context() as m:
        m.setattr(wg, "config_hook", None)
        hand = topi.cuda.schedule_conv2d_nchw_winograd([Y]).trace.as_python()
    with autotvm.task.ApplyConfig(topi_templates.fallback_config(task)):
        assert topi.cuda.schedule_conv2d_nchw_winograd([Y]).trace.as_python() == hand


def test_random_configs_compute_the_convolution(cuda_run, rng):
    task = autotvm.task.create(*TASK, target="cuda")
    space = task.config_space
    done = 0
    while done < 2:
        cfg = space.get(int(rng.integers(len(space))))
        regs = 1
        for name in ("tile_b", "tile_y", "tile_x"):
            regs *= cfg[name].size[1] * cfg[name].size[3]
        if regs > 8 or cfg["auto_unroll_max_step"].val > 512:
            continue
        try:
            s, args = task.instantiate(cfg)
        except ConfigError as e:
            assert "invalid config for this GPU" in str(e)
            continue
        f = tvm.build(s, args, "cuda")
        x = rng.standard_normal((2, 6, 9, 10)).astype("float32")
        w = rng.standard_normal((7, 6, 3, 3)).astype("float32")
        want = conv2d_nchw_python(x, w, 1, 1)
        *_, got = cuda_run(f, x, w, np.full(want.shape, np.nan, "float32"))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(cfg))
        done += 1


def test_tasks_of_a_program(monkeypatch, rng):
    monkeypatch.setattr(winograd_cuda, "MIN_CHANNELS", 4)
    monkeypatch.setattr(winograd_cuda, "MIN_TILES", 4)
    mod, _, _ = _graph(rng, 2, 6, 9, 10, 7)
    with tvm.transform.PassContext(opt_level=3):         # AlterOpLayout (opt_level 3) makes the Winograd call
        tasks = autotvm.task.extract_from_program(mod["main"], {}, target="cuda")
    assert [t.workload for t in tasks] == [TASK[0:1] + TASK[1]]


def test_product_tile_of_two_virtual_threads_where_the_extent_divides_it(cuda_run, rng, monkeypatch):
    """``PRODUCT_VTHREADS = 2``: a thread computes 8 x 8 outputs of the product (two float4 reads of each
    operand per input channel, 16 multiply-adds a read) where the extent divides twice the tile's width."""
    from tvmlab.topi.cuda import conv2d_winograd as wino
    monkeypatch.setattr(wino, "PRODUCT_VTHREADS", 2)
    assert wino._product_tile(128, 16) == (2, 16, 4) and wino._product_tile(784, 16) == (2, 14, 4)
    assert wino._product_tile(3136, 16) == (1, 16, 4)          # 3136 = 24.5 x 128
    fmas, loads, _ = _product_counts(cuda_run, rng, 2, 3, 32, 128)     # 2 x 8 x 8 tiles of F(4x4): 128 columns
    assert loads and fmas >= 16 * loads
