"""InferType: the shape and dtype of every node, stored in ``checked_type``.

A mismatch is a TypeInferenceError naming the operator, its argument types and the rule broken.
"""
from __future__ import annotations

from ..base import RelayError, TypeInferenceError
from ..expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var, post_order
from ..op.registry import Op
from ..ty import FuncType, TensorType, TupleType


def infer_function(func):
    """Type every node of ``func`` (and of the fused functions it calls); returns its FuncType."""
    for p in func.params:
        if p.type_annotation is None:
            raise TypeInferenceError(f"parameter %{p.name_hint} has no type: give it one, e.g. "
                                     f"relay.var({p.name_hint!r}, shape=(1, 3, 224, 224), dtype='float32')")
        p._checked_type = p.type_annotation
    ret = infer_expr(func.body)
    if func.ret_type is not None and func.ret_type != ret:
        raise TypeInferenceError(f"the function is declared to return {func.ret_type!r} but returns {ret!r}")
    func._checked_type = FuncType([p.type_annotation for p in func.params], ret)
    return func._checked_type


def infer_expr(root):
    nodes = post_order(root)
    lets = {n.var: n.value for n in nodes if isinstance(n, Let)}
    for e in nodes:
        if isinstance(e, Var) and e.type_annotation is None and e in lets:
            e._checked_type = lets[e]._checked_type
            continue
        if e._checked_type is not None and not isinstance(e, Function):
            if not isinstance(e, (Call, Tuple, TupleGetItem, Let)):
                continue
        e._checked_type = _type_of(e)
    return root._checked_type


def _type_of(e):
    if isinstance(e, Var):
        if e.type_annotation is not None:
            return e.type_annotation
        if e._checked_type is not None:
            return e._checked_type
        raise TypeInferenceError(f"variable %{e.name_hint} is free and has no type annotation")
    if isinstance(e, Constant):
        return TensorType(e.value.shape, str(e.value.dtype))
    if isinstance(e, Tuple):
        return TupleType([f._checked_type for f in e.fields])
    if isinstance(e, TupleGetItem):
        t = e.tuple_value._checked_type
        if not isinstance(t, TupleType):
            raise TypeInferenceError(f"TupleGetItem .{e.index} of a value of type {t!r}, which is not a tuple")
        if e.index >= len(t.fields):
            raise TypeInferenceError(f"TupleGetItem .{e.index} of a tuple with {len(t.fields)} fields")
        return t.fields[e.index]
    if isinstance(e, Let):
        e.var._checked_type = e.value._checked_type
        return e.body._checked_type
    if isinstance(e, Function):
        return infer_function(e)
    if isinstance(e, Call):
        args = [a._checked_type for a in e.args]
        if isinstance(e.op, Op):
            try:
                return e.op.type_rel(args, e.attrs)
            except TypeInferenceError as err:
                raise TypeInferenceError(f"{e.op.name}: {err} (argument types: "
                                         f"{', '.join(map(repr, args))})") from None
            except RelayError as err:
                raise TypeInferenceError(f"{e.op.name}: {err}") from None
        if isinstance(e.op, Function):
            ft = infer_function(e.op)
            if list(ft.arg_types) != args:
                raise TypeInferenceError(f"a function of type {ft!r} called with arguments of types "
                                         f"({', '.join(map(repr, args))})")
            return ft.ret_type
        raise TypeInferenceError(f"cannot call a {type(e.op).__name__}")
    raise TypeInferenceError(f"unknown node {type(e).__name__}")  # pragma: no cover


