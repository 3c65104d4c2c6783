"""Expression nodes (AST1 bodies, AST2 and AST3 values) and operator overloading.

``ExprOp`` gives Python operators to everything that acts as an expression:
``Expr`` nodes, ``IterVar`` and zero-dimensional tensors.  Equality builds an
``EQ`` node whose truth value is object identity (as in TVM), so expressions can
still be kept in lists and dicts.
"""
from __future__ import annotations

import dataclasses
import itertools
import threading
from typing import Any

from ..errors import DSLError
from . import dtype as dt
from .node import Node, node

_VAR_SERIAL = itertools.count()


_BODY = threading.local()     # .depth: how many compute bodies are being built on this thread


class compute_body:  # noqa: N801 - used as ``with compute_body():``
    """Marks the evaluation of a compute body (``te.compute`` calling ``fcompute``).

    Outside a body, arithmetic on a 0-d tensor makes a tensor, as in TVM (``A + 1`` is a
    compute of shape ()).  Inside one, a 0-d tensor in arithmetic reads its one element
    (``A()``): TVM would build a tensor there and then refuse it as a body."""

    def __enter__(self):
        _BODY.depth = getattr(_BODY, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        _BODY.depth -= 1


def in_compute_body():
    """Whether a compute body is being built on this thread."""
    return getattr(_BODY, "depth", 0) > 0


def _whole(o):
    """Whether ``o`` takes part in arithmetic as a whole tensor: ``n + B`` is then B's element-wise
    compute (its reflected operator), as ``B + n`` is.  A 0-d tensor does so only outside a
    compute body."""
    return getattr(o, "_whole_tensor", False) and (o.ndim > 0 or not in_compute_body())


class ExprOp:
    """Python operators on expressions.  Subclasses provide ``_as_expr``."""
    __slots__ = ()

    def _as_expr(self):
        return self

    def __add__(self, o): return NotImplemented if _whole(o) else _op.add(self, o)
    def __radd__(self, o): return _op.add(o, self)
    def __sub__(self, o): return NotImplemented if _whole(o) else _op.sub(self, o)
    def __rsub__(self, o): return _op.sub(o, self)
    def __mul__(self, o): return NotImplemented if _whole(o) else _op.mul(self, o)
    def __rmul__(self, o): return _op.mul(o, self)
    def __truediv__(self, o): return NotImplemented if _whole(o) else _op.true_div(self, o)
    def __rtruediv__(self, o): return _op.true_div(o, self)
    def __floordiv__(self, o): return NotImplemented if _whole(o) else _op.floordiv(self, o)
    def __rfloordiv__(self, o): return _op.floordiv(o, self)
    def __mod__(self, o): return NotImplemented if _whole(o) else _op.floormod(self, o)
    def __rmod__(self, o): return _op.floormod(o, self)
    def __neg__(self): return _op.neg(self)
    def __pos__(self): return self._as_expr()
    def __abs__(self): return _op.abs(self)
    def __pow__(self, o): return _op.power(self, o)
    def __rpow__(self, o): return _op.power(o, self)
    def __lt__(self, o): return _op.lt(self, o)
    def __le__(self, o): return _op.le(self, o)
    def __gt__(self, o): return _op.gt(self, o)
    def __ge__(self, o): return _op.ge(self, o)
    def __eq__(self, o): return _op.eq(self, o)
    def __ne__(self, o): return _op.ne(self, o)
    def __and__(self, o): return _op.bitwise_and(self, o)
    def __rand__(self, o): return _op.bitwise_and(o, self)
    def __or__(self, o): return _op.bitwise_or(self, o)
    def __ror__(self, o): return _op.bitwise_or(o, self)
    def __xor__(self, o): return _op.bitwise_xor(self, o)
    def __rxor__(self, o): return _op.bitwise_xor(o, self)
    def __invert__(self): return _op.bitwise_not(self)
    def __lshift__(self, o): return _op.shift_left(self, o)
    def __rlshift__(self, o): return _op.shift_left(o, self)
    def __rshift__(self, o): return _op.shift_right(self, o)
    def __rrshift__(self, o): return _op.shift_right(o, self)

    __hash__ = object.__hash__

    def __bool__(self):
        raise DSLError(
            f"cannot use the symbolic expression `{self}` as a Python bool; "
            "use te.if_then_else / tir.Select, or tir.all / tir.any for conditions")

    def astype(self, dtype):
        """Cast to ``dtype`` (no-op when already of that type)."""
        return _op.cast(dtype, self)

    def equal(self, other):
        """Build ``self == other`` explicitly."""
        return _op.eq(self, other)


class Expr(Node, ExprOp):
    """Base of every expression node; ``dtype`` is a dtype string."""
    __slots__ = ()
    __hash__ = object.__hash__
    __eq__ = ExprOp.__eq__
    __ne__ = ExprOp.__ne__


# ---------------------------------------------------------------- leaves
@node
class Var(Expr):
    """A variable: loop index, shape parameter, or (dtype "handle") a buffer pointer.

    ``serial`` numbers variables in creation order, so that two variables with
    one name sort the same way in every run (the simplifier orders terms).
    """
    name: str
    dtype: str = "int32"
    serial: int = dataclasses.field(default_factory=lambda: next(_VAR_SERIAL), repr=False)
    # A pointer's element type and memory scope (a PointerType), recorded by the Allocate
    # of the pointer (``alloc.buffer_var.type_annotation.storage_scope``); None otherwise.
    type_annotation: Any = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class PrimType:
    """TVM's ``tvm.ir.PrimType``: the type of a scalar or vector value of ``dtype``."""
    dtype: str


@dataclasses.dataclass(frozen=True)
class PointerType:
    """TVM's ``tvm.ir.PointerType``: a pointer to ``element_type`` memory in ``storage_scope``."""
    element_type: PrimType
    storage_scope: str = "global"


@node
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic shape)."""


@node
class IntImm(Expr):
    dtype: str
    value: int

    # A constant is usable as a Python number, as in TVM (``int(C.shape[0])``).
    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)


@node
class FloatImm(Expr):
    dtype: str
    value: float

    def __float__(self):
        return float(self.value)

    def __int__(self):
        return int(self.value)

    def __bool__(self):
        return bool(self.value)


@node
class StringImm(Expr):
    value: str
    dtype: str = "handle"


@node
class Cast(Expr):
    dtype: str
    value: Expr


# ---------------------------------------------------------------- binary
def _number_operands(node):
    """TVM code builds ``tir.EQ(i, 5)``: a Python number beside a scalar Expr becomes a
    constant of that Expr's type."""
    a, b = node.a, node.b
    for mine, other, field in ((a, b, "a"), (b, a, "b")):
        if (isinstance(mine, (int, float)) and not isinstance(mine, bool) and isinstance(other, Expr)
                and dt.lanes(other.dtype) == 1):
            from .op import const
            object.__setattr__(node, field, const(mine, other.dtype))


