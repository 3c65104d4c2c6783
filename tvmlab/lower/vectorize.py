"""Vectorization: a ``vectorized`` loop of constant extent becomes one vector body.

The loop variable becomes ``Ramp(min, 1, lanes)`` and every expression that
depends on it is widened: arithmetic on a Ramp and a scalar stays a Ramp (so
indices stay contiguous), other vector operands meet scalars through
``Broadcast``, and a Load or Store with a vector index becomes a vector access
(a non-Ramp index is a gather).  Loop-invariant expressions, loads included,
stay scalar until they meet a vector.

A condition that differs between lanes becomes a mask: an ``IfThenElse``
without else whose body holds only stores turns into predicated stores, and a
lane-varying ``if_then_else`` into a ``Select`` of its branches; every load
under the mask is predicated too, so no lane reads memory the serial loop would
not read.  A uniform condition (a ``likely`` guard that does not mention the
loop variable) stays a scalar ``IfThenElse``.

A body that cannot keep the meaning of the serial loop as one vector body is
left as a serial loop ("scalarised"): a store to a lane-invariant address (a
reduction over the vectorized axis), a store whose vector address is not a
Ramp (lanes might collide), a masked body holding anything but stores, an
integer division under a mask by a divisor that may be zero in a masked lane,
an ``Allocate``, a nested non-serial loop or one whose bounds vary by lane, a
call with no elementwise vector form, leftover AST2 tensors, or an expression
that already is a vector.  Serial inner loops with lane-invariant bounds are
kept and their bodies vectorized (the vectorized axis is data-parallel by
construction in a schedule, so the iterations may be interchanged).  A loop of
non-constant extent also becomes serial.  Like TVM, the pass assumes the
iterations of a vectorized loop are independent (no lane reads what another
lane of the same loop writes).
"""
from __future__ import annotations

from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import simplify
from ..ir.expr import (Add, Broadcast, Call, Cast, Div, Expr, FloorDiv, FloorMod, IntImm, Let,
                       Load, Mod, Mul, Ramp, Select, Sub, Var)
from ..ir.functor import IRMutator, IRVisitor, substitute
from ..ir.stmt import (AssertStmt, For, IfThenElse, LetStmt, Store)

ELEMENTWISE_CALLS = frozenset((
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
    "sigmoid", "floor", "ceil", "round", "trunc", "erf", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "nearbyint", "fabs", "abs", "pow", "fmod", "isnan", "likely",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right",
    "popcount"))


class _Scalarise(Exception):
    """The body cannot be vectorised; the loop stays serial."""


def _lanes(e):
    return dt.lanes(e.dtype)


def _scalar_of(e):
    """The scalar that ``e`` stands for in every lane, or None."""
    if _lanes(e) == 1:
        return e
    return e.value if isinstance(e, Broadcast) else None


_INT_DIVS = (Div, Mod, FloorDiv, FloorMod)


def _nonzero_constant(e):
    e = _scalar_of(e)
    return isinstance(e, IntImm) and e.value != 0


def _and(a, b):
    """Conjunction of masks where None means "all lanes"; ``likely`` hints are dropped."""
    if isinstance(b, Call) and b.op == "likely":
        b = b.args[0]
    if a is None or b is None:
        return b if a is None else a
    return _op.logical_and(a, b)


def _widen(e, lanes):
    return Broadcast(e, lanes) if _lanes(e) == 1 else e


