"""InferBound: the range of every axis of every stage.

Outputs cover their whole shape.  A producer covers what its consumers read:
each consumer's access indices are evaluated as intervals, holding fixed the
loop variables that enclose the producer's attach point and relaxing the rest
over their ranges; the union, clipped to the producer's shape, is its root
domain.  Leaf ranges then follow from the relations (``pass_down_domain``).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import NEG_INF, POS_INF, Analyzer, IntervalSet, union
from ..ir.expr import IntImm, ProducerLoad, Reduce
from ..ir.functor import IRMutator, IRVisitor, substitute
from ..ir.tensor import ComputeOp, Range
from .passes import leaf_values, pass_down_domain, pass_up_index
from .rewrite import canonical_tensor


def effective_bodies(sch):
    """Each computed stage's body with inlined stages substituted and tensors canonical."""
    bodies = {}

    class Inline(IRMutator):
        def visit_ProducerLoad(self, ld):
            idx = tuple(self.visit(i) for i in ld.indices)
            t = canonical_tensor(sch, ld.producer)
            st = sch.stage_map.get(t.op)
            if st is not None and st.attach_type == "inline":
                body = bodies[st][t.value_index]
                return substitute(body, {iv.var: i for iv, i in zip(st.op.axis, idx)})
            return ProducerLoad(t, idx)

    for st in sch.stages:
        if isinstance(st.op, ComputeOp):
            bodies[st] = tuple(Inline().visit(b) for b in st.op.body)
    return bodies


def accesses(body_exprs):
    """{tensor: [indices, ...]} read in the expressions."""
    found, seen = {}, set()

    class V(IRVisitor):
        def visit_ProducerLoad(self, ld):
            if id(ld) in seen:          # one load object read in several places (a select's branches)
                return
            seen.add(id(ld))
            found.setdefault(ld.producer, []).append(ld.indices)
            for i in ld.indices:
                self.visit(i)

        def visit_Reduce(self, r):
            for s in r.source:
                self.visit(s)
            self.visit(r.condition)
    v = V()
    for b in body_exprs:
        v.visit(b)
    return found


def scope_vars(stage):
    """Loop variables enclosing the place where ``stage`` is computed."""
    out = set()
    st = stage
    while st.attach_type == "scope":
        parent, at = st.attach_stage, st.attach_ivar
        for iv in parent.leaf_iter_vars:
            out.add(iv.var)
            a = parent.attr(iv)
            if a.bind_thread is not None:
                out.add(a.bind_thread.var)
            if iv is at:
                break
        st = parent
    return out


_SCOPE_RANK = {"": 0, "global": 0, "shared": 1, "warp": 2, "local": 3}


def _thread_rank(tag):
    return 0 if tag.startswith("blockIdx") else 1


def storage_scope(stage):
    """The stage's scope, or TVM's default from where it is attached.

    An intermediate computed inside a thread ("threadIdx.*") is per-thread
    ("local"); inside a block only, per-block ("shared"); else "global".
    """
    if stage.scope:
        return stage.scope
    ranks = [_thread_rank(t.thread_tag) for t in _attach_threads(stage)]
    if not ranks:
        return ""
    return "local" if max(ranks) >= 1 else "shared"


def shares_storage(scope, tag):
    """Whether the threads of ``tag`` share memory of ``scope`` (TVM's rule: storage rank <= thread
    rank); "warp" memory is shared by the lanes of a warp (threadIdx.x), as in TVM."""
    from .scope import base_scope
    base = base_scope(scope)
    return _SCOPE_RANK.get(base, 0) <= _thread_rank(tag) or (base == "warp" and tag == "threadIdx.x")


def _attach_threads(stage):
    out = []
    st = stage
    while st.attach_type == "scope":
        parent, at = st.attach_stage, st.attach_ivar
        for iv in parent.leaf_iter_vars:
            a = parent.attr(iv)
            if a.bind_thread is not None and a.bind_thread.thread_tag not in ("vthread", "cthread"):
                out.append(a.bind_thread)
            if iv is at:
                break
        st = parent
    return out


def _relax_map(dom_map, keep, scope, bound_tags, bound_threads=None):
    """Intervals for loop variables outside ``keep`` (each over its own range).

    A kept loop of extent 1 is its single value (its min, which may hold
    thread indices).  A kept loop bound to a thread is relaxed when the
    storage is shared by those threads (TVM's rule: storage rank <= thread
    rank; global is shared by blocks and threads, shared by the threads of a
    block and vthreads, local by none).
    """
    relax = {}

    def shared_by(tag):
        return shares_storage(scope, tag)
    for iv, rng in dom_map.items():
        v = iv.var
        tag = bound_tags.get(v)
        if v in keep:
            one = isinstance(rng.extent, IntImm) and rng.extent.value == 1
            if not one and (tag is None or not shared_by(tag)):
                continue
        elif tag is not None and tag.startswith(("threadIdx", "blockIdx")) and not shared_by(tag):
            # a thread's own iteration of a consumer loop below the attach point: the one value
            # of that thread's index (the thread variable is defined everywhere in the kernel)
            thread = bound_threads.get(v) if bound_threads else None
            if thread is not None:
                relax[v] = Range(_op.add(rng.min, thread.var), IntImm(rng.extent.dtype, 1))
                continue
        elif tag is not None and tag.startswith(("threadIdx", "blockIdx")) and bound_threads:
            # the rule above put this thread's index into the bounds of a per-thread stage between
            # here and the consumer: storage the threads share covers all of them
            thread = bound_threads.get(v)
            if thread is not None:
                relax.setdefault(thread.var, Range(IntImm(rng.extent.dtype, 0), rng.extent))
        relax[v] = rng
    return relax


