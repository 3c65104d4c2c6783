"""``lower``, ``build`` and ``schedule_to_module``: the few lines that walk the pipeline.

Spelled as TVM's ``tvm.driver.build_module``.

    AST1 (te.compute) --schedule--> InferBound + ScheduleOps --> AST2
         --lowering passes--> AST3 --codegen[target]--> runtime Module
"""
from __future__ import annotations

from ..errors import BuildError, LoweringError, TVMLabError
from ..ir.expr import Var
from ..ir.function import Buffer, IRModule, PrimFunc
from ..ir.functor import collect_vars
from ..ir.tensor import PlaceholderOp, Tensor
from ..schedule import Schedule
from ..schedule.steps import BINDS_ATTR, unique_names
from ..tir.transform import pipeline_config


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
    for k, a in enumerate(args):
        if any(b is a for b in args[:k]):
            raise LoweringError(f"argument {k} ({a.name}) appears more than once in args")


def _user_binds(binds, args):
    """``binds`` ({Tensor: Buffer}, TVM's ``lower(..., binds=)``) checked against the arguments."""
    if not binds:
        return {}
    if not isinstance(binds, dict):
        raise LoweringError(f"binds must be a dict {{tensor: tvm.tir.decl_buffer(...)}}, got "
                            f"{type(binds).__name__}")
    out = {}
    for t, buf in binds.items():
        if not isinstance(t, Tensor) or not isinstance(buf, Buffer):
            raise LoweringError(f"binds maps tensors to buffers (tvm.tir.decl_buffer), got "
                                f"{type(t).__name__} -> {type(buf).__name__}")
        if not any(t is a for a in args):
            raise LoweringError(f"binds: tensor {t.name} is not in the argument list; only "
                                "arguments can be bound to buffers")
        if buf.dtype != t.dtype or len(buf.shape) != len(t.shape):
            raise LoweringError(f"binds: buffer {buf.name} ({buf.dtype}, {len(buf.shape)} dims) does "
                                f"not match tensor {t.name} ({t.dtype}, {len(t.shape)} dims)")
        off = getattr(buf, "elem_offset", None)
        if off is not None and not (hasattr(off, "value") and off.value == 0):
            raise LoweringError(f"binds: buffer {buf.name} has elem_offset {off}; arguments with an "
                                "element offset are not supported")
        out[t] = buf
    return out


def _buffer_args(args, binds):
    """TVM lets an argument be the Buffer a tensor is bound to: it stands for that tensor."""
    if not isinstance(args, (list, tuple)) or not any(isinstance(a, Buffer) for a in args):
        return args
    owner = {id(b): t for t, b in (binds.items() if isinstance(binds, dict) else ())}
    out = []
    for k, a in enumerate(args):
        if isinstance(a, Buffer):
            if id(a) not in owner:
                raise LoweringError(f"argument {k} is buffer {a.name}, which binds= does not give "
                                    "to any tensor; bind it ({tensor: buffer}) or pass the tensor")
            a = owner[id(a)]
        out.append(a)
    return out


def get_binds(args, compact=False, binds=None):
    """TVM's helper: ``(binds, arg_list)`` with a Buffer for every tensor argument.

    ``binds`` gives some tensors their own buffers (``tvm.tir.decl_buffer``);
    ``arg_list`` has each tensor's buffer in its place (scalar vars stay).
    ``compact`` is accepted for TVM's signature (tvmlab's buffers are always dense).
    """
    if not isinstance(args, (list, tuple)):
        raise LoweringError(f"get_binds: args must be a list of tensors, got {args!r}")
    out = dict(_user_binds(binds, args))
    arg_list = []
    for a in args:
        if isinstance(a, Tensor):
            if a not in out:
                out[a] = Buffer(a.name, a.shape, a.dtype)
            arg_list.append(out[a])
        elif isinstance(a, (Var, Buffer)):
            arg_list.append(a)
        else:
            raise LoweringError(f"get_binds: an argument must be a tensor, buffer or scalar var, "
                                f"got {type(a).__name__}")
    return out, arg_list


