"""The explorer's model: a trace of steps, undo/redo, and what each step lowers to.

Every state is rebuilt from the original tensors by replaying its steps
(``Trace.replay``), so undo, redo and reset never have to reverse a
primitive.  A step that fails to apply or to lower raises a TVMLabError and
leaves the session as it was.  States are cached by their steps.
"""
from __future__ import annotations

import json
from collections import OrderedDict

from ..codegen.registry import list_targets
from ..errors import BuildError, LoweringError, ScheduleError, TVMLabError
from ..ir.expr import Var
from ..ir.printer import astext
from ..ir.tensor import ComputeOp, PlaceholderOp, Tensor
from ..schedule.schedule import Schedule
from ..schedule.trace import Step, Trace, apply_step

LEVELS = ("AST1", "AST2", "AST3")
STAGE_PRIMITIVES = ("split", "tile", "fuse", "reorder", "vectorize", "unroll", "parallel",
                    "bind", "pragma", "compute_at", "compute_inline", "compute_root", "set_scope",
                    "opengl")
SCHEDULE_PRIMITIVES = ("cache_read", "cache_write", "rfactor", "normalize")
PRIMITIVES = STAGE_PRIMITIVES + SCHEDULE_PRIMITIVES
FUNC_NAME = "default_function"
CACHE_SIZE = 64

# Which keyword parameters each primitive takes (beyond stage), and which are required.
_PARAMS = {
    "split": (("axis",), ("factor", "nparts")),
    "tile": (("x_parent", "y_parent", "x_factor", "y_factor"), ()),
    "fuse": (("axes",), ()),
    "reorder": (("axes",), ()),
    "vectorize": (("axis",), ()),
    "unroll": (("axis",), ()),
    "parallel": (("axis",), ()),
    "bind": (("axis", "thread"), ()),
    "pragma": (("axis", "pragma_type"), ("pragma_value",)),
    "compute_at": (("parent", "scope"), ()),
    "compute_inline": ((), ()),
    "compute_root": ((), ()),
    "set_scope": (("scope",), ()),
    "opengl": ((), ()),
    "cache_read": (("tensor", "scope"), ("readers",)),
    "cache_write": (("tensor", "scope"), ()),
    "rfactor": (("tensor", "axis"), ("factor_axis",)),
    "normalize": ((), ()),
}


def _name(x):
    """A printed name from a name, an IterVar, a Tensor, a Stage or an Operation."""
    if isinstance(x, str):
        return x
    for attr in ("var",):
        v = getattr(x, attr, None)
        if isinstance(v, Var):
            return v.name
    name = getattr(x, "name", None)
    if isinstance(name, str):
        return name
    raise ScheduleError(f"expected a name (a string), got {type(x).__name__}: {x!r}")


