"""TOPI's CUDA schedules as AutoTVM templates: ``dense.cuda``, ``batch_matmul.cuda``, ``conv2d_nchw.cuda``,
``conv2d_nchw_winograd.cuda``.

``topi.cuda.schedule_dense`` / ``schedule_batch_matmul`` / ``schedule_conv2d_nchw`` keep their
hand-written choices as the fallback config.  Importing ``tvmlab.autotvm`` installs a hook in each:
inside a dispatch context (``apply_history_best(log)``, or a tuner instantiating a config) the schedule
asks the context for its workload's config and takes its tiles from the knobs; outside any context, or
when the context has no config for the workload, nothing changes.  The knobs are TVM's:

* products (more than ``SMALL_ROWS`` rows): ``tile_y`` / ``tile_x``, 4-way splits of the output's rows
  and columns (block, virtual thread, thread, per thread), ``tile_k`` (the reduction step held in shared
  memory); with few rows (a matrix-vector product): ``tile_k`` (lanes that share an output's reduction)
  and ``tile_x`` (outputs per block);
* the convolution: ``tile_f`` / ``tile_y`` / ``tile_x`` (channels, rows and columns: block, virtual
  thread, thread, per thread), ``tile_rc`` / ``tile_ry`` / ``tile_rx`` (input channels, kernel rows and
  columns per shared-memory step);
* the Winograd convolution's batched product (alpha x alpha points, output channels x tiles, summed over
  the input channels): ``tile_b`` / ``tile_y`` / ``tile_x`` (points, output channels, tiles: block,
  virtual thread, thread, per thread) and ``tile_rc`` (input channels per shared-memory step); the
  transforms keep a thread per (channel, tile);
* all: ``auto_unroll_max_step`` and ``unroll_explicit`` (pragmas around the kernel).

Every config of the product templates fetches its shared slices 4 elements at a time (float4) where the
rows and its ``tile_k`` allow, as the hand-written schedule does (``topi.cuda.tiling.fetch_lanes``).

Every split knob's candidates include the hand-written choice, so a tune can find nothing slower than
the fallback (``topi_templates.fallback_config(task)`` is that point).  Knobs are pruned to what the GPU
allows one axis (threads per axis, virtual threads); a config whose threads per block or shared memory
exceed the target's limits (``tvmlab.lower.verify_gpu``) is refused when it is instantiated
(``ConfigError``, recorded as INSTANTIATION_ERROR).

    task = autotvm.task.create("conv2d_nchw.cuda", args=(1, 64, 56, 56, 64, 3, 3, 1, 1, 1, "float32"),
                               target="cuda")
"""
from __future__ import annotations

import importlib

from .. import te
from .space import ConfigError, OtherOptionEntity, SplitEntity, get_factors, get_pow2s
from . import tophub
from .task.dispatcher import DispatchContext, FallbackContext
from .task.task import args_to_workload, template

DENSE = "dense.cuda"
BATCH_MATMUL = "batch_matmul.cuda"
CONV2D = "conv2d_nchw.cuda"
WINOGRAD = "conv2d_nchw_winograd.cuda"
UNROLL_STEPS = [0, 512, 1500]      # TVM's auto_unroll_max_step candidates
MAX_VTHREAD = 8                    # virtual threads along one axis
MAX_SPAN = 8                       # outputs of one thread along one axis (virtual threads x per thread)
MAX_STEP = 64                      # reduction step (tile_k, tile_rc) at most


def _cuda(name):
    # tvmlab.topi.cuda re-exports computes under these names: take the modules themselves
    return importlib.import_module(f"tvmlab.topi.cuda.{name}")


def _const(x):
    from ..topi.utils import const_or_none
    return const_or_none(x)


def _context(target):
    # the user's dispatch context, else the shipped configs of the target's device (None: hand-written)
    ctx = DispatchContext.current
    return tophub.default_context(target) if isinstance(ctx, FallbackContext) else ctx


def _limits(target):
    """The GPU limits of ``target`` (verify_gpu's defaults, with the target's -max_... options)."""
    from ..codegen.registry import Target
    from ..lower.verify_gpu import DEFAULT_LIMITS, gpu_limits
    t = target if isinstance(target, Target) else Target(str(target or "cuda"))
    return gpu_limits({k: v for k, v in t.options.items() if k in DEFAULT_LIMITS})


