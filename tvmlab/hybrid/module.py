"""HybridModule: hybrid script source that runs as Python and parses back into a HybridOp.

``te.hybrid.build(s, inputs, outputs)`` writes a schedule's AST2 as a script
(``dump.py``) and wraps it here; ``save`` writes it to a ``.py`` file that
imports tvmlab, ``load`` reads one back.
"""
from __future__ import annotations

import ast
import os

from ..errors import HybridScriptError

_HEADER = "import tvmlab as tvm\n\n\n@tvm.te.hybrid.script\n"


class HybridModule:
    """One hybrid function: ``mod(tensors...)`` gives its output tensors, ``mod(arrays...)`` runs it."""

    def __init__(self, src=None, name=None):
        self.name, self.src_, self.func_, self.root_ = name, None, None, None
        self._path = "<hybrid module>"
        if src is not None:
            self._set(_HEADER + src)

    def __call__(self, *args):
        if self.func_ is None:
            raise HybridScriptError("this HybridModule holds no function yet; load() one")
        return self.func_(*args)

    def get_source(self):
        return self.src_

    def save(self, path):
        """Write the module as a Python file (``.py`` is added when missing)."""
        if not path.endswith(".py"):
            path += ".py"
        with open(path, "w") as f:
            f.write(self.src_)

    def load(self, path):
        """Read the module from a Python file holding one hybrid function."""
        with open(path) as f:
            src = f.read()
        self._path = os.path.abspath(path)
        self._set(src)

    def _set(self, src):
        try:
            root = ast.parse(src, self._path)
        except SyntaxError as e:
            raise HybridScriptError(f"hybrid module {self._path}: not Python ({e})") from None
        defs = [n for n in root.body if isinstance(n, ast.FunctionDef)]
        if len(defs) != 1:
            raise HybridScriptError(f"hybrid module {self._path}: expected one function, found {len(defs)}")
        ns = {}
        exec(compile(src, self._path, "exec"), ns)      # the module's own code: tvmlab's import and its def
        func = ns[defs[0].name]
        if getattr(func, "_hybrid_script", None) is None:
            raise HybridScriptError(f"hybrid module {self._path}: {defs[0].name} is not decorated with "
                                    "@tvm.te.hybrid.script")
        func._hybrid_source = (defs[0], self._path, 1)     # parse from this text, not inspect's file lookup
        self.src_, self.root_, self.func_ = src, defs[0], func
        if self.name is None:
            self.name = defs[0].name
