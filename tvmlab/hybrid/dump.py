"""AST2 -> hybrid script source: a scheduled loop nest written back as a Python function.

``te.hybrid.build`` uses it: the function it writes runs as Python on numpy
arrays and parses back into a HybridOp, so a schedule can be read, edited and
rebuilt as a script.  Dotted names (``i.outer``) become ``i_outer``; names are
made unique and never shadow an intrinsic.
"""
from __future__ import annotations

import keyword

from ..errors import TVMLabError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.tensor import Tensor
from .intrinsics import NAMES

_BIN = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorMod: "%", E.Mod: "%", E.EQ: "==", E.NE: "!=",
        E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.And: "and", E.Or: "or"}
_LOOP = {"serial": "range", "parallel": "parallel", "vectorized": "vectorize", "unrolled": "unroll"}
_CALL_OPS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<", "shift_right": ">>"}
_MATH = {"sqrt", "rsqrt", "log", "log2", "log10", "exp", "tanh", "sigmoid", "floor", "ceil", "trunc", "fabs", "abs",
         "sin", "cos", "pow", "popcount", "likely", "nearbyint"}


class DumpError(TVMLabError):
    """A statement or expression that hybrid script cannot write (AST3 memory ops, vectors)."""


class _Writer:
    def __init__(self):
        self.lines, self.names, self.used = [], {}, set(NAMES) | {"tvm", "script"}

    def name(self, key, hint):
        if key in self.names:
            return self.names[key]
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        cand, k = base, 0
        while cand in self.used:
            k += 1
            cand = f"{base}{k}"
        self.used.add(cand)
        self.names[key] = cand
        return cand

    def tensor(self, t):
        hint = t.op.name if t.op.num_outputs == 1 else f"{t.op.name}_v{t.value_index}"
        return self.name((t.op, t.value_index), hint)

    def emit(self, depth, text):
        self.lines.append("    " * depth + text)

    # ------------------------------------------------------------ expressions
    def expr(self, e):
        if isinstance(e, E.IntImm):
            if e.dtype == "bool":
                return "True" if e.value else "False"
            return str(e.value) if e.dtype in ("int32", "int64") else f"{e.dtype}({e.value})"
        if isinstance(e, E.FloatImm):
            return f"{e.dtype}({e.value!r})"
        if isinstance(e, E.StringImm):
            return repr(e.value)
        if isinstance(e, E.Var):
            return self.name(e, e.name)
        if isinstance(e, E.ProducerLoad):
            return f"{self.tensor(e.producer)}[{', '.join(self.expr(i) for i in e.indices)}]"
        if isinstance(e, E.Cast):
            return f"{e.dtype}({self.expr(e.value)})"
        if isinstance(e, (E.Div, E.FloorDiv)):
            sym = "/" if dt.is_float(e.dtype) else "//"
            return f"({self.expr(e.a)} {sym} {self.expr(e.b)})"
        if type(e) in _BIN:
            return f"({self.expr(e.a)} {_BIN[type(e)]} {self.expr(e.b)})"
        if isinstance(e, (E.Min, E.Max)):
            return f"{'min' if isinstance(e, E.Min) else 'max'}({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, E.Not):
            return f"(not {self.expr(e.a)})"
        if isinstance(e, E.Select):
            return f"({self.expr(e.true_value)} if {self.expr(e.condition)} else {self.expr(e.false_value)})"
        if isinstance(e, E.Call):
            return self.call(e)
        raise DumpError(f"hybrid dump: cannot write {type(e).__name__} ({e})")

    def call(self, e):
        op, args = e.op, [self.expr(a) for a in e.args]
        if op in _CALL_OPS:
            return f"({args[0]} {_CALL_OPS[op]} {args[1]})"
        if op == "bitwise_not":
            return f"(~{args[0]})"
        if op == "if_then_else":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if op in _MATH:
            name = {"fabs": "abs", "pow": "power", "nearbyint": "round"}.get(op, op)
            return f"{name}({', '.join(args)})"
        raise DumpError(f"hybrid dump: cannot write a call of {op!r} ({e})")

    # ------------------------------------------------------------ statements
    def stmt(self, s, depth, outputs):
        if s is None or S.is_no_op(s):
            return
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self.stmt(x, depth, outputs)
        elif isinstance(s, S.For):
            v = self.name(s.loop_var, s.loop_var.name)
            fn = _LOOP.get(s.kind, "range")
            lo = s.min
            rng = self.expr(s.extent) if isinstance(lo, E.IntImm) and lo.value == 0 else \
                f"{self.expr(lo)}, {self.expr(lo)} + {self.expr(s.extent)}"
            self.emit(depth, f"for {v} in {fn}({rng}):")
            self.stmt(s.body, depth + 1, outputs) if not S.is_no_op(s.body) else self.emit(depth + 1, "pass")
        elif isinstance(s, S.AttrStmt):
            if s.attr_key == "thread_extent":
                iv = s.node
                v = self.name(iv.var, iv.var.name)
                self.emit(depth, f"for {v} in bind({iv.thread_tag!r}, {self.expr(s.value)}):")
                self.stmt(s.body, depth + 1, outputs)
            else:
                self.stmt(s.body, depth, outputs)          # annotations have no script form
        elif isinstance(s, S.ProducerRealize):
            t = s.producer
            if t not in outputs:
                shape = ", ".join(self.expr(d) for d in t.shape) + ("," if len(t.shape) == 1 else "")
                scope = s.storage_scope or "global"
                self.emit(depth, f"{self.tensor(t)} = allocate(({shape}), {t.dtype!r}, {scope!r})")
            self.stmt(s.body, depth, outputs)
        elif isinstance(s, S.ProducerStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(depth, f"{self.tensor(s.producer)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, S.IfThenElse):
            self.emit(depth, f"if {self.expr(s.condition)}:")
            self.stmt(s.then_case, depth + 1, outputs)
            if s.else_case is not None and not S.is_no_op(s.else_case):
                self.emit(depth, "else:")
                self.stmt(s.else_case, depth + 1, outputs)
        elif isinstance(s, S.AssertStmt):
            msg = s.message.value if isinstance(s.message, E.StringImm) else str(s.message)
            self.emit(depth, f"assert {self.expr(s.condition)}, {msg!r}")
            self.stmt(s.body, depth, outputs)
        elif isinstance(s, S.LetStmt):
            self.emit(depth, f"{self.name(s.var, s.var.name)} = {self.expr(s.value)}")
            self.stmt(s.body, depth, outputs)
        else:
            raise DumpError(f"hybrid dump: cannot write {type(s).__name__} (hybrid script is written from AST2, "
                            "the loop nest over tensors)")


def dump(stmt, inputs, outputs, name="hybrid_func"):
    """Source of ``def name(inputs): ...; return outputs`` computing ``stmt`` (AST2)."""
    w = _Writer()
    fname = w.name(("function",), name)
    params = []
    for k, x in enumerate(inputs):
        if isinstance(x, Tensor):
            params.append(w.tensor(x))
        elif isinstance(x, E.Var):
            params.append(w.name(x, x.name))
        else:
            raise DumpError(f"hybrid build: input {k} must be a tensor or a variable, got {x!r}")
    w.emit(0, f"def {fname}({', '.join(params)}):")
    for t in outputs:
        shape = ", ".join(w.expr(d) for d in t.shape) + ("," if len(t.shape) == 1 else "")
        w.emit(1, f"{w.tensor(t)} = output_tensor(({shape}), {t.dtype!r})")
    w.stmt(stmt, 1, set(outputs))
    w.emit(1, f"return {', '.join(w.tensor(t) for t in outputs)}")
    return fname, "\n".join(w.lines) + "\n"