def _elem(dtype):
    from ..ir import dtype as dt
    return max(1, dt.parse(str(dtype))[1] // 8)


def _values(n):
    """Split factors worth trying for an extent ``n``: its divisors and the powers of two below it."""
    return sorted(set(get_factors(n)) | set(get_pow2s(n)))


def tile_candidates(n, max_threads, hand):
    """4-way splits [-1, vthreads, threads, per thread] of extent ``n`` (TVM's "verbose" policy: products
    dividing ``n``, or powers of two up to it), at most ``MAX_VTHREAD`` virtual threads, ``max_threads``
    threads and ``MAX_SPAN`` outputs per thread; plus the hand-written ``hand`` (v, t, i)."""
    vals = _values(n)
    pow2 = set(get_pow2s(n))
    out = []
    for v in vals:
        for t in vals:
            for i in vals:
                p = v * t * i
                if v > MAX_VTHREAD or t > max_threads or v * i > MAX_SPAN or p > n:
                    continue
                if n % p and not {v, t, i} <= pow2:
                    continue
                out.append([-1, v, t, i])
    return out + [[-1, *hand]]


def step_candidates(n, hand, limit=MAX_STEP):
    """2-way splits [-1, step] of extent ``n`` (divisors and powers of two up to ``limit``), plus ``hand``."""
    return [[-1, s] for s in _values(n) if s <= limit] + [[-1, hand]]


def _split(cfg, name, extent, candidates, hand):
    cfg.define_split(name, extent, policy="candidate", num_outputs=len(candidates[0]), candidate=candidates)
    if cfg.is_fallback:
        cfg[name] = SplitEntity(hand)


def _knob(cfg, name, candidates, default):
    cfg.define_knob(name, candidates)
    if cfg.is_fallback:
        cfg[name] = OtherOptionEntity(default)


def _unroll_knobs(cfg):
    _knob(cfg, "auto_unroll_max_step", UNROLL_STEPS, 0)
    _knob(cfg, "unroll_explicit", [0, 1], 1)


def _collecting(cfg):
    # task.create runs the template once on the empty ConfigSpace to collect its knobs
    return getattr(cfg, "_collect", False) and not cfg.is_fallback


def _inner(cfg, name):
    return tuple(cfg[name].size[1:])


def _refuse(what, limit, got, cfg):
    raise ConfigError(f"invalid config for this GPU: {what} is {got}, more than the device's {limit} "
                      f"(config {cfg}); smaller tiles")


# ------------------------------------------------------------------ dense / batch_matmul


def product_workload(C):
    """``(task name, args)`` of a product stage ``C`` (tag dense / batch_matmul, constant shapes, one
    dtype, the default layouts), or None when it is no template's workload."""
    op = C.op
    if len(op.input_tensors) < 2 or len(op.reduce_axis) != 1:
        return None
    A, B = op.input_tensors[:2]
    shape = [_const(d) for d in C.shape]
    a, b = [_const(d) for d in A.shape], [_const(d) for d in B.shape]
    K = _const(op.reduce_axis[0].dom.extent)
    dtype = str(C.dtype)
    if None in shape + a + b + [K] or {str(A.dtype), str(B.dtype)} != {dtype}:
        return None
    if op.tag == "dense" and not int(op.attrs.get("packed", 0)) and len(shape) == 2:
        M, N = shape
        if a == [M, K] and b == [N, K]:
            return DENSE, (M, N, K, dtype)
    if op.tag == "batch_matmul" and len(shape) == 3:
        bs, M, N = shape
        if a == [bs, M, K] and b == [bs, N, K]:
            return BATCH_MATMUL, (bs, M, N, K, dtype)
    return None


def _query(workload_of, stage, target):
    """(config, task name, args) the dispatch context gives ``stage``'s workload, or None outside any
    context or when the stage is no template's workload."""
    ctx = _context(target or "cuda")
    wl = workload_of(stage) if ctx is not None else None
    if wl is None:
        return None
    return ctx.query(target, args_to_workload(wl[1], wl[0])), wl[0], wl[1]


def _product_hook(C, target):
    q = _query(product_workload, C, target)
    if q is None:
        return None
    cfg, name, args = q
    dense = _cuda("dense")
    hand = dense.hand_written(C)
    M, N, K, dtype = args[-4:]
    lim = _limits(target)
    if "lanes" in hand:
        lanes = [p for p in get_pow2s(lim["max_thread_x"]) if p <= max(K, 32)]
        _split(cfg, "tile_k", K, [[-1, v] for v in lanes] + [[-1, hand["lanes"]]], [-1, hand["lanes"]])
        per_block = [p for p in get_pow2s(64) if p <= M * N]
        _split(cfg, "tile_x", M * N, [[-1, v] for v in per_block] + [[-1, hand["per_block"]]],
               [-1, hand["per_block"]])
    else:
        _split(cfg, "tile_y", M, tile_candidates(M, lim["max_thread_y"], hand["y"]), [-1, *hand["y"]])
        _split(cfg, "tile_x", N, tile_candidates(N, lim["max_thread_x"], hand["x"]), [-1, *hand["x"]])
        _split(cfg, "tile_k", K, step_candidates(K, hand["tile_k"]), [-1, hand["tile_k"]])
    _unroll_knobs(cfg)
    cfg.add_flop(2 * (args[0] if name == BATCH_MATMUL else 1) * M * N * K)
    if cfg.is_fallback or _collecting(cfg):
        return None             # the hand-written schedule, exactly
    unroll = (cfg["auto_unroll_max_step"].val, cfg["unroll_explicit"].val)
    if "lanes" in hand:
        lanes, per_block = cfg["tile_k"].size[1], cfg["tile_x"].size[1]
        if lanes * per_block > lim["max_threads_per_block"]:
            _refuse("threads per block (tile_k lanes x tile_x outputs)", lim["max_threads_per_block"],
                    lanes * per_block, cfg)
        return {"lanes": lanes, "per_block": per_block, "unroll": unroll}
    y, x, tile_k = _inner(cfg, "tile_y"), _inner(cfg, "tile_x"), cfg["tile_k"].size[1]
    if y[1] * x[1] > lim["max_threads_per_block"]:
        _refuse("threads per block (tile_y x tile_x threads)", lim["max_threads_per_block"], y[1] * x[1], cfg)
    smem = dense.shared_bytes(y[0] * y[1] * y[2], x[0] * x[1] * x[2], tile_k, _elem(dtype))
    if smem > lim["max_shared_memory_per_block"]:
        _refuse("shared memory per block (bytes)", lim["max_shared_memory_per_block"], smem, cfg)
    return {"y": y, "x": x, "tile_k": tile_k, "unroll": unroll}


def _gpu_target():
    from ..codegen.registry import Target
    cur = Target.current(allow_none=True)
    return cur if cur is not None and cur.kind == "cuda" else Target("cuda")


@template(DENSE)
def dense_cuda(M, N, K, dtype="float32"):
    """``topi.nn.dense`` (data (M, K), weight (N, K)) + ``topi.cuda.schedule_dense``."""
    from .. import topi
    A = te.placeholder((M, K), name="A", dtype=dtype)
    W = te.placeholder((N, K), name="W", dtype=dtype)
    target = _gpu_target()
    with target:
        D = topi.nn.dense(A, W)
    return topi.cuda.schedule_dense([D], target), [A, W, D]


@template(BATCH_MATMUL)
def batch_matmul_cuda(B, M, N, K, dtype="float32"):
    """``topi.nn.batch_matmul`` (a (B, M, K), b (B, N, K)) + ``topi.cuda.schedule_batch_matmul``."""
    from .. import topi
    X = te.placeholder((B, M, K), name="A", dtype=dtype)
    Y = te.placeholder((B, N, K), name="B", dtype=dtype)
    target = _gpu_target()
    with target:
        C = topi.nn.batch_matmul(X, Y)
    return topi.cuda.schedule_batch_matmul([C], target), [X, Y, C]


# ------------------------------------------------------------------ conv2d


def _compact(values):
    """One spelling of a stride / padding / dilation: an int when all equal, (top, left) when the bottom
    and right repeat them, else the tuple."""
    values = tuple(int(v) for v in values)
    if len(set(values)) == 1:
        return values[0]
    if len(values) == 4 and values[:2] == values[2:]:
        return values[:2]
    return values


def _as_tuple(v, n):
    if isinstance(v, (int, bool)):
        return (int(v),) * n
    v = tuple(v)
    if n == 4 and len(v) == 2:
        return v + v
    return v


def conv2d_args(N, C, H, W, O, KH, KW, stride=1, padding=0, dilation=1, dtype="float32"):
    """``conv2d_nchw.cuda``'s arguments in their one spelling (stride, padding and dilation compacted)."""
    if isinstance(padding, str):
        return (N, C, H, W, O, KH, KW, _compact(_as_tuple(stride, 2)), padding, _compact(_as_tuple(dilation, 2)),
                dtype)
    return (N, C, H, W, O, KH, KW, _compact(_as_tuple(stride, 2)), _compact(_as_tuple(padding, 4)),
            _compact(_as_tuple(dilation, 2)), str(dtype))


def conv2d_workload(conv):
    """``(task name, args)`` of a direct NCHW convolution stage (constant shapes, one dtype), or None."""
    op = conv.op
    data, kernel = op.input_tensors[:2]
    n, o, _, _ = (_const(d) for d in conv.shape)
    ks = [_const(d) for d in kernel.shape]
    ds = [_const(d) for d in data.shape]
    dtype = str(conv.dtype)
    if None in [n, o] + ks + ds or {str(data.dtype), str(kernel.dtype)} != {dtype}:
        return None
    pads = tuple(int(p) for p in op.attrs["padding"])
    h, w = ds[2] - pads[0] - pads[2], ds[3] - pads[1] - pads[3]
    return CONV2D, conv2d_args(n, ks[1], h, w, o, ks[2], ks[3], op.attrs["strides"], pads, op.attrs["dilation"],
                               dtype)


def _conv2d_hook(conv, target):
    q = _query(conv2d_workload, conv, target)
    if q is None:
        return None
    cfg, _, args = q
    cv = _cuda("conv2d")
    out_shape = [_const(d) for d in conv.shape]
    hand = cv.hand_written(conv, conv)
    N, C, _, _, O, KH, KW = args[:7]
    OH, OW = out_shape[2:]
    lim = _limits(target)
    _split(cfg, "tile_f", O, tile_candidates(O, lim["max_thread_z"], hand["f"]), [-1, *hand["f"]])
    _split(cfg, "tile_y", OH, tile_candidates(OH, lim["max_thread_y"], hand["y"]), [-1, *hand["y"]])
    _split(cfg, "tile_x", OW, tile_candidates(OW, lim["max_thread_x"], hand["x"]), [-1, *hand["x"]])
    _split(cfg, "tile_rc", C, step_candidates(C, hand["rc"]), [-1, hand["rc"]])
    _split(cfg, "tile_ry", KH, step_candidates(KH, hand["ry"], KH), [-1, hand["ry"]])
    _split(cfg, "tile_rx", KW, step_candidates(KW, hand["rx"], KW), [-1, hand["rx"]])
    _unroll_knobs(cfg)
    cfg.add_flop(2 * N * O * OH * OW * C * KH * KW)
    if cfg.is_fallback or _collecting(cfg):
        return None             # the hand-written schedule, exactly
    choices = {"f": _inner(cfg, "tile_f"), "y": _inner(cfg, "tile_y"), "x": _inner(cfg, "tile_x"),
               "rc": cfg["tile_rc"].size[1], "ry": cfg["tile_ry"].size[1], "rx": cfg["tile_rx"].size[1],
               "unroll": (cfg["auto_unroll_max_step"].val, cfg["unroll_explicit"].val)}
    _within(cfg, lim, "tile_f x tile_y x tile_x threads", choices["f"][1] * choices["y"][1] * choices["x"][1],
            cv.shared_bytes(conv, choices, _elem(conv.dtype)))
    return choices


def _within(cfg, lim, what, threads, smem):
    """Refuse ``cfg`` where its threads per block (``what``) or shared memory exceed the GPU's limits."""
    if threads > lim["max_threads_per_block"]:
        _refuse(f"threads per block ({what})", lim["max_threads_per_block"], threads, cfg)
    if smem > lim["max_shared_memory_per_block"]:
        _refuse("shared memory per block (bytes)", lim["max_shared_memory_per_block"], smem, cfg)


def _conv_inputs(N, C, H, W, O, KH, KW, dtype):
    return (te.placeholder((N, C, H, W), name="data", dtype=dtype),
            te.placeholder((O, C, KH, KW), name="kernel", dtype=dtype))


@template(CONV2D)
def conv2d_nchw_cuda(N, C, H, W, O, KH, KW, stride=1, padding=0, dilation=1, dtype="float32"):
    """``topi.nn.conv2d_nchw`` computed for the GPU (the direct form) + ``topi.cuda.schedule_conv2d_nchw``."""
    from .. import topi
    data, kernel = _conv_inputs(N, C, H, W, O, KH, KW, dtype)
    target = _gpu_target()
    with target:
        out = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation)
    return topi.cuda.schedule_conv2d_nchw([out], target), [data, kernel, out]


