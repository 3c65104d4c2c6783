"""2-D convolutions in NCHW (plain, grouped, depthwise) and blocked NCHW[x]c, as TVM's ``topi.nn``.

    Y = topi.nn.conv2d_nchw(X, W, strides=(2, 2), padding=(1, 1), dilation=1)
    G = topi.nn.group_conv2d_nchw(X, W, 1, 1, 1, groups=4)
    D = topi.nn.depthwise_conv2d_nchw(X, Wd, 1, 1, 1)             # Wd (C, multiplier, KH, KW)
    H = topi.nn.conv2d_hwcn(Xh, Wh, 1, "SAME", 1)                   # Xh (H, W, C, N), Wh (KH, KW, C, O)
    B = topi.nn.conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW8c", "NCHW8c")   # Xc (N, C/8, H, W, 8)

The NCHW convolutions compute as ``topi.conv2d_nchw`` does: the kernel packed into blocks of
``oc_block`` output channels (``<name>_packK``, zero past the last channel), the sum in the blocked
layout (``<name>_NCHWc``, channels of a block in vector lanes), copied out to NCHW by the tagged
output stage (tag ``conv2d_nchw`` / ``group_conv2d_nchw`` / ``depthwise_conv2d_nchw``, attribute
``oc_block``).  Under a GPU target a plain convolution is the sum in NCHW itself (attribute ``direct``):
the GPU schedule tiles it in shared memory instead.  A group's output channels are blocked within the group, so the
input channels a block reads do not depend on the lane.  A depthwise
convolution (one output channel per input channel) also packs the padded input into channel blocks
(``<name>_pad_pack``), so its lanes load contiguously;
with unit stride and wide rows it is computed directly in NCHW instead (attribute ``direct``), output
columns in vector lanes.
"""
from __future__ import annotations

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import pack_blocks, vector_block
from ..utils import (OperatorError, check_options, check_tensor, const_or_none, gpu_target_current, shape_str,
                     with_cpu_target)
from .pad import pad as _pad
from .utils import get_pad_tuple, out_size, pair

CONV_TAGS = ("conv2d_nchw", "group_conv2d_nchw", "depthwise_conv2d_nchw")
DIRECT_MIN_WIDTH = 32   # a depthwise convolution with unit stride and rows this wide is computed in NCHW


def _cast(dtype, v):
    return v if v.dtype == dtype else _op.cast(dtype, v)


def _args(op, data, kernel, strides, padding, dilation, out_dtype):
    check_tensor(op, data, "data", 4)
    check_tensor(op, kernel, "kernel", 4)
    if data.dtype != kernel.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(data)} but kernel is {shape_str(kernel)}; give out_dtype")
    kh, kw = (const_or_none(x) for x in kernel.shape[2:])
    if kh is None or kw is None:
        raise OperatorError(f"{op}: the kernel's spatial size must be constant, got {shape_str(kernel)}")
    sh, sw = pair(op, "strides", strides)
    dh, dw = pair(op, "dilation", dilation)
    pads = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), op)
    return kh, kw, sh, sw, dh, dw, pads, dt.canonical(out_dtype or data.dtype)


def _padded(data, pads, name):
    pt, pl, pb, pr = pads
    if not any(pads):
        return data
    return _pad(data, (0, 0, pt, pl), (0, 0, pb, pr), 0.0, name=name + "_pad")


def _largest_divisor(n, limit):
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


