"""Rewriting graphs without recursion: rebuild each node once its operands are rebuilt."""
from __future__ import annotations

from .expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var, post_order


def with_children(node, kids):
    """``node`` with operands ``kids`` (the same object when nothing changed); keeps a known type."""
    old = list(node.children())
    if all(a is b for a, b in zip(old, kids)):
        return node
    if isinstance(node, Call):
        new = Call(node.op, kids, node.attrs, node.type_args)
    elif isinstance(node, Tuple):
        new = Tuple(kids)
    elif isinstance(node, TupleGetItem):
        new = TupleGetItem(kids[0], node.index)
    elif isinstance(node, Function):
        new = Function(node.params, kids[0], node.ret_type, node.type_params, node.attrs)
    elif isinstance(node, Let):
        new = Let(node.var, kids[0], kids[1])
    else:  # pragma: no cover - leaves have no operands
        return node
    return new


def rewrite(root, fn=None, memo=None):
    """Rebuild ``root`` bottom-up: each node gets its rewritten operands, then ``fn(new, old)`` may replace it
    (return None to keep it; ``old`` still carries its inferred type).  Returns (new root, memo old -> new)."""
    memo = {} if memo is None else memo
    for node in post_order(root):
        if node in memo:
            continue
        new = with_children(node, [memo.get(c, c) for c in node.children()])
        if fn is not None:
            out = fn(new, node)
            if out is not None:
                new = out
        memo[node] = new
    return memo[root], memo


def substitute(expr, binds):
    """``expr`` with vars replaced (``binds``: Var or var name -> expression or constant value)."""
    from .expr import const
    by_var, by_name = {}, {}
    for k, v in binds.items():
        if not isinstance(v, (Var, Call, Constant, Tuple, TupleGetItem, Function, Let)):
            v = const(v)
        (by_name if isinstance(k, str) else by_var)[k] = v

    def fn(node, old):
        if isinstance(node, Var):
            return by_var.get(node) or by_name.get(node.name_hint)
        return None
    if isinstance(expr, Function):
        body, _ = rewrite(expr.body, fn)
        params = [p for p in expr.params if p not in by_var and p.name_hint not in by_name]
        return Function(params, body, None, expr.type_params, expr.attrs)
    return rewrite(expr, fn)[0]


def free_vars(expr):
    """Vars used in ``expr`` and bound by no function or let inside it, in order of first use."""
    bound, out = set(), []
    for node in post_order(expr, enter_functions=True):
        if isinstance(node, Function):
            bound.update(node.params)
        elif isinstance(node, Let):
            bound.add(node.var)
    for node in post_order(expr, enter_functions=True):
        if isinstance(node, Var) and node not in bound and node not in out:
            out.append(node)
    return out


def inline_lets(expr):
    """``expr`` with every ``let v = value; body`` replaced by ``body`` reading ``value`` directly (a graph)."""
    from .expr import Let
    nodes = post_order(expr)
    lets = {n.var: n.value for n in nodes if isinstance(n, Let)}
    if not lets:
        return expr
    memo = {}
    for node in nodes:          # a let's value comes before its body in this order
        if isinstance(node, Var):
            memo[node] = memo.get(lets[node], lets[node]) if node in lets else node
            continue
        new = with_children(node, [memo.get(c, c) for c in node.children()])
        memo[node] = new.body if isinstance(new, Let) else new
    return memo[expr]
