"""Helpers of the nn operators: padding tuples and output sizes, as TVM's ``topi.nn.utils``."""
from __future__ import annotations

from ..utils import OperatorError, const_or_none


def _ints(op, what, value, n):
    vals = [value] * n if isinstance(value, int) else list(value)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n or any(isinstance(v, bool) or const_or_none(v) is None for v in vals):
        raise OperatorError(f"{op}: {what} must be an int or {n} ints, got {value!r}")
    return [const_or_none(v) for v in vals]


def pair(op, what, value, minimum=1):
    """``(h, w)`` from an int or a pair, each >= ``minimum``."""
    vals = _ints(op, what, value, 2)
    if any(v < minimum for v in vals):
        raise OperatorError(f"{op}: {what} must be >= {minimum}, got {value!r}")
    return tuple(vals)


def get_pad_tuple(padding, kernel, op="conv2d"):
    """``(top, left, bottom, right)`` from an int, (h, w), (top, left, bottom, right), "SAME" or "VALID"."""
    kh, kw = kernel
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0, 0, 0
        if padding.upper() == "SAME":
            ph, pw = kh - 1, kw - 1
            return ph // 2, pw // 2, ph - ph // 2, pw - pw // 2
        raise OperatorError(f"{op}: padding must be 'SAME', 'VALID' or ints, got {padding!r}")
    vals = [padding] if isinstance(padding, int) else list(padding)
    if len(vals) == 1:
        vals = vals * 4
    elif len(vals) == 2:
        vals = vals * 2
    if len(vals) != 4 or any(isinstance(v, bool) or const_or_none(v) is None or const_or_none(v) < 0
                             for v in vals):
        raise OperatorError(f"{op}: padding must be ints >= 0: one, (h, w) or (top, left, bottom, right); "
                            f"got {padding!r}")
    t, l, b, r = (const_or_none(v) for v in vals)
    return t, l, b, r


def out_size(op, size, pad_total, kernel, stride, dilation):
    """Output extent of a window of ``kernel`` taps (``dilation`` apart) sliding by ``stride``."""
    span = (kernel - 1) * dilation + 1
    n = const_or_none(size)
    if n is not None and n + pad_total < span:
        raise OperatorError(f"{op}: the window ({span} with dilation) is larger than the padded input "
                            f"({n} + {pad_total})")
    return (size + pad_total - span) // stride + 1


def get_pad_tuple_nd(padding, kernel, op="conv"):
    """(befores, afters) for each of ``len(kernel)`` spatial axes from an int, one int per axis (both
    sides), befores then afters, "SAME" (the smaller half before) or "VALID"; ``kernel`` holds the
    dilated window sizes."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return [0] * n, [0] * n
        if padding.upper() == "SAME":
            totals = [k - 1 for k in kernel]
            return [t // 2 for t in totals], [t - t // 2 for t in totals]
        raise OperatorError(f"{op}: padding must be 'SAME', 'VALID' or ints, got {padding!r}")
    vals = [padding] if isinstance(padding, int) else list(padding)
    if len(vals) == 1:
        vals = vals * (2 * n)
    elif len(vals) == n:
        vals = vals * 2
    if len(vals) != 2 * n or any(isinstance(v, bool) or const_or_none(v) is None or const_or_none(v) < 0
                                 for v in vals):
        raise OperatorError(f"{op}: padding must be ints >= 0: one, {n} (each axis) or {2 * n} (befores, then "
                            f"afters); got {padding!r}")
    vals = [const_or_none(v) for v in vals]
    return vals[:n], vals[n:]


def get_pad_tuple1d(padding, kernel):
    """``(left, right)`` from an int, (left, right), "SAME" or "VALID" (TVM's helper; kernel: (kw,))."""
    before, after = get_pad_tuple_nd(padding, list(kernel), "conv1d")
    return before[0], after[0]


def get_pad_tuple3d(padding, kernel):
    """``(front, top, left, back, bottom, right)`` from an int, (d, h, w), six ints, "SAME" or "VALID"."""
    before, after = get_pad_tuple_nd(padding, list(kernel), "conv3d")
    return tuple(before) + tuple(after)
