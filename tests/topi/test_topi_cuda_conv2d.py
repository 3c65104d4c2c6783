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


def _ptx_fma_per_shared_word(f):
    """Multiply-adds per 4-byte word loaded from shared memory in ``f``'s PTX (NVRTC's, loads merged)."""
    import re
    ptx = f.imported_modules[0].get_source("ptx")
    words = sum(n * len(re.findall(pattern, ptx)) for n, pattern in
                ((1, r"ld\.shared\.f32"), (2, r"ld\.shared\.v2\.f32"), (4, r"ld\.shared\.v4\.f32")))
    return len(re.findall(r"fma\.rn\.f32", ptx)) / words


def _resnet_layer(batch, c, hw, o, k):
    X, Wt = te.placeholder((batch, c, hw, hw), name="X"), te.placeholder((o, c, k, k), name="W")
    with tvm.target.Target("cuda"):
        Y = topi.nn.relu(topi.nn.conv2d_nchw(X, Wt, 1, k // 2, 1))
    return X, Wt, Y


@pytest.mark.parametrize("c,hw,o,k", [(128, 28, 128, 3), (64, 56, 64, 3), (64, 56, 256, 1)])
def test_register_tiles_read_each_shared_word_for_several_products(monkeypatch, c, hw, o, k):
    """A thread computes a run of 7 pixels of a row for 8-16 channels, so each word it reads from shared
    memory (a window pixel, reused across the kernel's columns; a float4 of weights) feeds several
    multiply-adds: at least 4 a word (the ratio the FMA units need of shared memory's bandwidth),
    against 1.6 with the tiles before."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    X, Wt, Y = _resnet_layer(16, c, hw, o, k)
    out, conv = cuda_conv2d._direct_outputs([Y], "cuda")
    choices = cuda_conv2d.hand_written(conv, out)
    assert choices["x"][2] == 7 and choices["f"][2] >= 8
    new = _ptx_fma_per_shared_word(tvm.build(topi.cuda.schedule_conv2d_nchw([Y]), [X, Wt, Y], "cuda"))
    monkeypatch.setattr(cuda_conv2d, "REGISTER_TILES", False)
    old = _ptx_fma_per_shared_word(tvm.build(topi.cuda.schedule_conv2d_nchw([Y]), [X, Wt, Y], "cuda"))
    assert new >= 4 > 2 > old


def _window_conflict(f, *arrays):
    rows = tvm.testing.simulate(f, *arrays, traffic=True).traffic()
    loads = [r for r in rows if r.scope == "shared" and r.op == "load" and "pad" in r.buffer]
    return sum(r.wavefronts for r in loads) / sum(r.ideal for r in loads)


def test_window_rows_are_padded_against_bank_conflicts(monkeypatch, rng):
    """On a 14 x 14 map two threads cover a row and a warp 14 rows; unpadded rows 16 words apart put half the
    rows in the same banks (6-way conflicts on the simulator's count).  ``window_pitch`` pads them so every
    read of the window is conflict-free, and the result is unchanged."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    X, Wt, Y = _resnet_layer(1, 8, 14, 32, 3)
    out, conv = cuda_conv2d._direct_outputs([Y], "cuda")
    choices = cuda_conv2d.hand_written(conv, out)
    assert (choices["y"][1], choices["x"][1:]) == (14, (2, 7))
    assert cuda_conv2d.window_pitch(conv, choices) != 16
    x = rng.standard_normal((1, 8, 14, 14)).astype("float32")
    w = rng.standard_normal((32, 8, 3, 3)).astype("float32")
    want = np.maximum(conv2d_nchw_python(x, w, 1, 1), 0)
    conflicts = []
    for pitch in (True, False):
        monkeypatch.setattr(cuda_conv2d, "WINDOW_PITCH", pitch)
        f = tvm.build(topi.cuda.schedule_conv2d_nchw_direct([Y]), [X, Wt, Y], "cuda")
        y = np.full(want.shape, np.nan, "float32")
        conflicts.append(_window_conflict(f, x, w, y))
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert conflicts[0] == 1.0 and conflicts[1] >= 2


@pytest.mark.parametrize("N,C,H,W,O,K,S,P,D", [
    (1, 6, 28, 28, 64, 3, 1, 1, 1),      # several channel groups of 16 channels a thread
    (3, 5, 7, 7, 40, 3, 1, 1, 1),        # a run of 7 a row, channels the block does not divide
    (1, 4, 13, 17, 9, 1, 1, 0, 1),       # rows of 17: runs of 6, the last partial
    (1, 3, 10, 12, 24, 3, 2, 1, 1),      # stride 2, runs of 6
    (1, 8, 14, 14, 20, 3, 1, 2, 2),      # dilation 2
    (1, 3, 23, 23, 16, 7, 2, 3, 1),      # a 7x7 stride-2 stem: the kernel's rows a loop (UNROLL_LIMIT)
])
def test_register_tiles_on_odd_shapes(cuda_run, rng, monkeypatch, N, C, H, W, O, K, S, P, D):
    """The register tiles with every part in play (``TARGET_BLOCKS`` 1: 16 channels a thread, several
    channel groups a block) against numpy, on shapes their runs and blocks do not divide."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    monkeypatch.setattr(cuda_conv2d, "TARGET_BLOCKS", 1)
    X, Wt = te.placeholder((N, C, H, W), name="X"), te.placeholder((O, C, K, K), name="W")
    with tvm.target.Target("cuda"):
        Y = topi.nn.relu(topi.nn.conv2d_nchw(X, Wt, S, P, D))
        out, conv = cuda_conv2d._direct_outputs([Y], "cuda")
        assert cuda_conv2d.hand_written(conv, out)["f"][2] == 16
        f = tvm.build(topi.cuda.schedule_conv2d_nchw_direct([Y]), [X, Wt, Y], "cuda")
    x = rng.standard_normal((N, C, H, W)).astype("float32")
    w = rng.standard_normal((O, C, K, K)).astype("float32")
    want = np.maximum(conv2d_nchw_python(x, w, S, P, 1, D), 0)
    *_, got = cuda_run(f, x, w, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_register_tiles_choose_blocks_for_the_gpu():
    """Channels a thread halve (then channel groups) until the layer has TARGET_BLOCKS blocks; a block's
    threads stay within BLOCK_THREADS."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    for n, o, oh, ow in [(16, 512, 7, 7), (16, 64, 56, 56), (1, 256, 56, 56), (4, 100, 30, 30), (1, 8, 5, 5)]:
        f, y, x = cuda_conv2d.register_tiles(n, o, oh, ow)
        blocks = cuda_conv2d._blocks(n, o, oh, ow, f, y, x)
        assert f[1] * y[1] * x[1] <= cuda_conv2d.BLOCK_THREADS
        assert blocks >= cuda_conv2d.TARGET_BLOCKS or (f[1], f[2]) == (1, 4)
        assert x[1] * x[2] >= min(ow, 8) and y[1] <= oh
    assert cuda_conv2d.register_tiles(16, 512, 7, 7) == ((1, 8, 4), (1, 7, 1), (1, 1, 7))
    assert cuda_conv2d.register_tiles(16, 256, 56, 56) == ((1, 4, 16), (1, 4, 1), (1, 8, 7))
    assert cuda_conv2d.register_tiles(None, 64, 56, 56)[0] == (1, 4, 16)        # a symbolic batch: large


@pytest.mark.parametrize("N,C,H,O,K,P", [
    (64, 512, 1, 2048, 1, 0),     # a 1x1 map: one pixel a plane, channel groups up to threadIdx.z's 64
    (16, 512, 7, 4096, 7, 0),     # VGG's fc6 as a convolution: a 7x7 kernel slice of many channels
    (16, 64, 7, 1024, 7, 3),
])
def test_register_tiles_stay_within_the_gpus_limits(N, C, H, O, K, P):
    """Channel groups are capped at threadIdx.z's 64, and channels a block shrink until one input
    channel's kernel slice and window fit the 48 KB of shared memory (both were build errors)."""
    from tvmlab.topi.cuda import conv2d as cuda_conv2d
    X, Wt = te.placeholder((N, C, H, H), name="X"), te.placeholder((O, C, K, K), name="W")
    with tvm.target.Target("cuda"):
        Y = topi.nn.relu(topi.nn.conv2d_nchw(X, Wt, 1, P, 1))
        out, conv = cuda_conv2d._direct_outputs([Y], "cuda")
        choices = cuda_conv2d.hand_written(conv, out)
        assert choices["f"][1] <= 64 and cuda_conv2d.shared_bytes(conv, choices) <= cuda_conv2d.SHARED_BYTES
        assert cuda_conv2d.tiled_blocks(Y) >= cuda_conv2d.MIN_BLOCKS        # the dispatcher tiles it
        f = tvm.build(topi.cuda.schedule_conv2d_nchw([Y]), [X, Wt, Y], "cuda")
    assert "__shared__" in f.imported_modules[0].get_source()
