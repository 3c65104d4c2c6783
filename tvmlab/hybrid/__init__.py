"""Hybrid script (TVM's ``tvm.te.hybrid``): loop nests written as restricted Python.

    @te.hybrid.script
    def outer_product(a, b):
        c = output_tensor((a.shape[0], b.shape[0]), a.dtype)
        for i in range(a.shape[0]):
            for j in range(b.shape[0]):
                c[i, j] = a[i] * b[j]
        return c

    c = outer_product(A, B)          # te tensors in: a HybridOp, its outputs te tensors
    ref = outer_product(x, y)        # numpy arrays in: runs as Python (emulation)

The operation composes with ``te.compute`` and schedules like a stage whose
axes are the script's loops (``s[c].split(c.op.axis[0], 4)``).
``build(s, inputs, outputs)`` writes a schedule back as a script (HybridModule).

Spelling: tvmlab's ``te`` is a module, not a package, so this package lives at
``tvmlab.hybrid`` and is registered in ``sys.modules`` under
``tvmlab.te.hybrid`` (with its submodules), the way ``tvmlab.error`` is
registered for ``tvm.error``: ``te.hybrid.script``, ``from tvmlab.te.hybrid
import script`` and ``from tvmlab.te.hybrid.runtime import HYBRID_GLOBALS``
then all name these same objects, with no second copy of any module.
"""
from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap

from ..errors import HybridScriptError
from . import dump, intrinsics, module, parser, runtime, usage
from .module import HybridModule
from .parser import source_to_op

__all__ = ["script", "build", "HybridModule", "HybridScriptError"]


def script(pyfunc):
    """Make ``pyfunc`` a hybrid script: called with te tensors (or expressions) it returns the
    output tensors of a HybridOp; called with numpy arrays and numbers it runs as Python."""
    if not inspect.isfunction(pyfunc):
        raise HybridScriptError(f"te.hybrid.script decorates a Python function, got {type(pyfunc).__name__}")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        if _is_ir_call(args):
            if kwargs:
                raise HybridScriptError(f"hybrid script {pyfunc.__name__!r}: pass tensors as positional "
                                        f"arguments, got keywords {sorted(kwargs)}")
            fdef, filename, first_line = wrapped._hybrid_source or _source(pyfunc)
            return source_to_op(fdef, args, _scope(pyfunc), filename, first_line)
        return runtime.emulate(pyfunc, args, kwargs)

    wrapped._hybrid_script = pyfunc
    wrapped._hybrid_source = None
    return wrapped


def _is_ir_call(args):
    from ..ir.expr import ExprOp
    for a in args:
        if isinstance(a, ExprOp):
            return True
        if isinstance(a, (list, tuple)) and _is_ir_call(a):
            return True
    return False


@functools.lru_cache(maxsize=256)
def _source(pyfunc):
    """(ast.FunctionDef, file name, first line) of ``pyfunc``'s source."""
    try:
        src = inspect.getsource(pyfunc)
        filename = inspect.getsourcefile(pyfunc) or "<unknown>"
    except (OSError, TypeError) as e:
        raise HybridScriptError(f"hybrid script {pyfunc.__name__!r}: its source is not available ({e}); "
                                "define it in a file, or load it with te.hybrid.HybridModule") from None
    tree = ast.parse(textwrap.dedent(src))
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise HybridScriptError(f"hybrid script {pyfunc.__name__!r}: expected a def, found "
                                f"{type(fdef).__name__}")
    return fdef, filename, pyfunc.__code__.co_firstlineno


def _scope(pyfunc):
    """The names the script can read from Python: its module's globals and its closure."""
    scope = dict(pyfunc.__globals__)
    if pyfunc.__closure__:
        for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:          # a closure variable not assigned yet
                pass
    return scope


def build(sch, inputs, outputs, name="hybrid_func"):
    """Write schedule ``sch`` as a hybrid script computing ``outputs`` from ``inputs`` (tensors and
    variables): a HybridModule, which runs as Python and parses back into tensors."""
    from ..schedule.steps import InferBound, ScheduleOps
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    sch = sch.normalize()
    stmt = ScheduleOps(sch, InferBound(sch))
    fname, src = dump.dump(stmt, inputs, outputs, name)
    return HybridModule(src, fname)


def _register_as_te_hybrid():
    from .. import te
    te.hybrid = sys.modules[__name__]
    sys.modules["tvmlab.te.hybrid"] = sys.modules[__name__]
    for sub in (dump, intrinsics, module, parser, runtime, usage):
        sys.modules["tvmlab.te.hybrid." + sub.__name__.rsplit(".", 1)[1]] = sub


_register_as_te_hybrid()
