"""Index-finding and running reductions: ``relay.argmax``, ``relay.argmin``, ``relay.cumsum``, ``relay.prod``,
``relay.einsum``.

argmax/argmin reduce (the first index on ties, int32 as TVM); cumsum and
cumprod are opaque (a scan does not fuse); einsum is one compute with the
summed letters as reduction axes.
"""
from __future__ import annotations

from ..base import RelayError, TypeInferenceError
from ..ty import TensorType
from .registry import OpPattern, make_call, register
from .tensor import _reduce
from .typerel import norm_axis, tensor_arg

prod = _reduce("prod")


def _arg_rel(types, attrs):
    t = tensor_arg(types, 0)
    axes = attrs.axis
    if axes is None or len(axes) != 1:
        raise TypeInferenceError(f"needs exactly one axis, got {axes!r}")
    a = norm_axis(axes[0], len(t.shape))
    if attrs.exclude:
        raise TypeInferenceError("exclude=True is not supported")
    shape = [(1 if d == a else s) for d, s in enumerate(t.shape) if d != a or attrs.keepdims]
    return TensorType(shape, "int32")


def _arg(name):
    def compute(attrs, inputs, out_type):
        from ... import topi
        from ...ir.tensor import PlaceholderOp
        x = inputs[0]
        # two vectorisable reductions (topi.nn.arg_reduce) when both read stored values: an expression
        # fused in is computed in each, and a GPU may round the two alike only by luck
        if isinstance(x.op, PlaceholderOp) and ("float" in x.dtype or "int" in x.dtype):
            from ...topi.nn.arg_reduce import arg_reduce
            return [arg_reduce(x, attrs.axis[0] % len(x.shape), attrs.keepdims, largest=name == "argmax")]
        out = getattr(topi, name)(x, attrs.axis[0] % len(x.shape), attrs.keepdims)
        if attrs.select_last_index:
            raise RelayError(f"{name}: select_last_index=True is not supported")
        return [out]
    register(name, _arg_rel, OpPattern.COMM_REDUCE, compute,
             {"axis": None, "keepdims": False, "exclude": False, "select_last_index": False}, 1)

    def ctor(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
        if axis is None:
            raise RelayError(f"{name}: give one axis")
        axis = [int(axis)] if isinstance(axis, int) else [int(a) for a in axis]
        if select_last_index:
            raise RelayError(f"{name}: select_last_index=True is not supported (the first index is taken)")
        return make_call(name, [data], axis=axis, keepdims=bool(keepdims), exclude=bool(exclude))
    ctor.__name__ = name
    ctor.__doc__ = f"``relay.{name}(data, axis, keepdims=False)``: int32 indices, the first on ties."
    return ctor


argmax = _arg("argmax")
argmin = _arg("argmin")


def _scan_rel(types, attrs):
    t = tensor_arg(types, 0)
    shape = t.shape if attrs.axis is not None else (t.size(),)
    if attrs.axis is not None:
        norm_axis(attrs.axis, len(t.shape))
    return TensorType(shape, attrs.dtype or t.dtype)


def _scan(name):
    def compute(attrs, inputs, out_type):
        from ...topi import scan
        return [getattr(scan, name)(inputs[0], attrs.axis, out_type.dtype, bool(attrs.exclusive),
                                    bool(attrs.reverse))]
    register(name, _scan_rel, OpPattern.OPAQUE, compute,
             {"axis": None, "dtype": None, "exclusive": False, "reverse": False}, 1)

    def ctor(data, axis=None, dtype=None, exclusive=False, reverse=False):
        return make_call(name, [data], axis=None if axis is None else int(axis), dtype=dtype,
                         exclusive=bool(exclusive), reverse=bool(reverse))
    ctor.__name__ = name
    ctor.__doc__ = (f"``relay.{name}(data, axis=None, dtype=None, exclusive=False)``; ``reverse`` runs from the "
                    f"end (tvmlab's addition, ONNX's CumSum attribute).")
    return ctor


cumsum = _scan("cumsum")
cumprod = _scan("cumprod")


def _einsum_rel(types, attrs):
    from ...topi.einsum import parse_subscripts
    from ...topi.utils import OperatorError
    ts = [tensor_arg(types, k, f"operand {k}") for k in range(len(types))]
    if not ts:
        raise TypeInferenceError("needs at least one operand")
    try:
        terms, out = parse_subscripts(attrs.equation, [len(t.shape) for t in ts])
    except OperatorError as e:
        raise TypeInferenceError(str(e).removeprefix("einsum: ")) from None
    if len({t.dtype for t in ts}) != 1:
        raise TypeInferenceError(f"operands need one dtype, got {[t.dtype for t in ts]}")
    extent = {}
    for t, letters in zip(ts, terms):
        for c, d in zip(letters, t.shape):
            if extent.get(c, 1) != 1 and d != 1 and extent[c] != d:
                raise TypeInferenceError(f"letter {c!r} is {extent[c]} in one operand and {d} in another")
            if extent.get(c, 1) == 1:
                extent[c] = d
    return TensorType([extent[c] for c in out], ts[0].dtype)


def _einsum_compute(attrs, inputs, out_type):
    from ...topi.einsum import einsum as f
    return [f(attrs.equation, *inputs)]


# the operands are the call's arguments (not one tuple) so FuseOps can give the einsum its group
register("einsum", _einsum_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _einsum_compute, {"equation": ""}, None)


def einsum(data, equation):
    """``relay.einsum([a, b], "ij,jk->ik")``: numpy's einsum (no ellipsis)."""
    from ..expr import Tuple, TupleWrapper
    if not isinstance(equation, str):
        raise RelayError(f"einsum: equation must be a string, got {equation!r}")
    if isinstance(data, TupleWrapper):
        data = data.astuple()
    fields = data.fields if isinstance(data, Tuple) else list(data)
    return make_call("einsum", list(fields), equation=equation)


__all__ = ["prod", "argmax", "argmin", "cumsum", "cumprod", "einsum"]


def _sort_axis(t, attrs):
    return norm_axis(attrs.axis, len(t.shape))


def _topk_rel(types, attrs):
    from ..ty import TupleType
    t = tensor_arg(types, 0)
    a = _sort_axis(t, attrs)
    if not 1 <= attrs.k <= t.shape[a]:
        raise TypeInferenceError(f"topk: k must be in 1..{t.shape[a]}, got {attrs.k}")
    shape = t.shape[:a] + (attrs.k,) + t.shape[a + 1:]
    vals, idx = TensorType(shape, t.dtype), TensorType(shape, attrs.dtype)
    return {"both": TupleType([vals, idx]), "values": vals, "indices": idx}[attrs.ret_type]


TOPK_ROUNDS = 8          # k up to this, of an axis of 8 k or more: picked in rounds (topi.nn.arg_reduce)


def _topk_compute(attrs, inputs, out_type):
    from ...ir.tensor import PlaceholderOp
    x = inputs[0]
    n = int(x.shape[attrs.axis % len(x.shape)])
    if attrs.k <= TOPK_ROUNDS and n >= 8 * attrs.k and isinstance(x.op, PlaceholderOp) and \
            ("float" in x.dtype or "int" in x.dtype):
        from ...topi.nn.arg_reduce import topk_by_rounds
        vals, idx = topk_by_rounds(x, attrs.k, attrs.axis, not attrs.is_ascend, attrs.dtype)
        return {"both": [vals, idx], "values": [vals], "indices": [idx]}[attrs.ret_type]
    from ...topi.sort import topk as f
    out = f(x, attrs.k, attrs.axis, attrs.ret_type, attrs.is_ascend, attrs.dtype)
    return out if isinstance(out, list) else [out]


register("topk", _topk_rel, OpPattern.OPAQUE, _topk_compute,
         {"k": 1, "axis": -1, "ret_type": "both", "is_ascend": False, "dtype": "int32"}, 1)


def topk(data, k=1, axis=-1, ret_type="both", is_ascend=False, dtype="int32"):
    """``relay.topk(data, k, axis=-1, ret_type="both")``: (values, indices) of the k largest (sorted, ties by
    lower index); a TupleWrapper when both."""
    from ..expr import TupleWrapper
    if ret_type not in ("both", "values", "indices"):
        raise RelayError(f"topk: ret_type must be 'both', 'values' or 'indices', got {ret_type!r}")
    if isinstance(k, bool) or not isinstance(k, int):
        raise RelayError(f"topk: k must be a static int, got {k!r}")
    call = make_call("topk", [data], k=int(k), axis=int(axis), ret_type=ret_type, is_ascend=bool(is_ascend),
                     dtype=str(dtype))
    return TupleWrapper(call, 2) if ret_type == "both" else call


def _sort_rel(types, attrs):
    t = tensor_arg(types, 0)
    _sort_axis(t, attrs)
    return TensorType(t.shape, attrs.dtype or t.dtype)


def _sort_compute(name):
    def compute(attrs, inputs, out_type):
        from ...topi.sort import argsort as argsort_, sort as sort_
        if name == "sort":
            return [sort_(inputs[0], attrs.axis, attrs.is_ascend)]
        return [argsort_(inputs[0], attrs.axis, attrs.is_ascend, attrs.dtype)]
    return compute


register("sort", _sort_rel, OpPattern.OPAQUE, _sort_compute("sort"), {"axis": -1, "is_ascend": True, "dtype": None}, 1)
register("argsort", _sort_rel, OpPattern.OPAQUE, _sort_compute("argsort"),
         {"axis": -1, "is_ascend": True, "dtype": "int32"}, 1)


def sort(data, axis=-1, is_ascend=True):
    """``relay.sort(data, axis=-1, is_ascend=True)`` (stable)."""
    return make_call("sort", [data], axis=int(axis), is_ascend=bool(is_ascend))


def argsort(data, axis=-1, is_ascend=True, dtype="int32"):
    """``relay.argsort(data, axis=-1, is_ascend=True, dtype="int32")`` (stable)."""
    return make_call("argsort", [data], axis=int(axis), is_ascend=bool(is_ascend), dtype=str(dtype))


__all__ += ["topk", "sort", "argsort"]
