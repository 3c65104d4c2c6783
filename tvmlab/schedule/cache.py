"""cache_read and cache_write: stage a tensor through a buffer in another storage scope."""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.functor import substitute
from ..ir.tensor import ComputeOp, IterVar, Operation, Range, Tensor
from .rewrite import canonical_tensor, copy_axis, rebase_reduce, reads, replace_tensor
from .stage import Stage

SCOPES = ("global", "shared", "local", "warp")


def _check_scope(prim, scope):
    from .scope import check_scope
    check_scope(prim, scope)


def cache_read(sch, tensor, scope, readers):
    _check_scope("cache_read", scope)
    if not isinstance(tensor, Tensor) or tensor.op not in sch.stage_map:
        raise ScheduleError(f"cache_read: {tensor!r} is not a tensor of this schedule")
    readers = readers if isinstance(readers, (list, tuple)) else [readers]
    if not readers:
        raise ScheduleError(f"cache_read of {tensor.name}: give at least one reader")
    src = canonical_tensor(sch, tensor)
    prod = sch.stage_map[src.op]
    if prod.attach_type == "scope":
        raise ScheduleError(
            f"cache_read of {tensor.name}: stage {prod.name} is computed at "
            f"{prod.attach_stage.name}.{prod.attach_ivar.var.name}, so a copy made at the root "
            f"would read it before it is computed; call cache_read before compute_at")
    reader_stages = []
    for r in readers:
        if isinstance(r, Stage):
            st = r
        elif isinstance(r, (Tensor, Operation)):
            if r not in sch:
                raise ScheduleError(f"cache_read of {tensor.name}: reader {r.name} is not in this "
                                    "schedule")
            st = sch[r]
        else:
            raise ScheduleError(f"cache_read of {tensor.name}: readers must be tensors or "
                                f"operations, got {r!r}")
        if st.is_placeholder or not reads(sch, st.op, src):
            raise ScheduleError(f"cache_read of {tensor.name}: stage {st.name} does not read "
                                f"{tensor.name}")
        if st not in reader_stages:
            reader_stages.append(st)
    name = sch.fresh_name(f"{tensor.name}.{scope}")
    from .. import te
    cache = te.compute(src.shape, lambda *i: src(*i), name=name)
    for st in reader_stages:
        sch._replace_op(st, replace_tensor(sch, st.op, src, cache))
    new_stage = Stage(cache.op, sch)
    new_stage.scope = scope
    sch.stages.insert(sch.stages.index(prod) + 1, new_stage)
    sch.stage_map[cache.op] = new_stage
    return cache


def cache_write(sch, tensor, scope):
    _check_scope("cache_write", scope)
    tensors = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise ScheduleError(f"cache_write: expected a tensor or a list of tensors, got {tensor!r}")
    st = sch[tensors[0]]
    if any(sch[t] is not st for t in tensors):
        raise ScheduleError("cache_write: the tensors must be outputs of one operation")
    op = st.op
    from .tensor_compute import is_tensor_compute
    if not isinstance(op, ComputeOp) and not is_tensor_compute(op):
        raise ScheduleError(f"cache_write of {st.name}: only computed tensors can be cached")
    if len(tensors) != op.num_outputs:
        raise ScheduleError(f"cache_write of {st.name}: pass all {op.num_outputs} outputs of "
                            "the operation together")
    if st.iter_var_attrs or st.attach_type == "inline":
        raise ScheduleError(f"cache_write of {st.name}: apply cache_write before marking its axes "
                            f"(vectorize, bind, ...) or inlining it")
    if any(s.attach_stage is st for s in sch.stages):
        raise ScheduleError(f"cache_write of {st.name}: other stages are computed at its axes")
    if is_tensor_compute(op):
        from .tensor_compute import cache_write as tensor_compute_cache
        cache_op, axis = tensor_compute_cache(sch, st, op, scope)
        return _install_cache(sch, st, op, cache_op, tuple(iv.var for iv in op.axis), scope, tensor, axis)
    if st.relations:
        return _cache_write_relayout(sch, st, op, scope, tensor)
    # New data axes; the reduction axes stay the same IterVars (as in TVM), so
    # ``s[CC].reorder(k, ...)`` with the ``k`` of te.reduce_axis works.
    axis_map = {iv: copy_axis(iv) for iv in op.axis}
    vmap = {iv.var: c.var for iv, c in axis_map.items()}
    for r in op.reduce_axis:          # a reduction whose range depends on a data axis reads the new one
        dom = Range(substitute(r.dom.min, vmap), substitute(r.dom.extent, vmap))
        if dom.min is not r.dom.min or dom.extent is not r.dom.extent:
            axis_map[r] = IterVar(dom, r.var, r.iter_type, r.thread_tag)
    body = [rebase_reduce(b, vmap, axis_map) for b in op.body]
    cache_op = ComputeOp(sch.fresh_name(f"{op.name}.{scope}"), op.tag, op.attrs,
                         [axis_map[iv] for iv in op.axis], body)
    return _install_cache(sch, st, op, cache_op, tuple(iv.var for iv in op.axis), scope, tensor)


