"""Schedule: the stages of a computation graph, their order, and transactions.

``create_schedule(C.op)`` makes one Stage per operation reachable from the
outputs, producers before consumers.  Every primitive runs inside
``_transaction()``: on error all stages and the trace are restored.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..errors import ScheduleError
from ..ir.tensor import ComputeOp, IterVar, Operation, Tensor, TensorComputeOp
from .stage import Stage
from .trace import Trace


def _as_ops(ops):
    if isinstance(ops, (Operation, Tensor)):
        ops = [ops]
    out = []
    for o in ops:
        if isinstance(o, Tensor):
            o = o.op
        if not isinstance(o, Operation):
            raise ScheduleError(f"create_schedule expects operations or tensors (C.op), got {o!r}")
        if o not in out:
            out.append(o)
    return out


def post_order(ops, reads=None):
    """All operations reachable from ``ops``, producers first (``reads(op)``: the tensors an
    operation reads; its ``input_tensors`` by default)."""
    reads = reads or (lambda o: o.input_tensors)
    order, seen = [], set()

    def visit(op):
        stack = [(op, False)]
        while stack:
            o, done = stack.pop()
            if done:
                if id(o) not in seen:
                    seen.add(id(o))
                    order.append(o)
                continue
            if id(o) in seen:
                continue
            stack.append((o, True))
            for t in reversed(reads(o)):
                if id(t.op) not in seen:
                    stack.append((t.op, False))
    for op in ops:
        visit(op)
    return order


class Schedule:
    """Stages for every operation, plus the trace of primitives applied."""

    def __init__(self, ops):
        self.outputs = _as_ops(ops)
        self.stages = []
        self.stage_map = {}
        for op in post_order(self.outputs):
            st = Stage(op, self)
            st.is_output = op in self.outputs
            self.stages.append(st)
            self.stage_map[op] = st
        self.groups = []        # create_group's Groups (and each scan's, made here)
        from .extern_ops import attach_scan_bodies
        attach_scan_bodies(self)
        self.trace = Trace(self)
        self._depth = 0

    # ------------------------------------------------------------ lookup
    def __getitem__(self, key):
        if isinstance(key, Tensor):
            key = key.op
        if isinstance(key, str):
            return self.stage_by_name(key)
        if not isinstance(key, Operation):
            raise ScheduleError(f"s[...] expects a tensor or an operation, got {key!r}")
        st = self.stage_map.get(key)
        if st is None:
            raise ScheduleError(f"operation {key.name!r} is not part of this schedule; stages are "
                                f"{[s.name for s in self.stages]}")
        return st

    def __contains__(self, key):
        if isinstance(key, Tensor):
            key = key.op
        return key in self.stage_map

    def stage_key(self, stage):
        """A name unique within the schedule: the op name, with ``#k`` for repeats."""
        same = [s for s in self.stages if s.name == stage.name]
        return stage.name if len(same) <= 1 else f"{stage.name}#{same.index(stage)}"

    def stage_by_name(self, name):
        for st in self.stages:
            if self.stage_key(st) == name:
                return st
        raise ScheduleError(f"no stage named {name!r}; stages are "
                            f"{[self.stage_key(s) for s in self.stages]}")

    def tensor_by_name(self, name):
        for st in self.stages:
            for op in (st.op, st.origin_op):
                for t in op.outputs:
                    if t.name == name:
                        return t
        raise ScheduleError(f"no tensor named {name!r} in this schedule")

    def fresh_name(self, base):
        """``base``, or ``base.1``, ``base.2``... if a stage already has that name.

        A second cache of one tensor in one scope gets its own name, so the
        trace, the printed IR and ``as_python`` never confuse the two.
        """
        names = {st.name for st in self.stages}
        name, k = base, 0
        while name in names:
            k += 1
            name = f"{base}.{k}"
        return name

    def _owner_of(self, iv):
        for st in self.stages:
            if iv in st.all_iter_vars:
                return st
        return None

    def _consumers(self, stage):
        """Stages that read ``stage``'s outputs directly."""
        outs = {t for op, st in self.stage_map.items() if st is stage for t in op.outputs}
        return [s for s in self.stages
                if not s.is_placeholder and any(t in outs for t in s.op.input_tensors)]

    def _reads_through_inline(self, consumer, producer):
        """True if ``consumer`` reads ``producer``, directly or through inlined stages."""
        for st in self._consumers(producer):
            if st is consumer:
                return True
            if st.attach_type == "inline" and self._reads_through_inline(consumer, st):
                return True
        return False

    def _reads_transitively(self, consumer, producer, seen=None):
        """True if ``consumer`` reads ``producer`` through any chain of stages."""
        seen = set() if seen is None else seen
        for st in self._consumers(producer):
            if st is consumer:
                return True
            if id(st) not in seen:
                seen.add(id(st))
                if self._reads_transitively(consumer, st, seen):
                    return True
        return False

    def _replace_op(self, stage, new_op):
        """Point ``stage`` at ``new_op`` (keeping the old op's key) — used by cache_write/rfactor."""
        stage.op = new_op
        self.stage_map[new_op] = stage

    # ------------------------------------------------------------ transactions
    @contextmanager
    def _transaction(self):
        self._depth += 1
        if self._depth == 1:
            snap = (list(self.stages), dict(self.stage_map), list(self.outputs),
                    {st: st._snapshot() for st in self.stages}, self.trace._mark(), list(self.groups),
                    {g: (g.attach_type, g.attach_stage, g.attach_ivar) for g in self.groups})
        try:
            yield
        except BaseException:
            if self._depth == 1:
                self.stages[:], self.outputs[:] = snap[0], snap[2]
                self.stage_map.clear()
                self.stage_map.update(snap[1])
                for st, s in snap[3].items():
                    st._restore(s)
                self.trace._reset(snap[4])
                self.groups[:] = snap[5]
                for g, (a, b, c) in snap[6].items():
                    g.attach_type, g.attach_stage, g.attach_ivar = a, b, c
            raise
        finally:
            self._depth -= 1

    # ------------------------------------------------------------ schedule-level primitives
    def cache_read(self, tensor, scope, readers):
        """A copy of ``tensor`` in ``scope`` that ``readers`` read instead."""
        from .cache import cache_read
        from .trace import _encode
        with self._transaction():
            # readers are named before the copy exists: it may take one of their names
            names = [_encode(r, self) for r in _as_list(readers)]
            out = cache_read(self, tensor, scope, readers)
            self.trace._add("cache_read", None, {"tensor": tensor, "scope": scope,
                                                  "readers": names})
            return out

    def cache_write(self, tensor, scope):
        """Compute ``tensor`` into a cache in ``scope``; the original stage copies it out."""
        from .cache import cache_write
        with self._transaction():
            out = cache_write(self, tensor, scope)
            self.trace._add("cache_write", None, {"tensor": tensor, "scope": scope})
            return out

    def rfactor(self, tensor, axis, factor_axis=0):
        """Factor reduction axis ``axis`` of ``tensor`` out into a new data-parallel stage."""
        from .rfactor import rfactor
        with self._transaction():
            out = rfactor(self, tensor, axis, factor_axis)
            self.trace._add("rfactor", None, {"tensor": tensor, "axis": axis,
                                               "factor_axis": factor_axis})
            return out

    def create_group(self, outputs, inputs, include_inputs=False):
        """Group the stages computing ``outputs`` from ``inputs``, to schedule them as one unit."""
        from .group import create_group
        return create_group(self, outputs, inputs, include_inputs)

    def normalize(self):
        """Rebase every leaf axis with a non-zero start so that all loops start at 0."""
        from .relations import Rebase
        with self._transaction():
            for st in self.stages:
                if not isinstance(st.op, (ComputeOp, TensorComputeOp)):
                    continue        # a scan's time axis keeps its start (TVM's bounds report min 1)
                for k, iv in enumerate(list(st.leaf_iter_vars)):
                    if iv.dom is None:
                        continue
                    from ..ir.expr import IntImm
                    if isinstance(iv.dom.min, IntImm) and iv.dom.min.value == 0:
                        continue
                    reb = IterVar(None, type(iv.var)(st._unique_name(iv.var.name + ".rb")),
                                  iv.iter_type)
                    st.relations.append(Rebase(iv, reb))
                    st.all_iter_vars.append(reb)
                    st.leaf_iter_vars[k] = reb
                    if iv in st.iter_var_attrs:
                        st.iter_var_attrs[reb] = st.iter_var_attrs.pop(iv)
            self.trace._add("normalize", None, {})
            return self

    def __repr__(self):
        return f"Schedule(stages=[{', '.join(self.stage_key(s) for s in self.stages)}])"

    def __reduce__(self):
        """Pickled as its JSON (output operations and trace), as TVM pickles through save_json."""
        from ..ir.serialize import save_json
        from .json_io import restore
        return (restore, (save_json(self),))

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)


def _as_list(x):
    return x if isinstance(x, (list, tuple)) else [x]


def create_schedule(ops):
    """The default schedule of ``ops`` (an operation or a list): one plain loop nest per stage."""
    return Schedule(ops)
