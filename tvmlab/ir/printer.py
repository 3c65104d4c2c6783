"""Readable, TVMScript-like text for expressions, statements and functions.

Loop variables keep their schedule names (``i.outer``) so the text matches
the names used by schedule primitives and the trace.  Two different variables
with one name (a producer's ``i`` computed inside its consumer's ``i`` loop)
print as ``i`` and ``i_1``, so the text never mixes them up.
"""
from __future__ import annotations

import json

from . import dtype as dt
from . import expr as E
from . import stmt as S

_PREC = {E.Or: 1, E.And: 2, E.Not: 3, E.EQ: 4, E.NE: 4, E.LT: 4, E.LE: 4, E.GT: 4, E.GE: 4,
         E.Add: 5, E.Sub: 5, E.Mul: 6, E.Div: 6, E.FloorDiv: 6, E.FloorMod: 6, E.Mod: 6}
_ATOM = 10


class Printer:
    def __init__(self):
        self.lines = []
        self.indent = 0
        self.names = {}    # Var -> printed name
        self.taken = set()

    def vn(self, v):
        """The printed name of Var ``v``: its own name, made unique among the printed vars."""
        name = self.names.get(v)
        if name is None:
            name, k = v.name, 0
            while name in self.taken:
                k += 1
                name = f"{v.name}_{k}"
            self.names[v] = name
            self.taken.add(name)
        return name

    # ---------------------------------------------------------- expressions
    def expr(self, e, parent_prec=0):
        s, p = self._expr(e)
        return f"({s})" if p < parent_prec else s

    def _expr(self, e):
        from .tensor import IterVar, Tensor
        if isinstance(e, IterVar):
            return self.vn(e.var), _ATOM
        if isinstance(e, Tensor):
            return e.name, _ATOM
        if isinstance(e, E.Var):
            return self.vn(e), _ATOM
        if isinstance(e, E.IntImm):
            if e.dtype == "bool":
                return ("True" if e.value else "False"), _ATOM
            if e.dtype == "int32":
                return (str(e.value), _ATOM) if e.value >= 0 else (str(e.value), 7)
            return f"T.{e.dtype}({e.value})", _ATOM
        if isinstance(e, E.FloatImm):
            v = repr(e.value) if e.value == e.value else "nan"
            if v in ("inf", "-inf", "nan"):
                return f'T.{e.dtype}("{v}")', _ATOM
            if e.dtype == "float32":
                return v, (_ATOM if not v.startswith("-") else 7)
            return f"T.{e.dtype}({v})", _ATOM
        if isinstance(e, E.StringImm):
            return json.dumps(e.value), _ATOM
        cls = type(e)
        if cls in _PREC:
            p = _PREC[cls]
            if cls is E.Not:
                return f"not {self.expr(e.a, p + 1)}", p
            if cls is E.Div and not dt.is_float(e.dtype):
                return f"T.truncdiv({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
            if cls is E.Mod:
                return f"T.truncmod({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
            left = self.expr(e.a, p)
            rp = p + 1 if cls not in (E.Add, E.Mul, E.And, E.Or) else p + 1
            right = self.expr(e.b, rp)
            return f"{left} {cls.symbol} {right}", p
        if isinstance(e, (E.Min, E.Max)):
            return f"T.{cls.__name__.lower()}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
        if isinstance(e, E.Cast):
            return f'T.Cast("{e.dtype}", {self.expr(e.value)})', _ATOM
        if isinstance(e, E.Select):
            return (f"T.Select({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})"), _ATOM
        if isinstance(e, E.Ramp):
            return f"T.Ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})", _ATOM
        if isinstance(e, E.Broadcast):
            return f"T.Broadcast({self.expr(e.value)}, {e.lanes})", _ATOM
        if isinstance(e, E.Let):
            return f"T.let({self.vn(e.var)}, {self.expr(e.value)}, {self.expr(e.body)})", _ATOM
        if isinstance(e, E.Call):
            args = ", ".join(self.expr(a) for a in e.args)
            if e.op in ("call_extern", "call_pure_extern"):
                args = f'"{e.dtype}", {args}'
            return f"T.{e.op}({args})", _ATOM
        if isinstance(e, E.Load):
            pred = "" if e.predicate is None else f", predicate={self.expr(e.predicate)}"
            if pred:
                return f"T.load({self.vn(e.buffer_var)}, {self.expr(e.index)}{pred})", _ATOM
            return f"{self.vn(e.buffer_var)}[{self.expr(e.index)}]", _ATOM
        if isinstance(e, E.ProducerLoad):
            idx = ", ".join(self.expr(i) for i in e.indices)
            return f"{e.producer.name}[{idx}]", _ATOM
        if isinstance(e, E.Reduce):
            return self._reduce(e), _ATOM
        if isinstance(e, E.CommReducer):
            return self._reducer(e), _ATOM
        return repr(e), _ATOM

    def _reduce(self, r):
        name = reducer_name(r.combiner)
        axes = ", ".join(self.vn(iv.var) for iv in r.axis)
        cond = "" if (isinstance(r.condition, E.IntImm) and r.condition.value) \
            else f", where={self.expr(r.condition)}"
        src = ", ".join(self.expr(s) for s in r.source)
        if name and len(r.source) == 1:
            return f"T.{name}({src}, axis=[{axes}]{cond})"
        vi = f", value_index={r.value_index}" if len(r.source) > 1 else ""
        return f"T.reduce({self._reducer(r.combiner)}, [{src}], axis=[{axes}]{cond}{vi})"

    def _reducer(self, c):
        lhs = ", ".join(v.name for v in c.lhs)
        rhs = ", ".join(v.name for v in c.rhs)
        res = ", ".join(self.expr(x) for x in c.result)
        ident = ", ".join(self.expr(x) for x in c.identity_element)
        return f"T.comm_reducer(lambda {lhs}, {rhs}: ({res}), [{ident}])"

    # ---------------------------------------------------------- statements
    def line(self, text):
        self.lines.append("    " * self.indent + text)

    def stmt(self, s):
        m = getattr(self, "stmt_" + type(s).__name__, None)
        if m is None:
            self.line(repr(s))
        else:
            m(s)

    def block(self, s):
        self.indent += 1
        self.stmt(s)
        self.indent -= 1

    def stmt_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def stmt_For(self, s):
        ext = self.expr(s.extent)
        is_zero = isinstance(s.min, E.IntImm) and s.min.value == 0
        kind = {"serial": "serial", "parallel": "parallel", "vectorized": "vectorized",
                "unrolled": "unroll", "thread_binding": "thread_binding"}[s.kind]
        ann = "".join(f", {k}={self.expr(v) if isinstance(v, E.Expr) else repr(v)}"
                      for k, v in s.annotations)
        var = self.vn(s.loop_var)
        if s.kind == "serial" and is_zero and not ann:
            self.line(f"for {var} in range({ext}):")
        elif is_zero:
            self.line(f"for {var} in T.{kind}({ext}{ann}):")
        else:
            self.line(f"for {var} in T.{kind}({ext}, min={self.expr(s.min)}{ann}):")
        self.block(s.body)

    def stmt_AttrStmt(self, s):
        from .tensor import IterVar
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar):
            self.line(f"{self.vn(s.node.var)} = T.launch_thread(\"{s.node.thread_tag}\", "
                      f"{self.expr(s.value)})")
            self.stmt(s.body)
            return
        node = s.node
        if isinstance(node, (E.Expr, IterVar)):
            nd = self.expr(node)
        elif hasattr(node, "name"):
            nd = node.name
        else:
            nd = repr(node)
        val = self.expr(s.value) if isinstance(s.value, E.Expr) else repr(s.value)
        self.line(f"with T.attr({nd}, \"{s.attr_key}\", {val}):")
        self.block(s.body)

    def stmt_LetStmt(self, s):
        self.line(f"{self.vn(s.var)}: T.{s.var.dtype} = {self.expr(s.value)}")
        self.stmt(s.body)

    def stmt_AssertStmt(self, s):
        self.line(f"assert {self.expr(s.condition)}, {s.message!r}")
        self.stmt(s.body)

    def stmt_Store(self, s):
        if s.predicate is not None:
            self.line(f"T.store({self.vn(s.buffer_var)}, {self.expr(s.index)}, {self.expr(s.value)}, "
                      f"predicate={self.expr(s.predicate)})")
        else:
            self.line(f"{self.vn(s.buffer_var)}[{self.expr(s.index)}] = {self.expr(s.value)}")

    def stmt_ProducerStore(self, s):
        idx = ", ".join(self.expr(i) for i in s.indices)
        self.line(f"{s.producer.name}[{idx}] = {self.expr(s.value)}")

    def stmt_ProducerRealize(self, s):
        b = ", ".join(f"{self.expr(r.min)}:{self.expr(r.min + r.extent)}" for r in s.bounds)
        scope = f', "{s.storage_scope}"' if s.storage_scope else ""
        self.line(f"with T.realize({s.producer.name}[{b}]{scope}):")
        self.block(s.body)

    def stmt_Prefetch(self, s):
        b = ", ".join(f"{self.expr(r.min)}:{self.expr(r.min + r.extent)}" for r in s.bounds)
        self.line(f"T.prefetch({s.buffer.name}[{b}])")

    def stmt_Allocate(self, s):
        ext = ", ".join(self.expr(x) for x in s.extents)
        self.line(f'{self.vn(s.buffer_var)} = T.allocate([{ext}], "{s.dtype}", "{s.scope}")')
        self.stmt(s.body)

    def stmt_IfThenElse(self, s):
        self.line(f"if {self.expr(s.condition)}:")
        self.block(s.then_case)
        e = s.else_case
        while e is not None:
            if isinstance(e, S.IfThenElse):
                self.line(f"elif {self.expr(e.condition)}:")
                self.block(e.then_case)
                e = e.else_case
            else:
                self.line("else:")
                self.block(e)
                e = None

    def stmt_Evaluate(self, s):
        self.line(f"T.evaluate({self.expr(s.value)})")

    def stmt_While(self, s):
        self.line(f"while {self.expr(s.condition)}:")
        self.block(s.body)


def reducer_name(c):
    """'sum', 'max', 'min' or 'prod' when the combiner is a standard one, else None."""
    if len(c.result) != 1:
        return None
    r, x, y = c.result[0], c.lhs[0], c.rhs[0]
    if not (isinstance(r, (E.Add, E.Mul, E.Max, E.Min)) and
            {id(r.a), id(r.b)} == {id(x), id(y)}):
        return None
    return {E.Add: "sum", E.Mul: "prod", E.Max: "max", E.Min: "min"}[type(r)]


def astext(node):
    """Text of an expression or a statement."""
    p = Printer()
    if isinstance(node, S.Stmt):
        p.stmt(node)
        return "\n".join(p.lines)
    return p.expr(node)
