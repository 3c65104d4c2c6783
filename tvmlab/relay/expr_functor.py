"""ExprVisitor and ExprMutator, as TVM's: subclass and override ``visit_call`` & co. to write a pass.

Each node is visited once (results are memoised), operands first; the
traversal does not recurse through the graph's depth, so deep networks are fine.
"""
from __future__ import annotations

from .expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var, post_order
from .op.registry import Op


class ExprFunctor:
    """Dispatch on the node type to ``visit_<kind>``; ``visit(e)`` returns the memoised result."""

    def __init__(self):
        self.memo_map = {}

    def visit(self, expr):
        if expr in self.memo_map:
            return self.memo_map[expr]
        for node in post_order(expr, enter_functions=False):     # operands first, without deep recursion
            if node not in self.memo_map:
                self.memo_map[node] = self._dispatch(node)
        return self.memo_map[expr]

    def _dispatch(self, e):
        if isinstance(e, Call):
            return self.visit_call(e)
        if isinstance(e, Var):
            return self.visit_var(e)
        if isinstance(e, Constant):
            return self.visit_constant(e)
        if isinstance(e, Tuple):
            return self.visit_tuple(e)
        if isinstance(e, TupleGetItem):
            return self.visit_tuple_getitem(e)
        if isinstance(e, Function):
            return self.visit_function(e)
        if isinstance(e, Let):
            return self.visit_let(e)
        if isinstance(e, Op):
            return self.visit_op(e)
        raise TypeError(f"cannot visit {type(e).__name__}")


class ExprVisitor(ExprFunctor):
    """Walks every node once; override ``visit_*`` and call the base method to keep walking."""

    def visit_call(self, call):
        if isinstance(call.op, Function):
            self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_var(self, var):
        pass

    def visit_constant(self, const):
        pass

    def visit_op(self, op):
        pass

    def visit_tuple(self, tup):
        for f in tup.fields:
            self.visit(f)

    def visit_tuple_getitem(self, t):
        self.visit(t.tuple_value)

    def visit_function(self, fn):
        for p in fn.params:
            self.visit(p)
        self.visit(fn.body)

    def visit_let(self, let):
        self.visit(let.var)
        self.visit(let.value)
        self.visit(let.body)


class ExprMutator(ExprFunctor):
    """Rebuilds the graph from the visited operands; override ``visit_*`` to replace nodes."""

    def visit_call(self, call):
        op = self.visit(call.op) if isinstance(call.op, Function) else call.op
        args = [self.visit(a) for a in call.args]
        if op is call.op and all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(op, args, call.attrs, call.type_args)

    def visit_var(self, var):
        return var

    def visit_constant(self, const):
        return const

    def visit_op(self, op):
        return op

    def visit_tuple(self, tup):
        fields = [self.visit(f) for f in tup.fields]
        return tup if all(a is b for a, b in zip(fields, tup.fields)) else Tuple(fields)

    def visit_tuple_getitem(self, t):
        v = self.visit(t.tuple_value)
        return t if v is t.tuple_value else TupleGetItem(v, t.index)

    def visit_function(self, fn):
        params = [self.visit(p) for p in fn.params]
        body = self.visit(fn.body)
        if body is fn.body and all(a is b for a, b in zip(params, fn.params)):
            return fn
        return Function(params, body, fn.ret_type, fn.type_params, fn.attrs)

    def visit_let(self, let):
        var, value, body = self.visit(let.var), self.visit(let.value), self.visit(let.body)
        if var is let.var and value is let.value and body is let.body:
            return let
        return Let(var, value, body)
