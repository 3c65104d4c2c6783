"""Tasks of a Relay program: ``autotvm.task.extract_from_program(mod["main"], params, target)``.

The program is optimised and fused as ``relay.build`` does it; each fused group's anchor is then
scheduled as ``relay.build`` would schedule it, inside a dispatch context that records every workload a
template hook asks for (and answers the fallback, so nothing is compiled).  Each distinct workload
becomes a Task; tuning them all and building inside ``apply_history_best(log)`` uses the tuned configs.

    tasks = autotvm.task.extract_from_program(mod["main"], params, target="cuda")
"""
from __future__ import annotations

from ...errors import TVMLabError
from ..space import FallbackConfigEntity
from .dispatcher import DispatchContext, workload_key
from .task import TASK_TABLE, TaskError, create


class WorkloadRecorder(DispatchContext):
    """Answers every query with the fallback (the hand-written schedules) and records the workloads asked
    for, in order, once each."""

    def __init__(self):
        super().__init__()
        self.workloads = []
        self._seen = set()

    def _query_inside(self, target, workload):
        if workload is not None and workload_key(workload) not in self._seen:
            self._seen.add(workload_key(workload))
            self.workloads.append(workload)
        return FallbackConfigEntity()


def _op_names(ops):
    """Relay operator names (``relay.op.get("nn.conv2d")`` or "nn.conv2d") as template-name stems."""
    stems = set()
    for op in ops:
        name = getattr(op, "name", op)
        if not isinstance(name, str):
            raise TaskError(f"extract_from_program: ops must be relay operators or their names, got {op!r}")
        stems.add(name.split(".")[-1])
    return stems


def _wanted(task_name, stems):
    stem = task_name.split(".")[0]
    return stems is None or any(stem == s or stem.startswith(s + "_") for s in stems)


def _schedule_group(fn, target):
    """Schedule fused group ``fn`` the way relay.build's first choice does (nothing compiled)."""
    from ...relay.build_module import group_tensors
    if target.kind == "cuda":
        from ...topi.cuda import schedule_anchor
        with target:
            _, outs, anchor = group_tensors(fn)
        return schedule_anchor(outs, anchor, target)
    from ...relay.schedules import schedule_group
    _, outs, anchor = group_tensors(fn)
    return schedule_group(outs, anchor, target)


def extract_from_program(mod, params, target, target_host=None, ops=None):
    """The tunable tasks of Relay program ``mod`` (a function or an IRModule) with ``params`` for
    ``target``: one Task per distinct workload of a template (``dense.cuda``, ``conv2d_nchw.cuda``, ...,
    ``matmul.x86`` / ``conv2d_nchw.x86`` for llvm), in program order.  ``ops`` (relay operators or
    their names, e.g. ``[relay.op.get("nn.conv2d")]``) keeps only the tasks of those operators.  Outside a
    ``PassContext`` the program is optimised at ``opt_level=3`` (the level relay.build is called at to use
    the tuned records); inside one, at its settings."""
    import contextlib

    from ...codegen.registry import Target
    from ...ir.transform import PassContext
    from ...relay.build_module import optimize
    from ...relay.expr import Call, Function, post_order
    tgt = target if isinstance(target, Target) else Target(str(target))
    stems = _op_names(ops) if ops is not None else None
    # outside a PassContext: opt_level 3, as relay.build is called to use the records (its layouts, e.g.
    # the CPU's blocked conv2d_NCHWc, are then the ones tuned)
    with contextlib.nullcontext() if PassContext._stack else PassContext(opt_level=3):
        opt, _ = optimize(mod, tgt, params)
    groups, seen = [], set()
    for n in post_order(opt["main"].body):
        if isinstance(n, Call) and isinstance(n.op, Function) and id(n.op) not in seen:
            seen.add(id(n.op))
            groups.append(n.op)
    recorder = WorkloadRecorder()
    with recorder:
        for fn in groups:
            try:
                _schedule_group(fn, tgt)
            except TVMLabError:
                pass            # a group its first schedule refuses is no template's workload
    tasks = []
    for wl in recorder.workloads:
        name, args = wl[0], wl[1:]
        if name in TASK_TABLE and _wanted(name, stems):
            tasks.append(create(name, args, tgt, target_host))
    return tasks

