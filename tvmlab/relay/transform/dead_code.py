"""DeadCodeElimination: let bindings nothing reads are dropped; a let read once is inlined."""
from __future__ import annotations

from ..expr import Function, Let, Var, post_order
from ..visit import rewrite, substitute


def eliminate(func, inline_once=True):
    def fn(node, old):
        if isinstance(node, Let):
            uses = sum(1 for n in post_order(node.body, enter_functions=True) if n is node.var)
            if uses == 0:
                return node.body
            if inline_once and uses == 1 and not isinstance(node.value, Var):
                return substitute(node.body, {node.var: node.value})
        return None
    body, _ = rewrite(func.body, fn)
    return body is func.body and func or Function(func.params, body, None, func.type_params, func.attrs)
