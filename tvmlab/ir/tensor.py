"""AST1: Range, IterVar, Tensor and the operations that produce tensors.

A ``Tensor`` is output ``value_index`` of an ``Operation``.  Operations keep
their output tensors, so ``op.output(0) is op.output(0)`` and tensors can be
dictionary keys.
"""
from __future__ import annotations

from ..errors import DSLError
from . import dtype as dt
from . import op as _op
from .attrs import AttrMap
from .expr import ExprOp, ProducerLoad, Reduce, Var, _whole, in_compute_body
from .node import Node, node


@node
class Range(Node):
    """The half-open interval [min, min + extent)."""
    min: object
    extent: object

    @staticmethod
    def from_min_extent(mn, extent):
        return Range(_op.convert(mn), _op.convert(extent))

    def __repr__(self):
        return f"range(min={self.min}, ext={self.extent})"

    __str__ = __repr__


def is_thread_tag(tag):
    """Whether ``tag`` names a thread index: blockIdx.x/y/z, threadIdx.x/y/z, vthread or cthread."""
    parts = tag.split(".")
    return tag in ("vthread", "cthread") or (len(parts) == 2 and parts[0] in ("threadIdx", "blockIdx")
                                             and parts[1] in ("x", "y", "z"))


class IterVar(ExprOp):
    """An iteration variable with its domain and kind.

    iter_type: "data_par", "reduce", "thread" (bound to a thread index),
    "opaque".  In expressions an IterVar stands for its ``var``.
    """
    __slots__ = ("dom", "var", "iter_type", "thread_tag")
    DATA_PAR, REDUCE, THREAD, OPAQUE = "data_par", "reduce", "thread", "opaque"
    # TVM's IterVarType codes (``tvm.te.schedule.IterVar.Unrolled``, ...), as
    # ``stage.iter_var_attrs[iv].iter_type`` reports them.
    DataPar, ThreadIndex, CommReduce, Ordered, DimInfo = 0, 1, 2, 3, 4
    Unrolled, Vectorized, Parallelized, Tensorized = 5, 6, 7, 8

    def __init__(self, dom, var, iter_type="data_par", thread_tag=""):
        self.dom = dom
        self.var = var
        self.iter_type = iter_type
        self.thread_tag = thread_tag

    def _as_expr(self):
        return self.var

    def __bool__(self):
        return True

    @property
    def dtype(self):
        return self.var.dtype

    @property
    def name(self):
        return self.var.name

    def __repr__(self):
        dom = f", range({self.dom.min}, {self.dom.extent})" if self.dom is not None else ""
        tag = f", {self.thread_tag!r}" if self.thread_tag else ""
        return f"iter_var({self.var.name}{dom}, {self.iter_type}{tag})"

    __hash__ = object.__hash__


class Operation:
    """Base of operations (AST1 nodes that produce tensors)."""
    __slots__ = ("name", "tag", "attrs", "outputs", "__weakref__")

    def __init__(self, name, tag="", attrs=None):
        self.name = name
        self.tag = tag
        self.attrs = AttrMap(attrs or {})     # TVM's view (``.value``) over plain values
        self.outputs = ()

    def output(self, i):
        if not 0 <= i < len(self.outputs):
            raise DSLError(f"operation {self.name!r} has {len(self.outputs)} outputs, asked for {i}")
        return self.outputs[i]

    @property
    def num_outputs(self):
        return len(self.outputs)

    @property
    def input_tensors(self):
        return []

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"

    __hash__ = object.__hash__


class PlaceholderOp(Operation):
    __slots__ = ("shape", "dtype")

    def __init__(self, name, shape, dtype):
        super().__init__(name)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.outputs = (Tensor(self.shape, dtype, self, 0),)


class ComputeOp(Operation):
    """``out[axis] = body`` for every point of ``axis``; ``body`` may be one Reduce."""
    __slots__ = ("axis", "body", "_reduce_axis")

    def __init__(self, name, tag, attrs, axis, body):
        super().__init__(name, tag, attrs)
        self.axis = tuple(axis)
        self.body = tuple(body)
        red = self.body[0] if isinstance(self.body[0], Reduce) else None
        self._reduce_axis = tuple(red.axis) if red is not None else ()
        shape = tuple(iv.dom.extent for iv in self.axis)
        self.outputs = tuple(Tensor(shape, b.dtype, self, i) for i, b in enumerate(self.body))

    @property
    def reduce_axis(self):
        return list(self._reduce_axis)

    @property
    def input_tensors(self):
        from .functor import collect_tensors
        seen = []
        for b in self.body:
            for t in collect_tensors(b):
                if t not in seen:
                    seen.append(t)
        return seen

    @property
    def is_reduction(self):
        return bool(self._reduce_axis)