@with_cpu_target
def group_conv2d_nchw(Input, Filter, stride, padding, dilation, groups, out_dtype=None, name="conv2d",
                      tag="group_conv2d_nchw", oc_block=None, target=None):
    """Grouped convolution: Input (N, C, H, W), Filter (O, C / groups, KH, KW) -> (N, O, OH, OW)."""
    op = tag
    kh, kw, sh, sw, dh, dw, pads, out_dtype = _args(op, Input, Filter, stride, padding, dilation, out_dtype)
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise OperatorError(f"{op}: groups must be an int >= 1, got {groups!r}")
    check_options(op, oc_block=oc_block)
    n, c, h, w = Input.shape
    o, ipg, _, _ = Filter.shape
    C, O, IPG = const_or_none(c), const_or_none(o), const_or_none(ipg)
    if O is None or IPG is None:
        raise OperatorError(f"{op}: the kernel's channel counts must be constant, got {shape_str(Filter)}")
    if O % groups:
        raise OperatorError(f"{op}: {O} output channels do not split into {groups} groups")
    if C is not None and C != IPG * groups:
        raise OperatorError(f"{op}: data has {C} channels but the kernel expects {IPG} x {groups} groups = "
                            f"{IPG * groups}")
    opg = O // groups
    oh = out_size(op, h, pads[0] + pads[2], kh, sh, dh)
    ow = out_size(op, w, pads[1] + pads[3], kw, sw, dw)
    attrs = {"groups": groups, "strides": (sh, sw), "dilation": (dh, dw), "padding": pads}
    if groups == 1 and oc_block is None and gpu_target_current():
        # a GPU schedule tiles channels in shared memory and registers: the sum in NCHW, the kernel read in place
        pad = _padded(Input, pads, name)
        rc = te.reduce_axis((0, IPG), name="rc")
        ry = te.reduce_axis((0, kh), name="ry")
        rx = te.reduce_axis((0, kw), name="rx")
        return te.compute((n, O, oh, ow), lambda b, f, y, x: te.sum(
            _cast(out_dtype, pad[b, rc, y * sh + ry * dh, x * sw + rx * dw]) * _cast(out_dtype, Filter[f, rc, ry, rx]),
            axis=[rc, ry, rx]), name=name, tag=tag, attrs={**attrs, "oc_block": 1, "direct": 1})
    vb = vector_block(out_dtype, target)
    ob = oc_block or (vb if groups == 1 else _largest_divisor(opg, vb))
    if groups > 1 and opg % ob:
        raise OperatorError(f"{op}: oc_block {ob} must divide the {opg} output channels of a group")
    pad = _padded(Input, pads, name)
    packed = pack_blocks(((O + ob - 1) // ob, IPG, kh, kw, ob),
                         lambda fo, ch, y, x, fi: Filter[fo * ob + fi, ch, y, x], O, Filter.dtype, name + "_packK")
    rc = te.reduce_axis((0, IPG), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def channel(fo):
        return rc if groups == 1 else (fo * ob) // opg * IPG + rc
    blocked = te.compute((n, (O + ob - 1) // ob, oh, ow, ob),
                         lambda b, fo, y, x, fi: te.sum(
                             _cast(out_dtype, pad[b, channel(fo), y * sh + ry * dh, x * sw + rx * dw]) *
                             _cast(out_dtype, packed[fo, rc, ry, rx, fi]), axis=[rc, ry, rx]),
                         name=name + "_NCHWc")
    return te.compute((n, O, oh, ow), lambda b, f, y, x: blocked[b, f // ob, y, x, f % ob], name=name, tag=tag,
                      attrs={**attrs, "oc_block": ob})


@with_cpu_target
def conv2d_nchw(Input, Filter, stride, padding, dilation=1, out_dtype=None, name="conv2d", oc_block=None,
                target=None):
    """Convolution: Input (N, C, H, W), Filter (O, C, KH, KW) -> (N, O, OH, OW); tag ``conv2d_nchw``.

    ``padding``: an int, (h, w), (top, left, bottom, right), "SAME" or "VALID"."""
    return group_conv2d_nchw(Input, Filter, stride, padding, dilation, 1, out_dtype, name, "conv2d_nchw",
                             oc_block, target)


def conv2d(input, filter, strides, padding, dilation, layout="NCHW", out_dtype=None):  # noqa: A002 - TVM's names
    """``conv2d_nchw`` for ``layout="NCHW"`` (TVM's dispatcher; other layouts are not supported)."""
    if layout != "NCHW":
        raise OperatorError(f"conv2d: layout {layout!r} is not supported (NCHW only; NCHW[x]c via conv2d_NCHWc)")
    return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)


def conv2d_hwcn(Input, Filter, stride, padding, dilation, out_dtype=None, name="conv2d_hwcn"):
    """Convolution with the batch innermost: Input (H, W, C, N), Filter (KH, KW, C, O) -> (OH, OW, O, N),
    tag ``conv2d_hwcn`` (TVM's layout for batched GPU convolution; its TEDD tutorial draws one)."""
    op = "conv2d_hwcn"
    check_tensor(op, Input, "data", 4)
    check_tensor(op, Filter, "kernel", 4)
    if Input.dtype != Filter.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(Input)} but kernel is {shape_str(Filter)}; give out_dtype")
    kh, kw, kc, ko = (const_or_none(x) for x in Filter.shape)
    if kh is None or kw is None or kc is None:
        raise OperatorError(f"{op}: the kernel's window and input channels must be constant, got {shape_str(Filter)}")
    c = const_or_none(Input.shape[2])
    if c is not None and c != kc:
        raise OperatorError(f"{op}: data (H, W, C, N) has {c} channels but the kernel (KH, KW, C, O) expects {kc}")
    sh, sw = pair(op, "strides", stride)
    dh, dw = pair(op, "dilation", dilation)
    pads = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), op)
    out_dtype = dt.canonical(out_dtype or Input.dtype)
    h, w, _, n = Input.shape
    oh = out_size(op, h, pads[0] + pads[2], kh, sh, dh)
    ow = out_size(op, w, pads[1] + pads[3], kw, sw, dw)
    pt, pl, pb, pr = pads
    pad = _pad(Input, (pt, pl, 0, 0), (pb, pr, 0, 0), 0.0, name=name + "_pad") if any(pads) else Input
    rc = te.reduce_axis((0, kc), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    return te.compute((oh, ow, Filter.shape[3], n),
                      lambda y, x, f, b: te.sum(_cast(out_dtype, pad[y * sh + ry * dh, x * sw + rx * dw, rc, b]) *
                                                _cast(out_dtype, Filter[ry, rx, rc, f]), axis=[ry, rx, rc]),
                      name=name, tag="conv2d_hwcn",
                      attrs={"strides": (sh, sw), "dilation": (dh, dw), "padding": pads})


@with_cpu_target
def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None, name="depthwise_conv2d",
                          target=None):
    """Depthwise convolution: Input (N, C, H, W), Filter (C, M, KH, KW) -> (N, C * M, OH, OW), output
    channel ``c * M + m`` reading input channel ``c``; tag ``depthwise_conv2d_nchw``."""
    op = "depthwise_conv2d_nchw"
    kh, kw, sh, sw, dh, dw, pads, out_dtype = _args(op, Input, Filter, stride, padding, dilation, out_dtype)
    n, c, h, w = Input.shape
    C, M = const_or_none(Filter.shape[0]), const_or_none(Filter.shape[1])
    if C is None or M is None:
        raise OperatorError(f"{op}: the kernel's channel counts must be constant, got {shape_str(Filter)}")
    if const_or_none(c) is not None and const_or_none(c) != C:
        raise OperatorError(f"{op}: data has {const_or_none(c)} channels but the kernel has {C}")
    if M != 1:
        # a multiplier: the grouped convolution (one group per input channel) computes it
        flat = te.compute((C * M, 1, kh, kw), lambda f, z, y, x: Filter[f // M, f % M, y, x],
                          name=name + "_kernel", tag="injective")
        return group_conv2d_nchw(Input, flat, stride, padding, dilation, C, out_dtype, name, "depthwise_conv2d_nchw",
                                 None, target)
    cb = vector_block(out_dtype, target)
    pt, pl, pb, pr = pads
    oh = out_size(op, h, pt + pb, kh, sh, dh)
    ow = out_size(op, w, pl + pr, kw, sw, dw)
    attrs = {"oc_block": cb, "groups": C, "strides": (sh, sw), "dilation": (dh, dw), "padding": pads}
    if sh == sw == 1 and const_or_none(ow) is not None and const_or_none(ow) >= DIRECT_MIN_WIDTH:
        # unit stride over wide rows: computed in NCHW, output columns in vector lanes (no layout change)
        pad = _padded(Input, pads, name)
        ry = te.reduce_axis((0, kh), name="ry")
        rx = te.reduce_axis((0, kw), name="rx")
        return te.compute((n, C, oh, ow), lambda b, f, y, x: te.sum(
            _cast(out_dtype, pad[b, f, y + ry * dh, x + rx * dw]) * _cast(out_dtype, Filter[f, 0, ry, rx]),
            axis=[ry, rx]), name=name, tag="depthwise_conv2d_nchw", attrs=dict(attrs, direct=1))
    nb = (C + cb - 1) // cb
    zero = _op.const(0, Input.dtype)

    def pack(b, co, y, x, ci):
        ch = co * cb + ci
        conds = [y >= pt, y < h + pt, x >= pl, x < w + pl] if any(pads) else []
        if C % cb:
            conds.append(ch < C)
        v = Input[b, _op.min(ch, C - 1) if C % cb else ch, y - pt, x - pl]
        return _op.if_then_else(_op.all(*conds), v, zero) if conds else v
    padc = te.compute((n, nb, h + pt + pb, w + pl + pr, cb), pack, name=name + "_pad_pack", tag="conv2d_pack")
    packed = pack_blocks((nb, kh, kw, cb), lambda fo, y, x, fi: Filter[fo * cb + fi, 0, y, x], C, Filter.dtype,
                         name + "_packK")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    blocked = te.compute((n, nb, oh, ow, cb),
                         lambda b, fo, y, x, fi: te.sum(
                             _cast(out_dtype, padc[b, fo, y * sh + ry * dh, x * sw + rx * dw, fi]) *
                             _cast(out_dtype, packed[fo, ry, rx, fi]), axis=[ry, rx]),
                         name=name + "_NCHWc")
    return te.compute((n, C, oh, ow), lambda b, f, y, x: blocked[b, f // cb, y, x, f % cb], name=name,
                      tag="depthwise_conv2d_nchw", attrs=attrs)


def check_block_layout(op, what, layout, block):
    """``layout`` (None, or "NCHW<block>c") must name a block of ``block`` channels."""
    if layout is not None and layout != f"NCHW{block}c":
        raise OperatorError(f"{op}: {what} {layout!r} does not match the block of {block} channels "
                            f"(expected 'NCHW{block}c')")


def nchwc_window(op, data, kernel, out_dtype, stride, padding, dilation, name):
    """The window of a blocked convolution over data (N, C/ic, H, W, ic) and a kernel (..., KH, KW, ., .):
    ``(out_dtype, strides, dilation, pads, (OH, OW), padded data)``, checking dtypes and sizes."""
    h, w = data.shape[2], data.shape[3]
    kh, kw = const_or_none(kernel.shape[2]), const_or_none(kernel.shape[3])
    if data.dtype != kernel.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(data)} but kernel is {shape_str(kernel)}; give out_dtype")
    out_dtype = dt.canonical(out_dtype or data.dtype)
    sh, sw = pair(op, "strides", stride)
    dh, dw = pair(op, "dilation", dilation)
    pads = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), op)
    pt, pl, pb, pr = pads
    oh = out_size(op, h, pt + pb, kh, sh, dh)
    ow = out_size(op, w, pl + pr, kw, sw, dw)
    pad = data if not any(pads) else _pad(data, (0, 0, pt, pl, 0), (0, 0, pb, pr, 0), 0.0, name=name + "_pad")
    return out_dtype, (sh, sw), (dh, dw), pads, (oh, ow), pad


