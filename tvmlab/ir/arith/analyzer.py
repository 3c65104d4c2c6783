"""The Analyzer: one object that knows variable ranges and answers arithmetic questions.

    ana = Analyzer()
    ana.bind(i, Range(0, n))                  # i in [0, n)
    ana.simplify(floordiv(i * 8 + j, 8))      # -> i when j is bound to [0, 8)
    ana.can_prove(i < n)                      # -> True
    with ana.with_bindings(k, Range(0, 4)):   # bindings scoped to a loop body
        ...

A variable is bound either to a range (``Range``, ``(min, extent)`` or an
``IntervalSet``) or to an expression, in which case it is substituted.
Results are memoised and the memo is dropped whenever a binding changes.
"""
from __future__ import annotations

import contextlib
import math

from ...errors import DSLError, LoweringError
from .. import op as _op
from ..expr import IntImm, SizeVar, Var
from ..functor import uses_var
from ..stmt import Stmt
from ..tensor import IterVar, Range
from . import int_bound as IB
from .interval import NEG_INF, POS_INF, IntervalSet, relax
from .keys import KeyCache
from .divmod import is_index
from .rewrite import Simplifier, truth

_MISSING = object()


class ConstIntBound:
    """Inclusive integer bounds (TVM's ``tvm.arith.ConstIntBound``); ``POS_INF`` / ``NEG_INF`` mark an
    unbounded side."""
    POS_INF = (1 << 63) - 1
    NEG_INF = -POS_INF

    def __init__(self, min_value, max_value):
        self.min_value = min_value
        self.max_value = max_value

    def __repr__(self):
        return f"ConstIntBound(min_value={self.min_value}, max_value={self.max_value})"


class _Binding:
    """What is known about one variable: ``expr`` (substituted) or inclusive ``lo``/``hi``."""

    __slots__ = ("expr", "lo", "hi", "bound", "symbolic")

    def __init__(self, expr=None, lo=NEG_INF, hi=POS_INF, bound=IB.EVERYTHING):
        self.expr, self.lo, self.hi, self.bound = expr, lo, hi, bound
        # relaxing symbolic ends can prove more than constant bounds do
        self.symbolic = expr is None and any(
            x is not NEG_INF and x is not POS_INF and not _is_const(x) for x in (lo, hi))


def _is_const(x):
    return type(x) is IntImm


def _as_var(v):
    if isinstance(v, IterVar):
        return v.var
    if isinstance(v, Var):
        return v
    raise DSLError(f"Analyzer.bind expects a Var or IterVar, got {type(v).__name__}: {v!r}")