class TensorComputeOp(Operation):
    """``te.compute(shape, lambda *outer: intrin(A[i, 0:16], ...))``: a tensor intrinsic called on
    regions of its inputs at every point of the outer axes.

    The first ``schedulable_ndim`` axes are loops; the rest (opaque) are the
    intrinsic's tile, written whole by its statements.  ``input_regions`` hold
    one Range per dimension of each input (a point is a Range of extent 1),
    ``scalar_inputs`` the values of the intrinsic's ``scalar_params``.
    """
    __slots__ = ("axis", "_reduce_axis", "schedulable_ndim", "intrin", "inputs", "input_regions",
                 "scalar_inputs")

    def __init__(self, name, tag, attrs, axis, reduce_axis, schedulable_ndim, intrin, inputs, regions,
                 scalar_inputs=()):
        super().__init__(name, tag, attrs)
        self.axis = tuple(axis)
        self._reduce_axis = tuple(reduce_axis)
        self.schedulable_ndim = int(schedulable_ndim)
        self.intrin = intrin
        self.inputs = tuple(inputs)
        self.input_regions = tuple(tuple(r) for r in regions)
        self.scalar_inputs = tuple(scalar_inputs)
        shape = tuple(iv.dom.extent for iv in self.axis)
        outs = intrin.buffers[len(self.inputs):]
        self.outputs = tuple(Tensor(shape, b.dtype, self, i) for i, b in enumerate(outs))

    @property
    def reduce_axis(self):
        return list(self._reduce_axis)

    @property
    def is_reduction(self):
        return bool(self._reduce_axis)

    @property
    def root_iter_vars(self):
        """The loops: the outer axes, then the reduction axes (the tile's axes are not loops)."""
        return list(self.axis[:self.schedulable_ndim]) + list(self._reduce_axis)

    def index_exprs(self):
        """The expressions of the call: region bounds and scalar values (they may read tensors)."""
        return [x for rng in self.input_regions for r in rng for x in (r.min, r.extent)] + list(self.scalar_inputs)

    @property
    def input_tensors(self):
        from .functor import collect_tensors
        seen = []
        for t in list(self.inputs) + [t for e in self.index_exprs() for t in collect_tensors(e)]:
            if t not in seen:
                seen.append(t)
        return seen


class Tensor(ExprOp):
    """A multi-dimensional array produced by an operation; ``A[i, j]`` reads it."""
    __slots__ = ("shape", "dtype", "op", "value_index", "__weakref__")
    _whole_tensor = True         # ``n + B`` defers to B's reflected operator

    def __init__(self, shape, dtype, op, value_index):
        self.shape = tuple(shape)
        self.dtype = dt.canonical(dtype)
        self.op = op
        self.value_index = value_index

    @property
    def name(self):
        return self.op.name if self.op.num_outputs <= 1 or self.value_index == 0 \
            else f"{self.op.name}.v{self.value_index}"

    @property
    def ndim(self):
        return len(self.shape)

    def __call__(self, *indices):
        if len(indices) == 1 and isinstance(indices[0], (list, tuple)):
            indices = tuple(indices[0])
        if len(indices) != self.ndim:
            raise DSLError(f"tensor {self.name} has {self.ndim} dimensions, "
                           f"indexed with {len(indices)} indices")
        idx = []
        for k, x in enumerate(indices):
            e = _op.convert(x)
            if not dt.is_int(e.dtype) or dt.lanes(e.dtype) != 1:
                raise DSLError(f"index {k} of tensor {self.name} must be a scalar integer, "
                               f"got {e} of type {e.dtype}")
            idx.append(e)
        return ProducerLoad(self, tuple(idx))

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        if builtins_any(isinstance(x, slice) for x in indices):
            return TensorRegion(self, indices)    # A[i, 0:16]: an argument of a tensor intrinsic
        if len(indices) < self.ndim:
            return TensorSlice(self, indices)     # A[i][j], as in TVM
        return self(*indices)

    # Arithmetic on whole tensors makes an element-wise compute (TVM's te does
    # this through topi's broadcast ops); inside a compute body a 0-d tensor
    # meeting a scalar stays the scalar it holds.
    def _tensor_op(self, opname, other, reflected=False):
        if self.ndim == 0 and in_compute_body() and not _whole(other):
            return None
        from .broadcast import binary
        return binary(opname, other, self) if reflected else binary(opname, self, other)

    def __add__(self, o): return self._tensor_op("add", o) or ExprOp.__add__(self, o)
    def __radd__(self, o): return self._tensor_op("add", o, True) or ExprOp.__radd__(self, o)
    def __sub__(self, o): return self._tensor_op("subtract", o) or ExprOp.__sub__(self, o)
    def __rsub__(self, o): return self._tensor_op("subtract", o, True) or ExprOp.__rsub__(self, o)
    def __mul__(self, o): return self._tensor_op("multiply", o) or ExprOp.__mul__(self, o)
    def __rmul__(self, o): return self._tensor_op("multiply", o, True) or ExprOp.__rmul__(self, o)
    def __truediv__(self, o): return self._tensor_op("divide", o) or ExprOp.__truediv__(self, o)
    def __rtruediv__(self, o):
        return self._tensor_op("divide", o, True) or ExprOp.__rtruediv__(self, o)
    def __floordiv__(self, o): return self._tensor_op("floor_divide", o) or ExprOp.__floordiv__(self, o)
    def __rfloordiv__(self, o):
        return self._tensor_op("floor_divide", o, True) or ExprOp.__rfloordiv__(self, o)
    def __mod__(self, o): return self._tensor_op("floor_mod", o) or ExprOp.__mod__(self, o)
    def __rmod__(self, o): return self._tensor_op("floor_mod", o, True) or ExprOp.__rmod__(self, o)

    def _as_expr(self):
        if self.ndim != 0:
            raise DSLError(f"tensor {self.name} of shape {self.shape} used as a scalar; index it")
        return self()

    def astype(self, dtype):
        """The tensor converted to ``dtype`` element-wise (TVM's ``Tensor.astype``, topi's ``cast``);
        a 0-d tensor gives a scalar expression."""
        if self.ndim == 0:
            return ExprOp.astype(self, dtype)
        from .broadcast import cast
        return cast(self, dtype)

    def __bool__(self):
        return True

    def __iter__(self):
        raise DSLError(f"tensor {self.name} is not iterable; index it with A[i, ...]")

    def __len__(self):
        raise DSLError(f"len() of tensor {self.name}: use {self.name}.shape")

    def __repr__(self):
        shape = ", ".join(str(s) for s in self.shape)
        return f"Tensor(shape=[{shape}], op.name={self.op.name}, dtype={self.dtype})"

    __hash__ = object.__hash__

    def __eq__(self, other):
        if isinstance(other, Tensor):
            return self is other
        return ExprOp.__eq__(self, other)

    def __ne__(self, other):
        if isinstance(other, Tensor):
            return self is not other
        return ExprOp.__ne__(self, other)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)


