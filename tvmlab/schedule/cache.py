"""cache_read and cache_write: stage a tensor through a buffer in another storage scope."""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir.tensor import ComputeOp, Operation, Tensor
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
        if not isinstance(st.op, ComputeOp) or not reads(sch, st.op, src):
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
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write of {st.name}: only computed tensors can be cached")
    if len(tensors) != op.num_outputs:
        raise ScheduleError(f"cache_write of {st.name}: pass all {op.num_outputs} outputs of "
                            "the operation together")
    if st.relations or st.iter_var_attrs or st.attach_type == "inline":
        raise ScheduleError(f"cache_write of {st.name}: apply cache_write before other "
                            f"primitives on stage {st.name}")
    if any(s.attach_stage is st for s in sch.stages):
        raise ScheduleError(f"cache_write of {st.name}: other stages are computed at its axes")
    # New data axes; the reduction axes stay the same IterVars (as in TVM), so
    # ``s[CC].reorder(k, ...)`` with the ``k`` of te.reduce_axis works.
    axis_map = {iv: copy_axis(iv) for iv in op.axis}
    vmap = {iv.var: c.var for iv, c in axis_map.items()}
    body = [rebase_reduce(b, vmap, axis_map) for b in op.body]
    cache_op = ComputeOp(sch.fresh_name(f"{op.name}.{scope}"), op.tag, op.attrs,
                         [axis_map[iv] for iv in op.axis], body)
    from ..ir.expr import ProducerLoad
    idx = tuple(iv.var for iv in op.axis)
    copy_op = ComputeOp(op.name, op.tag, op.attrs, op.axis,
                        [ProducerLoad(t, idx) for t in cache_op.outputs])
    sch._replace_op(st, copy_op)
    st.all_iter_vars = list(op.axis)
    st.leaf_iter_vars = list(op.axis)
    new_stage = Stage(cache_op, sch)
    new_stage.scope = scope
    sch.stages.insert(sch.stages.index(st), new_stage)
    sch.stage_map[cache_op] = new_stage
    outs = list(cache_op.outputs)
    return outs if isinstance(tensor, (list, tuple)) else outs[0]
