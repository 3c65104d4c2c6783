"""InjectRollingBuffer: a tile buffer that slides with its loop keeps the rows it already holds.

``s[B].rolling_buffer()`` marks the realize of a stage computed at a tiled loop
with the attribute ``rolling_buffer_scope`` (AST2).  Here, for each marked
tensor:

- the *rolling loop* is the outermost loop around the realize whose variable
  moves the realized region; the *rolling axis* is the first dimension whose
  start moves with that loop alone;
- the realize moves out of the rolling loop.  Along the rolling axis it keeps
  the region's constant extent ``E`` and every access goes to ``index mod E``
  (a circular buffer); the other dimensions cover every region the loops
  inside the rolling loop visit (clipped to the tensor's shape);
- a store is skipped when the previous iteration of a loop held the same
  element: for a loop ``v`` moving dimensions ``D``, the element was written
  at ``v - 1`` when every index of ``D`` lies in that iteration's region
  (``v > first and all(lo_d(v-1) <= i_d < lo_d(v-1) + E_d)``).

Why it is correct: a skipped element was needed by the iteration before, so
it was stored then (by induction); in between, the rows written along the
rolling axis all lie in two consecutive regions that both contain its row, so
no other row maps to its slot mod ``E``.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import NEG_INF, POS_INF, Analyzer
from ..ir.expr import IntImm, ProducerLoad
from ..ir.functor import IRMutator, IRVisitor, collect_vars, substitute
from ..ir.stmt import IfThenElse, ProducerRealize, ProducerStore
from ..ir.tensor import Range

ROLLING_BUFFER_SCOPE = "rolling_buffer_scope"
_HOISTED_ATTRS = ("buffer_dim_align", "buffer_dim_order")      # attributes of a realize that move with it
_IN_ORDER = ("serial", "unrolled")


def _truthy(v):
    return not isinstance(v, IntImm) or v.value != 0


def rolling_tensors(stmt):
    """{id(tensor): tensor} of the tensors marked ``rolling_buffer_scope`` in ``stmt``."""
    found = {}

    class V(IRVisitor):
        def visit_AttrStmt(self, s):
            if s.attr_key == ROLLING_BUFFER_SCOPE and _truthy(s.value):
                found[id(s.node)] = s.node
            self.generic_visit(s)
    V().visit(stmt)
    return found


def inject_rolling_buffer(stmt):
    """``stmt`` (AST2) with every marked realize made a rolling buffer; unchanged without marks."""
    marked = rolling_tensors(stmt)
    if not marked:
        return stmt
    return _Injector(marked).visit(stmt)


class _Info:
    """How accesses to one rolling tensor change: its rolling axis and extent, and the guard."""

    def __init__(self, tensor, axis, extent, moves):
        self.tensor, self.axis, self.extent = tensor, axis, extent
        self.moves = moves       # [(loop For, [(dim, lo_d, E_d)])]: the dims each loop moves

    def index(self, idx):
        idx = list(idx)
        idx[self.axis] = _op.floormod(idx[self.axis], self.extent)
        return tuple(idx)

    def fresh(self, idx, ana):
        """True where the element at ``idx`` was not stored by the previous iteration of any loop."""
        conds = []
        for loop, dims in self.moves:
            v = loop.loop_var
            prev = _op.sub(v, 1)
            held = _op.gt(v, loop.min)
            for d, lo, ext in dims:
                lo_p, ext_p = substitute(lo, {v: prev}), substitute(ext, {v: prev})
                held = _op.logical_and(held, _op.logical_and(_op.ge(idx[d], lo_p),
                                                             _op.lt(idx[d], _op.add(lo_p, ext_p))))
            conds.append(_op.logical_not(ana.simplify(held)))
        out = None
        for c in conds:
            c = ana.simplify(c)
            if isinstance(c, IntImm) and c.value:
                continue
            out = c if out is None else _op.logical_and(out, c)
        return out


class _Injector(IRMutator):
    def __init__(self, marked):
        super().__init__()
        self.marked = marked
        self.loops = []          # enclosing For nodes, outermost first
        self.info = {}           # id(tensor) -> _Info
        self.hoist = {}          # id(rolling loop var) -> [(new realize, [attrs])]
        self.attrs = {}          # id(tensor) -> attributes of its realize to move with it
        self.ana = Analyzer()

    def visit_For(self, s):
        self.loops.append(s)
        self.ana.bind(s.loop_var, Range(s.min, s.extent))
        try:
            out = self.generic_visit(s)
        finally:
            self.loops.pop()
        for realize, attrs in self.hoist.pop(id(s.loop_var), ()):
            out = realize.replace(body=out)
            for a in attrs:
                out = a.replace(body=out)
        return out

    def visit_AttrStmt(self, s):
        if id(s.node) in self.marked:
            if s.attr_key == ROLLING_BUFFER_SCOPE:
                return self.visit(s.body)
            if s.attr_key in _HOISTED_ATTRS:
                self.attrs.setdefault(id(s.node), []).append(s)
                return self.visit(s.body)
        return self.generic_visit(s)

    def visit_ProducerRealize(self, s):
        t = s.producer
        if id(t) not in self.marked:
            return self.generic_visit(s)
        loop, info, bounds = self._plan(s)
        self.info[id(t)] = info
        body = self.visit(s.body)
        attrs = self.attrs.pop(id(t), [])
        self.hoist.setdefault(id(loop.loop_var), []).append(
            (ProducerRealize(t, bounds, s.condition, body, s.storage_scope), attrs))
        return body

    def visit_ProducerStore(self, s):
        s2 = self.generic_visit(s)
        info = self.info.get(id(s2.producer))
        if info is None:
            return s2
        out = ProducerStore(s2.producer, s2.value, info.index(s2.indices))
        cond = info.fresh(s2.indices, self.ana)
        return out if cond is None else IfThenElse(_op.likely(cond), out)

    def visit_ProducerLoad(self, e):
        e2 = self.generic_visit(e)
        info = self.info.get(id(e2.producer))
        return e2 if info is None else ProducerLoad(e2.producer, info.index(e2.indices))

    # ------------------------------------------------------------ analysis
    def _plan(self, s):
        """The rolling loop, the accesses' rewrite and the hoisted realize's bounds of realize ``s``."""
        t = s.producer
        name = f"rolling_buffer of {t.name}"
        pos = {id(f.loop_var): k for k, f in enumerate(self.loops)}
        moved_by = [sorted({pos[id(v)] for v in collect_vars(r.min) if id(v) in pos}) for r in s.bounds]
        first = min((k for ks in moved_by for k in ks), default=None)
        if first is None:
            raise LoweringError(f"{name}: its region does not move with any loop around it; compute "
                                "it at a loop of a tiled consumer (s[B].compute_at(s[C], xo))")
        axis = next((d for d, ks in enumerate(moved_by) if ks == [first]), None)
        rolling = self.loops[first]
        if axis is None:
            raise LoweringError(f"{name}: no dimension moves with loop {rolling.loop_var.name} alone")
        ext = self.ana.simplify(s.bounds[axis].extent)
        if not isinstance(ext, IntImm):
            raise LoweringError(f"{name}: the region along dimension {axis} has extent {ext}; a rolling "
                                "buffer needs a constant one")
        for f in self.loops[first:]:
            if f.kind not in _IN_ORDER:
                raise LoweringError(f"{name}: loop {f.loop_var.name} around it is {f.kind}; the loops "
                                    f"from {rolling.loop_var.name} inward must run in order (serial)")
        moves = []
        for k, f in enumerate(self.loops[first:], first):
            dims = [(d, r.min, r.extent) for d, (r, ks) in enumerate(zip(s.bounds, moved_by)) if k in ks]
            if dims:
                moves.append((f, dims))
        relax = {f.loop_var: Range(f.min, f.extent) for f in self.loops[first:]}
        bounds = []
        for d, r in enumerate(s.bounds):
            if d == axis:
                bounds.append(Range(_op.const(0, "int32"), ext))
                continue
            lo = self.ana.int_set(r.min, relax).min
            hi = self.ana.int_set(_op.add(r.min, r.extent), relax).max
            lo = _op.const(0, "int32") if lo is NEG_INF else self.ana.simplify(_op.max(lo, 0))
            hi = t.shape[d] if hi is POS_INF else self.ana.simplify(_op.min(hi, t.shape[d]))
            bounds.append(Range(lo, self.ana.simplify(_op.sub(hi, lo))))
        return rolling, _Info(t, axis, ext, moves), tuple(bounds)