def make_function(sch, args, name, user_binds=None):
    """AST2 as a PrimFunc plus the buffers of its tensor arguments (``user_binds`` gives some their own)."""
    from ..schedule.bound import canonical_tensor, effective_bodies, infer_bound
    from ..schedule.schedule_ops import schedule_ops
    from ..schedule.attach import check_attachments
    args = _buffer_args(args, user_binds)
    _check_args(sch, args)
    check_attachments(sch)
    bodies = effective_bodies(sch)
    dom_map = infer_bound(sch, bodies)
    body = schedule_ops(sch, [a for a in args if isinstance(a, Tensor)], dom_map, bodies)
    if body is None:        # nothing to compute (a schedule of placeholders): an empty function
        from ..ir.op import const
        from ..ir.stmt import Evaluate
        body = Evaluate(const(0))
    params, buffer_map, binds = [], {}, {}
    explicit = [a for a in args if isinstance(a, Var)]
    shape_vars = []
    user = _user_binds(user_binds, args)
    for a, bname in zip(args, unique_names([a.name for a in args])):
        if isinstance(a, Tensor):
            t = canonical_tensor(sch, a)
            buf = user.get(a) or Buffer(bname, a.shape, a.dtype)
            params.append(buf.data)
            buffer_map[buf.data] = buf
            binds[t] = buf
            for s in tuple(buf.shape) + tuple(buf.strides or ()):
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
    from ..codegen.registry import get_builder
    pred = getattr(get_builder(target.kind), "device_lowering", None)
    return bool(pred(target)) if pred is not None else "gpu" in target.keys


def _device_module(split, history):
    funcs = {split.host.name: split.host}
    funcs.update((k.name, k) for k in split.kernels)
    mod = IRModule(funcs, history)
    mod.device_split = split
    return mod


def schedule_to_module(sch, args=None, name="main", binds=None):
    """AST2 of ``sch`` as an IRModule holding one PrimFunc ``name``, ready for ``tir.transform`` passes.

    The function keeps the tensor -> buffer map of its arguments (attr
    ``"tvmlab.binds"``), which ``tir.transform.StorageFlatten`` consumes.
    """
    if not isinstance(sch, Schedule):
        raise LoweringError(f"schedule_to_module expects a schedule from te.create_schedule, got "
                            f"{type(sch).__name__}")
    if args is None:
        raise LoweringError("schedule_to_module needs the argument tensors, e.g. "
                            "schedule_to_module(s, [A, B, C])")
    func, binds_map = make_function(sch, list(args), name, binds)
    return IRModule({name: func.with_body(func.body, **{BINDS_ATTR: binds_map})}, {"AST2": func})


def config_from_context(ctx=None):
    """run_passes options from the current PassContext's TVM config keys (see tir.transform.pipeline_config)."""
    from ..ir.transform import PassContext
    return pipeline_config(ctx or PassContext.current())


def _lower_module(mod, simple_mode):
    """An IRModule from schedule_to_module (AST2) lowered to AST3; others as they are."""
    from ..lower.pipeline import run_passes
    if not any(BINDS_ATTR in f.attrs for f in mod.functions.values()):
        return mod
    funcs, history = {}, dict(mod.history)
    for k, f in mod.functions.items():
        binds = f.attrs.get(BINDS_ATTR, {})
        attrs = {a: v for a, v in f.attrs.items() if a != BINDS_ATTR}
        f = PrimFunc(f.name, f.params, f.buffer_map, f.body, attrs)
        funcs[k], h = run_passes(f, binds, simple_mode=simple_mode, config=config_from_context())
        history.update(h)
    return IRModule(funcs, history)


def lower(sch, args=None, name="main", binds=None, simple_mode=False, target=None):
    """Lower a schedule to AST3; the result prints as readable IR.

    ``result.history`` holds the function after each step by name ("AST2",
    "storage_flatten", ...), which the explorer shows.  With a GPU
    ``target`` ("cuda", ...) the module holds the host function ``name`` and
    its kernels (see ``tvmlab.lower.pipeline.lower_for_device``), and
    ``result.device_split`` the split itself; without ``target``, the
    enclosing ``with tvm.target.Target(...)`` is used when it is a GPU target
    (a CPU one changes nothing).  The current PassContext's
    config applies (see ``config_from_context``).  An IRModule from
    ``schedule_to_module`` is lowered; an already lowered one is returned.
    """
    if isinstance(sch, IRModule):
        return _lower_module(sch, simple_mode)
    if isinstance(sch, PrimFunc):
        return _lower_module(IRModule({sch.name: sch}), simple_mode)
    if not isinstance(sch, Schedule):
        raise LoweringError(f"lower expects a schedule from te.create_schedule, got "
                            f"{type(sch).__name__}")
    if args is None:
        raise LoweringError("lower needs the argument tensors, e.g. tvm.lower(s, [A, B, C])")
    if isinstance(binds, bool):     # lower(s, args, name, True): simple_mode given by position
        binds, simple_mode = None, binds
    if target is None:      # inside ``with Target("cuda"):`` a schedule is lowered for that GPU target
        from ..codegen.registry import Target
        cur = Target.current()
        target = cur if cur is not None and uses_device_lowering(cur) else None
    from ..lower.pipeline import run_passes
    func, binds_map = make_function(sch, list(args), name, binds)
    if target is not None:
        from ..codegen.registry import Target
        from ..lower.intrin_rules import apply_intrin_rules
        tgt = target if isinstance(target, Target) else Target(target)
        func = func.with_body(apply_intrin_rules(func.body, tgt.kind))
        if uses_device_lowering(tgt):
            from ..lower.pipeline import lower_for_device
            keep = {k: v for k, v in config_from_context().items() if k == "disable_vectorize"}
            split, history = lower_for_device(func, binds_map, tgt.kind, simple_mode=simple_mode,
                                              config={"gpu_limits": _gpu_limits(tgt), **keep})
            return _device_module(split, history)
    from ..ir.transform import PassContext
    ctx = PassContext.current()
    if ctx.instruments:     # run as tir.transform passes, so the instruments see each one
        from ..tir.transform import lower_sequence
        mod = IRModule({name: func.with_body(func.body, **{BINDS_ATTR: binds_map})}, {"AST2": func})
        return lower_sequence(simple_mode, ctx)(mod)
    out, history = run_passes(func, binds_map, simple_mode=simple_mode, config=config_from_context())
    return IRModule({name: out}, history)


