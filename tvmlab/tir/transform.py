"""tvmlab's lowering passes as TVM's ``tvm.tir.transform``: IRModule -> IRModule passes.

    mod = tvm.driver.build_module.schedule_to_module(s, [A, B, C])    # AST2
    mod = tvm.tir.transform.StorageFlatten(64)(mod)
    mod = tvm.transform.Sequential([tvm.tir.transform.LoopPartition(),
                                    tvm.tir.transform.VectorizeLoop(),
                                    tvm.tir.transform.UnrollLoop(),
                                    tvm.tir.transform.Simplify(),
                                    tvm.tir.transform.RemoveNoOp()])(mod)   # == tvm.lower(s, ...)

Each pass runs the same function as ``tvm.lower`` (``lower.pipeline``) on
every PrimFunc of the module, under the current ``tvm.transform.PassContext``
whose config keys ``tir.disable_vectorize`` and ``tir.UnrollLoop`` they
honour.  A one-function module keeps a history of the steps, as tvm.lower's.
One exception: ``VectorizeLoop`` gives TVM's serial loop where a condition
differs between lanes, where ``tvm.lower`` (and ``lower_sequence``) masks.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir.function import IRModule, PrimFunc
from ..ir.stmt import Stmt
from ..ir.transform import Pass, PassInfo, module_pass, pass_maker
from ..lower import pipeline as _pl
from ..schedule.steps import BINDS_ATTR  # {Tensor: Buffer} of an AST2 function's arguments

_UNROLL_KEYS = {"auto_max_step": "auto_max_step", "auto_max_depth": "auto_max_depth",
                "auto_max_extent": "auto_max_extent", "explicit_unroll": "explicit"}


# TVM's "tir.*" config keys: those above are honoured; these are accepted with no
# effect (tvmlab has no such option, or always does what it asks); others are refused.
ACCEPTED_KEYS = ("tir.noalias", "tir.disable_assert", "tir.debug_keep_trivial_loop",
                 "tir.detect_global_barrier",
                 "tir.InjectDoubleBuffer", "tir.Simplify", "tir.RemoveNoOp", "tir.disable_cse_tir",
                 "tir.enable_debug", "tir.is_entry_func", "tir.use_async_copy",
                 "tir.enable_equiv_terms_in_cse_tir")
HONOURED_KEYS = ("tir.disable_vectorize", "tir.UnrollLoop", "tir.add_lower_pass", "tir.LoopPartition",
                 "tir.HoistIfThenElse", "tir.disable_storage_rewrite", "tir.instrument_bound_checkers")


def pipeline_config(ctx):
    """``lower.pipeline`` options from TVM's PassContext config keys.

    ``tir.disable_vectorize`` (vectorized loops stay serial loops),
    ``tir.LoopPartition`` ({"partition_const_loop": False}: only loops of a symbolic range
    are partitioned; {"no_unroll_loop_with_extent_one": True}: loops of extent one stay loops),
    ``tir.UnrollLoop`` ({"auto_max_step", "auto_max_depth",
    "auto_max_extent", "explicit_unroll"}) and ``tir.add_lower_pass``
    ([(phase 0..3, pass)], a pass being a ``tir.transform`` pass or a
    function PrimFunc -> PrimFunc (or body Stmt -> Stmt)).
    """
    cfg = ctx.config
    bad = sorted(k for k in cfg if isinstance(k, str) and k.startswith("tir.")
                 and k not in HONOURED_KEYS + ACCEPTED_KEYS)
    if bad:
        raise LoweringError(f"unknown PassContext config {bad}; tir keys are "
                            f"{sorted(HONOURED_KEYS + ACCEPTED_KEYS)}")
    out = {}
    if cfg.get("tir.disable_vectorize"):
        out["disable_vectorize"] = True
    part = cfg.get("tir.LoopPartition")
    if part is not None:
        if not isinstance(part, dict) or set(part) - {"partition_const_loop", "no_unroll_loop_with_extent_one"}:
            raise LoweringError(f"config tir.LoopPartition takes {{'partition_const_loop': bool, "
                                f"'no_unroll_loop_with_extent_one': bool}}, got {part!r}")
        if part.get("partition_const_loop") is False:
            out["partition_const_loop"] = False   # TVM's default; tvmlab partitions constant loops too
        if part.get("no_unroll_loop_with_extent_one"):
            out["keep_unit_loops"] = True
    unroll = cfg.get("tir.UnrollLoop")
    if unroll:
        if not isinstance(unroll, dict):
            raise LoweringError(f"config tir.UnrollLoop must be a dict, got {unroll!r}")
        bad = sorted(set(unroll) - set(_UNROLL_KEYS))
        if bad:
            raise LoweringError(f"config tir.UnrollLoop: unknown keys {bad}; known: {sorted(_UNROLL_KEYS)}")
        out["unroll"] = {_UNROLL_KEYS[k]: v for k, v in unroll.items()}
    if cfg.get("tir.instrument_bound_checkers"):
        out["instrument_bound_checkers"] = True
    if cfg.get("tir.disable_storage_rewrite"):
        out["disable_storage_rewrite"] = True
    hoist = cfg.get("tir.HoistIfThenElse")
    if hoist is not None:
        if not isinstance(hoist, dict) or set(hoist) - {"support_block_scope_hosting"}:
            raise LoweringError(f"config tir.HoistIfThenElse takes {{'support_block_scope_hosting': bool}}, "
                                f"got {hoist!r}")
        out["hoist_block_scope"] = bool(hoist.get("support_block_scope_hosting", False))
    extra = cfg.get("tir.add_lower_pass")
    if extra:
        phases = {}
        for item in extra:
            if not (isinstance(item, (list, tuple)) and len(item) == 2 and item[0] in (0, 1, 2, 3)):
                raise LoweringError(f"config tir.add_lower_pass takes (phase 0..3, pass) pairs, "
                                    f"got {item!r}")
            phases.setdefault(item[0], []).append(as_func_pass(item[1]))
        out["phases"] = phases
    return out


def as_func_pass(p):
    """A tir.transform pass (IRModule -> IRModule) or a plain function, as PrimFunc -> PrimFunc."""
    if isinstance(p, Pass):
        def run(func):
            return next(iter(p(IRModule({func.name: func})).functions.values()))
        run.__name__ = p.info.name
        return run
    if not callable(p):
        raise LoweringError(f"config tir.add_lower_pass: {p!r} is not a pass")

    def call(func):
        out = p(func)
        if isinstance(out, PrimFunc):
            return out
        if isinstance(out, Stmt):       # an old-style pass on the body
            return func.with_body(out)
        raise LoweringError(f"lower pass {getattr(p, '__name__', p)!r} returned "
                            f"{type(out).__name__}, expected a PrimFunc or a statement")
    call.__name__ = getattr(p, "__name__", "pass")
    return call


# ---------------------------------------------------------------- prim_func_pass
class PrimFuncPass(Pass):
    """Runs ``fn(func, mod, ctx) -> PrimFunc`` on every PrimFunc of a module."""

    def __init__(self, fn, info):
        self._fn = fn
        self.info = info

    def transform_module(self, mod, ctx):
        funcs = {}
        for name, f in mod.functions.items():
            out = self._fn(f, mod, ctx)
            if not isinstance(out, PrimFunc):
                raise LoweringError(f"pass {self.info.name} returned {type(out).__name__} for "
                                    f"{name}, expected a PrimFunc")
            funcs[name] = out
        history = dict(mod.history)
        if len(funcs) == 1:
            history[self.info.name] = next(iter(funcs.values()))
        new = IRModule(funcs, history)
        for k, v in vars(mod).items():            # device_split and the like
            if k not in ("functions", "history"):
                setattr(new, k, v)
        return new


def prim_func_pass(pass_func=None, opt_level=0, name=None, required=None):
    """Make a pass from ``fn(func, mod, ctx) -> PrimFunc`` or a class with ``transform_function``.

    Works as ``@prim_func_pass(opt_level=0)`` or ``prim_func_pass(fn, opt_level=0)``.
    """
    return pass_maker(PrimFuncPass, "transform_function", "prim_func_pass", pass_func, opt_level,
                      name, required)


# ---------------------------------------------------------------- tvmlab's passes
def _step(name, pname, func, ctx, **config):
    """Run pipeline step ``name`` on ``func``'s body."""
    fn = dict(_pl.PIPELINE + _pl.DEVICE_PASSES)[name]
    binds = func.attrs.get(BINDS_ATTR) or {b.data: b for b in func.buffer_map.values()}
    pctx = _pl.LowerContext(dict(binds), False, pipeline_config(ctx) | config)
    if name in pctx.config.get("skip", ()):
        return func
    return func.with_body(fn(func.body, pctx))


