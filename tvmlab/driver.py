"""``lower`` and ``build``: the few lines that walk the pipeline.

    AST1 (te.compute) --schedule--> InferBound + ScheduleOps --> AST2
         --lowering passes--> AST3 --codegen[target]--> runtime Module
"""
from __future__ import annotations

from .errors import BuildError, LoweringError, TVMLabError
from .ir.expr import Var
from .ir.function import Buffer, IRModule, PrimFunc
from .ir.functor import collect_vars
from .ir.tensor import PlaceholderOp, Tensor
from .schedule import Schedule


def _check_args(sch, args):
    if not isinstance(args, (list, tuple)):
        raise LoweringError(f"args must be a list of tensors (and scalar vars), got {args!r}")
    for k, a in enumerate(args):
        if isinstance(a, Tensor):
            # A placeholder the computation does not read is still a valid
            # argument (an unused buffer), as in TVM.
            if a.op not in sch.stage_map and not isinstance(a.op, PlaceholderOp):
                raise LoweringError(f"argument {k} ({a.name}) is not a tensor of this schedule; "
                                    f"stages are {[s.name for s in sch.stages]}")
        elif not isinstance(a, Var):
            raise LoweringError(f"argument {k} must be a tensor or a scalar te.var, got "
                                f"{type(a).__name__}: {a!r}")
    names = [a.name for a in args]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise LoweringError(f"arguments must have distinct names; {dup} appear more than once")


def make_function(sch, args, name):
    """AST2 as a PrimFunc plus the buffers of its tensor arguments."""
    from .schedule.bound import canonical_tensor, effective_bodies, infer_bound
    from .schedule.schedule_ops import schedule_ops
    _check_args(sch, args)
    bodies = effective_bodies(sch)
    dom_map = infer_bound(sch, bodies)
    body = schedule_ops(sch, [a for a in args if isinstance(a, Tensor)], dom_map, bodies)
    params, buffer_map, binds = [], {}, {}
    explicit = [a for a in args if isinstance(a, Var)]
    shape_vars = []
    for a in args:
        if isinstance(a, Tensor):
            t = canonical_tensor(sch, a)
            buf = Buffer(a.name, a.shape, a.dtype)
            params.append(buf.data)
            buffer_map[buf.data] = buf
            binds[t] = buf
            for s in a.shape:
                for v in collect_vars(s):
                    if v not in explicit and v not in shape_vars:
                        shape_vars.append(v)
        else:
            params.append(a)
    params += shape_vars
    return PrimFunc(name, params, buffer_map, body, {"global_symbol": name}), binds


def uses_device_lowering(target):
    """True when ``target`` (a Target) is built from host code plus GPU kernels.

    A builder may decide by carrying ``builder.device_lowering(target) ->
    bool``; otherwise targets with the key "gpu" use it.
    """
    from .codegen.registry import get_builder
    pred = getattr(get_builder(target.kind), "device_lowering", None)
    return bool(pred(target)) if pred is not None else "gpu" in target.keys


def _device_module(split, history):
    funcs = {split.host.name: split.host}
    funcs.update((k.name, k) for k in split.kernels)
    mod = IRModule(funcs, history)
    mod.device_split = split
    return mod


def lower(sch, args=None, name="main", simple_mode=False, binds=None, target=None):
    """Lower a schedule to AST3; the result prints as readable IR.

    ``result.history`` holds the function after each step by name ("AST2",
    "storage_flatten", ...), which the explorer shows.  With a GPU
    ``target`` ("cuda", ...) the module holds the host function ``name`` and
    its kernels (see ``tvmlab.lower.pipeline.lower_for_device``), and
    ``result.device_split`` the split itself.
    """
    if isinstance(sch, IRModule):
        return sch
    if not isinstance(sch, Schedule):
        raise LoweringError(f"lower expects a schedule from te.create_schedule, got "
                            f"{type(sch).__name__}")
    if args is None:
        raise LoweringError("lower needs the argument tensors, e.g. tvm.lower(s, [A, B, C])")
    from .lower.pipeline import run_passes
    func, binds_map = make_function(sch, list(args), name)
    if target is not None:
        from .codegen.registry import Target
        tgt = target if isinstance(target, Target) else Target(target)
        if uses_device_lowering(tgt):
            from .lower.pipeline import lower_for_device
            split, history = lower_for_device(func, binds_map, tgt.kind, simple_mode=simple_mode,
                                              config={"gpu_limits": _gpu_limits(tgt)})
            return _device_module(split, history)
    out, history = run_passes(func, binds_map, simple_mode=simple_mode)
    return IRModule({name: out}, history)


def _gpu_limits(tgt):
    from .lower.verify_gpu import DEFAULT_LIMITS
    return {k: v for k, v in tgt.options.items() if k in DEFAULT_LIMITS}


def _for_device(mod, tgt):
    """A module lowered without a target, split for GPU target ``tgt`` (its one function)."""
    if getattr(mod, "device_split", None) is not None:
        return mod
    if len(mod.functions) != 1:
        raise BuildError(f"building for {tgt} needs a module with one function, got "
                         f"{list(mod.functions)}; lower with tvm.lower(s, args, target={str(tgt)!r})")
    from .lower.pipeline import lower_for_device
    func = next(iter(mod.functions.values()))
    split, history = lower_for_device(func, {}, tgt.kind, already_lowered=True,
                                      config={"gpu_limits": _gpu_limits(tgt)})
    return _device_module(split, dict(mod.history) | history)


def build(sch, args=None, target="llvm", name="default_function", target_host=None):
    """Compile a schedule (or a lowered IRModule) for ``target``; returns a runtime Module."""
    from .codegen.registry import Target, get_builder
    tgt = target if isinstance(target, Target) else Target(target)
    builder = get_builder(tgt.kind)
    device = uses_device_lowering(tgt)
    if isinstance(sch, IRModule):
        mod = _for_device(sch, tgt) if device else sch
    else:
        mod = lower(sch, args, name=name, target=tgt if device else None)
    try:
        return builder(mod, tgt)
    except TVMLabError:
        raise
    except Exception as e:  # a backend failure is a build error, never a crash
        raise BuildError(f"building {name} for {tgt}: {type(e).__name__}: {e}") from e
