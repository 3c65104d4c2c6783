"""TVM's ``tvm.arith``: the integer analyzer (one class, ``tvmlab.ir.arith.Analyzer``) under TVM's names.

    ana = tvm.arith.Analyzer()
    ana.bind(x, tvm.ir.Range(0, 8))
    ana.simplify(x // 8)            # 0
    ana.const_int_bound(x + 1)      # ConstIntBound(min_value=1, max_value=8)
"""
from .ir.arith import Analyzer, IntervalSet, eval_interval  # noqa: F401
from .ir.arith.analyzer import ConstIntBound  # noqa: F401
