"""AlterOpLayout: conv2d in NCHW becomes conv2d in NCHW[x]c, blocked by the target's vector width.

Layouts flow forward through the graph: a conv2d's output is in
``NCHW{o}c``; element-wise operators and pools keep their input's layout;
broadcast operators keep it when their other operand has the full shape (it
is transformed, once, if it is in another layout) or is a per-channel vector (transformed once, at
compile time when it is a constant); ``bias_add`` becomes an add of the blocked bias; a concatenate
along channels of inputs blocked alike concatenates the blocks; a pool
whose only readers are blocked convolutions pools their blocked input.
Everything else
wants NCHW.  A ``layout_transform`` is inserted only where a producer's
layout differs from what its consumer wants: between two convolutions whose
blocks match there is none, so a chain of conv / bias / relu / add stays
blocked.  Weights are transformed to ``OIHW{i}i{o}o`` (FoldConstant then
does that at compile time).  Channel blocks are two vectors (16 float32 with
AVX2), or the largest divisor of the channel count below that which is whole
vectors, else the largest divisor that fits one vector.  Depthwise convolutions become
``contrib_depthwise_conv2d_NCHWc`` (kernel ``OIHW1i{o}o``) reading their
producer's blocks as they are; grouped ones become ``contrib_conv2d_NCHWc``
with ``groups`` when the blocks divide each group's channels, else stay NCHW.

A 3x3 unit-stride conv2d with a constant kernel and enough channels and output tiles
(``use_winograd``) becomes ``nn.contrib_conv2d_winograd_NCHWc`` in the same blocked layouts, reading
``nn.contrib_conv2d_winograd_weight_transform_NCHWc(weight)``, which FoldConstant computes once.

A ``nn.dense`` with a constant weight becomes ``nn.contrib_dense_pack`` reading
``layout_transform(weight, "NK", "NK{b}n")`` (panels of two vectors of output rows), which
FoldConstant computes once: the product no longer repacks its weight on every call.
"""
from __future__ import annotations

from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order
from ..layout import block_of, layout_transform
from ..op import tensor
from ..op.registry import Op, OpPattern, make_call
from ..ty import TensorType

_BINARY = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"}
_POOLS = {"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d"}