def conv2d_NCHWc(data, kernel, stride, padding, dilation, layout, out_layout, out_dtype=None, name="conv2d_NCHWc",
                 groups=1):
    """Blocked convolution: data (N, C/ic, H, W, ic), kernel (O/oc, C/groups/ic, KH, KW, ic, oc) ->
    (N, O/oc, OH, OW, oc); ``layout`` / ``out_layout`` name the blocking ("NCHW8c"). Tag ``conv2d_NCHWc``.
    With ``groups`` > 1 the blocks must divide each group's channels (``ic`` its inputs, ``oc`` its outputs).

    The reduction runs over (input block, ky, kx, input lane), the lane innermost: each step reads one
    input value and one contiguous ``oc``-vector of the kernel, so the register tile of
    ``topi.x86.schedule_conv2d_NCHWc`` needs no index arithmetic in its inner loop."""
    op = "conv2d_NCHWc"
    check_tensor(op, data, "data", 5)
    check_tensor(op, kernel, "kernel", 6)
    n, cbk, h, w, ic = data.shape
    ofo, kcb, kh, kw, kic, oc = kernel.shape
    ic, kic, oc, kh, kw = (const_or_none(x) for x in (ic, kic, oc, kh, kw))
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise OperatorError(f"{op}: groups must be an int >= 1, got {groups!r}")
    if None in (ic, kic, oc, kh, kw) or ic != kic or const_or_none(cbk) != groups * const_or_none(kcb) or \
            (groups > 1 and (const_or_none(ofo) is None or const_or_none(ofo) % groups)):
        raise OperatorError(f"{op}: data {shape_str(data)} and kernel {shape_str(kernel)} do not match with "
                            f"groups={groups} (expected (N, C/ic, H, W, ic) and (O/oc, C/groups/ic, KH, KW, ic, oc), "
                            "the output blocks splitting evenly into the groups)")
    check_block_layout(op, "layout", layout, ic)
    check_block_layout(op, "out_layout", out_layout, oc)
    out_dtype, (sh, sw), (dh, dw), pads, (oh, ow), pad = nchwc_window(op, data, kernel, out_dtype, stride, padding,
                                                                     dilation, name)
    rco = te.reduce_axis((0, kcb), name="rco")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rci = te.reduce_axis((0, ic), name="rci")
    opg = const_or_none(ofo) // groups if groups > 1 else None    # output blocks per group

    def block(fo):
        return rco if groups == 1 else fo // opg * kcb + rco
    return te.compute((n, ofo, oh, ow, oc),
                      lambda b, fo, y, x, fi: te.sum(
                          _cast(out_dtype, pad[b, block(fo), y * sh + ry * dh, x * sw + rx * dw, rci]) *
                          _cast(out_dtype, kernel[fo, rco, ry, rx, rci, fi]), axis=[rco, ry, rx, rci]),
                      name=name, tag="conv2d_NCHWc",
                      attrs={"oc_block": oc, "ic_block": ic, "strides": (sh, sw), "dilation": (dh, dw),
                             "padding": pads, "groups": groups})


