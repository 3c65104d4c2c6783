"""TVM's ``tvm.arith``: the integer analyzer under TVM's method names.

    ana = tvm.arith.Analyzer()
    ana.bind(x, tvm.ir.Range(0, 8))
    ana.simplify(x // 8)            # 0
    ana.const_int_bound(x + 1)      # ConstIntBound(min_value=1, max_value=8)
"""
from __future__ import annotations

import math

from .ir.arith import Analyzer as _Analyzer
from .errors import DSLError
from .ir import op as _op
from .ir.arith import NEG_INF as _NEG_INF, POS_INF as _POS_INF
from .ir.arith import IntervalSet, eval_interval  # noqa: F401


class ConstIntBound:
    """Inclusive integer bounds; ``POS_INF`` / ``NEG_INF`` mark an unbounded side."""
    POS_INF = (1 << 63) - 1
    NEG_INF = -POS_INF

    def __init__(self, min_value, max_value):
        self.min_value = min_value
        self.max_value = max_value

    def __repr__(self):
        return f"ConstIntBound(min_value={self.min_value}, max_value={self.max_value})"


class Analyzer(_Analyzer):
    """tvmlab's analyzer with TVM's extra spellings (one simplifier serves all three)."""

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
        self.bind(var, IntervalSet(_NEG_INF if lo <= ConstIntBound.NEG_INF else _op.const(lo, dtype),
                                   _POS_INF if hi >= ConstIntBound.POS_INF else _op.const(hi, dtype)))

    def const_int_bound(self, expr):
        lo, hi = super().const_int_bound(expr)
        return ConstIntBound(ConstIntBound.NEG_INF if lo == -math.inf else int(lo),
                             ConstIntBound.POS_INF if hi == math.inf else int(hi))