class TensorRegion:
    """``A[i, 0:16]``: a region of a tensor (points and ranges), the argument form a tensor
    intrinsic takes in ``te.compute(shape, lambda i: intrin(A[i, 0:16], ...))``."""
    __slots__ = ("tensor", "items")

    def __init__(self, tensor, indices):
        from . import op as _op
        if len(indices) != tensor.ndim:
            raise DSLError(f"region of tensor {tensor.name}: {len(indices)} of its {tensor.ndim} "
                           "dimensions given; give an index or a range for each")
        items = []
        for k, x in enumerate(indices):
            if isinstance(x, slice):
                if x.step not in (None, 1):
                    raise DSLError(f"region of tensor {tensor.name}: dimension {k} has step {x.step}; "
                                   "only unit steps are supported")
                lo = _op.convert(0 if x.start is None else x.start)
                hi = _op.convert(tensor.shape[k] if x.stop is None else x.stop)
                items.append((lo, _op.sub(hi, lo)))
            else:
                items.append(_op.convert(x))
        self.tensor, self.items = tensor, tuple(items)

    def __repr__(self):
        parts = [f"{x[0]}:{x[0]}+{x[1]}" if isinstance(x, tuple) else str(x) for x in self.items]
        return f"{self.tensor.name}[{', '.join(parts)}]"


class TensorSlice(ExprOp):
    """``A[i]`` of a tensor of higher rank: index it further (``A[i][j]``) to read an element."""
    __slots__ = ("tensor", "indices")

    def __init__(self, tensor, indices):
        self.tensor = tensor
        self.indices = tuple(indices)

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self.tensor[self.indices + indices]

    def asobject(self):
        """The element read, once every dimension is indexed."""
        return self.tensor(*self.indices)

    def _as_expr(self):
        if len(self.indices) != self.tensor.ndim:
            raise DSLError(f"tensor {self.tensor.name} has {self.tensor.ndim} dimensions, "
                           f"indexed with {len(self.indices)} indices")
        return self.asobject()

    @property
    def dtype(self):
        return self.tensor.dtype

    def __bool__(self):
        return True

    __hash__ = object.__hash__


def builtins_any(it):
    for x in it:
        if x:
            return True
    return False


def iter_var(name, extent, iter_type=IterVar.DATA_PAR, dtype="int32", mn=0):
    """A fresh IterVar over [mn, mn + extent)."""
    return IterVar(Range.from_min_extent(mn, extent), Var(name, dtype), iter_type)


__all__ = ["Range", "IterVar", "Operation", "PlaceholderOp", "ComputeOp", "Tensor", "iter_var", "Var"]