def _make(pname, step, doc, **config):
    def run(func, mod, ctx):
        return _step(step, pname, func, ctx, **config)
    run.__doc__ = doc
    return PrimFuncPass(run, PassInfo(0, pname))


def StorageFlatten(cache_line_size=64, create_bound_attribute=False):  # noqa: N802 - TVM's names
    """AST2 -> AST3: realized tensors become flat buffers (Allocate / Load / Store).

    Needs the argument buffers that ``schedule_to_module`` records on the
    function; ``cache_line_size`` is accepted for TVM's signature (tvmlab
    does not pad allocations).
    """
    def run(func, mod, ctx):
        if BINDS_ATTR not in func.attrs:
            raise LoweringError(f"StorageFlatten: function {func.name} has no tensor bindings; "
                                "make the module with tvm.driver.build_module.schedule_to_module")
        out = _step("storage_flatten", "tir.StorageFlatten", func, ctx)
        out.attrs = {k: v for k, v in out.attrs.items() if k != BINDS_ATTR}
        return out
    return PrimFuncPass(run, PassInfo(0, "tir.StorageFlatten"))


def LoopPartition():  # noqa: N802
    """A split that does not divide gets a guard-free main loop and one guarded tail."""
    return _make("tir.LoopPartition", "loop_partition", LoopPartition.__doc__)


