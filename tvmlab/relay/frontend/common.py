"""What every frontend shares: its errors, shape inference of a partly built graph, and small helpers.

A frontend turns a framework's graph into Relay calls one node at a time; some
conversions need the static shape of a value already converted (Flatten's
axis, Conv's ``SAME`` padding, MatMul's rank), which ``infer_shape`` reads off
Relay's own type inference so there is one source of truth for shapes.
"""
from __future__ import annotations

import numpy as np

from ...errors import TVMLabError


class FrontendError(TVMLabError, ValueError):
    """A model cannot be imported: a bad or unsupported graph, attribute or input."""


class OpNotImplemented(FrontendError, NotImplementedError):
    """The model uses operators the frontend has no converter for."""


class MissingInputShape(FrontendError):
    """A graph input has no static shape and none was given."""


def relay_module():
    """``tvmlab.relay``, imported when first needed (it imports this package)."""
    from ... import relay
    return relay


class ShapeCache:
    """Static shapes and dtypes of Relay expressions, inferred once per expression."""

    def __init__(self):
        self._types = {}

    def checked_type(self, expr):
        key = id(expr)
        hit = self._types.get(key)
        if hit is not None and hit[0] is expr:
            return hit[1]
        try:
            return expr.checked_type        # already inferred (types are stored on the nodes)
        except TVMLabError:
            pass
        relay = relay_module()
        from ...ir.function import IRModule
        mod = IRModule.from_expr(expr)
        mod = relay.transform.InferType()(mod)
        ty = mod["main"].body.checked_type
        self._types[key] = (expr, ty)      # keep expr alive so its id is not reused
        return ty

    def shape(self, expr):
        ty = self.checked_type(expr)
        if not hasattr(ty, "shape"):
            raise FrontendError(f"expected a tensor, got a value of type {ty}")
        return tuple(int(d) for d in ty.shape)

    def dtype(self, expr):
        return str(self.checked_type(expr).dtype)


def prod(values):
    out = 1
    for v in values:
        out *= int(v)
    return out


def normalize_axis(axis, rank, what="axis"):
    """``axis`` in [-rank, rank) as a non-negative int, or a FrontendError."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise FrontendError(f"{what} {axis} is out of range for a tensor of rank {rank}"
                            f" (expected {-rank}..{rank - 1})")
    return axis + rank if axis < 0 else axis


def as_tuple_of_ints(values):
    return tuple(int(v) for v in np.asarray(values).reshape(-1))


def fold_same_padding(in_size, kernel, stride, dilation, upper=True):
    """(begin, end) padding that makes an output of ceil(in / stride), as ``SAME_UPPER``/``SAME_LOWER``."""
    out = -(-in_size // stride)
    eff = (kernel - 1) * dilation + 1
    total = max((out - 1) * stride + eff - in_size, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


# ---------------------------------------------------------------- compositions both frontends emit
def matmul(r, shape_of, a, b):
    """numpy's matmul as Relay: dense for a 2-D right operand, batch_matmul over broadcast batch dims,
    1-D operands promoted and squeezed back."""
    a_shape, b_shape = list(shape_of(a)), list(shape_of(b))
    if not a_shape or not b_shape:
        raise FrontendError("matmul operands must have rank 1 or more")
    squeeze = []
    if len(a_shape) == 1:
        a, a_shape = r.reshape(a, newshape=(1, a_shape[0])), [1, a_shape[0]]
        squeeze.append(-2)
    if len(b_shape) == 1:
        b, b_shape = r.reshape(b, newshape=(b_shape[0], 1)), [b_shape[0], 1]
        squeeze.append(-1)
    if a_shape[-1] != b_shape[-2]:
        raise FrontendError(f"shapes {a_shape} and {b_shape} do not multiply")
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    batch_a, batch_b = a_shape[:-2], b_shape[:-2]
    if not batch_b:     # dense over the leading axes as they are: a bias or activation after it keeps its shape
        out = r.nn.dense(a, r.transpose(b, axes=[1, 0]))
        out_shape = batch_a + [m, n]
        if squeeze:
            out = r.squeeze(out, axis=sorted(len(out_shape) + s for s in squeeze))
        return out
    # one rank, batch axes of 1 broadcast by the product itself; b read as (..., K, N) in place
    rank = max(len(batch_a), len(batch_b))
    if len(batch_a) < rank:
        a = r.reshape(a, newshape=tuple([1] * (rank - len(batch_a)) + batch_a + [m, k]))
    if len(batch_b) < rank:
        b = r.reshape(b, newshape=tuple([1] * (rank - len(batch_b)) + batch_b + [k, n]))
    out = r.nn.batch_matmul(a, b, transpose_b=False)
    out_shape = broadcast_shapes(batch_a, batch_b) + [m, n]
    if squeeze:
        out = r.squeeze(out, axis=sorted(len(out_shape) + s for s in squeeze))
    return out


def broadcast_shapes(a, b):
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + list(a), [1] * (rank - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise FrontendError(f"batch dimensions {a} and {b} do not broadcast")
        out.append(max(x, y))
    return out


def layer_norm(r, x, axes, gamma, beta, epsilon, dtype, shape_of=None):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over ``axes`` (gamma/beta may be None): one
    ``nn.layer_norm`` over a single axis with 1-D gamma and beta (``shape_of`` tells), else its composition."""
    if shape_of is not None and len(axes) == 1:
        n = shape_of(x)[axes[0]]
        if all(v is None or tuple(shape_of(v)) == (n,) for v in (gamma, beta)):
            g = gamma if gamma is not None else r.const(np.ones(n, dtype))
            b = beta if beta is not None else r.const(np.zeros(n, dtype))
            return r.nn.layer_norm(x, g, b, axis=axes[0], epsilon=float(epsilon), center=beta is not None,
                                   scale=gamma is not None)
    centred = r.subtract(x, r.mean(x, axis=axes, keepdims=True))
    var = r.mean(r.multiply(centred, centred), axis=axes, keepdims=True)
    out = r.multiply(centred, r.rsqrt(r.add(var, r.const(float(epsilon), dtype))))
    if gamma is not None:
        out = r.multiply(out, gamma)
    if beta is not None:
        out = r.add(out, beta)
    return out


