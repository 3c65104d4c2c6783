"""rfactor: turn one reduction axis into a data-parallel axis of a new stage.

``C[i] = sum(A[i, k])`` with ``ko, ki = split(k)`` and ``rfactor(C, ki)`` gives
``C.rf[ki, i] = sum(A[i, ko*f + ki], ko)`` and ``C[i] = sum(C.rf[kf, i], kf)``,
so partial sums can run in parallel (or across GPU threads).
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir import op as _op
from ..ir.expr import IntImm, ProducerLoad, Reduce, Var
from ..ir.functor import substitute
from ..ir.tensor import ComputeOp, IterVar, Range, Tensor
from .passes import pass_down_domain, pass_up_index
from .stage import Stage


def rfactor(sch, tensor, axis, factor_axis=0):
    if not isinstance(tensor, Tensor):
        raise ScheduleError(f"rfactor: expected a tensor, got {tensor!r}")
    st = sch[tensor]
    op = st.op
    if not isinstance(op, ComputeOp) or not op.is_reduction:
        raise ScheduleError(f"rfactor of {st.name}: the stage is not a reduction")
    ax = st.axis(axis, "rfactor axis")
    if ax.iter_type != IterVar.REDUCE:
        raise ScheduleError(f"rfactor of {st.name}: axis {ax.var.name} is data-parallel; pass a "
                            "reduction axis (or a part of one after split)")
    if any(s.attach_stage is st for s in sch.stages):
        raise ScheduleError(f"rfactor of {st.name}: other stages are computed at its axes")
    nd = len(op.axis)
    if not isinstance(factor_axis, int) or not 0 <= factor_axis <= nd:
        raise ScheduleError(f"rfactor of {st.name}: factor_axis must be in [0, {nd}], got "
                            f"{factor_axis!r}")
    red_roots = list(op.reduce_axis)
    dom = {iv: iv.dom for iv in red_roots}
    for iv in op.axis:
        dom[iv] = iv.dom
    pass_down_domain(st, dom, lambda e: e, tighten=False)
    from ..ir.functor import collect_vars
    roots = pass_up_index(st, dom, {iv: iv.var for iv in st.leaf_iter_vars})
    if any(ax.var in collect_vars(roots[iv]) for iv in op.axis):
        raise ScheduleError(f"rfactor of {st.name}: axis {ax.var.name} is fused with a "
                            "data-parallel axis; rfactor a reduction axis of its own")
    red_leaves = [iv for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]
    # CF's axes: copies of the data axes with the factored axis inserted at factor_axis.
    data = [IterVar(iv.dom, Var(iv.var.name, iv.var.dtype)) for iv in op.axis]
    fax = IterVar(Range(_op.const(0), dom[ax].extent), Var(ax.var.name, ax.var.dtype))
    cf_axis = data[:factor_axis] + [fax] + data[factor_axis:]
    # The other reduction leaves keep their variables (as in TVM), so the
    # axes the user holds (k.inner after a split) still name them.
    new_red = {iv: iv if any(iv is r for r in red_roots) else
               IterVar(Range(_op.const(0), dom[iv].extent), iv.var, IterVar.REDUCE)
               for iv in red_leaves if iv is not ax}
    leaf_vals = {iv: iv.var for iv in st.leaf_iter_vars}
    leaf_vals[ax] = fax.var
    for iv, n in new_red.items():
        leaf_vals[iv] = n.var
    vals = pass_up_index(st, dom, leaf_vals)
    vmap = {iv.var: d.var for iv, d in zip(op.axis, data)}
    for r in red_roots:
        vmap[r.var] = vals[r]
    r0 = op.body[0]
    # The range guards come first: the ``where`` condition may read memory
    # that is only in bounds once they hold (ScheduleOps nests the parts).
    cond = None
    for parent in _uneven_reduce_splits(st, dom):
        # ``likely``, as ScheduleOps' own guards: loop partitioning drops it from the main loop
        g = _op.likely(_op.lt(vals[parent], _op.add(dom[parent].min, dom[parent].extent)))
        cond = g if cond is None else _op.logical_and(cond, g)
    where = substitute(r0.condition, vmap)
    cond = where if cond is None else _op.logical_and(cond, where)
    # As in TVM: reduction axes rfactor leaves untouched (never split) come
    # first and are the same IterVars; then the other leaves, keeping their variables.
    kept = [iv for iv in red_leaves if iv is not ax and any(iv is r for r in red_roots)]
    axes = tuple(kept) + tuple(new_red[iv] for iv in red_leaves
                               if iv is not ax and not any(iv is k for k in kept))
    srcs = tuple(substitute(s, vmap) for s in r0.source)
    if not axes:
        raise ScheduleError(f"rfactor of {st.name}: {ax.var.name} is the only reduction axis; "
                            "split it first (e.g. ko, ki = s[C].split(k, factor=16)) and rfactor "
                            "one part")
    # the partial reductions start from the identity; a custom init seeds the final one only
    cf_body = [Reduce(r0.combiner, srcs, axes, cond, k, ()) for k in range(len(srcs))]
    cf_op = ComputeOp(sch.fresh_name(f"{op.name}.rf"), op.tag, op.attrs, cf_axis, cf_body)
    kf = IterVar(Range(_op.const(0), dom[ax].extent), Var(ax.var.name + ".v", ax.var.dtype),
                 IterVar.REDUCE)
    idx = [iv.var for iv in op.axis]
    idx = idx[:factor_axis] + [kf.var] + idx[factor_axis:]
    new_src = tuple(ProducerLoad(t, tuple(idx)) for t in cf_op.outputs)
    new_body = [Reduce(r0.combiner, new_src, (kf,), _op.const(True), k, r0.init) for k in range(len(srcs))]
    new_op = ComputeOp(op.name, op.tag, op.attrs, op.axis, new_body)
    sch._replace_op(st, new_op)
    st.all_iter_vars = list(op.axis) + [kf]
    st.leaf_iter_vars = list(op.axis) + [kf]
    st.relations = []
    st.iter_var_attrs = {}
    cf_stage = Stage(cf_op, sch)
    sch.stages.insert(sch.stages.index(st), cf_stage)
    sch.stage_map[cf_op] = cf_stage
    outs = list(cf_op.outputs)
    return outs[0] if len(outs) == 1 else outs


def _uneven_reduce_splits(st, dom):
    """Reduction axes split by a factor that may not divide them: each needs a guard.

    Every such split is checked, not only those of the roots: after
    ``split(k, 10)`` and ``split(k.inner.inner, 4)`` both ``k < 8`` and
    ``k.inner.inner < 2`` must hold.
    """
    from .relations import Split
    out = []
    for rel in st.relations:
        if isinstance(rel, Split) and rel.parent.iter_type == IterVar.REDUCE:
            ext = dom[rel.parent].extent
            f = rel.factor if rel.factor is not None else rel.nparts
            if not (isinstance(ext, IntImm) and isinstance(f, IntImm) and ext.value % f.value == 0):
                out.append(rel.parent)
    return out
