"""A numpy evaluation of AST1, and the floating-point work it does.

The explorer checks each compiled step against this reference and plots its
time as the line to beat.  Matrix-product-shaped reductions
(``sum(A[..] * B[..])`` over plain axes) go through ``np.einsum`` so the
reference time is numpy's BLAS time; everything else is evaluated with
broadcast index grids, in chunks so memory stays bounded.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import TVMLabError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.printer import reducer_name
from ..ir.tensor import ComputeOp, IterVar, PlaceholderOp, Tensor

CHUNK_ELEMS = 1 << 22    # evaluate at most this many grid points at once


class ReferenceError(TVMLabError):
    """The numpy reference cannot evaluate this program (the check is skipped)."""


def _np_dtype(d):
    return np.dtype(dt.to_numpy(dt.canonical(str(d))))


def eval_dim(e, env):
    """Integer value of a shape expression; ``env`` maps shape variable names to ints."""
    if isinstance(e, (int, np.integer)):
        return int(e)
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        if e.name not in env:
            raise ReferenceError(f"no size given for shape variable {e.name!r}")
        return int(env[e.name])
    v = _Eval({}, env, {}).expr(e)
    return int(v)


def shape_vars(tensors):
    """Names of the symbolic variables in the shapes of ``tensors``, in order."""
    from ..ir.functor import collect_vars
    out = []
    for t in tensors:
        for d in getattr(t, "shape", ()):
            if isinstance(d, E.Expr):
                for v in collect_vars(d):
                    if isinstance(v, E.Var) and v.name not in out:
                        out.append(v.name)
    return out


_CALLS = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "fabs": np.abs, "abs": np.abs,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint,
    "nearbyint": np.rint, "pow": np.power, "power": np.power, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite, "atan2": np.arctan2, "fmod": np.fmod,
    "likely": lambda x: x,
}


def _truncdiv(a, b):
    q = np.floor_divide(a, b)
    fix = (np.mod(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
    return q + fix


class _Eval:
    def __init__(self, values, env, grids):
        self.values, self.env, self.grids = values, env, grids

    def expr(self, e):
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise ReferenceError(f"the numpy reference cannot evaluate {type(e).__name__} nodes")
        return m(e)

    def e_IterVar(self, e):
        return self.e_Var(e.var)

    def e_Var(self, e):
        if e in self.grids:
            return self.grids[e]
        if e.name in self.env:
            return np.int64(self.env[e.name])
        raise ReferenceError(f"variable {e.name!r} has no value in the numpy reference")

    e_SizeVar = e_Var

    def e_IntImm(self, e):
        return np.bool_(e.value) if e.dtype == "bool" else _np_dtype(e.dtype).type(e.value)

    def e_FloatImm(self, e):
        return _np_dtype(e.dtype).type(e.value)

    def e_Cast(self, e):
        return np.asarray(self.expr(e.value)).astype(_np_dtype(e.dtype))

    def _bin(fn):
        return lambda self, e: fn(self.expr(e.a), self.expr(e.b))

    e_Add = _bin(np.add)
    e_Sub = _bin(np.subtract)
    e_Mul = _bin(np.multiply)
    e_Min = _bin(np.minimum)
    e_Max = _bin(np.maximum)
    e_EQ = _bin(np.equal)
    e_NE = _bin(np.not_equal)
    e_LT = _bin(np.less)
    e_LE = _bin(np.less_equal)
    e_GT = _bin(np.greater)
    e_GE = _bin(np.greater_equal)
    e_And = _bin(np.logical_and)
    e_Or = _bin(np.logical_or)
    e_FloorMod = _bin(np.mod)

    def e_Div(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return np.divide(a, b)
        return _truncdiv(a, b)

    def e_Mod(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return np.fmod(a, b)
        return a - b * _truncdiv(a, b)

    def e_FloorDiv(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        return np.floor(np.divide(a, b)) if dt.is_float(e.dtype) else np.floor_divide(a, b)

    def e_Not(self, e):
        return np.logical_not(self.expr(e.a))

    def e_Select(self, e):
        return np.where(self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value))

    def e_Let(self, e):
        self.grids[e.var] = self.expr(e.value)
        try:
            return self.expr(e.body)
        finally:
            del self.grids[e.var]

    def e_Call(self, e):
        if e.op == "if_then_else":
            c, a, b = (self.expr(x) for x in e.args)
            return np.where(c, a, b)
        fn = _CALLS.get(e.op)
        if fn is None:
            raise ReferenceError(f"the numpy reference has no equivalent of intrinsic {e.op!r}")
        with np.errstate(all="ignore"):
            return fn(*(self.expr(x) for x in e.args))

    def e_ProducerLoad(self, e):
        arr = self.values.get(e.producer)
        if arr is None:
            raise ReferenceError(f"tensor {e.producer.name} has no value in the numpy reference")
        idx = []
        for k, i in enumerate(e.indices):
            v = np.asarray(self.expr(i)).astype(np.int64)
            # indices outside the array only occur in branches a guard discards
            idx.append(np.clip(v, 0, max(arr.shape[k] - 1, 0)))
        return arr[tuple(idx)]


def _einsum_plan(op):
    """einsum subscripts for ``sum(X[..] * Y[..])`` over plain axis indices, else None."""
    body = op.body[0]
    if len(op.body) != 1 or not isinstance(body, E.Reduce) or reducer_name(body.combiner) != "sum":
        return None
    if not (isinstance(body.condition, E.IntImm) and body.condition.value):
        return None
    src = body.source[0]
    loads = [src] if isinstance(src, E.ProducerLoad) else (
        [src.a, src.b] if isinstance(src, E.Mul) else None)
    if not loads or not all(isinstance(x, E.ProducerLoad) for x in loads):
        return None
    axes = list(op.axis) + list(body.axis)
    letters = {iv.var: chr(ord("a") + k) for k, iv in enumerate(axes)}
    if len(letters) > 26:
        return None
    subs = []
    for ld in loads:
        s = ""
        for i in ld.indices:
            v = i.var if isinstance(i, IterVar) else i
            if v not in letters or letters[v] in s:
                return None
            s += letters[v]
        subs.append(s)
    out = "".join(letters[iv.var] for iv in op.axis)
    return ",".join(subs) + "->" + out, [ld.producer for ld in loads]


def _compute(op, values, env):
    shape = tuple(eval_dim(iv.dom.extent, env) for iv in op.axis)
    mins = [eval_dim(iv.dom.min, env) for iv in op.axis]
    out_dtypes = [_np_dtype(t.dtype) for t in op.outputs]
    plan = _einsum_plan(op) if not any(mins) else None
    if plan is not None and all(eval_dim(iv.dom.min, env) == 0 for iv in op.body[0].axis):
        subs, ins = plan
        return [np.einsum(subs, *[values[t] for t in ins], optimize=True).astype(out_dtypes[0])]
    red = op.body[0] if isinstance(op.body[0], E.Reduce) else None
    raxes = list(red.axis) if red is not None else []
    rshape = tuple(eval_dim(iv.dom.extent, env) for iv in raxes)
    rmins = [eval_dim(iv.dom.min, env) for iv in raxes]
    nd = len(shape) + len(rshape)
    outs = [np.empty(shape, d) for d in out_dtypes]
    per_row = max(1, math.prod(shape[1:]) * max(1, math.prod(rshape)))
    rows = shape[0] if shape else 1
    step = max(1, CHUNK_ELEMS // per_row)
    for lo in range(0, max(rows, 1), step):
        hi = min(rows, lo + step)
        grids = {}
        for k, iv in enumerate(op.axis):
            n = (hi - lo) if k == 0 else shape[k]
            base = mins[k] + (lo if k == 0 else 0)
            g = np.arange(base, base + n, dtype=np.int64).reshape([-1 if j == k else 1 for j in range(nd)])
            grids[iv.var] = g
        for k, iv in enumerate(raxes):
            j = len(shape) + k
            grids[iv.var] = np.arange(rmins[k], rmins[k] + rshape[k], dtype=np.int64).reshape(
                [-1 if q == j else 1 for q in range(nd)])
        ev = _Eval(values, env, grids)
        cshape = ((hi - lo,) + shape[1:]) if shape else ()
        sl = (slice(lo, hi),) if shape else ()
        if red is None:
            for k, b in enumerate(op.body):
                v = np.broadcast_to(np.asarray(ev.expr(b)), cshape + (1,) * (nd - len(cshape)))
                outs[k][sl] = v.reshape(cshape)
            continue
        name = reducer_name(red.combiner)
        if name is None or len(red.source) != 1:
            raise ReferenceError(f"the numpy reference handles sum/prod/max/min reductions, not "
                                 f"the custom reducer of {op.name}")
        full = cshape + rshape
        src = np.broadcast_to(np.asarray(ev.expr(red.source[0])), full)
        ident = ev.expr(red.combiner.identity_element[0])
        if not (isinstance(red.condition, E.IntImm) and red.condition.value):
            src = np.where(np.broadcast_to(ev.expr(red.condition), full), src, ident)
        fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[name]
        axes = tuple(range(len(cshape), len(full)))
        acc = fn(src.astype(out_dtypes[0]), axis=axes) if rshape and all(rshape) else \
            np.full(cshape, ident, out_dtypes[0])
        outs[0][sl] = acc
    return outs


def evaluate(outputs, inputs, env):
    """Values of every tensor reachable from ``outputs``: {Tensor: ndarray}.

    ``inputs`` maps each placeholder Tensor to its array; ``env`` maps shape
    variable names to ints.
    """
    from ..schedule.schedule import post_order
    values = dict(inputs)
    ops = [o.op if isinstance(o, Tensor) else o for o in outputs]
    with np.errstate(all="ignore"):
        for op in post_order(ops):
            if isinstance(op, PlaceholderOp):
                if op.output(0) not in values:
                    raise ReferenceError(f"no input data for placeholder {op.name}")
                continue
            if not isinstance(op, ComputeOp):
                raise ReferenceError(f"the numpy reference cannot evaluate {type(op).__name__} {op.name}")
            for t, v in zip(op.outputs, _compute(op, values, env)):
                values[t] = v
    return values


# ---------------------------------------------------------------- work
_FLOP_NODES = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)


def _expr_ops(e):
    n, stack = 0, [e]
    while stack:
        x = stack.pop()
        if isinstance(x, E.ProducerLoad):
            continue      # index arithmetic is addressing, not work
        if isinstance(x, _FLOP_NODES):
            n += 1
        elif isinstance(x, E.Call) and x.op in _CALLS and x.op != "likely":
            n += 1
        for f in ("a", "b", "value", "condition", "true_value", "false_value", "body"):
            c = getattr(x, f, None)
            if isinstance(c, E.Expr) and not isinstance(x, E.Reduce):
                stack.append(c)
        if isinstance(x, E.Call):
            stack.extend(a for a in x.args if isinstance(a, E.Expr))
    return n


def flop_count(outputs, env):
    """Arithmetic operations one evaluation of ``outputs`` performs (a matmul: 2·n·m·k)."""
    from ..schedule.schedule import post_order
    total = 0
    ops = [o.op if isinstance(o, Tensor) else o for o in outputs]
    for op in post_order(ops):
        if not isinstance(op, ComputeOp):
            continue
        points = math.prod(eval_dim(iv.dom.extent, env) for iv in op.axis)
        for b in op.body[:1] if isinstance(op.body[0], E.Reduce) else op.body:
            if isinstance(b, E.Reduce):
                rpoints = math.prod(eval_dim(iv.dom.extent, env) for iv in b.axis)
                per = sum(_expr_ops(s) for s in b.source) + \
                    sum(_expr_ops(r) for r in b.combiner.result)
                total += points * rpoints * per
            else:
                total += points * _expr_ops(b)
    return total