def _reachable(e, relax):
    """The part of ``relax`` that ``e`` depends on: its variables, the variables of their ranges, ...
    (binding the rest, often hundreds of loops of other stages, would change nothing but the time)."""
    from ..ir.functor import collect_vars
    out, todo = {}, list(collect_vars(e))
    while todo:
        v = todo.pop()
        if v in out or v not in relax:
            continue
        out[v] = relax[v]
        r = relax[v]
        for x in (getattr(r, "min", None), getattr(r, "extent", None), getattr(r, "max", None)):
            if x is not None and x is not NEG_INF and x is not POS_INF and not isinstance(x, (int, float)):
                todo.extend(collect_vars(x))
    return out


def _eval(ana, e, relax, back=None):
    """Interval of ``e`` with ``relax`` vars ranging; repeat while relaxed vars remain.  ``back``
    (from ``_shift_kept``) turns the offsets of shifted loops back into their variables."""
    relax = _reachable(e, relax)
    s = ana.int_set(e, relax)
    for _ in range(4):
        from ..ir.functor import uses_var
        lo_dep = uses_var(s.min, lambda v: v in relax)
        hi_dep = uses_var(s.max, lambda v: v in relax)
        if not (lo_dep or hi_dep):
            break
        lo = ana.int_set(s.min, relax).min if lo_dep else s.min
        hi = ana.int_set(s.max, relax).max if hi_dep else s.max
        s = IntervalSet(lo, hi)
    if back:
        s = IntervalSet(*(x if x is NEG_INF or x is POS_INF else ana.simplify(substitute(x, back))
                          for x in (s.min, s.max)))
    return s


def _shift_kept(ana, dom_map, relax):
    """Loops kept as points whose start depends on a relaxed variable, as offsets from that start.

    A stage computed inside the loop ``for i in [m(vt), m(vt) + e)`` of a consumer reads
    ``X[i]``: for one virtual thread (or thread) ``i`` is a point, but storage shared by all of
    them must hold ``X[i - m(vt) + m(vt')]`` for every ``vt'``.  Returns ``({i: u + m}, {u: i -
    m})`` with a fresh offset variable ``u`` per such loop (kept fixed while ``vt`` is relaxed).
    """
    from ..ir.expr import Var
    from ..ir.functor import uses_var
    shift, back = {}, {}
    ranging = {v for v, r in relax.items() if not (isinstance(r.extent, IntImm) and r.extent.value == 1)}
    if not ranging:
        return shift, back
    for iv, rng in dom_map.items():
        v = iv.var
        if v in relax or v in shift or not uses_var(rng.min, lambda x: x in ranging):
            continue
        u = Var(f"{v.name}.offset", v.dtype)
        shift[v] = _op.add(u, rng.min)
        back[u] = _op.sub(v, rng.min)
    return shift, back


