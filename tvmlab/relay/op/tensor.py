"""Element-wise, broadcast, reduction and layout operators: ``relay.add``, ``relay.sum``, ``relay.reshape`` ...

Each operator is its constructor (TVM's name and attributes), its type
relation and its compute (a call of the topi operator), registered together.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..base import RelayError, TypeInferenceError
from ..expr import Tuple, TupleWrapper
from ..ty import TensorType, TupleType
from .registry import OpPattern, make_call, register
from .typerel import broadcast_shape, norm_axes, norm_axis, same_dtype, tensor_arg, tuple_of


def _ints(t):
    return tuple(int(d.value) if hasattr(d, "value") else int(d) for d in t.shape)


# ------------------------------------------------------------------ element-wise (one input)
def _unary_rel(types, attrs):
    return tensor_arg(types, 0)


def _unary(name, *, topi, pattern=OpPattern.ELEMWISE, rel=_unary_rel, **defaults):
    """Register element-wise ``name``, computed by ``topi(x, attrs, dtype)`` (a topi operator: relay keeps no
    computes of its own)."""
    def compute(attrs, inputs, out_type):
        return [topi(inputs[0], attrs, out_type.dtype)]
    register(name, rel, pattern, compute, defaults, 1)

    def ctor(data, **attrs):
        return make_call(name, [data], **attrs)
    ctor.__name__ = name.split(".")[-1]
    ctor.__doc__ = f"``{name}(data)``: element-wise."
    return ctor


def _float_only(name):
    def rel(types, attrs):
        t = tensor_arg(types, 0)
        if "float" not in t.dtype:
            raise TypeInferenceError(f"needs a float tensor, got {t.dtype}")
        return t
    return rel


def _topi(name):
    """``(x, attrs, dtype) -> topi.<name>(x)``, topi imported when an operator is first computed."""
    def call(x, attrs, dtype):
        from ... import topi
        return getattr(topi, name)(x)
    return call


def _float_unary(name, topi_name=None):
    """An element-wise operator on floats computed by ``topi.<topi_name or name>``."""
    return _unary(name, rel=_float_only(name), topi=_topi(topi_name or name))


exp = _float_unary("exp")
log = _float_unary("log")
sqrt = _float_unary("sqrt")
rsqrt = _float_unary("rsqrt")
sigmoid = _float_unary("sigmoid")
def _topi_float_math(name):
    """``topi.nn.float_math.<name>``: written with vector arithmetic for float32 (libm's is scalar per lane)."""
    def call(x, attrs, dtype):
        from ...topi.nn import float_math
        return getattr(float_math, name)(x)
    return call


tanh = _unary("tanh", rel=_float_only("tanh"), topi=_topi_float_math("tanh"))
erf = _unary("erf", rel=_float_only("erf"), topi=_topi_float_math("erf"))
floor = _float_unary("floor")
ceil = _float_unary("ceil")
# half to even, as ONNX and numpy round (topi.round rounds halves away from zero)
round = _float_unary("round", "nearbyint")  # noqa: A001
negative = _unary("negative", topi=_topi("negative"))
abs = _unary("abs", topi=_topi("abs"))  # noqa: A001
copy = _unary("copy", topi=_topi("identity"))


def _topi_clip(x, a, d):
    from ... import topi
    return topi.clip(x, a.a_min, a.a_max)


clip = _unary("clip", topi=_topi_clip, a_min=None, a_max=None)
_clip = clip


def clip(a, a_min, a_max):  # noqa: F811
    """``relay.clip(a, a_min, a_max)``: values limited to [a_min, a_max]."""
    return _clip(a, a_min=float(a_min), a_max=float(a_max))


def _cast_rel(types, attrs):
    t = tensor_arg(types, 0)
    return TensorType(t.shape, attrs.dtype)


def _topi_cast(x, a, d):
    from ... import topi
    return topi.cast(x, d)


_cast = _unary("cast", rel=_cast_rel, topi=_topi_cast, dtype="float32")


def cast(data, dtype):
    """``relay.cast(data, dtype)``."""
    from ...ir import dtype as dt
    try:
        dtype = dt.canonical(str(dtype))
    except Exception:
        raise RelayError(f"cast: unknown dtype {dtype!r}") from None
    return _cast(data, dtype=dtype)


# ------------------------------------------------------------------ broadcast (two inputs)
def _bcast_rel(types, attrs):
    a, b = tensor_arg(types, 0, "lhs"), tensor_arg(types, 1, "rhs")
    same_dtype(a, b)
    return TensorType(broadcast_shape(a.shape, b.shape), a.dtype)


def _binary(name, rel=None, doc="with numpy broadcasting."):
    """Register the broadcast operator ``name`` computed by ``topi.<name>``; its constructor."""
    def compute(attrs, inputs, out_type):
        from ... import topi
        return [getattr(topi, name)(*inputs)]
    register(name, rel or _bcast_rel, OpPattern.BROADCAST, compute, {}, 2)

    def ctor(lhs, rhs):
        return make_call(name, [lhs, rhs])
    ctor.__name__ = name
    ctor.__doc__ = f"``relay.{name}(lhs, rhs)`` {doc}"
    return ctor


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
power = _binary("power")
maximum = _binary("maximum")
minimum = _binary("minimum")


# ------------------------------------------------------------------ reductions
def _reduce_rel(types, attrs):
    t = tensor_arg(types, 0)
    axes = norm_axes(attrs.axis, len(t.shape))
    if attrs.exclude:
        axes = [d for d in range(len(t.shape)) if d not in axes]
    shape = []
    for d, s in enumerate(t.shape):
        if d in axes:
            if attrs.keepdims:
                shape.append(1)
        else:
            shape.append(s)
    return TensorType(shape, t.dtype)


def reduced_axes(attrs, ndim):
    axes = norm_axes(attrs.axis, ndim)
    return [d for d in range(ndim) if d not in axes] if attrs.exclude else axes


def _reduce(name):
    def compute(attrs, inputs, out_type):
        from ... import topi
        x = inputs[0]
        axes = reduced_axes(attrs, len(x.shape))
        if not axes:                # nothing reduced (exclude=True over every axis): a copy
            return [topi.identity(x)]
        return [getattr(topi, name)(x, tuple(axes), attrs.keepdims)]
    register(name, _reduce_rel, OpPattern.COMM_REDUCE, compute,
             {"axis": None, "keepdims": False, "exclude": False}, 1)

    def ctor(data, axis=None, keepdims=False, exclude=False):
        if axis is not None and not isinstance(axis, int):
            axis = [int(a) for a in axis]
        return make_call(name, [data], axis=axis, keepdims=bool(keepdims), exclude=bool(exclude))
    ctor.__name__ = name
    ctor.__doc__ = f"``relay.{name}(data, axis=None, keepdims=False, exclude=False)``."
    return ctor


sum = _reduce("sum")  # noqa: A001
max = _reduce("max")  # noqa: A001
min = _reduce("min")  # noqa: A001
mean = _reduce("mean")


# ------------------------------------------------------------------ layout maps (injective)
def _reshape_rel(types, attrs):
    t = tensor_arg(types, 0)
    return TensorType(infer_reshape(t.shape, attrs.newshape), t.dtype)


def infer_reshape(shape, newshape):
    """TVM's reshape rule: 0 copies the input dimension, -1 is inferred (once)."""
    total = int(np.prod(shape)) if shape else 1
    out, infer = [], None
    for k, d in enumerate(newshape):
        if d == 0:
            if k >= len(shape):
                raise TypeInferenceError(f"newshape {list(newshape)}: 0 at position {k} has no input dimension")
            out.append(shape[k])
        elif d == -1:
            if infer is not None:
                raise TypeInferenceError(f"newshape {list(newshape)} has more than one -1")
            infer = k
            out.append(1)
        elif d > 0:
            out.append(d)
        else:
            raise TypeInferenceError(f"newshape {list(newshape)}: {d} is not allowed (use >0, 0 or -1)")
    known = int(np.prod(out)) if out else 1
    if infer is not None:
        if known == 0 or total % known:
            raise TypeInferenceError(f"cannot reshape {tuple(shape)} to {list(newshape)}")
        out[infer] = total // known
    if int(np.prod(out) if out else 1) != total:
        raise TypeInferenceError(f"cannot reshape {tuple(shape)} ({total} elements) to {tuple(out)}")
    return tuple(out)


def _reshape_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.reshape(inputs[0], tuple(out_type.shape))]


