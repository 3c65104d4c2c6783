"""The lowering pipeline: AST2 -> AST3 as an ordered list of named passes.

Each entry of ``PIPELINE`` is ``(name, fn)`` with ``fn(stmt, ctx) -> stmt``;
``ctx`` carries the bound buffers and options.  To add a pass, insert an entry
(``PIPELINE.insert(k, ("my_pass", lambda stmt, ctx: ...))``); the history then
shows the function after it under its name.  ``run_passes`` keeps the PrimFunc
after every pass so the explorer can show and diff each step.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import op as _op
from ..ir.functor import collect_vars, contains
from ..ir.stmt import THREAD_ALLREDUCE, AttrStmt
from .loop_partition import loop_partition
from .remove_no_op import remove_no_op
from .rolling_buffer import inject_rolling_buffer, rolling_tensors
from .storage_flatten import storage_flatten
from .unroll import unroll
from .vectorize import serialize_vectorized, vectorize
from .gpu_vectorize import vectorize_for_target
from .inject_virtual_thread import inject_virtual_thread
from .hoist_if import hoist_if_then_else
from .storage_rewrite import storage_rewrite, strip_scope_tags
from .narrow_datatype import narrow_datatype
from .bf16_legalize import bf16_legalize
from .bound_checker import instrument_bound_checkers
from .lower_thread_allreduce import lower_thread_allreduce
from .redundant_stores import guard_redundant_stores
from .split_host_device import split_host_device
from .thread_sync import thread_sync
from .verify_gpu import verify_gpu


@dataclass
class LowerContext:
    """What a lowering pass may need besides the statement (the user's settings are tvm.transform.PassContext)."""
    binds: dict
    simple_mode: bool = False
    config: dict = field(default_factory=dict)


def _simplify(stmt, ctx):
    """Simplify; with config ``keep_unit_loops`` loops of extent one stay loops."""
    from .simplify import simplify_stmt
    return simplify_stmt(stmt, keep_unit_loops=ctx.config.get("keep_unit_loops", False))


def _loop_partition(stmt, ctx):
    """Partition loops; with config ``partition_const_loop`` False only those of a symbolic range."""
    return loop_partition(stmt, shape_vars(ctx.binds), const_loops=ctx.config.get("partition_const_loop", True))


def shape_vars(binds):
    """Variables in the bound buffers' shapes: array dimensions, never negative."""
    out = {}
    for buf in binds.values():
        for d in buf.shape:
            for v in collect_vars(_op.convert(d)):
                out[v] = None
    return list(out)


def _unroll(stmt, ctx):
    return unroll(stmt, **ctx.config.get("unroll", {}))


def _hoist_if(stmt, ctx):
    """Loop-invariant ifs out of their loops; across thread scopes with ``hoist_block_scope``."""
    return hoist_if_then_else(stmt, ctx.config.get("hoist_block_scope", False))


def _storage_rewrite(stmt, ctx):
    """Memory reuse, then the scope tags go; with config ``disable_storage_rewrite`` only the tags go."""
    if ctx.config.get("disable_storage_rewrite"):
        return strip_scope_tags(stmt)
    return strip_scope_tags(storage_rewrite(stmt))


def _bound_checkers(stmt, ctx):
    """With config ``instrument_bound_checkers``, an assertion before every buffer access."""
    if not ctx.config.get("instrument_bound_checkers"):
        return stmt
    return instrument_bound_checkers(stmt, {b.data: b for b in ctx.binds.values()})


def _vectorize(stmt, ctx):
    """Vectorize loops marked so; with config ``disable_vectorize`` they run as serial loops.

    Conditions that differ between lanes become masks unless config ``vectorize_masks`` is
    False (TVM's form, a serial loop over the lanes; ``tir.transform.VectorizeLoop`` asks it).
    """
    if ctx.config.get("disable_vectorize"):
        return serialize_vectorized(stmt)
    return vectorize(stmt, masks=ctx.config.get("vectorize_masks", True))


def _gpu_vectorize(stmt, ctx):
    """Vectorize the loops marked so that the GPU target prints with its vector types
    (``gpu_vectorize.VECTOR_CHECKS``); the rest, and all with ``disable_vectorize``, run serially."""
    if ctx.config.get("disable_vectorize"):
        return serialize_vectorized(stmt)
    return vectorize_for_target(stmt, ctx.config.get("target_kind"))


def _bf16_legalize(stmt, ctx):
    """bfloat16 arithmetic in float32; bfloat16 values as uint16 bits unless the target has the
    type (CUDA's __nv_bfloat16)."""
    return bf16_legalize(stmt, lower=ctx.config.get("target_kind") != "cuda")


PIPELINE = [
    # after the user's phase-0 passes, which see (and may drop) the rolling_buffer_scope marks
    ("inject_rolling_buffer", lambda stmt, ctx: inject_rolling_buffer(stmt)),
    ("storage_flatten", lambda stmt, ctx: storage_flatten(stmt, ctx.binds)),
    ("bf16_legalize", _bf16_legalize),
    ("narrow_datatype", lambda stmt, ctx: narrow_datatype(stmt, 32)),
    ("inject_virtual_thread", lambda stmt, ctx: inject_virtual_thread(stmt)),
    ("loop_partition", _loop_partition),
    ("vectorize", _vectorize),
    ("storage_rewrite", _storage_rewrite),
    ("unroll", _unroll),
    ("simplify", _simplify),
    ("remove_no_op", lambda stmt, ctx: remove_no_op(stmt)),
    ("hoist_if_then_else", _hoist_if),
    ("instrument_bound_checkers", lambda stmt, ctx: _bound_checkers(stmt, ctx)),
]

PASSES = tuple(name for name, _ in PIPELINE)


def _applies(name, stmt):
    # a step that would change nothing and only fill the history is left out
    return name != "inject_rolling_buffer" or bool(rolling_tensors(stmt))

SIMPLE_MODE_SKIPS = {"loop_partition"}   # simple_mode keeps the output close to the schedule


def run_passes(func, binds, simple_mode=False, keep_history=True, config=None):
    """Lower ``func`` (body in AST2) to AST3.

    ``binds``: {Tensor: Buffer} of the function's tensor arguments.  In
    ``simple_mode`` loop partitioning is skipped (the output stays close to
    the schedule, guards included).  ``config`` may hold ``{"unroll":
    {"auto_max_step": 16, ...}}`` (the keyword arguments of ``unroll``).
    Returns ``(lowered PrimFunc, history)`` where history maps "AST2" and then
    each pass that ran to the function after it (empty unless keep_history).
    """
    ctx = LowerContext(dict(binds or {}), simple_mode, dict(config or {}))
    history = {"AST2": func} if keep_history else {}
    current = func
    phases = ctx.config.get("phases", {})   # {phase: [fn(PrimFunc) -> PrimFunc]}, see PHASE_AFTER

    def user(phase, current):
        for k, f in enumerate(phases.get(phase, ())):
            current = f(current)
            if keep_history:
                history[f"phase{phase}.{getattr(f, '__name__', k)}"] = current
        return current

    current = user(0, current)
    skip = set(ctx.config.get("skip", ()))
    for name, fn in PIPELINE:
        if (simple_mode and name in SIMPLE_MODE_SKIPS) or name in skip or not _applies(name, current.body):
            continue
        current = current.with_body(fn(current.body, ctx))
        if keep_history:
            history[name] = current
        for phase, after in PHASE_AFTER.items():
            if after == name:
                current = user(phase, current)
    return current, history


# TVM's tir.add_lower_pass phases: 0 runs on AST2, 1 after flattening, 2 after
# vectorize/unroll, 3 at the end.
PHASE_AFTER = {1: "narrow_datatype", 2: "unroll", 3: "hoist_if_then_else"}


# ------------------------------------------------------------------ GPU targets
# AST2 -> AST3 for a GPU kernel: no loop partitioning (guards on thread
# indices stay guards), virtual threads are interleaved in each thread, cross-thread
# reductions become warp shuffles (CUDA) or shared-memory trees, barriers guard shared memory.
DEVICE_PASSES = [
    ("inject_virtual_thread", lambda stmt, ctx: inject_virtual_thread(stmt)),
    ("lower_thread_allreduce", lambda stmt, ctx: lower_thread_allreduce(stmt, ctx.config.get("warp_size", 32))),
    ("thread_sync", lambda stmt, ctx: thread_sync(stmt)),
]

_CPU_STEP = dict(PIPELINE)

GPU_PIPELINE = [
    # after the user's phase-0 passes, which see (and may drop) the rolling_buffer_scope marks
    ("inject_rolling_buffer", _CPU_STEP["inject_rolling_buffer"]),
    ("storage_flatten", _CPU_STEP["storage_flatten"]),
    ("bf16_legalize", _CPU_STEP["bf16_legalize"]),
    ("narrow_datatype", _CPU_STEP["narrow_datatype"]),
    DEVICE_PASSES[0],
    # a vectorized loop becomes vector accesses (TVM's float4 copies into shared memory) where the
    # target's code generator can print its body so, else a loop in each thread
    ("vectorize", _gpu_vectorize),
    ("storage_rewrite", _storage_rewrite),
    ("unroll", _unroll),
    DEVICE_PASSES[1],
    ("simplify", _simplify),
    ("remove_no_op", lambda stmt, ctx: remove_no_op(stmt)),
    ("hoist_if_then_else", _hoist_if),
    DEVICE_PASSES[2],
]


def _has_allreduce(stmt):
    return contains(stmt, lambda n: isinstance(n, AttrStmt) and n.attr_key == THREAD_ALLREDUCE)


def lower_for_device(func, binds, target_kind, simple_mode=False, keep_history=True, config=None,
                     already_lowered=False):
    """Lower ``func`` (AST2, from ``driver.make_function``) for a GPU target; the target-neutral entry.

    Runs ``GPU_PIPELINE`` (or, with ``already_lowered``, only ``DEVICE_PASSES``
    on an AST3 function the CPU pipeline produced), then ``split_host_device``,
    ``guard_redundant_stores`` and ``verify_gpu``.  ``target_kind`` ("cuda",
    "opengl", ...) is recorded on the kernels; ``config["gpu_limits"]``
    overrides ``verify_gpu.DEFAULT_LIMITS``.

    Returns ``(split, history)``: ``split.host`` (PrimFunc launching the
    kernels in order), ``split.kernels`` (PrimFuncs, target-neutral AST3; see
    ``split_host_device`` for their attrs), ``split.launches``
    (``KernelLaunch``: name, args, launch {tag: extent Expr}); history maps
    "AST2" and each pass to the whole function after it, then
    "split_host_device" to the host function.
    """
    ctx = LowerContext(dict(binds or {}), simple_mode, dict(config or {}) | {"target_kind": target_kind})
    ctx.config.setdefault("warp_size", 32 if target_kind == "cuda" else None)   # shuffles: CUDA only
    history = {"AST2": func} if keep_history and not already_lowered else {}
    current = func
    # no cross-thread reduction: its pass would only walk the (by then unrolled, large) body
    idle = set() if _has_allreduce(func.body) else {"lower_thread_allreduce"}
    for name, fn in (DEVICE_PASSES if already_lowered else GPU_PIPELINE):
        if name in idle or not _applies(name, current.body):
            continue
        current = current.with_body(fn(current.body, ctx))
        if keep_history:
            history[name] = current
    split = split_host_device(current, target_kind)
    split.kernels = [guard_redundant_stores(k) for k in split.kernels]
    verify_gpu(split.kernels, ctx.config.get("gpu_limits"))
    if keep_history:
        history["split_host_device"] = split.host
    return split, history
