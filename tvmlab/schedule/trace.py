"""The trace: every primitive applied to a schedule, as plain replayable data.

Steps name stages and axes by their printed names (``"i.inner"``) so a trace
can be shown, saved as JSON, turned into Python, and replayed on the same
tensor definitions to rebuild an equal schedule.
"""
from __future__ import annotations

import json
import re

from ..errors import ScheduleError
from ..ir.tensor import IterVar, Operation, Tensor

VERSION = 1


class Step(dict):
    """One primitive: ``{"primitive": "split", "stage": "C", "axis": "i", "factor": 64}``."""

    @property
    def primitive(self):
        return self["primitive"]

    @property
    def stage(self):
        return self.get("stage")

    @property
    def args(self):
        return {k: v for k, v in self.items() if k not in ("primitive", "stage")}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        where = f"{self.stage}: " if self.stage else ""
        return f"{where}{self.primitive}({args})"


def _encode(v, sch):
    if isinstance(v, IterVar):
        if v.iter_type == IterVar.THREAD:
            return {"thread": v.thread_tag}
        return v.var.name
    if isinstance(v, Tensor):
        return v.name
    from .stage import Stage
    if isinstance(v, Stage):
        return sch.stage_key(v)
    if isinstance(v, Operation) and v in sch.stage_map:
        return sch.stage_key(sch.stage_map[v])
    if isinstance(v, (list, tuple)):
        return [_encode(x, sch) for x in v]
    if isinstance(v, dict):
        return {k: _encode(x, sch) for k, x in v.items()}
    from ..ir.expr import IntImm, Var
    if isinstance(v, IntImm):
        return v.value
    if isinstance(v, Var):      # a symbolic split factor: replay finds it by name
        sch.trace.symbols[v.name] = v
        return {"var": v.name, "dtype": v.dtype}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise ScheduleError(f"cannot record argument {v!r} of type {type(v).__name__} in the trace")


class Trace:
    """The steps applied to one schedule, in order."""

    def __init__(self, schedule=None, steps=(), outputs=None):
        self.schedule = schedule
        self.steps = [Step(s) for s in steps]
        self._outputs = outputs
        self.symbols = {}       # name -> Var recorded as a split factor

    # ------------------------------------------------------------ recording
    def _add(self, primitive, stage, args):
        sch = self.schedule
        if sch is not None and sch._depth > 1:
            return      # a primitive called by another primitive is part of that step
        step = Step(primitive=primitive)
        if stage is not None:
            step["stage"] = sch.stage_key(stage)
        for k, v in args.items():
            step[k] = _encode(v, sch)
        self.steps.append(step)

    def _mark(self):
        return len(self.steps)

    def _reset(self, mark):
        del self.steps[mark:]

    def __len__(self):
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, i):
        return self.steps[i]

    def __repr__(self):
        return "Trace([\n" + "".join(f"  {s!r},\n" for s in self.steps) + "])"

    @property
    def outputs(self):
        if self.schedule is not None:
            return [op.name for op in self.schedule.outputs]
        return list(self._outputs or [])

    # ------------------------------------------------------------ JSON
    def to_json(self, indent=None):
        return json.dumps({"version": VERSION, "outputs": self.outputs, "steps": self.steps},
                          indent=indent)

    @classmethod
    def from_json(cls, text):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScheduleError(f"trace JSON is malformed: {e}") from None
        if not isinstance(data, dict) or data.get("version") != VERSION or \
                not isinstance(data.get("steps"), list):
            raise ScheduleError(f"not a tvmlab trace (expected version {VERSION} with 'steps')")
        for k, s in enumerate(data["steps"]):
            if not isinstance(s, dict) or "primitive" not in s:
                raise ScheduleError(f"trace step {k} has no 'primitive': {s!r}")
        return cls(None, data["steps"], data.get("outputs"))

    def save(self, path):
        with open(path, "w") as f:
            f.write(self.to_json(indent=1))

    @classmethod
    def load(cls, path):
        with open(path) as f:
            return cls.from_json(f.read())

    # ------------------------------------------------------------ replay
    def replay(self, target, symbols=None):
        """Apply the steps to a Schedule, or to a new schedule of ``target`` tensors/ops.

        ``symbols`` ({name: te.var}) gives the variables used as split factors;
        by default those this trace recorded, then the schedule's shape variables.
        """
        from .schedule import Schedule
        sch = target if isinstance(target, Schedule) else Schedule(target)
        known = dict(self.symbols) | dict(symbols or {})
        for k, step in enumerate(self.steps):
            try:
                apply_step(sch, step, known)
            except ScheduleError as e:
                raise ScheduleError(f"replaying step {k} ({step!r}): {e}") from None
        return sch

    # ------------------------------------------------------------ Python
    def as_python(self, schedule_var="s", header=True):
        """Python that rebuilds the schedule from the tensors (named after their operations)."""
        return _PythonWriter(self, schedule_var).write(header)