register("reshape", _reshape_rel, OpPattern.INJECTIVE, _reshape_compute, {"newshape": None}, 1)


def reshape(data, newshape):
    """``relay.reshape(data, newshape)`` (0 keeps a dimension, -1 is inferred)."""
    if isinstance(newshape, int):
        newshape = [newshape]
    return make_call("reshape", [data], newshape=[int(d) for d in newshape])


def _transpose_rel(types, attrs):
    t = tensor_arg(types, 0)
    axes = attrs.axes
    n = len(t.shape)
    axes = list(reversed(range(n))) if axes is None else [norm_axis(a, n, "axes") for a in axes]
    if sorted(axes) != list(range(n)):
        raise TypeInferenceError(f"axes {attrs.axes} is not a permutation of {n} axes")
    return TensorType([t.shape[a] for a in axes], t.dtype)


def _transpose_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.transpose(inputs[0], None if attrs.axes is None else list(attrs.axes))]


register("transpose", _transpose_rel, OpPattern.INJECTIVE, _transpose_compute, {"axes": None}, 1)


def transpose(data, axes=None):
    """``relay.transpose(data, axes=None)`` (None reverses the axes)."""
    return make_call("transpose", [data], axes=None if axes is None else [int(a) for a in axes])


def _squeeze_rel(types, attrs):
    t = tensor_arg(types, 0)
    if attrs.axis is None:
        return TensorType([d for d in t.shape if d != 1], t.dtype)
    axes = norm_axes(attrs.axis, len(t.shape))
    for a in axes:
        if t.shape[a] != 1:
            raise TypeInferenceError(f"cannot squeeze axis {a} of shape {t.shape}: its size is {t.shape[a]}")
    return TensorType([d for k, d in enumerate(t.shape) if k not in axes], t.dtype)


