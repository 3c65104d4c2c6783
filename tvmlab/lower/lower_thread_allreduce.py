"""Cross-thread reduction: lower each ``thread_allreduce`` that ScheduleOps made.

A reduction whose reduce axes are bound to ``threadIdx.*`` (usually after
``rfactor``) reaches AST3 as ``AttrStmt(AllreduceInfo, "thread_allreduce")``
around one store per output, ``res_k[0] = part_k``: each thread's part into a
one-element "local" buffer (``res_k[v]`` in virtual thread ``v``'s copy).  This pass
replaces it with code that leaves the block's total (along the reducing axes; the
other thread axes of the block are separate rows) in that element of every thread, combining with the reducer's
own combiner, so tuple reducers (argmax) and custom ``comm_reducer``s work as
``sum`` does.  Several reducing axes (``k1`` on ``threadIdx.x``, ``k2`` on
``threadIdx.y``) form one group of n threads, indexed ``threadIdx.x`` fastest as
in the block.  The group's threads are consecutive lanes of a warp when its axes
come first in the block's order (x; x and y; x, y and z, leaving out axes the
kernel does not use); then, with ``warp_size`` given:

* **warp shuffles** when n is a power of two of at most a warp (32): log2(n)
  ``tvm_warp_shuffle_down`` steps in a per-thread temporary, then ``res_k =
  tvm_warp_shuffle(temp, 0, n)``, lane 0's total (so ``res_k``'s one store is
  visibly alike in every lane); no shared memory, no barrier;
* **warps, then shuffles** when n is 32 * w (w at most 32): each warp
  reduces by shuffles, lane 0 of each writes its warp's total to a "shared"
  buffer, a barrier, and every warp reduces those w values (padded with the
  identity to a power of two);

and **a shared-memory tree** otherwise: each thread writes its part, log2
rounds halve the active threads with a barrier after each, and every thread
reads slot 0.

Every thread of the block runs these steps (ScheduleOps moved the guards onto
the parts), so the barriers and shuffles are uniform.  ``tvm_warp_shuffle_down
(value, delta, width)`` gives the value of lane L + delta of the width-lane
segment of lane L (its own past the segment's end); ``tvm_warp_shuffle(value,
lane, width)`` the value of that lane of the segment.  The result is
target-neutral AST3.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.expr import Call, IntImm, Load, Var
from ..ir.functor import IRMutator, post_order_visit
from ..ir.stmt import THREAD_ALLREDUCE, Allocate, IfThenElse, LetStmt, SeqStmt, Store, seq
from .split_host_device import is_thread_attr
from .thread_sync import barrier

WARP_SIZE = 32


def _pow2(n):
    return n > 0 and n & (n - 1) == 0


def _combine_into(comb, targets, index, olds, news):
    """``targets[k][index[k]] = comb(olds, news)[k]`` (``index`` one for all or one per target), every
    value computed before any store."""
    values = comb(olds, news)
    index = list(index) if isinstance(index, (list, tuple)) else [index] * len(targets)
    if len(values) == 1:
        return Store(targets[0], values[0], index[0])
    tmps = [Var(f"{t.name}.c{k}", v.dtype) for k, (t, v) in enumerate(zip(targets, values))]
    stmt = seq(*[Store(t, v, i) for t, v, i in zip(targets, tmps, index)])
    for tv, v in reversed(list(zip(tmps, values))):
        stmt = LetStmt(tv, v, stmt)
    return stmt


def shuffle_down(value, delta, width):
    return Call(value.dtype, "tvm_warp_shuffle_down", (value, IntImm("int32", delta), IntImm("int32", width)))


def shuffle(value, lane, width):
    return Call(value.dtype, "tvm_warp_shuffle", (value, IntImm("int32", lane), IntImm("int32", width)))


class _Lower(IRMutator):
    def __init__(self, warp_size):
        super().__init__()
        self.warp_size = warp_size
        self.threads = []     # enclosing (IterVar, extent) of threadIdx.* regions, outermost first
        self.count = 0
        self.kernel = None    # {tag: IterVar} of every threadIdx.* of the kernel being visited

    def visit_AttrStmt(self, s):
        if s.attr_key == THREAD_ALLREDUCE:
            return self._lower(s)
        if is_thread_attr(s) and self.kernel is None:      # the outermost: the kernel's scope
            found = {}
            post_order_visit(s, lambda n: found.setdefault(n.node.thread_tag, n.node) if is_thread_attr(n)
                             and n.node.thread_tag.startswith("threadIdx") else None)
            self.kernel = found
            try:
                return self.visit_AttrStmt(s)
            finally:
                self.kernel = None
        if is_thread_attr(s) and s.node.thread_tag.startswith("threadIdx"):
            self.threads.append((s.node, s.value))
            try:
                return self.generic_visit(s)
            finally:
                self.threads.pop()
        return self.generic_visit(s)

    def _lower(self, s):
        info = s.node
        stores = list(s.body.seq) if isinstance(s.body, SeqStmt) else [s.body]
        if not all(isinstance(x, Store) for x in stores):
            raise LoweringError(f"{info.name}: malformed cross-thread reduction (expected one store per output)")
        comb = info.combiner
        red = [x.buffer_var for x in stores]
        parts = [x.value for x in stores]
        self.dts = {r: x.value.dtype for r, x in zip(red, stores)}
        # the element of each result buffer (0, or a virtual thread's copy)
        self.at = {r: x.index for r, x in zip(red, stores)}
        group = sorted((self._extent(info, t) for t in info.threads), key=lambda g: g[0].thread_tag)
        tags = [t.thread_tag for t, _ in group]
        # the group's index, threadIdx.x fastest: the order of the threads of a block
        var, n = None, 1
        for t, e in group:
            term = t.var if n == 1 else _op.mul(t.var, n)
            var = term if var is None else _op.add(var, term)
            n *= e
        row, rows = IntImm("int32", 0), 1
        for iv, oext in self.threads:
            if iv.thread_tag in tags:
                continue
            if not isinstance(oext, IntImm):
                raise LoweringError(f"cross-thread reduction of {info.name}: thread axis {iv.thread_tag} has "
                                    f"the symbolic extent {oext}; it must be constant")
            row = _op.add(_op.mul(row, oext.value), iv.var)
            rows *= oext.value
        ws = self.warp_size
        # the group is lanes L .. L + n of a warp only when its axes come first in the block's order
        present = sorted(self.kernel or tags)
        lanes_in_order = present[:len(tags)] == tags
        one_warp = ws and lanes_in_order and _pow2(n) and n <= ws
        warps = ws and lanes_in_order and n % ws == 0 and n // ws <= ws
        # A thread axis of the kernel that does not enclose the reduction (bound by another stage)
        # splits no rows: its threads would share the slots, so only its index 0 writes them.
        around = {iv.thread_tag for iv, _ in self.threads}
        only = [_op.eq(iv.var, IntImm("int32", 0)) for t, iv in sorted((self.kernel or {}).items())
                if t not in tags and t not in around]
        self.only = _op.all(*only) if only else None
        if not (one_warp or warps):
            return self._tree(comb, red, parts, var, n, row, rows, info)
        # the shuffles work in per-thread temporaries; the result buffers get only the total
        zero = IntImm("int32", 0)
        lanes = [Var(f"{r.name}.lane", "handle") for r in red]
        self.dts.update((t, self.dts[r]) for t, r in zip(lanes, red))
        self.at.update((t, zero) for t in lanes)
        stores = [Store(t, p, zero) for t, p in zip(lanes, parts)]
        if one_warp:
            body = seq(*stores, *self._shuffles(comb, lanes, n), self._broadcast(lanes, red, n))
        else:
            body = self._two_level(comb, lanes, red, stores, var, n // ws, row, rows)
        for t in reversed(lanes):
            body = Allocate(t, self.dts[t], (IntImm("int32", 1),), _op.const(True), body, "local")
        return body

    def _extent(self, info, thread):
        """(IterVar, constant extent) of the enclosing thread axis that ``thread`` names."""
        tag = thread.thread_tag
        ext = next((e for iv, e in self.threads if iv is thread), None)
        if ext is None:
            ext = next((e for iv, e in self.threads if iv.thread_tag == tag), None)
        if ext is None:
            raise LoweringError(f"stage {info.name}: its reduce axis is bound to {tag}, but the reduction "
                                "is not inside that thread axis")
        if not isinstance(ext, IntImm):
            raise LoweringError(f"cross-thread reduction of {info.name} over {tag}: the extent {ext} is "
                                "symbolic; split the reduce axis by a constant factor first")
        return thread, ext.value

    def _shuffles(self, comb, red, width, upto=None):
        """Reduce ``red_k[0]`` over the lanes of each ``width``-lane segment into its lane 0."""
        out = []
        step = (upto or width) // 2
        while step >= 1:
            olds = [Load(self.dts[r], r, self.at[r]) for r in red]
            # every lane shuffles before combining: a combiner may use a value only in one branch
            # of a select, and a shuffle some lanes skip is undefined
            got = [Var(f"{r.name}.s{k}", self.dts[r]) for k, r in enumerate(red)]
            stmt = _combine_into(comb, red, [self.at[r] for r in red], olds, got)
            for g, o in reversed(list(zip(got, olds))):
                stmt = LetStmt(g, shuffle_down(o, step, width), stmt)
            out.append(stmt)
            step //= 2
        return out

    def _broadcast(self, lanes, red, width):
        """``red_k`` = lane 0's ``lanes_k`` in every lane of each ``width``-lane segment."""
        return seq(*[Store(r, shuffle(Load(self.dts[t], t, self.at[t]), 0, width), self.at[r])
                     for t, r in zip(lanes, red)])

    def _two_level(self, comb, red, res, stores, var, warps, row, rows):
        ws = self.warp_size
        lane = _op.floormod(var, ws)
        warp = _op.floordiv(var, ws)
        bufs = [Var(f"red_buf{self.count + k}", "handle") for k in range(len(red))]
        self.count += len(red)
        slot = _op.add(_op.mul(row, warps), warp)
        body = [*stores, *self._shuffles(comb, red, ws)]
        first = _op.eq(lane, 0) if self.only is None else _op.logical_and(_op.eq(lane, 0), self.only)
        body.append(IfThenElse(first, seq(*[Store(b, Load(self.dts[r], r, self.at[r]), slot)
                                            for b, r in zip(bufs, red)])))
        body.append(barrier())
        mine = _op.add(_op.mul(row, warps), lane)
        body.append(seq(*[Store(r, _op.if_then_else(_op.lt(lane, warps), Load(self.dts[r], b, mine), ident),
                                self.at[r]) for r, b, ident in zip(red, bufs, comb.identity_element)]))
        upto = 1
        while upto < warps:        # lanes from ``warps`` on hold the identity: shuffle over a power of two
            upto *= 2
        body.extend(self._shuffles(comb, red, ws, upto=upto))
        body.append(self._broadcast(red, res, ws))
        out = seq(*body)
        for b, r in reversed(list(zip(bufs, red))):
            out = Allocate(b, self.dts[r], (IntImm("int32", rows * warps),), _op.const(True), out, "shared")
        return out

    def _one(self, stmt):
        """``stmt`` (a write of the shared slots) in the threads at index 0 of the axes in ``self.only``."""
        return stmt if self.only is None else IfThenElse(self.only, stmt)

    def _tree(self, comb, red, parts, var, n, row, rows, info):
        width = 1
        while width < n:
            width *= 2
        bufs = [Var(f"red_buf{self.count + k}", "handle") for k in range(len(red))]
        self.count += len(red)

        def slot(t):
            return _op.add(_op.mul(row, width), t)
        zero = IntImm("int32", 0)
        body = [self._one(seq(*[Store(b, p, slot(var)) for b, p in zip(bufs, parts)])), barrier()]
        step = width // 2
        while step >= 1:
            active = _op.lt(var, step) if step * 2 <= n else _op.logical_and(
                _op.lt(var, step), _op.lt(_op.add(var, step), n))
            olds = [Load(self.dts[r], b, slot(var)) for b, r in zip(bufs, red)]
            others = [Load(self.dts[r], b, slot(_op.add(var, step))) for b, r in zip(bufs, red)]
            body.append(self._one(IfThenElse(active, _combine_into(comb, bufs, slot(var), olds, others))))
            body.append(barrier())
            step //= 2
        body.append(seq(*[Store(r, Load(self.dts[r], b, slot(zero)), self.at[r]) for b, r in zip(bufs, red)]))
        out = seq(*body)
        for b, r in reversed(list(zip(bufs, red))):
            out = Allocate(b, self.dts[r], (IntImm("int32", rows * width),), _op.const(True), out, "shared")
        return out


def lower_thread_allreduce(stmt, warp_size=WARP_SIZE):
    """Lower the cross-thread reductions of ``stmt`` (AST3); ``warp_size=None``: no warp shuffles."""
    return _Lower(warp_size).visit(stmt)