def _symbol(sch, v, symbols):
    """The variable a recorded ``{"var": name}`` stands for."""
    name = v["var"]
    if name in (symbols or {}):
        return symbols[name]
    from ..ir.functor import collect_vars
    for st in sch.stages:
        for d in getattr(st.op, "shape", None) or [t for t in st.op.outputs[0].shape]:
            for x in collect_vars(d):
                if x.name == name:
                    return x
    raise ScheduleError(f"the trace uses variable {name!r} as a split factor; pass it as "
                        f"trace.replay(s, symbols={{{name!r}: te.var({name!r})}})")


def apply_step(sch, step, symbols=None):
    """Apply one recorded step to schedule ``sch``."""
    from ..te import thread_axis
    p = step["primitive"]
    args = {k: _symbol(sch, v, symbols) if isinstance(v, dict) and set(v) == {"var", "dtype"} else v
            for k, v in step.args.items()}
    if "stage" in step:
        st = sch.stage_by_name(step["stage"])
        fn = getattr(st, p, None)
        if fn is None or p.startswith("_"):
            raise ScheduleError(f"unknown stage primitive {p!r}")
        if p in ("split", "vectorize", "unroll", "parallel", "pragma"):
            args["var" if p in ("vectorize", "unroll", "parallel", "pragma") else "parent"] = \
                st.axis(args.pop("axis"), "axis")
        elif p == "fuse":
            return fn(*[st.axis(a, "fuse axis") for a in args["axes"]])
        elif p == "reorder":
            return fn(*[st.axis(a, "reorder axis") for a in args["axes"]])
        elif p == "tile":
            args["x_parent"] = st.axis(args["x_parent"], "tile axis")
            args["y_parent"] = st.axis(args["y_parent"], "tile axis")
        elif p == "bind":
            return fn(st.axis(args["axis"], "bind axis"), thread_axis(args["thread"]["thread"]))
        elif p == "compute_at":
            parent = sch.stage_by_name(args["parent"])
            return fn(parent, parent.axis(args["scope"], "compute_at scope"))
        elif p == "set_store_predicate":
            from .predicate import decode
            return fn(decode(args["predicate"]["expr"], st))
        elif p == "tensorize":
            from .tensorize import lookup
            return fn(st.axis(args["axis"], "tensorize axis"), lookup(args["intrin"]))
        elif p == "storage_align":
            return fn(st.axis(args["axis"], "storage_align axis", leaf=False), args["factor"], args["offset"])
        elif p == "transform_layout":
            perm = list(args["perm"])
            return fn(lambda *axes: [axes[k] for k in perm])
        elif p == "prefetch":
            return fn(sch.tensor_by_name(args["tensor"]), st.axis(args["var"], "prefetch axis"),
                      args["offset"])
        return fn(**args)
    if p == "cache_read":
        readers = [sch.stage_by_name(r).op for r in args["readers"]]
        return sch.cache_read(sch.tensor_by_name(args["tensor"]), args["scope"], readers)
    if p == "cache_write":
        t = args["tensor"]
        tensors = [sch.tensor_by_name(x) for x in t] if isinstance(t, list) else sch.tensor_by_name(t)
        return sch.cache_write(tensors, args["scope"])
    if p == "rfactor":
        tensor = sch.tensor_by_name(args["tensor"])
        st = sch[tensor]
        return sch.rfactor(tensor, st.axis(args["axis"], "rfactor axis"), args.get("factor_axis", 0))
    if p == "normalize":
        return sch.normalize()
    if p == "create_group":
        return sch.create_group([sch.tensor_by_name(x) for x in args["outputs"]],
                                [sch.tensor_by_name(x) for x in args["inputs"]], args["include_inputs"])
    if p in ("group_compute_at", "group_compute_root"):
        if not 0 <= args["group"] < len(sch.groups):
            raise ScheduleError(f"the trace names group {args['group']}; the schedule has {len(sch.groups)}")
        g = sch.groups[args["group"]]
        if p == "group_compute_root":
            return g.compute_root()
        parent = sch.stage_by_name(args["parent"])
        return g.compute_at(parent, parent.axis(args["scope"], "compute_at scope"))
    raise ScheduleError(f"unknown primitive {p!r} in trace")


