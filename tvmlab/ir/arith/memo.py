"""A per-node memo for the evaluators of ``ir.arith`` (bounds, intervals, keys)."""
from __future__ import annotations


class NodeMemo:
    """Calls ``self._eval(e)`` once per node.

    Entries are keyed by ``id`` and hold the node itself, so an id is never
    reused while its entry lives.  ``clear()`` forgets everything (when the
    bindings the results depend on change).  A subclass may set ``limit``: the
    memo is emptied when it grows past it.
    """

    __slots__ = ("_memo",)
    limit = None

    def __init__(self):
        self._memo = {}

    def clear(self):
        self._memo.clear()

    def __call__(self, e):
        hit = self._memo.get(id(e))
        if hit is not None:
            return hit[1]
        r = self._eval(e)
        if self.limit is not None and len(self._memo) > self.limit:
            self._memo.clear()
        self._memo[id(e)] = (e, r)
        return r

    def _eval(self, e):
        raise NotImplementedError
