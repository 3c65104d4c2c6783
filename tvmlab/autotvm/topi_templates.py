"""TOPI's CPU schedules as AutoTVM templates: ``matmul.x86``, ``conv2d_nchw.x86`` and ``conv2d_NCHWc.x86``
(the blocked kernel ``relay.build`` runs after AlterOpLayout; its workload is the NCHW convolution).

``topi.schedule_matmul`` and ``topi.schedule_conv2d_nchw`` keep their
hand-written choices as the fallback config.  When this module is imported
(with ``tvmlab.autotvm``) it installs a hook in each: inside a dispatch context
(``apply_history_best(log)``, or a tuner instantiating a config) the schedule
asks the context for its workload's config and uses its knobs; outside any
context nothing changes.  The knobs' candidates always include the
hand-written values, so a tune can only find something at least as fast.

    task = autotvm.task.create("matmul.x86", args=(512, 512, 512, "float32"), target="llvm")
"""
from __future__ import annotations

import importlib

from .. import te
from .space import OtherOptionEntity
from . import tophub
from .task.dispatcher import DispatchContext, FallbackContext
from .task.task import args_to_workload, template

MATMUL = "matmul.x86"
CONV2D = "conv2d_nchw.x86"
CONV2D_NCHWC = "conv2d_NCHWc.x86"


def _const(x):
    from ..topi.utils import const_or_none
    return const_or_none(x)


def _module(name):
    # the modules of topi.x86 whose CPU schedules hold the hooks (tvmlab.topi re-exports the functions)
    return importlib.import_module({"matmul": "tvmlab.topi.x86.dense", "conv2d": "tvmlab.topi.x86.conv2d"}[name])


def _context(target):
    # the user's dispatch context, else the shipped configs of the target's device (None: hand-written)
    ctx = DispatchContext.current
    return tophub.default_context(target) if isinstance(ctx, FallbackContext) else ctx


def _knob(cfg, name, candidates, default):
    cands = sorted(set(candidates) | {default})
    cfg.define_knob(name, cands)
    if cfg.is_fallback:
        cfg[name] = OtherOptionEntity(default)
    return cfg[name].val