def _ident(name):
    s = re.sub(r"\W", "_", name)
    return s if s and not s[0].isdigit() else "_" + s


def _amount(v):
    """A split amount in Python: an int, or a variable by its name."""
    return _ident(v["var"]) if isinstance(v, dict) and "var" in v else v


class _PythonWriter:
    """Renders a trace as TVM-style Python (``xo, xi = s[C].split(C.op.axis[0], factor=64)``)."""

    def __init__(self, trace, svar):
        self.trace, self.s = trace, svar
        self.axis_vars = {}      # (stage key, axis name) -> python expression
        self.used = set()
        self.tensor_vars = {}
        self.groups = 0
        self.lines = []

    def tensor(self, name):
        return self.tensor_vars.get(name) or _ident(name)

    def stage(self, key):
        return f"{self.s}[{self.tensor(key.split('#')[0])}]"

    def axis(self, stage_key, name):
        ref = self.axis_vars.get((stage_key, name))
        if ref is not None:
            return ref
        sch = self.trace.schedule
        if sch is not None:
            try:
                op = sch.stage_by_name(stage_key).op
            except ScheduleError:
                op = None
            for field in ("axis", "reduce_axis"):
                for k, iv in enumerate(getattr(op, field, ()) or ()):
                    if iv.var.name == name:
                        return f"{self.stage(stage_key)}.op.{field}[{k}]"
        return f'{self.stage(stage_key)}.axis("{name}")'

    def bind_axes(self, stage_key, names):
        out = []
        for n in names:
            v = _ident(n)
            if v in self.used:
                v = _ident(f"{stage_key}_{n}")
            k = 2
            base = v
            while v in self.used:
                v = f"{base}_{k}"
                k += 1
            self.used.add(v)
            self.axis_vars[(stage_key, n)] = v
            out.append(v)
        return out

    def write(self, header):
        if header:
            outs = ", ".join(f"{self.tensor(o)}.op" for o in self.trace.outputs)
            self.lines.append(f"{self.s} = te.create_schedule([{outs}])")
        for st in self.trace.steps:
            self.lines.append(self.step(st))
        return "\n".join(self.lines) + "\n"

    def step(self, st):
        p, a = st.primitive, st.args
        if "stage" in st:
            key = st.stage
            S = self.stage(key)
            ax = lambda n: self.axis(key, n)  # noqa: E731
            if p == "split":
                o, i = self.bind_axes(key, [a["axis"] + ".outer", a["axis"] + ".inner"])
                amt = f"factor={_amount(a['factor'])}" if "factor" in a else \
                    f"nparts={_amount(a['nparts'])}"
                return f"{o}, {i} = {S}.split({ax(a['axis'])}, {amt})"
            if p == "fuse":
                name = ".".join(a["axes"][:2]) + ".fused" if len(a["axes"]) >= 2 else "singleton"
                for extra in a["axes"][2:]:
                    name = f"{name}.{extra}.fused"
                (f,) = self.bind_axes(key, [name])
                return f"{f} = {S}.fuse({', '.join(ax(n) for n in a['axes'])})"
            if p == "reorder":
                return f"{S}.reorder({', '.join(ax(n) for n in a['axes'])})"
            if p == "tile":
                x, y = a["x_parent"], a["y_parent"]
                names = self.bind_axes(key, [x + ".outer", y + ".outer", x + ".inner", y + ".inner"])
                return (f"{', '.join(names)} = {S}.tile({ax(x)}, {ax(y)}, "
                        f"x_factor={a['x_factor']}, y_factor={a['y_factor']})")
            if p in ("vectorize", "unroll", "parallel"):
                return f"{S}.{p}({ax(a['axis'])})"
            if p == "pragma":
                val = "" if a.get("pragma_value") is None else f", {a['pragma_value']!r}"
                return f"{S}.pragma({ax(a['axis'])}, {a['pragma_type']!r}{val})"
            if p == "bind":
                return f"{S}.bind({ax(a['axis'])}, te.thread_axis({a['thread']['thread']!r}))"
            if p == "compute_at":
                return f"{S}.compute_at({self.stage(a['parent'])}, {self.axis(a['parent'], a['scope'])})"
            if p in ("compute_inline", "compute_root", "opengl"):
                return f"{S}.{p}()"
            if p == "set_scope":
                return f"{S}.set_scope({a['scope']!r})"
            if p == "tensorize":
                return (f"{S}.tensorize({ax(a['axis'])}, "
                        f"tvmlab.schedule.tensorize.lookup({a['intrin']!r}))")
            if p == "storage_align":
                return f"{S}.storage_align({ax(a['axis'])}, {a['factor']}, {a['offset']})"
            if p == "transform_layout":
                return f"{S}.transform_layout(lambda *a: [{', '.join(f'a[{k}]' for k in a['perm'])}])"
            if p in ("double_buffer", "rolling_buffer"):
                return f"{S}.{p}()"
            if p == "prefetch":
                return f"{S}.prefetch({self.tensor(a['tensor'])}, {ax(a['var'])}, {a['offset']})"
            if p == "set_store_predicate":
                from .predicate import as_python
                return f"{S}.set_store_predicate({as_python(a['predicate']['expr'], ax)})"
            return f"# unknown step {st!r}"
        if p == "cache_read":
            var = self.new_tensor(f"{a['tensor']}.{a['scope']}")
            readers = ", ".join(self.tensor(r.split('#')[0]) for r in a["readers"])
            return f"{var} = {self.s}.cache_read({self.tensor(a['tensor'])}, {a['scope']!r}, [{readers}])"
        if p == "cache_write":
            t = a["tensor"]
            if isinstance(t, list):
                vs = [self.new_tensor(f"{x}.{a['scope']}") for x in t]
                src = "[" + ", ".join(self.tensor(x) for x in t) + "]"
                return f"{', '.join(vs)} = {self.s}.cache_write({src}, {a['scope']!r})"
            var = self.new_tensor(f"{t}.{a['scope']}")
            return f"{var} = {self.s}.cache_write({self.tensor(t)}, {a['scope']!r})"
        if p == "rfactor":
            var = self.new_tensor(f"{a['tensor']}.rf")
            fa = "" if not a.get("factor_axis") else f", factor_axis={a['factor_axis']}"
            return (f"{var} = {self.s}.rfactor({self.tensor(a['tensor'])}, "
                    f"{self.axis(a['tensor'], a['axis'])}{fa})")
        if p == "normalize":
            return f"{self.s}.normalize()"
        if p == "create_group":
            outs = ", ".join(self.tensor(x) for x in a["outputs"])
            ins = ", ".join(self.tensor(x) for x in a["inputs"])
            g = f"g{self.groups}"
            self.groups += 1
            return (f"{g} = {self.s}.create_group(outputs=[{outs}], inputs=[{ins}], "
                    f"include_inputs={a['include_inputs']})")
        if p == "group_compute_at":
            return f"g{a['group']}.compute_at({self.stage(a['parent'])}, {self.axis(a['parent'], a['scope'])})"
        if p == "group_compute_root":
            return f"g{a['group']}.compute_root()"
        return f"# unknown step {st!r}"

    def new_tensor(self, base):
        """A variable for a new stage's tensor, named as Schedule.fresh_name names it."""
        name, k = base, 0
        while name in self.tensor_vars:
            k += 1
            name = f"{base}.{k}"
        v = _ident(name)
        self.tensor_vars[name] = v
        return v
