"""A general LSTM as one ``te.scan`` over time, as TVM's ``topi.nn.lstm``.

    hs, cs = topi.nn.lstm(Xs, Wi, Wh, Bi, Bh)      # Xs (T, B, F), Wi (4H, F), Wh (4H, H) -> (T, B, H) each

Gates are packed in ``weight_layout`` order ("IFGO": input, forget, cell, output).  The input
projection of every step is computed before the scan; each step adds the hidden projection, applies
the gates (optional peepholes ``p_i``, ``p_f``, ``p_o``) and, with ``proj``, projects the hidden state.
"""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none


def lstm(Xs, Wi, Wh, Bi=None, Bh=None, h_init=None, c_init=None, proj=None, p_i=None, p_f=None, p_o=None,
         f_act=_op.sigmoid, g_act=_op.tanh, h_act=_op.tanh, reverse=False, weight_layout="IFGO"):
    """Returns (hs, cs): the hidden and cell states after each step, (T, B, out) and (T, B, H); with
    ``reverse`` the input is read from the last step back."""
    op = "lstm"
    check_tensor(op, Xs, "Xs", 3)
    check_tensor(op, Wi, "Wi", 2)
    check_tensor(op, Wh, "Wh", 2)
    if sorted(weight_layout) != sorted("IFGO"):
        raise OperatorError(f"lstm: weight_layout must order the letters I, F, G, O, got {weight_layout!r}")
    S, B, F = Xs.shape
    H4 = const_or_none(Wi.shape[0])
    if H4 is None or H4 % 4:
        raise OperatorError(f"lstm: Wi must have 4 * hidden rows, got {tuple(Wi.shape)}")
    H = H4 // 4
    O = Wh.shape[1]
    gate = {c: weight_layout.index(c) for c in "IFGO"}
    dtype = Xs.dtype
    kx = te.reduce_axis((0, F), name="kx")
    xw = te.compute((S, B, H4), lambda t, b, j: te.sum(Xs[S - 1 - t if reverse else t, b, kx] * Wi[j, kx], axis=kx),
                    name="lstm_x_proj")
    if Bi is not None:
        xw = te.compute((S, B, H4), lambda t, b, j: xw[t, b, j] + Bi[j], name="lstm_x_bias")
    h_state = te.placeholder((S + 1, B, O), dtype, name="lstm_h_state")
    c_state = te.placeholder((S + 1, B, H), dtype, name="lstm_c_state")
    zero = _op.const(0, dtype)
    h0 = te.compute((1, B, O), lambda _, b, j: h_init[b, j] if h_init is not None else zero, name="lstm_h_init")
    c0 = te.compute((1, B, H), lambda _, b, j: c_init[b, j] if c_init is not None else zero, name="lstm_c_init")
    kh = te.reduce_axis((0, O), name="kh")
    hw = te.compute((S + 1, B, H4), lambda t, b, j: te.sum(h_state[t - 1, b, kh] * Wh[j, kh], axis=kh),
                    name="lstm_h_proj")

    def pre(g, t, b, j):
        j4 = gate[g] * H + j
        v = xw[t - 1, b, j4] + hw[t, b, j4]
        return v + Bh[j4] if Bh is not None else v

    def next_c(t, b, j):
        ig, fg = pre("I", t, b, j), pre("F", t, b, j)
        if p_i is not None and p_f is not None:
            ig, fg = ig + p_i[b, j] * c_state[t - 1, b, j], fg + p_f[b, j] * c_state[t - 1, b, j]
        return f_act(fg) * c_state[t - 1, b, j] + f_act(ig) * g_act(pre("G", t, b, j))
    c_new = te.compute((S + 1, B, H), next_c, name="lstm_c")

    def next_h(t, b, j):
        og = pre("O", t, b, j)
        if p_o is not None:
            og = og + p_o[b, j] * c_new[t, b, j]
        return f_act(og) * h_act(c_new[t, b, j])
    h_new = te.compute((S + 1, B, H), next_h, name="lstm_h")
    if proj is not None:
        kp = te.reduce_axis((0, H), name="kp")
        h_new = te.compute((S + 1, B, O), lambda t, b, j: te.sum(h_new[t, b, kp] * proj[j, kp], axis=kp),
                           name="lstm_h_projected")
    hs, cs = te.scan([h0, c0], [h_new, c_new], [h_state, c_state], inputs=[Xs], name="lstm_scan")
    out_h = te.compute((S, B, O), lambda t, b, j: hs[t + 1, b, j], name="hs", tag="lstm")
    out_c = te.compute((S, B, H), lambda t, b, j: cs[t + 1, b, j], name="cs", tag="lstm")
    return out_h, out_c