def _matmul_hook(C, target):
    ctx = _context(target or "llvm")
    if ctx is None:
        return None
    from ..codegen.llvm_vector import vector_registers
    from ..ir import dtype as dt
    mm = _module("matmul")
    from ..topi.utils import vector_block
    M, N = _const(C.shape[0]), _const(C.shape[1])
    K = _const(C.op.reduce_axis[0].dom.extent)
    block, dtype = int(C.op.attrs["block"]), C.dtype
    if None in (M, N, K) or int(C.op.attrs["rows"]) or not int(C.op.attrs.get("packed_b", 1)) or \
            block != vector_block(dtype, target):
        return None             # only matmul(A, B) with its default layout is a template
    cfg = ctx.query(target, args_to_workload((M, K, N, str(dtype)), MATMUL))
    rows_d = mm.tile_rows(block, dtype, target)
    regs = vector_registers(target)
    max_rows = max(1, min(mm.MAX_ROWS, (regs.count - 1) // regs.holding(block, dtype)))
    elem = max(1, dt.parse(dtype)[1] // 8)
    panels_d = max(1, mm.B_BLOCK_BYTES // (K * elem) // block)
    rows = _knob(cfg, "rows", [r for r in (1, 2, 3, 4, 6, 8, 12) if r <= max_rows], rows_d)
    mult = _knob(cfg, "row_mult", [1, 2, 4], 2)
    panels = _knob(cfg, "col_panels", [1, 2, 4, 8, 16, 32, 64], panels_d)
    k_chunk = _knob(cfg, "k_chunk", [0, 64, 256], 0)
    cfg.add_flop(2 * M * N * K)
    if cfg.is_fallback:
        return None             # the hand-written schedule, exactly
    return {"options": (rows, rows * mult, k_chunk or None, panels * block)}


def _conv2d_hook(out, target):
    """(width, unroll_kw) of ``conv2d_nchw.x86`` for a blocked NCHW convolution stage ``out``, or None."""
    ctx = _context(target or "llvm")
    if ctx is None:
        return None
    from ..topi.utils import find_stage_input
    if out.op.tag != "conv2d_nchw" or "oc_block" not in out.op.attrs or out.op.attrs.get("direct"):
        return None
    blocked = find_stage_input(out, "_NCHWc")
    pad = blocked.op.input_tensors[0]
    data = (pad.op.input_tensors[0] if pad.op.input_tensors else None) if pad.op.name.endswith("_pad") else pad
    packed = find_stage_input(blocked, "_packK")
    kernel = packed.op.input_tensors[0] if packed.op.input_tensors else None
    if data is None or kernel is None:
        return None
    dshape = [_const(d) for d in data.shape]
    kshape = [_const(d) for d in kernel.shape]
    if None in dshape + kshape:
        return None
    n, c, h, w = dshape
    o, _, kh, kw = kshape
    oh, ow = (_const(d) for d in out.shape[2:])
    padding = _padding(pad, h)
    stride = (h + 2 * padding - kh) // max(1, oh - 1) if oh > 1 else 1
    return _conv2d_config(ctx, target, (n, c, h, w, o, kh, kw, stride, padding, str(out.dtype)),
                          int(out.op.attrs["oc_block"]), oh, ow)


def _nchwc_hook(conv, target):
    """The same knobs for a ``conv2d_NCHWc`` stage (the layout AlterOpLayout gives ``relay.build``), task
    ``conv2d_NCHWc.x86``: its workload is the NCHW convolution it stands for, in the channel blocks
    ``nchwc_blocks`` gives (a stage in other blocks is no workload of it)."""
    ctx = _context(target or "llvm")
    if ctx is None or conv.op.tag != "conv2d_NCHWc" or int(conv.op.attrs.get("groups", 1)) != 1:
        return None
    pad = conv.op.input_tensors[0]
    data = pad.op.input_tensors[0] if pad.op.name.endswith("_pad") and pad.op.input_tensors else pad
    dshape = [_const(d) for d in data.shape]
    kshape = [_const(d) for d in conv.op.input_tensors[1].shape]
    oshape = [_const(d) for d in conv.shape]
    if None in dshape + kshape + oshape or len(dshape) != 5:
        return None
    n, cb, h, w, ic = dshape
    ofo, _, kh, kw, _, oc = kshape
    sh, sw = (int(x) for x in conv.op.attrs["strides"])
    dil = tuple(int(x) for x in conv.op.attrs["dilation"])
    pads = {int(x) for x in conv.op.attrs["padding"]}
    if sh != sw or dil != (1, 1) or len(pads) != 1 or h != w or \
            (ic, oc) != _module("conv2d").nchwc_blocks(cb * ic, ofo * oc, str(conv.dtype), target):
        return None             # the template's workloads are square, symmetric, undilated
    return _conv2d_config(ctx, target, (n, cb * ic, h, w, ofo * oc, kh, kw, sh, pads.pop(), str(conv.dtype)),
                          oc, oshape[2], oshape[3], CONV2D_NCHWC)


def _conv2d_config(ctx, target, workload, oc_block, oh, ow, name=CONV2D):
    from ..codegen.llvm_vector import vector_registers
    from ..topi.utils import vector_block
    cv = _module("conv2d")
    n, c, h, w, o, kh, kw, stride, padding, dtype = workload
    # conv2d_nchw.x86's workloads are those blocked by the vector width; conv2d_NCHWc.x86's come in the
    # blocks nchwc_blocks picks for the target (few channels: a block of all of them), checked by the caller
    if name == CONV2D and oc_block != vector_block(dtype, target):
        return None
    cfg = ctx.query(target, args_to_workload(workload, name))
    width_d = cv.tile_width(ow, oc_block, dtype, target)
    regs = vector_registers(target)
    max_w = max(1, min(ow, (regs.count - 2) // regs.holding(oc_block, dtype)))
    width = _knob(cfg, "width", range(1, max_w + 1), width_d)
    unroll_kw = _knob(cfg, "unroll_kw", [False, True], False)
    cfg.add_flop(2 * n * o * oh * ow * c * kh * kw)
    return None if cfg.is_fallback else (width, unroll_kw)


def _padding(pad, h):
    ph = _const(pad.shape[2])
    return (ph - h) // 2 if ph is not None else 0


@template(MATMUL)
def matmul_x86(M, K, N, dtype="float32"):
    """``topi.matmul`` + ``topi.schedule_matmul`` with knobs rows, row_mult, col_panels, k_chunk."""
    from .. import topi
    A = te.placeholder((M, K), name="A", dtype=dtype)
    B = te.placeholder((K, N), name="B", dtype=dtype)
    C = topi.matmul(A, B)
    return topi.schedule_matmul(C), [A, B, C]


@template(CONV2D_NCHWC)
def conv2d_NCHWc_x86(N, C, H, W, O, KH, KW, stride=1, padding=1, dtype="float32"):
    """``topi.nn.conv2d_NCHWc`` on data and kernel already blocked (``nchwc_blocks``) + its schedule, with
    the knobs width and unroll_kw: the kernel ``relay.build`` runs for this NCHW convolution."""
    from .. import topi
    from ..codegen.registry import Target
    target = Target.current(allow_none=True) or Target("llvm")
    ic, oc = _module("conv2d").nchwc_blocks(C, O, dtype, target)
    D = te.placeholder((N, C // ic, H, W, ic), name="data", dtype=dtype)
    K = te.placeholder((O // oc, C // ic, KH, KW, ic, oc), name="kernel", dtype=dtype)
    with target:
        out = topi.nn.conv2d_NCHWc(D, K, stride, padding, 1, f"NCHW{ic}c", f"NCHW{oc}c", dtype)
        s = topi.x86.schedule_conv2d_NCHWc([out])
    return s, [D, K, out]


@template(CONV2D)
def conv2d_nchw_x86(N, C, H, W, O, KH, KW, stride=1, padding=1, dtype="float32"):
    """``topi.conv2d_nchw`` + its schedule with the knobs width (output columns per register tile) and
    unroll_kw (the kernel-column loop unrolled), as TVM's x86 template has."""
    from .. import topi
    data = te.placeholder((N, C, H, W), name="data", dtype=dtype)
    kernel = te.placeholder((O, C, KH, KW), name="kernel", dtype=dtype)
    out = topi.conv2d_nchw(data, kernel, stride, padding)
    return topi.schedule_conv2d_nchw(out), [data, kernel, out]


def fallback_config(task):
    """The ConfigEntity of ``task``'s space holding the hand-written choices (measure it to make sure a
    tuned log is never worse than the fallback)."""
    from .space import FallbackConfigEntity
    from .task.dispatcher import ApplyConfig
    fb = FallbackConfigEntity()
    with task.target, ApplyConfig(fb):      # the hand-written choices depend on the target's registers
        task.func(*task.args)
    return task.config_space.get(task.config_space.index_of(dict(fb._entity_map)))


def install():
    """Put the hooks into topi (done when tvmlab.autotvm is imported)."""
    _module("matmul").config_hook = _matmul_hook
    _module("conv2d").config_hook = _conv2d_hook
    _module("conv2d").nchwc_config_hook = _nchwc_hook