class BinaryOp(Expr):
    __slots__ = ()
    symbol = "?"

    def __post_init__(self):
        _number_operands(self)

    @property
    def dtype(self):
        return self.a.dtype


@node
class Add(BinaryOp):
    a: Expr
    b: Expr
    symbol = "+"


@node
class Sub(BinaryOp):
    a: Expr
    b: Expr
    symbol = "-"


@node
class Mul(BinaryOp):
    a: Expr
    b: Expr
    symbol = "*"


@node
class Div(BinaryOp):
    """Division: exact for floats, truncating toward zero for integers (C semantics)."""
    a: Expr
    b: Expr
    symbol = "/"


@node
class Mod(BinaryOp):
    """Remainder with the sign of the dividend (C's %)."""
    a: Expr
    b: Expr
    symbol = "%"


@node
class FloorDiv(BinaryOp):
    a: Expr
    b: Expr
    symbol = "//"


@node
class FloorMod(BinaryOp):
    a: Expr
    b: Expr
    symbol = "%"


@node
class Min(BinaryOp):
    a: Expr
    b: Expr


@node
class Max(BinaryOp):
    a: Expr
    b: Expr


class CmpOp(Expr):
    __slots__ = ()
    symbol = "?"

    def __post_init__(self):
        _number_operands(self)

    @property
    def dtype(self):
        return dt.bool_like(self.a.dtype)


