"""The tensor-expression DSL, spelled as in TVM's ``tvm.te``.

    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
"""
from __future__ import annotations

import builtins
import inspect
import numbers

from .errors import DSLError, TagScopeError
from .ir import dtype as dt
from .ir import expr as E
from .ir import op as _op
from .ir.op import (abs, acos, all, any, asin, atan, ceil, const, cos, cosh, erf, exp, exp2,  # noqa: F401
                    exp10, floor, floordiv, floormod, fmod, if_then_else, isnan, log, log1p, log2, log10,
                    truncdiv, truncmod,
                    max_value, min_value, nearbyint, popcount, pow, power, round, rsqrt, sigmoid, sin,
                    sinh, sqrt, tan, tanh, trunc)
from .ir.tensor import ComputeOp, IterVar, Operation, PlaceholderOp, Range, Tensor  # noqa: F401
from .ir.tensor import TensorComputeOp  # noqa: F401
from .ir.tensor import TensorSlice  # noqa: F401
from .ir.extern import ExternOp, ScanOp, extern, scan  # noqa: F401  (te.extern, te.scan)
from .ir.hybrid import HybridOp  # noqa: F401  (te.hybrid.script's operation; te.hybrid itself: tvmlab/hybrid)
from .ir.tensor import is_thread_tag as _is_thread_tag
from .schedule import Schedule, Stage, create_schedule  # noqa: F401
from .schedule.tensorize import TensorIntrin, decl_tensor_intrin  # noqa: F401
from . import schedule  # noqa: F401  (te.schedule.InferBound / ScheduleOps)
from .ir import tensor  # noqa: F401  (te.tensor.Tensor, as TVM's tests spell it)

indexdiv, indexmod = floordiv, floormod

_name_counts = {}


def _shape(shape, what):
    if isinstance(shape, (numbers.Integral, E.Expr, IterVar)):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise DSLError(f"{what}: shape must be a tuple of ints or integer expressions, got {shape!r}") from None
    out = []
    for k, s in enumerate(shape):
        if isinstance(s, float) and s.is_integer():
            s = int(s)      # TVM's tutorials write N / bn, a float under Python 3
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, E.Expr, IterVar)):
            raise DSLError(f"{what}: shape[{k}] must be an int or an integer expression, got {s!r}")
        e = _op.convert(s)
        if not dt.is_int(e.dtype):
            raise DSLError(f"{what}: shape[{k}] must be an integer, got {e} of type {e.dtype}")
        if isinstance(e, E.IntImm) and e.value < 0:
            raise DSLError(f"{what}: shape[{k}] is negative ({e.value})")
        out.append(e)
    return tuple(out)


def var(name="tindex", dtype="int32"):
    """A scalar variable (e.g. a symbolic size or a scalar argument)."""
    return E.Var(name, dt.canonical(dtype))


def size_var(name="size", dtype="int32"):
    """A non-negative integer variable, for symbolic shapes (a float one, which TVM also
    accepts, is a plain scalar variable)."""
    if dt.is_float(dtype):
        return E.Var(name, dt.canonical(dtype))
    if not dt.is_int(dtype):
        raise DSLError(f"size_var {name!r} must have an integer dtype, got {dtype}")
    return E.SizeVar(name, dt.canonical(dtype))


def placeholder(shape, dtype="float32", name="placeholder"):
    """An input tensor of ``shape`` and ``dtype``."""
    return PlaceholderOp(name, _shape(shape, f"placeholder {name!r}"),
                         _element_dtype(dtype, f"placeholder {name!r}")).output(0)


def _element_dtype(dtype, what):
    """``dtype`` canonical.  A vector dtype ("float32x2") makes a tensor of vector elements:
    its shape counts vectors, and memory holds their lanes contiguously."""
    d = dt.canonical(dtype)
    if dt.is_handle(d) and dt.lanes(d) != 1:
        raise DSLError(f"{what}: tensors of vector handles ({d}) are not supported")
    return d


def _param_names(fcompute, ndim, name):
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(ndim)], False
    params = list(sig.parameters.values())
    if builtins.any(p.kind == p.VAR_POSITIONAL for p in params):
        return [f"i{k}" for k in range(ndim)], True
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(names) != ndim:
        raise DSLError(f"compute {name!r}: the lambda takes {len(names)} index argument(s) "
                       f"({', '.join(names) or 'none'}) but the shape has {ndim} dimension(s)")
    return names, False


class tag_scope:  # noqa: N801 - TVM's name
    """Give every ``compute`` made inside a default tag (a ``with`` block, or a decorator).

    Schedules and graph fusion find operators by tag ("injective", "conv2d_nchw", ...);
    an explicit ``tag=`` wins.  Scopes do not nest (a tagged operator built from another
    tagged one would be ambiguous): opening one inside another raises ``TagScopeError``, a
    ValueError, as in TVM.
    """
    _stack = []

    def __init__(self, tag):
        if not isinstance(tag, str):
            raise DSLError(f"tag_scope needs a string tag, got {type(tag).__name__}: {tag!r}")
        self.tag = tag

    @classmethod
    def get_current(cls):
        return cls._stack[-1] if cls._stack else None

    def __enter__(self):
        if tag_scope._stack:
            raise TagScopeError(f"tag_scope({self.tag!r}) opened inside tag_scope({tag_scope._stack[-1].tag!r}): "
                                "tag scopes do not nest")
        tag_scope._stack.append(self)
        return self

    def __exit__(self, *exc):
        tag_scope._stack.remove(self)

    def __call__(self, fdecl):
        import functools

        @functools.wraps(fdecl)
        def tagged(*args, **kwargs):
            with self:
                return fdecl(*args, **kwargs)
        return tagged


