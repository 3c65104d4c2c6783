"""The two steps from a schedule to AST2, spelled as TVM's ``te.schedule``.

    bounds = tvm.te.schedule.InferBound(s)          # {IterVar: Range}
    stmt = tvm.te.schedule.ScheduleOps(s, bounds)   # AST2, the loop nest
"""
from __future__ import annotations

from ..errors import LoweringError
from .attach import check_attachments
from .bound import effective_bodies, infer_bound
from .schedule import Schedule
from .schedule_ops import schedule_ops


def _check(sch, what):
    if not isinstance(sch, Schedule):
        raise LoweringError(f"{what} expects a schedule from te.create_schedule, got "
                            f"{type(sch).__name__}")


def InferBound(sch):  # noqa: N802 - TVM's name
    """The range of every axis (root and leaf) of every computed stage: {IterVar: Range}."""
    _check(sch, "InferBound")
    return infer_bound(sch, effective_bodies(sch))


def ScheduleOps(sch, dom_map=None, debug_keep_trivial_loop=False):  # noqa: N802
    """AST2 of ``sch`` under the ranges ``dom_map`` (from InferBound).

    Every computed tensor is realized (as in TVM, the arguments are not known
    yet; ``driver.build_module.schedule_to_module`` binds them).
    ``debug_keep_trivial_loop`` is accepted for TVM's signature; tvmlab
    keeps loops of extent one as loops either way.
    """
    _check(sch, "ScheduleOps")
    if dom_map is not None and not isinstance(dom_map, dict):
        raise LoweringError(f"ScheduleOps: bounds must be the dict InferBound returns, got "
                            f"{type(dom_map).__name__}")
    check_attachments(sch)
    return schedule_ops(sch, (), dom_map)