def _gpu_limits(tgt):
    from ..lower.verify_gpu import DEFAULT_LIMITS
    return {k: v for k, v in tgt.options.items() if k in DEFAULT_LIMITS}


def _for_device(mod, tgt):
    """A module lowered without a target, split for GPU target ``tgt`` (its one function)."""
    if getattr(mod, "device_split", None) is not None:
        return mod
    if len(mod.functions) != 1:
        raise BuildError(f"building for {tgt} needs a module with one function, got "
                         f"{list(mod.functions)}; lower with tvm.lower(s, args, target={str(tgt)!r})")
    from ..lower.pipeline import lower_for_device
    func = next(iter(mod.functions.values()))
    split, history = lower_for_device(func, {}, tgt.kind, already_lowered=True,
                                      config={"gpu_limits": _gpu_limits(tgt)})
    return _device_module(split, dict(mod.history) | history)


def build(sch, args=None, target=None, target_host=None, name="default_function", binds=None):
    """Compile a schedule (or a lowered IRModule) for ``target``; returns a runtime Module.

    Without ``target``, the enclosing ``with tvm.target.Target(...)`` is used, else "llvm".

    As in TVM, ``target_host`` (the target of the code that launches GPU
    kernels) may be given by position: ``build(s, args, "cuda", "llvm",
    name="f")``.  tvmlab's host code for GPU targets runs in Python, so the
    host target must be a CPU target ("llvm") and only its validity is checked.
    """
    from ..codegen.registry import Target, get_builder
    if target is None:
        target = Target.current() or "llvm"      # ``with tvm.target.Target("opencl"): tvm.build(s, args)``
    if target_host is not None:
        host = target_host if isinstance(target_host, Target) else Target(target_host)
        if "cpu" not in host.keys:
            raise BuildError(f"target_host must be a CPU target such as 'llvm', got {str(host)!r}")
    tgt = target if isinstance(target, Target) else Target(target)
    builder = get_builder(tgt.kind)
    device = uses_device_lowering(tgt)
    if isinstance(sch, PrimFunc):
        sch = IRModule({sch.name: sch})
    if isinstance(sch, IRModule):
        packed = [k for k, f in sch.functions.items() if f.attrs.get("calling_conv", 0) != 0]
        if packed:
            raise BuildError(f"function(s) {packed} are in TVM's packed calling convention "
                             "(tir.transform.MakePackedAPI); tvmlab compiles functions before that "
                             "pass and checks the arguments in its runtime: build without it")
        sch = _lower_module(sch, False)       # AST2 from schedule_to_module is lowered first
        from ..lower.intrin_rules import apply_intrin_rules, rules_for
        if rules_for(tgt.kind):
            funcs = {k: f.with_body(apply_intrin_rules(f.body, tgt.kind))
                     for k, f in sch.functions.items()}
            new = IRModule(funcs, sch.history)
            for k, v in vars(sch).items():
                if k not in ("functions", "history"):
                    setattr(new, k, v)
            sch = new
        mod = _for_device(sch, tgt) if device else sch
    else:
        mod = lower(sch, args, name=name, binds=binds, target=tgt)
    try:
        return builder(mod, tgt)
    except TVMLabError:
        raise
    except Exception as e:  # a backend failure is a build error, never a crash
        raise BuildError(f"building {name} for {tgt}: {type(e).__name__}: {e}") from e
