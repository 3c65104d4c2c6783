"""The dataflow graph of operations, as TVM's ``te.schedule`` graph helpers read it.

    g = tvm.te.schedule.CreateReadGraph([C.op])        # {op: [tensors it reads]}
    order = tvm.te.schedule.PostDFSOrder([C.op], g)    # producers first
    body = tvm.te.schedule.ScanGetBody(scan.op)        # the operations of one scan step
    fixed = tvm.te.schedule.ScanFixPointAnalysis(scan.op)   # {spatial axis: 1 if step-local}
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


def ScanFixPointAnalysis(scan_op):  # noqa: N802
    """``{spatial axis: IntImm 1 or 0}`` of a scan: 1 where element ``i`` of the state along that axis
    at step t reads only element ``i`` of the states at earlier steps (every access on the way
    indexes that dimension with the reading operation's own axis variable), so the axis can be
    split or bound to threads without synchronising steps across it; 0 otherwise.

    Each dimension of a body tensor "reaches" the state axis whose element it carries; a dimension
    reached by two axes, or a state dimension read at a computed index, fails its axis.
    """
    from ..ir.expr import IntImm, ProducerLoad
    from ..ir.extern import ScanOp
    from ..ir.functor import post_order_visit
    from ..ir.tensor import ComputeOp
    from .extern_ops import scan_body_ops
    op = getattr(scan_op, "op", scan_op)
    if not isinstance(op, ScanOp):
        raise ScheduleError(f"ScanFixPointAnalysis: expected a scan operation (te.scan(...).op), got {scan_op!r}")

    def key(t, d):
        return (t.op, t.value_index, d)
    axes = [(k, d) for k, u in enumerate(op.update) for d in range(1, len(u.shape))]
    reach = {key(op.state_placeholder[k], d): ax for (k, d), ax in zip(axes, op.spatial_axis_)}
    failed = set()

    def merge(dst, src):
        if src not in reach:
            return
        if dst not in reach:
            reach[dst] = reach[src]
        elif reach[dst] is not reach[src]:
            failed.update((id(reach[dst]), id(reach[src])))

    from .schedule import post_order
    body = set(scan_body_ops(op))
    for body_op in [o for o in post_order([t.op for t in op.update]) if o in body]:     # producers first
        if isinstance(body_op, ScanOp):                     # a nested scan carries its states' dimensions
            for k, t in enumerate(body_op.outputs):
                for d in range(1, len(t.shape)):
                    merge(key(t, d), key(body_op.update[k], d))
                    merge(key(t, d), key(body_op.init[k], d))
            continue
        if not isinstance(body_op, ComputeOp):
            continue                                        # an extern step carries no axis exactly
        own = {id(iv.var): d for d, iv in enumerate(body_op.axis)}

        def visit(n, body_op=body_op, own=own):
            if not isinstance(n, ProducerLoad):
                return
            for d, index in enumerate(n.indices):
                src = key(n.producer, d)
                if id(index) in own:
                    for t in body_op.outputs:
                        merge(key(t, own[id(index)]), src)
                elif src in reach:
                    failed.add(id(reach[src]))
        for b in body_op.body:
            post_order_visit(b, visit)
    out = {}
    for (k, d), ax in zip(axes, op.spatial_axis_):
        got = reach.get(key(op.update[k], d))
        out[ax] = IntImm("int32", int(got is ax and id(ax) not in failed))
    return out
