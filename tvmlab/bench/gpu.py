"""``python -m tvmlab.bench.gpu``: tvmlab's CUDA kernels beside torch (cuBLAS, cuDNN) on the same GPU.

Rows: vector add (2^26 floats), row sum (4096 x 4096, rfactor + cross-thread reduction), TVM's
opt_conv_cuda tutorial schedule (HWCN, batch 256, 256 -> 512 channels, 14 x 14, 3 x 3) against cuDNN,
matmul with ``topi.cuda.schedule_dense`` (1024^3, 2048^3, 4096^3; and at fixed tiles of 64 and 128), batch_matmul
(12 heads of 1024 x 64) and a batch-1 dense (matrix-vector) against cuBLAS; ResNet-50's convolutions one by one
(batch 16, bias and relu fused) against cuDNN, and its 3x3 stride-1 ones by Winograd (``winograd``);
ResNet-50 at batch 1 and 16 built by
``relay.build(target="cuda")``, run by the graph executor and as one CUDA graph, beside torchvision's in torch
eager and under ``torch.compile`` (inductor; where it runs here, else the reason is printed); the
``reduce`` row: ``topi.cuda``'s row sum (4096 x 4096), softmax (4096 x 4096, 8192 x 1024), layer norm
(8192 x 768) and vectorized add (2^26) against torch.sum, torch.softmax, layer_norm and torch.add.
Float32, TF32 off on the torch side (a float32 conv faster than the GPU's float32 peak allows is TF32),
cuDNN choosing its algorithm by timing them (``cudnn.benchmark``); every tvmlab result is checked against
numpy before it is timed.  Each pair is timed in the same run between CUDA events, both sides alike:
kernels as back-to-back calls filling about 1 ms (so neither side is charged its launch cost), whole
models one run at a time; best of several repeats.  Without a GPU (or without torch built for CUDA) it
says so and exits 0; ``--simulate`` then builds every row at a small size and checks it on the
thread-level simulator instead.  ``--variant NAME MODULE.ATTR=VALUE ...`` (repeatable) builds and times every
row again under those settings of the schedules' module constants (``bench.variants``), each beside the same
reference, so a schedule change is judged in one run on one GPU:

    python -m tvmlab.bench.gpu [--rows add,rowsum,opt_conv,matmul,tiles,batch_matmul,gemv,convs,winograd,tensorcore,
                               reduce,resnet50]
                               [--quick] [--simulate] [--no-compile]
                               [--variant default --variant old topi.cuda.conv2d.REGISTER_TILES=False ...]
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class Case:
    """One row at one size: the build, its arguments (outputs last), numpy's answer for the output and
    the torch call to time beside it (given torch and the input arrays on the GPU)."""
    label: str
    f: object
    arrays: list
    expected: Callable
    torch_call: Callable
    reference: str
    rtol: float = 1e-4


def _build(s, args):
    import tvmlab as tvm
    return tvm.build(s, args, "cuda")


def case_add(size):
    from tvmlab import te
    n = {"small": 1000, "quick": 1 << 22, "full": 1 << 26}[size]
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=256)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    a, b = (np.random.rand(n).astype("float32") for _ in range(2))
    return Case(f"vector add {n}", _build(s, [A, B, C]), [a, b, np.zeros(n, "float32")],
                lambda a, b: a + b, lambda torch, a, b: lambda: a + b, "torch.add", 1e-6)


def case_rowsum(size):
    from ..testing.gpu_schedules import row_sum_rfactor
    n = {"small": 100, "quick": 1024, "full": 4096}[size]
    s, args, ref = row_sum_rfactor(n, n)
    a = np.random.rand(n, n).astype("float32")
    return Case(f"row sum {n}x{n}", _build(s, args), [a, np.zeros(n, "float32")], ref,
                lambda torch, a: lambda: a.sum(1), "torch.sum")


def case_opt_conv(size):
    from ..testing.gpu_schedules import opt_conv_hwcn
    batch, cin, cout, hw = {"small": (8, 16, 32, 6), "quick": (32, 64, 128, 14), "full": (256, 256, 512, 14)}[size]
    s, args, ref = opt_conv_hwcn(batch, cin, cout, hw)
    a = np.random.rand(hw, hw, cin, batch).astype("float32")
    w = np.random.rand(3, 3, cin, cout).astype("float32")

    def conv(torch, a, w):
        x = a.permute(3, 2, 0, 1).contiguous()          # HWCN -> NCHW
        k = w.permute(3, 2, 0, 1).contiguous()          # HWIO -> OIHW
        return lambda: torch.nn.functional.conv2d(x, k, padding=1)
    return Case(f"opt_conv_cuda {batch}x{cin}->{cout}", _build(s, args),
                [a, w, np.zeros((hw, hw, cout, batch), "float32")], ref, conv, "cuDNN", 1e-3)


def case_matmul(n, tile=None):
    """matmul ``n``^3 with ``topi.cuda.schedule_dense`` (its own tile choice, or ``tile``)."""
    def make(size):
        import tvmlab as tvm
        from tvmlab import te, topi
        m = {"small": n // 32, "quick": min(n, 1024), "full": n}[size]
        A, W = te.placeholder((m, m), name="A"), te.placeholder((m, m), name="W")
        with tvm.target.Target("cuda"):
            D = topi.nn.dense(A, W)
            if tile is None:
                s = topi.cuda.schedule_dense([D])
            else:
                s = topi.cuda.schedule_product([D], tile=tile)
        a, w = (np.random.rand(m, m).astype("float32") for _ in range(2))
        label = f"matmul {m}^3" + (f" tile {tile}" if tile else " (schedule_dense)")
        return Case(label, _build(s, [A, W, D]), [a, w, np.zeros((m, m), "float32")],
                    lambda a, w: a @ w.T, lambda torch, a, w: lambda: a @ w.T, "cuBLAS", 1e-3)
    return make


def case_batch_matmul(size):
    """Attention's scores: 12 heads of (seq x 64) times (seq x 64)^T, ``topi.cuda.schedule_batch_matmul``."""
    import tvmlab as tvm
    from tvmlab import te, topi
    b, n, d = {"small": (2, 40, 16), "quick": (12, 256, 64), "full": (12, 1024, 64)}[size]
    A, B = te.placeholder((b, n, d), name="A"), te.placeholder((b, n, d), name="B")
    with tvm.target.Target("cuda"):
        C = topi.nn.batch_matmul(A, B)
        s = topi.cuda.schedule_batch_matmul([C])
    a, w = (np.random.rand(b, n, d).astype("float32") for _ in range(2))
    return Case(f"batch_matmul {b}x{n}x{n}x{d}", _build(s, [A, B, C]), [a, w, np.zeros((b, n, n), "float32")],
                lambda a, w: a @ w.transpose(0, 2, 1),
                lambda torch, a, w: lambda: torch.bmm(a, w.transpose(1, 2)), "cuBLAS bmm", 1e-3)


