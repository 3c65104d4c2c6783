"""``aten::lstm`` / ``aten::gru`` / ``aten::rnn_tanh`` / ``aten::rnn_relu`` (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``
traced): any number of layers, bidirectional, batch_first, unrolled over the static sequence with the
ONNX importer's cell (PyTorch's gate orders: LSTM i f g o, GRU r z n with the reset applied after the
recurrent product).
"""
from __future__ import annotations

import numpy as np

from .common import FrontendError
from .onnx_rnn import rnn_cell, step_inputs

_ORDER = {"LSTM": "ifco", "GRU": "rzh", "RNN": "h"}


def _rnn(op, act="tanh"):
    def convert(c, a):
        """(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)."""
        r = c.relay
        x, hx, params, has_b, layers, _, train, bidir, batch_first = a[:9]
        if train:
            raise FrontendError("a recurrent layer traced in training mode is not supported (call .eval())")
        if batch_first:
            x = r.transpose(x, axes=[1, 0, 2])
        seq, batch, _ = c.shape(x)
        dirs = 2 if bidir else 1
        per = 4 if has_b else 2
        params = list(params)
        if len(params) != int(layers) * dirs * per:
            raise FrontendError(f"expected {int(layers) * dirs * per} weights, got {len(params)} (projections "
                                f"(proj_size) are not supported)")
        hidden = c.shape(params[1])[-1]
        h0s = hx if op != "LSTM" else hx[0]
        c0s = hx[1] if op == "LSTM" else None
        dt = c.shapes.dtype(x)
        fns = {"LSTM": [r.sigmoid, r.tanh, r.tanh], "GRU": [r.sigmoid, r.tanh],
               "RNN": [r.tanh if act == "tanh" else r.nn.relu]}[op]

        def state(s, k):
            if s is None:
                return r.const(np.zeros((batch, hidden), dt))
            return r.squeeze(r.strided_slice(s, begin=[k], end=[k + 1], axes=[0]), axis=[0])
        hs, cs = [], []
        for layer in range(int(layers)):
            feat = c.shape(x)[2]
            flat = r.reshape(x, newshape=(seq * batch, feat))
            outs = []
            for d in range(dirs):
                w = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
                proj = r.nn.dense(flat, w[0])
                if has_b:
                    proj = r.add(proj, w[2])
                g = c.shape(w[0])[0]
                xs = step_inputs(r, op, r.reshape(proj, newshape=(seq, batch, g)), seq, batch, hidden)
                h, cc = state(h0s, layer * dirs + d), state(c0s, layer * dirs + d)
                ys = [None] * seq
                for t in (reversed(range(seq)) if d == 1 else range(seq)):
                    h, cc = rnn_cell(r, op, xs[t], h, cc, w[1], w[3] if has_b else None, None, fns, None,
                                     True, hidden, _ORDER[op])
                    ys[t] = h
                outs.append(r.concatenate([r.expand_dims(y, axis=0) for y in ys], axis=0))
                hs.append(h)
                cs.append(cc)
            x = outs[0] if dirs == 1 else r.concatenate(outs, axis=2)
        y = r.transpose(x, axes=[1, 0, 2]) if batch_first else x
        h_n = r.concatenate([r.expand_dims(v, axis=0) for v in hs], axis=0)
        if op == "LSTM":
            return [y, h_n, r.concatenate([r.expand_dims(v, axis=0) for v in cs], axis=0)]
        return [y, h_n]
    return convert


RNN_CONVERTERS = {"aten::lstm": _rnn("LSTM"), "aten::gru": _rnn("GRU"), "aten::rnn_tanh": _rnn("RNN", "tanh"),
                  "aten::rnn_relu": _rnn("RNN", "relu")}
