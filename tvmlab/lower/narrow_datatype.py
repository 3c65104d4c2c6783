"""NarrowDataType: index arithmetic in ``target_bits`` integers where the bounds allow.

A 64-bit loop (or thread) variable whose every index expression provably fits
in ``target_bits`` becomes a ``target_bits`` variable, and each index
expression (load and store indices, loop bounds, thread extents) whose value
and every intermediate value fit is computed in that narrower type.  Nothing
is ever widened: an int32 loop stays int32 with ``target_bits=32`` even where
its index arithmetic could overflow.  Where a narrowed variable meets wider
arithmetic it is cast back, so the result never changes.  The one widening: a
thread index narrower than its extent whose index arithmetic does not fit the
target takes its extent's type (thread variables follow their extent's dtype).
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import (Add, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, Sub, Var)
from ..ir.functor import IRMutator, IRVisitor
from ..ir.stmt import AttrStmt, For

_ARITH = {Add: _op.add, Sub: _op.sub, Mul: _op.mul, FloorDiv: _op.floordiv, FloorMod: _op.floormod,
          Min: _op.min, Max: _op.max}


def _int_scalar(x):
    """A scalar integer value (statement calls have dtype "void")."""
    d = getattr(x, "dtype", None)
    return isinstance(d, str) and d not in ("void", "handle") and dt.is_int(d) and dt.lanes(d) == 1


def _is_index(e):
    return (isinstance(e, Var) and e.dtype not in ("void", "handle")) or _int_scalar(e)


def _thread_var(s):
    if s.attr_key not in ("thread_extent", "virtual_thread"):
        return None
    v = getattr(s.node, "var", s.node)
    return v if isinstance(v, Var) else None


class _Bounds:
    def __init__(self, bits):
        self.lo, self.hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        self.ana = Analyzer()

    def fits(self, e):
        if not dt.is_int(e.dtype):
            return False
        lo, hi = self.ana.bounds(e)
        return lo >= self.lo and hi <= self.hi

    def all_fit(self, e):
        """Whether ``e`` and every integer value computed inside it fit."""
        ok = [True]

        class V(IRVisitor):
            def generic_visit(v, x):
                if ok[0] and _int_scalar(x) and not self.fits(x):
                    ok[0] = False
                if ok[0]:
                    IRVisitor.generic_visit(v, x)
        V().visit(e)
        return ok[0]


class _Collect(IRVisitor):
    """Which loop / thread variables take part in index values that do not fit."""

    def __init__(self, bounds):
        super().__init__()
        self.b = bounds
        self.wide = set()
        self.candidates = []
        self.extent_dtype = {}    # thread variable -> dtype of its extent

    def _index(self, e):
        if e is None or not _is_index(e) or dt.lanes(e.dtype) != 1:
            return

        class V(IRVisitor):
            def generic_visit(v, x):
                if _int_scalar(x) and not self.b.fits(x):
                    from ..ir.functor import collect_vars
                    self.wide.update(collect_vars(x))
                IRVisitor.generic_visit(v, x)
        V().visit(e)

    def _bind(self, var, mn, ext, body_visit):
        self.candidates.append(var)
        self._index(mn)
        self._index(_op.add(mn, ext))
        self.b.ana.bind(var, _range(mn, ext))
        body_visit()

    def visit_For(self, s):
        self._bind(s.loop_var, s.min, s.extent, lambda: self.visit(s.body))

    def visit_AttrStmt(self, s):
        v = _thread_var(s)
        if v is None or not _is_index(s.value):
            return self.generic_visit(s)
        self.extent_dtype[v] = s.value.dtype
        self._bind(v, _op.const(0, s.value.dtype), s.value, lambda: self.visit(s.body))

    def visit_Store(self, s):
        self._index(s.index)
        self.generic_visit(s)

    def visit_Load(self, e):
        self._index(e.index)
        self.generic_visit(e)


def _range(mn, ext):
    from ..ir.tensor import Range
    return Range(mn, ext)


class _Rewrite(IRMutator):
    def __init__(self, bounds, bits, vmap):
        super().__init__()
        self.b, self.bits, self.vmap = bounds, bits, vmap
        self.target = f"int{bits}"
        self.widened = {v for v, nv in vmap.items() if dt.bits(nv.dtype) > dt.bits(v.dtype)}

    def visit_Cast(self, e):
        if isinstance(e.value, Var) and e.value in self.widened and self.vmap[e.value].dtype == e.dtype:
            return self.vmap[e.value]
        return self.generic_visit(e)

    # variables outside index positions keep their type through a cast
    def visit_Var(self, v):
        nv = self.vmap.get(v)
        return v if nv is None else _op.cast(v.dtype, nv)

    def _narrow(self, e):
        """``e`` computed in the narrow type when it and all its parts fit, else as it was."""
        if not _is_index(e) or dt.lanes(e.dtype) != 1 or dt.bits(e.dtype) <= self.bits:
            return self.visit(e)
        lo, hi = self.b.ana.bounds(e)
        if lo == hi and self.b.lo <= lo <= self.b.hi:
            # an index the bounds pin to one value (a constant index clamped into range) is that
            # constant, even where the arithmetic spelling it out uses wider constants
            return _op.const(int(lo), self.target)
        if not self.b.all_fit(e):
            return self.visit(e)
        return self._in_narrow(e)

    def _in_narrow(self, e):
        t = self.target
        if isinstance(e, Var):
            nv = self.vmap.get(e)
            return _op.cast(t, e) if nv is None else nv
        if isinstance(e, IntImm):
            return _op.const(e.value, t)
        if isinstance(e, Cast) and _is_index(e.value):
            return self._in_narrow(e.value) if dt.bits(e.value.dtype) >= self.bits else _op.cast(t, self.visit(e.value))
        fn = _ARITH.get(type(e))
        if fn is not None:
            return fn(self._in_narrow(e.a), self._in_narrow(e.b))
        return _op.cast(t, self.visit(e))

    def visit_Store(self, s):
        out = self.generic_visit(s)
        return out.replace(index=self._narrow(s.index)) if out.index is not None else out

    def visit_Load(self, e):
        out = self.generic_visit(e)
        return out.replace(index=self._narrow(e.index))

    def visit_For(self, s):
        nv = self.vmap.get(s.loop_var)
        body = self.visit(s.body)
        if nv is None:
            return For(s.loop_var, self.visit(s.min), self.visit(s.extent), s.kind, body, s.annotations)
        return For(nv, self._to(s.min), self._to(s.extent), s.kind, body, s.annotations)

    def _to(self, e):
        out = self._narrow(e)
        return out if out.dtype == self.target else _op.cast(self.target, out)

    def visit_AttrStmt(self, s):
        v = _thread_var(s)
        nv = self.vmap.get(v) if v is not None else None
        if nv is None:
            return self.generic_visit(s)
        node = s.node
        if not isinstance(node, Var):
            from ..ir.tensor import IterVar
            node = IterVar(node.dom, nv, node.iter_type, node.thread_tag)
        else:
            node = nv
        value = self.visit(s.value) if v in self.widened else self._to(s.value)
        return AttrStmt(node, s.attr_key, value, self.visit(s.body))


class _Wide(IRVisitor):
    """Whether any index (loop bound, thread extent, load or store index) is wider than the target."""

    def __init__(self, bits):
        super().__init__()
        self.bits, self.found = bits, False

    def _check(self, e):
        if e is not None and not self.found and _is_index(e) and dt.bits(e.dtype) > self.bits:
            self.found = True

    def visit_For(self, s):
        self._check(s.loop_var)
        self.generic_visit(s)

    def visit_AttrStmt(self, s):
        if _thread_var(s) is not None:
            self._check(s.value)
        self.generic_visit(s)

    def visit_Store(self, s):
        self._check(s.index)
        self.generic_visit(s)

    def visit_Load(self, e):
        self._check(e.index)
        self.generic_visit(e)


def narrow_datatype(stmt, target_bits=32):
    """``stmt`` with index variables and index arithmetic narrowed to ``target_bits`` where they fit."""
    wide = _Wide(target_bits)
    wide.visit(stmt)
    if not wide.found:
        return stmt
    bounds = _Bounds(target_bits)
    c = _Collect(bounds)
    c.visit(stmt)
    vmap = {}
    for v in c.candidates:
        if v not in c.wide and dt.bits(v.dtype) > target_bits and v not in vmap:
            vmap[v] = Var(v.name, f"int{target_bits}")
        ext = c.extent_dtype.get(v)
        if v in c.wide and ext is not None and dt.bits(ext) > dt.bits(v.dtype) and v not in vmap:
            # a thread index counts up to its extent: where that overflows its own type, it
            # takes the extent's (TVM's thread variables follow their extent's dtype)
            vmap[v] = Var(v.name, ext)
    return _Rewrite(bounds, target_bits, vmap).visit(stmt)