def gelu(r, x, approximate, dtype):
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation when ``approximate == 'tanh'``."""
    c = lambda v: r.const(float(v), dtype)  # noqa: E731
    if approximate == "tanh":
        cube = r.multiply(r.multiply(x, x), x)
        gate = r.tanh(r.multiply(c(np.sqrt(2 / np.pi)), r.add(x, r.multiply(c(0.044715), cube))))
    elif approximate == "none":
        gate = r.erf(r.multiply(x, c(1 / np.sqrt(2))))
    else:
        raise FrontendError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return r.multiply(r.multiply(c(0.5), x), r.add(c(1.0), gate))


def upsample_nearest(r, x, shape, factors):
    """Nearest-neighbour upsampling by whole ``factors`` (one per axis): reshape, broadcast, reshape."""
    if all(f == 1 for f in factors):
        return x
    split, wide = [], []
    for d, f in zip(shape, factors):
        split += [d, 1]
        wide += [d, f]
    y = r.broadcast_to(r.reshape(x, newshape=tuple(split)), shape=tuple(wide))
    return r.reshape(y, newshape=tuple(d * f for d, f in zip(shape, factors)))


def einsum(r, shape_of, xs, equation):
    """``relay.einsum`` of ``xs``; two operands in a matrix-product form (each letter once per operand, every
    letter kept or shared, no size-1 broadcasting) become transposes around one dense or batch_matmul, which
    have tuned schedules."""
    return _einsum_as_matmul(r, shape_of, xs, equation) or r.einsum(list(xs), equation)


def _einsum_as_matmul(r, shape_of, xs, equation):
    if len(xs) != 2 or "->" not in equation or "." in equation:
        return None
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    shapes = [list(shape_of(x)) for x in xs]
    if len(terms) != 2 or any(len(t) != len(s) or len(set(t)) != len(t) for t, s in zip(terms, shapes)):
        return None
    a, b = terms
    size = {}
    for t, s in zip(terms, shapes):
        for c, d in zip(t, s):
            if size.setdefault(c, d) != d:
                return None
    if len(set(out)) != len(out) or any(c not in size for c in out) or \
            any(c not in out and (c not in a or c not in b) for c in size):
        return None
    batch = [c for c in out if c in a and c in b]
    left = [c for c in out if c in a and c not in b]
    right = [c for c in out if c in b and c not in a]
    contract = [c for c in a if c in b and c not in out]

    def arrange(x, term, order, shape3):
        perm = [term.index(c) for c in order]
        if perm != list(range(len(perm))):
            x = r.transpose(x, axes=perm)
        return r.reshape(x, newshape=shape3)
    nb, m, n, k = (prod(size[c] for c in g) for g in (batch, left, right, contract))
    if batch:
        y = r.nn.batch_matmul(arrange(xs[0], a, batch + left + contract, (nb, m, k)),
                              arrange(xs[1], b, batch + right + contract, (nb, n, k)))
    else:
        y = r.nn.dense(arrange(xs[0], a, left + contract, (m, k)), arrange(xs[1], b, right + contract, (n, k)))
    got = batch + left + right
    y = r.reshape(y, newshape=tuple(size[c] for c in got))
    perm = [got.index(c) for c in out]
    return y if perm == list(range(len(perm))) else r.transpose(y, axes=perm)