def make_step(primitive, stage=None, axis=None, **params):
    """The trace step for ``primitive`` named by printed names, with friendly aliases.

    ``axis`` is the axis of ``stage`` (for ``compute_at``: the scope in the
    parent stage); ``tile`` also takes ``axes=(x, y)`` and ``factors=(fx, fy)``;
    ``bind`` takes ``thread="threadIdx.x"``; ``cache_read``/``cache_write``/
    ``rfactor`` take the tensor as ``tensor=`` or ``stage=``.
    """
    if not isinstance(primitive, str) or primitive not in _PARAMS:
        raise ScheduleError(f"unknown primitive {primitive!r}; expected one of {', '.join(PRIMITIVES)}")
    p = dict(params)
    if primitive == "tile":
        axes, factors = p.pop("axes", None), p.pop("factors", None)
        if axes is not None:
            if len(axes) != 2:
                raise ScheduleError(f"tile needs two axes, got {axes!r}")
            p.setdefault("x_parent", axes[0])
            p.setdefault("y_parent", axes[1])
        if factors is not None:
            if len(factors) != 2:
                raise ScheduleError(f"tile needs two factors, got {factors!r}")
            p.setdefault("x_factor", factors[0])
            p.setdefault("y_factor", factors[1])
    if primitive == "compute_at" and axis is not None:
        p.setdefault("scope", axis)
        axis = None
    if primitive in ("cache_read", "cache_write", "rfactor"):
        if stage is not None:
            p.setdefault("tensor", stage)
            stage = None
    if axis is not None:
        if "axis" not in _PARAMS[primitive][0]:
            raise ScheduleError(f"{primitive} takes no axis (got axis={axis!r})")
        p["axis"] = axis
    required, optional = _PARAMS[primitive]
    unknown = sorted(set(p) - set(required) - set(optional))
    if unknown:
        raise ScheduleError(f"{primitive}: unknown parameter(s) {', '.join(unknown)}; it takes "
                            f"{', '.join(('stage',) * (primitive in STAGE_PRIMITIVES) + required + optional)}")
    missing = [k for k in required if p.get(k) is None]
    if primitive in STAGE_PRIMITIVES and stage is None:
        missing.insert(0, "stage")
    if missing:
        raise ScheduleError(f"{primitive}: missing parameter(s) {', '.join(missing)}")
    if primitive == "split" and (("factor" in p) == ("nparts" in p)):
        raise ScheduleError("split: give exactly one of factor= or nparts=")
    step = Step(primitive=primitive)
    if stage is not None:
        step["stage"] = _name(stage)
    for k, v in p.items():
        if k in ("axis", "x_parent", "y_parent", "scope") and not (
                k == "scope" and primitive in ("set_scope", "cache_read", "cache_write")):
            v = _name(v)
        elif k in ("axes",):
            if isinstance(v, str) or not hasattr(v, "__iter__"):
                raise ScheduleError(f"{primitive}: axes must be a list of axis names, got {v!r}")
            v = [_name(a) for a in v]
        elif k == "parent":
            v = _name(v)
        elif k == "tensor":
            v = [_name(t) for t in v] if isinstance(v, (list, tuple)) else _name(v)
        elif k == "readers":
            v = [_name(r) for r in (v if isinstance(v, (list, tuple)) else [v])]
        elif k == "thread":
            v = {"thread": v if isinstance(v, str) else getattr(v, "thread_tag", v)}
        step[k] = v
    if primitive == "cache_read" and "readers" not in step:
        step["readers"] = None
    return step


class State:
    """One point in the trace: its schedule, lowered IR, texts and built modules."""

    def __init__(self, session, steps, schedule, lowered):
        self.session = session
        self.steps = [Step(s) for s in steps]
        self.schedule = schedule
        self.lowered = lowered
        self._texts = {}
        self._modules = {}
        self._graphs = {}
        self._svgs = {}

    @property
    def key(self):
        return steps_key(self.steps)

    def text(self, level):
        level = norm_level(level)
        if level not in self._texts:
            if level == "AST1":
                self._texts[level] = ast1_text(self.schedule)
            elif level == "AST2":
                self._texts[level] = self.lowered.history["AST2"].script()
            else:
                self._texts[level] = self.lowered.script()
        return self._texts[level]

    def graph(self, level, previous=None):
        from .graph import ast1_graph, stmt_graph
        level = norm_level(level)
        prev_keys = previous.graph(level).keys if previous is not None else None
        cache_key = (level, prev_keys)
        g = self._graphs.get(cache_key)
        if g is None:
            if level == "AST1":
                g = ast1_graph(self.schedule, prev_keys)
            elif level == "AST2":
                g = stmt_graph(self.lowered.history["AST2"], "AST2", prev_keys)
            else:
                g = stmt_graph(self.lowered[FUNC_NAME], "AST3", prev_keys)
            self._graphs[cache_key] = g
        return g

    def svg(self, level, previous=None):
        """(svg, why not) of ``graph(level, previous)``: the layout is cached per state, so undo,
        redo and revisits never run graphviz again."""
        from .graph import to_svg
        g = self.graph(level, previous)
        key = (norm_level(level), previous.graph(level).keys if previous is not None else None)
        got = self._svgs.get(key)
        if got is None:
            got = to_svg(g)
            if got[0] is not None:     # two threads may lay it out at once: the first one stays
                got = self._svgs.setdefault(key, got)
        return got

    def cached_svg(self, level, previous=None):
        """The cached (svg, None) of ``svg(level, previous)``, or None if not laid out yet."""
        return self._svgs.get((norm_level(level),
                               previous.graph(level).keys if previous is not None else None))

    def module(self, target):
        """The runtime Module for ``target`` (a string), or raise BuildError saying why not."""
        kind = target_kind(target)
        if kind not in list_targets():
            raise BuildError(not_registered(kind))
        if target not in self._modules:
            import tvmlab
            try:
                self._modules[target] = tvmlab.build(self.lowered, target=target, name=FUNC_NAME)
            except TVMLabError as e:
                self._modules[target] = e
            except Exception as e:   # a backend bug: report it, do not crash the explorer
                self._modules[target] = BuildError(f"building for {target}: {type(e).__name__}: {e}")
        m = self._modules[target]
        if isinstance(m, Exception):
            raise m
        return m

    def source(self, target, fmt=None):
        """The code of ``target``: LLVM IR (or ``fmt="asm"``) for llvm; for a GPU target the device
        module's (CUDA C, ``"ptx"``, ``"resources"``; GLSL), not the host function that launches it."""
        m = self.module(target)
        kind = target_kind(target)
        if fmt is None:
            fmt = "ll" if kind == "llvm" else ""
        if kind != "llvm" and getattr(m, "imported_modules", None):
            return m.imported_modules[0].get_source(fmt)
        return m.get_source(fmt)


