"""ScheduleOps: build AST2, the loop nest of every stage, from a schedule and its bounds.

Each stage becomes loops over its leaf axes (kind, thread binding and pragmas
from the schedule), guards for splits that do not divide, the producers
attached at each loop, and ``ProducerStore``s of its body; a reduction gets an
init nest just before its first reduction loop.  Intermediate tensors are
wrapped in ``ProducerRealize`` where they are computed.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import And, Call, IntImm, Var
from ..ir.functor import collect_vars, substitute
from ..ir.stmt import (THREAD_ALLREDUCE, AllreduceInfo, AttrStmt, For, IfThenElse, LetStmt, ProducerRealize,
                       ProducerStore, seq)
from ..ir.tensor import IterVar, PlaceholderOp, Range, is_thread_tag
from . import extern_ops
from .bound import canonical_tensor, effective_bodies, infer_bound, shares_storage, storage_scope
from .passes import leaf_values, pass_up_index
from .relations import Fuse, Split
from .scope import base_scope


def schedule_ops(sch, arg_tensors=(), dom_map=None, bodies=None):
    """AST2 for ``sch``; tensors in ``arg_tensors`` are function arguments (not realized)."""
    if bodies is None:
        bodies = effective_bodies(sch)
    if dom_map is None:
        dom_map = infer_bound(sch, bodies)
    return _Builder(sch, dom_map, bodies, arg_tensors).build()


class _Builder:
    def __init__(self, sch, dom_map, bodies, arg_tensors):
        self.sch, self.dom_map, self.bodies = sch, dom_map, bodies
        self.args = {canonical_tensor(sch, t) for t in arg_tensors}
        self.attached = {}
        for st in sch.stages:
            if st.attach_type == "scope":
                if st.attach_ivar not in st.attach_stage.leaf_iter_vars:
                    raise LoweringError(f"stage {st.name} is computed at axis "
                                        f"{st.attach_ivar.var.name} of {st.attach_stage.name}, "
                                        "which is no longer a leaf axis")
                self.attached.setdefault(st.attach_ivar, []).append(st)
        self.ana = Analyzer()
        for iv, r in dom_map.items():
            self.ana.bind(iv.var, r)
        self._bind_thread_ranges()

    def _bind_thread_ranges(self):
        """A thread index lies below the kernel's extent for its tag (the largest constant extent
        bound to it): a stage whose bounds start at a consumer's thread index (a per-thread copy)
        then needs no guard against its shape."""
        ext, threads = {}, []
        for st in self.sch.stages:
            for iv in st.leaf_iter_vars:
                t = st.attr(iv).bind_thread
                r = self.dom_map.get(iv)
                if t is None or r is None or not t.thread_tag.startswith(("threadIdx", "blockIdx")):
                    continue
                threads.append(t)
                e = r.extent.value if isinstance(r.extent, IntImm) and _is_zero(r.min) else None
                ext[t.thread_tag] = None if None in (e, ext.get(t.thread_tag, 0)) else max(e, ext.get(t.thread_tag, 0))
        own = {iv.var for iv in self.dom_map}
        for t in threads:
            if ext.get(t.thread_tag) and t.var not in own:
                self.ana.bind(t.var, Range(IntImm(t.var.dtype, 0), IntImm(t.var.dtype, ext[t.thread_tag])))

    def build(self):
        roots = [st for st in self.sch.stages
                 if not st.is_placeholder and st.attach_type == "root"]
        return self.produce_then(roots, None)

    # ---------------------------------------------------------- one stage
    def produce_then(self, stages, body):
        """Each stage's loop nest, then ``body``; each realize encloses what follows it.

        The storage of an intermediate tensor must outlive its consumers, so
        ``realize B { B's loops; consumers }`` rather than a realize around B's
        loops alone.
        """
        for st in reversed(stages):
            body = seq(self.nest(st), body) if body is not None else self.nest(st)
            for t in reversed(st.op.outputs):
                if t in self.args or extern_ops.scan_aliased(self, t):
                    continue
                if extern_ops.is_special(st.op):
                    bounds = extern_ops.realize_bounds(st, t)
                else:
                    bounds = tuple(self._realize_range(self.dom_map[iv]) for iv in st.op.axis)
                if st.rolling_buffer_scope:     # made a circular buffer by lower.rolling_buffer
                    from .storage import ROLLING_BUFFER_SCOPE
                    body = AttrStmt(t, ROLLING_BUFFER_SCOPE, _op.const(True), body)
                body = ProducerRealize(t, bounds, _op.const(True), body, storage_scope(st))
                if any(st.attr(iv).dim_align for iv in st.op.axis):
                    from .storage import align_realize
                    body = align_realize(st, t, body)
                if st.layout_order:
                    from .storage import order_realize
                    body = order_realize(st, t, body)
        return body

    def _realize_range(self, r):
        """Realize at least ``r``; a symbolic extent with a constant bound gets the constant."""
        if isinstance(r.extent, IntImm):
            return r
        lo, hi = self.ana.bounds(r.extent)
        if hi != float("inf") and hi < 2**31:
            return Range(r.min, IntImm(r.extent.dtype, int(hi)))
        return r

    def nest(self, st):
        if extern_ops.is_special(st.op):
            return extern_ops.make_nest(self, st)
        from . import tensor_compute
        if tensor_compute.is_tensor_compute(st.op):
            return tensor_compute.make_nest(self, st)
        from .tensorize import make_nest, tensorized_leaf
        if tensorized_leaf(st) is not None:
            return make_nest(self, st)
        op = st.op
        leaves = st.leaf_iter_vars
        values = pass_up_index(st, self.dom_map, self._leaf_values(st))
        vmap = {iv.var: values[iv] for iv in st.root_iter_vars}
        body = self.bodies[st]
        guards = self._guards(st, values)
        # A guard covers the stage's own stores, never the producers attached
        # inside its loops: those fill whole tiles (threads of a block load a
        # shared tile together), so it goes below the deepest attach point.
        last_attach = max((k for k, iv in enumerate(leaves) if iv in self.attached), default=-1)
        guards = [(c, max(d, last_attach)) for c, d in guards]
        pos = {iv.var: k for k, iv in enumerate(leaves)}
        is_red = op.is_reduction
        first_red = next((k for k, iv in enumerate(leaves) if iv.iter_type == IterVar.REDUCE),
                         len(leaves))
        pred = self._store_predicate(st, values)
        if not is_red:
            stores = [ProducerStore(t, substitute(b, vmap), tuple(vmap.get(iv.var, iv.var)
                                                                    for iv in op.axis))
                      for t, b in zip(op.outputs, body)]
            stores = seq(*stores) if pred is None else IfThenElse(pred, seq(*stores))
            return self._wrap(st, 0, len(leaves), stores, guards, pos)
        for iv in leaves:
            t = st.attr(iv).bind_thread
            if iv.iter_type == IterVar.REDUCE and t is not None and t.thread_tag.startswith("blockIdx"):
                raise LoweringError(f"stage {st.name}: reduce axis {iv.var.name} is bound to {t.thread_tag}; "
                                    "blocks cannot combine their parts (bind it to threadIdx.* after rfactor)")
        if any(iv.iter_type == IterVar.REDUCE and st.attr(iv).bind_thread is not None for iv in leaves):
            return self._cross_thread(st, body, vmap, guards, pred)
        update = self._update(st, body, vmap)
        outer_guards = [(c, d) for c, d in guards if d < first_red and not self._is_red_guard(c, st)]
        if pred is not None:
            update = IfThenElse(pred, update)
        inner = self._wrap(st, first_red, len(leaves), update, guards, pos, outer_guards=False)
        init = self._init(st, body, values, first_red, guards, pos, pred)
        return self._wrap(st, 0, first_red, seq(init, inner), outer_guards, pos)

    def _leaf_values(self, st):
        """Each leaf axis's loop variable; a data-parallel leaf bound to threads that do not share
        the stage's storage (threadIdx.* of a "local" stage, blockIdx.* of a "shared" one) stands
        for the start of its range: bound inference put that thread's own index into the stage's
        bounds already (each thread computes its own copy), so the thread must not index the
        copy a second time (TVM's rule)."""
        values = leaf_values(st)
        scope = storage_scope(st)
        for iv in st.leaf_iter_vars:
            t = st.attr(iv).bind_thread
            if (t is not None and iv.iter_type != IterVar.REDUCE and t.thread_tag.startswith(("threadIdx", "blockIdx"))
                    and not shares_storage(scope, t.thread_tag)):
                values[iv] = self.dom_map[iv].min
        return values

    def _cross_thread(self, st, body, vmap, guards, pred):
        """A reduction whose reduce axes (one or several) are bound to threadIdx.*: each thread reduces
        its part over the other (serial) reduce axes, which loop inside the thread axes whatever the
        leaf order, in a "local" accumulator; a ``thread_allreduce`` combines the parts of the block
        (every thread gets the total) and one thread writes it: the one at index 0 of the reducing axes,
        or those the store predicate picks (every thread, into its own copy, for "local" storage).
        Guards move onto the parts (a thread out of range contributes the identity), so every
        thread reaches the combination."""
        leaves = st.leaf_iter_vars
        # several reduce axes on threads (k1 on threadIdx.x, k2 on threadIdx.y) form one group
        bound = [iv for iv in leaves if iv.iter_type == IterVar.REDUCE and st.attr(iv).bind_thread is not None]
        normal = [k for k, iv in enumerate(leaves) if iv.iter_type == IterVar.REDUCE and iv not in bound]
        main = [k for k in range(len(leaves)) if k not in normal]
        with self._inside_normal_loops(st, main, normal):
            return self._cross_thread_nest(st, body, vmap, guards, pred, bound, normal, main)

    def _cross_thread_nest(self, st, body, vmap, guards, pred, bound, normal, main):
        op = st.op
        r0 = body[0]
        comb = r0.combiner
        threads = [st.attr(iv).bind_thread for iv in bound]
        red_vars = {iv.var for iv in st.all_iter_vars if iv.iter_type == IterVar.REDUCE}
        idx = tuple(vmap.get(iv.var, iv.var) for iv in op.axis)
        src = [substitute(x, vmap) for x in r0.source]
        part_conds = [c for c, _ in guards] + [c for c in _conjuncts(substitute(r0.condition, vmap))
                                               if not (isinstance(c, IntImm) and c.value)]
        write_conds = [c for c, _ in guards if not (set(collect_vars(c)) & red_vars)]
        if pred is not None:
            write_conds += _conjuncts(pred)
        elif base_scope(storage_scope(st)) != "local":
            # memory the block shares: one writer; a per-thread result is every thread's own
            write_conds += [_op.eq(iv.var, self.dom_map[iv].min) for iv in bound]
        local = []

        def temp(t, suffix):
            x = PlaceholderOp(f"{t.name}.{suffix}", (_op.const(1, "int32"),), t.dtype).output(0)
            local.append(x)
            return x
        zero = (_op.const(0, "int32"),)
        res = [temp(t, "red") for t in op.outputs]
        if normal:
            acc = [temp(t, "part") for t in op.outputs]
            olds = [ProducerLoadOf(a, zero) for a in acc]
            update = _let_stores(acc, zero, comb(olds, src))
            for c in reversed(part_conds):
                update = IfThenElse(Call("bool", "likely", (c,)), update)
            update = self._wrap_at(st, normal, update, [])
            init = seq(*[ProducerStore(a, v, zero) for a, v in zip(acc, comb.identity_element)])
            parts, before = olds, [init, update]
        else:
            valid = _op.all(*part_conds) if part_conds else None
            parts = src if valid is None else [_op.if_then_else(valid, x, i)
                                               for x, i in zip(src, comb.identity_element)]
            before = []
        info = AllreduceInfo(comb, threads, op.name)
        reduce = AttrStmt(info, THREAD_ALLREDUCE, _op.const(0, "int32"),
                          seq(*[ProducerStore(r, v, zero) for r, v in zip(res, parts)]))
        total = [ProducerLoadOf(r, zero) for r in res]
        if r0.init:
            total = list(comb(list(r0.init), total))
        assign = seq(*[ProducerStore(t, v, idx) for t, v in zip(op.outputs, total)])
        for c in reversed(write_conds):
            assign = IfThenElse(Call("bool", "likely", (c,)), assign)
        out = seq(*before, reduce, assign)
        for x in reversed(local):
            out = ProducerRealize(x, (Range(_op.const(0, "int32"), _op.const(1, "int32")),), _op.const(True),
                                  out, "local")
        return self._wrap_at(st, main, out, [], top=False)

    @contextmanager
    def _inside_normal_loops(self, st, main, normal):
        """While the serial reduce loops of cross-thread reduction ``st`` are built: the stages
        attached at a leaf that comes after one of them in the leaf order (the thread-bound reduce
        axis, say) are computed inside the innermost such loop, as the leaf order says, although
        the leaf's own loop now encloses them all."""
        leaves = st.leaf_iter_vars
        moved = []
        for k in main:
            before = [n for n in normal if n < k]
            if before and self.attached.get(leaves[k]):
                moved.append((leaves[k], leaves[max(before)]))
        saved = {iv: list(self.attached.get(iv, [])) for pair in moved for iv in pair}
        for src, dst in moved:
            self.attached.setdefault(dst, []).extend(self.attached.pop(src))
        try:
            yield
        finally:
            for iv in saved:
                self.attached.pop(iv, None)
            self.attached.update((iv, xs) for iv, xs in saved.items() if xs)

    def _is_red_guard(self, cond, st):
        red = {iv.var for iv in st.all_iter_vars if iv.iter_type == IterVar.REDUCE}
        return any(v in red for v in collect_vars(cond))

    def _guards(self, st, values):
        """Conditions ``axis < min + extent`` that the leaf ranges cannot prove; with depths.

        Every axis that is split is checked, not only the roots: splitting
        ``k.inner`` (extent 2) by 16 must not run ``k.inner`` past 2.
        """
        out = []
        pos = {iv.var: k for k, iv in enumerate(st.leaf_iter_vars)}
        split_parents = [r.parent for r in st.relations if isinstance(r, Split)]
        # The parts of a fused axis are in their ranges whenever the fused axis is; a tile may
        # still run past the tensor's shape, so a tensor axis is checked against it all the same.
        fused_parts = {x for r in st.relations if isinstance(r, Fuse) for x in (r.outer, r.inner)}
        checked = [iv for iv in list(st.root_iter_vars) + [p for p in split_parents
                                                          if p not in st.root_iter_vars]
                   if iv not in fused_parts or iv in st.op.axis]
        for iv in checked:
            v = values[iv]
            dom = self.dom_map[iv]
            conds = [] if v is iv.var or iv in fused_parts else [_op.lt(v, _op.add(dom.min, dom.extent))]
            if iv in st.op.axis and iv.dom is not None and iv.dom is not dom:
                # a tile may run past the tensor's shape (see bound._clip)
                conds += [_op.ge(v, iv.dom.min), _op.lt(v, _op.add(iv.dom.min, iv.dom.extent))]
            depth = max((pos[x] for x in collect_vars(v) if x in pos), default=-1)
            for cond in conds:
                if not self.ana.can_prove(cond):
                    out.append((self.ana.simplify(cond), depth))
        return out

    def _update(self, st, body, vmap):
        op = st.op
        idx = tuple(vmap.get(iv.var, iv.var) for iv in op.axis)
        reds = [b for b in body]
        r0 = reds[0]
        comb = r0.combiner
        src = [substitute(s, vmap) for s in r0.source]
        olds = [ProducerLoadOf(t, idx) for t in op.outputs]
        news = [substitute(x, dict(zip(comb.lhs, olds)) | dict(zip(comb.rhs, src)))
                for x in comb.result]
        cond = substitute(r0.condition, vmap)
        stmt = _let_stores(op.outputs, idx, news)
        # One if per conjunct, first outermost: a later part may load memory
        # that is only in bounds when an earlier one holds.
        for c in reversed(_conjuncts(cond)):
            if not (isinstance(c, IntImm) and c.value):
                stmt = IfThenElse(c, stmt)
        return stmt

    def _store_predicate(self, st, values):
        """The stage's store predicate over its leaf axes.  A thread index is matched by tag with
        the thread bound in this stage or a stage it is computed inside."""
        if st.store_predicate is None:
            return None
        from .predicate import shape_vars
        threads = {}
        a = st
        while a is not None:
            for iv in a.leaf_iter_vars:
                t = a.attr(iv).bind_thread
                if t is not None:
                    threads.setdefault(t.thread_tag, t.var)
            a = a.attach_stage
        shapes = set(shape_vars(self.sch).values())
        vmap = {iv.var: v for iv, v in values.items()}
        # a thread axis bound in a stage computed inside this one: the kernel runs every statement
        # on all its threads, so the predicate may pick among them (TVM's rfactor_elemwise_threads)
        for v in collect_vars(st.store_predicate):
            if v in vmap or v in shapes:
                continue
            inner = self._inside(v, st)
            if is_thread_tag(v.name) and v.name in threads:
                vmap[v] = threads[v.name]
            elif inner is not None:
                vmap[v] = inner
            elif not is_thread_tag(v.name):
                raise LoweringError(f"stage {st.name}: its store predicate uses {v.name}, which is no longer "
                                    f"an axis of {st.name} (rfactor or cache_write gave it a new operation); "
                                    "call set_store_predicate after them")
            else:
                raise LoweringError(f"stage {st.name}: its store predicate uses {v.name}, but no axis of "
                                    f"{st.name} or of a stage it is computed inside is bound to {v.name}")
        return substitute(st.store_predicate, vmap)

    def _inside(self, var, st):
        """The thread variable a stage computed (directly or not) inside ``st`` binds for ``var``: the
        same variable, or one with the same thread tag (a predicate made from another
        ``te.thread_axis("threadIdx.x")``, as a replayed trace makes it); None if there is none."""
        for x in self.sch.stages:
            a = x
            while a is not None and a is not st:
                a = a.attach_stage
            if a is not st or x is st:
                continue
            for t in x.iter_var_attrs.values():
                b = t.bind_thread
                if b is not None and (b.var is var or is_thread_tag(var.name) and b.thread_tag == var.name):
                    return b.var
        return None

    def _init(self, st, body, values, first_red, guards, pos, pred=None):
        op = st.op
        leaves = st.leaf_iter_vars
        r0 = body[0]
        inits = r0.init if r0.init else r0.combiner.identity_element
        fresh = {}
        loops = []
        # A reduction leaf that data-parallel axes depend on (fused with one)
        # is looped over by the init too: it covers every output element.
        data_vars = {v for iv in op.axis for v in collect_vars(values[iv])}
        for iv in leaves[first_red:]:
            if iv.iter_type == IterVar.REDUCE and iv.var not in data_vars:
                continue
            nv = Var(iv.var.name + ".init", iv.var.dtype)
            fresh[iv.var] = nv
            loops.append((iv, nv))
        idx = tuple(substitute(values[iv], fresh) for iv in op.axis)
        stmt = seq(*[ProducerStore(t, v, idx) for t, v in zip(op.outputs, inits)])
        if pred is not None:
            stmt = IfThenElse(substitute(pred, fresh), stmt)
        red = {iv.var for iv in st.all_iter_vars if iv.iter_type == IterVar.REDUCE}
        init_guards = [(substitute(c, fresh), d) for c, d in guards
                       if d >= first_red and all(v in fresh for v in collect_vars(c) if v in red)]
        for c, _ in init_guards:
            stmt = IfThenElse(Call("bool", "likely", (c,)), stmt)
        for iv, nv in reversed(loops):
            r = self.dom_map[iv]
            stmt = self._loop(st, iv, nv, r, stmt)
        return stmt

    def _wrap(self, st, start, stop, body, guards, pos, outer_guards=True):
        """Wrap ``body`` in the loops ``leaves[start:stop]``, attached stages and guards."""
        return self._wrap_at(st, range(start, stop), body, guards, top=start == 0)

    def _wrap_at(self, st, ks, body, guards, top=False):
        """Wrap ``body`` in the loops of the leaves at positions ``ks`` (ascending), with the stages
        attached at them and the guards of their depth; ``top``: also the guards of depth -1."""
        leaves = st.leaf_iter_vars
        for k in reversed(list(ks)):
            for c, d in guards:
                if d == k:
                    body = IfThenElse(Call("bool", "likely", (c,)), body)
            iv = leaves[k]
            if st.attr(iv).prefetch:
                from .storage import prefetch_stmts
                body = prefetch_stmts(self, st, iv, body)
            if any(x.double_buffer_scope for x in self.attached.get(iv, [])):
                from .storage import double_buffer_loop
                body = double_buffer_loop(self, st, iv, self.attached[iv], body)
                continue
            body = self.produce_then(self.attached.get(iv, []), body)
            body = self._loop(st, iv, iv.var, self.dom_map[iv], body)
        if top:
            for c, d in guards:
                if d < 0:
                    body = IfThenElse(Call("bool", "likely", (c,)), body)
        return body

    def _loop(self, st, iv, var, rng, body):
        a = st.attr(iv)
        if a.bind_thread is not None:
            t = a.bind_thread
            if t.thread_tag == "pipeline":      # FPGA pipeline marker: a scope, not a loop
                if not _is_one(rng.extent):
                    raise LoweringError(f"{st.name}.{iv.var.name} is bound to 'pipeline' with extent "
                                        f"{rng.extent}; a pipeline axis must have extent 1 "
                                        "(split(axis, nparts=1))")
                return AttrStmt(t, "pipeline_exec_scope", rng.extent, substitute(body, {var: rng.min}))
            tv = t.var
            val = tv if _is_zero(rng.min) else _op.add(tv, rng.min)
            body = substitute(body, {var: val})
            return AttrStmt(t, "thread_extent", rng.extent, body)
        kind = a.kind
        ann = tuple(("pragma_" + k, v) for k, v in a.pragmas)
        return For(var, rng.min, rng.extent, kind, body, ann)


def _let_stores(tensors, idx, values):
    """Store ``values`` into ``tensors`` at ``idx``, all computed before any is stored."""
    if len(values) == 1:
        return ProducerStore(tensors[0], values[0], idx)
    tmps = [Var(f"{t.name}.v{k}", t.dtype) for k, t in enumerate(tensors)]
    stmt = seq(*[ProducerStore(t, v, idx) for t, v in zip(tensors, tmps)])
    for tv, nv in reversed(list(zip(tmps, values))):
        stmt = LetStmt(tv, nv, stmt)
    return stmt


def _conjuncts(e):
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _is_zero(e):
    return isinstance(e, IntImm) and e.value == 0


def _is_one(e):
    return isinstance(e, IntImm) and e.value == 1


def ProducerLoadOf(t, idx):
    from ..ir.expr import ProducerLoad
    return ProducerLoad(t, idx)