@node
class EQ(CmpOp):
    a: Expr
    b: Expr
    symbol = "=="

    def __bool__(self):
        return self.a is self.b


@node
class NE(CmpOp):
    a: Expr
    b: Expr
    symbol = "!="

    def __bool__(self):
        return self.a is not self.b


@node
class LT(CmpOp):
    a: Expr
    b: Expr
    symbol = "<"


@node
class LE(CmpOp):
    a: Expr
    b: Expr
    symbol = "<="


@node
class GT(CmpOp):
    a: Expr
    b: Expr
    symbol = ">"


@node
class GE(CmpOp):
    a: Expr
    b: Expr
    symbol = ">="


@node
class And(CmpOp):
    a: Expr
    b: Expr
    symbol = "and"


@node
class Or(CmpOp):
    a: Expr
    b: Expr
    symbol = "or"


@node
class Not(Expr):
    a: Expr

    @property
    def dtype(self):
        return self.a.dtype


# ---------------------------------------------------------------- others
@node
class Select(Expr):
    """Pick a value by condition; both sides are evaluated (no side effects allowed)."""
    condition: Expr
    true_value: Expr
    false_value: Expr

    @property
    def dtype(self):
        return self.true_value.dtype


@node
class Ramp(Expr):
    """The vector base, base+stride, ..., base+(lanes-1)*stride."""
    base: Expr
    stride: Expr
    lanes: int

    @property
    def dtype(self):
        return dt.with_lanes(self.base.dtype, self.lanes)


@node
class Broadcast(Expr):
    value: Expr
    lanes: int

    @property
    def dtype(self):
        return dt.with_lanes(self.value.dtype, self.lanes)


@node
class Let(Expr):
    var: Var
    value: Expr
    body: Expr

    @property
    def dtype(self):
        return self.body.dtype


class OpName(str):
    """A Call's operator: a plain string ("exp") that also answers TVM's ``call.op.name`` ("tir.exp")."""
    __slots__ = ()

    @property
    def name(self):
        return self if "." in self else "tir." + self


@node
class Call(Expr):
    """An intrinsic call by name: "exp", "if_then_else", "likely", ..."""
    dtype: str
    op: str
    args: tuple

    def __post_init__(self):
        if type(self.op) is not OpName:
            object.__setattr__(self, "op", OpName(self.op))


@node
class Load(Expr):
    """AST3: read ``buffer_var[index]`` from flat memory (vector when index is a Ramp)."""
    dtype: str
    buffer_var: Var
    index: Expr
    predicate: Any = None

    @property
    def indices(self):
        """TVM's ``BufferLoad.indices`` spelling: the flat index, as a one-element tuple."""
        return (self.index,)


@node
class ProducerLoad(Expr):
    """AST1/AST2: read element ``indices`` of a tensor (``A[i, j]``)."""
    producer: Any
    indices: tuple

    @property
    def dtype(self):
        return self.producer.dtype


@node
class CommReducer(Node):
    """A commutative reducer: ``result`` combines ``lhs`` (accumulator) with ``rhs``."""
    lhs: tuple
    rhs: tuple
    result: tuple
    identity_element: tuple

    def __call__(self, a, b):
        from .functor import substitute
        vmap = dict(zip(self.lhs, a)) | dict(zip(self.rhs, b))
        return tuple(substitute(r, vmap) for r in self.result)


@node
class Reduce(Expr):
    """A reduction over ``axis`` (reduce IterVars); appears only at the top of a compute body."""
    combiner: CommReducer
    source: tuple
    axis: tuple
    condition: Expr
    value_index: int
    init: tuple = ()

    @property
    def dtype(self):
        return self.source[self.value_index].dtype


from . import op as _op  # noqa: E402  (operators need the node classes above)
