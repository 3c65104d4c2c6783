"""Where each variable of a hybrid script is declared, and how it is used afterwards.

The parser needs this before it reads a statement: a name first assigned inside
a loop lives (is realized) in that loop's body; a name assigned once and never
again is a constant rather than storage.
"""
from __future__ import annotations

import ast

LOOP_FUNCS = ("range", "unroll", "parallel", "vectorize", "const_range", "bind")


class Usage:
    """``decl``: the Name node of the first assignment; ``scope``: the innermost ``for`` (or the
    function) holding it; ``stored``: whether the name is assigned again later."""
    __slots__ = ("decl", "scope", "stored")

    def __init__(self, decl, scope):
        self.decl, self.scope, self.stored = decl, scope, False


class _Collector(ast.NodeVisitor):
    def __init__(self, params, known, error):
        self.params, self.known, self.error = set(params), known, error
        self.scopes, self.loops, self.status = [], [], {}
        self.aug = False

    def visit_FunctionDef(self, node):
        self.scopes.append(node)
        for s in node.body:
            self.visit(s)

    def visit_For(self, node):
        self.visit(node.iter)
        if not isinstance(node.target, ast.Name):
            self.error(node, "a loop's variable must be a plain name (for i in range(n))")
        name = node.target.id
        if name in self.loops:
            self.error(node, f"loop variable {name!r} is already the variable of an enclosing loop")
        if name in self.params:
            self.error(node, f"loop variable {name!r} is an argument of the script")
        if name in self.status:
            self.error(node, f"loop variable {name!r} is already a variable of the script")
        self.scopes.append(node)
        self.loops.append(name)
        for s in node.body:
            self.visit(s)
        self.loops.pop()
        self.scopes.pop()

    def visit_Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.error(node, "only named functions can be called (sqrt(x), other_script(a)), not "
                             f"{ast.unparse(node.func)}")
        if node.func.id not in self.known:
            self.error(node, f"function {node.func.id!r} is neither an intrinsic of hybrid script nor a hybrid "
                             "function the script can see")
        for a in node.args:
            self.visit(a)
        for k in node.keywords:
            self.visit(k.value)

    def visit_AugAssign(self, node):
        self.aug = True
        self.visit(node.target)
        self.aug = False
        self.visit(node.value)

    def visit_Assign(self, node):
        self.visit(node.value)          # the right-hand side is read before the name is bound
        for t in node.targets:
            self.visit(t)

    def visit_Name(self, node):
        name = node.id
        store = isinstance(node.ctx, ast.Store)
        if name in self.params:
            if store:
                self.error(node, f"cannot assign to {name!r}: it is an argument of the script (write its "
                                 f"elements, {name}[i] = ..., instead)")
            return
        if name in self.loops:
            if store:
                self.error(node, f"cannot assign to loop variable {name!r}")
            return
        u = self.status.get(name)
        if u is None:
            if not store:
                if name not in self.known:
                    self.error(node, f"name {name!r} is not defined (a script sees its arguments, its own "
                                     "variables, and numbers or hybrid functions it captures)")
                return
            if self.aug:
                self.error(node, f"{name!r} is updated (+=) before it is assigned")
            self.status[name] = Usage(node, self.scopes[-1])
            return
        if u.scope not in self.scopes:
            self.error(node, f"{name!r} is used outside the loop that declares it (line {u.decl.lineno})")
        if store:
            u.stored = True


def collect(fdef, params, known, error):
    """{name: Usage} for the script ``fdef``; ``known`` holds the names it may read without
    assigning them (captured values, intrinsics); ``error(node, message)`` raises."""
    c = _Collector(params, known, error)
    c.visit(fdef)
    return c.status
