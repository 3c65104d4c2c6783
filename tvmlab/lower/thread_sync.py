"""Barrier insertion for "shared" memory (AST3, before the host/device split).

Threads of a block see each other's writes to a "shared" buffer only after a
barrier, and a barrier must be reached by every thread of the block (one that
some threads skip hangs the GPU).  This pass plans barriers accordingly:

* **Where a barrier is needed.**  Statements are taken in program order with
  the shared accesses since the last barrier; a read of an element another
  thread may have written (RAW) or a write of one another thread may still read
  (WAR) gets a barrier before it.  Two accesses at the same index that depends
  on the innermost thread index are one thread's own and need none.  A read
  of a double buffer (``double_buffer_write``, from ``double_buffer()``) does
  not wait for the write of the *next* tile in the same iteration; across
  iterations it does.  A loop whose next iteration conflicts with what this
  one did gets a barrier at the end of its body; so does one whose statement
  writes, at one index expression, elements that change owner from one
  iteration to the next (``sh[(tx + j) % 64]``): without a barrier between two
  threads' writes of one element, the older value could land last.  Across
  iterations the same index stays one thread's own only where the iterations'
  elements provably lie apart: ``sh[j * 64 + tx]`` with 64 threads, but not
  ``sh[j * 8 + g(tx)]`` where ``g`` spans 8 or more (another thread takes in
  iteration j + 1 what this one had in j).  An index
  proved one-to-one in the loop's and the threads' variables never does: a
  cooperative copy stored transposed or with padded rows
  (``transform_layout``, ``storage_align``) needs one barrier after the copy,
  not one per iteration.
* **Where a barrier may go.**  Only where control flow is uniform across the
  block: never under an ``if`` whose condition depends on ``threadIdx``
  (directly or through a variable derived from it), never in a loop whose trip
  count does.  A thread-dependent ``if`` whose condition reads no memory is
  distributed over the statements of its body (``if c {a; b}`` is ``if c {a};
  if c {b}``), so the barrier goes between the pieces, outside the ``if``;
  pieces not separated by a barrier are joined again afterwards.  When a
  hand-off happens entirely inside divergent control flow, no placement is
  correct and lowering stops with a LoweringError naming the access.

``check_uniform_barriers(kernel)`` is the build-time check of the result (and of
barriers written by hand): a barrier still under thread-dependent control flow
raises DivergentBarrierError, naming the barrier and the condition.

The barrier is ``Evaluate(Call("void", "tvm_storage_sync", (StringImm("shared"),)))``;
CUDA prints ``__syncthreads()``, GLSL ``barrier()``.
"""
from __future__ import annotations


from ..errors import DivergentBarrierError, LoweringError
from ..ir import dtype as dt
from ..ir.expr import Call, IntImm, Load, StringImm, Var
from ..ir.functor import IRVisitor, collect_vars, post_order_visit
from ..ir.printer import astext
from ..ir.stmt import (Allocate, AttrStmt, Evaluate, For, IfThenElse, LetStmt, SeqStmt, While, seq)
from ..ir.tensor import IterVar
from .remove_no_op import same_expr
from .shared_index import Loop, apart, one_to_one

DOUBLE_BUFFER_WRITE = "double_buffer_write"
PROVE_ONE_TO_ONE = True        # False: only indices shifted by the loop variable past the rest skip the barrier


def barrier():
    """The target-neutral barrier statement for shared memory."""
    return Evaluate(Call("void", "tvm_storage_sync", (StringImm("shared"),)))


def is_barrier(s):
    return (isinstance(s, Evaluate) and isinstance(s.value, Call)
            and s.value.op == "tvm_storage_sync")


def is_thread_index(node):
    """True for the IterVar of a ``threadIdx.*`` thread_extent (values differ within a block)."""
    return isinstance(node, IterVar) and str(node.thread_tag or "").startswith("threadIdx")


