"""InstrumentBoundCheckers: every buffer access checked against its buffer's size at run time.

With config ``tir.instrument_bound_checkers`` each statement that reads or
writes a buffer of known size (a function argument, an allocation) is preceded
by an assertion per access, ``0 <= index < size``, naming the buffer; on the
llvm target a failed assertion makes the function return an error code and
the runtime raises ``RuntimeArgError`` ("out of bounds: buffer 'A' ...")
instead of the kernel touching memory it does not own.

A read under ``if_then_else`` / ``select`` is checked only where its condition
holds (padding that reads outside its tensor only when the value is discarded
is fine).  Vector accesses check their first and last lane (a ramp of constant
stride); masked vector accesses and gathers are not checked.
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.expr import IntImm, Ramp
from ..ir.functor import IRMutator, IRVisitor
from ..ir.printer import astext
from ..ir.stmt import AssertStmt


def _size(shape, dtype):
    """Scalars in a buffer of ``shape`` and ``dtype`` (int64 when a dimension is): indices count
    scalars, so a buffer of vector elements holds ``lanes`` per element."""
    wide = any(getattr(_op.convert(d), "dtype", "int32") == "int64" for d in shape)
    n = _op.const(dt.lanes(dtype), "int64" if wide else "int32")
    for d in shape:
        n = _op.mul(n, _op.cast(n.dtype, d))
    return n


class _Accesses(IRVisitor):
    """(buffer var, index, guard, "read"/"write") of the accesses in an expression."""

    def __init__(self, sizes):
        super().__init__()
        self.sizes, self.guards, self.found = sizes, [], []

    def _guarded(self, cond, then_e, else_e):
        self.visit(cond)
        self.guards.append(cond)
        self.visit(then_e)
        self.guards[-1] = _op.logical_not(cond)
        self.visit(else_e)
        self.guards.pop()

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return self._guarded(*e.args)
        self.generic_visit(e)

    def visit_Select(self, e):
        self._guarded(e.condition, e.true_value, e.false_value)

    def visit_Load(self, e):
        self.visit(e.index)
        if e.buffer_var in self.sizes and e.predicate is None:
            self.found.append((e.buffer_var, e.index, list(self.guards), "read"))


def _check(var, index, guards, what, size, name, ana):
    """The assertion ``index`` is inside ``var``'s ``size`` elements, or None when it is not needed
    (provably inside) or cannot be written."""
    if isinstance(index, Ramp):
        if not isinstance(index.stride, IntImm) or index.stride.value < 0:
            return None
        lo, hi = index.base, _op.add(index.base, _op.mul(index.stride, index.lanes - 1))
    elif dt.lanes(index.dtype) == 1:
        lo = hi = index
    else:
        return None                        # a gather: lanes anywhere
    t = "int64" if "int64" in (lo.dtype, hi.dtype, size.dtype) else "int32"
    lo, hi = _op.cast(t, lo), _op.cast(t, hi)
    cond = _op.logical_and(_op.ge(lo, _op.const(0, t)), _op.lt(hi, _op.cast(t, size)))
    if ana.can_prove(cond):
        return None
    for g in guards:
        cond = _op.logical_or(_op.logical_not(g), cond)
    if isinstance(cond, IntImm) and cond.value:
        return None
    msg = (f"out of bounds: buffer '{name}' {what} at index {astext(index)} outside [0, {astext(size)})")
    return cond, msg


class _Instrument(IRMutator):
    def __init__(self, sizes, names):
        super().__init__()
        self.sizes, self.names = sizes, names
        from ..ir.arith import Analyzer
        self.ana = Analyzer()

    def visit_For(self, s):
        from ..ir.tensor import Range
        self.ana.bind(s.loop_var, Range(s.min, s.extent))
        return self.generic_visit(s)

    def _wrap(self, stmt, exprs, write=None):
        acc = _Accesses(self.sizes)
        for e in exprs:
            if e is not None:
                acc.visit(e)
        found = acc.found
        if write is not None and write.buffer_var in self.sizes and write.predicate is None:
            found = found + [(write.buffer_var, write.index, [], "written")]
        for var, index, guards, what in reversed(found):
            chk = _check(var, index, guards, what, self.sizes[var], self.names[var], self.ana)
            if chk is not None:
                stmt = AssertStmt(chk[0], chk[1], stmt)
        return stmt

    def visit_Store(self, s):
        return self._wrap(s, [s.value, s.index], write=s)

    def visit_Evaluate(self, s):
        return self._wrap(s, [s.value])

    def visit_IfThenElse(self, s):
        out = self.generic_visit(s)
        return self._wrap(out, [s.condition])

    def visit_LetStmt(self, s):
        out = self.generic_visit(s)
        return self._wrap(out, [s.value])

    def visit_Allocate(self, s):
        self.sizes[s.buffer_var] = _size(s.extents, s.dtype)
        self.names[s.buffer_var] = s.buffer_var.name
        return self.generic_visit(s)


def instrument_bound_checkers(stmt, buffer_map):
    """``stmt`` with a bound assertion before every access of a buffer whose size is known."""
    sizes = {var: _size(buf.shape, buf.dtype) for var, buf in buffer_map.items()}
    names = {var: buf.name for var, buf in buffer_map.items()}
    return _Instrument(sizes, names).visit(stmt)