def VectorizeLoop(enable=True):  # noqa: N802
    """Loops marked ``vectorize`` become vector code; ``enable=False`` makes them serial loops.

    As TVM's pass: a statement whose condition differs between lanes (``if i < n``,
    ``if_then_else(i > 0, ...)``) runs as a serial loop over the lanes of its own
    (``tvm.lower`` masks it instead, see ``lower.vectorize``).
    """
    if enable:
        return _make("tir.VectorizeLoop", "vectorize", VectorizeLoop.__doc__, vectorize_masks=False)
    return _make("tir.VectorizeLoop", "vectorize", VectorizeLoop.__doc__, disable_vectorize=True)


def _lower_vectorize():
    """tvm.lower's vectorize step as a pass (lane-varying conditions become masks)."""
    return _make("tir.VectorizeLoop", "vectorize", VectorizeLoop.__doc__)


def UnrollLoop():  # noqa: N802
    """Loops marked ``unroll`` (and, with config tir.UnrollLoop auto_max_step, small loops) are unrolled."""
    return _make("tir.UnrollLoop", "unroll", UnrollLoop.__doc__)


def Simplify():  # noqa: N802
    """Arithmetic simplification of every expression, and masks that cannot fault dropped."""
    return _make("tir.Simplify", "simplify", Simplify.__doc__)


def RemoveNoOp():  # noqa: N802
    """Statements that do nothing (empty loops, x = x, ...) removed."""
    return _make("tir.RemoveNoOp", "remove_no_op", RemoveNoOp.__doc__)


def HoistIfThenElse():  # noqa: N802
    """An if whose condition a loop does not change moves above that loop (the loop nest is
    copied into each branch); with config ``tir.HoistIfThenElse``
    ``{"support_block_scope_hosting": True}`` also above thread scopes."""
    return _make("tir.HoistIfThenElse", "hoist_if_then_else", HoistIfThenElse.__doc__)


def Apply(ftransform):  # noqa: N802
    """A pass running ``ftransform(func) -> PrimFunc`` on every function of a module."""
    if not callable(ftransform):
        raise LoweringError(f"Apply takes a function PrimFunc -> PrimFunc, got {ftransform!r}")
    return PrimFuncPass(lambda func, mod, ctx: ftransform(func), PassInfo(0, "tir.Apply"))


