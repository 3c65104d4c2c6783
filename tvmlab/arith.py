"""TVM's ``tvm.arith``: the integer analyzer under TVM's method names.

    ana = tvm.arith.Analyzer()
    ana.bind(x, tvm.ir.Range(0, 8))
    ana.simplify(x // 8)            # 0
    ana.const_int_bound(x + 1)      # ConstIntBound(min_value=1, max_value=8)
"""
from __future__ import annotations

import math

from .ir.arith import Analyzer as _Analyzer
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

    def const_int_bound(self, expr):
        lo, hi = super().const_int_bound(expr)
        return ConstIntBound(ConstIntBound.NEG_INF if lo == -math.inf else int(lo),
                             ConstIntBound.POS_INF if hi == math.inf else int(hi))
