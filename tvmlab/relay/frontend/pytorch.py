"""PyTorch importer: ``relay.frontend.from_pytorch(torch.jit.trace(model, x), [("input0", shape)])``.

The traced module's graph is inlined, then read node by node: ``prim::``
nodes (constants, attribute reads of weights, list and tuple building) are
evaluated while importing, ``aten::`` nodes become Relay calls. Weights are
found by the attribute path of each ``prim::GetAttr`` (``layer1.0.conv1.weight``)
and become parameters under that name. torch is an optional dependency: it is
imported only when this function runs.
"""
from __future__ import annotations

import numpy as np

from ...runtime import ndarray as nd
from .common import (FrontendError, OpNotImplemented, ShapeCache, gelu, layer_norm, matmul, normalize_axis,
                     prod, relay_module)
from .pytorch_more import MORE
from .pytorch_rnn import RNN_CONVERTERS
from .pytorch_transformer import TRANSFORMER


def _torch():
    try:
        import torch
    except ImportError as e:
        raise FrontendError("from_pytorch needs torch (pip install torch); it is not installed") from e
    return torch


def _ints(v):
    return [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]


def _pair(v):
    v = _ints(v)
    return v * 2 if len(v) == 1 else v


class _Ctx:
    """What converters share: the relay module and the shapes of values converted so far."""

    def __init__(self):
        self.relay = relay_module()
        self.shapes = ShapeCache()

    def shape(self, x):
        return self.shapes.shape(x)


def _conv(c, a):
    r = c.relay
    x, w, b = a[0], a[1], a[2]
    if len(a) > 7 and isinstance(a[6], bool):      # aten::_convolution, which carries `transposed`
        stride, pad, dil, is_t, out_pad, groups = a[3], a[4], a[5], a[6], a[7], a[8]
    else:                  # aten::conv2d / conv1d
        stride, pad, dil, is_t, out_pad, groups = a[3], a[4], a[5], False, [0], a[6]
    if isinstance(pad, str):
        raise FrontendError(f"string padding {pad!r} is not supported; trace with explicit padding")
    ws = c.shape(w)
    one_d = len(ws) == 3
    if one_d:
        x, w = r.expand_dims(x, axis=2), r.expand_dims(w, axis=2)
        stride, pad, dil, out_pad = [1] + _ints(stride), [0] + _ints(pad), [1] + _ints(dil), [0] + _ints(out_pad)
        ws = ws[:2] + (1,) + ws[2:]
    stride, pad, dil = _pair(stride), _pair(pad), _pair(dil)
    padding = [pad[0], pad[1], pad[0], pad[1]]
    if is_t:
        out = r.nn.conv2d_transpose(x, w, strides=stride, padding=padding, dilation=dil, groups=int(groups),
                                    channels=ws[1] * int(groups), kernel_size=ws[2:],
                                    output_padding=_pair(out_pad))
    else:
        out = r.nn.conv2d(x, w, strides=stride, padding=padding, dilation=dil, groups=int(groups),
                          channels=ws[0], kernel_size=ws[2:])
    if b is not None:
        out = r.nn.bias_add(out, b, axis=1)
    return r.squeeze(out, axis=[2]) if one_d else out


def _batch_norm(c, a):
    x, gamma, beta, mean, var = a[:5]
    if a[5]:
        raise FrontendError("batch_norm in training mode is not supported (call model.eval() before tracing)")
    out = c.relay.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=float(a[7]))
    return out[0]


def _pool(kind):
    def convert(c, a):
        r = c.relay
        x, kernel = a[0], _pair(a[1])
        stride = _pair(a[2]) if a[2] not in (None, []) else kernel
        pad = _pair(a[3])
        if kind == "max":
            dil, ceil = _pair(a[4]), bool(a[5])
            kw = {} if dil == [1, 1] else {"dilation": dil}
            return r.nn.max_pool2d(x, pool_size=kernel, strides=stride, padding=[pad[0], pad[1]] * 2,
                                   ceil_mode=ceil, **kw)
        if len(a) > 6 and a[6] is not None:
            raise FrontendError("avg_pool2d with divisor_override is not supported")
        return r.nn.avg_pool2d(x, pool_size=kernel, strides=stride, padding=[pad[0], pad[1]] * 2,
                               ceil_mode=bool(a[4]), count_include_pad=bool(a[5]))
    return convert


