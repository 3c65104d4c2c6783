"""Why a stage's bounds are what they are: InferBound replayed step by step, in sentences.

    e = explain(s, [A, B, C], "B")           # or explain(s, args, "B", axis="i")
    print(e)                                 # plain sentences with the interval arithmetic
    e.root_ranges, e.leaf_ranges             # {axis name: (min, extent)} as text

For one stage it says where the stage is computed (which loops of its
consumer are fixed there and which are relaxed), what each consumer reads and
the interval each read spans, the union and the clip to the shape, how the
split/fuse/rebase relations derive the leaf loops, which guard
(``if likely(...)``) ScheduleOps inserted and which split caused it, what
``loop_partition`` did with that guard (AST3), and the storage allocated.
The numbers come from the same helpers as ``schedule.bound.infer_bound``.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from ..errors import ScheduleError, TVMLabError
from ..ir import op as _op
from ..ir.arith import NEG_INF, POS_INF, Analyzer
from ..ir.expr import Call, IntImm
from ..ir.functor import collect_vars, post_order_visit, substitute
from ..ir.printer import astext
from ..ir.stmt import Allocate, For, IfThenElse, ProducerRealize
from ..ir.tensor import ComputeOp
from ..schedule import bound as B
from ..schedule.passes import leaf_values, pass_up_index
from ..schedule.relations import Fuse, Rebase, Singleton, Split
from ..schedule.schedule import Schedule


@dataclass
class Step:
    """One sentence of an explanation: ``kind`` (where/read/union/clip/relation/guard/partition/
    storage/output), the sentence, the interval arithmetic behind it, and the axes it is about."""
    kind: str
    text: str
    math: str = ""
    axes: tuple = ()
    level: str = "AST2"


@dataclass
class Explanation:
    stage: str
    steps: list = field(default_factory=list)
    root_ranges: dict = field(default_factory=dict)
    leaf_ranges: dict = field(default_factory=dict)
    guards: list = field(default_factory=list)

    def about(self, axis):
        """Only the steps that concern ``axis`` (a printed axis name) and the general ones."""
        keep = [s for s in self.steps if not s.axes or axis in s.axes]
        return Explanation(self.stage, keep, self.root_ranges, self.leaf_ranges, self.guards)

    @property
    def text(self):
        out = [f"Bounds of stage {self.stage}:"]
        for k, s in enumerate(self.steps, 1):
            out.append(f"{k}. [{s.level}] {s.text}")
            if s.math:
                out.extend("     " + line for line in s.math.splitlines())
        return "\n".join(out)

    def __str__(self):
        return self.text

    __repr__ = __str__

    def _repr_html_(self):
        items = []
        for s in self.steps:
            math = (f'<pre style="margin:2px 0 4px 0;background:#f8f9fa;padding:3px;'
                    f'font-size:11px">{html.escape(s.math)}</pre>') if s.math else ""
            items.append(f'<li><span style="color:#868e96;font-size:10px">{s.level} · {s.kind}'
                         f'</span><br>{html.escape(s.text)}{math}</li>')
        return (f'<div class="tvmlab-explain" style="font-size:12px"><b>Bounds of stage '
                f'{html.escape(self.stage)}</b><ol style="padding-left:20px">{"".join(items)}'
                "</ol></div>")


def _t(e):
    if e is NEG_INF:
        return "-inf"
    if e is POS_INF:
        return "+inf"
    return str(e) if isinstance(e, int) else astext(e)


def _rng(r):
    lo = _t(r.min)
    if lo == "0":
        return f"[0, {_t(r.extent)})"
    return f"[{lo}, {lo} + {_t(r.extent)})"


def _par(e):
    t = _t(e)
    return f"({t})" if " " in t else t


def _plus(e):
    t = _t(e)
    return "" if t == "0" else f" + {t}"


def _dedup(items):
    return list(dict.fromkeys(items))


def _ivs(s):
    return f"[{_t(s.min)}, {_t(s.max)}]"


def _stage(sch, stage):
    if isinstance(stage, str):
        return sch.stage_by_name(stage)
    if hasattr(stage, "op") and not hasattr(stage, "leaf_iter_vars"):
        return sch[stage]
    if getattr(stage, "schedule", None) is sch:
        return stage
    try:
        return sch[stage]
    except TVMLabError:
        raise
    except Exception:
        raise ScheduleError(f"explain: expected a stage name, tensor or stage of this schedule, "
                            f"got {type(stage).__name__}: {stage!r}") from None


def explain(sch, args=None, stage=None, axis=None, lowered=None):
    """The explanation of ``stage``'s bounds in schedule ``sch`` (the last stage when None).

    ``args`` (the function's tensors) lets it also say what lowering did
    (guards kept or cut by loop partitioning, the allocation in AST3);
    ``lowered`` reuses an IRModule already lowered from ``sch`` and ``args``.
    ``axis`` keeps only what concerns that axis.
    """
    if not isinstance(sch, Schedule):
        raise ScheduleError(f"explain expects a schedule from te.create_schedule, got "
                            f"{type(sch).__name__}")
    if stage is None:
        stage = next(st for st in reversed(sch.stages) if isinstance(st.op, ComputeOp))
    st = _stage(sch, stage)
    name = sch.stage_key(st)
    ex = Explanation(name)
    if not isinstance(st.op, ComputeOp):
        ex.steps.append(Step("input", f"{name} is an input (placeholder): it has no loops; its "
                             f"shape is ({', '.join(_t(d) for d in st.op.shape)})."))
        return ex
    bodies = B.effective_bodies(sch)
    dom_map = B.infer_bound(sch, bodies)
    ana = Analyzer()
    for iv, r in dom_map.items():
        ana.bind(iv.var, r)
    if st.attach_type == "inline":
        readers = [sch.stage_key(q) for q in sch._consumers(st)]
        ex.steps.append(Step("where", f"{name} is inlined: its expression is substituted into "
                             f"{', '.join(readers) or 'its consumers'}, so it has no loops, no "
                             "bounds and no storage of its own; explain those stages instead."))
        return ex
    _where(sch, st, ex, dom_map)
    _root_domain(sch, st, ex, bodies, dom_map, ana)
    _relations(st, ex, dom_map, ana)
    _guards(sch, st, ex, bodies, dom_map)
    if args is not None or lowered is not None:
        if lowered is None:
            from ..driver import lower
            lowered = lower(sch, list(args))
        _after_lowering(sch, st, ex, lowered)
    if axis is not None:
        aname = axis if isinstance(axis, str) else getattr(getattr(axis, "var", axis), "name", None)
        names = {iv.var.name for iv in st.all_iter_vars}
        if aname not in names:
            raise ScheduleError(f"explain: stage {name} has no axis {axis!r}; its axes are "
                                f"{sorted(names)}")
        return ex.about(aname)
    return ex


# ---------------------------------------------------------------- where
def _where(sch, st, ex, dom_map):
    name = sch.stage_key(st)
    if st.attach_type != "scope":
        ex.steps.append(Step("where", f"{name} is computed at the root: it is computed entirely "
                             "before its consumers run, so no loop of a consumer is fixed while "
                             "it runs."))
        return
    parent, at = st.attach_stage, st.attach_ivar
    fixed, relaxed, seen = [], [], False
    for iv in parent.leaf_iter_vars:
        (relaxed if seen else fixed).append(iv.var.name)
        if iv is at:
            seen = True
    keep = B.scope_vars(st)
    scope = B.storage_scope(st) or "global"
    tags = {iv.var: a.bind_thread.thread_tag for q in sch.stages
            for iv, a in q.iter_var_attrs.items() if a.bind_thread is not None}
    relax = B._relax_map(dom_map, keep, B.storage_scope(st), tags)
    shared = sorted({f"{v.name} ({tags[v]})" for v in keep if v in relax and v in tags})
    ex.steps.append(Step(
        "where", f"{name} is computed at {sch.stage_key(parent)}.{at.var.name} (compute_at): each "
        f"time the loop {at.var.name} of {sch.stage_key(parent)} runs an iteration, {name} computes "
        f"the part that iteration reads.  Loops fixed there: {', '.join(fixed)}; loops relaxed "
        f"(over their whole range): {', '.join(relaxed) or 'none'}.  Storage scope: {scope}.",
        math=f"fixed variables: {', '.join(sorted(v.name for v in keep))}"))
    if shared:
        ex.steps.append(Step(
            "where", f"{name} lives in {scope} memory, which the threads of "
            f"{'a block' if scope == 'shared' else 'the whole grid'} share: so although it is "
            f"computed inside {', '.join(shared)}, those thread loops are relaxed too — one copy "
            "serves every thread (bind its own loops to thread axes to share the work).",
            math="relaxed thread loops: " + ", ".join(shared)))


# ---------------------------------------------------------------- root domain
def _root_domain(sch, st, ex, bodies, dom_map, ana):
    name = sch.stage_key(st)
    op = st.op
    order = [q for q in sch.stages if isinstance(q.op, ComputeOp)]
    reads = {q: B.accesses(bodies[q]) for q in order if q in bodies}
    consumers = [q for q in order if q is not st and q.attach_type != "inline"
                 and any(t.op is op for t in reads[q])]
    for iv in op.axis:
        ex.root_ranges[iv.var.name] = (_t(dom_map[iv].min), _t(dom_map[iv].extent))
    if st.is_output or not consumers:
        why = "an output of the schedule" if st.is_output else "read by no other stage"
        ex.steps.append(Step("output", f"{name} is {why}, so it covers its whole shape.", "\n".join(
            f"{iv.var.name} ∈ {_rng(iv.dom)}" for iv in op.axis), tuple(iv.var.name for iv in op.axis)))
        return
    keep = B.scope_vars(st)
    bound_tags = {iv.var: a.bind_thread.thread_tag for q in order
                  for iv, a in q.iter_var_attrs.items() if a.bind_thread is not None}
    req = [None] * len(op.axis)
    for q in consumers:
        qname = sch.stage_key(q)
        relax = B._relax_map(dom_map, keep, B.storage_scope(st), bound_tags)
        qroot = B._root_sets(ana, q, dom_map, relax)
        via = [f"{iv.var.name} = {astext(e)}" for iv, e in
               zip(q.root_iter_vars, [qroot.get(iv.var, iv.var) for iv in q.root_iter_vars])
               if iv.var in qroot]
        for t, idx_list in reads[q].items():
            if t.op is not op:
                continue
            for idx in idx_list:
                lines, axes = [], []
                for d, e in enumerate(idx):
                    full = ana.simplify(substitute(e, qroot))
                    s = B._eval(ana, full, relax)
                    ranges = [f"{v} ∈ {_rng(relax[v_])}" for v_ in collect_vars(full)
                              for v in [v_.name] if v_ in relax]
                    lines.append(f"dim {d} ({op.axis[d].var.name}): {astext(e)}"
                                 + (f" = {astext(full)}" if astext(full) != astext(e) else "")
                                 + (f"  with {', '.join(sorted(set(ranges)))}" if ranges else "")
                                 + f"  →  {_ivs(s)}")
                    axes.append(op.axis[d].var.name)
                    req[d] = s if req[d] is None else B._union(ana, req[d], s)
                idx_text = ", ".join(astext(i) for i in idx)
                ex.steps.append(Step(
                    "read", f"{qname} reads {t.name}[{idx_text}]"
                    + (f", where {qname}'s axes come from its loops as {'; '.join(via)}" if via else "")
                    + ".  Each index is evaluated as an interval: fixed loops stay symbolic, relaxed "
                      "loops range over their bounds.", "\n".join(lines), tuple(axes)))
    for d, iv in enumerate(op.axis):
        if req[d] is None:
            continue
        if len(consumers) > 1 or sum(1 for q in consumers for t, il in reads[q].items()
                                     if t.op is op for _ in il) > 1:
            ex.steps.append(Step("union", f"{name}.{iv.var.name} must cover every read: the union "
                                 f"is {_ivs(req[d])}.", axes=(iv.var.name,)))
        clipped = B._clip(ana, req[d], iv.dom)
        lo_hi = f"{_ivs(req[d])} ∩ shape {_rng(iv.dom)}"
        same = (req[d].min is not NEG_INF and req[d].max is not POS_INF and
                ana.can_prove(_op.ge(req[d].min, iv.dom.min)) and
                ana.can_prove(_op.le(req[d].max, _op.sub(_op.add(iv.dom.min, iv.dom.extent), 1))))
        if same:
            text = (f"The reads of {name}.{iv.var.name} stay inside its shape, so the region "
                    f"computed is {_rng(clipped)} ({_t(clipped.extent)} values).")
        else:
            kept = (isinstance(clipped.extent, IntImm) and req[d].min is not NEG_INF
                    and req[d].max is not POS_INF
                    and astext(clipped.min) == astext(req[d].min)
                    and astext(clipped.extent) == astext(ana.simplify(
                        _op.add(_op.sub(req[d].max, req[d].min), 1))))
            if kept:
                text = (f"The reads of {name}.{iv.var.name} cannot be proven inside its shape, but "
                        f"the tile keeps its constant size {_rng(clipped)} (clipping would make it "
                        "symbolic); ScheduleOps then guards the stores against the shape.")
            else:
                text = (f"The reads of {name}.{iv.var.name} may leave its shape (or cannot be "
                        f"proven inside it), so the region is clipped to the shape: "
                        f"{_rng(clipped)}.")
        ex.steps.append(Step("clip", text, f"{lo_hi}  →  {_rng(clipped)}", (iv.var.name,)))


# ---------------------------------------------------------------- relations
def _relations(st, ex, dom_map, ana):
    for rel in st.relations:
        if isinstance(rel, Split):
            p, o, i = rel.parent, rel.outer, rel.inner
            pe = dom_map[p].extent
            if rel.factor is not None:
                f = rel.factor
                divides = ana.can_prove(_op.eq(_op.floormod(pe, f), 0))
                math = (f"{i.var.name} ∈ [0, {_t(f)});  {o.var.name} ∈ [0, ceil({_par(pe)} / {_t(f)})) "
                        f"= {_rng(dom_map[o])};  {p.var.name} = {o.var.name} * {_t(f)} + "
                        f"{i.var.name}{_plus(dom_map[p].min)}")
                text = (f"split {p.var.name} (extent {_t(pe)}) by factor {_t(f)}: the inner loop "
                        f"{i.var.name} runs {_t(f)} times, the outer loop {o.var.name} "
                        f"{_t(dom_map[o].extent)} times.")
            else:
                n = rel.nparts
                divides = ana.can_prove(_op.eq(_op.floormod(pe, n), 0))
                math = (f"{o.var.name} ∈ [0, {_t(n)});  {i.var.name} ∈ [0, ceil({_par(pe)} / {_t(n)})) "
                        f"= {_rng(dom_map[i])};  {p.var.name} = {o.var.name} * "
                        f"{_t(dom_map[i].extent)} + {i.var.name}{_plus(dom_map[p].min)}")
                text = (f"split {p.var.name} (extent {_t(pe)}) into {_t(n)} parts: {o.var.name} "
                        f"runs {_t(n)} times, {i.var.name} {_t(dom_map[i].extent)} times.")
            text += (" The factor divides the extent, so every iteration is in range." if divides
                     else " The factor is not known to divide the extent, so the last outer "
                          "iteration may run past it: a guard is needed.")
            ex.steps.append(Step("relation", text, math, (p.var.name, o.var.name, i.var.name)))
        elif isinstance(rel, Fuse):
            a, b, f = rel.outer, rel.inner, rel.fused
            ex.steps.append(Step(
                "relation", f"fuse {a.var.name} and {b.var.name} into one loop {f.var.name} of "
                f"{_t(dom_map[f].extent)} iterations; each part is recovered by division.",
                f"{f.var.name} ∈ [0, {_t(dom_map[a].extent)} * {_t(dom_map[b].extent)}) = "
                f"{_rng(dom_map[f])};  {a.var.name} = {f.var.name} // {_t(dom_map[b].extent)};  "
                f"{b.var.name} = {f.var.name} % {_t(dom_map[b].extent)}",
                (a.var.name, b.var.name, f.var.name)))
        elif isinstance(rel, Rebase):
            ex.steps.append(Step(
                "relation", f"rebase {rel.parent.var.name} to start at 0 as {rel.rebased.var.name}.",
                f"{rel.rebased.var.name} ∈ {_rng(dom_map[rel.rebased])};  {rel.parent.var.name} = "
                f"{rel.rebased.var.name}{_plus(dom_map[rel.parent].min)}",
                (rel.parent.var.name, rel.rebased.var.name)))
        elif isinstance(rel, Singleton):
            ex.steps.append(Step("relation", f"{rel.iter.var.name} is a new axis of one iteration.",
                                 axes=(rel.iter.var.name,)))
    for iv in st.leaf_iter_vars:
        r = dom_map.get(iv)
        if r is not None:
            ex.leaf_ranges[iv.var.name] = (_t(r.min), _t(r.extent))
    if st.leaf_iter_vars:
        ex.steps.append(Step("leaves", "The loops, outer to inner: " + ", ".join(
            f"{iv.var.name} ∈ {_rng(dom_map[iv])}" for iv in st.leaf_iter_vars if iv in dom_map)
            + "."))


# ---------------------------------------------------------------- guards
def _cause(st, iv):
    """The split of ``iv`` (or of an axis it derives from) that makes the guard necessary."""
    for rel in st.relations:
        if isinstance(rel, Split) and rel.parent is iv:
            how = f"factor {_t(rel.factor)}" if rel.factor is not None else f"{_t(rel.nparts)} parts"
            return f"the split of {iv.var.name} by {how}"
    return None


def _guards(sch, st, ex, bodies, dom_map):
    from ..schedule.schedule_ops import _Builder
    b = _Builder(sch, dom_map, bodies, ())
    values = pass_up_index(st, dom_map, leaf_values(st))
    found = b._guards(st, values)
    name = sch.stage_key(st)
    if not found:
        ex.steps.append(Step("guard", f"No guard: every loop of {name} stays in range, so its "
                             "stores run unconditionally."))
        return
    leaves = st.leaf_iter_vars
    # which axis and which check each guard is: the conditions ScheduleOps tests, by text
    origin = {}
    for iv in st.all_iter_vars:
        v = values.get(iv)
        if v is None or v is iv.var:
            continue
        dom = dom_map.get(iv)
        if dom is not None:
            origin.setdefault(astext(b.ana.simplify(_op.lt(v, _op.add(dom.min, dom.extent)))),
                              (iv, "split"))
        if iv in st.op.axis and iv.dom is not None:
            for c in (_op.ge(v, iv.dom.min), _op.lt(v, _op.add(iv.dom.min, iv.dom.extent))):
                origin.setdefault(astext(b.ana.simplify(c)), (iv, "shape"))
    for cond, depth in found:
        vs = {v.name for v in collect_vars(cond)}
        axis, why = origin.get(astext(cond), (None, "shape"))
        cause = _cause(st, axis) if axis is not None and why == "split" else None
        where = f"inside loop {leaves[depth].var.name}" if depth >= 0 else "around the whole nest"
        text = (f"ScheduleOps wraps {name}'s store in if likely({astext(cond)}) {where}"
                + (f": {cause} does not divide the extent, so the last iteration of the outer "
                   "loop would write past it." if cause else
                   ": the tile computed may run past the tensor's shape (see the clip above)."))
        ex.guards.append(astext(cond))
        ex.steps.append(Step("guard", text, f"guard: {astext(cond)}", tuple(sorted(vs))))


# ---------------------------------------------------------------- lowering
def _loops_named(stmt, names):
    out = []

    def visit(n):
        if isinstance(n, For) and n.loop_var.name in names:
            likely = []
            post_order_visit(n.body, lambda x: likely.append(x) if isinstance(x, IfThenElse) and
                             isinstance(x.condition, Call) and x.condition.op == "likely" else None)
            out.append((n.loop_var.name, n.min, n.extent, n.kind, len(likely)))
    post_order_visit(stmt, visit)
    return out


def _after_lowering(sch, st, ex, lowered):
    name = sch.stage_key(st)
    hist = getattr(lowered, "history", {}) or {}
    ast2 = hist.get("AST2")
    realized = []
    if ast2 is not None:
        post_order_visit(ast2.body, lambda n: realized.append(n) if isinstance(n, ProducerRealize)
                         and n.producer.op is st.op else None)
    for r in realized:
        whole = all(_rng(b) == _rng(iv.dom) for b, iv in zip(r.bounds, st.op.axis))
        ex.steps.append(Step("storage", f"{name} is realized over "
                             f"{' x '.join(_rng(b) for b in r.bounds)} "
                             f"(scope {r.storage_scope or 'global'}): "
                             + ("the whole tensor." if whole else "its storage holds only the "
                                "region above, not the whole tensor."),
                             math="realize bounds: " + ", ".join(_rng(b) for b in r.bounds)))
    if ex.guards and "loop_partition" in hist:
        outers = {iv.var.name for iv in st.leaf_iter_vars}
        before = _loops_named(hist["storage_flatten"].body, outers) if "storage_flatten" in hist \
            else []
        after = _loops_named(hist["loop_partition"].body, outers)
        cut = [n for n in outers if sum(1 for x in after if x[0] == n) >
               sum(1 for x in before if x[0] == n)]
        if cut:
            parts = [x for x in after if x[0] in cut]
            ana = Analyzer()
            lines = _dedup(f"for {x[0]} in [{_t(ana.simplify(x[1]))}, "
                           f"{_t(ana.simplify(_op.add(x[1], x[2])))}): "
                           + ("guards remain inside (this stage's or an attached one's)" if x[4] else "no guard")
                           for x in parts)
            ex.steps.append(Step(
                "partition", f"loop_partition cut loop{'s' if len(cut) > 1 else ''} "
                f"{', '.join(sorted(cut))} where the guard is provably true: the main part runs "
                "without the guard and only the tail keeps it.", "\n".join(lines), tuple(sorted(cut)),
                level="AST3"))
            par = sorted({x[0] for x in before if x[3] == "parallel"} - set(cut))
            if par:
                ex.steps.append(Step(
                    "partition", f"{', '.join(par)} is parallel, so it is not cut (its tail would "
                    "run on one thread after the rest): its body branches between the guard-free "
                    "and the guarded copy.", axes=tuple(par), level="AST3"))
        else:
            kinds = {x[3] for x in before}
            why = ("the loop is parallel: its body branches between a guard-free and a guarded copy"
                   if "parallel" in kinds else
                   "it was skipped (simple_mode) or no guard is linear in an outer loop")
            ex.steps.append(Step("partition", f"loop_partition did not cut {name}'s loops: {why}.",
                                 level="AST3"))
    func = lowered.functions.get("default_function") or next(iter(lowered.functions.values()), None) \
        if hasattr(lowered, "functions") else None
    if func is not None:
        allocs = []
        post_order_visit(func.body, lambda n: allocs.append(n) if isinstance(n, Allocate) and
                         n.buffer_var.name == st.op.outputs[0].name else None)
        likely = []
        post_order_visit(func.body, lambda n: likely.append(n) if isinstance(n, Call) and
                         n.op == "likely" else None)
        for a in {(tuple(_t(e) for e in a.extents), a.dtype, a.scope): a
                  for a in allocs}.values():
            ex.steps.append(Step("storage", f"In AST3 {name} is one flat allocation of "
                                 f"{' * '.join(_t(e) for e in a.extents)} {a.dtype} in scope {a.scope}.",
                                 level="AST3"))
        if ex.guards:
            ex.steps.append(Step("guard", f"{len(likely)} likely(...) guard(s) remain in the final "
                                 "AST3 of the whole function.", level="AST3"))
