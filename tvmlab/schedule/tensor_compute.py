"""Stages computed by a tensor intrinsic call (TVM's TensorComputeOp).

``te.compute((64, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]))`` calls the
intrinsic once per point of the outer axes.  The outer axes (and the
``reduce_axis=`` of the call) are the stage's loops and schedule as any
compute's; the remaining dimensions are the intrinsic's tile, written whole by
its statements.  Unlike ``s[C].tensorize``, nothing is matched: the intrinsic's
declared compute is not consulted, its buffers are bound to the regions named
in the call (``buffer_bind_scope``) and its statements run as given, the
reset and update around an outer reduction.  Bound inference requires each
input region over the loops' ranges.
"""
from __future__ import annotations

from ..errors import DSLError, LoweringError, ScheduleError
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import IntImm, Var
from ..ir.functor import substitute
from ..ir.tensor import IterVar, Range, TensorComputeOp
from .rewrite import canonical_tensor, copy_axis


def tensor_compute(shape, outer, call, name, tag, attrs):
    """The TensorComputeOp of ``te.compute(shape, lambda *outer: intrin(regions..., scalars...))``."""
    intrin = call.intrin
    nouter = len(outer)
    inner = [IterVar(Range(_op.const(0, s.dtype), s), Var(f"ax{k}", s.dtype), IterVar.OPAQUE)
             for k, s in enumerate(shape[nouter:])]
    where = f"compute {name!r} with intrinsic {intrin.name}"
    ana = Analyzer()
    regions = []
    for k, r in enumerate(call.regions):
        rng = tuple(Range(x[0], x[1]) if isinstance(x, tuple) else Range(x, _op.const(1, x.dtype))
                    for x in r.items)
        _check_tile(ana, intrin.buffers[k], r.tensor, [x.extent for x in rng], where)
        regions.append(rng)
    out_tile = [_op.const(1, iv.dtype) for iv in outer] + [iv.dom.extent for iv in inner]
    outs = intrin.buffers[len(intrin.inputs):]
    if len(outs) != 1 and not all(len(b.shape) == len(outs[0].shape) for b in outs):
        raise DSLError(f"{where}: the intrinsic's outputs differ in rank")
    for buf in outs:
        _check_tile(ana, buf, None, out_tile, where)
    for v in call.reduce_axis:
        if not isinstance(v, IterVar) or v.iter_type != IterVar.REDUCE:
            raise DSLError(f"{where}: reduce_axis must be axes from te.reduce_axis, got {v!r}")
    if call.reduce_axis and intrin.reduce_update is None:
        raise DSLError(f"{where}: reduce_axis given, but the intrinsic gives no reduce_update "
                       "(its intrin_func must return (body, reduce_reset, reduce_update))")
    for p, x in zip(intrin.scalar_params, call.scalar_inputs):
        if p.dtype != x.dtype:
            raise DSLError(f"{where}: scalar value {x} is {x.dtype}, parameter {p.name} is {p.dtype}")
    return TensorComputeOp(name, tag, attrs, tuple(outer) + tuple(inner), call.reduce_axis, nouter, intrin,
                           [r.tensor for r in call.regions], regions, call.scalar_inputs)


def _check_tile(ana, buf, tensor, extents, where):
    """A buffer of the intrinsic can be bound to a tile of these extents: same dtype, its
    dimensions the tile's last ones, the others of extent 1, constant sizes equal."""
    what = f"region of {tensor.name}" if tensor is not None else "output tile"
    if tensor is not None and buf.dtype != tensor.dtype:
        raise DSLError(f"{where}: buffer {buf.name} is {buf.dtype}, the {what} is {tensor.dtype}")
    skip = len(extents) - len(buf.shape)
    if skip < 0:
        raise DSLError(f"{where}: buffer {buf.name} has {len(buf.shape)} dimensions, the {what} only "
                       f"{len(extents)}")
    for d, e in enumerate(extents):
        e = ana.simplify(e)
        want = _op.const(1, e.dtype) if d < skip else buf.shape[d - skip]
        if isinstance(e, IntImm) and isinstance(want, IntImm) and e.value != want.value:
            raise DSLError(f"{where}: the {what} spans {e.value} along dimension {d}, the intrinsic's "
                           f"buffer {buf.name} {want.value}")


def is_tensor_compute(op):
    return isinstance(op, TensorComputeOp)


