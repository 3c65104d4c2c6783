"""Target-specific lowering of intrinsic calls: TVM's ``tvm.target.register_intrin_rule``.

    def my_exp(op):                  # op: the Call; op.op.name is "tir.exp"
        return tvm.tir.call_pure_extern("float32", "expf", op.args[0])
    tvm.target.register_intrin_rule("cuda", "exp", my_exp, level=99)

Before a build for a target, every call of an intrinsic that has a rule for
that target kind is replaced by what the rule returns (None keeps the call).
``tvm.tir.call_intrin(dtype, "tir.mylog", x)`` makes a call of an intrinsic of
your own, which then needs a rule (or the target cannot generate it).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir.expr import Call, Expr
from ..ir.functor import IRMutator

_RULES = {}      # (target kind, op name without "tir.") -> (level, fn)


def _short(name):
    return name[4:] if name.startswith("tir.") else name


def register_intrin_rule(target, op_name, f=None, level=10, override=False):
    """Lower calls of ``op_name`` for target kind ``target`` with ``f(call) -> Expr``.

    A rule of a higher ``level`` replaces one of a lower level; equal levels need
    ``override``.  Usable as a decorator when ``f`` is omitted.
    """
    if not isinstance(target, str) or not isinstance(op_name, str):
        raise LoweringError(f"register_intrin_rule(target, op_name, f): names must be strings, "
                            f"got {target!r}, {op_name!r}")

    def register(fn):
        if not callable(fn):
            raise LoweringError(f"register_intrin_rule: the rule for {op_name!r} must be callable, "
                                f"got {fn!r}")
        key = (target, _short(op_name))
        old = _RULES.get(key)
        if old is not None and old[0] == level and not override:
            raise LoweringError(f"an intrinsic rule for {op_name!r} on {target!r} at level {level} "
                                "is already registered; pass override=True or a higher level")
        if old is None or level >= old[0]:
            _RULES[key] = (level, fn)
        return fn
    return register(f) if f is not None else register


def register_intrin_lowering(op_name, target="default", f=None, level=10):
    """TVM's ``tvm.ir.register_intrin_lowering``: a rule for ``op_name`` ("tir.exp") on target kind
    ``target``; target "default" serves every target that has no rule of its own."""
    return register_intrin_rule(target, op_name, f, level=level, override=True)


def rules_for(kind):
    """{op: rule} for target kind ``kind``: its own rules over the "default" ones."""
    out = {name: fn for (k, name), (_, fn) in _RULES.items() if k == "default"}
    out.update({name: fn for (k, name), (_, fn) in _RULES.items() if k == kind})
    return out


def apply_intrin_rules(stmt, kind):
    """``stmt`` with the calls that have a rule for target kind ``kind`` rewritten."""
    rules = rules_for(kind)
    if not rules:
        return stmt

    class M(IRMutator):
        def visit_Call(self, c):
            c = self.generic_visit(c)
            fn = rules.get(_short(c.op)) if isinstance(c, Call) else None
            if fn is None:
                return c
            out = fn(c)
            if out is None:
                return c
            if not isinstance(out, Expr):
                raise LoweringError(f"intrinsic rule for {c.op.name} on {kind} returned "
                                    f"{type(out).__name__}, expected an expression")
            if out.dtype != c.dtype:
                raise LoweringError(f"intrinsic rule for {c.op.name} on {kind} returned a "
                                    f"{out.dtype} value for a {c.dtype} call")
            return out
    return M().visit(stmt)