# ---------------------------------------------------------------- uniformity
class _Scope:
    """Variables whose value differs between threads of one block, the innermost thread index, the
    constant ranges ``[0, n)`` of the thread indices and loops around, and the bounds ``(G, top)``,
    ``G <= top``, that the ``if`` conditions around put on index expressions."""
    __slots__ = ("varying", "thread", "ranges", "guards")

    def __init__(self, varying=frozenset(), thread=None, ranges=None, guards=()):
        self.varying, self.thread, self.ranges = frozenset(varying), thread, dict(ranges or {})
        self.guards = tuple(guards)

    def with_vars(self, vs, thread=None):
        return _Scope(self.varying | set(vs), thread if thread is not None else self.thread, self.ranges,
                      self.guards)

    def with_range(self, v, extent):
        inner = self.without_range(v)
        if not (isinstance(extent, IntImm) and extent.value > 0):
            return inner
        return _Scope(inner.varying, inner.thread, {**inner.ranges, v: extent.value}, inner.guards)

    def without_range(self, v):
        """``v`` rebound (a loop or let reusing it): its range and the guards on it no longer hold."""
        guards = tuple(g for g in self.guards if v not in collect_vars(g[0]))
        if v not in self.ranges and len(guards) == len(self.guards):
            return self
        return _Scope(self.varying, self.thread, {k: n for k, n in self.ranges.items() if k is not v}, guards)

    def with_guard(self, cond):
        """Inside ``if (cond)``."""
        return _Scope(self.varying, self.thread, self.ranges, self.guards + tuple(_bounds(cond)))

    def uniform(self, e):
        """No thread-dependent variable and no memory read in ``e``."""
        if e is None:
            return True
        bad = []
        post_order_visit(e, lambda n: bad.append(n) if isinstance(n, Load)
                         or (isinstance(n, Var) and n in self.varying) else None)
        return not bad

    def enter(self, s):
        """The scope inside wrapper/loop ``s``."""
        if isinstance(s, AttrStmt) and s.attr_key == "thread_extent" and is_thread_index(s.node):
            return self.with_vars([s.node.var], s.node.var).with_range(s.node.var, s.value)
        if isinstance(s, LetStmt):
            inner = self.without_range(s.var)
            return inner if self.uniform(s.value) else inner.with_vars([s.var])
        if isinstance(s, For):
            inner = self if self.uniform(s.min) else self.with_vars([s.loop_var])
            if isinstance(s.min, IntImm) and s.min.value == 0:
                return inner.with_range(s.loop_var, s.extent)
            return inner.without_range(s.loop_var)
        return self


def _bounds(cond):
    """The bounds ``(G, top)``, ``G <= top``, that ``cond`` holding puts on memory-free expressions:
    its conjuncts ``G < N`` and ``G <= N`` (a copy's guard ``outer * threads + tx < n``)."""
    from ..ir import expr as E
    if isinstance(cond, Call) and cond.op == "likely" and cond.args:
        return _bounds(cond.args[0])
    if isinstance(cond, E.And):
        return _bounds(cond.a) + _bounds(cond.b)
    if isinstance(cond, (E.LT, E.LE)) and isinstance(cond.b, IntImm) and _stable(cond.a):
        return [(cond.a, cond.b.value - (1 if isinstance(cond, E.LT) else 0))]
    return []


def _stable(cond):
    """A condition that reads no memory keeps its value while its body runs."""
    found = []
    post_order_visit(cond, lambda n: found.append(n) if isinstance(n, (Load, Call)) and not (
        isinstance(n, Call) and n.op == "likely") else None)
    return not found


# ---------------------------------------------------------------- accesses
class _Acc:
    """One shared-memory access: buffer, read/write, index, innermost thread var, double-buffer write,
    element type (one byte buffer may be read as several types, as after
    MergeDynamicSharedMemoryAllocations: index ``tx`` then names other bytes)."""
    __slots__ = ("buf", "write", "index", "thread", "db", "stmt", "dtype", "ranges", "guards", "_proved", "_apart")

    def __init__(self, buf, write, index, thread, db, stmt, dtype=None, ranges=None, guards=()):
        self.buf, self.write, self.index, self.thread, self.db, self.stmt = buf, write, index, thread, db, stmt
        self.dtype, self.ranges, self.guards, self._proved, self._apart = dtype, ranges, guards, None, {}

    def plain(self):
        return self if not self.db else _Acc(self.buf, self.write, self.index, self.thread, False, self.stmt,
                                             self.dtype, self.ranges, self.guards)

    @property
    def one_to_one(self):
        """The index proved one-to-one in the variables around (``shared_index.one_to_one``); worked out when asked."""
        if self._proved is None:
            self._proved = self.index is not None and self.ranges is not None \
                and one_to_one(self.index, self.ranges)
        return self._proved

    def apart(self, loop):
        """``shared_index.apart`` for ``loop`` (a ``Loop``); worked out when asked, once per loop."""
        if loop not in self._apart:
            self._apart[loop] = self.index is not None and apart(self, loop)
        return self._apart[loop]


SYNC = "sync"


