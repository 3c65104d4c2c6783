"""``nn.contrib_dense_pack``: a dense layer whose weight is already in panels of ``n`` output rows.

    w_p = relay.layout_transform(w, "NK", "NK32n")          # (N / 32, K, 32), the last panel zero-padded
    y = relay.nn.contrib_dense_pack(x, w_p, weight_layout="NK32n", units=N)

AlterOpLayout rewrites a ``nn.dense`` whose weight is a constant into this form: FoldConstant then packs the
weight once, at compile time, where ``topi.nn.dense`` would repack it on every call (a pass over the whole
weight: with a 768 x 3072 weight the packing cost more than the product), or with few rows read it in place
and reduce each output across vector lanes (an LSTM step's 4 x 64 x 256 product: 3x slower).  ``data`` may have
leading axes (batch, tokens, hidden), so the element-wise tail (bias, GELU, residual add) has the product's shape and
fuses into its register tiles.
"""
from __future__ import annotations

import re

from ..base import RelayError, TypeInferenceError
from .registry import OpPattern, make_call, register
from .typerel import same_dtype, tensor_arg

_LAYOUT = re.compile(r"^NK(\d+)n$")


def _block(layout):
    m = _LAYOUT.match(layout or "")
    if m is None:
        raise TypeInferenceError(f"weight_layout must be 'NK{{n}}n' (panels of n rows), got {layout!r}")
    return int(m.group(1))


def _rel(types, attrs):
    d, w = tensor_arg(types, 0), tensor_arg(types, 1, "weight")
    same_dtype(d, w, "data", "weight")
    b = _block(attrs.weight_layout)
    if len(d.shape) < 2 or len(w.shape) != 3 or w.shape[2] != b or w.shape[1] != d.shape[-1]:
        raise TypeInferenceError(f"data {d.shape} and weight {w.shape} do not fit: contrib_dense_pack needs data "
                                 f"(..., K) and a weight (N / {b}, K, {b}) in layout {attrs.weight_layout}")
    units = attrs.units if attrs.units is not None else w.shape[0] * b
    if not (w.shape[0] - 1) * b < units <= w.shape[0] * b:
        raise TypeInferenceError(f"units={units} does not fit {w.shape[0]} panels of {b} rows")
    from ..ty import TensorType
    return TensorType(d.shape[:-1] + (units,), attrs.out_dtype or d.dtype)


def _compute(attrs, inputs, out_type):
    from ...topi import nn as topi_nn
    data, w = inputs
    return [topi_nn.dense_pack(data, w, out_dtype=out_type.dtype, units=out_type.shape[-1])]


register("nn.contrib_dense_pack", _rel, OpPattern.OUT_ELEMWISE_FUSABLE, _compute,
         {"units": None, "out_dtype": "", "weight_layout": "NK32n"}, 2)


def contrib_dense_pack(data, weight, weight_layout="NK32n", units=None, out_dtype=""):
    """``relay.nn.contrib_dense_pack(data, packed_weight, weight_layout="NK32n", units=None)``: ``data @ W.T``
    with W given as ``layout_transform(W, "NK", weight_layout)``; ``units`` is W's row count when the
    panels do not divide it."""
    if _LAYOUT.match(str(weight_layout)) is None:
        raise RelayError(f"nn.contrib_dense_pack: weight_layout must be 'NK{{n}}n', got {weight_layout!r}")
    return make_call("nn.contrib_dense_pack", [data, weight], weight_layout=str(weight_layout),
                     units=None if units is None else int(units), out_dtype=out_dtype)
