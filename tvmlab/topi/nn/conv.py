"""Direct convolutions in any layout with 1 to 3 spatial axes, as TVM's ``topi.nn``: ``conv1d_ncw`` /
``conv1d_nwc`` / ``group_conv1d_*``, ``conv2d_nhwc`` / ``group_conv2d_nhwc`` / ``depthwise_conv2d_nhwc``,
``conv3d_ncdhw`` / ``conv3d_ndhwc``, all through one compute, ``conv``.

    Y = topi.nn.conv1d_ncw(X, W, strides=1, padding="SAME", dilation=1)       # X (N, C, W), W (O, C, KW)
    Z = topi.nn.conv3d_ndhwc(X, W, 1, 1, 1, groups=1)                         # W (KD, KH, KW, C, O)

The data layout names N, C and the spatial axes (D, H, W); the kernel layout names O (output
channels), I (input channels per group) and the same spatial axes.  The output has the data's layout.
The padded input is one stage (``<name>_pad``); the output sums over the input channels of its group
and the window, tagged with the operator's name (``conv1d_ncw``, ``conv3d_ndhwc``, ...).
"""
from __future__ import annotations

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, shape_str
from .pad import pad as _pad
from .utils import _ints, get_pad_tuple_nd, out_size


def _cast(dtype, v):
    return v if v.dtype == dtype else _op.cast(dtype, v)


def _positions(op, layout, letters, what):
    if not isinstance(layout, str) or sorted(layout) != sorted(set(layout)) or not set(layout) <= set(letters) \
            or not all(c in layout for c in letters[:2]):
        raise OperatorError(f"{op}: {what} layout must use each of {letters[:2]} once and spatial axes of "
                            f"{letters[2:]}, got {layout!r}")
    return layout


def conv(data, kernel, strides, padding, dilation, groups=1, data_layout="NCHW", kernel_layout="OIHW",
         out_dtype=None, name="conv", tag="conv"):
    """Grouped direct convolution; see the module docstring for the layouts.  ``padding``: an int, one
    per spatial axis (both sides), befores then afters, "SAME" or "VALID"."""
    op = tag
    _positions(op, data_layout, "NCDHW", "data")
    _positions(op, kernel_layout, "OIDHW", "kernel")
    spatial = [c for c in data_layout if c in "DHW"]
    if [c for c in kernel_layout if c in "DHW"] != spatial:
        raise OperatorError(f"{op}: kernel layout {kernel_layout!r} must have the spatial axes of the data "
                            f"layout {data_layout!r}, in the same order")
    n = len(spatial)
    check_tensor(op, data, "data", len(data_layout))
    check_tensor(op, kernel, "kernel", len(kernel_layout))
    if data.dtype != kernel.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(data)} but kernel is {shape_str(kernel)}; give out_dtype")
    out_dtype = dt.canonical(out_dtype or data.dtype)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise OperatorError(f"{op}: groups must be an int >= 1, got {groups!r}")
    d_at = {c: data_layout.index(c) for c in data_layout}
    k_at = {c: kernel_layout.index(c) for c in kernel_layout}
    ks = [const_or_none(kernel.shape[k_at[c]]) for c in spatial]
    O, I = const_or_none(kernel.shape[k_at["O"]]), const_or_none(kernel.shape[k_at["I"]])
    C = const_or_none(data.shape[d_at["C"]])
    if None in ks or O is None or I is None:
        raise OperatorError(f"{op}: the kernel's shape must be constant, got {shape_str(kernel)}")
    if O % groups or (C is not None and C != I * groups):
        raise OperatorError(f"{op}: data {shape_str(data)} ({C} channels) and kernel {shape_str(kernel)} ({I} input "
                            f"channels x {groups} groups, {O} outputs) do not match")
    ss = _ints(op, "strides", strides, n)
    ds = _ints(op, "dilation", dilation, n)
    before, after = get_pad_tuple_nd(padding, [(k - 1) * d + 1 for k, d in zip(ks, ds)], op)
    outs = [out_size(op, data.shape[d_at[c]], before[k] + after[k], ks[k], ss[k], ds[k])
            for k, c in enumerate(spatial)]
    if any(before) or any(after):
        pb, pa = [0] * len(data_layout), [0] * len(data_layout)
        for k, c in enumerate(spatial):
            pb[d_at[c]], pa[d_at[c]] = before[k], after[k]
        src = _pad(data, pb, pa, 0.0, name=name + "_pad")
    else:
        src = data
    rc = te.reduce_axis((0, I), name="rc")
    rk = [te.reduce_axis((0, k), name="r" + c.lower()) for k, c in zip(ks, spatial)]
    shape = list(data.shape)
    shape[d_at["C"]] = O
    for k, c in enumerate(spatial):
        shape[d_at[c]] = outs[k]
    opg = O // groups

    def f(*i):
        o = i[d_at["C"]]
        di, ki = [None] * len(data_layout), [None] * len(kernel_layout)
        di[d_at["N"]] = i[d_at["N"]]
        di[d_at["C"]] = rc if groups == 1 else o // opg * I + rc
        ki[k_at["O"]], ki[k_at["I"]] = o, rc
        for k, c in enumerate(spatial):
            di[d_at[c]] = i[d_at[c]] * ss[k] + rk[k] * ds[k]
            ki[k_at[c]] = rk[k]
        return te.sum(_cast(out_dtype, src(*di)) * _cast(out_dtype, kernel(*ki)), axis=[rc] + rk)
    return te.compute(tuple(shape), f, name=name, tag=tag,
                      attrs={"strides": tuple(ss), "dilation": tuple(ds), "padding": tuple(before + after),
                             "groups": groups, "data_layout": data_layout, "kernel_layout": kernel_layout})