def _index_and_call(shape, fcompute, name):
    """The axes of ``compute`` and what ``fcompute`` returns on them.  Fewer index arguments
    than dimensions are allowed when the body is a tensor intrinsic call (the rest of the shape
    is the intrinsic's tile)."""
    from .schedule.tensorize import TensorIntrinCall

    def axes(names):
        return tuple(IterVar(Range(_op.const(0, s.dtype), s), E.Var(n, s.dtype), IterVar.DATA_PAR)
                     for n, s in zip(names, shape))
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is not None and not builtins.any(p.kind == p.VAR_POSITIONAL for p in params):
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if 0 < len(names) < len(shape):
            axis = axes(names)
            body = fcompute(*[iv.var for iv in axis])
            if isinstance(body, TensorIntrinCall):
                return names, axis, body
    names, _ = _param_names(fcompute, len(shape), name)
    axis = axes(names)
    return names, axis, fcompute(*[iv.var for iv in axis])


def compute(shape, fcompute, name="compute", tag="", attrs=None):
    """A tensor whose element at index ``(i, j, ...)`` is ``fcompute(i, j, ...)``."""
    if not tag and tag_scope._stack:
        tag = tag_scope._stack[-1].tag
    shape = _shape(shape, f"compute {name!r}")
    with E.compute_body():
        names, axis, body = _index_and_call(shape, fcompute, name)
    from .schedule.tensor_compute import tensor_compute
    from .schedule.tensorize import TensorIntrinCall
    if isinstance(body, TensorIntrinCall):
        return _outputs(tensor_compute(shape, axis, body, name, tag, attrs))
    bodies = list(body) if isinstance(body, (list, tuple)) else [body]
    if not bodies:
        raise DSLError(f"compute {name!r}: fcompute returned no values")
    out = []
    for k, b in enumerate(bodies):
        if isinstance(b, Tensor) and b.ndim != 0:
            raise DSLError(f"compute {name!r}: fcompute returned tensor {b.name} itself; "
                           f"index it, e.g. {b.name}[{', '.join(names)}]")
        if isinstance(b, TensorSlice):
            b = b._as_expr()      # A[i] of a 2-d A: says how many indices are missing
        try:
            out.append(_op.convert(b))
        except DSLError:
            raise DSLError(f"compute {name!r}: fcompute must return an expression, got "
                           f"{type(b).__name__}: {b!r}") from None
        if isinstance(out[-1], E.Reduce) and dt.lanes(out[-1].dtype) != 1:
            raise DSLError(f"compute {name!r}: reductions over vector elements ({out[-1].dtype}) are "
                           f"not supported; reduce a scalar tensor ({dt.element_of(out[-1].dtype)}) "
                           f"with one more dimension of {dt.lanes(out[-1].dtype)}")
    _check_reduce_top(out, name)
    return _outputs(ComputeOp(name, tag, attrs, axis, out))


def _outputs(op):
    return op.outputs[0] if op.num_outputs == 1 else list(op.outputs)


def _check_reduce_top(bodies, name):
    from .ir.functor import post_order_visit
    reds = [b for b in bodies if isinstance(b, E.Reduce)]
    if reds and len(reds) != len(bodies):
        raise DSLError(f"compute {name!r}: mixing reductions and plain values in one compute")
    for b in bodies:
        nested = []
        roots = b.source + (b.condition,) if isinstance(b, E.Reduce) else (b,)
        for r in roots:
            post_order_visit(r, lambda x: nested.append(x) if isinstance(x, E.Reduce) else None)
        if nested:
            raise DSLError(f"compute {name!r}: a reduction may only appear at the top of the "
                           f"body (e.g. te.sum(...) * 2 is not allowed; use two computes)")
    if len(reds) > 1:
        first = reds[0]
        for r in reds[1:]:
            if r.combiner is not first.combiner or r.axis != first.axis:
                raise DSLError(f"compute {name!r}: multiple reduction outputs must come "
                               f"from one tuple reducer")


def reduce_axis(dom, name="rv"):
    """A reduction axis over ``dom`` = (min, max) or a Range."""
    if isinstance(dom, Range):
        rng = dom
    else:
        try:
            lo, hi = dom
        except (TypeError, ValueError):
            raise DSLError(f"reduce_axis {name!r}: dom must be (min, max), got {dom!r}") from None
        lo, hi = _op.convert(lo), _op.convert(hi)
        rng = Range(lo, _op.sub(hi, lo))
    return IterVar(rng, E.Var(name, rng.extent.dtype), IterVar.REDUCE)


