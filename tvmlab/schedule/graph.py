"""The dataflow graph of operations, as TVM's ``te.schedule`` graph helpers read it.

    g = tvm.te.schedule.CreateReadGraph([C.op])        # {op: [tensors it reads]}
    order = tvm.te.schedule.PostDFSOrder([C.op], g)    # producers first
    body = tvm.te.schedule.ScanGetBody(scan.op)        # the operations of one scan step
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.tensor import Operation


def _ops(roots, what):
    roots = list(roots) if isinstance(roots, (list, tuple)) else [roots]
    out = []
    for r in roots:
        op = getattr(r, "op", r)
        if not isinstance(op, Operation):
            raise ScheduleError(f"{what}: expected operations (C.op), got {r!r}")
        out.append(op)
    return out


def CreateReadGraph(roots):  # noqa: N802 - TVM's name
    """{operation: [tensors it reads]} for every operation reachable from ``roots``."""
    from .schedule import post_order
    return {op: list(op.input_tensors) for op in post_order(_ops(roots, "CreateReadGraph"))}


def PostDFSOrder(roots, g):  # noqa: N802
    """The operations of read graph ``g`` reachable from ``roots``, each after those it reads."""
    from .schedule import post_order
    return post_order(_ops(roots, "PostDFSOrder"), lambda o: g.get(o, ()))


def ScanGetBody(scan_op):  # noqa: N802
    """The scan operation and the operations between its update and its state placeholders."""
    from .extern_ops import scan_body_ops
    from ..ir.extern import ScanOp
    op = getattr(scan_op, "op", scan_op)
    if not isinstance(op, ScanOp):
        raise ScheduleError(f"ScanGetBody: expected a scan operation (te.scan(...).op), got {scan_op!r}")
    return [op] + [o for o in scan_body_ops(op) if o is not op]
