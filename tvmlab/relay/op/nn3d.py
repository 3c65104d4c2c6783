"""3-D convolution and pooling: ``relay.nn.conv3d``, ``max_pool3d``, ``avg_pool3d`` (NCDHW; TVM's names and
attributes), computed by ``topi.nn.conv3d_ncdhw`` and ``topi.nn.poolnd`` and scheduled by
``topi.x86.schedule_conv3d_ncdhw`` / ``schedule_pool``.  ``padding`` is (front, top, left, back, bottom,
right); a 3-value padding pads both sides alike.
"""
from __future__ import annotations

from ..base import RelayError, TypeInferenceError
from ..ty import TensorType
from .nn import conv_out
from .registry import OpPattern, make_call, register
from .typerel import same_dtype, tensor_arg


def _triple(v, what):
    vals = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v] * 3)]
    if len(vals) == 1:
        vals *= 3
    if len(vals) != 3:
        raise RelayError(f"{what} needs 1 or 3 values, got {v!r}")
    return tuple(vals)


def _padding6(p):
    vals = [int(x) for x in (p if isinstance(p, (list, tuple)) else [p])]
    if len(vals) == 1:
        vals *= 6
    elif len(vals) == 3:
        vals = vals * 2
    if len(vals) != 6:
        raise RelayError(f"padding needs 1, 3 or 6 values, got {p!r}")
    return tuple(vals)