def _index(e):
    """An access's index with digits put back together: a fused copy loop writes ``outer * threads +
    thread`` even where the tensor's shape took that number apart, so each thread owns its elements."""
    from ..ir.arith.analyzer import Analyzer
    return Analyzer(merge_digits=True).simplify(e)


def _same_thread(a, b):
    """Both at one index that depends on the innermost thread index: each thread its own element."""
    if a.index is None or b.index is None or a.thread is None or a.thread is not b.thread:
        return False
    if a.dtype != b.dtype:
        return False
    if not same_expr(a.index, b.index):
        return False
    return a.thread in collect_vars(a.index)


def _conflict(prev, cur, loop_carry):
    """``loop_carry``: None, or the ``Loop`` whose next iteration ``cur`` runs in."""
    if prev.buf is not cur.buf:
        return False
    # The same index is the same thread's element (the rule above); across iterations of a loop
    # only where each iteration's elements lie apart from the others' (``apart``: ``k * 64 + tx``, not
    # ``k * 8 + tx`` with 64 threads, nor ``(i * 3 + tx) // (6 - k)``), or where the index is proved
    # one-to-one in the loop's and the threads' variables (``one_to_one``: a transposed copy
    # ``(k * 64 + tx) % 16 * 17 + (k * 64 + tx) // 16``).
    mine = _same_thread(prev, cur)
    carried = mine and loop_carry is not None and not (prev.apart(loop_carry) and cur.apart(loop_carry)) \
        and not (PROVE_ONE_TO_ONE and prev.one_to_one and cur.one_to_one)
    if prev.write and cur.write:
        return carried                # two writes: only such a statement hands elements over
    if mine and not carried:
        return False
    if prev.db and not cur.write and loop_carry is None:
        return False                  # reads this iteration's tile, not the next one being written
    return True


def _needs_sync(pending, summary, loop_carry=None):
    """The first access of ``summary`` (before its own first barrier) that conflicts with ``pending``."""
    for a in summary:
        if a is SYNC:
            return None
        against = pending["r"] + pending["w"] if a.write else pending["w"]
        for p in against:
            if _conflict(p, a, loop_carry):
                return p, a
    return None


def _absorb(pending, summary):
    for a in summary:
        if a is SYNC:
            pending["r"].clear()
            pending["w"].clear()
        else:
            pending["w" if a.write else "r"].append(a)


def _fresh():
    return {"r": [], "w": []}


class _Collect(IRVisitor):
    """Every shared access in a statement, in program order (no barriers: used for divergent code)."""

    def __init__(self, shared, scope, db):
        super().__init__()
        self.shared, self.scope, self.db, self.out, self.stmt = shared, scope, db, [], None

    def visit_Load(self, e):
        if e.buffer_var in self.shared:
            self.out.append(_Acc(e.buffer_var, False, _index(e.index), self.scope.thread, False, self.stmt,
                                 dt.element_of(e.dtype), self.scope.ranges, self.scope.guards))
        self.generic_visit(e)

    def visit_Call(self, e):
        # a pointer into shared memory handed to an intrinsic (a tensor-core load or store): the
        # intrinsic may touch any element of the region, from any lane
        if e.op == "tvm_access_ptr" and len(e.args) == 5 and e.args[1] in self.shared:
            mask = e.args[4].value if isinstance(e.args[4], IntImm) else 3
            dtype = e.args[0].value if hasattr(e.args[0], "value") else None
            for write in (False, True):
                if mask & (2 if write else 1):
                    self.out.append(_Acc(e.args[1], write, None, self.scope.thread, self.db and write, self.stmt,
                                         dtype))
        self.generic_visit(e)

    def visit_Store(self, s):
        self.stmt = s
        self.visit(s.value)
        self.visit(s.index)
        if s.predicate is not None:
            self.visit(s.predicate)
        if s.buffer_var in self.shared:
            self.out.append(_Acc(s.buffer_var, True, _index(s.index), self.scope.thread, self.db, s,
                                 dt.element_of(s.value.dtype), self.scope.ranges, self.scope.guards))

    def visit_IfThenElse(self, s):
        self.visit(s.condition)
        outer, self.scope = self.scope, self.scope.with_guard(s.condition)
        self.visit(s.then_case)
        self.scope = outer
        if s.else_case is not None:
            self.visit(s.else_case)

    def visit_AttrStmt(self, s):
        outer, odb = self.scope, self.db
        self.scope = self.scope.enter(s)
        self.db = self.db or s.attr_key == DOUBLE_BUFFER_WRITE
        self.generic_visit(s)
        self.scope, self.db = outer, odb


