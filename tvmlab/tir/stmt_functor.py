"""TVM's ``tvm.tir.stmt_functor``: walk and rewrite IR with Python callbacks.

    tvm.tir.stmt_functor.post_order_visit(stmt, lambda n: ...)
    tvm.tir.stmt_functor.ir_transform(stmt, preorder, postorder, ["tir.For"])
    tvm.tir.stmt_functor.substitute(stmt, {var: expr})
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir.functor import IRMutator, post_order_visit, substitute  # noqa: F401
from ..ir.node import Node


def _type_key(n):
    return "tir." + type(n).__name__


def ir_transform(stmt, preorder, postorder, only_enable=None):
    """Rewrite ``stmt``: ``preorder(n)`` may replace a node before its children are visited
    (returning None keeps going), ``postorder(n)`` after (None keeps the node).

    ``only_enable``: type keys (``"tir.For"``, ``"tir.Store"``, or bare class names) the
    callbacks see; others are only walked through.
    """
    keys = None if only_enable is None else {k if k.startswith("tir.") else "tir." + k
                                             for k in only_enable}

    def enabled(n):
        return keys is None or _type_key(n) in keys

    class M(IRMutator):
        def visit(self, n):
            if not isinstance(n, Node):
                return n
            if preorder is not None and enabled(n):
                r = preorder(n)
                if r is not None:
                    return _checked(r, n)
            out = self.generic_visit(n)
            if postorder is not None and enabled(out):
                r = postorder(out)
                if r is not None:
                    return _checked(r, n)
            return out
    return M().visit(stmt)


def _checked(r, n):
    if not isinstance(r, Node):
        from ..ir import op as _op
        try:
            return _op.convert(r)
        except Exception:
            raise LoweringError(f"ir_transform: a callback returned {type(r).__name__} for "
                                f"{type(n).__name__}, expected an IR node") from None
    return r


def pre_order_visit(stmt, fvisit):
    """Call ``fvisit`` on every node, parents first; a False return skips the node's children."""
    from ..ir.functor import IRVisitor

    class V(IRVisitor):
        def generic_visit(self, x):
            if fvisit(x) is False:
                return None
            return super().generic_visit(x)
    V().visit(stmt)
