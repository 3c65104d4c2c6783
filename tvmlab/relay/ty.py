"""Types of graph values: a tensor (static shape + dtype), a tuple of types, a function type."""
from __future__ import annotations

from ..ir import dtype as dt
from .base import RelayError


class Dim(int):
    """A shape dimension that remembers an index dtype other than int32 (``int64``).

    It is an ``int`` everywhere (arithmetic, comparisons, hashing), so code that reads
    ``TensorType.shape`` as ints keeps working; relations that pass a dimension through
    (element-wise, broadcast, take) keep its dtype, and ``te_shape`` turns it into an
    ``IntImm`` of that dtype so TE loops over it use 64-bit indices, as in TVM.
    """

    def __new__(cls, value, dtype="int64"):
        d = super().__new__(cls, value)
        d.dtype = dtype
        return d

    def __reduce__(self):
        return (Dim, (int(self), self.dtype))

    def __repr__(self):
        return int.__repr__(self)

    __str__ = __repr__


def dim_text(d):
    """A dimension as the text format spells it: ``5`` or ``5i64``."""
    return f"{int(d)}i64" if getattr(d, "dtype", "int32") == "int64" else str(int(d))


def _dim(d, what):
    if hasattr(d, "value") and isinstance(getattr(d, "value"), int):
        if getattr(d, "dtype", "int32") == "int64" and not isinstance(d.value, bool) and d.value >= 0:
            return Dim(d.value, "int64")
        d = d.value
    if isinstance(d, Dim):
        return d
    try:
        import numpy as np
        if isinstance(d, np.integer):
            d = int(d)
    except ImportError:  # pragma: no cover
        pass
    if not isinstance(d, int) or isinstance(d, bool) or d < 0:
        raise RelayError(f"{what}: a shape dimension must be an int >= 0, got {d!r}")
    return d


class Type:
    """Base class of relay types."""


class TensorType(Type):
    """A tensor of static ``shape`` (tuple of ints) and ``dtype``."""
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype="float32"):
        self.shape = tuple(_dim(d, "TensorType") for d in shape)
        try:
            self.dtype = dt.canonical(dtype)
        except Exception:
            raise RelayError(f"TensorType: unknown dtype {dtype!r}") from None

    @property
    def concrete_shape(self):
        return self.shape

    @property
    def te_shape(self):
        """The shape for a TE placeholder: ints, and an ``IntImm`` for each int64 dimension."""
        from ..ir import expr as _e
        return tuple(_e.IntImm(d.dtype, int(d)) if isinstance(d, Dim) else d for d in self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __eq__(self, other):
        return isinstance(other, TensorType) and self.shape == other.shape and self.dtype == other.dtype

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"Tensor[({', '.join(map(dim_text, self.shape))}{',' if len(self.shape) == 1 else ''}), {self.dtype}]"


class TupleType(Type):
    """A tuple of ``fields`` (types)."""
    __slots__ = ("fields",)

    def __init__(self, fields):
        self.fields = tuple(fields)

    def __eq__(self, other):
        return isinstance(other, TupleType) and self.fields == other.fields

    def __hash__(self):
        return hash(self.fields)

    def __len__(self):
        return len(self.fields)

    def __repr__(self):
        return f"({', '.join(map(repr, self.fields))}{',' if len(self.fields) == 1 else ''})"


class FuncType(Type):
    """The type of a function: argument types and the result type."""
    __slots__ = ("arg_types", "ret_type")

    def __init__(self, arg_types, ret_type):
        self.arg_types = tuple(arg_types)
        self.ret_type = ret_type

    def __eq__(self, other):
        return isinstance(other, FuncType) and (self.arg_types, self.ret_type) == (other.arg_types, other.ret_type)

    def __hash__(self):
        return hash((self.arg_types, self.ret_type))

    def __repr__(self):
        return f"fn ({', '.join(map(repr, self.arg_types))}) -> {self.ret_type!r}"


def tensor_types(t):
    """The tensor types a value of type ``t`` holds, flattened (one for a tensor)."""
    if isinstance(t, TupleType):
        out = []
        for f in t.fields:
            out += tensor_types(f)
        return out
    return [t]
