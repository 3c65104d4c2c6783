"""SimplifyInference: inference-time rewrites of training operators.

``nn.dropout`` becomes its input.  ``nn.batch_norm(x, gamma, beta, mean, var)[0]``
becomes ``x * scale + shift`` per channel (``scale = gamma / sqrt(var + eps)``,
``shift = beta - mean * scale``); when ``x`` is a conv2d (optionally followed by
bias_add) that nothing else reads, the scale is folded into the conv's weights
(``W * scale[o]``) and the shift becomes its bias, so after FoldConstant the
batch norm costs nothing.
"""
from __future__ import annotations

from ..expr import Call, TupleGetItem
from ..op import nn, tensor
from ..op.registry import Op
from ..visit import rewrite


def _is(e, name):
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _bn_parts(bn, dtype):
    from ..expr import const
    x, gamma, beta, mean, var = bn.args
    a = bn.attrs
    inv = tensor.rsqrt(tensor.add(var, const(float(a.epsilon), dtype)))
    scale = tensor.multiply(inv, gamma) if a.scale else inv
    shift = tensor.negative(tensor.multiply(mean, scale))
    if a.center:
        shift = tensor.add(shift, beta)
    return x, scale, shift


def _expand(vec, axis, ndim):
    """A per-channel vector shaped to broadcast along ``axis`` of a rank-``ndim`` tensor."""
    axis %= ndim
    trailing = ndim - axis - 1
    return tensor.expand_dims(vec, 1, trailing) if trailing else vec


def simplify(body, users):
    def fn(node, old):
        if _is(node, "nn.dropout"):
            return node.args[0]
        if isinstance(node, TupleGetItem) and _is(node.tuple_value, "nn.batch_norm"):
            bn, old_bn = node.tuple_value, old.tuple_value
            if node.index == 1:
                return bn.args[3]
            if node.index == 2:
                return bn.args[4]
            x, scale, shift = _bn_parts(bn, old_bn.args[0]._checked_type.dtype)
            ndim = len(old_bn.args[0]._checked_type.shape)
            axis = bn.attrs.axis % ndim
            conv, bias, old_x = x, None, old_bn.args[0]
            if _is(x, "nn.bias_add") and x.attrs.axis % ndim == 1 and users.get(old_x, 0) <= 1:
                conv, bias, old_x = x.args[0], x.args[1], old_x.args[0]
            if _is(conv, "nn.conv2d") and axis == 1 and users.get(old_x, 0) <= 1:
                w = conv.args[1]
                w2 = tensor.multiply(w, tensor.expand_dims(scale, 1, 3))
                new_bias = shift if bias is None else tensor.add(tensor.multiply(bias, scale), shift)
                return nn.bias_add(Call(conv.op, [conv.args[0], w2], conv.attrs), new_bias, axis=1)
            return tensor.add(tensor.multiply(x, _expand(scale, axis, ndim)), _expand(shift, axis, ndim))
        return None
    return rewrite(body, fn)[0]


def use_counts(body):
    from ..expr import post_order
    counts = {}
    for n in post_order(body):
        for c in n.children():
            counts[c] = counts.get(c, 0) + 1
    return counts