def conv1d(data, kernel, strides=1, padding="VALID", dilation=1, layout="NCW", out_dtype=None):
    """1-D convolution in "NCW" (kernel (O, C, KW)) or "NWC" (kernel (KW, C, O))."""
    if layout == "NCW":
        return conv1d_ncw(data, kernel, strides, padding, dilation, out_dtype)
    if layout == "NWC":
        return conv1d_nwc(data, kernel, strides, padding, dilation, out_dtype)
    raise OperatorError(f"conv1d: layout must be NCW or NWC, got {layout!r}")


def conv1d_ncw(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """1-D convolution: data (N, C, W), kernel (O, C, KW) -> (N, O, OW)."""
    return conv(data, kernel, strides, padding, dilation, 1, "NCW", "OIW", out_dtype, "conv1d_ncw", "conv1d_ncw")


def conv1d_nwc(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """1-D convolution: data (N, W, C), kernel (KW, C, O) -> (N, OW, O)."""
    return conv(data, kernel, strides, padding, dilation, 1, "NWC", "WIO", out_dtype, "conv1d_nwc", "conv1d_nwc")


def group_conv1d_ncw(data, kernel, strides=1, padding="VALID", dilation=1, groups=1, out_dtype=None):
    """Grouped 1-D convolution: data (N, C, W), kernel (O, C / groups, KW)."""
    return conv(data, kernel, strides, padding, dilation, groups, "NCW", "OIW", out_dtype, "group_conv1d_ncw",
                "group_conv1d_ncw")


def group_conv1d_nwc(data, kernel, strides=1, padding="VALID", dilation=1, groups=1, out_dtype=None):
    """Grouped 1-D convolution: data (N, W, C), kernel (KW, C / groups, O)."""
    return conv(data, kernel, strides, padding, dilation, groups, "NWC", "WIO", out_dtype, "group_conv1d_nwc",
                "group_conv1d_nwc")


def conv2d_nhwc(Input, Filter, stride, padding, dilation, out_dtype="float32", auto_scheduler_rewritten_layout="",
                meta_schedule_original_shape=None):
    """Convolution: Input (N, H, W, C), Filter (KH, KW, C, O) -> (N, OH, OW, O); tag ``conv2d_nhwc``."""
    return conv(Input, Filter, stride, padding, dilation, 1, "NHWC", "HWIO", out_dtype, "conv2d_nhwc", "conv2d_nhwc")


def group_conv2d_nhwc(Input, Filter, stride, padding, dilation, groups, out_dtype=None):
    """Grouped convolution: Input (N, H, W, C), Filter (KH, KW, C / groups, O)."""
    return conv(Input, Filter, stride, padding, dilation, groups, "NHWC", "HWIO", out_dtype, "group_conv2d_nhwc",
                "group_conv2d_nhwc")


def depthwise_conv2d_nhwc(Input, Filter, stride, padding, dilation, out_dtype=None):
    """Depthwise convolution: Input (N, H, W, C), Filter (KH, KW, C, M) -> (N, OH, OW, C * M), output
    channel ``c * M + m`` reading input channel ``c``."""
    check_tensor("depthwise_conv2d_nhwc", Filter, "kernel", 4)
    kh, kw, c, m = Filter.shape
    M = const_or_none(m)
    if M is None:
        raise OperatorError(f"depthwise_conv2d_nhwc: the multiplier must be constant, got {shape_str(Filter)}")
    flat = te.compute((kh, kw, 1, c * M), lambda y, x, z, f: Filter[y, x, f // M, f % M],
                      name="depthwise_conv2d_nhwc_kernel", tag="injective")
    return conv(Input, flat, stride, padding, dilation, const_or_none(c), "NHWC", "HWIO", out_dtype,
                "depthwise_conv2d_nhwc", "depthwise_conv2d_nhwc")


def conv3d_ncdhw(Input, Filter, stride, padding, dilation, groups=1, out_dtype=None):
    """3-D convolution: Input (N, C, D, H, W), Filter (O, C / groups, KD, KH, KW) -> (N, O, OD, OH, OW)."""
    return conv(Input, Filter, stride, padding, dilation, groups, "NCDHW", "OIDHW", out_dtype, "conv3d_ncdhw",
                "conv3d_ncdhw")


def conv3d_ndhwc(Input, Filter, stride, padding, dilation, groups=1, out_dtype="float32",
                 auto_scheduler_rewritten_layout="", meta_schedule_origin_shape=None):
    """3-D convolution: Input (N, D, H, W, C), Filter (KD, KH, KW, C / groups, O) -> (N, OD, OH, OW, O)."""
    return conv(Input, Filter, stride, padding, dilation, groups, "NDHWC", "DHWIO", out_dtype, "conv3d_ndhwc",
                "conv3d_ndhwc")


# the tags of the direct convolutions, which the CPU schedule of this module handles
DIRECT_TAGS = ("conv1d_ncw", "conv1d_nwc", "group_conv1d_ncw", "group_conv1d_nwc", "conv2d_nhwc",
               "group_conv2d_nhwc", "depthwise_conv2d_nhwc", "conv3d_ncdhw", "conv3d_ndhwc")