def _expand_rel(types, attrs):
    t = tensor_arg(types, 0)
    n = len(t.shape)
    if not -n - 1 <= attrs.axis <= n:
        raise TypeInferenceError(f"axis {attrs.axis} is out of range for expand_dims of rank {n}")
    a = attrs.axis % (n + 1)
    return TensorType(t.shape[:a] + (1,) * attrs.num_newaxis + t.shape[a:], t.dtype)


register("squeeze", _squeeze_rel, OpPattern.INJECTIVE, _reshape_compute, {"axis": None}, 1)
register("expand_dims", _expand_rel, OpPattern.INJECTIVE, _reshape_compute, {"axis": 0, "num_newaxis": 1}, 1)


def squeeze(data, axis=None):
    """``relay.squeeze(data, axis=None)``: drop size-1 axes."""
    return make_call("squeeze", [data], axis=None if axis is None else [int(a) for a in axis])


def expand_dims(data, axis, num_newaxis=1):
    """``relay.expand_dims(data, axis, num_newaxis=1)``."""
    return make_call("expand_dims", [data], axis=int(axis), num_newaxis=int(num_newaxis))


def _concat_rel(types, attrs):
    fields = tuple_of(types, "concatenate")
    first = fields[0]
    n = len(first.shape)
    axis = norm_axis(attrs.axis, n)
    total = 0
    for k, f in enumerate(fields):
        if f.dtype != first.dtype or len(f.shape) != n or any(
                f.shape[d] != first.shape[d] for d in range(n) if d != axis):
            raise TypeInferenceError(f"input {k} is {f!r}, which does not fit {first!r} along axis {axis}")
        total += f.shape[axis]
    return TensorType(first.shape[:axis] + (total,) + first.shape[axis + 1:], first.dtype)


def _concat_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.concatenate(list(inputs), attrs.axis)]


register("concatenate", _concat_rel, OpPattern.INJECTIVE, _concat_compute, {"axis": 0}, 1)


def concatenate(data, axis):
    """``relay.concatenate([a, b, ...], axis)``."""
    if isinstance(data, (list, tuple)):
        data = Tuple(list(data))
    return make_call("concatenate", [data], axis=int(axis))