def target_kind(target):
    return str(getattr(target, "kind", target)).split()[0]


def not_registered(kind):
    return (f"target {kind!r} is not registered in this tvmlab (registered: "
            f"{', '.join(list_targets()) or 'none'}); its code appears here once its backend "
            "is installed and registered")


def norm_level(level):
    lv = str(level).upper()
    if lv not in LEVELS:
        raise LoweringError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    return lv


def steps_key(steps):
    return json.dumps(list(steps), sort_keys=True, default=str)


def ast1_text(schedule):
    """AST1 as text: one line per tensor, in dataflow order."""
    lines = []
    for st in schedule.stages:
        op = st.op
        if isinstance(op, PlaceholderOp):
            shape = ", ".join(astext(d) if not isinstance(d, int) else str(d) for d in op.shape)
            lines.append(f"{op.name} = te.placeholder(({shape}{',' if len(op.shape) == 1 else ''}), "
                         f"\"{op.dtype}\")")
        elif isinstance(op, ComputeOp):
            idx = ", ".join(iv.var.name for iv in op.axis)
            ranges = ", ".join(f"{iv.var.name} < {astext(iv.dom.extent)}" for iv in op.axis)
            for k, (t, b) in enumerate(zip(op.outputs, op.body)):
                lines.append(f"{t.name}[{idx}] = {astext(b)}")
            note = []
            if ranges:
                note.append(ranges)
            if st.attach_type == "inline":
                note.append("inlined")
            elif st.attach_type == "scope" and st.attach_stage is not None:
                note.append(f"computed at {st.attach_stage.name}.{st.attach_ivar.var.name}")
            if st.scope:
                note.append(f"scope {st.scope}")
            if note:
                lines.append("    # " + "; ".join(note))
        else:
            lines.append(f"{op.name} = {type(op).__name__}")
    return "\n".join(lines)