# ---------------------------------------------------------------- planning
class _Planner:
    """Plans barriers bottom-up.  ``where`` is None at a uniform point, else the description of the
    thread-dependent construct around: there a needed barrier is an error instead of an insertion."""

    def __init__(self, shared):
        self.shared = shared

    def accesses(self, s, scope, db=False, stmt=None):
        """The shared accesses of statement (or expression) ``s``; ``stmt`` names where they are."""
        c = _Collect(self.shared, scope, db)
        c.stmt = stmt if stmt is not None else s
        c.visit(s)
        return c.out

    # plan() returns (new statement, summary): the statement's shared accesses in order, with
    # SYNC where a barrier that every thread passes lies between them.
    def plan(self, s, scope, db, where=None):
        if is_barrier(s):
            return s, ([SYNC] if where is None else [])     # a divergent one: the build check names it
        if isinstance(s, SeqStmt):
            return self.plan_seq(list(s.seq), scope, db, where)
        if isinstance(s, (Allocate, LetStmt, AttrStmt)):
            inner_db = db or (isinstance(s, AttrStmt) and s.attr_key == DOUBLE_BUFFER_WRITE)
            body, summ = self.plan(s.body, scope.enter(s), inner_db, where)
            return s.replace(body=body), summ
        if isinstance(s, IfThenElse):
            w = where
            if w is None and not scope.uniform(s.condition):
                parts = self.distribute(s, scope)
                if len(parts) > 1:
                    return self.plan_seq(parts, scope, db, None)
                w = f"`if ({astext(s.condition)})`"
            cond = self.accesses(s.condition, scope, db, s)        # read before either branch
            then, a = self.plan(s.then_case, scope.with_guard(s.condition), db, w)
            other, b = (None, []) if s.else_case is None else self.plan(s.else_case, scope, db, w)
            # either branch may not run: a barrier inside one does not order what is around the if
            return s.replace(then_case=then, else_case=other), cond + [x for x in a + b if x is not SYNC]
        if isinstance(s, For):
            w = where
            if w is None and not scope.uniform(s.extent):
                w = (f"the loop over {s.loop_var.name}, whose trip count `{astext(s.extent)}` differs "
                     "between threads")
            bounds = self.accesses(s.min, scope, db, s) + self.accesses(s.extent, scope, db, s)
            new, summ = self.plan_loop(s, scope.enter(s), db, w)
            return new, bounds + summ
        if isinstance(s, While):
            body, _ = self.plan(s.body, scope, db, where or f"`while ({astext(s.condition)})`")
            return s, self.accesses(s, scope, db)
        return s, self.accesses(s, scope, db)

    def plan_seq(self, items, scope, db, where):
        if where is None:
            items = [y for x in items for y in self.distribute(x, scope)]
        pending, out, summary = _fresh(), [], []
        for x in items:
            new, summ = self.plan(x, scope, db, where)
            hit = _needs_sync(pending, summ)
            if hit:
                if where is not None:
                    raise _divergent_handoff(hit, where)
                out.append(barrier())
                pending = _fresh()
                summary.append(SYNC)
            out.append(new)
            summary.extend(summ)
            _absorb(pending, summ)
        return seq(*_join(out)), summary

    def plan_loop(self, s, scope, db, where):
        body, summ = self.plan(s.body, scope, db, where)
        end = _fresh()
        _absorb(end, summ)
        hit = _needs_sync(end, summ, loop_carry=Loop(s, scope))
        if hit:
            if where is not None:
                raise _divergent_handoff(hit, where)
            body = seq(body, barrier())
            summ = summ + [SYNC]
        if where is not None or not (isinstance(s.extent, IntImm) and s.extent.value > 0):
            summ = [x for x in summ if x is not SYNC]      # it may run zero times
        if not db:       # the double-buffered loop itself: once it is over, its tiles are plain writes
            summ = [x if x is SYNC else x.plain() for x in summ]
        return s.replace(body=body), summ

    def distribute(self, s, scope):
        """``if c {a; b}`` with thread-dependent, memory-free ``c`` as ``[if c {a}, if c {b}]``."""
        if isinstance(s, IfThenElse) and s.else_case is None and not scope.uniform(s.condition) \
                and _stable(s.condition):
            parts = [y for x in _items(s.then_case) for y in self.distribute(x, scope)]
            return [IfThenElse(s.condition, p) for p in parts] if len(parts) > 1 else [s]
        if isinstance(s, AttrStmt) and s.attr_key == DOUBLE_BUFFER_WRITE:
            parts = [y for x in _items(s.body) for y in self.distribute(x, scope)]
            return [s.replace(body=p) for p in parts] if len(parts) > 1 else [s]
        return [s]


