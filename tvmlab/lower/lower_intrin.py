"""LowerIntrin: intrinsic calls and integer floor division in the terms a target's code has.

- calls with a rule for the function's target (``tvm.target.register_intrin_rule``,
  ``tvm.ir.register_intrin_lowering``) are replaced by what the rule returns;
- integer ``floordiv`` / ``floormod`` become C's truncating ``/`` and ``%``
  (TVM's ``truncdiv`` / ``truncmod``): directly where both operands are known
  non-negative, as a shift / mask for a positive power of two, else with the
  sign correction (``q - 1`` where the remainder is non-zero and has the
  other sign than the divisor).
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import FloorDiv, FloorMod, IntImm
from ..ir.functor import IRMutator
from .intrin_rules import apply_intrin_rules


def _pow2(b):
    return isinstance(b, IntImm) and b.value > 0 and b.value & (b.value - 1) == 0


class _FloorDiv(IRMutator):
    def __init__(self):
        super().__init__()
        self.ana = Analyzer()

    def _nonneg(self, e):
        return self.ana.can_prove(_op.ge(e, _op.const(0, e.dtype)))

    def visit_FloorDiv(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if not dt.is_int(e.dtype) or dt.lanes(e.dtype) != 1:
            return FloorDiv(a, b) if (a is not e.a or b is not e.b) else e
        if _pow2(b):
            shift = b.value.bit_length() - 1
            return _op.shift_right(a, _op.const(shift, a.dtype)) if shift else a
        q, r = _op.truncdiv(a, b), _op.truncmod(a, b)
        if self._nonneg(a) and self._nonneg(b):
            return q
        zero = _op.const(0, e.dtype)
        fix = _op.logical_and(_op.ne(r, zero), _op.ne(_op.lt(r, zero), _op.lt(b, zero)))
        return _op.select(fix, _op.sub(q, _op.const(1, e.dtype)), q)

    def visit_FloorMod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if not dt.is_int(e.dtype) or dt.lanes(e.dtype) != 1:
            return FloorMod(a, b) if (a is not e.a or b is not e.b) else e
        if _pow2(b):
            return _op.bitwise_and(a, _op.const(b.value - 1, a.dtype))
        r = _op.truncmod(a, b)
        if self._nonneg(a) and self._nonneg(b):
            return r
        zero = _op.const(0, e.dtype)
        fix = _op.logical_and(_op.ne(r, zero), _op.ne(_op.lt(r, zero), _op.lt(b, zero)))
        return _op.select(fix, _op.add(r, b), r)


def lower_intrin(stmt, target_kind):
    """``stmt`` with ``target_kind``'s intrinsic rules applied and integer floor division lowered."""
    return _FloorDiv().visit(apply_intrin_rules(stmt, target_kind))
