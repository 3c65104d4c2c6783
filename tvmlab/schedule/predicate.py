"""Store predicates (``s[B].set_store_predicate(cond)``): checked, recorded, replayed, and written as Python.

A predicate may use the stage's axes, thread indices (``te.thread_axis(...)``,
matched by tag when lowered), symbolic shape variables, integer constants,
casts, ``+ - * // %``, comparisons and ``& | ~``.  That is what TVM's idiom needs
(``tx.var.equal(0)`` after a cross-thread reduction) and what a trace can hold
as plain JSON: ``["==", ["var", "threadIdx.x"], ["int", 0, "int32"]]``.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..ir import expr as E
from ..ir import op as _op
from ..ir.tensor import is_thread_tag

_BINARY = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%", E.EQ: "==",
           E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.And: "&", E.Or: "|"}
_BUILD = {"+": _op.add, "-": _op.sub, "*": _op.mul, "//": _op.floordiv, "%": _op.floormod,
          "==": _op.eq, "!=": _op.ne, "<": _op.lt, "<=": _op.le, ">": _op.gt, ">=": _op.ge,
          "&": _op.logical_and, "|": _op.logical_or}
ALLOWED = ("axes, thread indices, shape variables, integer constants, casts, + - * // %, comparisons "
           "and & | ~")


def shape_vars(schedule):
    """{name: Var} of the variables in the shapes of the schedule's tensors."""
    from ..ir.functor import collect_vars
    out = {}
    for st in schedule.stages:
        for t in st.op.outputs:
            for d in t.shape:
                if isinstance(d, E.Expr):
                    for v in collect_vars(d):
                        out.setdefault(v.name, v)
    return out


def check(stage, predicate):
    """The predicate as a bool expression, or ScheduleError naming what is not allowed."""
    where = f"set_store_predicate of {stage.name}"
    try:
        e = _op.convert(predicate)
    except Exception:
        raise ScheduleError(f"{where}: expected a boolean expression, got {predicate!r}") from None
    if not isinstance(e, E.Expr) or e.dtype != "bool":
        raise ScheduleError(f"{where}: expected a boolean expression, got {e!r} of type "
                            f"{getattr(e, 'dtype', type(e).__name__)}")
    from ..ir.tensor import IterVar
    axes = {iv.var for iv in stage.all_iter_vars if iv.iter_type != IterVar.REDUCE}
    reduce = {iv.var for iv in stage.all_iter_vars if iv.iter_type == IterVar.REDUCE}
    shapes = set(shape_vars(stage.schedule).values()) if stage.schedule is not None else set()

    def walk(x):
        if isinstance(x, E.Var):
            if x in reduce:
                raise ScheduleError(f"{where}: {x.name} is a reduce axis; a store happens once per output "
                                    "element, so the predicate may use data axes, thread indices (for a "
                                    "reduce axis bound to threadIdx.x, the thread axis) and shape variables")
            if x not in axes and x not in shapes and not is_thread_tag(x.name):
                raise ScheduleError(f"{where}: variable {x.name} is not an axis of {stage.name} (axes "
                                    f"{[iv.var.name for iv in stage.all_iter_vars]}), a thread index or "
                                    "a shape variable")
        elif isinstance(x, E.IntImm):
            pass
        elif type(x) in _BINARY:
            walk(x.a)
            walk(x.b)
        elif isinstance(x, E.Not):
            walk(x.a)
        elif isinstance(x, E.Cast):
            walk(x.value)
        else:
            raise ScheduleError(f"{where}: a predicate may use {ALLOWED}; got {type(x).__name__} ({x})")
    walk(e)
    return e


def encode(e, stage):
    """The predicate as JSON-ready nested lists; a variable is ``["var", name, kind]`` with kind
    "axis", "thread" or "shape"."""
    if isinstance(e, E.Var):
        if any(iv.var is e for iv in stage.all_iter_vars):
            return ["var", e.name, "axis"]
        return ["var", e.name, "thread" if is_thread_tag(e.name) else "shape"]
    if isinstance(e, E.IntImm):
        return ["int", int(e.value), e.dtype]
    if isinstance(e, E.Not):
        return ["~", encode(e.a, stage)]
    if isinstance(e, E.Cast):
        return ["cast", e.dtype, encode(e.value, stage)]
    return [_BINARY[type(e)], encode(e.a, stage), encode(e.b, stage)]


def decode(tree, stage):
    """The expression ``tree`` stands for, its variables found in ``stage`` and its schedule."""
    from ..te import thread_axis
    shapes = shape_vars(stage.schedule)

    def var(name, kind):
        if kind == "axis":
            for iv in stage.all_iter_vars:
                if iv.var.name == name:
                    return iv.var
        elif kind == "shape" and name in shapes:
            return shapes[name]
        elif kind == "thread" and is_thread_tag(name):
            return thread_axis(name).var      # matched by tag when lowered
        raise ScheduleError(f"store predicate: stage {stage.name} has no {kind} variable named {name!r}")

    def go(t):
        if not isinstance(t, list) or not t:
            raise ScheduleError(f"store predicate: malformed expression {t!r}")
        if t[0] == "var":
            return var(t[1], t[2] if len(t) > 2 else "axis")
        if t[0] == "int":
            return E.IntImm(t[2], t[1])
        if t[0] == "~":
            return _op.logical_not(go(t[1]))
        if t[0] == "cast":
            return _op.cast(t[1], go(t[2]))
        if t[0] in _BUILD and len(t) == 3:
            return _BUILD[t[0]](go(t[1]), go(t[2]))
        raise ScheduleError(f"store predicate: unknown operator {t[0]!r}")
    return go(tree)


def as_python(tree, axis_ref):
    """Python source for ``tree``; ``axis_ref(name)`` gives the expression of a stage axis.

    Shape variables appear by name, as tensors do in ``Trace.as_python``.
    """
    if tree[0] == "var":
        kind = tree[2] if len(tree) > 2 else "axis"
        if kind == "axis":
            return axis_ref(tree[1])
        return f"te.thread_axis({tree[1]!r})" if kind == "thread" else tree[1]
    if tree[0] == "int":
        return str(tree[1]) if tree[2] == "int32" else f"te.const({tree[1]}, {tree[2]!r})"
    if tree[0] == "~":
        return f"~({as_python(tree[1], axis_ref)})"
    if tree[0] == "cast":
        return f"{as_python(tree[2], axis_ref)}.astype({tree[1]!r})"
    return f"({as_python(tree[1], axis_ref)} {tree[0]} {as_python(tree[2], axis_ref)})"