class Analyzer:
    """Simplifier, bound analysis and prover sharing one set of variable bindings."""

    def __init__(self, merge_digits=False):
        """``merge_digits``: also put an index taken apart into digits back together,
        ``(x // b) % a * b + x % b`` -> ``x % (a * b)`` (for analyses that compare indices; left off by
        default, as the digits keep a vector index's lanes provably in one row)."""
        self.merge_digits = merge_digits
        self._bindings = {}
        self._depth = 0            # > 0 while proving: no nested symbolic relaxation
        self._keys = KeyCache()
        self._bound = IB.ConstIntBound(self._var_bound)
        self._simplifier = Simplifier(self)

    # ------------------------------------------------------------ bindings
    def _var_bound(self, v):
        b = self._bindings.get(v)
        return None if b is None else b.bound

    def _changed(self):
        self._bound.clear()
        self._simplifier.clear()

    def bind(self, var, value):
        """Bind ``var`` to a range (Range, (min, extent), IntervalSet) or to an expression."""
        var = _as_var(var)
        if self._bindings.pop(var, None) is not None:
            self._changed()
        binding = self._make_binding(var, value)
        self._bindings[var] = binding
        self._changed()

    def _make_binding(self, var, value):
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise DSLError(f"bind of {var.name}: expected (min, extent), got {value!r}")
            value = Range(_op.convert(value[0]), _op.convert(value[1]))
        if isinstance(value, Range):
            mn = _op.convert(value.min)
            lo, hi = mn, _op.sub(_op.add(mn, value.extent), 1)
        elif isinstance(value, IntervalSet):
            lo, hi = value.min, value.max
        else:
            e = _op.convert(value)
            if uses_var(e, lambda v: v is var):
                raise LoweringError(f"cannot bind {var.name} to {e}: "
                                    f"the value uses {var.name} itself")
            e = self.simplify(e)
            return _Binding(expr=e, bound=self._bound(e))
        for x in (lo, hi):
            if x is not NEG_INF and x is not POS_INF and uses_var(x, lambda v: v is var):
                raise LoweringError(f"cannot bind {var.name} to a range that uses {var.name}: "
                                    f"[{lo}, {hi}]")
        lo = lo if lo is NEG_INF else self.simplify(lo)
        hi = hi if hi is POS_INF else self.simplify(hi)
        bound = (-math.inf if lo is NEG_INF else self._bound(lo)[0],
                 math.inf if hi is POS_INF else self._bound(hi)[1])
        bound = IB.intersect(bound, IB.dtype_bound(var.dtype, isinstance(var, SizeVar)))
        return _Binding(lo=lo, hi=hi, bound=bound)

    @contextlib.contextmanager
    def with_bindings(self, bindings, value=_MISSING):
        """Bind temporarily: ``with ana.with_bindings(i, Range(0, n)):`` or with a dict."""
        if value is not _MISSING:
            items = [(bindings, value)]
        elif isinstance(bindings, dict):
            items = list(bindings.items())
        else:
            items = list(bindings)
        items = [(_as_var(v), x) for v, x in items]
        saved = [(v, self._bindings.get(v)) for v, _ in items]
        try:
            for v, x in items:
                self.bind(v, x)
            yield self
        finally:
            for v, old in reversed(saved):
                if old is None:
                    self._bindings.pop(v, None)
                else:
                    self._bindings[v] = old
            self._changed()

    # ------------------------------------------------------------ queries
    def simplify(self, expr):
        """An equal, simpler expression (canonical: equal inputs give equal outputs)."""
        if isinstance(expr, Stmt):
            raise DSLError("Analyzer.simplify takes an expression; "
                           "use tvmlab.lower.simplify.simplify_stmt for statements")
        return self._simplifier.visit(_op.convert(expr))

    def can_prove(self, cond):
        """True only if ``cond`` holds for every value of the bound variables."""
        return truth(self.simplify(cond)) is True

    def can_prove_equal(self, a, b):
        a, b = _op.convert(a), _op.convert(b)
        if is_index(a.dtype) and is_index(b.dtype):
            d = self.simplify(_op.sub(a, b))
            return _is_const(d) and d.value == 0
        return self._keys(self.simplify(a)) == self._keys(self.simplify(b))

    def bounds(self, expr):
        """(lo, hi) inclusive as Python ints; ``-inf``/``inf`` where unbounded."""
        e = _op.convert(expr)
        return IB.intersect(self._bound(e), self._bound(self.simplify(e)))

    # ---- TVM's spellings (tvm.arith.Analyzer)

    def const_int_bound(self, expr):
        """TVM's form of ``bounds``: a ConstIntBound, ``POS_INF`` / ``NEG_INF`` where unbounded."""
        lo, hi = self.bounds(expr)
        return ConstIntBound(ConstIntBound.NEG_INF if lo == -math.inf else int(lo),
                             ConstIntBound.POS_INF if hi == math.inf else int(hi))

    def canonical_simplify(self, expr):
        return self.simplify(expr)

    def rewrite_simplify(self, expr):
        return self.simplify(expr)

    def update(self, var, info, override=False):
        """Tell the analyzer ``var`` lies in ``info`` (a ConstIntBound; its POS_INF / NEG_INF
        leave that side open). A var that already has a range needs ``override=True``."""
        if not isinstance(info, ConstIntBound):
            raise DSLError(f"Analyzer.update of {getattr(var, 'name', var)}: expected a "
                           f"tvm.arith.ConstIntBound, got {type(info).__name__}")
        lo, hi = info.min_value, info.max_value
        if lo != ConstIntBound.NEG_INF and hi != ConstIntBound.POS_INF and lo > hi:
            raise DSLError(f"Analyzer.update: empty bound [{lo}, {hi}]")
        name = getattr(getattr(var, "var", var), "name", var)
        if not override and getattr(var, "var", var) in self._bindings:
            raise DSLError(f"Analyzer.update: {name} already has a range; pass override=True "
                           "to replace it")
        dtype = getattr(getattr(var, "var", var), "dtype", "int32")
        self.bind(var, IntervalSet(NEG_INF if lo <= ConstIntBound.NEG_INF else _op.const(lo, dtype),
                                   POS_INF if hi >= ConstIntBound.POS_INF else _op.const(hi, dtype)))

    def int_set(self, expr, dom_map=None):
        """Interval of ``expr`` while the vars of ``dom_map`` range over their domains.

        ``dom_map``: {Var or IterVar: Range or IntervalSet}.  Every other
        variable is a symbol (a point); the analyzer's own bindings are used
        to simplify the endpoints, not to relax them.
        """
        e = _op.convert(expr)
        binds = {_as_var(v): r for v, r in (dom_map or {}).items()}
        with self.with_bindings(binds):
            if len(binds) > 1:       # again, so domains that mention each other see their bounds
                for v, r in binds.items():
                    self.bind(v, r)
            dom = {v: (self._bindings[v].lo, self._bindings[v].hi) for v in binds}
            lo, hi = relax(self, e, dom)
        return IntervalSet(lo, hi)

    # ------------------------------------------------------------ for the prover
    def _relaxed_lower(self, expr):
        """A lower bound of ``expr`` with every range-bound var relaxed, or None."""
        dom = {v: (b.lo, b.hi) for v, b in self._bindings.items() if b.expr is None}
        self._depth += 1
        try:
            lo = relax(self, expr, dom, sides=(0,))[0]
        finally:
            self._depth -= 1
        return None if lo is NEG_INF else lo


def simplify(expr, var_ranges=None):
    """Simplify ``expr`` once, with ``var_ranges`` ({Var: Range or (min, extent)}) as bindings."""
    ana = Analyzer()
    for v, r in (var_ranges or {}).items():
        ana.bind(v, r)
    return ana.simplify(expr)


__all__ = ["Analyzer", "simplify"]
