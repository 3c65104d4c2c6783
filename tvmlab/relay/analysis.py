"""Questions about graphs: ``relay.analysis.free_vars`` and friends."""
from __future__ import annotations

from .expr import Call, post_order
from .visit import free_vars  # noqa: F401


def all_ops(expr):
    """Names of the operators called in ``expr`` (fused groups entered), each once, in order of use."""
    out = []
    for e in post_order(expr, enter_functions=True):
        if isinstance(e, Call) and hasattr(e.op, "name") and e.op.name not in out:
            out.append(e.op.name)
    return out


def count_calls(expr, name):
    """How many calls of operator ``name`` ``expr`` makes (fused groups entered)."""
    return sum(1 for e in post_order(expr, enter_functions=True)
               if isinstance(e, Call) and getattr(e.op, "name", None) == name)