def _join(items):
    """Join neighbouring ``if c {..}`` (same condition, no else) and double-buffer attrs."""
    out = []
    for x in items:
        prev = out[-1] if out else None
        if (isinstance(x, IfThenElse) and isinstance(prev, IfThenElse) and x.else_case is None
                and prev.else_case is None and same_expr(x.condition, prev.condition)):
            out[-1] = prev.replace(then_case=seq(*_join([*_items(prev.then_case), *_items(x.then_case)])))
        elif (isinstance(x, AttrStmt) and isinstance(prev, AttrStmt) and x.attr_key == DOUBLE_BUFFER_WRITE
              and prev.attr_key == DOUBLE_BUFFER_WRITE):
            out[-1] = prev.replace(body=seq(*_join([*_items(prev.body), *_items(x.body)])))
        else:
            out.append(x)
    return out


def _items(s):
    return list(s.seq) if isinstance(s, SeqStmt) else [s]


def _describe(a):
    what = "writes" if a.write else "reads"
    idx = astext(a.index) if a.index is not None else "?"
    return f"{what} {a.buf.name}[{idx}]"


def _divergent_handoff(hit, where):
    prev, cur = hit
    return LoweringError(
        f"a barrier is needed between `{astext(prev.stmt).strip()}` ({_describe(prev)}) and "
        f"`{astext(cur.stmt).strip()}` ({_describe(cur)}), but both run under {where}, which differs "
        "between threads of a block, and a barrier there would hang the GPU; bind the stage so the "
        "hand-off happens outside thread-dependent conditions (e.g. compute the shared stage at an "
        "outer loop, or split it so every thread takes part)")


class _Shared(IRVisitor):
    def __init__(self):
        super().__init__()
        self.vars = set()

    def visit_Allocate(self, s):
        if s.scope in ("shared", "shared.dyn") or str(s.scope).startswith("shared:"):
            self.vars.add(s.buffer_var)
        self.generic_visit(s)


def thread_sync(stmt):
    """Insert shared-memory barriers into ``stmt`` (AST3 with Allocate scope "shared")."""
    found = _Shared()
    found.visit(stmt)
    if not found.vars:
        return stmt
    threads = []          # every thread index varies, also where used outside its own attribute
    post_order_visit(stmt, lambda n: threads.append(n.node.var) if isinstance(n, AttrStmt)
                     and n.attr_key == "thread_extent" and is_thread_index(n.node) else None)
    new, _ = _Planner(found.vars).plan(stmt, _Scope(threads), False)
    return new


# ---------------------------------------------------------------- build-time check
def check_uniform_barriers(kernel):
    """Raise DivergentBarrierError when a barrier of ``kernel`` (a PrimFunc from ``split_host_device``)
    lies under control flow that differs between threads of a block."""
    threads = [v for tag, v in kernel.attrs.get("thread_vars", {}).items() if tag.startswith("threadIdx")]
    _check(kernel.body, _Scope(threads), [], kernel.name)


def _check(s, scope, where, name):
    if is_barrier(s):
        if where:
            raise DivergentBarrierError(
                f"{name}: the barrier (tvm_storage_sync, CUDA's __syncthreads()) is reached only by the "
                f"threads for which {where[-1]}, which depends on threadIdx; the threads that skip it leave "
                "the others of their block waiting forever. A barrier must be reached by every thread of "
                "the block: put it outside thread-dependent conditions and loops")
        return
    if isinstance(s, SeqStmt):
        for x in s.seq:
            _check(x, scope, where, name)
    elif isinstance(s, (Allocate, LetStmt, AttrStmt)):
        _check(s.body, scope.enter(s), where, name)
    elif isinstance(s, IfThenElse):
        same = scope.uniform(s.condition)
        _check(s.then_case, scope, where if same else where + [f"`{astext(s.condition)}` holds"], name)
        if s.else_case is not None:
            _check(s.else_case, scope, where if same else where + [f"`{astext(s.condition)}` is false"],
                   name)
    elif isinstance(s, For):
        w = where if scope.uniform(s.extent) else where + [
            f"the loop over {s.loop_var.name} runs another iteration (its trip count is "
            f"`{astext(s.extent)}`)"]
        _check(s.body, scope.enter(s), w, name)
    elif isinstance(s, While):
        w = where if scope.uniform(s.condition) else where + [
            f"the while loop's condition `{astext(s.condition)}` holds"]
        _check(s.body, scope, w, name)
