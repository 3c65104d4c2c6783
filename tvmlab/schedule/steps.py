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


BINDS_ATTR = "tvmlab.binds"   # PrimFunc attr of an AST2 function: {Tensor: Buffer} of its arguments


def unique_names(names):
    """``names`` made distinct by suffixes (two placeholders both named "placeholder" are legal)."""
    out, seen, taken = [], set(names), set()
    for n in names:
        m, k = n, 0
        while m in taken or (k and m in seen):
            k += 1
            m = f"{n}_{k}"
        taken.add(m)
        out.append(m)
    return out


def SchedulePostProcToPrimFunc(arg_list, body, bind_map=None):  # noqa: N802 - TVM's name
    """AST2 ``body`` (from ScheduleOps) as a PrimFunc of ``arg_list`` (tensors, Buffers, scalar vars).

    The arguments' realizations are dropped (they are the function's buffers)
    and the tensor -> buffer map is kept for ``tir.transform.StorageFlatten``;
    ``bind_map`` may give a tensor its own Buffer (``tvm.tir.decl_buffer``).
    """
    from ..ir.expr import Var
    from ..ir.function import Buffer, PrimFunc
    from ..ir.functor import IRMutator, IRVisitor, collect_vars
    from ..ir.tensor import Tensor
    bind_map = dict(bind_map or {})
    for k, a in enumerate(arg_list):
        if not isinstance(a, (Tensor, Var, Buffer)):
            raise LoweringError(f"SchedulePostProcToPrimFunc: argument {k} must be a tensor, a Buffer "
                                f"or a scalar te.var, got {type(a).__name__}")
    tensors = [a for a in arg_list if isinstance(a, Tensor)]

    def arg_of(t):
        for a in tensors:
            if t is a or (t.op.name == a.op.name and t.value_index == a.value_index):
                return a
        return None

    used = []

    class Producers(IRVisitor):
        def visit_ProducerLoad(self, e):
            used.append(e.producer)
            self.generic_visit(e)

        def visit_ProducerStore(self, s):
            used.append(s.producer)
            self.generic_visit(s)

    Producers().visit(body)

    class Strip(IRMutator):
        def visit_ProducerRealize(self, r):
            inner = self.visit(r.body)
            if arg_of(r.producer) is not None:
                return inner
            return r if inner is r.body else r.replace(body=inner)

    body = Strip().visit(body)
    params, buffer_map, binds, shape_vars = [], {}, {}, []
    explicit = [a for a in arg_list if isinstance(a, Var)]
    for a, name in zip(arg_list, unique_names([a.name for a in arg_list])):
        if isinstance(a, Buffer):            # a buffer the body uses directly (tir.Prefetch)
            params.append(a.data)
            buffer_map[a.data] = a
            shape_vars += [v for d in a.shape for v in collect_vars(d)
                           if v not in explicit and v not in shape_vars]
            continue
        if not isinstance(a, Tensor):
            params.append(a)
            continue
        buf = bind_map.get(a) or Buffer(name, a.shape, a.dtype)
        params.append(buf.data)
        buffer_map[buf.data] = buf
        binds[a] = buf
        for p in used:
            if arg_of(p) is a:
                binds[p] = buf
        for d in a.shape:
            for v in collect_vars(d):
                if v not in explicit and v not in shape_vars:
                    shape_vars.append(v)
    return PrimFunc("main", params + shape_vars, buffer_map, body,
                    {"global_symbol": "main", BINDS_ATTR: binds})


def _is_elemwise(op):
    from ..ir.expr import ProducerLoad
    from ..ir.functor import post_order_visit
    ok = [True]
    axis_vars = [iv.var for iv in op.axis]

    def check(n):
        if isinstance(n, ProducerLoad):
            if len(n.indices) != len(axis_vars) or any(i is not v for i, v in zip(n.indices, axis_vars)):
                ok[0] = False
    for b in op.body:
        post_order_visit(b, check)
    return ok[0]


def _is_broadcast(op):
    """Every read indexes with some of the op's axes in their order, or with constants."""
    from ..ir.expr import IntImm, ProducerLoad
    from ..ir.functor import post_order_visit
    ok = [True]
    pos = {iv.var: k for k, iv in enumerate(op.axis)}

    def check(n):
        if isinstance(n, ProducerLoad):
            seen = [pos[i] for i in n.indices if not isinstance(i, IntImm) and i in pos]
            if (len(seen) + sum(isinstance(i, IntImm) for i in n.indices) != len(n.indices)
                    or seen != sorted(set(seen))):
                ok[0] = False
    for b in op.body:
        post_order_visit(b, check)
    return ok[0]


def _auto_inline(sch, pred):
    from ..ir.tensor import ComputeOp
    for st in sch.stages:
        if (isinstance(st.op, ComputeOp) and not st.is_output and not st.op.is_reduction
                and st.attach_type == "root" and not st.relations and not st.iter_var_attrs
                and not any(q.attach_stage is st for q in sch.stages) and pred(st.op)):
            st.compute_inline()
    return sch


def AutoInlineElemWise(sch):  # noqa: N802
    """Inline every intermediate stage that reads its inputs at its own index (TVM's helper)."""
    _check(sch, "AutoInlineElemWise")
    return _auto_inline(sch, _is_elemwise)


def AutoInlineBroadcast(sch):  # noqa: N802
    """Inline every intermediate stage that is elementwise or broadcasts its inputs (TVM's helper)."""
    _check(sch, "AutoInlineBroadcast")
    return _auto_inline(sch, _is_broadcast)


def AutoInlineInjective(sch):  # noqa: N802
    """Inline every intermediate stage without a reduction (TVM's helper)."""
    _check(sch, "AutoInlineInjective")
    return _auto_inline(sch, lambda op: True)