def thread_axis(dom=None, tag="", name=""):
    """A thread index: ``te.thread_axis("threadIdx.x")`` or ``thread_axis((0, 64), "threadIdx.x")``.

    ``"pipeline"`` (TVM's FPGA marker) binds an axis of extent one (``split(nparts=1)``): the loop
    becomes an ``AttrStmt("pipeline_exec_scope")`` around its body, which CPU targets run as it is.
    """
    if isinstance(dom, str):
        dom, tag = None, dom
    if not tag:
        raise DSLError("thread_axis needs a tag such as 'threadIdx.x', 'blockIdx.x' or 'vthread'")
    if not _is_thread_tag(tag) and tag != "pipeline":
        raise DSLError(f"unknown thread tag {tag!r}; expected blockIdx.x/y/z, threadIdx.x/y/z, "
                       "vthread or pipeline")
    if dom is not None and not isinstance(dom, Range):
        lo, hi = dom
        dom = Range(_op.convert(lo), _op.convert(hi - lo))
    return IterVar(dom, E.Var(name or tag, "int32"), IterVar.THREAD, tag)


def comm_reducer(fcombine, fidentity, name="comm_reduce"):
    """Make a reducer like ``te.sum`` from a combine function and an identity.

    ``fcombine(x, y)`` returns the combined value(s) (for a tuple reducer, x
    and y are tuples); ``fidentity(dtype, ...)`` the identity element(s).  The result is called as
    ``reducer(expr, axis=k)``.
    """
    def reducer(expr, axis, where=None, init=None):
        if where is None and init is None and not isinstance(axis, (IterVar, list, tuple)):
            # te.max(a, b) of two values is the combine itself, as in TVM
            return _op.convert(fcombine(_op.convert(expr), _op.convert(axis)))
        exprs = tuple(expr) if isinstance(expr, (list, tuple)) else (expr,)
        exprs = tuple(_op.convert(e) for e in exprs)
        axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
        for a in axes:
            if not isinstance(a, IterVar) or a.iter_type != IterVar.REDUCE:
                raise DSLError(f"{name}: axis must be te.reduce_axis(...) iter vars, got {a!r}")
        lhs = tuple(E.Var(f"x{k}" if len(exprs) > 1 else "x", e.dtype) for k, e in enumerate(exprs))
        rhs = tuple(E.Var(f"y{k}" if len(exprs) > 1 else "y", e.dtype) for k, e in enumerate(exprs))
        # As in TVM: a tuple reducer's fcombine takes two tuples, (x0, x1) and (y0, y1).
        res = fcombine(lhs, rhs) if len(exprs) > 1 else fcombine(lhs[0], rhs[0])
        res = tuple(res) if isinstance(res, (list, tuple)) else (res,)
        ident = fidentity(*[e.dtype for e in exprs]) if len(exprs) > 1 else fidentity(exprs[0].dtype)
        ident = tuple(ident) if isinstance(ident, (list, tuple)) else (ident,)
        if len(res) != len(exprs) or len(ident) != len(exprs):
            raise DSLError(f"{name}: combine/identity must return {len(exprs)} value(s)")
        res = tuple(_op.cast(e.dtype, _op.convert(r)) for r, e in zip(res, exprs))
        ident = tuple(_op.cast(e.dtype, _op.convert(i)) for i, e in zip(ident, exprs))
        combiner = E.CommReducer(lhs, rhs, res, ident)
        cond = _op.const(True) if where is None else _op._as_bool(where, name)
        inits = ()
        if init is not None:
            inits = tuple(_op.cast(e.dtype, _op.convert(i)) for i, e in
                          zip(init if isinstance(init, (list, tuple)) else (init,), exprs))
        outs = tuple(E.Reduce(combiner, exprs, axes, cond, k, inits) for k in range(len(exprs)))
        return outs[0] if len(outs) == 1 else outs
    reducer.__name__ = name
    reducer.__doc__ = f"Reduce with the {name} combiner over ``axis``."
    return reducer


sum = comm_reducer(lambda x, y: x + y, lambda t: _op.const(0, t), name="sum")  # noqa: A001
max = comm_reducer(lambda x, y: _op.max(x, y), _op.min_value, name="max")  # noqa: A001
min = comm_reducer(lambda x, y: _op.min(x, y), _op.max_value, name="min")  # noqa: A001
prod = comm_reducer(lambda x, y: x * y, lambda t: _op.const(1, t), name="prod")


__all__ = ["placeholder", "compute", "reduce_axis", "thread_axis", "comm_reducer", "sum", "max",
           "min", "prod", "var", "size_var", "tag_scope", "const", "create_schedule", "if_then_else", "all",
           "any", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "pow", "power", "floor",
           "ceil", "round", "fmod", "erf", "Tensor", "Operation", "ComputeOp", "TensorComputeOp", "PlaceholderOp",
           "IterVar", "Schedule", "Stage", "extern", "scan", "ExternOp", "ScanOp"]