def InjectCopyIntrin(pragma_key, fintrin):  # noqa: N802
    """Loop nests marked ``pragma(axis, pragma_key)`` that copy (with or without padding) become
    ``fintrin(src, dst, pad_before, pad_after, pad_value)``'s statement."""
    if not callable(fintrin):
        raise LoweringError(f"InjectCopyIntrin: the copy intrinsic must be callable, got {fintrin!r}")

    def run(func, mod, ctx):
        from ..lower.inject_copy import inject_copy_intrin
        return func.with_body(inject_copy_intrin(func.body, pragma_key, fintrin))
    return PrimFuncPass(run, PassInfo(0, "tir.InjectCopyIntrin"))


def NarrowDataType(target_bits=32):  # noqa: N802
    """Index variables and index arithmetic in ``target_bits`` integers where their bounds fit
    (64-bit loops over small extents become 32-bit); nothing is widened."""
    if target_bits not in (8, 16, 32, 64):
        raise LoweringError(f"NarrowDataType: target_bits must be 8, 16, 32 or 64, got {target_bits!r}")

    def run(func, mod, ctx):
        from ..lower.narrow_datatype import narrow_datatype
        return func.with_body(narrow_datatype(func.body, target_bits))
    return PrimFuncPass(run, PassInfo(0, "tir.NarrowDataType"))


def _bf16_pass(name, steps, lower=False):
    def run(func, mod, ctx):
        from ..lower import bf16_legalize as B
        for step in steps:
            func = func.with_body(getattr(B, step)(func.body))
        return B.bf16_lower_function(func, BINDS_ATTR) if lower else func
    return PrimFuncPass(run, PassInfo(0, name))


def BF16Promote():  # noqa: N802
    """bfloat16 operations computed in float32 between casts."""
    return _bf16_pass("tir.BF16Promote", ["bf16_promote"])


def BF16CastElimination():  # noqa: N802
    """``float32(bfloat16(x))`` of a float32 ``x`` is ``x``: a chain rounds to bfloat16 once."""
    return _bf16_pass("tir.BF16CastElimination", ["bf16_cast_elimination"])


def BF16TypeLowering():  # noqa: N802
    """bfloat16 values as their uint16 bits, conversions as shifts and round-to-nearest-even;
    bfloat16 tensors and buffers become uint16 ones (the function then takes uint16 arrays)."""
    return _bf16_pass("tir.BF16TypeLowering", [], lower=True)


def BF16Legalize():  # noqa: N802
    """BF16Promote, BF16CastElimination and BF16TypeLowering (tvm.lower runs the same steps for CPU
    targets on the body alone, so its functions keep taking bfloat16 arrays)."""
    return _bf16_pass("tir.BF16Legalize", ["bf16_promote", "bf16_cast_elimination"], lower=True)


def MakePackedAPI(num_unpacked_args=-1):  # noqa: N802
    """Functions in TVM's packed calling convention: ``(args, arg_type_ids, num_args, ...,
    out_ret_value, out_ret_tcode, resource_handle)``, with the entry code that unpacks and
    checks the arguments (see ``tvmlab.lower.make_packed_api``).  Needs the functions' "target"
    and "global_symbol" attributes; functions already packed are left as they are.  tvmlab
    builds functions before this form, so ``tvm.build`` refuses a packed one."""
    def run(func, mod, ctx):
        from ..lower.make_packed_api import make_packed_api
        if func.attrs.get("calling_conv", 0) != 0:
            return func
        return make_packed_api(func, num_unpacked_args)
    return PrimFuncPass(run, PassInfo(0, "tir.MakePackedAPI"))


def InstrumentBoundCheckers():  # noqa: N802
    """An assertion before every access of an argument or allocated buffer that its index is
    inside the buffer (tvm.lower adds it under config ``tir.instrument_bound_checkers``)."""
    def run(func, mod, ctx):
        from ..lower.bound_checker import instrument_bound_checkers
        bufs = func.attrs.get(BINDS_ATTR)
        bmap = {b.data: b for b in bufs.values()} if bufs else dict(func.buffer_map)
        return func.with_body(instrument_bound_checkers(func.body, bmap))
    return PrimFuncPass(run, PassInfo(0, "tir.InstrumentBoundCheckers"))