@with_cpu_target
def conv2d_transpose_nchw(Input, Filter, strides, padding, out_dtype=None, output_padding=(0, 0),
                          name="conv2d_transpose", target=None, dilation=1, groups=1):
    """Transposed convolution: Input (N, C, H, W), Filter (C, O / groups, KH, KW) -> (N, O, (H-1)*s - pads +
    (KH-1)*dilation + 1 + output_padding, ...); tag ``conv2d_transpose_nchw``.

    Computed as TVM does: the input spread ``strides`` apart and padded by ``kernel - 1 - padding``
    (one stage, ``<name>_dilate_pad``), then a unit-stride convolution with the kernel flipped and its
    channel axes swapped, in the blocked layout of ``conv2d_nchw`` (and scheduled as it is)."""
    op = "conv2d_transpose_nchw"
    check_tensor(op, Input, "data", 4)
    check_tensor(op, Filter, "kernel", 4)
    n, c, h, w = Input.shape
    C, O, kh, kw = (const_or_none(x) for x in Filter.shape)
    if None in (C, O, kh, kw):
        raise OperatorError(f"{op}: the kernel's shape must be constant, got {shape_str(Filter)}")
    if const_or_none(c) is not None and const_or_none(c) != C:
        raise OperatorError(f"{op}: data has {const_or_none(c)} channels but the kernel (C, O, KH, KW) has {C}")
    if Input.dtype != Filter.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(Input)} but kernel is {shape_str(Filter)}; give out_dtype")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1 or C % groups:
        raise OperatorError(f"{op}: groups must be an int >= 1 dividing the {C} input channels, got {groups!r}")
    sh, sw = pair(op, "strides", strides)
    dh, dw = pair(op, "dilation", dilation)
    oph, opw = pair(op, "output_padding", output_padding, minimum=0)
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise OperatorError(f"{op}: output_padding {(oph, opw)} must be smaller than strides {(sh, sw)} "
                            f"or dilation {(dh, dw)}")
    ekh, ekw = (kh - 1) * dh + 1, (kw - 1) * dw + 1      # the dilated window
    pt, pl, pb, pr = get_pad_tuple(padding, (ekh, ekw), op)
    top, left = ekh - 1 - pt, ekw - 1 - pl               # may be negative: then rows are cropped
    bottom, right = ekh - 1 - pb + oph, ekw - 1 - pr + opw
    zero = _op.const(0, Input.dtype)

    def spread(b, ch, y, x):
        ty, tx = y - top, x - left
        conds = [ty >= 0, tx >= 0, ty < (h - 1) * sh + 1, tx < (w - 1) * sw + 1]
        conds += [ty % sh == 0] if sh > 1 else []
        conds += [tx % sw == 0] if sw > 1 else []
        iy = _op.min(_op.max(ty // sh, 0), h - 1)
        ix = _op.min(_op.max(tx // sw, 0), w - 1)
        return _op.if_then_else(_op.all(*conds), Input[b, ch, iy, ix], zero)
    padded = te.compute((n, c, (h - 1) * sh + 1 + top + bottom, (w - 1) * sw + 1 + left + right), spread,
                        name=name + "_dilate_pad", tag="injective,pad")
    cpg = C // groups                                    # group g reads channels g*cpg.. and writes O outputs
    flipped = te.compute((O * groups, cpg, kh, kw),
                         lambda o, ch, y, x: Filter[o // O * cpg + ch, o % O, kh - 1 - y, kw - 1 - x],
                         name=name + "_kernel", tag="injective")
    return group_conv2d_nchw(padded, flipped, 1, 0, (dh, dw), groups, out_dtype, name, "conv2d_transpose_nchw",
                             None, target)


def dilate(data, strides, dilation_value=0.0, name="DilatedInput"):
    """``data`` with ``strides[k] - 1`` values of ``dilation_value`` between neighbours along axis ``k``."""
    check_tensor("dilate", data, "data")
    if len(strides) != len(data.shape):
        raise OperatorError(f"dilate: strides need {len(data.shape)} entries, got {tuple(strides)}")
    shape = tuple((s - 1) * k + 1 if k != 1 else s for s, k in zip(data.shape, strides))

    def f(*i):
        conds = [i[k] % s == 0 for k, s in enumerate(strides) if s != 1]
        v = data(*[i[k] // s if s != 1 else i[k] for k, s in enumerate(strides)])
        return _op.if_then_else(_op.all(*conds), v, _op.const(dilation_value, data.dtype)) if conds else v
    return te.compute(shape, f, name=name, tag="injective,dilate")


def _get_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout="NCHW"):
    """The AutoTVM workload of a 2-D convolution (TVM's helper; see ``nn.workload``)."""
    from .workload import conv2d_workload
    return conv2d_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout)
