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


def step_inputs(r, op, proj, seq, batch, hidden):
    """Each step's input projection from ``proj`` (seq, batch, gates * hidden): (batch, gates * hidden) for
    LSTM and RNN; for GRU the pair (z and r gates (batch, 2 * hidden), h gate (batch, hidden)), the gate
    order's h last in ONNX's and PyTorch's.  Each is sliced straight from ``proj`` for its one reader, so
    FuseOps folds the slice into the step's kernel (a slice read by several kernels would be a copy kernel of
    its own every step)."""
    def piece(t, lo, hi):
        return r.squeeze(r.strided_slice(proj, begin=[t, 0, lo], end=[t + 1, batch, hi]), axis=[0])
    if op == "GRU":
        return [[piece(t, 0, 2 * hidden), piece(t, 2 * hidden, 3 * hidden)] for t in range(seq)]
    return [piece(t, 0, _GATES[op] * hidden) for t in range(seq)]


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
        xs = step_inputs(r, op, r.reshape(proj, newshape=(seq, batch, g * hidden)), seq, batch, hidden)
        zero = r.const(np.zeros((batch, hidden), dtype))
        h = zero if h0 is None else _pick(r, h0, d)
        c = zero if c0 is None else _pick(r, c0, d)
        pd = None if peep is None else r.split(_pick(r, peep, d), indices_or_sections=3, axis=0)
        f = fns[d * n_act:(d + 1) * n_act]
        out = [None] * seq
        for t in (reversed(range(seq)) if reverse else range(seq)):
            h, c = rnn_cell(r, op, xs[t], h, c, rd, rb, pd, f, clip, bool(node.attr("linear_before_reset", 0)),
                            hidden)
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


def rnn_cell(r, op, xt, h, c, rd, rb, peep, fns, clip, linear_before_reset, hidden, order=None):
    """One time step: (new h, new c) (c is unchanged for GRU and RNN). ``xt`` is the step's input projection
    (bias included; for GRU its two parts, see ``step_inputs``), ``rd``/``rb`` the recurrent weight and bias,
    ``hidden`` the hidden size, ``order`` the gates' order in them (ONNX's by default; PyTorch's LSTM is "ifco",
    its GRU "rzh" with linear_before_reset)."""
    order = order or ONNX_ORDER[op]

    def clipped(v):
        return v if clip is None else r.clip(v, -float(clip), float(clip))

    if op == "GRU":
        # z and r in one product (one kernel with their activation), then h's product with the update
        xzr, xh = xt

        def rows(v, g0, g1):         # gates g0 .. g1 - 1 of a recurrent weight or bias
            return r.strided_slice(v, begin=[g0 * hidden], end=[g1 * hidden], axes=[0])
        zr = r.add(xzr, r.nn.dense(h, rows(rd, 0, 2)))
        if rb is not None:
            zr = r.add(zr, rows(rb, 0, 2))
        zrs = r.split(fns[0](clipped(zr)), indices_or_sections=2, axis=1)
        z, rr = zrs[order.index("z")], zrs[order.index("r")]
        if linear_before_reset:
            rec = r.nn.dense(h, rows(rd, 2, 3))
            rec = rec if rb is None else r.add(rec, rows(rb, 2, 3))
            cand = r.add(xh, r.multiply(rr, rec))
        else:
            rec = r.nn.dense(r.multiply(rr, h), rows(rd, 2, 3))
            cand = r.add(xh, rec if rb is None else r.add(rec, rows(rb, 2, 3)))
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
