"""Vectorization: a ``vectorized`` loop of constant extent becomes one vector body.

The loop variable becomes ``Ramp(min, 1, lanes)`` and every expression that
depends on it is widened: arithmetic on a Ramp and a scalar stays a Ramp (so
indices stay contiguous), other vector operands meet scalars through
``Broadcast``, and a Load or Store with a vector index becomes a vector access
(a non-Ramp index is a gather).  Loop-invariant expressions, loads included,
stay scalar until they meet a vector.  A body that already holds vectors of k
lanes (an inner vectorized loop, a pointer to ``float32x4`` elements) gets
vectors of lanes * k: ``Ramp(Ramp(b, s * k, lanes), s, k)`` is
``Ramp(b, s, lanes * k)`` and a Broadcast of a loop-invariant value widens.

A condition that differs between lanes has two forms:

* masks (``vectorize(stmt)``, what ``tvm.lower`` runs): an ``IfThenElse``
  without else whose body holds only stores turns into predicated stores, and a
  lane-varying ``if_then_else`` into a ``Select`` of its branches; every load
  under the mask is predicated too, so no lane reads memory the serial loop
  would not read.  This keeps a guarded tail vector code.
* TVM's form (``vectorize(stmt, masks=False)``, ``tir.transform.VectorizeLoop``):
  the statement holding the condition runs as a serial loop over the lanes of
  its own (``for i.s in range(lanes)``), and the statements around it stay
  vector code.  A uniform ``if`` (one that does not mention the loop variable)
  stays a scalar ``IfThenElse`` around vector branches in both forms.

A body that cannot keep the meaning of the serial loop as vector code is left
as a serial loop ("scalarised"): a store to a lane-invariant address (a
reduction over the vectorized axis), a store whose vector address is not a
Ramp (lanes might collide), a masked body holding anything but stores, an
integer division under a mask by a divisor that may be zero in a masked lane,
an ``Allocate``, a nested non-serial loop or one whose bounds vary by lane, a
call with no elementwise vector form, leftover AST2 tensors, or vectors that
would have to be repeated or interleaved.  With masks the whole loop stays
serial; in TVM's form only the statement does, unless a store in the loop has a
lane-invariant or colliding address (lanes then share memory, and running some
statements for every lane before the others would change what they read), in
which case the whole loop stays serial too.  Serial inner loops with
lane-invariant bounds are kept and their bodies vectorized (the vectorized axis
is data-parallel by construction in a schedule, so the iterations may be
interchanged).  A loop of non-constant extent also becomes serial.  A ``while``
loop inside a vectorized loop is an error, as in TVM: its trip count may
differ between lanes.  Like TVM, the pass assumes the iterations of a
vectorized loop are independent (no lane reads what another lane of the same
loop writes).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import simplify
from ..ir.expr import (Add, Broadcast, Call, Cast, Div, FloorDiv, FloorMod, IntImm, Let,
                       Load, Mod, Mul, Ramp, Select, Sub, Var)
from ..ir.functor import IRMutator, IRVisitor, substitute
from ..ir.stmt import AssertStmt, For, IfThenElse, LetStmt, SeqStmt, Stmt, Store

ELEMENTWISE_CALLS = frozenset((
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
    "sigmoid", "floor", "ceil", "round", "trunc", "erf", "sin", "cos", "tan", "sinh", "cosh",
    "asin", "acos", "atan", "nearbyint", "fabs", "abs", "pow", "fmod", "isnan", "likely",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right",
    "popcount"))


class _Scalarise(Exception):
    """The code cannot be vectorised: the statement (or, when ``whole``, the loop) stays serial."""

    def __init__(self, why, whole=False):
        super().__init__(why)
        self.whole = whole


def _lanes(e):
    return dt.lanes(e.dtype)


def _scalar_of(e):
    """The scalar that ``e`` stands for in every lane, or None."""
    if _lanes(e) == 1:
        return e
    return e.value if isinstance(e, Broadcast) else None


_INT_DIVS = (Div, Mod, FloorDiv, FloorMod)


def _ramp_div(cls, a, c):
    """``Ramp(base, 1, n) // c`` or ``% c`` with ``c`` a multiple of ``n`` and ``base`` provably one: the n
    lanes lie in one block of c, so the quotient is one value and the remainder a ramp (the fused or
    reshaped index of a vectorized inner axis)."""
    if not isinstance(a, Ramp) or not isinstance(c, IntImm) or c.value <= 0 or c.value % a.lanes:
        return None
    if not (isinstance(a.stride, IntImm) and a.stride.value == 1):
        return None
    from ..ir.arith import Analyzer
    if not Analyzer().can_prove(_op.floormod(a.base, a.lanes) == 0):
        return None
    if cls is FloorDiv:
        return Broadcast(_op.floordiv(a.base, c), a.lanes)
    return Ramp(_op.floormod(a.base, c), a.stride, a.lanes)


def _nonzero_constant(e):
    e = _scalar_of(e)
    return isinstance(e, IntImm) and e.value != 0


def _is_zero(e):
    e = simplify(e)
    return isinstance(e, IntImm) and e.value == 0


def _and(a, b):
    """Conjunction of masks where None means "all lanes"; ``likely`` hints are dropped."""
    if isinstance(b, Call) and b.op == "likely":
        b = b.args[0]
    if a is None or b is None:
        return b if a is None else a
    return _op.logical_and(a, b)


def _fit(e, lanes):
    """``e`` as a ``lanes``-lane vector: a scalar or a Broadcast widens, anything else must fit."""
    n = _lanes(e)
    if n == lanes:
        return e
    if n == 1:
        return Broadcast(e, lanes)
    if isinstance(e, Broadcast) and lanes % n == 0:
        return Broadcast(e.value, lanes)
    raise _Scalarise(f"{e} ({n} lanes) would have to be repeated to {lanes} lanes")


class _Vectorizer(IRMutator):
    """Rewrite one loop body with ``loop.loop_var`` := ``ramp``.

    ``masks``: lane-varying conditions become masks (else the statement holding
    one becomes a serial loop over the lanes, TVM's form).
    """

    def __init__(self, loop, ramp, masks):
        super().__init__()
        self.loop = loop
        self.lanes = ramp.lanes
        self.vmap = {loop.loop_var: ramp}
        self.masks = masks
        self.mask = None     # vector bool: the lanes active here (None: all)

    def visit(self, n):
        if self.masks or not isinstance(n, Stmt) or isinstance(n, SeqStmt):
            return super().visit(n)
        try:
            return super().visit(n)
        except _Scalarise as err:
            if err.whole:
                raise
            _SharedAddresses(self).visit(n)
            return self._serial(n)

    def _serial(self, stmt):
        """``stmt`` run for each lane in turn: ``for i.s in range(lanes)``."""
        v = self.loop.loop_var
        s = Var(f"{v.name}.s", v.dtype)
        return For(s, self.loop.min, self.loop.extent, "serial", substitute(stmt, {v: s}))

    def _join(self, olds, news):
        """Visited operands at one lane count: the body's, times the loop's if one varies by lane."""
        body = max(_lanes(o) for o in olds)
        if all(_lanes(o) == _lanes(n) for o, n in zip(olds, news)):
            return list(news), body
        if body > 1 and any(_lanes(o) == 1 and _lanes(n) > 1 for o, n in zip(olds, news)):
            raise _Scalarise("a lane-varying scalar would have to be repeated across a vector")
        lanes = body * self.lanes
        return [_fit(n, lanes) for n in news], lanes

    def _masked_lanes(self, lanes):
        if self.mask is not None and lanes != self.lanes:
            raise _Scalarise(f"a {lanes}-lane access under a {self.lanes}-lane mask")

    # ---------------------------------------------------------------- leaves
    def visit_Var(self, v):
        return self.vmap.get(v, v)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if base is e.base and stride is e.stride:
            return e
        if _lanes(stride) != 1:
            raise _Scalarise("a ramp whose stride differs between lanes")
        if _lanes(base) == 1:
            return Ramp(base, stride, e.lanes)
        if isinstance(base, Broadcast):
            return Ramp(base.value, stride, e.lanes)
        if isinstance(base, Ramp) and _is_zero(_op.sub(base.stride, _op.mul(stride, e.lanes))):
            return Ramp(base.base, stride, base.lanes * e.lanes)
        raise _Scalarise(f"ramps from {base} with stride {stride} are not one contiguous ramp")

    def visit_Broadcast(self, e):
        v = self.visit(e.value)
        if v is e.value:
            return e
        if _lanes(v) == 1:
            return Broadcast(v, e.lanes)
        if isinstance(v, Broadcast):
            return Broadcast(v.value, _lanes(v) * e.lanes)
        raise _Scalarise("a broadcast of a lane-varying value would repeat each lane")

    def visit_ProducerLoad(self, e):
        raise _Scalarise("AST2 tensor access left in the body", whole=True)

    def visit_ProducerStore(self, s):
        raise _Scalarise("AST2 tensor access left in the body", whole=True)

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
        if _lanes(e.a) == _lanes(e.b):
            ramp = self._ramp_arith(e, a, b)
            if ramp is not None:
                return ramp
        (a, b), _ = self._join((e.a, e.b), (a, b))
        return type(e)(a, b)

    visit_CmpOp = visit_BinaryOp

    @staticmethod
    def _ramp_arith(e, a, b):
        """Keep Ramp form for +, - and * by a scalar (indices stay contiguous)."""
        ra, rb = isinstance(a, Ramp), isinstance(b, Ramp)
        sa, sb = _scalar_of(a), _scalar_of(b)
        cls = type(e)
        if ra and rb and a.lanes != b.lanes:
            return None
        if sa is not None and sb is not None:          # one value for all lanes stays one
            return Broadcast(cls(sa, sb), max(_lanes(a), _lanes(b)))
        if cls is Add:
            if ra and rb:
                return Ramp(_op.add(a.base, b.base), _op.add(a.stride, b.stride), a.lanes)
            if ra and sb is not None:
                return Ramp(_op.add(a.base, sb), a.stride, a.lanes)
            if rb and sa is not None:
                return Ramp(_op.add(sa, b.base), b.stride, b.lanes)
        elif cls is Sub:
            if ra and rb:
                return Ramp(_op.sub(a.base, b.base), _op.sub(a.stride, b.stride), a.lanes)
            if ra and sb is not None:
                return Ramp(_op.sub(a.base, sb), a.stride, a.lanes)
            if rb and sa is not None:
                return Ramp(_op.sub(sa, b.base), _op.neg(b.stride), b.lanes)
        elif cls is Mul:
            if ra and sb is not None:
                return Ramp(_op.mul(a.base, sb), _op.mul(a.stride, sb), a.lanes)
            if rb and sa is not None:
                return Ramp(_op.mul(sa, b.base), _op.mul(sa, b.stride), b.lanes)
        elif cls in (FloorDiv, FloorMod):
            return _ramp_div(cls, a, sb)
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
        old = (e.condition, e.true_value, e.false_value)
        new = tuple(self.visit(x) for x in old)
        if all(x is y for x, y in zip(old, new)):
            return e
        if max(_lanes(x) for x in new) == 1:
            return Select(*new)
        return Select(*self._join(old, new)[0])

    def visit_Let(self, e):
        v = self.visit(e.value)
        var = self._bind(e.var, v)
        body = self.visit(e.body)
        if v is e.value and var is e.var and body is e.body:
            return e
        return Let(var, v, body)

    def _bind(self, var, value):
        """A value that varies by lane gets a fresh variable of its vector type."""
        if _lanes(value) == _lanes(var):
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
        args, lanes = self._join(e.args, args)
        return Call(dt.with_lanes(e.dtype, lanes), e.op, tuple(args))

    def _if_then_else(self, e):
        c = self.visit(e.args[0])
        if _lanes(c) == _lanes(e.args[0]):
            t, f = self.visit(e.args[1]), self.visit(e.args[2])
            if c is e.args[0] and t is e.args[1] and f is e.args[2]:
                return e
            (t, f), lanes = self._join(e.args[1:], (t, f))
            return Call(dt.with_lanes(e.dtype, lanes), e.op, (c, t, f))
        if not self.masks:
            raise _Scalarise("an if_then_else whose condition differs between lanes")
        if dt.lanes(e.dtype) != 1:
            raise _Scalarise("a lane-varying condition over vector values")
        # lanes pick different branches: evaluate both, each with its loads masked
        outer = self.mask
        try:
            self.mask = _and(outer, c)
            t = _fit(self.visit(e.args[1]), self.lanes)
            self.mask = _and(outer, _op.logical_not(c))
            f = _fit(self.visit(e.args[2]), self.lanes)
        finally:
            self.mask = outer
        return Select(c, t, f)

    def visit_Load(self, e):
        idx = self.visit(e.index)
        pred = self.visit(e.predicate) if e.predicate is not None else None
        if self.mask is None:
            if idx is e.index and pred is e.predicate:
                return e
            if _lanes(idx) == _lanes(e.index) and (pred is None or _lanes(pred) == _lanes(e.predicate)):
                return Load(e.dtype, e.buffer_var, idx, pred)
        lanes = dt.lanes(e.dtype) * self.lanes
        self._masked_lanes(lanes)
        idx = _fit(idx, lanes)
        pred = None if pred is None else _fit(pred, lanes)
        if self.mask is not None:
            pred = _and(self.mask, pred)
        return Load(dt.with_lanes(e.dtype, lanes), e.buffer_var, idx, pred)

    # ---------------------------------------------------------------- statements
    def visit_Store(self, s):
        idx = self.visit(s.index)
        value = self.visit(s.value)
        pred = self.visit(s.predicate) if s.predicate is not None else None
        _check_address(s, s.index, idx)
        lanes = _lanes(idx)
        self._masked_lanes(lanes)
        pred = None if pred is None else _fit(pred, lanes)
        if self.mask is not None:
            pred = _and(self.mask, pred)
        return Store(s.buffer_var, _fit(value, lanes), idx, pred)

    def visit_IfThenElse(self, s):
        c = self.visit(s.condition)
        if _lanes(c) != 1:
            if not self.masks:
                raise _Scalarise("an if whose condition differs between lanes")
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


def _check_address(store, old, new):
    """A vector store needs one address per lane: a Ramp of nonzero stride."""
    if _lanes(new) == _lanes(old):
        raise _Scalarise(f"store to {store.buffer_var.name}[{new}]: the address does not vary "
                         "by lane (a reduction over the vectorized axis)", whole=True)
    if not isinstance(new, Ramp) or _is_zero(new.stride):
        raise _Scalarise(f"store to {store.buffer_var.name} at {new}: lanes may share an address",
                         whole=True)


class _SharedAddresses(IRVisitor):
    """Before a statement runs as a serial loop of its own: raise (the whole loop stays serial)
    when one of its stores may write an address another lane uses.  Stores to buffers it
    allocates itself are private; variables it binds count as lane-invariant (conservative)."""

    def __init__(self, vec):
        super().__init__()
        self.vec = vec
        self.private = set()

    def visit_Allocate(self, s):
        self.private.add(s.buffer_var)
        self.generic_visit(s)

    def visit_Store(self, s):
        if s.buffer_var in self.private:
            return
        try:
            idx = self.vec.visit(s.index)
        except _Scalarise as err:
            raise _Scalarise(str(err), whole=True) from None
        _check_address(s, s.index, idx)


class _FindWhile(IRVisitor):
    def __init__(self):
        super().__init__()
        self.found = None

    def visit_While(self, s):
        if self.found is None:
            self.found = s


def _const_extent(e):
    e = e if isinstance(e, IntImm) else simplify(e)
    return e.value if isinstance(e, IntImm) else None


def vectorize_loop(loop, masks=True):
    """The vector form of one ``vectorized`` For (or a serial loop when it has none)."""
    body = loop.body
    finder = _FindWhile()
    finder.visit(body)
    if finder.found is not None:
        raise LoweringError(f"loop {loop.loop_var.name} (extent {loop.extent}) holds "
                            f"`while ({finder.found.condition})`: A while loop inside a vectorized loop "
                            "not supported (its trip count may differ between lanes); make the loop "
                            "serial or vectorize a loop inside the while")
    lanes = _const_extent(loop.extent)
    if lanes is None:
        return _scalarised(loop, body)
    if lanes <= 1:
        if lanes == 1:
            return substitute(body, {loop.loop_var: loop.min})
        return _scalarised(loop, body)
    dtype = loop.loop_var.dtype
    ramp = Ramp(_op.cast(dtype, loop.min), _op.const(1, dtype), lanes)
    try:
        return _Vectorizer(loop, ramp, masks).visit(body)
    except _Scalarise:
        return _scalarised(loop, body)


def _scalarised(loop, body):
    return For(loop.loop_var, loop.min, loop.extent, "serial", body, loop.annotations)


class _Pass(IRMutator):
    def __init__(self, masks):
        super().__init__()
        self.masks = masks

    def visit_For(self, s):
        body = self.visit(s.body)
        if s.kind == "vectorized":
            return vectorize_loop(s.replace(body=body) if body is not s.body else s, self.masks)
        return s if body is s.body else s.replace(body=body)


def vectorize(stmt, masks=True):
    """Vectorize every ``vectorized`` loop of ``stmt`` (AST3), innermost first.

    ``masks=False`` gives TVM's form for conditions that differ between lanes (see the module
    docstring); ``tvm.lower`` keeps masks, whose guarded tails stay vector code.
    """
    return _Pass(masks).visit(stmt)


class _Serialize(IRMutator):
    def visit_For(self, s):
        body = self.visit(s.body)
        if s.kind == "vectorized":
            return _scalarised(s, body)
        return s if body is s.body else s.replace(body=body)


def serialize_vectorized(stmt):
    """Every ``vectorized`` loop as a serial loop (TVM's ``tir.disable_vectorize``)."""
    return _Serialize().visit(stmt)