def channel_block(channels, block):
    """The channel block for ``channels`` when ``block`` (two vectors) is the widest wanted: the largest
    divisor that is a whole number of vectors (48 channels: 16, not 24, with 16-lane vectors), else the
    largest divisor that fits one vector (24 channels: 12 with 16 lanes; 12 channels: 6 with 8 lanes).
    A block of one and a half vectors makes the register tiles spill: a 1x1 convolution to 24 channels
    in blocks of 24 ran 9x slower than in blocks of 8 or 12 on AVX-512."""
    divisors = [b for b in range(min(block, channels), 0, -1) if channels % b == 0]
    lanes = max(block // 2, 1)
    whole = [b for b in divisors if b % lanes == 0]
    return whole[0] if whole else next(b for b in divisors if b <= lanes)


def _is_blocked_conv(n, vb):
    """Whether AlterOpLayout computes conv2d ``n`` in NCHW[x]c."""
    kind = _conv_kind(n, vb)
    return kind in ("conv", "depthwise") or (kind == "group" and _group_blocks(n, vb) is not None)


def _conv_kind(n, vb):
    """"conv" (groups 1), "depthwise" (one group per input channel, a multiplier of outputs each), "group"
    (other groups) for an NCHW / OIHW float32 conv2d; None for anything else."""
    if not (isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.conv2d"):
        return None
    a = n.attrs
    t = n.args[0]._checked_type
    if not (a.data_layout == "NCHW" and a.kernel_layout == "OIHW" and a.out_layout in ("", "NCHW")
            and isinstance(t, TensorType) and t.dtype == "float32" and (a.out_dtype or "float32") == "float32"):
        return None
    if a.groups == 1:
        return "conv"
    if a.groups == t.shape[1]:
        return "depthwise" if channel_block(t.shape[1], vb) > 1 else None
    return "group"


def _group_blocks(n, vb):
    """The (input, output) channel blocks of a grouped conv2d computed blocked, or None to leave it in NCHW:
    the blocks its neighbours use must divide the channels of one group."""
    c, o, g = n.args[0]._checked_type.shape[1], n.args[1]._checked_type.shape[0], n.attrs.groups
    ib, ob = channel_block(c, vb), channel_block(o, vb)
    if ib > 1 and ob > 1 and (c // g) % ib == 0 and (o // g) % ob == 0:
        return ib, ob
    return None


def _per_channel(t, out4):
    """True when tensor type ``t`` broadcasts against NCHW shape ``out4`` only along channels."""
    s = t.shape
    if len(s) > 4:
        return False
    full = (1,) * (4 - len(s)) + tuple(s)
    return full[0] == 1 and full[2] == 1 and full[3] == 1 and full[1] in (1, out4[1])


def _packs_dense(n):
    """Whether ``nn.dense`` call ``n`` gets its constant float weight packed into panels once, at compile
    time (``nn.contrib_dense_pack``).  With few rows too: a tile of those rows by a panel accumulates in
    vector registers, where reading the weight in place reduces each output across vector lanes."""
    if not (isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.dense"
            and isinstance(n.args[1], Constant)):
        return False
    d, w = n.args[0]._checked_type, n.args[1]._checked_type
    return w.dtype == d.dtype and "float" in w.dtype and (n.attrs.out_dtype or d.dtype) == d.dtype


def _same_block(fields, layout):
    lays = {layout.get(f, "NCHW") for f in fields}
    return len(lays) == 1 and block_of(next(iter(lays))) not in (None, 1)


WINOGRAD_TILE = 4          # F(4 x 4, 3 x 3): 36 products per 16 outputs instead of 144
WINOGRAD_MIN_CHANNELS = 64  # below this the transforms cost about what the product saves
WINOGRAD_MIN_TILES = 8      # fewer output tiles of the layer's own size: the larger weight is read for little
WINOGRAD_SMALL = 14         # outputs up to this many pixels a side take F(2x2, 3x3)


def winograd_tile(n):
    """The Winograd output tile ``m`` for conv2d ``n``: 4, or 2 where the output is at most WINOGRAD_SMALL
    pixels a side.  There F(4x4)'s transformed weight (4x the kernel: 9.4 MB for 256 channels) is streamed
    from memory on every run and bounds the layer; F(2x2)'s is 1.8x the kernel.  Measured on ResNet-50 at
    batch 1 (two threads, in one process, side by side): 0.5-2.2% faster overall with F(2x2) on its
    14 x 14 layers; F(2x2) on the 28 x 28 layers as well gave no clearer gain, on every layer none."""
    return 2 if max(_output_size(n)) <= WINOGRAD_SMALL else WINOGRAD_TILE


def _output_size(n):
    """(OH, OW) of a 3x3 unit-stride conv2d ``n`` (NCHW)."""
    d = n.args[0]._checked_type
    pt, pl, pb, pr = n.attrs.padding
    return d.shape[2] + pt + pb - 2, d.shape[3] + pl + pr - 2


def use_winograd(n):
    """Whether conv2d ``n`` (groups 1, NCHW) is computed by Winograd (``winograd_tile``): a constant 3x3 kernel,
    unit stride and dilation, at least WINOGRAD_MIN_CHANNELS input and output channels and
    WINOGRAD_MIN_TILES output tiles of its tile size.  Measured against the blocked direct convolution (one
    thread, AVX-512): 2.4x at 64 channels on 56 x 56 and 256 on 14 x 14.  ResNet-50's 7 x 7 layers (512
    channels, F(2x2): 16 tiles) made the model 2-3% faster on one thread and no slower on two (side by
    side, in one process)."""
    a = n.attrs
    w, d = n.args[1]._checked_type, n.args[0]._checked_type
    if not isinstance(n.args[1], Constant) or tuple(w.shape[2:]) != (3, 3) or tuple(a.strides) != (1, 1) \
            or tuple(a.dilation) != (1, 1) or a.groups != 1:
        return False
    if min(w.shape[0], w.shape[1]) < WINOGRAD_MIN_CHANNELS:
        return False
    oh, ow = _output_size(n)
    m = winograd_tile(n)
    tiles = d.shape[0] * -(-oh // m) * -(-ow // m)
    return tiles >= WINOGRAD_MIN_TILES


def alter(func, target="llvm", winograd=True):
    from ...topi.utils import vector_block
    from .infer_type import infer_function
    infer_function(func)
    vb = vector_block("float32", target)
    new, layout = {}, {}

    converted = {}          # (node, layout) -> its transform, made once however many readers want it

    def as_layout(old, want):
        have = layout.get(old, "NCHW")
        if have == want:
            return new[old]
        if (old, want) not in converted:
            converted[(old, want)] = layout_transform(new[old], have, want)
        return converted[(old, want)]

    def blocked(old):
        return block_of(layout.get(old, "NCHW")) not in (None, 1)

    users = {}
    for n in post_order(func.body):
        for c in n.children():
            users.setdefault(c, []).append(n)

    def conv_block(n):
        """The input block every reader of ``n`` (all blocked convs) wants, or None."""
        us = users.get(n, [])
        if not us or n is func.body or not all(isinstance(u, Call) and isinstance(u.op, Op)
                                                and u.op.name == "nn.conv2d" and _is_blocked_conv(u, vb)
                                                and u.args[0] is n for u in us):
            return None
        b = channel_block(n._checked_type.shape[1], vb)
        return b if b > 1 else None

    for n in post_order(func.body):
        if isinstance(n, (Var, Constant)):
            new[n] = n
        elif isinstance(n, Call) and isinstance(n.op, Op):
            name, a = n.op.name, n.attrs
            kind = _conv_kind(n, vb)
            if kind == "depthwise":
                c, o = n.args[0]._checked_type.shape[1], n.args[1]._checked_type.shape[0]
                have = block_of(layout.get(n.args[0], "NCHW"))
                ib = have if have not in (None, 1) else channel_block(c, vb)
                ob = ib if o == c else channel_block(o, vb)
                data = as_layout(n.args[0], f"NCHW{ib}c")
                w = layout_transform(new[n.args[1]], "OIHW", f"OIHW1i{ob}o")
                new[n] = make_call("nn.contrib_depthwise_conv2d_NCHWc", [data, w], strides=a.strides,
                                   padding=a.padding, dilation=a.dilation, groups=a.groups, channels=a.channels,
                                   kernel_size=a.kernel_size, data_layout=f"NCHW{ib}c",
                                   kernel_layout=f"OIHW1i{ob}o", out_layout=f"NCHW{ob}c", out_dtype=a.out_dtype)
                layout[n] = f"NCHW{ob}c"
            elif kind == "conv" or (kind == "group" and _group_blocks(n, vb) is not None):
                c, o = n.args[0]._checked_type.shape[1], n.args[1]._checked_type.shape[0]
                ib, ob = channel_block(c, vb), channel_block(o, vb)
                if ib == 1 and not blocked(n.args[0]):    # NCHW1c is NCHW with a unit axis: a view (__nop)
                    data = tensor.reshape(new[n.args[0]], (*n.args[0]._checked_type.shape, 1))
                else:
                    data = as_layout(n.args[0], f"NCHW{ib}c")
                if winograd and use_winograd(n):
                    m = winograd_tile(n)
                    u = make_call("nn.contrib_conv2d_winograd_weight_transform_NCHWc", [new[n.args[1]]],
                                  tile_size=m, out_block=ob)
                    new[n] = make_call("nn.contrib_conv2d_winograd_NCHWc", [data, u], padding=a.padding,
                                       tile_size=m, channels=a.channels, data_layout=f"NCHW{ib}c",
                                       out_layout=f"NCHW{ob}c", out_dtype=a.out_dtype)
                    layout[n] = f"NCHW{ob}c"
                    continue
                w = layout_transform(new[n.args[1]], "OIHW", f"OIHW{ib}i{ob}o")
                new[n] = make_call("nn.contrib_conv2d_NCHWc", [data, w], strides=a.strides, padding=a.padding,
                                   dilation=a.dilation, groups=a.groups, channels=a.channels, kernel_size=a.kernel_size,
                                   data_layout=f"NCHW{ib}c", kernel_layout=f"OIHW{ib}i{ob}o",
                                   out_layout=f"NCHW{ob}c", out_dtype=a.out_dtype)
                layout[n] = f"NCHW{ob}c"
            elif _packs_dense(n):
                w = n.args[1]._checked_type
                block = vector_block(w.dtype, target)
                if (n.args[1], block) not in converted:      # one packed copy however many products read it
                    converted[(n.args[1], block)] = layout_transform(new[n.args[1]], "NK", f"NK{block}n")
                packed = converted[(n.args[1], block)]
                new[n] = make_call("nn.contrib_dense_pack", [as_layout(n.args[0], "NCHW"), packed],
                                   weight_layout=f"NK{block}n", units=w.shape[0], out_dtype=a.out_dtype)
            elif name == "concatenate" and isinstance(n.args[0], Tuple) and _same_block(n.args[0].fields, layout) \
                    and len(n._checked_type.shape) == 4 and a.axis % 4 == 1:
                fields = n.args[0].fields       # channel blocks of one size: concatenate the blocks
                new[n] = Call(n.op, [Tuple([new[f] for f in fields])], a.with_(axis=1))
                layout[n] = layout[fields[0]]
            elif name in _POOLS and blocked(n.args[0]) and a.layout == "NCHW":
                new[n] = Call(n.op, [new[n.args[0]]], a.with_(layout=layout[n.args[0]]))
                layout[n] = layout[n.args[0]]
            elif name in _POOLS and a.layout == "NCHW" and conv_block(n) is not None \
                    and conv_block(n) == channel_block(n.args[0]._checked_type.shape[1], vb):
                lay = f"NCHW{conv_block(n)}c"     # only blocked convs read it: pool the blocked input
                new[n] = Call(n.op, [as_layout(n.args[0], lay)], a.with_(layout=lay))
                layout[n] = lay
            elif n.op.pattern == OpPattern.ELEMWISE and len(n.args) == 1:
                new[n] = Call(n.op, [new[n.args[0]]], a)
                if n.args[0] in layout:
                    layout[n] = layout[n.args[0]]
            elif name == "nn.bias_add" and blocked(n.args[0]) and a.axis % 4 == 1 \
                    and len(n.args[0]._checked_type.shape) == 4:
                lay = layout[n.args[0]]
                c = n.args[1]._checked_type.shape[0]
                b = layout_transform(tensor.reshape(new[n.args[1]], (1, c, 1, 1)), "NCHW", lay)
                new[n] = tensor.add(new[n.args[0]], b)
                layout[n] = lay
            elif name in _BINARY and any(blocked(x) for x in n.args):
                out4 = n._checked_type.shape
                lay = next(layout[x] for x in n.args if blocked(x))
                args = []
                for x in n.args:
                    t = x._checked_type
                    if layout.get(x) == lay and t.shape == out4:
                        args.append(new[x])
                    elif len(t.shape) == 0:
                        args.append(new[x])
                    elif len(out4) == 4 and tuple(t.shape) == tuple(out4):
                        args.append(as_layout(x, lay))      # e.g. a residual add's skip from the NCHW input
                    elif not blocked(x) and len(out4) == 4 and _per_channel(t, out4):
                        c = max(t.shape) if t.shape else 1
                        v = tensor.reshape(new[x], (1, c, 1, 1))
                        args.append(layout_transform(v, "NCHW", lay) if c > 1 else v)
                    else:
                        args = None
                        break
                if args is not None:
                    new[n] = Call(n.op, args, a)
                    layout[n] = lay
                else:
                    new[n] = Call(n.op, [as_layout(x, "NCHW") for x in n.args], a)
            else:
                new[n] = Call(n.op, [as_layout(x, "NCHW") for x in n.args], a)
        elif isinstance(n, Tuple):
            new[n] = Tuple([as_layout(f, "NCHW") for f in n.fields])
        elif isinstance(n, TupleGetItem):
            new[n] = TupleGetItem(new[n.tuple_value], n.index)
        else:
            new[n] = n
    body = as_layout(func.body, "NCHW")
    out = Function(func.params, body, None, func.type_params, func.attrs)
    infer_function(out)
    return out