def _adaptive_pool(kind):
    def convert(c, a):
        r = c.relay
        size = _pair(a[1])
        if size == [1, 1]:
            return (r.nn.global_avg_pool2d if kind == "avg" else r.nn.global_max_pool2d)(a[0])
        hw = list(c.shape(a[0])[2:])
        if size == hw:
            return a[0]
        if any(o <= 0 or i % o for i, o in zip(hw, size)):       # then each window is in/out, stride in/out
            raise FrontendError(f"adaptive pooling of {hw[0]}x{hw[1]} to {size[0]}x{size[1]} is not supported "
                                f"(only to 1x1 or to sizes that divide the input)")
        k = [i // o for i, o in zip(hw, size)]
        pool = r.nn.avg_pool2d if kind == "avg" else r.nn.max_pool2d
        return pool(a[0], pool_size=k, strides=k, padding=[0, 0, 0, 0])
    return convert


def _binary(name):
    def convert(c, a):
        r = c.relay
        x, y = a[0], a[1]
        if not _is_expr(x):
            x = r.const(x, c.shapes.dtype(y))
        if not _is_expr(y):
            y = r.const(y, c.shapes.dtype(x))
        if name in ("add", "subtract") and len(a) > 2 and a[2] not in (None, 1):
            y = r.multiply(y, r.const(float(a[2]), c.shapes.dtype(x)))
        return getattr(r, name)(x, y)
    return convert


def _is_expr(v):
    from ..expr import RelayExpr
    return isinstance(v, RelayExpr)


def _linear(c, a):
    r = c.relay
    out = r.nn.dense(a[0], a[1])
    return out if a[2] is None else r.nn.bias_add(out, a[2], axis=-1)


def _addmm(c, a):
    r = c.relay
    bias, x, w = a[0], a[1], a[2]
    out = r.nn.dense(x, r.transpose(w, axes=[1, 0]))
    beta, alpha = (float(a[3]) if len(a) > 3 else 1.0), (float(a[4]) if len(a) > 4 else 1.0)
    if alpha != 1.0:
        out = r.multiply(out, r.const(alpha))
    if beta != 0.0:
        out = r.add(out, bias if beta == 1.0 else r.multiply(bias, r.const(beta)))
    return out


def _flatten(c, a):
    x = a[0]
    shape = c.shape(x)
    start = normalize_axis(a[1], len(shape)) if shape else 0
    end = normalize_axis(a[2], len(shape)) if shape else 0
    return c.relay.reshape(x, newshape=tuple(shape[:start]) + (prod(shape[start:end + 1]),) + tuple(shape[end + 1:]))


def _reshape(c, a):
    x, target = a[0], _ints(a[1])
    shape = c.shape(x)
    if target.count(-1) == 1:
        known = prod(v for v in target if v != -1)
        target[target.index(-1)] = prod(shape) // known
    if prod(target) != prod(shape):
        raise FrontendError(f"cannot reshape {shape} to {a[1]}")
    return c.relay.reshape(x, newshape=tuple(target))


def _softmax(log):
    def convert(c, a):
        r = c.relay
        axis = normalize_axis(a[1], len(c.shape(a[0])))
        return (r.nn.log_softmax if log else r.nn.softmax)(a[0], axis=axis)
    return convert


def _reduce(name):
    def convert(c, a):
        x = a[0]
        rank = len(c.shape(x))
        axes = list(range(rank)) if len(a) < 2 or a[1] in (None, []) else \
            sorted(normalize_axis(d, rank) for d in _ints(a[1]))
        keep = bool(a[2]) if len(a) > 2 and isinstance(a[2], bool) else False
        return getattr(c.relay, name)(x, axis=axes, keepdims=keep)
    return convert


def _size(c, a):
    shape = c.shape(a[0])
    return shape[normalize_axis(a[1], len(shape))] if len(a) > 1 else list(shape)


def _transpose(c, a):
    rank = len(c.shape(a[0]))
    axes = list(range(rank))
    d0, d1 = normalize_axis(a[1], rank), normalize_axis(a[2], rank)
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return c.relay.transpose(a[0], axes=axes)


def _clamp(c, a):
    lo = -np.inf if a[1] is None else float(a[1])
    hi = np.inf if a[2] is None else float(a[2])
    return c.relay.clip(a[0], lo, hi)


def _hardsigmoid(c, x):
    r = c.relay
    return r.clip(r.add(r.multiply(x, r.const(1.0 / 6.0)), r.const(0.5)), 0.0, 1.0)


def _pad(c, a):
    x, pads = a[0], _ints(a[1])
    rank = len(c.shape(x))
    width = [[0, 0] for _ in range(rank)]
    for k in range(len(pads) // 2):      # torch lists (begin, end) from the last axis backwards
        width[rank - 1 - k] = [pads[2 * k], pads[2 * k + 1]]
    value = float(a[2]) if len(a) > 2 and a[2] is not None else 0.0
    return c.relay.nn.pad(x, pad_width=tuple(tuple(w) for w in width), pad_value=value)


def _identity(c, a):
    return a[0]


def _slice(c, a):
    """aten::slice(x, dim, start, end, step): a strided_slice of one axis."""
    x = a[0]
    shape = c.shape(x)
    dim = normalize_axis(a[1], len(shape))
    start = 0 if a[2] is None else int(a[2])
    end = shape[dim] if a[3] is None else int(a[3])
    step = int(a[4]) if len(a) > 4 and a[4] is not None else 1
    b, e, st = slice(start, end, step).indices(shape[dim])
    if step <= 0 or e <= b:
        raise FrontendError(f"slice of axis {dim} from {start} to {end} step {step} is empty or reversed")
    if (b, e, st) == (0, shape[dim], 1):
        return x
    return c.relay.strided_slice(x, begin=[b], end=[e], strides=[st], axes=[dim])


def _select(c, a):
    x = a[0]
    shape = c.shape(x)
    dim = normalize_axis(a[1], len(shape))
    index = int(a[2]) + (shape[dim] if int(a[2]) < 0 else 0)
    return c.relay.take(x, c.relay.const(np.array(index, np.int32)), axis=dim)


def _chunk(c, a):
    x, chunks = a[0], int(a[1])
    shape = c.shape(x)
    dim = normalize_axis(a[2], len(shape))
    size = -(-shape[dim] // chunks)
    points = list(range(size, shape[dim], size))
    if not points:
        return [x]
    parts = c.relay.split(x, indices_or_sections=points, axis=dim)
    return [parts[k] for k in range(len(points) + 1)]


def _layer_norm(c, a):
    x = a[0]
    rank = len(c.shape(x))
    axes = list(range(rank - len(_ints(a[1])), rank))
    return layer_norm(c.relay, x, axes, a[2], a[3], float(a[4]), c.shapes.dtype(x), c.shape)


def _floor_divide(c, a):
    if _is_expr(a[0]) or _is_expr(a[1]):
        raise FrontendError("floor_divide of tensors is not supported (only of sizes)")
    return int(a[0]) // int(a[1])


CONVERTERS = {
    "aten::_convolution": _conv, "aten::conv2d": _conv, "aten::conv1d": _conv,
    "aten::batch_norm": _batch_norm,
    "aten::relu": lambda c, a: c.relay.nn.relu(a[0]),
    "aten::sigmoid": lambda c, a: c.relay.sigmoid(a[0]),
    "aten::tanh": lambda c, a: c.relay.tanh(a[0]),
    "aten::exp": lambda c, a: c.relay.exp(a[0]),
    "aten::sqrt": lambda c, a: c.relay.sqrt(a[0]),
    "aten::neg": lambda c, a: c.relay.negative(a[0]),
    "aten::abs": lambda c, a: c.relay.abs(a[0]),
    "aten::leaky_relu": lambda c, a: c.relay.nn.leaky_relu(a[0], alpha=float(a[1])),
    "aten::hardtanh": _clamp, "aten::clamp": _clamp,
    "aten::hardsigmoid": lambda c, a: _hardsigmoid(c, a[0]),
    "aten::hardswish": lambda c, a: c.relay.multiply(a[0], _hardsigmoid(c, a[0])),
    "aten::add": _binary("add"), "aten::sub": _binary("subtract"),
    "aten::mul": _binary("multiply"), "aten::div": _binary("divide"), "aten::pow": _binary("power"),
    "aten::max_pool2d": _pool("max"), "aten::avg_pool2d": _pool("avg"),
    "aten::adaptive_avg_pool2d": _adaptive_pool("avg"), "aten::adaptive_max_pool2d": _adaptive_pool("max"),
    "aten::linear": _linear, "aten::addmm": _addmm,
    "aten::matmul": lambda c, a: matmul(c.relay, c.shape, a[0], a[1]),
    "aten::t": lambda c, a: c.relay.transpose(a[0], axes=[1, 0]),
    "aten::flatten": _flatten, "aten::view": _reshape, "aten::reshape": _reshape,
    "aten::cat": lambda c, a: c.relay.concatenate(list(a[0]), axis=normalize_axis(a[1], len(c.shape(a[0][0])))),
    "aten::softmax": _softmax(False), "aten::log_softmax": _softmax(True),
    "aten::mean": _reduce("mean"), "aten::sum": _reduce("sum"),
    "aten::transpose": _transpose,
    "aten::permute": lambda c, a: c.relay.transpose(a[0], axes=_ints(a[1])),
    "aten::unsqueeze": lambda c, a: c.relay.expand_dims(a[0], axis=normalize_axis(a[1], len(c.shape(a[0])) + 1)),
    "aten::squeeze": lambda c, a: c.relay.squeeze(a[0], axis=None if len(a) < 2 else _ints(a[1])),
    "aten::constant_pad_nd": _pad, "aten::pad": _pad,
    "aten::dropout": _identity, "aten::contiguous": _identity, "aten::detach": _identity,
    "aten::size": _size, "aten::Int": lambda c, a: int(a[0]), "prim::NumToTensor": _identity,
    "aten::floor_divide": _floor_divide,
    "aten::relu6": lambda c, a: c.relay.clip(a[0], 0.0, 6.0),
    "aten::silu": lambda c, a: c.relay.multiply(a[0], c.relay.sigmoid(a[0])),
    "aten::gelu": lambda c, a: gelu(c.relay, a[0], a[1] if len(a) > 1 else "none", c.shapes.dtype(a[0])),
    "aten::layer_norm": _layer_norm,
    "aten::slice": _slice, "aten::select": _select, "aten::chunk": _chunk,
}
CONVERTERS.update(MORE)        # comparisons, where, argmax, cumsum, einsum, interpolation ... (pytorch_more)
CONVERTERS.update(RNN_CONVERTERS)      # nn.LSTM / nn.GRU / nn.RNN (pytorch_rnn)
CONVERTERS.update(TRANSFORMER)         # embedding, masked_fill, tril, baddbmm, sdpa ... (pytorch_transformer)
_IN_PLACE = ("relu", "relu6", "silu", "sigmoid", "tanh", "exp", "sqrt", "neg", "abs", "leaky_relu", "hardtanh", "clamp",
             "hardsigmoid", "hardswish", "add", "sub", "mul", "div", "pow", "t", "transpose", "unsqueeze",
             "squeeze")
SUPPORTED = sorted(CONVERTERS)
for _name in _IN_PLACE:                 # in-place variants (relu_, add_) convert as the plain ones
    CONVERTERS[f"aten::{_name}_"] = CONVERTERS[f"aten::{_name}"]

_PRIM = ("prim::Constant", "prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct",
         "prim::ListUnpack", "prim::TupleUnpack")


def _constant(node):
    out = node.output()
    if hasattr(out, "toIValue"):
        value = out.toIValue()
    elif node.hasAttribute("value"):
        value = getattr(node, node.kindOf("value"))("value")
    else:
        value = None
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, torch.device):
        return str(value)
    return value


def _input_infos(input_infos, n):
    infos = []
    for item in input_infos:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise FrontendError(f"input_infos entries are (name, shape) or (name, (shape, dtype)), got {item!r}")
        name, spec = item
        if isinstance(spec, (list, tuple)) and len(spec) == 2 and isinstance(spec[1], str):
            shape, dtype = spec
        else:
            shape, dtype = spec, "float32"
        try:
            dims = tuple(int(d) for d in shape)
            dtype = str(np.dtype(dtype))
        except (TypeError, ValueError):
            raise FrontendError(f"input {name!r}: expected a shape of ints and a dtype name, "
                                f"got {spec!r}") from None
        if any(d <= 0 for d in dims):
            raise FrontendError(f"input {name!r}: shape dimensions must be positive, got {dims}")
        infos.append((str(name), dims, dtype))
    if len(infos) != n:
        raise FrontendError(f"the traced module takes {n} inputs, but input_infos gives {len(infos)}")
    return infos


def from_pytorch(script_module, input_infos, default_dtype="float32"):
    """Import a ``torch.jit.trace``-d module; ``input_infos`` is [(name, shape or (shape, dtype)), ...]."""
    torch = _torch()
    if not isinstance(script_module, torch.jit.ScriptModule):
        raise FrontendError(f"from_pytorch expects a torch.jit.trace-d module, got {type(script_module).__name__}")
    graph = script_module.graph.copy()
    torch._C._jit_pass_inline(graph)
    nodes = list(graph.nodes())
    missing = sorted({n.kind() for n in nodes if n.kind() not in CONVERTERS and n.kind() not in _PRIM})
    if missing:
        where = {k: next(str(n).strip() for n in nodes if n.kind() == k) for k in missing}
        raise OpNotImplemented("the PyTorch frontend does not support: " +
                               "; ".join(f"{k} (in `{where[k]}`)" for k in missing) +
                               f". Supported operators (and in-place variants such as aten::relu_): "
                               f"{', '.join(SUPPORTED)}")
    c = _Ctx()
    r = c.relay
    graph_inputs = list(graph.inputs())
    values = {graph_inputs[0].debugName(): ("module", ())}
    input_vars = []
    for value, (name, shape, dtype) in zip(graph_inputs[1:], _input_infos(input_infos, len(graph_inputs) - 1)):
        var = r.var(name, shape=shape, dtype=dtype or default_dtype)
        values[value.debugName()] = var
        input_vars.append(var)
    state = {k: v.detach().cpu().numpy() for k, v in script_module.state_dict().items()}
    param_vars, params = {}, {}
    for node in nodes:
        kind = node.kind()
        outs = list(node.outputs())
        ins = [values.get(v.debugName()) for v in node.inputs()]
        if kind == "prim::Constant":
            values[outs[0].debugName()] = _constant(node)
        elif kind == "prim::GetAttr":
            parent = ins[0]
            path = parent[1] + (node.s("name"),) if isinstance(parent, tuple) else (node.s("name"),)
            key = ".".join(path)
            if key in state:
                if key not in param_vars:
                    arr = state[key]
                    param_vars[key] = r.var(key, shape=arr.shape, dtype=str(arr.dtype))
                    params[key] = arr
                values[outs[0].debugName()] = param_vars[key]
            else:
                values[outs[0].debugName()] = ("module", path)
        elif kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            values[outs[0].debugName()] = list(ins)
        elif kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            for o, v in zip(outs, ins[0]):
                values[o.debugName()] = v
        else:
            try:
                result = CONVERTERS[kind](c, ins)
            except FrontendError as e:
                raise type(e)(f"{kind} (`{str(node).strip()}`): {e}") from e
            except Exception as e:
                raise FrontendError(f"{kind} (`{str(node).strip()}`): {type(e).__name__}: {e}") from e
            if len(outs) > 1 and isinstance(result, list):   # aten::topk, aten::sort, aten::max(dim)
                for o, v in zip(outs, result):
                    values[o.debugName()] = v
            else:
                values[outs[0].debugName()] = result
    results = [values[v.debugName()] for v in graph.outputs()]
    flat = []
    for res in results:
        flat.extend(res if isinstance(res, list) else [res])
    body = flat[0] if len(flat) == 1 else r.Tuple(flat)
    from ...ir.function import IRModule
    func = r.Function(input_vars + list(param_vars.values()), body)
    mod = r.transform.InferType()(IRModule.from_expr(func))
    return mod, {k: nd.array(v) for k, v in params.items()}
