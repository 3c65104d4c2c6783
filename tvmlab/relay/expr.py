"""Graph expressions: Var, Constant, Call, Tuple, TupleGetItem, Function, Let (TVM's Relay spelling).

Nodes are compared by identity: a graph is a DAG where a value used twice is the
same object.  ``InferType`` stores each node's type in ``checked_type``.
Traversals are iterative (``post_order``), so deep networks never hit
Python's recursion limit.
"""
from __future__ import annotations

import numpy as np

from .base import RelayError
from .ty import TensorType, Type


class Attrs:
    """An operator's attributes: read as ``call.attrs.strides`` or ``call.attrs["strides"]``."""
    _structural_fields = ("_fields",)

    def __init__(self, fields=None):
        object.__setattr__(self, "_fields", dict(fields or {}))

    def __getattr__(self, name):
        if name.startswith("__") or name == "_fields":     # copy/pickle probes, before _fields exists
            raise AttributeError(name)
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"attrs have no field {name!r}; fields: {sorted(self._fields)}") from None

    def __getitem__(self, name):
        return self._fields[name]

    def __setattr__(self, name, value):
        raise RelayError("attrs are immutable; build a new call with other attributes")

    def __reduce__(self):
        return (Attrs, (self._fields,))

    def get(self, name, default=None):
        return self._fields.get(name, default)

    def keys(self):
        return self._fields.keys()

    def items(self):
        return self._fields.items()

    def with_(self, **changes):
        return Attrs({**self._fields, **changes})

    def __eq__(self, other):
        return isinstance(other, Attrs) and self._fields == other._fields

    def __hash__(self):
        return hash(tuple(sorted((k, repr(v)) for k, v in self._fields.items())))

    def __repr__(self):
        return f"Attrs({self._fields})"


class RelayExpr:
    """Base of graph expressions; Python operators build calls (``a + b`` is ``relay.add(a, b)``)."""
    _checked_type = None
    span = None

    @property
    def checked_type(self):
        if self._checked_type is None:
            raise RelayError(f"the type of this {type(self).__name__} is not known yet; "
                             "run relay.transform.InferType() on its module first")
        return self._checked_type

    def children(self):
        return ()

    def astext(self, show_meta_data=False):
        from .printer import astext
        return astext(self)

    def __str__(self):
        return self.astext()

    __repr__ = __str__

    # arithmetic sugar, as in TVM
    def _binary(self, other, name, reverse=False):
        from .op import tensor
        if not isinstance(other, RelayExpr):
            other = const(other, _dtype_hint(self))
        a, b = (other, self) if reverse else (self, other)
        return getattr(tensor, name)(a, b)

    def __add__(self, o):
        return self._binary(o, "add")

    def __radd__(self, o):
        return self._binary(o, "add", True)

    def __sub__(self, o):
        return self._binary(o, "subtract")

    def __rsub__(self, o):
        return self._binary(o, "subtract", True)

    def __mul__(self, o):
        return self._binary(o, "multiply")

    def __rmul__(self, o):
        return self._binary(o, "multiply", True)

    def __truediv__(self, o):
        return self._binary(o, "divide")

    def __rtruediv__(self, o):
        return self._binary(o, "divide", True)

    def __neg__(self):
        from .op import tensor
        return tensor.negative(self)

    def astype(self, dtype):
        from .op import tensor
        return tensor.cast(self, dtype)

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


def _dtype_hint(e):
    t = e._checked_type
    if isinstance(t, TensorType):
        return t.dtype
    if isinstance(e, Var) and isinstance(e.type_annotation, TensorType):
        return e.type_annotation.dtype
    if isinstance(e, Constant):
        return str(e.value.dtype)
    return "float32"


class Var(RelayExpr):
    """A named input (of a function or a let); ``type_annotation`` gives its type."""
    _structural_fields = ("type_annotation",)
    _structural_symbol = True

    def __init__(self, name_hint, type_annotation=None):
        if not isinstance(name_hint, str) or not name_hint:
            raise RelayError(f"relay.var needs a non-empty name, got {name_hint!r}")
        if type_annotation is not None and not isinstance(type_annotation, Type):
            raise RelayError(f"relay.var {name_hint!r}: type_annotation must be a relay type, got "
                             f"{type(type_annotation).__name__}")
        self.name_hint = name_hint
        self.type_annotation = type_annotation

    @property
    def vid(self):
        return self


class Constant(RelayExpr):
    """A constant tensor; ``value`` is the numpy array, ``data`` the tvm NDArray."""
    _structural_fields = ("value",)

    def __init__(self, value):
        self.value = np.asarray(value, order="C")
        self._checked_type = TensorType(self.value.shape, str(self.value.dtype))

    @property
    def data(self):
        from ..runtime import ndarray
        return ndarray.array(self.value)


class Call(RelayExpr):
    """``op(*args)`` with ``attrs``; ``op`` is an Op or (after FuseOps) a primitive Function."""
    _structural_fields = ("op", "args", "attrs")

    def __init__(self, op, args, attrs=None, type_args=None):
        from .op.registry import Op
        if not isinstance(op, (Op, Function, Var)):
            raise RelayError(f"relay.Call: op must be an operator or a function, got {type(op).__name__}")
        args = list(args)
        for k, a in enumerate(args):
            if not isinstance(a, RelayExpr):
                raise RelayError(f"{_op_name(op)}: argument {k} must be a relay expression, got "
                                 f"{type(a).__name__}")
        self.op = op
        self.args = args
        self.attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs)
        self.type_args = list(type_args or [])

    def children(self):
        return self.args


def _op_name(op):
    return getattr(op, "name", None) or type(op).__name__