def _install_cache(sch, st, op, cache_op, idx, scope, tensor, axis=None):
    """Make ``st`` a plain copy of ``cache_op`` read at ``idx`` (over ``axis``, by default the
    op's) and put the cache's stage before it."""
    from ..ir.expr import ProducerLoad
    axis = list(op.axis if axis is None else axis)
    copy_op = ComputeOp(op.name, op.tag, op.attrs, axis,
                        [ProducerLoad(t, idx) for t in cache_op.outputs])
    sch._replace_op(st, copy_op)
    st.relations = []
    st.all_iter_vars = list(axis)
    st.leaf_iter_vars = list(axis)
    new_stage = Stage(cache_op, sch)
    new_stage.scope = scope
    sch.stages.insert(sch.stages.index(st), new_stage)
    sch.stage_map[cache_op] = new_stage
    outs = list(cache_op.outputs)
    return outs if isinstance(tensor, (list, tuple)) else outs[0]


def _cache_write_relayout(sch, st, op, scope, tensor):
    """cache_write after split/fuse/reorder, as TVM does it: the cache takes the stage's leaf layout.

    The cache tensor has one dimension per data-parallel leaf axis (``C.local[i.outer, i.inner,
    j]``), computed where the leaf indices are in range; the stage itself becomes a plain copy
    of it (its relations are cleared, so the axes the split returned no longer apply).
    """
    from ..ir import op as _op
    from ..ir.arith import Analyzer
    from ..ir.expr import Reduce, Var
    from ..ir.functor import collect_vars
    from ..ir.tensor import IterVar, Range
    from .passes import pass_down_domain, pass_up_index
    from .relations import Fuse, Rebase, Singleton, Split
    ana = Analyzer()
    dom = {iv: iv.dom for iv in list(op.axis) + list(op.reduce_axis)}
    pass_down_domain(st, dom, ana.simplify, tighten=False)
    data_leaves = [iv for iv in st.leaf_iter_vars if iv.iter_type != IterVar.REDUCE]
    new_axis = [IterVar(Range(_op.const(0, dom[lv].extent.dtype), dom[lv].extent),
                        Var(lv.var.name + ".c", lv.var.dtype), IterVar.DATA_PAR) for lv in data_leaves]
    leaf_vals = {iv: iv.var for iv in st.leaf_iter_vars}
    leaf_vals.update((lv, n.var) for lv, n in zip(data_leaves, new_axis))
    vals = pass_up_index(st, dom, leaf_vals)
    new_vars = {n.var for n in new_axis}
    for r in op.reduce_axis:
        if new_vars & set(collect_vars(vals[r])):
            raise ScheduleError(f"cache_write of {st.name}: a reduction axis is fused with a "
                                "data-parallel axis; cache_write before that fuse")
    # in-range conditions of the data axes (a split that does not divide pads the cache)
    conds = []
    for rel in st.relations:
        if isinstance(rel, Split) and rel.parent.iter_type != IterVar.REDUCE:
            d = dom[rel.parent]
            c = ana.simplify(_op.lt(vals[rel.parent], _op.add(d.min, d.extent)))
            if not ana.can_prove(c):
                conds.append(c)
    pred = _op.all(*conds) if conds else None
    sub = {iv.var: vals[iv] for iv in op.axis}
    body = []
    for b in op.body:
        b = rebase_reduce(b, sub, {})
        if pred is not None:
            if isinstance(b, Reduce):
                b = b.replace(condition=_op.logical_and(pred, b.condition))
            else:
                b = _op.if_then_else(pred, b, _op.const(0, b.dtype))
        body.append(b)
    cache_op = ComputeOp(sch.fresh_name(f"{op.name}.{scope}"), op.tag, op.attrs, new_axis, body)
    # the copy reads the cache at each leaf's index, from the root indices down the relations
    v = {iv: iv.var for iv in op.axis}
    for rel in st.relations:
        if isinstance(rel, Split) and rel.parent in v:
            x = _op.sub(v[rel.parent], dom[rel.parent].min)
            f = dom[rel.inner].extent
            v[rel.outer], v[rel.inner] = _op.floordiv(x, f), _op.floormod(x, f)
        elif isinstance(rel, Fuse) and rel.outer in v and rel.inner in v:
            v[rel.fused] = _op.add(_op.mul(_op.sub(v[rel.outer], dom[rel.outer].min),
                                           dom[rel.inner].extent),
                                   _op.sub(v[rel.inner], dom[rel.inner].min))
        elif isinstance(rel, Rebase) and rel.parent in v:
            v[rel.rebased] = _op.sub(v[rel.parent], dom[rel.parent].min)
        elif isinstance(rel, Singleton):
            v[rel.iter] = _op.const(0)
    idx = tuple(ana.simplify(v[lv]) for lv in data_leaves)
    return _install_cache(sch, st, op, cache_op, idx, scope, tensor)