def _out_size(shape, window, strides, dilation, padding, ceil_mode=False):
    out = []
    for k in range(3):
        size, lo, hi = shape[k], padding[k], padding[k + 3]
        span = (window[k] - 1) * dilation[k] + 1
        if size + lo + hi < span:
            raise TypeInferenceError(f"the window {tuple(window)} does not fit the {tuple(shape)} input")
        if not ceil_mode:
            out.append(conv_out(size, window[k], strides[k], dilation[k], lo, hi))
            continue
        o = -(-(size + lo + hi - span) // strides[k]) + 1
        if (o - 1) * strides[k] >= size + lo:
            o -= 1          # the last window must start inside the input or its leading padding
        out.append(o)
    return tuple(out)


# ------------------------------------------------------------------ conv3d
def _conv3d_rel(types, attrs):
    if attrs.data_layout != "NCDHW" or attrs.kernel_layout != "OIDHW":
        raise TypeInferenceError(f"only layouts NCDHW / OIDHW are supported, got {attrs.data_layout} / "
                                 f"{attrs.kernel_layout}")
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    same_dtype(d, w, "data", "weight")
    if len(d.shape) != 5 or len(w.shape) != 5:
        raise TypeInferenceError(f"data and weight must be 5-D (NCDHW, OIDHW), got {d.shape} and {w.shape}")
    g = attrs.groups
    if g < 1 or d.shape[1] != w.shape[1] * g or w.shape[0] % g:
        raise TypeInferenceError(f"data has {d.shape[1]} channels and weight {w.shape} with groups={g}: expected "
                                 f"weight input channels {d.shape[1] // max(g, 1)}")
    spatial = _out_size(d.shape[2:], w.shape[2:], attrs.strides, attrs.dilation, attrs.padding)
    return TensorType((d.shape[0], w.shape[0]) + spatial, attrs.out_dtype or d.dtype)


def _conv3d_compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    data, kernel = inputs
    return [topi_nn.conv3d_ncdhw(data, kernel, attrs.strides, tuple(attrs.padding), attrs.dilation, attrs.groups,
                                 out_dtype=out_type.dtype)]


register("nn.conv3d", _conv3d_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _conv3d_compute,
         {"strides": (1, 1, 1), "padding": (0,) * 6, "dilation": (1, 1, 1), "groups": 1, "channels": None,
          "kernel_size": None, "data_layout": "NCDHW", "kernel_layout": "OIDHW", "out_layout": "",
          "out_dtype": ""}, 2)


def conv3d(data, weight, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1, channels=None,
           kernel_size=None, data_layout="NCDHW", kernel_layout="OIDHW", out_layout="", out_dtype=""):
    """``relay.nn.conv3d``: 3-D convolution, NCDHW data and OIDHW weight."""
    a = dict(strides=_triple(strides, "strides"), padding=_padding6(padding), dilation=_triple(dilation, "dilation"),
             groups=int(groups))
    if min(a["strides"] + a["dilation"]) < 1 or a["groups"] < 1:
        raise RelayError(f"nn.conv3d: strides, dilation and groups must be >= 1, got {a}")
    return make_call("nn.conv3d", [data, weight], channels=channels, kernel_size=kernel_size,
                     data_layout=data_layout, kernel_layout=kernel_layout, out_layout=out_layout,
                     out_dtype=out_dtype, **a)


# ------------------------------------------------------------------ pool3d
def _pool3d_rel(types, attrs):
    if attrs.layout != "NCDHW":
        raise TypeInferenceError(f"only layout NCDHW is supported, got {attrs.layout!r}")
    d = tensor_arg(types, 0)
    if len(d.shape) != 5:
        raise TypeInferenceError(f"data must be 5-D (NCDHW), got {d.shape}")
    spatial = _out_size(d.shape[2:], attrs.pool_size, attrs.strides, attrs.dilation, attrs.padding, attrs.ceil_mode)
    return TensorType(d.shape[:2] + spatial, d.dtype)


def _pool3d_compute(kind):
    def compute(attrs, inputs, out_type):
        from ...topi import nn as topi_nn
        return [topi_nn.poolnd(inputs[0], attrs.pool_size, attrs.strides, attrs.dilation, tuple(attrs.padding), kind,
                               attrs.ceil_mode, "NCDHW", attrs.get("count_include_pad", False),
                               drop_pad_windows=True, op="pool3d")]
    return compute


_POOL = {"pool_size": (1, 1, 1), "strides": (1, 1, 1), "dilation": (1, 1, 1), "padding": (0,) * 6,
         "layout": "NCDHW", "out_layout": "", "ceil_mode": False}
register("nn.max_pool3d", _pool3d_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _pool3d_compute("max"), dict(_POOL), 1)
register("nn.avg_pool3d", _pool3d_rel, OpPattern.OUT_ELEMWISE_FUSABLE, _pool3d_compute("avg"),
         {**_POOL, "count_include_pad": False}, 1)


def _pool_attrs(pool_size, strides, dilation, padding):
    a = dict(pool_size=_triple(pool_size, "pool_size"), strides=_triple(strides, "strides"),
             dilation=_triple(dilation, "dilation"), padding=_padding6(padding))
    if min(a["pool_size"] + a["strides"] + a["dilation"]) < 1:
        raise RelayError(f"pool3d: pool_size, strides and dilation must be >= 1, got {a}")
    return a


def max_pool3d(data, pool_size=(1, 1, 1), strides=(1, 1, 1), dilation=(1, 1, 1), padding=(0, 0, 0),
               layout="NCDHW", out_layout="", ceil_mode=False):
    """``relay.nn.max_pool3d`` (NCDHW; padding never wins the max)."""
    return make_call("nn.max_pool3d", [data], layout=layout, out_layout=out_layout, ceil_mode=bool(ceil_mode),
                     **_pool_attrs(pool_size, strides, dilation, padding))


def avg_pool3d(data, pool_size=(1, 1, 1), strides=(1, 1, 1), dilation=(1, 1, 1), padding=(0, 0, 0),
               layout="NCDHW", out_layout="", ceil_mode=False, count_include_pad=False):
    """``relay.nn.avg_pool3d`` (NCDHW; ``count_include_pad`` counts the padding in the divisor)."""
    return make_call("nn.avg_pool3d", [data], layout=layout, out_layout=out_layout, ceil_mode=bool(ceil_mode),
                     count_include_pad=bool(count_include_pad), **_pool_attrs(pool_size, strides, dilation, padding))