class Tuple(RelayExpr):
    """A tuple of values (the argument of concatenate, or several outputs)."""
    _structural_fields = ("fields",)

    def __init__(self, fields):
        fields = list(fields)
        for k, f in enumerate(fields):
            if not isinstance(f, RelayExpr):
                raise RelayError(f"relay.Tuple: field {k} must be a relay expression, got {type(f).__name__}")
        self.fields = fields

    def children(self):
        return self.fields

    def __getitem__(self, i):
        return self.fields[i]

    def __len__(self):
        return len(self.fields)

    def astuple(self):
        return self


class TupleGetItem(RelayExpr):
    """Field ``index`` of a tuple value."""
    _structural_fields = ("tuple_value", "index")

    def __init__(self, tuple_value, index):
        if not isinstance(tuple_value, RelayExpr):
            raise RelayError(f"relay.TupleGetItem needs a relay expression, got {type(tuple_value).__name__}")
        if not isinstance(index, int) or index < 0:
            raise RelayError(f"relay.TupleGetItem: index must be an int >= 0, got {index!r}")
        self.tuple_value = tuple_value
        self.index = index

    def children(self):
        return (self.tuple_value,)


class TupleWrapper:
    """An operator result with several outputs (split, batch_norm): index it, or ``astuple()``."""

    def __init__(self, tuple_value, size):
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self):
        return self.tuple_value

    def astext(self):
        return self.tuple_value.astext()

    def __getitem__(self, index):
        if not isinstance(index, int) or not -self.size <= index < self.size:
            raise RelayError(f"tuple index {index!r} out of range for {self.size} outputs")
        return TupleGetItem(self.tuple_value, index % self.size)

    def __len__(self):
        return self.size

    def __iter__(self):
        return (self[i] for i in range(self.size))

    def __repr__(self):
        return f"TupleWrapper({self.tuple_value.astext()}, {self.size})"


class Function(RelayExpr):
    """``fn (params) { body }``; ``attrs`` such as ``{"Primitive": 1}`` mark a fused group."""
    # structural equality compares parameters (and their types), body and attributes; a declared
    # return type is InferType's to check
    _structural_fields = ("params", "body", "attrs")
    _structural_binders = ("params",)

    def __init__(self, params, body, ret_type=None, type_params=None, attrs=None):
        params = list(params)
        for k, p in enumerate(params):
            if not isinstance(p, Var):
                raise RelayError(f"relay.Function: parameter {k} must be a relay.var, got {type(p).__name__}")
        if isinstance(body, TupleWrapper):
            body = body.astuple()
        if not isinstance(body, RelayExpr):
            raise RelayError(f"relay.Function: body must be a relay expression, got {type(body).__name__}")
        self.params = params
        self.body = body
        self.ret_type = ret_type
        self.type_params = list(type_params or [])
        self.attrs = dict(attrs or {})

    def children(self):
        return (self.body,)

    def with_attr(self, key, value):
        return Function(self.params, self.body, self.ret_type, self.type_params, {**self.attrs, key: value})

    def script(self, name="main"):
        """The text of this function as ``def @name(...)`` (how a module prints it)."""
        from .printer import astext
        return astext(self, name=name)


class Let(RelayExpr):
    """``let var = value; body``."""
    _structural_fields = ("var", "value", "body")
    _structural_binders = ("var",)

    def __init__(self, var, value, body):
        if not isinstance(var, Var):
            raise RelayError(f"relay.Let needs a relay.var to bind, got {type(var).__name__}")
        self.var, self.value, self.body = var, value, body

    def children(self):
        return (self.value, self.body)


# ------------------------------------------------------------------ constructors
def var(name_hint, type_annotation=None, shape=None, dtype="float32"):
    """``relay.var("x", shape=(1, 3), dtype="float32")`` (or with a TensorType / shape tuple)."""
    if type_annotation is not None and not isinstance(type_annotation, Type):
        if isinstance(type_annotation, str):
            dtype = type_annotation
            type_annotation = None
        else:
            shape = type_annotation
            type_annotation = None
    if type_annotation is None and shape is not None:
        if isinstance(shape, int):
            shape = (shape,)
        type_annotation = TensorType(shape, dtype)
    return Var(name_hint, type_annotation)


def const(value, dtype=None):
    """A constant from a Python number, a list or a numpy array (float64 becomes float32, as in TVM)."""
    if isinstance(value, Constant):
        return value
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    if isinstance(value, (bool, int, float)) and dtype is None:
        dtype = "bool" if isinstance(value, bool) else ("int32" if isinstance(value, int) else "float32")
    try:
        arr = np.array(value, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise RelayError(f"relay.const: cannot make a tensor of {value!r}: {e}") from None
    if dtype is None and arr.dtype == np.float64:
        arr = arr.astype("float32")
    if dtype is None and arr.dtype == np.int64 and not isinstance(value, np.ndarray):
        arr = arr.astype("int32")
    return Constant(arr)


def bind(expr, binds):
    """Replace the vars of ``expr`` (a Function or an expression) named in ``binds`` (Var or name -> expr)."""
    from .visit import substitute
    return substitute(expr, binds)


# ------------------------------------------------------------------ traversal
def post_order(root, enter_functions=False):
    """Every node reachable from ``root``, each once, operands before their users (iterative DFS).

    A Function used as a Call's op (a fused group) is not entered unless ``enter_functions``.
    """
    out, seen = [], set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            out.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        kids = list(node.children())
        if enter_functions and isinstance(node, Call) and isinstance(node.op, Function):
            kids.append(node.op)
        for c in reversed(kids):
            if id(c) not in seen:
                stack.append((c, False))
    return out