def case_gemv(size):
    """Batch-1 dense (a matrix-vector product): the warp-per-output schedule of ``schedule_dense``."""
    import tvmlab as tvm
    from tvmlab import te, topi
    k, n = {"small": (100, 70), "quick": (1024, 1024), "full": (4096, 4096)}[size]
    A, W = te.placeholder((1, k), name="A"), te.placeholder((n, k), name="W")
    with tvm.target.Target("cuda"):
        D = topi.nn.dense(A, W)
        s = topi.cuda.schedule_dense([D])
    a, w = np.random.rand(1, k).astype("float32"), np.random.rand(n, k).astype("float32")
    return Case(f"dense 1x{k} by {n}x{k}", _build(s, [A, W, D]), [a, w, np.zeros((1, n), "float32")],
                lambda a, w: a @ w.T, lambda torch, a, w: lambda: a @ w.T, "cuBLAS gemv", 1e-3)


def case_conv(c, hw, o, k, stride, batch=16):
    """One of ResNet-50's convolutions (NCHW, batch 16) with ``topi.cuda.schedule_conv2d_nchw``'s tiled
    schedule, bias and relu fused, beside cuDNN."""
    def make(size):
        import tvmlab as tvm
        from tvmlab import te, topi
        from tvmlab.topi.testing import conv2d_nchw_python
        n, ci, h, co = (1, max(c // 16, 3), min(hw, 9), max(o // 16, 4)) if size == "small" else (batch, c, hw, o)
        pad = k // 2
        X, W = te.placeholder((n, ci, h, h), name="X"), te.placeholder((co, ci, k, k), name="W")
        B = te.placeholder((co, 1, 1), name="B")
        with tvm.target.Target("cuda"):
            Y = topi.nn.relu(topi.add(topi.nn.conv2d_nchw(X, W, stride, pad, 1), B))
            s = topi.cuda.schedule_conv2d_nchw_direct([Y])     # the tiled schedule, also at the small size
        x = np.random.rand(n, ci, h, h).astype("float32")
        w = (np.random.rand(co, ci, k, k).astype("float32") - 0.5) / (ci * k * k) ** 0.5
        b = np.random.rand(co, 1, 1).astype("float32")
        oh = (h + 2 * pad - k) // stride + 1

        def ref(x, w, b):
            return np.maximum(conv2d_nchw_python(x, w, stride, pad) + b, 0)

        def conv(torch, x, w, b):
            f = torch.nn.functional
            return lambda: f.relu(f.conv2d(x, w, b.reshape(-1), stride=stride, padding=pad))
        return Case(f"conv {ci}x{h}^2 -> {co} {k}x{k}/{stride} b{n}", _build(s, [X, W, B, Y]),
                    [x, w, b, np.zeros((n, co, oh, oh), "float32")], ref, conv, "cuDNN", 1e-3)
    return make


def case_topi(name, shapes, make, schedule, ref, torch_call, reference, rtol=1e-4):
    """A row of ``make(topi, *inputs)`` with ``topi.cuda.<schedule>``; ``shapes[size]``: the inputs' shapes."""
    def case(size):
        import tvmlab as tvm
        from tvmlab import te, topi
        ins = [te.placeholder(sh, name=f"x{k}") for k, sh in enumerate(shapes[size])]
        with tvm.target.Target("cuda"):         # the computes relay.build(target="cuda") would make
            out = make(topi, *ins)
            f = _build(getattr(topi.cuda, schedule)([out]), ins + [out])
        arrays = [np.random.rand(*sh).astype("float32") for sh in shapes[size]]
        label = f"{name} {'x'.join(map(str, shapes[size][0]))}"
        return Case(label, f, arrays + [np.zeros([int(d) for d in out.shape], "float32")], ref, torch_call,
                    reference, rtol)
    return case


def _softmax_ref(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm_ref(a, g, b):
    return (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * g + b


REDUCE_ROWS = [
    case_topi("row sum", {"small": [(37, 700)], "quick": [(1024, 1024)], "full": [(4096, 4096)]},
              lambda topi, a: topi.sum(a, axis=1), "schedule_reduce", lambda a: a.astype("float64").sum(1),
              lambda torch, a: lambda: a.sum(1), "torch.sum"),
    *[case_topi("softmax", {"small": [small], "quick": [(rows // 4, n)], "full": [(rows, n)]},
                lambda topi, a: topi.nn.softmax(a), "schedule_softmax", _softmax_ref,
                lambda torch, a: lambda: torch.softmax(a, -1), "torch.softmax", 1e-3)
      for rows, n, small in ((4096, 4096, (8, 640)), (8192, 1024, (19, 128)))],   # 4 elements a thread
    case_topi("layer norm", {"small": [(9, 768), (768,), (768,)], "quick": [(2048, 768), (768,), (768,)],
                             "full": [(8192, 768), (768,), (768,)]},
              lambda topi, a, g, b: topi.nn.layer_norm(a, g, b, axis=[-1]), "schedule_layer_norm",
              _layer_norm_ref, lambda torch, a, g, b: lambda: torch.nn.functional.layer_norm(a, g.shape, g, b),
              "torch layer_norm", 1e-3),
    case_topi("vector add (float4)", {"small": [(4004,), (4004,)], "quick": [(1 << 22,), (1 << 22,)],
                                      "full": [(1 << 26,), (1 << 26,)]},
              lambda topi, a, b: topi.add(a, b), "schedule_injective", lambda a, b: a + b,
              lambda torch, a, b: lambda: torch.add(a, b), "torch.add", 1e-6)]


# ResNet-50's convolutions, one per kind and stage: (in channels, size, out channels, kernel, stride)
# (torchvision's ResNet-50 strides its bottlenecks' 3x3 convolutions: the last three)
RESNET50_CONVS = [(3, 224, 64, 7, 2), (64, 56, 64, 3, 1), (64, 56, 256, 1, 1), (128, 28, 128, 3, 1),
                  (512, 28, 128, 1, 1), (256, 14, 256, 3, 1), (1024, 14, 256, 1, 1), (512, 7, 512, 3, 1),
                  (2048, 7, 512, 1, 1), (128, 56, 128, 3, 2), (256, 28, 256, 3, 2), (512, 14, 512, 3, 2)]

def case_tensorcore(n):
    """float16 ``n``-cubed matmul on tensor cores (``topi.cuda.dense_tensorcore``, float32 out) beside
    torch's float16 ``a @ w.T`` (cuBLAS on tensor cores, float16 out)."""
    def make(size):
        import tvmlab as tvm
        from tvmlab import te, topi
        m = {"small": 64, "quick": min(n, 1024), "full": n}[size]
        A, W = te.placeholder((m, m), "float16", name="A"), te.placeholder((m, m), "float16", name="W")
        C = topi.cuda.dense_tensorcore(A, W, out_dtype="float32")
        s = topi.cuda.schedule_dense_tensorcore([C])
        a, w = ((np.random.rand(m, m) - 0.5).astype("float16") for _ in range(2))
        return Case(f"tensorcore fp16 {m}^3", tvm.build(s, [A, W, C], "cuda"), [a, w, np.zeros((m, m), "float32")],
                    lambda a, w: a.astype("float32") @ w.astype("float32").T,
                    lambda torch, a, w: lambda: a @ w.T, "cuBLAS fp16", 1e-2)
    return make


def case_winograd(c, hw, o, batch=16):
    """One of ResNet-50's 3x3 stride-1 convolutions (batch 16) by ``topi.cuda``'s Winograd, the kernel
    transformed beforehand (as relay.build folds it), bias and relu fused, beside cuDNN (the ``convs`` row
    of the same shape times the direct tiled convolution)."""
    def make(size):
        from tvmlab import te, topi
        from tvmlab.topi.cuda.conv2d_winograd import winograd_tile_size
        from tvmlab.topi.nn.winograd import winograd_matrices
        from tvmlab.topi.testing import conv2d_nchw_python
        n, ci, h, co = (1, max(c // 16, 3), min(hw, 9), max(o // 16, 4)) if size == "small" else (batch, c, hw, o)
        m = winograd_tile_size(h, h)
        g = winograd_matrices(m, 3)[2]
        X, U = te.placeholder((n, ci, h, h), name="X"), te.placeholder((m + 2, m + 2, ci, co), name="U")
        B = te.placeholder((co, 1, 1), name="B")
        Y = topi.nn.relu(topi.add(topi.cuda.conv2d_nchw_winograd_without_weight_transform(X, U, 1, 1, 1), B))
        s = topi.cuda.schedule_conv2d_nchw_winograd_without_weight_transform([Y])
        x = np.random.rand(n, ci, h, h).astype("float32")
        w = (np.random.rand(co, ci, 3, 3).astype("float32") - 0.5) / (ci * 9) ** 0.5
        u = np.ascontiguousarray(np.einsum("ea,ocab,ub->euco", g, w, g), dtype="float32")
        b = np.random.rand(co, 1, 1).astype("float32")

        def conv(torch, x, u, b):
            f, wt = torch.nn.functional, torch.from_numpy(w).cuda()
            return lambda: f.relu(f.conv2d(x, wt, b.reshape(-1), padding=1))
        return Case(f"winograd F({m}) {ci}x{h}^2 -> {co} b{n}", _build(s, [X, U, B, Y]),
                    [x, u, b, np.zeros((n, co, h, h), "float32")],
                    lambda x, u, b: np.maximum(conv2d_nchw_python(x, w, 1, 1) + b, 0), conv, "cuDNN", 1e-3)
    return make


ROWS = {"add": [case_add], "rowsum": [case_rowsum], "opt_conv": [case_opt_conv],
        "matmul": [case_matmul(1024), case_matmul(2048), case_matmul(4096)],
        "tiles": [case_matmul(n, t) for n in (1024, 4096) for t in (64, 128)],
        "batch_matmul": [case_batch_matmul], "gemv": [case_gemv],
        "convs": [case_conv(*shape) for shape in RESNET50_CONVS],
        "winograd": [case_winograd(c, hw, o) for c, hw, o, k, stride in RESNET50_CONVS if (k, stride) == (3, 1)],
        "tensorcore": [case_tensorcore(1024), case_tensorcore(4096)], "reduce": REDUCE_ROWS}


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # cuDNN times its algorithms for each shape and keeps the fastest (Winograd, FFT, implicit GEMM):
    # the strongest float32 reference, not its heuristic's first guess
    torch.backends.cudnn.benchmark = True
    return torch


def torch_ms(torch, fn, repeat=20, number=1):
    """Best milliseconds per call of ``fn`` over ``repeat`` runs of ``number`` calls each, timed with CUDA events."""
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(number):
            fn()
        b.record()
        torch.cuda.synchronize()
        best = min(best, a.elapsed_time(b) / number)
    return best


REPEAT_MS = 1.0     # each timed run lasts about this long: back-to-back launches keep the GPU busy


def calls_per_run(ms):
    """How many back-to-back calls of a ``ms``-long kernel make one timed run of REPEAT_MS (1 to 1000):
    a short kernel's launch cost then overlaps the calls before it, for tvmlab and torch alike."""
    return max(1, min(1000, math.ceil(REPEAT_MS / max(ms, 1e-6))))


def time_tvmlab(c, repeat=20):
    """(ms, calls per run) of case ``c`` on the GPU, after checking its output against numpy: the best of
    ``repeat`` runs of ``calls_per_run`` back-to-back calls of its single-call time."""
    import tvmlab as tvm
    dev = tvm.cuda(0)
    nds = [tvm.nd.array(a, dev) for a in c.arrays]
    c.f(*nds)
    np.testing.assert_allclose(nds[-1].numpy(), c.expected(*c.arrays[:-1]), rtol=c.rtol, atol=c.rtol)
    one = min(c.f.time_evaluator(c.f.entry_name, dev, number=1, repeat=3)(*nds).results) * 1e3
    number = calls_per_run(one)
    ev = c.f.time_evaluator(c.f.entry_name, dev, number=number, repeat=repeat)
    return min(ev(*nds).results) * 1e3, number


def time_reference(c, torch, number, repeat=20):
    """Milliseconds per call of case ``c``'s torch call, ``number`` back-to-back calls a run."""
    ins = [torch.from_numpy(a).cuda() for a in c.arrays[:-1]]
    return torch_ms(torch, c.torch_call(torch, *ins), repeat, number)


def compiled_ms(torch, net, x, repeat=20):
    """(ms, None) of ``torch.compile(net)`` on ``x`` (inductor, its default mode; compiled by a first call
    outside the timing), or (None, why) where torch.compile does not run here (no triton, no compiler)."""
    try:
        fn = torch.compile(net)
        with torch.no_grad():
            fn(x)
            return torch_ms(torch, lambda: fn(x), repeat), None
    except Exception as e:          # torch.compile fails in many ways (missing triton, a C compiler, ...)
        first = (str(e).strip().splitlines() or [""])[0]
        return None, f"{type(e).__name__}: {first[:160]}"


def build_model(model, shape, variant=None):
    """ONNX ``model`` (input "data" of ``shape``) through ``relay.build(target="cuda")`` with ``variant``'s
    settings: (built library, build seconds)."""
    import time

    import tvmlab as tvm
    from tvmlab import relay

    from .variants import Variant, applied
    mod, params = relay.frontend.from_onnx(model, shape={"data": shape})
    t = time.perf_counter()
    with applied(variant or Variant("default")), tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="cuda", params=params)
    return lib, time.perf_counter() - t


def time_model(torch, batch, out, repeat=20, compile=True, variants=None):
    """ResNet-50 (random weights) through ``relay.build(target="cuda")``: the graph executor, the same graph
    as one CUDA graph, and torchvision's ResNet-50 in torch eager on the same GPU, and (``compile``) under
    ``torch.compile``.  tvmlab's output is checked against onnxruntime on the CPU first.  ``variants``
    (``bench.variants``): one build and two timings of each, beside one reference."""
    import tvmlab as tvm
    from tvmlab.contrib import graph_executor
    from tvmlab.contrib.cuda_graph import cuda_graph_executor

    from .variants import Variant
    variants = variants or [Variant("default")]
    dev = tvm.cuda(0)

    def best(fn):          # one run between CUDA events, as torch_ms times torch's
        fn()
        return min(dev.time(fn) for _ in range(repeat)) * 1e3
    from .models import resnet50
    model = resnet50(batch=batch)
    x = np.random.rand(batch, 3, 224, 224).astype("float32")
    try:
        import onnxruntime as ort
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, {"data": x})[0]
        checked = "checked against onnxruntime"
    except ImportError:
        want, checked = None, "not checked (no onnxruntime)"
    timed = []
    for v in variants:
        lib, build_s = build_model(model, x.shape, v)
        plain = graph_executor.GraphModule(lib["default"](dev))
        graph = cuda_graph_executor.create(lib.get_graph_json(), lib, dev)
        for m in (plain, graph):
            m.set_input("data", x)
            m.run()
            if want is not None:
                np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-3, atol=1e-3)
        tag = "" if len(variants) == 1 else f" [{v.name}]"
        timed.append((tag, best(plain.run), best(graph.run), len(graph.module.calls), build_s))
    builds = ", ".join(f"{tag.strip() or 'built'} in {b:.1f} s" for tag, _, _, _, b in timed)
    line = f"resnet50 batch {batch} ({timed[0][3]} kernels, {builds}, {checked})"
    try:
        import torchvision
        net = torchvision.models.resnet50().cuda().eval()
        tx = torch.from_numpy(x).cuda()
        with torch.no_grad():
            ref = torch_ms(torch, lambda: net(tx), repeat)
    except ImportError:
        for tag, plain_ms, graph_ms, _, _ in timed:
            print(f"{line}{tag}: graph executor {plain_ms:.3f} ms, CUDA graph {graph_ms:.3f} ms; torchvision is "
                  "not installed: no reference", file=out, flush=True)
        return
    print(line, file=out, flush=True)
    rows = [(f"  graph executor{tag}", p) for tag, p, _, _, _ in timed] + \
           [(f"  as one CUDA graph{tag}", g) for tag, _, g, _, _ in timed]
    for label, ms in rows:
        print(f"{label:<34}{ms:>11.3f}{ref:>10.3f}{ref / ms:>7.2f}x  torch eager (torchvision)", file=out, flush=True)
    if not compile:
        return
    ms, why = compiled_ms(torch, net, tx, repeat)
    if ms is None:
        print(f"  torch.compile did not run here ({why})", file=out, flush=True)
        return
    for label, mine in rows:
        print(f"{label:<34}{mine:>11.3f}{ms:>10.3f}{ms / mine:>7.2f}x  torch.compile (inductor)", file=out,
              flush=True)


def simulate_case(c, traffic=False):
    """Run case ``c`` on the thread-level simulator and check it against numpy; returns the SimReport."""
    import tvmlab as tvm
    arrays = [a.copy() for a in c.arrays]
    arrays[-1][...] = np.nan
    report = tvm.testing.simulate(c.f, *arrays, traffic=traffic)
    np.testing.assert_allclose(arrays[-1], c.expected(*arrays[:-1]), rtol=c.rtol, atol=c.rtol)
    return report


def traffic_line(report):
    """One line of a simulated case's memory traffic: global coalescing, shared bank conflicts, and the
    least efficient access."""
    from tvmlab.analysis.gpusim.traffic import totals
    rows = report.traffic()
    eff, conflict = totals(rows)
    worst = min(rows, key=lambda r: (r.efficiency, -r.bytes), default=None)
    tail = ""
    if worst is not None and worst.efficiency < 0.995:
        tail = f"; least efficient: {worst.scope} {worst.op} of {worst.buffer} ({100 * worst.efficiency:.0f}%)"
    return f"global {100 * eff:.0f}% of bytes moved used, shared {conflict:.2f}-way{tail}"


def _variant_cases(make, size, variants):
    """[(variant, case)]: the row ``make`` built at ``size`` under each variant's settings."""
    from .variants import applied
    cases = []
    for v in variants:
        with applied(v):
            cases.append((v, make(size)))
    return cases


def main(argv=None, out=sys.stdout):
    from .variants import parse_variants
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default=",".join([*ROWS, "resnet50"]),
                   help=f"comma-separated, from {', '.join(ROWS)}, resnet50 (batch 1 and 16)")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--no-compile", action="store_true", help="resnet50 without the torch.compile reference "
                   "(its compile takes a minute or more)")
    p.add_argument("--simulate", action="store_true", help="no GPU needed: small sizes on the simulator")
    p.add_argument("--traffic", action="store_true", help="with --simulate: each kernel's memory traffic "
                   "(global coalescing, shared-memory bank conflicts)")
    p.add_argument("--variant", action="append", nargs="+", metavar=("NAME", "MODULE.ATTR=VALUE"),
                   help="build and time every row again with these settings (repeatable), e.g. --variant old "
                   "topi.cuda.conv2d.REGISTER_TILES=False; a variant with no settings is the defaults")
    args = p.parse_args(argv)
    variants = parse_variants(args.variant)
    many = len(variants) > 1 or bool(args.variant)
    names = [name.strip() for name in args.rows.split(",")]
    unknown = [n for n in names if n not in ROWS and n != "resnet50"]
    if unknown:
        p.error(f"unknown rows {', '.join(unknown)}; choose from {', '.join([*ROWS, 'resnet50'])}")
    rows = [make for name in names for make in ROWS.get(name, [])]
    if many:
        for v in variants:
            print(f"variant {v.name}: {v.describe()}", file=out)
    if args.simulate:
        for make in rows:
            for v, c in _variant_cases(make, "small", variants):
                report = simulate_case(c, args.traffic)
                extra = f"; {traffic_line(report)}" if args.traffic else ""
                label = f"{c.label} [{v.name}]" if many else c.label
                print(f"{label:<34} simulated: matches numpy, no race or divergent barrier{extra}", file=out,
                      flush=True)
        return 0
    import tvmlab as tvm
    if not tvm.cuda(0).exist:
        from tvmlab.runtime import cuda_driver
        print(f"no CUDA GPU here ({cuda_driver.no_device_reason()}): nothing to time. The kernels still "
              "compile (NVRTC) and run on the simulator: python -m tvmlab.bench.gpu --simulate", file=out)
        return 0
    torch = _torch_cuda()
    if torch is None:
        print("torch with CUDA is not installed: the references (cuBLAS, cuDNN) come from it; "
              "pip install torch (a CUDA build)", file=out)
        return 0
    print(f"{'kernel':<34}{'tvmlab ms':>11}{'ref ms':>10}{'ratio':>8}  reference", file=out)
    for make in rows:
        cases = _variant_cases(make, "quick" if args.quick else "full", variants)
        timed = [(v, c, *time_tvmlab(c)) for v, c in cases]
        c0 = cases[0][1]
        ref = time_reference(c0, torch, timed[0][3])
        if many:
            print(c0.label, file=out)
        for v, c, t, _ in timed:
            label = f"  [{v.name}]" if many else c.label
            print(f"{label:<34}{t:>11.3f}{ref:>10.3f}{ref / t:>7.2f}x  {c.reference}", file=out, flush=True)
    if "resnet50" in names:
        for batch in (1, 16):
            time_model(torch, batch, out, compile=not args.no_compile, variants=variants)
    print("ratio = reference time / tvmlab time (> 1: tvmlab is faster); float32, TF32 off", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
