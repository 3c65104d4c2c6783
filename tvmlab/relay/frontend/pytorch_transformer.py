"""``aten::`` converters transformer modules trace to: embedding, masked_fill, tril / triu, rsub, baddbmm,
split, expand, arange, type_as and scaled_dot_product_attention.

They emit what the ONNX frontend emits for the same graphs (take for embeddings, where for masks, the
batched matmul of ``common.matmul``), so both get the same fusion: the scale and mask in the scores'
kernel, softmax one kernel per row.  Each converter is ``fn(ctx, args)`` as in ``pytorch``.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError, matmul, normalize_axis


def _is_expr(v):
    from ..expr import RelayExpr
    return isinstance(v, RelayExpr)


def _const_like(c, value, like):
    dtype = c.shapes.dtype(like)
    return c.relay.const(np.asarray(value, dtype).item(), dtype)


def _embedding(c, a):
    """aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): rows of the table."""
    return c.relay.take(a[0], a[1], axis=0)


def _masked_fill(c, a):
    """aten::masked_fill(x, mask, value): ``value`` where the (broadcast) mask is set."""
    x, mask, value = a[0], a[1], a[2]
    value = value if _is_expr(value) else _const_like(c, value, x)
    if c.shapes.dtype(mask) != "bool":
        mask = c.relay.not_equal(mask, _const_like(c, 0, mask))
    return c.relay.where(mask, value, x)


def _triangle(lower):
    def convert(c, a):
        """aten::tril / triu(x, diagonal=0): the last two axes' triangle kept, the rest zero."""
        x = a[0]
        diagonal = int(a[1]) if len(a) > 1 and a[1] is not None else 0
        shape = c.shape(x)
        if len(shape) < 2:
            raise FrontendError(f"{'tril' if lower else 'triu'} needs 2 or more axes, got shape {shape}")
        rows, cols = shape[-2:]
        keep = np.tri(rows, cols, k=diagonal, dtype=bool) if lower else ~np.tri(rows, cols, k=diagonal - 1,
                                                                                   dtype=bool)
        return c.relay.where(c.relay.const(keep), x, _const_like(c, 0, x))
    return convert


def _rsub(c, a):
    """aten::rsub(x, other, alpha=1): ``other - alpha * x`` (``1.0 - mask`` in attention masks)."""
    r = c.relay
    x, other = a[0], a[1]
    alpha = float(a[2]) if len(a) > 2 and a[2] is not None else 1.0
    if alpha != 1.0:
        x = r.multiply(x, _const_like(c, alpha, x))
    other = other if _is_expr(other) else _const_like(c, other, x)
    return r.subtract(other, x)


def _baddbmm(c, a):
    """aten::baddbmm(input, b1, b2, beta=1, alpha=1): ``beta * input + alpha * (b1 @ b2)``."""
    r = c.relay
    prod = matmul(r, c.shape, a[1], a[2])
    beta = float(a[3]) if len(a) > 3 and a[3] is not None else 1.0
    alpha = float(a[4]) if len(a) > 4 and a[4] is not None else 1.0
    if alpha != 1.0:
        prod = r.multiply(prod, _const_like(c, alpha, prod))
    if beta == 0.0:
        return prod
    base = a[0] if beta == 1.0 else r.multiply(a[0], _const_like(c, beta, prod))
    return r.add(base, prod)


def _split(c, a):
    """aten::split(x, size or sizes, dim) / split_with_sizes(x, sizes, dim): a list of slices."""
    x, sizes = a[0], a[1]
    shape = c.shape(x)
    dim = normalize_axis(a[2] if len(a) > 2 and a[2] is not None else 0, len(shape))
    n = shape[dim]
    if isinstance(sizes, (list, tuple)):
        sizes = [int(s) for s in sizes]
        if sum(sizes) != n:
            raise FrontendError(f"split sizes {sizes} do not add up to axis {dim}'s {n}")
    else:
        sizes = [int(sizes)] * (n // int(sizes)) + ([n % int(sizes)] if n % int(sizes) else [])
    out, start = [], 0
    for s in sizes:
        out.append(c.relay.strided_slice(x, begin=[start], end=[start + s], axes=[dim]))
        start += s
    return out


def _expand(c, a):
    """aten::expand(x, sizes, implicit): broadcast, -1 keeping an axis."""
    x = a[0]
    shape = list(c.shape(x))
    sizes = [int(s) for s in a[1]]
    shape = [1] * (len(sizes) - len(shape)) + shape
    target = [d if s == -1 else s for d, s in zip(shape, sizes)]
    return c.relay.broadcast_to(c.relay.reshape(x, newshape=tuple(shape)), shape=tuple(target))


def _expand_as(c, a):
    return _expand(c, [a[0], list(c.shape(a[1]))])


def _arange(c, a):
    """aten::arange(end, dtype, layout, device, pin_memory), (start, end, dtype, ...) or (start, end, step,
    dtype, ...) of Python numbers: a constant (int64 for ints, as torch)."""
    from .pytorch_more import _TORCH_DTYPES
    nums = list(a[:len(a) - 4])
    if not 1 <= len(nums) <= 3 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in nums):
        raise FrontendError(f"arange needs constant bounds, got {a}")
    values = np.arange(*nums)
    dtype = _TORCH_DTYPES.get(a[-4]) if a[-4] is not None else None
    dtype = dtype or ("float32" if values.dtype.kind == "f" else "int64")
    return c.relay.const(values.astype(dtype))


def _type_as(c, a):
    return c.relay.cast(a[0], c.shapes.dtype(a[1]))


def _sdpa(c, a):
    """aten::scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0, is_causal=False, scale=None):
    ``softmax(q k^T * scale + mask) v``; a bool mask keeps where set, a float mask is added."""
    r = c.relay
    q, k, v = a[0], a[1], a[2]
    mask = a[3] if len(a) > 3 else None
    causal = bool(a[5]) if len(a) > 5 and a[5] is not None else False
    qs, ks = c.shape(q), c.shape(k)
    scale = float(a[6]) if len(a) > 6 and a[6] is not None else 1.0 / float(np.sqrt(qs[-1]))
    rank = len(ks)
    kt = r.transpose(k, axes=list(range(rank - 2)) + [rank - 1, rank - 2])
    s = r.multiply(matmul(r, c.shape, q, kt), _const_like(c, scale, q))
    low = _const_like(c, np.finfo(np.float32).min, q)
    if causal:
        keep = np.tri(qs[-2], ks[-2], k=ks[-2] - qs[-2], dtype=bool)
        s = r.where(r.const(keep), s, low)
    if mask is not None:
        s = r.where(mask, s, low) if c.shapes.dtype(mask) == "bool" else r.add(s, mask)
    return matmul(r, c.shape, r.nn.softmax(s, axis=-1), v)


TRANSFORMER = {
    "aten::embedding": _embedding, "aten::masked_fill": _masked_fill, "aten::masked_fill_": _masked_fill,
    "aten::tril": _triangle(True), "aten::triu": _triangle(False),
    "aten::rsub": _rsub, "aten::baddbmm": _baddbmm,
    "aten::split": _split, "aten::split_with_sizes": _split, "aten::expand": _expand,
    "aten::expand_as": _expand_as, "aten::arange": _arange, "aten::type_as": _type_as,
    "aten::scaled_dot_product_attention": _sdpa,
}
