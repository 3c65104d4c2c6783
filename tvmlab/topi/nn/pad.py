"""Padding (tag ``injective,pad``), as TVM's ``topi.nn.pad`` and ``topi.nn.mirror_pad``.

    P = topi.nn.pad(X, (0, 0, 1, 1), (0, 0, 1, 1), 0.0)                 # constant
    E = topi.nn.pad(X, (0, 0, 2, 2), pad_mode="edge")                   # repeat the border element
    R = topi.nn.mirror_pad(X, (0, 0, 2, 2), mode="REFLECT")              # 2 1 | 0 1 2 3 | 2 1

``pad_mode="reflect"`` is ``mirror_pad``'s "REFLECT" (the border element not repeated), "SYMMETRIC"
repeats it (1 0 | 0 1 2 3 | 3 2).
"""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none, shape_str

PAD_MODES = ("constant", "edge", "reflect")


def _widths(op, data, pad_before, pad_after):
    n = len(data.shape)
    pad_after = pad_before if pad_after is None else pad_after
    before, after = list(pad_before), list(pad_after)
    if len(before) != n or len(after) != n:
        raise OperatorError(f"{op}: pad_before and pad_after need {n} entries for {shape_str(data)}, got "
                            f"{tuple(before)} and {tuple(after)}")
    for v in before + after:
        c = const_or_none(v)
        if c is None or c < 0:
            raise OperatorError(f"{op}: paddings must be ints >= 0, got {tuple(before)} and {tuple(after)}")
    before, after = [const_or_none(v) for v in before], [const_or_none(v) for v in after]
    shape = tuple(s + b + a if (b or a) else s for s, b, a in zip(data.shape, before, after))
    return before, after, shape


def _mirrored(op, data, before, after, shape, mode, name):
    """``data`` extended by reading it back from the border: "edge" clamps, "reflect" / "symmetric" mirror
    about the border element / the border itself (one mirror image: a padding at most the axis' size)."""
    limit = {"edge": None, "reflect": 1, "symmetric": 0}[mode]
    for k, (b, a) in enumerate(zip(before, after)):
        size = const_or_none(data.shape[k])
        if limit is not None and (b or a) and (size is None or max(b, a) > size - limit):
            raise OperatorError(f"{op}: {mode} padding of ({b}, {a}) on axis {k} of {shape_str(data)} needs at most "
                                f"{'size - 1' if limit else 'size'} elements each side")

    def src(i, k):
        b, a = before[k], after[k]
        if not (b or a):
            return i
        n = data.shape[k]
        j = i - b if b else i
        if mode == "edge":
            return _op.min(_op.max(j, 0), n - 1)
        lo = -j if mode == "reflect" else -j - 1
        hi = 2 * n - 2 - j if mode == "reflect" else 2 * n - 1 - j
        if b:
            j = _op.if_then_else(j < 0, lo, j)
        if a:
            j = _op.if_then_else(i - b >= n, hi, j) if b else _op.if_then_else(i >= n, hi, j)
        return j
    return te.compute(shape, lambda *i: data(*[src(x, k) for k, x in enumerate(i)]), name=name,
                      tag=tag.INJECTIVE + ",pad")


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput", pad_mode="constant"):
    """``data`` with ``pad_before[k]`` / ``pad_after[k]`` elements around each axis ``k``: ``pad_value``
    ("constant"), the border element ("edge") or the elements mirrored about it ("reflect")."""
    check_tensor("pad", data, "data")
    if pad_mode not in PAD_MODES:
        raise OperatorError(f"pad: pad_mode must be one of {PAD_MODES}, got {pad_mode!r}")
    n = len(data.shape)
    before, after, shape = _widths("pad", data, pad_before, pad_after)
    if pad_mode != "constant":
        return _mirrored("pad", data, before, after, shape, pad_mode, name)
    value = pad_value if not isinstance(pad_value, (int, float)) else _op.const(pad_value, data.dtype)

    def f(*i):
        conds, idx = [], []
        for k in range(n):
            if before[k] or after[k]:
                if before[k]:
                    conds.append(i[k] >= before[k])
                if after[k]:
                    conds.append(i[k] < data.shape[k] + before[k])
                idx.append(i[k] - before[k] if before[k] else i[k])
            else:
                idx.append(i[k])
        v = data(*idx)
        return _op.if_then_else(_op.all(*conds), v, value) if conds else v
    return te.compute(shape, f, name=name, tag=tag.INJECTIVE + ",pad")


def mirror_pad(data, pad_before, pad_after=None, mode="SYMMETRIC", name="MirrorPadInput"):
    """``data`` padded with its own elements mirrored: "SYMMETRIC" repeats the border element, "REFLECT"
    does not (TVM's ``topi.nn.mirror_pad``)."""
    check_tensor("mirror_pad", data, "data")
    if mode not in ("SYMMETRIC", "REFLECT"):
        raise OperatorError(f"mirror_pad: mode must be 'SYMMETRIC' or 'REFLECT', got {mode!r}")
    before, after, shape = _widths("mirror_pad", data, pad_before, pad_after)
    return _mirrored("mirror_pad", data, before, after, shape, mode.lower(), name)
