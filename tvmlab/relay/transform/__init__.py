"""Graph passes, each a ``tvm.transform`` pass on an IRModule: ``relay.transform.FuseOps(2)(mod)``."""
from __future__ import annotations

from ...ir.transform import module_pass
from ..expr import Function


def _map_functions(mod, fn):
    """A new module whose relay functions are ``fn(function)``; other functions are kept."""
    out = type(mod)({name: fn(f) if isinstance(f, Function) else f for name, f in mod.functions.items()})
    return out


def InferType():
    """Type every node (``expr.checked_type``); raises TypeInferenceError on a mismatch."""
    from .infer_type import infer_function

    def run(mod, ctx):
        def one(f):
            infer_function(f)
            return f
        return _map_functions(mod, one)
    return module_pass(run, opt_level=0, name="InferType")