def split_points(attrs, size):
    ios = attrs.indices_or_sections
    if isinstance(ios, int):
        if ios <= 0 or size % ios:
            raise TypeInferenceError(f"cannot split an axis of {size} into {ios} equal sections")
        return [size // ios * k for k in range(ios)] + [size]
    pts = [0] + list(ios) + [size]
    if any(b < a for a, b in zip(pts, pts[1:])):
        raise TypeInferenceError(f"split indices {list(ios)} must increase within the axis size {size}")
    return pts


def _split_rel(types, attrs):
    t = tensor_arg(types, 0)
    axis = norm_axis(attrs.axis, len(t.shape))
    pts = split_points(attrs, t.shape[axis])
    return TupleType([TensorType(t.shape[:axis] + (b - a,) + t.shape[axis + 1:], t.dtype)
                      for a, b in zip(pts, pts[1:])])


def _split_compute(attrs, inputs, out_type):
    from ... import topi
    x = inputs[0]
    axis = attrs.axis % len(x.shape)
    pts = split_points(attrs, _ints(x)[axis])
    return topi.split(x, pts[1:-1], axis)


register("split", _split_rel, OpPattern.INJECTIVE, _split_compute, {"indices_or_sections": 1, "axis": 0}, 1)


def split(data, indices_or_sections, axis=0):
    """``relay.split(data, sections or indices, axis)``: a TupleWrapper of the pieces."""
    ios = indices_or_sections if isinstance(indices_or_sections, int) else [int(v) for v in indices_or_sections]
    call = make_call("split", [data], indices_or_sections=ios, axis=int(axis))
    n = ios if isinstance(ios, int) else len(ios) + 1
    return TupleWrapper(call, n)


def slice_params(attrs, shape):
    """(begin, end, stride) per axis, clamped as numpy does."""
    n = len(shape)
    axes = list(range(n)) if attrs.axes is None else [norm_axis(a, n) for a in attrs.axes]
    begin, end = list(attrs.begin), list(attrs.end)
    strides = list(attrs.strides) if attrs.strides else [1] * len(begin)
    if len(strides) == 1 and len(begin) > 1:
        strides = strides * len(begin)
    out = [(0, s, 1) for s in shape]
    for k, a in enumerate(axes[:len(begin)]):
        st = strides[k] if k < len(strides) else 1
        if st == 0:
            raise TypeInferenceError("strided_slice: a stride of 0")
        s = shape[a]
        e = end[k] if k < len(end) else (s if st > 0 else -s - 1)
        sl = slice(begin[k], e, st).indices(s)
        out[a] = sl
    return out


def _slice_rel(types, attrs):
    t = tensor_arg(types, 0)
    if attrs.axes is None and len(attrs.begin) > len(t.shape):
        raise TypeInferenceError(f"strided_slice: {len(attrs.begin)} begin values for rank {len(t.shape)}")
    params = slice_params(attrs, t.shape)
    return TensorType([len(range(*p)) for p in params], t.dtype)


def _slice_compute(attrs, inputs, out_type):
    from ... import topi
    x = inputs[0]
    params = slice_params(attrs, _ints(x))
    # numpy's normalised (begin, end, stride) per axis; an end of -1 (before the first element) as None
    return [topi.strided_slice(x, [b for b, _, _ in params], [None if e < 0 else e for _, e, _ in params],
                               [st for _, _, st in params])]


register("strided_slice", _slice_rel, OpPattern.INJECTIVE, _slice_compute,
         {"begin": None, "end": None, "strides": None, "axes": None, "slice_mode": "end"}, 1)


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end"):
    """``relay.strided_slice(data, begin, end, strides=None, axes=None)`` (numpy slice rules)."""
    if slice_mode != "end":
        raise RelayError(f"strided_slice: slice_mode {slice_mode!r} is not supported (only 'end')")
    big = 2 ** 31 - 1

    def ints(v):
        return None if v is None else [builtins.min(int(x), big) for x in v]
    return make_call("strided_slice", [data], begin=ints(begin), end=ints(end), strides=ints(strides),
                     axes=ints(axes))


def _take_rel(types, attrs):
    t = tensor_arg(types, 0)
    ind = tensor_arg(types, 1, "indices")
    if "int" not in ind.dtype:
        raise TypeInferenceError(f"indices must be integers, got {ind.dtype}")
    if attrs.axis is None:
        return TensorType(ind.shape, t.dtype)
    a = norm_axis(attrs.axis, len(t.shape))
    return TensorType(t.shape[:a] + ind.shape + t.shape[a + 1:], t.dtype)


def _take_compute(attrs, inputs, out_type):
    from ... import topi
    x, ind = inputs
    n = int(np.prod(_ints(x))) if attrs.axis is None else _ints(x)[attrs.axis % len(x.shape)]
    if attrs.mode == "clip":            # numpy / ONNX negative indices count from the end, then clamp
        ind = topi.where(topi.less(ind, 0), topi.add(ind, n), ind)
    return [topi.take(x, ind, attrs.axis, mode=attrs.mode)]


register("take", _take_rel, OpPattern.INJECTIVE, _take_compute, {"axis": None, "mode": "clip"}, 2)


def take(data, indices, axis=None, mode="clip"):
    """``relay.take(data, indices, axis=None, mode="clip")`` (negative indices count from the end)."""
    if mode not in ("clip", "wrap", "fast"):
        raise RelayError(f"take: mode must be 'clip', 'wrap' or 'fast', got {mode!r}")
    return make_call("take", [data, indices], axis=None if axis is None else int(axis), mode=mode)


def _tile_rel(types, attrs):
    t = tensor_arg(types, 0)
    reps = list(attrs.reps)
    if any(r < 1 for r in reps):
        raise TypeInferenceError(f"tile: reps must be >= 1, got {reps}")
    n = builtins.max(len(reps), len(t.shape))
    shape = (1,) * (n - len(t.shape)) + t.shape
    reps = [1] * (n - len(reps)) + reps
    return TensorType([s * r for s, r in zip(shape, reps)], t.dtype)


def _tile_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.tile(inputs[0], list(attrs.reps))]


