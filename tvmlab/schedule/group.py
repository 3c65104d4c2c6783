"""create_group: schedule a sub-graph of stages as one unit.

``g = s.create_group(outputs=x1, inputs=x, include_inputs=True)`` gathers
the stages that compute ``outputs`` from ``inputs`` (the inputs' own stages
too with ``include_inputs``).  ``g.compute_at(s[C], axis)`` then computes the
whole group inside that loop of ``C``: every member computed at the group's
root is attached there (a member attached inside another member stays where
it is); ``g.compute_root()`` puts them back at the root.  A stage belongs to
one group; a group made of the members of another is nested in it
(``g2.group is g1``).
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.tensor import Operation, Tensor


class Group:
    """A set of stages scheduled together (TVM's group stage)."""

    def __init__(self, schedule, members, outputs, inputs, include_inputs, parent):
        self.schedule = schedule
        self.members = members
        self.outputs, self.inputs, self.include_inputs = outputs, inputs, include_inputs
        self.group = parent
        self.attach_type = "root"
        self.attach_stage = None
        self.attach_ivar = None

    @property
    def num_child_stages(self):
        return len(self.members)

    @property
    def index(self):
        return self.schedule.groups.index(self)

    def __repr__(self):
        return f"group({', '.join(st.name for st in self.members)})"

    def _at_group_root(self):
        return [st for st in self.members
                if st.attach_type == "root" or (st.attach_type == "scope" and st.attach_stage is
                                                self.attach_stage and st.attach_ivar is self.attach_ivar)]

    def compute_at(self, parent, scope):
        """Compute every member at the group's root inside loop ``scope`` of stage ``parent``."""
        from .stage import Stage
        sch = self.schedule
        with sch._transaction():
            if isinstance(parent, (Tensor, Operation)):
                parent = sch[parent]
            if not isinstance(parent, Stage) or parent.schedule is not sch:
                raise ScheduleError(f"compute_at of {self!r}: parent must be a stage of this schedule, "
                                    f"got {parent!r}")
            outs = [st for st in self.members if st.is_output]
            if outs:
                raise ScheduleError(f"compute_at of {self!r}: member {outs[0].name} is an output of the "
                                    "schedule, computed at the root")
            if parent in self.members:
                raise ScheduleError(f"compute_at of {self!r}: stage {parent.name} is in the group")
            if parent.attach_type == "inline":
                raise ScheduleError(f"compute_at of {self!r}: stage {parent.name} is inlined and has no loops")
            scope = parent.axis(scope, "compute_at scope")
            readers = {q for st in self.members for q in sch._consumers(st) if q not in self.members}
            if parent not in readers:
                raise ScheduleError(f"compute_at of {self!r}: stage {parent.name} reads nothing the group "
                                    f"computes (its readers are {sorted(q.name for q in readers)})")
            a = parent
            while a is not None:
                if a in self.members:
                    raise ScheduleError(f"compute_at of {self!r}: {parent.name} is computed inside member "
                                        f"{a.name} (a cycle)")
                a = a.attach_stage
            for st in self._at_group_root():
                st.attach_type, st.attach_stage, st.attach_ivar = "scope", parent, scope
            self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, scope
            sch.trace._add("group_compute_at", None, {"group": self.index, "parent": parent,
                                                      "scope": scope})

    def compute_root(self):
        """Compute the group's members at the root again."""
        sch = self.schedule
        with sch._transaction():
            for st in self._at_group_root():
                st.attach_type, st.attach_stage, st.attach_ivar = "root", None, None
            self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None
            sch.trace._add("group_compute_root", None, {"group": self.index})


def _ops(x, what):
    xs = x if isinstance(x, (list, tuple)) else [x]
    out = []
    for t in xs:
        if isinstance(t, Tensor):
            t = t.op
        if not isinstance(t, Operation):
            raise ScheduleError(f"create_group: {what} must be tensors or operations, got {t!r}")
        out.append(t)
    return out


def create_group(sch, outputs, inputs, include_inputs=False):
    """The stages on paths from ``inputs`` to ``outputs``, as a Group."""
    outs, ins = _ops(outputs, "outputs"), _ops(inputs, "inputs")
    for op in outs + ins:
        if op not in sch.stage_map:
            raise ScheduleError(f"create_group: {op.name} is not part of this schedule")
    members, seen = [], set()
    stack = list(outs)
    while stack:
        op = stack.pop()
        st = sch.stage_map[op]
        if id(st) in seen:
            continue
        seen.add(id(st))
        if op in ins or st.op in ins or st.origin_op in ins:
            if include_inputs and not st.is_placeholder:
                members.append(st)
            continue
        if st.is_placeholder:
            raise ScheduleError(f"create_group: {op.name} is an input of the computation but not among "
                                f"the group's inputs {[o.name for o in ins]}")
        members.append(st)
        stack.extend(t.op for t in st.op.input_tensors)
    members = [st for st in sch.stages if st in members]
    if not members:
        raise ScheduleError("create_group: the group would be empty")
    parents = {st.group for st in members}
    if len(parents) > 1:
        raise ScheduleError("create_group: the stages belong to different groups: "
                            f"{sorted({repr(g) for g in parents if g is not None})}")
    with sch._transaction():
        g = Group(sch, members, outs, ins, include_inputs, parents.pop())
        sch.groups.append(g)
        for st in members:
            st.group = g
        sch.trace._add("create_group", None, {"outputs": [o.output(0) for o in outs],
                                              "inputs": [o.output(0) for o in ins],
                                              "include_inputs": bool(include_inputs)})
    return g