def LowerIntrin():  # noqa: N802
    """Intrinsic calls lowered by the rules of the function's target (attr "target"), and integer
    floor division / modulo as C's truncating ``/`` and ``%`` with the sign fixed."""
    def run(func, mod, ctx):
        from ..lower.lower_intrin import lower_intrin
        target = func.attrs.get("target")
        if target is None:
            raise LoweringError(f"LowerIntrin: function {func.name} has no \"target\" attribute; "
                                "add one with func.with_attr(\"target\", tvm.target.Target(\"llvm\"))")
        kind = getattr(target, "kind", None) or str(target).split()[0]
        return func.with_body(lower_intrin(func.body, str(kind)))
    return PrimFuncPass(run, PassInfo(0, "tir.LowerIntrin"))


def StorageRewrite():  # noqa: N802
    """Allocations whose lifetimes do not overlap share memory (in place where a statement reads
    one buffer for the last time while writing another of the same size); allocations of a
    tagged scope are packed into one; allocations move to their attach point (function body,
    thread scope, parallel loop)."""
    def run(func, mod, ctx):
        from ..lower.storage_rewrite import storage_rewrite
        return func.with_body(storage_rewrite(func.body))
    return PrimFuncPass(run, PassInfo(0, "tir.StorageRewrite"))


def MergeDynamicSharedMemoryAllocations():  # noqa: N802
    """Each kernel's "shared.dyn" allocations become regions of one uint8 buffer
    ``buf_dyn_shmem``; buffers whose lifetimes do not overlap share bytes (run before
    ThreadSync, which adds the barriers a hand-off between buffers needs)."""
    def run(func, mod, ctx):
        from ..lower.merge_dyn_shared import merge_dynamic_shared_memory
        return func.with_body(merge_dynamic_shared_memory(func.body))
    return PrimFuncPass(run, PassInfo(0, "tir.MergeDynamicSharedMemoryAllocations"))


def InjectVirtualThread():  # noqa: N802
    """Loops bound to ``vthread`` are interleaved: each statement is repeated per virtual thread
    and allocations get one copy per virtual thread (CPU and GPU targets)."""
    return _make("tir.InjectVirtualThread", "inject_virtual_thread", InjectVirtualThread.__doc__)


def LowerThreadAllreduce():  # noqa: N802
    """Cross-thread reductions become shared-memory trees with barriers (GPU targets)."""
    return _make("tir.LowerThreadAllreduce", "lower_thread_allreduce", LowerThreadAllreduce.__doc__)


def ThreadSync(storage_scope="shared"):  # noqa: N802
    """Barriers where threads read shared memory others wrote (only "shared" is synchronised)."""
    if storage_scope != "shared":
        raise LoweringError(f"ThreadSync: tvmlab synchronises 'shared' storage only, got "
                            f"{storage_scope!r}")
    return _make("tir.ThreadSync", "thread_sync", ThreadSync.__doc__)


def SplitHostDevice(target_kind="cuda"):  # noqa: N802
    """A GPU function cut into its kernels and the host function that launches them.

    The module then holds the host function and each kernel (the split itself
    is ``mod.device_split``).  ``target_kind`` is recorded on the kernels.
    """
    from ..lower.split_host_device import split_host_device

    def run(mod, ctx):
        funcs, history, split = {}, dict(mod.history), None
        for f in mod.functions.values():
            split = split_host_device(f, target_kind)
            funcs[split.host.name] = split.host
            funcs.update((k.name, k) for k in split.kernels)
        out = IRModule(funcs, history)
        out.device_split = split if len(mod.functions) == 1 else None
        if split is not None and len(mod.functions) == 1:
            history["tir.SplitHostDevice"] = split.host
        return out
    return module_pass(run, opt_level=0, name="tir.SplitHostDevice")