def infer_bound(sch, bodies=None):
    """Return ``{IterVar: Range}`` for every axis of every computed stage."""
    if bodies is None:
        bodies = effective_bodies(sch)
    dom_map = {}
    ana = Analyzer()
    bind_positive_symbols(ana, sch)
    reads = {st: accesses(bodies[st]) for st in bodies}
    order = [st for st in sch.stages if not st.is_placeholder]
    from . import extern_ops
    from . import tensor_compute
    reads.update((st, tensor_compute.region_reads(sch, st) if tensor_compute.is_tensor_compute(st.op)
                  else extern_ops.stage_reads(sch, st)) for st in order if st not in reads)
    for st in reversed(order):
        if st.attach_type == "inline":
            continue
        op = st.op
        if extern_ops.is_special(op):        # te.extern / scan / hybrid: whole outputs, their own axes
            extern_ops.set_domains(st, dom_map)
            pass_down_domain(st, dom_map, ana.simplify)     # a hybrid stage's split and fused loops
            for iv in st.all_iter_vars:
                ana.bind(iv.var, dom_map[iv])
            continue
        consumers = [q for q in order if q is not st and q.attach_type != "inline"
                     and any(t.op is op for t in reads[q])]
        if st.is_output or not consumers:
            for iv in op.axis:
                dom_map[iv] = iv.dom
        else:
            keep = scope_vars(st)
            bound_tags = {iv.var: a.bind_thread.thread_tag for q in order
                          for iv, a in q.iter_var_attrs.items() if a.bind_thread is not None}
            bound_threads = {iv.var: a.bind_thread for q in order
                             for iv, a in q.iter_var_attrs.items() if a.bind_thread is not None}
            req = [None] * len(op.axis)
            for q in consumers:
                relax = _relax_map(dom_map, keep, storage_scope(st), bound_tags, bound_threads)
                qroot = _root_sets(ana, q, dom_map, relax)
                shift, back = _shift_kept(ana, dom_map, relax)
                for t, idx_list in reads[q].items():
                    if t.op is not op:
                        continue
                    if extern_ops.is_special(q.op):
                        for d, s in enumerate(extern_ops.region_read(q, t, lambda e: _eval(ana, e, relax))):
                            req[d] = s if req[d] is None else _union(ana, req[d], s)
                        continue
                    for idx in idx_list:
                        for d, e in enumerate(idx):
                            s = _eval(ana, substitute(substitute(e, qroot), shift), relax, back)
                            req[d] = s if req[d] is None else _union(ana, req[d], s)
            for d, iv in enumerate(op.axis):
                dom_map[iv] = _clip(ana, req[d], iv.dom) if req[d] is not None else iv.dom
        if tensor_compute.is_tensor_compute(op):         # the intrinsic writes its whole tile
            for iv in op.axis[op.schedulable_ndim:]:
                dom_map[iv] = iv.dom
        for iv in op.reduce_axis:
            dom_map[iv] = iv.dom
        try:
            pass_down_domain(st, dom_map, ana.simplify)
        except KeyError as e:
            raise LoweringError(f"bound inference of stage {st.name}: no range for axis {e}") from None
        for iv in st.all_iter_vars:
            r = dom_map.get(iv)
            if r is not None:
                ana.bind(iv.var, r)
    return dom_map


def bind_positive_symbols(ana, sch):
    """Shape variables and symbolic split factors are at least 1 where any loop runs.

    (A zero extent runs no loop, so nothing computed from these bounds is
    used.)  Knowing their sign lets ``(xo * f + xi) // l`` be bounded tightly,
    as TVM bounds a stage computed at a split of a fused axis.
    """
    from ..ir.arith import POS_INF
    from ..ir.expr import Var
    from ..ir.functor import collect_vars
    from .relations import Split
    found = []
    for st in sch.stages:
        for t in st.op.outputs:
            for d in t.shape:
                found += collect_vars(d)
        for rel in st.relations:
            if isinstance(rel, Split):
                for f in (rel.factor, rel.nparts):
                    if isinstance(f, Var):
                        found.append(f)
    seen = set()
    for v in found:
        if id(v) not in seen:
            seen.add(id(v))
            ana.bind(v, IntervalSet(_op.const(1, v.dtype), POS_INF))


def _root_sets(ana, q, dom_map, relax):
    """Each root axis of consumer ``q`` as an expression (kept vars) or a relaxed min/max pair.

    Returns a substitution {root var: expr} in which relaxed leaf variables are
    still present; ``_eval`` relaxes them.  Root values are clipped to the root
    domain by the guards ScheduleOps emits, so the clip is applied here too.
    """
    vals = pass_up_index(q, dom_map, leaf_values(q))
    out = {}
    for iv in q.root_iter_vars:
        e = vals[iv]
        if e is iv.var:
            continue
        out[iv.var] = e
    return out


def _union(ana, a, b):
    return union(a, b, ana)


def _clip(ana, s, dom):
    """``s`` within ``dom``; an unbounded side (an index the analysis cannot bound) is the domain's.

    A tile of constant size stays constant when clipping would make its size
    symbolic (``min(8, n - 8*bi)``): its loops can then be vectorised or bound
    to threads of a fixed extent, and ScheduleOps guards each root index
    against the tensor's shape, as TVM does.  Such a tile is at most the
    dimension's extent long.
    """
    dlo = dom.min
    dhi = _op.sub(_op.add(dom.min, dom.extent), 1)
    lo, hi = s.min, s.max
    raw = None
    if lo is not NEG_INF and hi is not POS_INF:
        raw = Range(lo, ana.simplify(_op.add(_op.sub(hi, lo), 1)))
    if lo is NEG_INF or not ana.can_prove(_op.ge(lo, dlo)):
        lo = dlo if lo is NEG_INF else ana.simplify(_op.max(lo, dlo))
    if hi is POS_INF or not ana.can_prove(_op.le(hi, dhi)):
        hi = dhi if hi is POS_INF else ana.simplify(_op.min(hi, dhi))
    clipped = Range(lo, ana.simplify(_op.add(_op.sub(hi, lo), 1)))
    if (raw is not None and isinstance(raw.extent, IntImm)
            and not isinstance(clipped.extent, IntImm)):
        if isinstance(dom.extent, IntImm) and raw.extent.value > dom.extent.value:
            # never more than the tensor holds: from the clipped start, the dimension's extent
            # covers the clipped region (it ends inside the tensor)
            return Range(lo, dom.extent)
        return raw
    return clipped


__all__ = ["infer_bound", "effective_bodies", "canonical_tensor", "Reduce"]
