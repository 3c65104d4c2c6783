"""Extern and scan stages in bound inference and ScheduleOps.

An extern stage (``te.extern``) reads and writes whole tensors: its inputs are
required in full and its body runs once, inside ``buffer_bind_scope``
attributes that storage flattening resolves onto the tensors' memory.

A scan stage (``te.scan``) owns a time loop over ``scan_axis``.  The stages
that read a state placeholder (its body: the update and what leads to it)
are computed at that axis by default, each step seeing the state's previous
steps; ScheduleOps emits

    <init stages>                       (writing state[0:k])
    for t in [k, T):  <body stages at t>  (the update writing state[t])

The init and update tensors have no storage of their own and the state
placeholder's reads see the previous steps: all three are the scan's output
(``scan_state_alias`` attributes, resolved by storage flattening).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import IntervalSet
from ..ir.expr import Call, IntImm
from ..ir.extern import ExternOp, ScanOp
from ..ir.stmt import AttrStmt, For, seq
from ..ir.tensor import Range
from .rewrite import canonical_tensor

SCAN_STATE_ALIAS = "scan_state_alias"
BUFFER_BIND = "buffer_bind_scope"


def is_special(op):
    """Extern, scan and hybrid stages: whole-tensor outputs, inputs read whole."""
    from ..ir.hybrid import HybridOp
    return isinstance(op, (ExternOp, ScanOp, HybridOp))


# ------------------------------------------------------------ schedule creation
def scan_body_ops(scan):
    """Operations between ``scan``'s update tensors and its state placeholders (the recurrence)."""
    states = set(scan.state_placeholder)
    reads_state = {}

    def visit(op):
        if op in reads_state:
            return reads_state[op]
        reads_state[op] = False      # a cycle cannot occur in AST1; guards deep recursion on revisits
        found = False
        for t in op.input_tensors:
            if t in states or visit(t.op):
                found = True
        reads_state[op] = found
        return found
    body = []
    for u in scan.update:
        visit(u.op)
    for op, hit in reads_state.items():
        if hit:
            body.append(op)
    for u in scan.update:            # the update is part of the step even when it ignores the state
        if u.op not in body:
            body.append(u.op)
    return body


def attach_scan_bodies(sch):
    """Compute each scan's init and body stages at its time axis (their default place, as in TVM);
    the init stages run before the time loop.  The body stages form the scan's group."""
    from .group import scan_group
    for st in sch.stages:
        if isinstance(st.op, ScanOp):
            body_ops = scan_body_ops(st.op)
            for op in [t.op for t in st.op.init] + body_ops:
                body = sch.stage_map.get(op)
                if body is not None and body.attach_type == "root" and not body.is_output:
                    body.attach_type, body.attach_stage, body.attach_ivar = "scope", st, st.op.scan_axis
            members = [b for b in sch.stages if b.op in body_ops and b.attach_stage is st and b.group is None]
            if members:
                scan_group(sch, st, members)


# ------------------------------------------------------------ bound inference
def stage_reads(sch, st):
    """{tensor: []} for the tensors an extern or scan stage reads (whole regions)."""
    return {canonical_tensor(sch, t): [] for t in st.op.input_tensors}


def set_domains(st, dom_map):
    """Ranges of a scan's own axes and of a hybrid stage's loops (an extern stage has none)."""
    op = st.op
    if not isinstance(op, ExternOp):
        for iv in op.root_iter_vars:
            dom_map[iv] = iv.dom


def region_read(q, tensor, evaluate):
    """IntervalSets, one per dimension, of ``tensor`` read by extern or scan stage ``q``.

    ``evaluate(expr)`` gives an expression's interval where the producer is
    computed (the scan axis is one point inside the time loop, its whole range outside).
    """
    full = [IntervalSet(_op.const(0, _op.convert(d).dtype), _op.sub(d, 1)) for d in tensor.shape]
    op = q.op
    if isinstance(op, ScanOp) and any(tensor.op is canonical_tensor(q.schedule, u).op for u in op.update):
        return [evaluate(op.scan_axis.var)] + full[1:]
    return full


# ------------------------------------------------------------ ScheduleOps
def realize_bounds(st, tensor):
    """Extern and scan outputs are realized whole."""
    return tuple(Range(_op.const(0, _op.convert(d).dtype), _op.convert(d)) for d in tensor.shape)


def make_nest(builder, st):
    from . import hybrid_ops
    if hybrid_ops.is_hybrid(st.op):
        return hybrid_ops.make_nest(builder, st)
    if isinstance(st.op, ExternOp):
        return _extern_nest(builder, st)
    return _scan_nest(builder, st)