class _Vectorizer(IRMutator):
    """Rewrite one loop body with ``var`` := ``Ramp(min, 1, lanes)``."""

    def __init__(self, var, ramp):
        super().__init__()
        self.lanes = ramp.lanes
        self.vmap = {var: ramp}
        self.mask = None     # vector bool: the lanes active here (None: all)

    # ---------------------------------------------------------------- leaves
    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_Ramp(self, e):
        raise _Scalarise("the body already holds a vector")

    visit_Broadcast = visit_Ramp

    def visit_ProducerLoad(self, e):
        raise _Scalarise("AST2 tensor access left in the body")

    def visit_ProducerStore(self, s):
        raise _Scalarise("AST2 tensor access left in the body")

    visit_ProducerRealize = visit_ProducerStore

    def visit_Allocate(self, s):
        raise _Scalarise("an allocation inside the loop")

    # ---------------------------------------------------------------- arithmetic
    def visit_BinaryOp(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if a is e.a and b is e.b:
            return e
        la, lb = _lanes(a), _lanes(b)
        if la == 1 and lb == 1:
            return type(e)(a, b)
        if self.mask is not None and isinstance(e, _INT_DIVS) and dt.is_int(e.dtype) \
                and not _nonzero_constant(b):
            raise _Scalarise("integer division under a mask: a masked lane may divide by zero")
        ramp = self._ramp_arith(e, a, b)
        if ramp is not None:
            return ramp
        return type(e)(_widen(a, self.lanes), _widen(b, self.lanes))

    visit_CmpOp = visit_BinaryOp

    def _ramp_arith(self, e, a, b):
        """Keep Ramp form for +, - and * by a scalar (indices stay contiguous)."""
        ra, rb = isinstance(a, Ramp), isinstance(b, Ramp)
        sa, sb = _scalar_of(a), _scalar_of(b)
        cls = type(e)
        if cls is Add:
            if ra and rb:
                return Ramp(_op.add(a.base, b.base), _op.add(a.stride, b.stride), self.lanes)
            if ra and sb is not None:
                return Ramp(_op.add(a.base, sb), a.stride, self.lanes)
            if rb and sa is not None:
                return Ramp(_op.add(sa, b.base), b.stride, self.lanes)
        elif cls is Sub:
            if ra and rb:
                return Ramp(_op.sub(a.base, b.base), _op.sub(a.stride, b.stride), self.lanes)
            if ra and sb is not None:
                return Ramp(_op.sub(a.base, sb), a.stride, self.lanes)
            if rb and sa is not None:
                return Ramp(_op.sub(sa, b.base), _op.neg(b.stride), self.lanes)
        elif cls is Mul:
            if ra and sb is not None:
                return Ramp(_op.mul(a.base, sb), _op.mul(a.stride, sb), self.lanes)
            if rb and sa is not None:
                return Ramp(_op.mul(sa, b.base), _op.mul(sa, b.stride), self.lanes)
        return None

    def visit_Not(self, e):
        a = self.visit(e.a)
        return e if a is e.a else e.replace(a=a)

    def visit_Cast(self, e):
        v = self.visit(e.value)
        if v is e.value:
            return e
        return Cast(dt.with_lanes(e.dtype, _lanes(v)), v)

    def visit_Select(self, e):
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        if c is e.condition and t is e.true_value and f is e.false_value:
            return e
        if max(_lanes(c), _lanes(t), _lanes(f)) == 1:
            return Select(c, t, f)
        n = self.lanes
        return Select(_widen(c, n), _widen(t, n), _widen(f, n))

    def visit_Let(self, e):
        v = self.visit(e.value)
        var = self._bind(e.var, v)
        body = self.visit(e.body)
        if v is e.value and var is e.var and body is e.body:
            return e
        return Let(var, v, body)

    def _bind(self, var, value):
        """A vector value gets a fresh variable of the vector type."""
        if _lanes(value) == 1:
            return var
        nv = Var(var.name, value.dtype)
        self.vmap[var] = nv
        return nv

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return self._if_then_else(e)
        if e.op == "call_extern":     # may have side effects: one call per lane, even with uniform arguments
            raise _Scalarise("call_extern is made once per lane")
        args = tuple(self.visit(a) for a in e.args)
        if all(x is y for x, y in zip(args, e.args)):
            return e
        if e.op not in ELEMENTWISE_CALLS:
            raise _Scalarise(f"call {e.op} has no vector form")
        if all(_lanes(a) == 1 for a in args):
            return Call(e.dtype, e.op, args)
        n = self.lanes
        return Call(dt.with_lanes(e.dtype, n), e.op, tuple(_widen(a, n) for a in args))

    def _if_then_else(self, e):
        c = self.visit(e.args[0])
        if _lanes(c) == 1:
            t, f = self.visit(e.args[1]), self.visit(e.args[2])
            if c is e.args[0] and t is e.args[1] and f is e.args[2]:
                return e
            if _lanes(t) == 1 and _lanes(f) == 1:
                return Call(e.dtype, e.op, (c, t, f))
            n = self.lanes
            return Call(dt.with_lanes(e.dtype, n), e.op, (c, _widen(t, n), _widen(f, n)))
        # lanes pick different branches: evaluate both, each with its loads masked
        outer = self.mask
        try:
            self.mask = _and(outer, c)
            t = _widen(self.visit(e.args[1]), self.lanes)
            self.mask = _and(outer, _op.logical_not(c))
            f = _widen(self.visit(e.args[2]), self.lanes)
        finally:
            self.mask = outer
        return Select(c, t, f)

    def visit_Load(self, e):
        idx = self.visit(e.index)
        pred = self.visit(e.predicate) if e.predicate is not None else None
        if self.mask is None:
            if idx is e.index and pred is e.predicate:
                return e
            if _lanes(idx) == 1 and (pred is None or _lanes(pred) == 1):
                return Load(e.dtype, e.buffer_var, idx, pred)
        n = self.lanes
        pred = None if pred is None else _widen(pred, n)
        if self.mask is not None:
            pred = _and(self.mask, pred)
        return Load(dt.with_lanes(e.dtype, n), e.buffer_var, _widen(idx, n), pred)

    # ---------------------------------------------------------------- statements
    def visit_Store(self, s):
        idx = self.visit(s.index)
        value = self.visit(s.value)
        pred = self.visit(s.predicate) if s.predicate is not None else None
        if _lanes(idx) == 1:
            raise _Scalarise(f"store to {s.buffer_var.name}[{idx}]: the address does not vary "
                             "by lane (a reduction over the vectorized axis)")
        if not isinstance(idx, Ramp) or (isinstance(idx.stride, IntImm) and idx.stride.value == 0):
            raise _Scalarise(f"store to {s.buffer_var.name} at {idx}: lanes may share an address")
        n = self.lanes
        pred = None if pred is None else _widen(pred, n)
        if self.mask is not None:
            pred = _and(self.mask, pred)
        return Store(s.buffer_var, _widen(value, n), idx, pred)

    def visit_IfThenElse(self, s):
        c = self.visit(s.condition)
        if _lanes(c) != 1:
            if s.else_case is not None:
                raise _Scalarise("an if/else whose condition differs between lanes")
            outer = self.mask
            self.mask = _and(outer, c)
            try:
                return self.visit(s.then_case)
            finally:
                self.mask = outer
        then = self.visit(s.then_case)
        other = self.visit(s.else_case) if s.else_case is not None else None
        if c is s.condition and then is s.then_case and other is s.else_case:
            return s
        return IfThenElse(c, then, other)

    def _unmasked(self, what):
        if self.mask is not None:
            raise _Scalarise(f"{what} under a condition that differs between lanes")

    def visit_AssertStmt(self, s):
        self._unmasked("an assertion")
        c = self.visit(s.condition)
        if _lanes(c) != 1:
            raise _Scalarise("an assertion that differs between lanes")
        body = self.visit(s.body)
        return s if c is s.condition and body is s.body else AssertStmt(c, s.message, body)

    def visit_LetStmt(self, s):
        self._unmasked("a let")
        v = self.visit(s.value)
        var = self._bind(s.var, v)
        body = self.visit(s.body)
        if v is s.value and var is s.var and body is s.body:
            return s
        return LetStmt(var, v, body)

    def visit_Evaluate(self, s):
        self._unmasked("an evaluation")
        return self.generic_visit(s)

    def visit_For(self, s):
        self._unmasked("a loop")
        if s.kind not in ("serial", "unrolled"):
            raise _Scalarise(f"a {s.kind} loop inside the vectorized loop")
        mn, ext = self.visit(s.min), self.visit(s.extent)
        if _lanes(mn) != 1 or _lanes(ext) != 1:
            raise _Scalarise(f"loop {s.loop_var.name} has bounds that differ between lanes")
        body = self.visit(s.body)
        if mn is s.min and ext is s.extent and body is s.body:
            return s
        return s.replace(min=mn, extent=ext, body=body)


class _HasVector(IRVisitor):
    def __init__(self):
        super().__init__()
        self.found = False

    def generic_visit(self, n):
        if self.found:
            return
        if isinstance(n, Expr) and _lanes(n) != 1:
            self.found = True
            return
        super().generic_visit(n)


def _const_extent(e):
    e = e if isinstance(e, IntImm) else simplify(e)
    return e.value if isinstance(e, IntImm) else None


def vectorize_loop(loop):
    """The vector form of one ``vectorized`` For (or a serial loop when it has none)."""
    body = loop.body
    lanes = _const_extent(loop.extent)
    if lanes is None:
        return _scalarised(loop, body)
    if lanes <= 1:
        if lanes == 1:
            return substitute(body, {loop.loop_var: loop.min})
        return _scalarised(loop, body)
    v = _HasVector()
    v.visit(body)
    if v.found:
        return _scalarised(loop, body)
    dtype = loop.loop_var.dtype
    ramp = Ramp(_op.cast(dtype, loop.min), _op.const(1, dtype), lanes)
    try:
        return _Vectorizer(loop.loop_var, ramp).visit(body)
    except _Scalarise:
        return _scalarised(loop, body)


def _scalarised(loop, body):
    return For(loop.loop_var, loop.min, loop.extent, "serial", body, loop.annotations)


class _Pass(IRMutator):
    def visit_For(self, s):
        body = self.visit(s.body)
        if s.kind == "vectorized":
            return vectorize_loop(s.replace(body=body) if body is not s.body else s)
        return s if body is s.body else s.replace(body=body)


def vectorize(stmt):
    """Vectorize every ``vectorized`` loop of ``stmt`` (AST3), innermost first."""
    return _Pass().visit(stmt)


class _Serialize(IRMutator):
    def visit_For(self, s):
        body = self.visit(s.body)
        if s.kind == "vectorized":
            return _scalarised(s, body)
        return s if body is s.body else s.replace(body=body)


def serialize_vectorized(stmt):
    """Every ``vectorized`` loop as a serial loop (TVM's ``tir.disable_vectorize``)."""
    return _Serialize().visit(stmt)
