"""AlterOpLayout for CUDA: a 3x3 unit-stride conv2d with a constant kernel (``use_winograd_cuda``) becomes
``nn.contrib_conv2d_winograd_without_weight_transform`` reading ``transpose(contrib_conv2d_winograd_weight_
transform(weight))``, which FoldConstant computes once; the rest of the graph stays NCHW.  Elementwise
operators after it (bias, batch norm folded to a multiply-add, relu, a residual add) fuse into its inverse
transform as they do into the direct convolution.
"""
from __future__ import annotations

from ..expr import Call, Constant, Function, post_order
from ..op.registry import Op
from ..ty import TensorType

MIN_CHANNELS = 64      # fewer: the transforms cost about what the product saves
MIN_TILES = 64         # output tiles (N x ceil(OH/m) x ceil(OW/m)): one 64-wide block of the product per point


def winograd_tile(oh, ow):
    """The output tile m relay takes for an OH x OW output (``topi.cuda.conv2d_winograd.winograd_tile_size``)."""
    from ...topi.cuda.conv2d_winograd import winograd_tile_size
    return winograd_tile_size(oh, ow)


def use_winograd_cuda(n):
    """Whether relay.build(target="cuda") computes conv2d call ``n`` by Winograd's F(m x m, 3 x 3): a float32
    NCHW / OIHW convolution, groups 1, a constant 3x3 kernel, unit stride and dilation, at least
    ``MIN_CHANNELS`` input and output channels, and at least ``MIN_TILES`` output tiles (so the batched
    product fills the GPU as the direct convolution's tiles would).  Every other convolution keeps the direct
    tiled schedule.  With 64 or more channels F(4x4, 3x3) does 36 products per 16 outputs where the direct
    form does 144: the product dominates and the transforms are streamed once."""
    if not (isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "nn.conv2d"):
        return False
    a = n.attrs
    d, w = n.args[0]._checked_type, n.args[1]._checked_type
    if not (isinstance(n.args[1], Constant) and isinstance(d, TensorType) and len(d.shape) == 4
            and len(w.shape) == 4 and a.data_layout == "NCHW" and a.kernel_layout == "OIHW"
            and a.out_layout in ("", "NCHW") and d.dtype == w.dtype == "float32"
            and (a.out_dtype or "float32") == "float32"):
        return False
    if tuple(w.shape[2:]) != (3, 3) or tuple(a.strides) != (1, 1) or tuple(a.dilation) != (1, 1) or a.groups != 1:
        return False
    if min(w.shape[0], w.shape[1]) < MIN_CHANNELS:
        return False
    pt, pl, pb, pr = a.padding
    oh, ow = d.shape[2] + pt + pb - 2, d.shape[3] + pl + pr - 2
    if min(oh, ow) < 1:
        return False
    m = winograd_tile(oh, ow)
    return d.shape[0] * -(-oh // m) * -(-ow // m) >= MIN_TILES


def alter_cuda(func, winograd=True):
    """``func`` with the convolutions ``use_winograd_cuda`` picks computed by Winograd (none without
    ``winograd``)."""
    from ..expr_functor import ExprMutator
    from ..op import tensor
    from ..op.winograd import contrib_conv2d_winograd_weight_transform, contrib_conv2d_winograd_without_weight_transform
    from .infer_type import infer_function
    if not winograd:
        return func
    infer_function(func)
    if not any(use_winograd_cuda(n) for n in post_order(func.body)):
        return func

    class Rewrite(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            if not use_winograd_cuda(call):
                return new
            a = call.attrs
            d = call.args[0]._checked_type
            pt, pl, pb, pr = a.padding
            m = winograd_tile(d.shape[2] + pt + pb - 2, d.shape[3] + pl + pr - 2)
            u = tensor.transpose(contrib_conv2d_winograd_weight_transform(new.args[1], m), (0, 1, 3, 2))
            return contrib_conv2d_winograd_without_weight_transform(
                new.args[0], u, m, padding=a.padding, channels=a.channels, out_dtype=a.out_dtype)

    out = Function(func.params, Rewrite().visit(func.body), None, func.type_params, func.attrs)
    infer_function(out)
    return out
