"""LLVM IR imported into a build: ``pragma(axis, "import_llvm", text)``, as in TVM.

A loop annotated with ``pragma_import_llvm`` (or an AttrStmt of that key, as
a tensor intrinsic's body may carry) holds LLVM assembly, for instance the
definition of a function that ``call_extern`` calls.  Each distinct text is
parsed, verified and linked into the module before optimisation, so an
``alwaysinline`` definition is inlined into the loops that call it.
"""
from __future__ import annotations

import llvmlite.binding as llvm

from ..errors import BuildError
from ..ir.expr import StringImm
from ..ir.functor import post_order_visit
from ..ir.stmt import AttrStmt, For

KEY = "pragma_import_llvm"
_REGISTERED = {}        # name -> LLVM text, for imports named "registered:<name>"


def register_llvm(name, text):
    """Register LLVM text so IR can import it by ``"registered:<name>"`` (keeps printed IR short)."""
    _REGISTERED[name] = text
    return "registered:" + name


def _text(v):
    v = v.value if isinstance(v, StringImm) else v
    if isinstance(v, str) and v.startswith("registered:"):
        if v[11:] not in _REGISTERED:
            raise BuildError(f"pragma import_llvm names {v!r}, which no register_llvm call registered")
        return _REGISTERED[v[11:]]
    return v


def imported_llvm(funcs):
    """The distinct LLVM texts imported by the functions' bodies, in order of appearance."""
    out = []

    def visit(x):
        if isinstance(x, For):
            for k, v in x.annotations or ():
                if k == KEY and _text(v) not in out:
                    out.append(_text(v))
        elif isinstance(x, AttrStmt) and x.attr_key == KEY and _text(x.value) not in out:
            out.append(_text(x.value))
    for f in funcs.values():
        post_order_visit(f.body, visit)
    return out


def link_imports(ref, funcs):
    """Link every imported text into the parsed module ``ref``."""
    for k, text in enumerate(imported_llvm(funcs)):
        if not isinstance(text, str) or not text.strip():
            raise BuildError(f"pragma import_llvm needs LLVM assembly text, got {text!r}")
        try:
            other = llvm.parse_assembly(text)
            other.verify()
        except RuntimeError as e:
            raise BuildError(f"pragma import_llvm: the imported LLVM IR (number {k}) is invalid: {e}") from None
        other.triple = ref.triple
        other.data_layout = ref.data_layout
        for fn in other.functions:      # as TVM: two imports may define one helper (identical by rule)
            if not fn.is_declaration and fn.linkage == llvm.Linkage.external:
                fn.linkage = "linkonce_odr"
        try:
            ref.link_in(other)
        except RuntimeError as e:
            raise BuildError(f"pragma import_llvm: cannot link the imported LLVM IR (number {k}): {e}") from None
