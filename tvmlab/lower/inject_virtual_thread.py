"""Virtual threads: an axis bound to "vthread" runs as an unrolled loop inside each thread.

Binding to ``vthread`` splits work the way a thread binding does (bound
inference relaxes shared buffers over it) but launches no hardware thread:
each real thread runs every virtual thread in turn, which gives it several
independent, strided outputs (the classic register-blocking trick).
"""
from __future__ import annotations

from ..ir import op as _op
from ..ir.expr import Var
from ..ir.functor import IRMutator, substitute
from ..ir.stmt import For
from ..ir.tensor import IterVar


def is_vthread(node):
    return isinstance(node, IterVar) and node.thread_tag in ("vthread", "cthread")


class _Inject(IRMutator):
    def visit_AttrStmt(self, s):
        if s.attr_key in ("thread_extent", "virtual_thread") and is_vthread(s.node):
            body = self.visit(s.body)
            v = Var(s.node.var.name, s.node.var.dtype)
            return For(v, _op.const(0, v.dtype), s.value, "unrolled", substitute(body, {s.node.var: v}))
        return self.generic_visit(s)


def inject_virtual_thread(stmt):
    """Turn every ``vthread`` thread_extent into an unrolled loop over the virtual thread index."""
    return _Inject().visit(stmt)