conv2d_nchw_cuda.template_func.canonical_args = conv2d_args


# ------------------------------------------------------------------ Winograd conv2d


def winograd_workload(conv):
    """``(task name, args)`` of a CUDA Winograd convolution's output stage (``topi.cuda.conv2d_nchw_winograd``
    or its form reading a transformed kernel: one workload), or None where a shape is not constant."""
    n, c, h, w, o, pads, _ = _cuda("conv2d_winograd").workload_shape(conv)
    if None in (n, c, h, w, o):
        return None
    return WINOGRAD, conv2d_args(n, c, h, w, o, 3, 3, 1, pads, 1, str(conv.dtype))


def _winograd_hook(conv, target):
    q = _query(winograd_workload, conv, target)
    if q is None:
        return None
    cfg, _, args = q
    wg = _cuda("conv2d_winograd")
    M = wg._stages(conv)[2]
    hand = wg.hand_written(M)
    points, O, P = _const(M.shape[0]) * _const(M.shape[1]), _const(M.shape[2]), _const(M.shape[3])
    N, C = args[0], args[1]
    OH, OW = (_const(d) for d in conv.shape[2:])
    lim = _limits(target)
    _split(cfg, "tile_b", points, tile_candidates(points, lim["max_thread_z"], hand["b"]), [-1, *hand["b"]])
    _split(cfg, "tile_y", O, tile_candidates(O, lim["max_thread_y"], hand["y"]), [-1, *hand["y"]])
    _split(cfg, "tile_x", P, tile_candidates(P, lim["max_thread_x"], hand["x"]), [-1, *hand["x"]])
    _split(cfg, "tile_rc", C, step_candidates(C, hand["rc"]), [-1, hand["rc"]])
    _unroll_knobs(cfg)
    cfg.add_flop(2 * N * O * OH * OW * C * 9)        # the direct convolution's, as TVM counts it
    if cfg.is_fallback or _collecting(cfg):
        return None             # the hand-written schedule, exactly
    choices = {"b": _inner(cfg, "tile_b"), "y": _inner(cfg, "tile_y"), "x": _inner(cfg, "tile_x"),
               "rc": cfg["tile_rc"].size[1], "unroll": (cfg["auto_unroll_max_step"].val, cfg["unroll_explicit"].val)}
    _within(cfg, lim, "tile_b x tile_y x tile_x threads", choices["b"][1] * choices["y"][1] * choices["x"][1],
            wg.product_bytes(choices, _elem(conv.dtype)))
    return choices


@template(WINOGRAD)
def conv2d_nchw_winograd_cuda(N, C, H, W, O, KH, KW, stride=1, padding=0, dilation=1, dtype="float32"):
    """``topi.cuda.conv2d_nchw_winograd`` + ``topi.cuda.schedule_conv2d_nchw_winograd`` (3x3, unit stride)."""
    from .. import topi
    data, kernel = _conv_inputs(N, C, H, W, O, KH, KW, dtype)
    target = _gpu_target()
    out = topi.cuda.conv2d_nchw_winograd(data, kernel, stride, padding, dilation, dtype)
    return topi.cuda.schedule_conv2d_nchw_winograd([out], target), [data, kernel, out]


conv2d_nchw_winograd_cuda.template_func.canonical_args = conv2d_args


def install():
    """Put the hooks into topi.cuda (done when tvmlab.autotvm is imported)."""
    _cuda("dense").config_hook = _product_hook
    _cuda("conv2d").config_hook = _conv2d_hook
    _cuda("conv2d_winograd").config_hook = _winograd_hook
