"""create_group: schedule a sub-graph of stages as one unit.

``g = s.create_group(outputs=x1, inputs=x, include_inputs=True)`` gathers
the stages that compute ``outputs`` from ``inputs`` (the inputs' own stages
too with ``include_inputs``).  ``g.compute_at(s[C], axis)`` then computes the
whole group inside that loop of ``C``: every member computed at the group's
root is attached there (a member attached inside another member stays where
it is); ``g.compute_root()`` puts them back at the root.  A stage belongs to
one group, its innermost; groups nest: a new group that covers a whole
existing group takes it as a child (``g1.group is g2``), and a new group
inside an existing one is its child.  A group's root is where its parent
group is computed.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.tensor import Operation, Tensor


class Group:
    """A set of stages scheduled together (TVM's group stage)."""

    def __init__(self, schedule, members, outputs, inputs, include_inputs, parent, children=()):
        self.schedule = schedule
        self.members = members              # every stage inside, child groups' included
        self.children = list(children)      # stages and groups directly inside
        self.outputs, self.inputs, self.include_inputs = outputs, inputs, include_inputs
        self.group = parent
        self.attach_type = "root"
        self.attach_stage = None
        self.attach_ivar = None
        self.scan = None                    # the scan stage whose step this group is (its body)

    @property
    def num_child_stages(self):
        """Stages and groups directly inside (TVM's count: a child group is one)."""
        return len(self.children)

    @property
    def index(self):
        return self.schedule.groups.index(self)

    def __repr__(self):
        return f"group({', '.join(st.name for st in self.members)})"

    def _root_point(self):
        """(stage, axis) where this group's root is: its parent's attach point, or (None, None)."""
        g = self.group
        while g is not None:
            if g.attach_type == "scope":
                return g.attach_stage, g.attach_ivar
            g = g.group
        return None, None

    def _at_group_root(self):
        """Members computed where the group is (at its root, or at its current attach point)."""
        points = {self._root_point()}
        if self.attach_type == "scope":
            points.add((self.attach_stage, self.attach_ivar))

        def at(st):
            here = (None, None) if st.attach_type == "root" else (st.attach_stage, st.attach_ivar)
            return st.attach_type in ("root", "scope") and here in points
        return [st for st in self.members if at(st)]

    def compute_at(self, parent, scope):
        """Compute every member at the group's root inside loop ``scope`` of stage ``parent``."""
        from .stage import Stage
        sch = self.schedule
        self._check_movable("compute_at")
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
        self._check_movable("compute_root")
        with sch._transaction():
            stage, ivar = self._root_point()
            for st in self._at_group_root():
                st.attach_type, st.attach_stage, st.attach_ivar = ("root", None, None) if stage is None \
                    else ("scope", stage, ivar)
            self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None
            sch.trace._add("group_compute_root", None, {"group": self.index})


    def _check_movable(self, prim):
        if self.scan is not None:
            raise ScheduleError(f"{prim} of {self!r}: it is the step of scan {self.scan.name}, computed at its "
                                "time axis; group some of its stages to move them")


def scan_group(sch, scan_stage, members):
    """The group of a scan's body stages (TVM makes one for every scan): computed at the scan's
    time axis, which its members' compute_at and nested groups keep them inside."""
    op = scan_stage.op
    g = Group(sch, members, [t.op for t in op.update], [t.op for t in op.state_placeholder + op.inputs],
              False, None, members)
    g.attach_type, g.attach_stage, g.attach_ivar = "scope", scan_stage, op.scan_axis
    g.scan = scan_stage
    for st in members:
        st.group = g
    sch.groups.append(g)
    return g


def _chain(st):
    """The groups around stage ``st``, innermost first."""
    out, g = [], st.group
    while g is not None:
        out.append(g)
        g = g.group
    return out


def _nesting(members):
    """(parent group, direct children) of a new group of ``members``.

    The parent is the innermost existing group holding every member; below it, each member
    joins through its outermost group there, which must lie wholly inside the new group.
    """
    chains = [_chain(st) for st in members]
    common = set(chains[0])
    for c in chains[1:]:
        common &= set(c)
    parent = next((g for g in chains[0] if g in common), None)
    children, mset = [], set(members)
    for st, chain in zip(members, chains):
        below = chain[:chain.index(parent)] if parent is not None else chain
        child = below[-1] if below else st
        if isinstance(child, Group) and not set(child.members) <= mset:
            raise ScheduleError(f"create_group: {child!r} holds {st.name} and stages outside the new "
                                "group; a group nests only whole")
        if child not in children:
            children.append(child)
    return parent, children


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
    parent, children = _nesting(members)
    with sch._transaction():
        g = Group(sch, members, outs, ins, include_inputs, parent, children)
        sch.groups.append(g)
        for c in children:            # a stage or a child group: its parent is now g
            c.group = g
        if parent is not None:
            parent.children = [c for c in parent.children if c not in children] + [g]
        sch.trace._add("create_group", None, {"outputs": [o.output(0) for o in outs],
                                              "inputs": [o.output(0) for o in ins],
                                              "include_inputs": bool(include_inputs)})
    return g