# TensorIR passes: TVM's tvm.lower runs them on every function, and on TE functions (no blocks,
# no match_buffer, no init blocks) they change nothing.  tvmlab's functions have no blocks, so
# these return the function as it is; they exist so that pass lists written for TVM run.
def _block_pass(name, what):
    def make():
        return PrimFuncPass(lambda func, mod, ctx: func, PassInfo(0, f"tir.{name}"))
    make.__name__ = name
    make.__doc__ = (f"TensorIR's {what}: tvmlab's functions have no blocks, so the function comes back "
                    "unchanged (as TVM's does for a TE function).")
    return make


CompactBufferAllocation = _block_pass("CompactBufferAllocation", "buffer region compaction")
ConvertBlocksToOpaque = _block_pass("ConvertBlocksToOpaque", "block-to-opaque conversion")
FlattenBuffer = _block_pass("FlattenBuffer", "flattening of block buffers")
PlanAndUpdateBufferAllocationLocation = _block_pass("PlanAndUpdateBufferAllocationLocation",
                                                    "allocation placement of block buffers")
LowerCrossThreadReduction = _block_pass("LowerCrossThreadReduction", "cross-thread reduction of blocks")
LowerInitBlock = _block_pass("LowerInitBlock", "lowering of reduction init blocks")
LowerMatchBuffer = _block_pass("LowerMatchBuffer", "lowering of match_buffer regions")


# The tir.transform pass that runs each step of lower.pipeline.PIPELINE.
_PASS_OF_STEP = {"storage_flatten": lambda: StorageFlatten(64), "narrow_datatype": lambda: NarrowDataType(32),
                 "bf16_legalize": BF16Legalize,
                 "inject_virtual_thread": InjectVirtualThread, "loop_partition": LoopPartition,
                 "vectorize": _lower_vectorize, "storage_rewrite": StorageRewrite, "unroll": UnrollLoop,
                 "simplify": Simplify, "remove_no_op": RemoveNoOp, "hoist_if_then_else": HoistIfThenElse,
                 "instrument_bound_checkers": lambda: _make("tir.InstrumentBoundCheckers",
                                                            "instrument_bound_checkers", "bound checks")}


def lower_sequence(simple_mode=False, ctx=None):
    """The passes of ``tvm.lower`` in order, as one Sequential (after ``schedule_to_module``).

    Built from ``lower.pipeline.PIPELINE`` itself, so a step inserted there (or a
    new one) runs here too.  With a PassContext ``ctx``, its ``tir.add_lower_pass``
    passes go in at their phases.
    """
    from ..ir.transform import Sequential
    phases = pipeline_config(ctx).get("phases", {}) if ctx is not None else {}

    def extra(phase):
        return [prim_func_pass(lambda func, mod, c, f=f: f(func), opt_level=0,
                               name=f"phase{phase}.{f.__name__}")
                for f in phases.get(phase, ())]
    passes = extra(0)
    for name, _ in _pl.PIPELINE:
        if simple_mode and name in _pl.SIMPLE_MODE_SKIPS:
            continue
        make = _PASS_OF_STEP.get(name)
        passes.append(make() if make else _make(name, name, f"lower.pipeline step {name!r}"))
        passes += [p for phase, after in _pl.PHASE_AFTER.items() if after == name
                   for p in extra(phase)]
    return Sequential(passes, name="tir.lower")


__all__ = ["prim_func_pass", "PrimFuncPass", "StorageFlatten", "LoopPartition", "VectorizeLoop",
           "UnrollLoop", "Simplify", "RemoveNoOp", "HoistIfThenElse", "StorageRewrite", "LowerIntrin",
           "Apply", "InjectCopyIntrin", "NarrowDataType", "BF16Promote", "BF16CastElimination",
           "BF16TypeLowering", "BF16Legalize", "InstrumentBoundCheckers", "MakePackedAPI",
           "CompactBufferAllocation", "ConvertBlocksToOpaque", "FlattenBuffer",
           "PlanAndUpdateBufferAllocationLocation", "LowerCrossThreadReduction", "LowerInitBlock",
           "LowerMatchBuffer", "InjectVirtualThread", "MergeDynamicSharedMemoryAllocations", "LowerThreadAllreduce",
           "ThreadSync", "SplitHostDevice", "lower_sequence", "pipeline_config"]
