"""topi.cuda's NCHW convolution: channels and pixels tiled over a block, input channels stepped through shared
memory; checked thread by thread (and on a GPU where there is one) against numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay, te, topi
from tvmlab.topi.testing import conv2d_nchw_python


@pytest.mark.parametrize("N,C,H,W,O,K,S,P", [
    (2, 5, 10, 12, 70, 3, 2, 1),     # channels and pixels the tiles do not divide, stride 2, two images
    (1, 16, 7, 7, 64, 1, 1, 0),      # a 1x1 convolution on a 7x7 map (ResNet's last stage)
    (1, 3, 16, 16, 8, 7, 2, 3),      # a 7x7 stride-2 stem: few input channels, a wide window
])
def test_conv2d_bias_relu(cuda_run, rng, N, C, H, W, O, K, S, P):
    X, Wt = te.placeholder((N, C, H, W), name="X"), te.placeholder((O, C, K, K), name="W")
    B = te.placeholder((O, 1, 1), name="B")
    with tvm.target.Target("cuda"):
        conv = topi.nn.conv2d_nchw(X, Wt, S, P, 1)
        Y = topi.nn.relu(topi.add(conv, B))
        s = topi.cuda.schedule_conv2d_nchw_direct([Y])
    assert conv.op.attrs["direct"] == 1
    f = tvm.build(s, [X, Wt, B, Y], "cuda")
    src = f.imported_modules[0].get_source()
    assert "__shared__" in src and "threadIdx.z" in src
    # the kernel slice is stored output channels innermost: a thread's four channels are one float4 read
    # (where no channel guard stands between the four reads: 70 channels leave a partial block)
    assert ("ld.shared.v4.f32" in f.imported_modules[0].get_source("ptx")) == (O % 8 == 0)
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((O, C, K, K)).astype("float32")
    b = rng.standard_normal((O, 1, 1)).astype("float32")
    want = np.maximum(conv2d_nchw_python(x, w, S, P) + b, 0)
    *_, got = cuda_run(f, x, w, b, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_blocked_compute_gets_the_simple_schedule():
    """A convolution computed outside a GPU target (the CPU's blocked form) still schedules for CUDA."""
    X, Wt = te.placeholder((1, 4, 8, 8), name="X"), te.placeholder((8, 4, 3, 3), name="W")
    Y = topi.nn.conv2d_nchw(X, Wt, 1, 1, 1)
    assert "direct" not in Y.op.attrs
    with tvm.target.Target("cuda"):
        s = topi.cuda.schedule_conv2d_nchw([Y])
    assert "__shared__" not in tvm.build(s, [X, Wt, Y], "cuda").imported_modules[0].get_source()
    with pytest.raises(tvm.TVMLabError, match="CUDA schedule"):
        with tvm.target.Target("cuda"):
            Yd = topi.nn.conv2d_nchw(X, Wt, 1, 1, 1)
        topi.cuda.schedule_conv2d_nchw_direct([Yd], target="llvm")


def test_small_layers_keep_a_thread_per_output(monkeypatch):
    """Below MIN_BLOCKS blocks (a batch-1 layer) the dispatcher keeps one thread per output."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    X, Wt = te.placeholder((1, 16, 14, 14), name="X"), te.placeholder((64, 16, 3, 3), name="W")
    with tvm.target.Target("cuda"):
        Y = topi.nn.conv2d_nchw(X, Wt, 1, 1, 1)
    assert cuda_conv2d.tiled_blocks(Y) == 2 < cuda_conv2d.MIN_BLOCKS        # 64 channels, 7 x 14 pixels a block
    src = tvm.build(topi.cuda.schedule_conv2d_nchw([Y]), [X, Wt, Y], "cuda").imported_modules[0].get_source()
    assert "__shared__" not in src
    monkeypatch.setattr(cuda_conv2d, "MIN_BLOCKS", 2)
    src = tvm.build(topi.cuda.schedule_conv2d_nchw([Y]), [X, Wt, Y], "cuda").imported_modules[0].get_source()
    assert "__shared__" in src


def test_relay_residual_block_on_cuda(rng, monkeypatch):
    """relay.build for cuda: each convolution group (bias, relu, the residual add fused) is tiled."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    monkeypatch.setattr(cuda_conv2d, "MIN_BLOCKS", 1)       # tile even this small model's layers
    x = relay.var("x", shape=(1, 8, 9, 9))
    w1 = rng.standard_normal((16, 8, 3, 3)).astype("float32") * 0.2
    w2 = rng.standard_normal((16, 16, 1, 1)).astype("float32") * 0.2
    b1 = rng.standard_normal(16).astype("float32")
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, relay.const(w1), padding=(1, 1)), relay.const(b1)))
    y = relay.nn.relu(relay.nn.conv2d(y, relay.const(w2)) + y)
    try:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="cuda")
    except tvm.TVMLabError as e:
        if "NVRTC" in str(e) or "nvcc" in str(e):
            pytest.skip(f"no CUDA compiler here: {e}")
        raise
    src = lib.get_lib().get_source()
    assert src.count("__global__") == 2 and src.count("__shared__") == 4
    xv = rng.standard_normal((1, 8, 9, 9)).astype("float32")
    h = np.maximum(conv2d_nchw_python(xv, w1, 1, 1) + b1.reshape(16, 1, 1), 0)
    want = np.maximum(conv2d_nchw_python(h, w2, 1, 0) + h, 0)
    (got,) = tvm.testing.simulate_graph(lib, x=xv)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
