"""Constant padding (tag ``injective,pad``), as TVM's ``topi.nn.pad``."""
from __future__ import annotations

from ... import te
from ...ir import op as _op
from .. import tag
from ..utils import OperatorError, check_tensor, const_or_none, shape_str


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput"):
    """``data`` with ``pad_before[k]`` / ``pad_after[k]`` elements of ``pad_value`` around each axis ``k``."""
    check_tensor("pad", data, "data")
    n = len(data.shape)
    pad_after = pad_before if pad_after is None else pad_after
    before, after = list(pad_before), list(pad_after)
    if len(before) != n or len(after) != n:
        raise OperatorError(f"pad: pad_before and pad_after need {n} entries for {shape_str(data)}, got "
                            f"{tuple(before)} and {tuple(after)}")
    for v in before + after:
        c = const_or_none(v)
        if c is None or c < 0:
            raise OperatorError(f"pad: paddings must be ints >= 0, got {tuple(before)} and {tuple(after)}")
    before, after = [const_or_none(v) for v in before], [const_or_none(v) for v in after]
    shape = tuple(s + b + a if (b or a) else s for s, b, a in zip(data.shape, before, after))
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
