"""ONNX LSTM, GRU and RNN (one layer; forward, reverse or bidirectional) unrolled over the static sequence.

The input projection of every time step is one dense (sequence x batch rows);
each step then adds the recurrent dense of the previous hidden state and
applies the gates with element-wise ops, which FuseOps merges per step.
Gate orders follow ONNX: LSTM i, o, f, c; GRU z, r, h. ``layout=1`` (batch
first, opset 14) is transposed in and out.
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError
from .onnx_ops import const_input, converter, expr_input, has_input

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_DEFAULT_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}


def _activation(r, name, alpha, beta):
    if name == "Sigmoid":
        return r.sigmoid
    if name == "Tanh":
        return r.tanh
    if name == "Relu":
        return r.nn.relu
    if name == "HardSigmoid":
        a, b = 0.2 if alpha is None else alpha, 0.5 if beta is None else beta
        return lambda x: r.clip(r.add(r.multiply(x, r.const(a)), r.const(b)), 0.0, 1.0)
    raise FrontendError(f"activation {name!r} is not supported (expected Sigmoid, Tanh, Relu or HardSigmoid)")


def _pick(r, x, d):
    """``x[d]`` of a (num_directions, ...) tensor."""
    return r.squeeze(r.strided_slice(x, begin=[d], end=[d + 1], axes=[0]), axis=[0])


def _steps(r, x, n):
    """The ``n`` slices ``x[t]`` of a (seq, ...) tensor."""
    parts = r.split(x, indices_or_sections=n, axis=0) if n > 1 else [x]
    return [r.squeeze(parts[t], axis=[0]) for t in range(n)]


@converter("LSTM", "GRU", "RNN")
def _rnn(ctx, node):
    r = ctx.relay
    op = node.op_type
    x = expr_input(ctx, node, 0)
    w, rw = expr_input(ctx, node, 1), expr_input(ctx, node, 2)
    layout = node.attr("layout", 0) if ctx.opset >= 14 else 0
    if layout:
        x = r.transpose(x, axes=[1, 0, 2])
    seq, batch, _ = ctx.shape_of(x)
    hidden = int(node.attr("hidden_size", ctx.shape_of(rw)[-1]))
    direction = node.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise FrontendError(f"direction must be forward, reverse or bidirectional, got {direction!r}")
    dirs = 2 if direction == "bidirectional" else 1
    g = _GATES[op]
    if ctx.shape_of(w)[:2] != (dirs, g * hidden):
        raise FrontendError(f"W has shape {ctx.shape_of(w)}, expected ({dirs}, {g * hidden}, input_size)")
    lens = const_input(ctx, node, 4, "sequence_lens")
    if lens is not None and np.any(np.asarray(lens) != seq):
        raise FrontendError(f"sequence_lens {np.asarray(lens).tolist()} shorter than the sequence ({seq}) "
                            f"are not supported")
    if op == "LSTM" and node.attr("input_forget", 0):
        raise FrontendError("input_forget=1 is not supported")
    acts = node.attr("activations") or _DEFAULT_ACTS[op] * dirs
    alphas, betas = node.attr("activation_alpha"), node.attr("activation_beta")
    n_act = len(_DEFAULT_ACTS[op])
    if len(acts) != n_act * dirs:
        raise FrontendError(f"expected {n_act * dirs} activations, got {acts}")
    fns = [_activation(r, a, alphas[k] if alphas and k < len(alphas) else None,
                       betas[k] if betas and k < len(betas) else None) for k, a in enumerate(acts)]
    clip = node.attr("clip")
    dtype = ctx.dtype_of(x)

    def initial(i):
        if not has_input(node, i):
            return None
        v = expr_input(ctx, node, i)
        return r.transpose(v, axes=[1, 0, 2]) if layout else v

    h0, c0 = initial(5), initial(6) if op == "LSTM" else None
    bias = expr_input(ctx, node, 3) if has_input(node, 3) else None
    peep = expr_input(ctx, node, 7) if op == "LSTM" and has_input(node, 7) else None
    flat = r.reshape(x, newshape=(seq * batch, ctx.shape_of(x)[2]))
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wd, rd = _pick(r, w, d), _pick(r, rw, d)
        proj = r.nn.dense(flat, wd)
        rb = None
        if bias is not None:
            bd = _pick(r, bias, d)
            parts = r.split(bd, indices_or_sections=2, axis=0)
            proj = r.add(proj, parts[0])
            rb = parts[1]
        xs = _steps(r, r.reshape(proj, newshape=(seq, batch, g * hidden)), seq)
        zero = r.const(np.zeros((batch, hidden), dtype))
        h = zero if h0 is None else _pick(r, h0, d)
        c = zero if c0 is None else _pick(r, c0, d)
        pd = None if peep is None else r.split(_pick(r, peep, d), indices_or_sections=3, axis=0)
        f = fns[d * n_act:(d + 1) * n_act]
        out = [None] * seq
        for t in (reversed(range(seq)) if reverse else range(seq)):
            h, c = rnn_cell(r, op, xs[t], h, c, rd, rb, pd, f, clip, bool(node.attr("linear_before_reset", 0)))
            out[t] = h
        ys.append(r.concatenate([r.expand_dims(o, axis=0) for o in out], axis=0))
        hs.append(h)
        cs.append(c)
    y = r.concatenate([r.expand_dims(v, axis=1) for v in ys], axis=1)       # (seq, dirs, batch, hidden)
    y_h = r.concatenate([r.expand_dims(v, axis=0) for v in hs], axis=0)      # (dirs, batch, hidden)
    y_c = r.concatenate([r.expand_dims(v, axis=0) for v in cs], axis=0)
    if layout:
        y, y_h, y_c = r.transpose(y, axes=[2, 0, 1, 3]), r.transpose(y_h, axes=[1, 0, 2]), \
            r.transpose(y_c, axes=[1, 0, 2])
    return [y, y_h, y_c] if op == "LSTM" else [y, y_h]


ONNX_ORDER = {"LSTM": "iofc", "GRU": "zrh", "RNN": "h"}


def rnn_cell(r, op, xt, h, c, rd, rb, peep, fns, clip, linear_before_reset, order=None):
    """One time step: (new h, new c) (c is unchanged for GRU and RNN). ``xt`` is the step's input projection
    (bias included), ``rd``/``rb`` the recurrent weight and bias, ``order`` the gates' order in them (ONNX's by
    default; PyTorch's LSTM is "ifco", its GRU "rzh" with linear_before_reset)."""
    order = order or ONNX_ORDER[op]

    def clipped(v):
        return v if clip is None else r.clip(v, -float(clip), float(clip))

    if op == "GRU":
        xg = r.split(xt, indices_or_sections=3, axis=1)
        rds = r.split(rd, indices_or_sections=3, axis=0)
        rbs = r.split(rb, indices_or_sections=3, axis=0) if rb is not None else [None] * 3
        gz, gr, gh = (order.index(g) for g in "zrh")

        def rec(k, state):
            v = r.nn.dense(state, rds[k])
            return v if rbs[k] is None else r.add(v, rbs[k])
        z = fns[0](clipped(r.add(xg[gz], rec(gz, h))))
        rr = fns[0](clipped(r.add(xg[gr], rec(gr, h))))
        if linear_before_reset:
            cand = r.add(xg[gh], r.multiply(rr, rec(gh, h)))
        else:
            cand = r.add(xg[gh], rec(gh, r.multiply(rr, h)))
        hh = fns[1](clipped(cand))
        one = r.const(1.0, "float32")
        return r.add(r.multiply(r.subtract(one, z), hh), r.multiply(z, h)), c
    gates = r.add(xt, r.nn.dense(h, rd))
    if rb is not None:
        gates = r.add(gates, rb)
    if op == "RNN":
        return fns[0](clipped(gates)), c
    parts = r.split(gates, indices_or_sections=4, axis=1)
    i, o, f, cc = (parts[order.index(g)] for g in "iofc")
    if peep is not None:
        i = r.add(i, r.multiply(peep[0], c))
        f = r.add(f, r.multiply(peep[2], c))
    i, f = fns[0](clipped(i)), fns[0](clipped(f))
    c_new = r.add(r.multiply(f, c), r.multiply(i, fns[1](clipped(cc))))
    if peep is not None:
        o = r.add(o, r.multiply(peep[1], c_new))
    o = fns[0](clipped(o))
    return r.multiply(o, fns[2](c_new)), c_new
