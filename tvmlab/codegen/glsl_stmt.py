"""Statements common to the fragment and compute shader writers (loops, conditions, lets).

A writer subclasses ``StmtWriter`` and provides ``load``, ``_s_Store`` and
``_s_Allocate``; ``emit`` appends an indented line to ``self.lines``.
"""
from __future__ import annotations

from ..errors import BuildError
from ..ir import expr as E
from ..ir.stmt import is_no_op
from ..ir.tensor import Range
from .glsl_expr import ExprPrinter, glsl_type


class StmtWriter(ExprPrinter):
    """Needs ``where``, ``names``, ``ana``, ``helpers``, ``lines``, ``indent`` from the subclass."""

    # ------------------------------------------------------------ statements
    def emit(self, text):
        self.lines.append("    " * self.indent + text)

    def stmt(self, s):
        fn = getattr(self, "_s_" + type(s).__name__, None)
        if fn is None:
            raise BuildError(f"{self.where}: the OpenGL target cannot generate {type(s).__name__} statements")
        fn(s)

    def _s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def _s_Evaluate(self, s):
        if is_no_op(s):
            return
        raise BuildError(f"{self.where}: cannot evaluate {s.value} for its effect in a shader")

    def _s_AttrStmt(self, s):
        if s.attr_key == "thread_extent":
            raise BuildError(f"{self.where}: axis bound to {getattr(s.node, 'thread_tag', s.node)}; thread "
                             "bindings need target 'opengl -compute' (fragment mode uses s[X].opengl())")
        self.stmt(s.body)

    def check_loop(self, s):
        """Reject loops this kind of shader cannot run (BuildError)."""

    def _s_AssertStmt(self, s):
        self.stmt(s.body)

    def _s_LetStmt(self, s):
        t = glsl_type(s.var.dtype, f"{self.where}: let {s.var.name}")
        name = self.names.of(s.var, s.var.name)
        self.emit(f"{t} {name} = {self.expr(s.value)};")
        self.stmt(s.body)

    def _s_IfThenElse(self, s):
        self.emit(f"if ({self.expr(s.condition)}) {{")
        self.indent += 1
        self.stmt(s.then_case)
        self.indent -= 1
        if s.else_case is not None and not is_no_op(s.else_case):
            self.emit("} else {")
            self.indent += 1
            self.stmt(s.else_case)
            self.indent -= 1
        self.emit("}")

    def _s_For(self, s):
        self.check_loop(s)
        v = self.names.of(s.loop_var, s.loop_var.name)
        lo, ext = self.expr(s.min), self.expr(s.extent)
        end = ext if isinstance(s.min, E.IntImm) and s.min.value == 0 else f"{lo} + {ext}"
        self.emit(f"for (int {v} = {lo}; {v} < {end}; ++{v}) {{")
        self.indent += 1
        self.ana.bind(s.loop_var, Range(s.min, s.extent))
        self.stmt(s.body)
        self.indent -= 1
        self.emit("}")

