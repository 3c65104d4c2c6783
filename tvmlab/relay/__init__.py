"""The graph level, spelled as TVM's Relay: build a graph, run passes, compile it whole.

    x = relay.var("x", shape=(1, 3, 8, 8)); w = relay.var("w", shape=(4, 3, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params={"w": w_np})
"""
from __future__ import annotations

from ..ir import function as _function
from ..ir.function import GlobalVar  # noqa: F401  (TVM exports it from relay too)
from . import analysis, backend, op, transform  # noqa: F401
from . import frontend  # noqa: F401  (from_onnx, from_pytorch)
from .build_module import build, create_executor, optimize  # noqa: F401
from . import te_compiler  # noqa: F401
from .base import RelayError, TypeInferenceError  # noqa: F401
from . import parser  # noqa: F401
from .parser import RelayParseError, fromtext  # noqa: F401  (relay.fromtext: TVM's older spelling)
from .expr import (Attrs, Call, Constant, Function, Let, RelayExpr, Tuple, TupleGetItem, TupleWrapper,  # noqa: F401
                   Var, bind, const, var)
from .op import nn  # noqa: F401
from .expr_functor import ExprMutator, ExprVisitor  # noqa: F401
from .layout import layout_transform  # noqa: F401
from .op.tensor import *  # noqa: F401,F403
from .op.algorithm import *  # noqa: F401,F403
from .op.compare import *  # noqa: F401,F403
from .op.trig import *  # noqa: F401,F403
from .op.indexing import *  # noqa: F401,F403
from .op import image  # noqa: F401
from .ty import FuncType, TensorType, TupleType  # noqa: F401
from .visit import free_vars as _free_vars

Expr = RelayExpr


def _from_expr(cls, expr, functions=None):
    if isinstance(expr, TupleWrapper):
        expr = expr.astuple()
    if not isinstance(expr, RelayExpr):
        raise RelayError(f"IRModule.from_expr needs a relay expression or function, got {type(expr).__name__}")
    if not isinstance(expr, Function):
        expr = Function(_free_vars(expr), expr)
    funcs = dict(functions or {})
    funcs["main"] = expr
    return cls(funcs)


_function.register_from_expr(_from_expr)

backend.te_compiler = te_compiler   # TVM's spelling: relay.backend.te_compiler.get()