register("tile", _tile_rel, OpPattern.INJECTIVE, _tile_compute, {"reps": None}, 1)


def tile(data, reps):
    """``relay.tile(data, reps)``."""
    return make_call("tile", [data], reps=[int(r) for r in reps])


def _bcast_to_rel(types, attrs):
    t = tensor_arg(types, 0)
    shape = broadcast_shape(t.shape, tuple(attrs.shape))
    if shape != tuple(attrs.shape):
        raise TypeInferenceError(f"cannot broadcast {t.shape} to {tuple(attrs.shape)}")
    return TensorType(shape, t.dtype)


def _bcast_to_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.broadcast_to(inputs[0], tuple(out_type.shape))]


register("broadcast_to", _bcast_to_rel, OpPattern.BROADCAST, _bcast_to_compute, {"shape": None}, 1)


def broadcast_to(data, shape):
    """``relay.broadcast_to(data, shape)``."""
    return make_call("broadcast_to", [data], shape=[int(s) for s in shape])


def _gather_rel(types, attrs):
    t = tensor_arg(types, 0)
    ind = tensor_arg(types, 1, "indices")
    norm_axis(attrs.axis, len(t.shape))
    if len(ind.shape) != len(t.shape):
        raise TypeInferenceError(f"gather: indices of rank {len(ind.shape)} for data of rank {len(t.shape)}")
    return TensorType(ind.shape, t.dtype)


def _gather_compute(attrs, inputs, out_type):
    from ... import topi
    return [topi.gather(inputs[0], attrs.axis, inputs[1])]


register("gather", _gather_rel, OpPattern.INJECTIVE, _gather_compute, {"axis": 0}, 2)


def gather(data, axis, indices):
    """``relay.gather(data, axis, indices)`` (ONNX GatherElements)."""
    return make_call("gather", [data, indices], axis=int(axis))


__all__ = ["exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "floor", "ceil", "round", "negative", "abs", "copy",
           "clip", "cast", "add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "sum", "max", "min",
           "mean", "reshape", "transpose", "squeeze", "expand_dims", "concatenate", "split", "strided_slice", "take",
           "tile", "broadcast_to", "gather"]
