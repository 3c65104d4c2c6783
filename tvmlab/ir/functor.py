"""One visitor and one mutator for every IR node, plus small helpers built on them.

``IRVisitor.visit(n)`` dispatches to ``visit_<ClassName>`` when the subclass
defines it, else walks the children.  ``IRMutator.visit`` does the same and
rebuilds a node only when a child changed, so unchanged subtrees stay shared.
"""
from __future__ import annotations

from .node import Node


class IRVisitor:
    """Read-only walk.  Override ``visit_Add`` etc.; call ``self.generic_visit(n)`` to recurse."""

    def __init__(self):
        self._dispatch = {}

    def visit(self, n):
        if n is None:
            return None
        cls = type(n)
        fn = self._dispatch.get(cls)
        if fn is None:
            fn = getattr(self, "visit_" + cls.__name__, None)
            if fn is None:
                for base in cls.__mro__[1:]:
                    fn = getattr(self, "visit_" + base.__name__, None)
                    if fn is not None:
                        break
            if fn is None:
                fn = self.generic_visit
            self._dispatch[cls] = fn
        return fn(n)

    def generic_visit(self, n):
        # the hot loop of every pass: no generator, no helper calls (an IterVar field is not walked:
        # its domain belongs to the schedule, not this tree)
        if not isinstance(n, Node):
            return None
        visit = self.visit
        for name in n.field_names():
            v = getattr(n, name)
            if isinstance(v, Node):
                visit(v)
            elif isinstance(v, tuple):
                for x in v:
                    if isinstance(x, Node):
                        visit(x)
                    elif isinstance(x, tuple):
                        for y in x:
                            if isinstance(y, Node):
                                visit(y)
        return None


class IRMutator(IRVisitor):
    """Rewrite walk: each ``visit_X`` returns the (possibly new) node."""

    def generic_visit(self, n):
        if not isinstance(n, Node):
            return n
        changes = None
        visit = self.visit
        for name in n.field_names():
            v = getattr(n, name)
            if isinstance(v, Node):
                nv = visit(v)
            elif isinstance(v, tuple) and v and any(isinstance(x, Node) for x in v):
                nv = tuple(visit(x) if isinstance(x, Node) else x for x in v)
                if all(a is b for a, b in zip(nv, v)):
                    nv = v
            else:
                continue
            if nv is not v:
                if changes is None:
                    changes = {}
                changes[name] = nv
        if not changes:
            return n
        return _rebuild(n, changes)


def _rebuild(n, changes):
    from . import stmt as S
    if isinstance(n, S.SeqStmt):
        return S.seq(*changes["seq"])
    return n.replace(**changes)


def post_order_visit(n, fn):
    """Call ``fn`` on every node of the tree, children before parents."""
    class V(IRVisitor):
        def generic_visit(self, x):
            super().generic_visit(x)
            fn(x)
    V().visit(n)


def substitute(n, vmap):
    """Replace variables (by identity) using ``vmap``: {Var: Expr}."""
    if not vmap:
        return n
    from . import op as _op

    class Sub(IRMutator):
        def visit_Var(self, v):
            r = vmap.get(v)
            return v if r is None else _op.convert(r)
    return Sub().visit(n)


def collect_tensors(n):
    """Tensors read (ProducerLoad) in ``n``, in first-seen order."""
    from .expr import ProducerLoad
    out = []

    def f(x):
        if isinstance(x, ProducerLoad) and x.producer not in out:
            out.append(x.producer)
    post_order_visit(n, f)
    return out


def collect_vars(n):
    """Variables used in ``n`` (set of Var, identity)."""
    from .expr import Var
    out = {}

    def f(x):
        if isinstance(x, Var):
            out[x] = None
    post_order_visit(n, f)
    return list(out)


def contains(n, pred):
    """True if some node of the tree ``n`` satisfies ``pred`` (the walk stops at the first)."""
    found = []

    class V(IRVisitor):
        def generic_visit(self, x):
            if found:
                return
            if pred(x):
                found.append(x)
                return
            super().generic_visit(x)
    V().visit(n)
    return bool(found)


def uses_var(n, pred):
    """True if some Var in ``n`` satisfies ``pred``."""
    found = []

    class V(IRVisitor):
        def visit_Var(self, v):
            if pred(v):
                found.append(v)

        def generic_visit(self, x):
            if not found:
                super().generic_visit(x)
    V().visit(n)
    return bool(found)
