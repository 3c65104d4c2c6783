"""Operator tags, as TVM spells them: schedules and graph fusion find an operator's kind by its tag.

``elemwise`` < ``broadcast`` < ``injective``: each kind is also the ones after it.
Complex operators carry their own tag (``conv2d_nchw``, ``dense``, ``pool_max``, ...).
"""
from __future__ import annotations

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"


def _tag(op_or_tag):
    if isinstance(op_or_tag, str):
        return op_or_tag
    op = getattr(op_or_tag, "op", op_or_tag)     # a Tensor or an Operation
    return getattr(op, "tag", "") or ""


def is_elemwise(tag):
    """Whether ``tag`` (a string, Tensor or Operation) marks an elementwise compute."""
    return _tag(tag) == ELEMWISE


def is_broadcast(tag):
    """Elementwise or broadcast: each output reads each input at most once, at a projection of its index."""
    t = _tag(tag)
    return t in (ELEMWISE, BROADCAST) or t.startswith(ELEMWISE + ",") or t.startswith(BROADCAST + ",")


def is_injective(tag):
    """Elementwise, broadcast or injective (every output element reads each input at one index)."""
    t = _tag(tag)
    return is_broadcast(t) or t == INJECTIVE or t.startswith(INJECTIVE + ",")


def is_reduce(tag):
    t = _tag(tag)
    return t in (COMM_REDUCE, COMM_REDUCE_IDX)
