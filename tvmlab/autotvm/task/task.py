"""Templates and tasks.

``@autotvm.template("name")`` registers a function ``f(*args) -> (s, args)``
that reads its knobs from ``autotvm.get_config()``.  Called directly, the
template asks the current dispatch context for its workload's config (a tuned
one inside ``apply_history_best``, else the fallback).  ``task.create(name,
args, target)`` runs it once on an empty ConfigSpace to collect the knobs;
``task.instantiate(config)`` builds the schedule of one config.
"""
from __future__ import annotations

import functools

from ...errors import TVMLabError
from ..space import ConfigEntity, ConfigSpace
from .dispatcher import ApplyConfig, DispatchContext

TASK_TABLE = {}


class TaskError(TVMLabError, ValueError):
    """A task cannot be made: unknown template, arguments that are not data, a template that fails."""


def serialize_arg(x):
    """A template argument as JSON data: numbers, strings, lists; a tensor as ["TENSOR", shape, dtype]."""
    from ...ir.expr import FloatImm, IntImm
    from ...ir.tensor import Tensor
    if isinstance(x, Tensor):
        return ["TENSOR", [serialize_arg(d) for d in x.shape], str(x.dtype)]
    if isinstance(x, (IntImm, FloatImm)):
        return x.value
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, (list, tuple)):
        return [serialize_arg(v) for v in x]
    raise TaskError(f"a template argument must be a number, string, list or tensor (it is stored in "
                    f"records), got {type(x).__name__}: {x!r:.60}")


def deserialize_arg(x):
    """The inverse of serialize_arg for records: a tensor comes back as a placeholder."""
    if isinstance(x, list):
        if len(x) == 3 and x[0] == "TENSOR" and isinstance(x[1], list) and isinstance(x[2], str):
            from ... import te
            return te.placeholder(tuple(x[1]), dtype=x[2])
        return tuple(deserialize_arg(v) for v in x)
    return x


def args_to_workload(args, task_name):
    """``(task_name, *args)`` as plain data: the key of records and dispatch."""
    return (task_name,) + tuple(_hashable(serialize_arg(a)) for a in args)


def _hashable(x):
    return tuple(_hashable(v) for v in x) if isinstance(x, list) else x


def template(task_name, func=None):
    """Register ``func`` as the template ``task_name`` (usable as ``@template("name")``)."""
    if not isinstance(task_name, str) or not task_name:
        raise TaskError(f"template needs a task name string, got {task_name!r}")

    def register(f):
        TASK_TABLE[task_name] = f

        @functools.wraps(f)
        def dispatcher(*args, **kwargs):
            canonical = getattr(f, "canonical_args", None)
            if canonical is not None and not kwargs:
                args = tuple(canonical(*args))
            workload = args_to_workload(args, task_name)
            cfg = DispatchContext.current.query(_current_target(), workload)
            with ApplyConfig(cfg):
                return f(*args, **kwargs)

        dispatcher.task_name = task_name
        dispatcher.template_func = f
        return dispatcher

    return register(func) if func is not None else register


def _current_target():
    from ...codegen.registry import Target
    cur = getattr(Target, "current", None)
    if callable(cur):
        try:
            return cur(allow_none=True)
        except TypeError:
            return cur()
    return None


def get_config():
    """The config of the template being instantiated (the fallback outside any context)."""
    return DispatchContext.current.query(_current_target(), None)


def compute_flop(sch):
    """Floating-point operations of a schedule's computation, counted from its compute bodies."""
    from ...ir import expr as E
    from ...ir.functor import IRVisitor
    from ...ir.tensor import ComputeOp

    arith = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)

    class Count(IRVisitor):
        def __init__(self):
            super().__init__()
            self.n = 0

        def generic_visit(self, n):
            if isinstance(n, arith) or (isinstance(n, E.Call) and n.op not in ("if_then_else", "likely")):
                self.n += 1
            return super().generic_visit(n)

    def extent(iv):
        e = iv.dom.extent
        return e.value if isinstance(e, E.IntImm) else e if isinstance(e, int) else None

    total = 0
    for stage in sch.stages:
        op = stage.op
        if not isinstance(op, ComputeOp):
            continue
        body = op.body[0]
        c = Count()
        if isinstance(body, E.Reduce):
            for src in body.source:
                c.visit(src)
            c.n += 1                  # the combiner
            loops = list(op.axis) + list(body.axis)
        else:
            c.visit(body)
            loops = list(op.axis)
        sizes = [extent(iv) for iv in loops]
        if c.n and all(s is not None for s in sizes):
            n = 1
            for s in sizes:
                n *= s
            total += n * c.n
    return total


class Task:
    """A template applied to arguments: its config space, FLOP count and target."""

    def __init__(self, name, args):
        self.name = name
        self.args = tuple(args)
        self.func = TASK_TABLE.get(name)
        self.config_space = None
        self.flop = None
        self.target = None
        self.target_host = None

    @property
    def workload(self):
        return args_to_workload(self.args, self.name)

    def instantiate(self, config):
        """``(s, args)`` of the template under ``config``."""
        if self.func is None:
            raise TaskError(f"no template named {self.name!r} is registered in this process; "
                            f"known: {sorted(TASK_TABLE)}")
        import contextlib

        from ...codegen.registry import Target
        config.flop = 0
        # under the task's target, as TVM's builder runs it (a template reads its limits from it); a task
        # read from a record holds its target as text
        target = self.target
        if target is not None and not isinstance(target, Target):
            target = Target(str(target))
        with target if target is not None else contextlib.nullcontext(), ApplyConfig(config):
            sch, arg_bufs = self.func(*self.args)
        if not self.flop:
            self.flop = config.flop or compute_flop(sch)
        return sch, arg_bufs

    def __getstate__(self):
        # the template is found again by name where the task is unpickled
        state = dict(self.__dict__)
        state["func"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.func = TASK_TABLE.get(self.name)

    def __repr__(self):
        return f"Task(func_name={self.name}, args={self.args}, workload={self.workload})"


def create(task_name, args, target="llvm", target_host=None):
    """A Task of the registered template ``task_name`` on ``args`` for ``target``, its space collected."""
    from ...codegen.registry import Target
    name = getattr(task_name, "task_name", task_name)
    if name not in TASK_TABLE:
        raise TaskError(f"no template named {name!r}; register one with @autotvm.template({name!r}). "
                        f"Known: {sorted(TASK_TABLE)}")
    args = tuple(args)
    canonical = getattr(TASK_TABLE[name], "canonical_args", None)
    if canonical is not None:             # one spelling per workload (a template's own rule)
        args = tuple(canonical(*args))
    args_to_workload(args, name)          # arguments must be data
    task = Task(name, args)
    task.target = Target(target) if not isinstance(target, Target) else target
    task.target_host = target_host
    space = ConfigSpace()
    try:
        with task.target, ApplyConfig(space):
            sch, _ = task.func(*args)
    except TVMLabError:
        raise
    except Exception as e:
        raise TaskError(f"template {name!r} failed while collecting its knobs: {type(e).__name__}: {e}") from e
    task.config_space = space
    task.flop = space.flop or compute_flop(sch)
    return task


__all__ = ["template", "get_config", "create", "Task", "TASK_TABLE", "args_to_workload", "ConfigEntity"]