def _bind(buf, tensor, body):
    args = []
    for d in tensor.shape:
        d = _op.convert(d)
        args += [_op.const(0, d.dtype), d]
    tup = Call("handle", "tvm_tuple", tuple(args))
    return AttrStmt((buf, tensor), BUFFER_BIND, tup, body)


def _extern_nest(builder, st):
    op, sch = st.op, builder.sch
    body = op.body
    for buf, t in reversed(list(zip(op.output_placeholders, op.outputs))):
        body = _bind(buf, t, body)
    for buf, t in reversed(list(zip(op.input_placeholders, op.inputs))):
        ct = canonical_tensor(sch, t)
        prod = sch.stage_map.get(ct.op)
        if prod is not None and prod.attach_type == "inline":
            raise LoweringError(f"extern stage {op.name} reads {ct.name} through a buffer, but stage {prod.name} "
                                f"is inlined (it has no storage); call s[{prod.name}].compute_root()")
        body = _bind(buf, ct, body)
    return body


def scan_aliased(builder, tensor):
    """True for a scan's init and update tensors: they are stored in the scan's output, not realized."""
    cache = getattr(builder, "_scan_aliases", None)
    if cache is None:
        cache = builder._scan_aliases = set()
        for st in builder.sch.stages:
            if isinstance(st.op, ScanOp):
                for t in st.op.init + st.op.update:
                    cache.add(canonical_tensor(builder.sch, t))
    return tensor in cache


def _scan_nest(builder, st):
    op, sch = st.op, builder.sch
    for iv in op.spatial_axis_:
        if builder.attached.get(iv):
            names = [s.name for s in builder.attached[iv]]
            raise LoweringError(f"scan {op.name}: stages {names} are computed at its axis {iv.var.name}; only its "
                                f"time axis {op.scan_axis.var.name} can hold stages")
    _check_body_inside(sch, st)
    t = op.scan_axis
    rng = builder.dom_map[t]
    init_ops = {canonical_tensor(sch, x).op for x in op.init}
    here = builder.attached.get(t, [])
    inits = [s for s in here if s.op in init_ops]
    steps = [s for s in here if s.op not in init_ops]
    first = builder.produce_then(inits, None) if inits else None
    step = builder.produce_then(steps, None) if steps else seq()
    body = seq(first, For(t.var, rng.min, rng.extent, "serial", step))
    aliases = [(x, out) for k, out in enumerate(op.outputs)
               for x in (op.state_placeholder[k], canonical_tensor(sch, op.init[k]),
                         canonical_tensor(sch, op.update[k]))]
    for x, out in reversed(aliases):
        body = AttrStmt((x, out), SCAN_STATE_ALIAS, IntImm("int32", 0), body)
    return body


def _check_body_inside(sch, scan_stage):
    """Every stage that reads a state placeholder must be computed inside the scan's time loop."""
    states = set(scan_stage.op.state_placeholder)
    own = {canonical_tensor(sch, t).op for t in scan_stage.op.init + scan_stage.op.update}
    for st in sch.stages:
        if st.is_placeholder or st is scan_stage:
            continue
        if st.attach_type == "inline":
            if st.op in own:
                raise LoweringError(f"stage {st.name} is an init or update of scan {scan_stage.name}, which stores "
                                    "it in its state; it cannot be inlined")
            continue
        if st.op not in own and not any(t in states for t in st.op.input_tensors) \
                and not _reads_state_inlined(sch, st, states):
            continue
        a = st
        while a is not None and a is not scan_stage:
            a = a.attach_stage
        if a is None:
            role = "is an init or update of" if st.op in own else "reads the state of"
            raise LoweringError(f"stage {st.name} {role} scan {scan_stage.name} but is computed outside its time "
                                f"loop; compute it at s[{scan_stage.name}].op.scan_axis (its default place)")


def _reads_state_inlined(sch, st, states, seen=None):
    seen = seen if seen is not None else set()
    for t in st.op.input_tensors:
        p = sch.stage_map.get(t.op)
        if p is None or p in seen or p.attach_type != "inline":
            continue
        seen.add(p)
        if any(x in states for x in p.op.input_tensors) or _reads_state_inlined(sch, p, states, seen):
            return True
    return False


def alias_states(flattener, s):
    """Storage flattening of ``scan_state_alias``: the placeholder reads the scan output's storage."""
    state, out = s.node
    lay = flattener.layout(out, "the state of a scan")
    old = flattener.layouts.get(state)
    flattener.layouts[state] = lay
    try:
        return flattener.visit(s.body)
    finally:
        if old is None:
            del flattener.layouts[state]
        else:
            flattener.layouts[state] = old