class Session:
    """Steps applied to one computation, with undo/redo and per-state views."""

    def __init__(self, schedule, args, targets=None):
        if not isinstance(schedule, Schedule):
            raise ScheduleError(f"explore expects a schedule from te.create_schedule, got "
                                f"{type(schedule).__name__}")
        if not isinstance(args, (list, tuple)) or not args:
            raise LoweringError(f"explore needs the argument tensors, e.g. [A, B, C]; got {args!r}")
        for k, a in enumerate(args):
            if not isinstance(a, (Tensor, Var)):
                raise LoweringError(f"argument {k} must be a tensor or a scalar te.var, got "
                                    f"{type(a).__name__}: {a!r}")
        if targets is None:
            targets = ["llvm"]
        elif isinstance(targets, str):
            targets = [targets]
        self.targets = [str(t) for t in targets]
        for t in self.targets:
            if not t.strip():
                raise BuildError(f"target names must be non-empty, got {targets!r}")
        self.ops = list(schedule.outputs)
        self.args = list(args)
        self.initial = [Step(s) for s in schedule.trace.steps]
        self._cache = OrderedDict()
        self.steps = list(self.initial)
        self.redo_steps = []
        self.current = self.state(self.steps)

    # ------------------------------------------------------------ states
    def state(self, steps):
        key = steps_key(steps)
        st = self._cache.get(key)
        if st is not None:
            self._cache.move_to_end(key)
            return st
        sch = Trace(None, steps).replay(self.ops)
        st = self._lower(list(sch.trace.steps), sch)
        self._remember(st)
        return st

    def _remember(self, st):
        self._cache[st.key] = st
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    def _lower(self, steps, sch):
        import tvmlab
        try:
            lowered = tvmlab.lower(sch, self.args, name=FUNC_NAME)
        except TVMLabError:
            raise
        except Exception as e:    # a lowering bug is an error for the user, not a crash
            raise LoweringError(f"lowering failed: {type(e).__name__}: {e}") from e
        return State(self, steps, sch, lowered)

    @property
    def previous(self):
        """The state before the last step of the trace (None at an empty trace)."""
        if not self.steps:
            return None
        try:
            return self.state(self.steps[:-1])
        except TVMLabError:
            return None

    # ------------------------------------------------------------ editing
    def apply(self, primitive, stage=None, axis=None, **params):
        """Apply one primitive; on any error nothing changes and a TVMLabError is raised."""
        step = make_step(primitive, stage=stage, axis=axis, **params)
        sch = Trace(None, self.steps).replay(self.ops)
        if step.primitive == "cache_read" and step.get("readers") is None:
            producer = sch[sch.tensor_by_name(step["tensor"])]
            step["readers"] = [sch.stage_key(s) for s in sch._consumers(producer)]
        try:
            apply_step(sch, step)
        except TVMLabError:
            raise
        except (KeyError, TypeError, AttributeError, IndexError) as e:
            raise ScheduleError(f"{primitive}: cannot apply {step!r}: {type(e).__name__}: {e}") from None
        steps = list(sch.trace.steps)
        st = self._cache.get(steps_key(steps)) or self._lower(steps, sch)
        self._remember(st)
        self.steps = steps
        self.redo_steps = []
        self.current = st
        return st

    def undo(self):
        if not self.steps:
            raise ScheduleError("nothing to undo: the trace is empty")
        st = self.state(self.steps[:-1])
        self.redo_steps.append(self.steps[-1])
        self.steps = list(st.steps)
        self.current = st
        return st

    def redo(self):
        if not self.redo_steps:
            raise ScheduleError("nothing to redo")
        steps = self.steps + [self.redo_steps[-1]]
        st = self.state(steps)
        self.redo_steps.pop()
        self.steps = list(st.steps)
        self.current = st
        return st

    def reset(self):
        """Back to the schedule the explorer was opened with; redo brings the steps back."""
        st = self.state(self.initial)
        dropped = self.steps[len(self.initial):] if self.steps[:len(self.initial)] == self.initial \
            else []
        self.redo_steps = list(reversed(dropped)) if dropped else []
        self.steps = list(st.steps)
        self.current = st
        return st

    # ------------------------------------------------------------ views
    @property
    def schedule(self):
        return self.current.schedule

    @property
    def trace(self):
        return self.current.schedule.trace

    def as_python(self, schedule_var="s"):
        return self.trace.as_python(schedule_var)

    def source(self, target, fmt=None):
        return self.current.source(target, fmt)

    def graph(self, level):
        return self.current.graph(level, self.previous)

    def svg(self, level):
        return self.current.svg(level, self.previous)

    # ------------------------------------------------------------ saving
    def to_dict(self, sizes=None, pinned=None):
        """What a saved session holds: the trace, the targets, benchmark sizes, a pinned step."""
        return {"format": "tvmlab-session", "version": 1,
                "outputs": [o.name for o in self.ops], "args": [a.name for a in self.args],
                "steps": [dict(st) for st in self.steps], "targets": list(self.targets),
                "sizes": dict(sizes or {}),
                "pinned": None if pinned is None else [dict(st) for st in pinned]}

    def load_dict(self, data):
        """Go to the trace of a saved session (its tensors must be the ones named there)."""
        if not isinstance(data, dict) or data.get("format") != "tvmlab-session":
            raise ScheduleError("not a tvmlab session (expected a JSON object with "
                                "format 'tvmlab-session')")
        want, have = data.get("args"), [a.name for a in self.args]
        if want is not None and list(want) != have:
            raise ScheduleError(f"the session was saved for arguments {want}, this explorer has "
                                f"{have}")
        steps = data.get("steps")
        if not isinstance(steps, list) or not all(isinstance(x, dict) for x in steps):
            raise ScheduleError("session 'steps' must be a list of trace steps (objects)")
        try:
            st = self.state([Step(x) for x in steps])     # raises, changing nothing, on a bad step
        except TVMLabError:
            raise
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
            raise ScheduleError(f"the session's steps do not replay: {type(e).__name__}: {e}") \
                from None
        self.redo_steps = []
        self.steps = list(st.steps)
        self.current = st
        return st

    def text(self, level):
        return self.current.text(level)
