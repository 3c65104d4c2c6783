"""Index arithmetic and expression nodes, spelled as in TVM's ``tvm.tir``."""
from ..ir.expr import (EQ, GE, GT, LE, LT, NE, Add, And, Broadcast, Call, Cast, Div,  # noqa: F401
                      FloatImm, FloorDiv, FloorMod, IntImm, Let, Load, Max, Min, Mod, Mul, Not, Or,
                      ProducerLoad, Ramp, Reduce, SizeVar, StringImm, Sub, Var, CommReducer)
from ..ir.function import Buffer, PrimFunc, IRModule  # noqa: F401
from ..ir.op import (abs, all, any, call_extern, call_pure_extern, ceil, const, erf, exp,  # noqa: F401
                    floor, floordiv, floormod, fmod, if_then_else, likely, log, max, max_value, min,
                    min_value, popcount, power, round, rsqrt, sigmoid, sqrt, tanh, truncdiv, truncmod,
                    cast)
from ..ir.stmt import (Allocate, AssertStmt, AttrStmt, Evaluate, For, IfThenElse, LetStmt,  # noqa: F401
                      ProducerRealize, ProducerStore, SeqStmt, Stmt, Store)

from ..ir.expr import Expr as PrimExpr  # noqa: E402,F401  (TVM's base class of index and value expressions)

indexdiv = floordiv
indexmod = floormod
from ..ir import expr  # noqa: F401,E402  (tvm.tir.expr: the expression node classes)
from ..ir import stmt  # noqa: F401,E402  (tvm.tir.stmt: the statement node classes)
from . import transform  # noqa: F401,E402  (tvm.tir.transform: the lowering passes)
from ..ir.buffer import decl_buffer  # noqa: F401,E402
from ..ir.extern import call_packed  # noqa: F401,E402
from . import ir_builder  # noqa: F401,E402  (tvm.tir.ir_builder.create())
from . import stmt_functor  # noqa: F401,E402  (tvm.tir.stmt_functor: post_order_visit, ir_transform)
from ..ir.tensor import IterVar  # noqa: F401,E402
from ..ir.stmt import Prefetch, While  # noqa: F401,E402
from ..ir.stmt import ForKind  # noqa: F401,E402
from .buffer_access import BufferLoad, BufferStore  # noqa: F401,E402  (TVM's names for flat Store / Load)
from ..ir.op import CallEffectKind, call_intrin  # noqa: F401,E402
from .buffer_access import _NodeName  # noqa: E402
from ..ir.op import select as _select  # noqa: E402


class Select(metaclass=_NodeName):
    """``Select(cond, t, f)`` builds the ``Select`` node (both sides evaluated); ``isinstance``
    checks against it see every Select in the IR."""
    _node = expr.Select

    def __new__(cls, condition, true_value, false_value):
        return _select(condition, true_value, false_value)
