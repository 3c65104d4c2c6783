"""More ``aten::`` converters for ``from_pytorch``: comparisons, logic, where, argmax/argmin, cumsum, prod,
einsum, bmm, ``.to(dtype)``, interpolation (nearest and bilinear, any size) and more element-wise ops.

Kept apart from ``pytorch`` so each file stays small; ``pytorch.CONVERTERS``
takes this table in. Each converter is ``fn(ctx, args)`` as there.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError, einsum, matmul, normalize_axis, upsample_nearest

# torch's ScalarType numbering (what a traced aten::to carries)
_TORCH_DTYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                 7: "float64", 11: "bool"}


def _is_expr(v):
    from ..expr import RelayExpr
    return isinstance(v, RelayExpr)


def _pair_of(c, x, y):
    """Both as expressions; a Python scalar becomes a constant of the other's dtype (an integer tensor meeting
    a float scalar is cast to float32 first, as torch promotes)."""
    r = c.relay
    for a, b in ((x, y), (y, x)):
        if _is_expr(a) and isinstance(b, float) and "int" in c.shapes.dtype(a):
            if a is x:
                x = r.cast(x, "float32")
            else:
                y = r.cast(y, "float32")
    if not _is_expr(x):
        x = r.const(np.asarray(x, c.shapes.dtype(y)).item(), c.shapes.dtype(y))
    if not _is_expr(y):
        y = r.const(np.asarray(y, c.shapes.dtype(x)).item(), c.shapes.dtype(x))
    return x, y


def _binary(name):
    def convert(c, a):
        return getattr(c.relay, name)(*_pair_of(c, a[0], a[1]))
    return convert


def _where(c, a):
    x, y = a[1], a[2]
    if not _is_expr(x) and not _is_expr(y):
        raise FrontendError("where of two Python scalars is not supported")
    x, y = _pair_of(c, x, y)
    return c.relay.where(a[0], x, y)


def _arg(name):
    def convert(c, a):
        r = c.relay
        x = a[0]
        keep = bool(a[2]) if len(a) > 2 and a[2] is not None else False
        if len(a) < 2 or a[1] is None:        # over all elements: of the flattened tensor
            shape = c.shape(x)
            x = r.reshape(x, newshape=(int(np.prod(shape)),))
            out = getattr(r, name)(x, axis=0, keepdims=keep)
            if keep:
                out = r.reshape(out, newshape=(1,) * len(shape))
        else:
            out = getattr(r, name)(x, axis=normalize_axis(a[1], len(c.shape(x))), keepdims=keep)
        return r.cast(out, "int64")
    return convert


def _dtype_arg(v, what="dtype"):
    if v is None:
        return None
    if int(v) not in _TORCH_DTYPES:
        raise FrontendError(f"{what} {v} (a torch ScalarType) is not supported; known: {_TORCH_DTYPES}")
    return _TORCH_DTYPES[int(v)]


def _cumsum(c, a):
    x = a[0]
    dtype = _dtype_arg(a[2]) if len(a) > 2 else None
    return c.relay.cumsum(x, axis=normalize_axis(a[1], len(c.shape(x))), dtype=dtype)


def _prod(c, a):
    r = c.relay
    x = a[0]
    if len(a) <= 2:                 # aten::prod(x, dtype): all elements
        out = r.prod(x, axis=None)
        dtype = _dtype_arg(a[1]) if len(a) > 1 else None
    else:                           # aten::prod(x, dim, keepdim, dtype)
        out = r.prod(x, axis=[normalize_axis(a[1], len(c.shape(x)))], keepdims=bool(a[2]))
        dtype = _dtype_arg(a[3]) if len(a) > 3 else None
    return out if dtype is None else r.cast(out, dtype)


def _einsum(c, a):
    eq, xs = a[0], a[1]
    if not isinstance(eq, str) or "." in eq:
        raise FrontendError(f"equation {eq!r}: an ellipsis ('...') is not supported")
    return einsum(c.relay, c.shape, list(xs), eq.replace(" ", ""))


def _to(c, a):
    """aten::to(x, dtype, non_blocking, copy, memory_format) or to(x, device, dtype, ...)."""
    dtype = next((v for v in a[1:3] if isinstance(v, int) and not isinstance(v, bool)), None)
    if dtype is None:
        return a[0]                 # a device move: nothing to do on the CPU
    dtype = _dtype_arg(dtype)
    return a[0] if c.shapes.dtype(a[0]) == dtype else c.relay.cast(a[0], dtype)


def _sizes(c, x, size, scales):
    """The output (h, w) and the coordinate scales (out/in) of torch's interpolation arguments."""
    shape = c.shape(x)
    if size is not None:
        size = [int(s) for s in size]
        return size, None
    if scales is None or any(s is None for s in scales):
        raise FrontendError("interpolation needs an output size or scale factors")
    scales = [float(s) for s in scales]
    return [int(np.floor(d * f)) for d, f in zip(shape[2:], scales)], scales