def region_reads(sch, st):
    """{tensor: [mins, maxs]} of the regions stage ``st`` reads, as index tuples in its root axes
    (bound inference takes the hull of the two corners)."""
    ana = Analyzer()
    out = {}
    for t, rng in zip(st.op.inputs, st.op.input_regions):
        t = canonical_tensor(sch, t)
        prod = sch.stage_map.get(t.op)
        if prod is not None and prod.attach_type == "inline":
            raise LoweringError(f"stage {st.name} passes a region of {t.name} to intrinsic "
                                f"{st.op.intrin.name}, so {prod.name} needs storage and cannot be inlined")
        lo = tuple(r.min for r in rng)
        hi = tuple(ana.simplify(_op.sub(_op.add(r.min, r.extent), 1)) for r in rng)
        out.setdefault(t, []).extend([lo, hi])
    from .bound import accesses
    for t, idx in accesses(st.op.index_exprs()).items():      # elements the scalar values read
        t = canonical_tensor(sch, t)
        prod = sch.stage_map.get(t.op)
        if prod is not None and prod.attach_type == "inline":
            raise LoweringError(f"stage {st.name} reads {t.name} in the arguments of intrinsic "
                                f"{st.op.intrin.name}; {prod.name} cannot be inlined there")
        out.setdefault(t, []).extend(idx)
    return out


def replace_input(sch, op, old, new):
    """``op`` reading ``new`` where it read ``old`` (cache_read), the same regions."""
    from ..ir.expr import ProducerLoad
    from ..ir.functor import IRMutator

    class R(IRMutator):
        def visit_ProducerLoad(self, ld):
            idx = tuple(self.visit(i) for i in ld.indices)
            return ProducerLoad(new if canonical_tensor(sch, ld.producer) is old else ld.producer, idx)
    inputs = [new if canonical_tensor(sch, t) is old else t for t in op.inputs]
    regions = [[Range(R().visit(r.min), R().visit(r.extent)) for r in rng] for rng in op.input_regions]
    return TensorComputeOp(op.name, op.tag, op.attrs, op.axis, op.reduce_axis, op.schedulable_ndim,
                           op.intrin, inputs, regions, [R().visit(x) for x in op.scalar_inputs])


def cache_write(sch, st, op, scope):
    """The cache stage's op (the same call over fresh outer axes) and the axes of the copy
    back (the tile's axes become ordinary data axes there), as TVM's cache_write does."""
    if st.relations:
        raise ScheduleError(f"cache_write of {st.name}: the stage calls intrinsic {op.intrin.name} and "
                            "has been split or fused; apply cache_write first")
    new_axis = [copy_axis(iv) for iv in op.axis]
    vmap = {iv.var: n.var for iv, n in zip(op.axis, new_axis)}
    regions = [[Range(substitute(r.min, vmap), substitute(r.extent, vmap)) for r in rng]
               for rng in op.input_regions]
    scalars = [substitute(x, vmap) for x in op.scalar_inputs]
    cache_op = TensorComputeOp(sch.fresh_name(f"{op.name}.{scope}"), op.tag, op.attrs, new_axis,
                               op.reduce_axis, op.schedulable_ndim, op.intrin, op.inputs, regions, scalars)
    copy_axes = [iv if k < op.schedulable_ndim else IterVar(iv.dom, iv.var, IterVar.DATA_PAR)
                 for k, iv in enumerate(op.axis)]
    return cache_op, copy_axes


def make_nest(b, st):
    """AST2 of the stage: its loops around the intrinsic's statements, bound to the regions."""
    from .passes import leaf_values, pass_up_index
    from .tensorize import Match, emit
    op, intrin = st.op, st.op.intrin
    leaves = st.leaf_iter_vars
    values = pass_up_index(st, b.dom_map, leaf_values(st))
    vmap = {iv.var: values[iv] for iv in st.root_iter_vars}

    def sub(e):
        return _canonical_loads(b.sch, substitute(e, vmap))
    n_in = len(op.inputs)
    ins = [(buf, canonical_tensor(b.sch, t), [Range(sub(r.min), sub(r.extent)) for r in rng])
           for buf, t, rng in zip(intrin.buffers, op.inputs, op.input_regions)]
    outer, inner = op.axis[:op.schedulable_ndim], op.axis[op.schedulable_ndim:]
    tile = [Range(values[iv], _op.const(1, iv.dtype)) for iv in outer] + [iv.dom for iv in inner]
    outs = [(buf, t, tile) for buf, t in zip(intrin.buffers[n_in:], op.outputs)]
    pmap = {p: sub(x) for p, x in zip(intrin.scalar_params, op.scalar_inputs)}
    guards = b._guards(st, values)
    last_attach = max((k for k, iv in enumerate(leaves) if iv in b.attached), default=-1)
    guards = [(c, max(d, last_attach)) for c, d in guards]
    pos = {iv.var: k for k, iv in enumerate(leaves)}
    return emit(b, st, intrin, Match(ins, outs), len(leaves), guards, pos,
                f"stage {st.name} (intrinsic {intrin.name})",
                prepare=(lambda s: substitute(s, pmap)) if pmap else None)


def _canonical_loads(sch, e):
    """``e`` reading the tensors stages really produce (after cache_write)."""
    from ..ir.expr import ProducerLoad
    from ..ir.functor import IRMutator

    class R(IRMutator):
        def visit_ProducerLoad(self, ld):
            return ProducerLoad(canonical_tensor(sch, ld.producer), tuple(self.visit(i) for i in ld.indices))
    return R().visit(e)
