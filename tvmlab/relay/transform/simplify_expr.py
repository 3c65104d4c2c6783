"""SimplifyExpr: rewrites that give exported graphs the operators the kernels are written for.

- A layer norm written out (as ONNX exports before opset 17 and hand-written modules have it):
  ``d = x - mean(x, axes)``, ``v = mean(d ** 2 | d * d, axes)``, ``d / sqrt(v + eps)`` (or
  ``d * rsqrt(v + eps)``), then optionally ``* gamma`` and ``+ beta``, over the last axis, becomes one
  ``nn.layer_norm`` (one kernel, one row at a time, instead of two reductions and a pass between them).
- ``power(x, c)`` with a constant exponent 1, 2, 3 or 0.5 becomes multiplications (or ``sqrt``): libm's
  ``pow`` runs once per vector lane (GPT-2's GELU has ``x ** 3``).
- ``x / c`` with a float constant ``c`` a power of two becomes ``x * (1 / c)`` (exact), as attention
  scales by ``1 / sqrt(64)``.
- ``split(x)[i]`` becomes a ``strided_slice`` of ``x``, which fuses into its reader.
"""
from __future__ import annotations

import numpy as np

from ..expr import Call, Constant, const
from ..op import tensor
from ..op.registry import Op
from ..ty import TensorType
from ..visit import rewrite


def _is(e, *names):
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names


def _scalar(e):
    """The value of a constant holding one number, else None."""
    if isinstance(e, Constant) and e.value.size == 1 and e.value.dtype.kind == "f":
        return float(e.value.reshape(-1)[0])
    return None


def _type(e):
    t = getattr(e, "_checked_type", None)
    return t if isinstance(t, TensorType) else None


def _last_axis_mean(e, x=None):
    """The argument of ``mean(arg, axis=[last], keepdims=True)`` (``arg is x`` when ``x`` is given), else None."""
    if not _is(e, "mean") or not e.attrs.keepdims or e.attrs.exclude:
        return None
    t = _type(e.args[0])
    if t is None or not t.shape:
        return None
    axes = e.attrs.axis
    axes = [axes] if isinstance(axes, int) else list(axes or [])
    if [a % len(t.shape) for a in axes] != [len(t.shape) - 1]:
        return None
    return e.args[0] if x is None or e.args[0] is x else None


def _norm_parts(e):
    """``(x, eps)`` when ``e`` is ``(x - mean(x)) / sqrt(mean((x - mean(x)) ** 2) + eps)`` over the last
    axis (or ``* rsqrt(...)``), else None."""
    if _is(e, "divide") and _is(e.args[1], "sqrt"):
        d, s = e.args[0], e.args[1].args[0]
    elif _is(e, "multiply") and _is(e.args[1], "rsqrt"):
        d, s = e.args[0], e.args[1].args[0]
    else:
        return None
    if not _is(d, "subtract") or not _is(s, "add"):
        return None
    x = d.args[0]
    if _last_axis_mean(d.args[1], x) is None:
        return None
    var, eps = s.args
    if _scalar(eps) is None:
        var, eps = eps, var
    if _scalar(eps) is None:
        return None
    sq = _last_axis_mean(var)
    if sq is None:
        return None
    square = (_is(sq, "power") and sq.args[0] is d and _scalar(sq.args[1]) == 2.0) or \
        (_is(sq, "multiply") and sq.args[0] is d and sq.args[1] is d)
    return (x, _scalar(eps)) if square else None


def _vector_of(e, n, dtype):
    """``e`` as an (n,) constant when it is a constant broadcasting along the last axis only, else None."""
    if not isinstance(e, Constant) or e.value.dtype != dtype:
        return None
    v = e.value
    if v.size == n and all(s == 1 for s in v.shape[:-1]) and (v.ndim == 0 or v.shape[-1] in (1, n)):
        return const(np.ascontiguousarray(np.broadcast_to(v.reshape(-1), (n,))))
    if v.size == 1:
        return const(np.full(n, v.reshape(-1)[0], dtype))
    return None


def _layer_norm(old, memo):
    """``nn.layer_norm`` for a normalisation written out, a following ``* gamma`` / ``+ beta`` folded in.
    Matched on the original (typed) nodes; built from the rewritten ``x`` (``memo``)."""
    from ..op.norm import layer_norm
    parts, gamma, beta = _norm_parts(old), None, None
    if parts is None and _is(old, "multiply", "add"):
        for k in (0, 1):
            inner = old.args[k]
            if _is(old, "add") and _is(inner, "multiply") and _norm_parts(inner.args[0]) is not None:
                parts, gamma, beta = _norm_parts(inner.args[0]), inner.args[1], old.args[1 - k]
            elif _norm_parts(inner) is not None:
                parts = _norm_parts(inner)
                gamma, beta = (old.args[1 - k], None) if _is(old, "multiply") else (None, old.args[1 - k])
            if parts is not None:
                break
    if parts is None:
        return None
    x, eps = parts
    t = _type(old)
    if t is None or _type(x) is None or _type(x).shape != t.shape or "float" not in t.dtype:
        return None
    n = t.shape[-1]
    g = _vector_of(gamma, n, t.dtype) if gamma is not None else const(np.ones(n, t.dtype))
    b = _vector_of(beta, n, t.dtype) if beta is not None else const(np.zeros(n, t.dtype))
    if g is None or b is None:
        return None
    return layer_norm(memo.get(x, x), g, b, axis=-1, epsilon=eps)


def _power(node):
    if not _is(node, "power"):
        return None
    c, x = _scalar(node.args[1]), node.args[0]
    if c == 1.0:
        return x
    if c == 2.0:
        return tensor.multiply(x, x)
    if c == 3.0:
        return tensor.multiply(tensor.multiply(x, x), x)
    if c == 0.5:
        return tensor.sqrt(x)
    return None


def _divide(node):
    c = _scalar(node.args[1]) if _is(node, "divide") else None
    if c is None or c == 0.0 or not np.isfinite(c):
        return None
    m, _ = np.frexp(c)
    if abs(m) != 0.5:           # 1 / c is exact only for powers of two
        return None
    return tensor.multiply(node.args[0], const(np.asarray(1.0 / c, node.args[1].value.dtype)))


def _split_item(node, old):
    """``split(x)[i]`` as ``strided_slice(x)``: an injective slice fuses into the kernel that reads it, where a
    split is a kernel of its own that copies every piece (GPT-2's query, key and value)."""
    from ..expr import TupleGetItem
    if not (isinstance(node, TupleGetItem) and _is(node.tuple_value, "split")):
        return None
    split = node.tuple_value
    t = _type(old.tuple_value.args[0])
    if t is None:
        return None
    from ..op.tensor import split_points
    axis = split.attrs.axis % len(t.shape)
    pts = split_points(split.attrs, t.shape[axis])
    return tensor.strided_slice(split.args[0], [pts[node.index]], [pts[node.index + 1]], axes=[axis])


def simplify(body):
    """``body`` with the rewrites of the module doc applied."""
    memo = {}

    def fn(node, old):
        return _layer_norm(old, memo) or _divide(node) or _power(node) or _split_item(node, old)
    return rewrite(body, fn, memo)[0]