def _upsample(method):
    def convert(c, a):
        """upsample_nearest2d(x, size, scale_factors) / (x, size, scale_h, scale_w);
        upsample_bilinear2d / bicubic2d(x, size, align_corners, scale_factors) / (x, size, align_corners, sh, sw)."""
        x = a[0]
        shape = c.shape(x)
        if len(shape) != 4:
            raise FrontendError(f"expected an NCHW input, got shape {shape}")
        if method == "nearest":
            align, rest = False, a[2:]
        else:
            align, rest = bool(a[2]), a[3:]
        scales = rest[0] if len(rest) == 1 else (list(rest[:2]) if len(rest) >= 2 else None)
        size, scales = _sizes(c, x, a[1], scales)
        factors = [o / i for o, i in zip(size, shape[2:])]
        if method == "nearest" and all(f >= 1 and f == int(f) for f in factors) and \
                (scales is None or scales == factors):
            return upsample_nearest(c.relay, x, shape, [1, 1] + [int(f) for f in factors])
        if method == "nearest":
            mode, rounding = "asymmetric", "floor"
        else:
            mode, rounding = ("align_corners" if align else "half_pixel"), ""
        return c.relay.image.resize2d(x, size=size, method="nearest_neighbor" if method == "nearest" else method,
                                      coordinate_transformation_mode=mode, rounding_method=rounding,
                                      scale=None if scales is None or align else scales, cubic_alpha=-0.75)
    return convert


def _topk(c, a):
    """aten::topk(x, k, dim=-1, largest=True, sorted=True) -> (values, int64 indices)."""
    x = a[0]
    axis = normalize_axis(a[2] if len(a) > 2 else -1, len(c.shape(x)))
    largest = bool(a[3]) if len(a) > 3 else True
    out = c.relay.topk(x, k=int(a[1]), axis=axis, is_ascend=not largest, dtype="int64")
    return [out[0], out[1]]


def _sort(c, a):
    """aten::sort(x, dim=-1, descending=False) -> (values, int64 indices), stable."""
    x = a[0]
    axis = normalize_axis(a[1] if len(a) > 1 else -1, len(c.shape(x)))
    n = c.shape(x)[axis]
    out = c.relay.topk(x, k=n, axis=axis, is_ascend=not (len(a) > 2 and bool(a[2])), dtype="int64")
    return [out[0], out[1]]


def _max_min_dim(name):
    def convert(c, a):
        """aten::max(x) (all elements), aten::max(x, y) (element-wise) or aten::max(x, dim, keepdim)."""
        r = c.relay
        if len(a) == 1:
            return getattr(r, name)(a[0])
        if _is_expr(a[1]):
            return getattr(r, name + "imum")(a[0], a[1])
        axis = normalize_axis(a[1], len(c.shape(a[0])))
        keep = bool(a[2]) if len(a) > 2 else False
        arg = r.argmax if name == "max" else r.argmin
        return [getattr(r, name)(a[0], axis=[axis], keepdims=keep),
                r.cast(arg(a[0], axis=axis, keepdims=keep), "int64")]
    return convert


def _filled(value):
    def convert(c, a):
        """aten::zeros/ones(size, dtype, layout, device, pin_memory), aten::full(size, value, dtype, ...)."""
        size = [int(v) for v in a[0]]
        fill, rest = (value, a[1:]) if value is not None else (a[1], a[2:])
        dtype = (_dtype_arg(rest[0]) if rest and rest[0] is not None else
                 ("float32" if value is not None or isinstance(fill, float) else "int64"))
        return c.relay.const(np.full(size, fill, dtype))
    return convert


def _filled_like(value):
    def convert(c, a):
        """aten::zeros_like/ones_like(x, dtype, ...)."""
        dtype = _dtype_arg(a[1]) if len(a) > 1 and a[1] is not None else c.shapes.dtype(a[0])
        return c.relay.const(np.full(c.shape(a[0]), value, dtype))
    return convert


def _unary(name):
    return lambda c, a: getattr(c.relay, name)(a[0])


def _elu(c, a):
    r = c.relay
    x = a[0]
    alpha = float(a[1]) if len(a) > 1 else 1.0
    dt = c.shapes.dtype(x)
    neg = r.multiply(r.const(alpha, dt), r.subtract(r.exp(r.minimum(x, r.const(0.0, dt))), r.const(1.0, dt)))
    return r.add(r.nn.relu(x), neg)


MORE = {
    "aten::eq": _binary("equal"), "aten::ne": _binary("not_equal"), "aten::lt": _binary("less"),
    "aten::le": _binary("less_equal"), "aten::gt": _binary("greater"), "aten::ge": _binary("greater_equal"),
    "aten::logical_and": _binary("logical_and"), "aten::logical_or": _binary("logical_or"),
    "aten::logical_xor": _binary("logical_xor"), "aten::logical_not": _unary("logical_not"),
    "aten::where": _where,
    "aten::argmax": _arg("argmax"), "aten::argmin": _arg("argmin"),
    "aten::cumsum": _cumsum, "aten::prod": _prod, "aten::einsum": _einsum,
    "aten::bmm": lambda c, a: matmul(c.relay, c.shape, a[0], a[1]),
    "aten::maximum": _binary("maximum"), "aten::minimum": _binary("minimum"),
    "aten::log": _unary("log"), "aten::rsqrt": _unary("rsqrt"), "aten::floor": _unary("floor"),
    "aten::ceil": _unary("ceil"), "aten::erf": _unary("erf"),
    "aten::elu": _elu,
    "aten::topk": _topk, "aten::sort": _sort, "aten::max": _max_min_dim("max"), "aten::min": _max_min_dim("min"),
    "aten::to": _to,
    "aten::zeros": _filled(0), "aten::ones": _filled(1), "aten::full": _filled(None),
    "aten::zeros_like": _filled_like(0), "aten::ones_like": _filled_like(1),
    "aten::upsample_nearest2d": _upsample("nearest"), "aten::upsample_bilinear2d": _upsample("linear"),
    "aten::upsample_bicubic2d": _upsample("cubic"),
}
