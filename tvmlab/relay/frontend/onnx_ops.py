"""The ONNX converter table: op type -> function(importer, node) returning Relay expressions.

``CONVERTERS`` is filled by ``onnx_nn`` (convolutions, pooling, normalisation,
matrix products), ``onnx_math`` (elementwise arithmetic, activations,
reductions), ``onnx_tensor`` (shape manipulation, constants, Resize),
``onnx_logic`` (comparisons, logic, Where and what is written with them),
``onnx_index`` (ArgMax, TopK, CumSum, Einsum, GatherND, ScatterElements) and
``onnx_rnn`` (LSTM, GRU, RNN).
``FOLDERS`` holds numpy versions of the shape-arithmetic ops, applied while
importing when every input is a static value. A converter returns one
expression, a list (one per output; ``None`` for an output it does not
produce), or a numpy array for a value it computed at import time.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError

CONVERTERS = {}
FOLDERS = {}


def converter(*op_types):
    def register(fn):
        for op in op_types:
            CONVERTERS[op] = fn
        return fn
    return register


def folder(*op_types):
    def register(fn):
        for op in op_types:
            FOLDERS[op] = fn
        return fn
    return register


def has_input(node, i):
    return len(node.inputs) > i and node.inputs[i] != ""


def expr_input(ctx, node, i):
    if not has_input(node, i):
        raise FrontendError(f"input {i} is required")
    return ctx.expr_of(node.inputs[i])


def const_input(ctx, node, i, what):
    """The numpy value of input ``i`` (None when absent); it must be known while importing."""
    if not has_input(node, i):
        return None
    name = node.inputs[i]
    if name not in ctx.known:
        raise FrontendError(f"{what} (input {i}, {name!r}) must be a constant or an initializer; "
                            f"it is computed by the graph at run time, which is not supported")
    return ctx.known[name]


def axes_arg(ctx, node, input_since, attr="axes", input_index=1):
    """Axes given as an attribute before opset ``input_since`` and as an input from it on."""
    if ctx.opset >= input_since:
        value = const_input(ctx, node, input_index, attr)
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]
    value = node.attr(attr)
    return None if value is None else [int(v) for v in value]


def scalar(ctx, expr, value):
    """``value`` as a Relay constant of ``expr``'s dtype."""
    dtype = ctx.dtype_of(expr)
    return ctx.relay.const(np.asarray(value, dtype=dtype).item(), dtype)


from . import onnx_index, onnx_logic, onnx_math, onnx_nn, onnx_rnn, onnx_tensor  # noqa: E402,F401  (they fill the tables)
