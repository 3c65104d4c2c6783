"""InjectCopyIntrin: a loop nest marked ``pragma(axis, "memcpy")`` (any pragma key) that only copies
becomes one call of a copy intrinsic of your own.

    def copy(src, dst, pad_before, pad_after, pad_value) -> Stmt: ...
    mod = tvm.tir.transform.InjectCopyIntrin("memcpy", copy)(mod)

The nest must be perfectly nested loops around one store ``dst[...] = src[...]``
(indices linear in the loop variables), or a padded copy ``dst[...] =
if_then_else(bounds on the loop variables, src[...], constant)``.  The callback
gets Buffers describing both sides (``shape``, ``strides``, ``elem_offset``;
the source only over the part actually read), the padding before and after in
each dimension and the padding value (None without padding).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import GE, GT, LE, LT, And, Call, Load, Select
from ..ir.function import Buffer
from ..ir.functor import IRMutator, collect_vars, substitute
from ..ir.stmt import For, Stmt, Store


def _linear(e, loop_vars, ana):
    """(base, [coef per loop var]) when ``e`` is linear in ``loop_vars``, else None."""
    zero = {v: _op.const(0, v.dtype) for v in loop_vars}
    base = ana.simplify(substitute(e, zero))
    coefs = []
    for v in loop_vars:
        one = dict(zero)
        one[v] = _op.const(1, v.dtype)
        c = ana.simplify(_op.sub(substitute(e, one), base))
        if any(u in loop_vars for u in collect_vars(c)):
            return None
        coefs.append(c)
    rebuilt = base
    for v, c in zip(loop_vars, coefs):
        rebuilt = _op.add(rebuilt, _op.mul(c, v))
    if not ana.can_prove(_op.eq(rebuilt, e)):
        return None
    return base, coefs


def _conjuncts(cond):
    if isinstance(cond, And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    if isinstance(cond, Call) and cond.op == "likely":
        return _conjuncts(cond.args[0])
    return [cond]


def _bounds(cond, loops, ana):
    """{loop var: [lo, hi)} the padding condition allows, or None when it is not such bounds."""
    loop_vars = [f.loop_var for f in loops]
    lo = {v: f.min for v, f in zip(loop_vars, loops)}
    hi = {v: _op.add(f.min, f.extent) for v, f in zip(loop_vars, loops)}
    for c in _conjuncts(cond):
        if not isinstance(c, (GE, GT, LE, LT)):
            return None
        diff = _op.sub(c.a, c.b)                       # c is: diff OP 0
        used = [v for v in loop_vars if v in collect_vars(diff)]
        if len(used) != 1:
            return None
        v = used[0]
        lin = _linear(diff, [v], ana)
        if lin is None:
            return None
        rest, (coef,) = lin
        k = getattr(coef, "value", None)
        if k not in (1, -1):
            return None
        op = type(c)
        if k == -1:                                   # -v + rest OP 0  <=>  v - rest OP' 0
            rest = _op.neg(rest)
            op = {GE: LE, GT: LT, LE: GE, LT: GT}[op]
        bound = _op.neg(rest)                          # v OP bound
        one = _op.const(1, v.dtype)
        if op is GE:
            lo[v] = _op.max(lo[v], bound)
        elif op is GT:
            lo[v] = _op.max(lo[v], _op.add(bound, one))
        elif op is LT:
            hi[v] = _op.min(hi[v], bound)
        else:
            hi[v] = _op.min(hi[v], _op.add(bound, one))
    return lo, hi


def _match(loop, ana):
    """(loops, store, load, pad condition or None, pad value or None) of a copy nest, else None."""
    loops, body = [], loop
    while isinstance(body, For):
        loops.append(body)
        body = body.body
    if not isinstance(body, Store) or body.predicate is not None:
        return None
    value, cond, pad = body.value, None, None
    if isinstance(value, Call) and value.op == "if_then_else":
        cond, value, pad = value.args
    elif isinstance(value, Select):
        cond, value, pad = value.condition, value.true_value, value.false_value
    if not isinstance(value, Load) or value.predicate is not None:
        return None
    if pad is not None and collect_vars(pad):
        return None
    return loops, body, value, cond, pad


def _copy_call(loop, key, fcallback, ana, what):
    m = _match(loop, ana)
    if m is None:
        raise LoweringError(f"{what}: the loop nest under pragma {key!r} is not a copy (expected nested loops "
                            "around one dst[...] = src[...] or dst[...] = if_then_else(bounds, src[...], value))")
    loops, store, load, cond, pad = m
    loop_vars = [f.loop_var for f in loops]
    dst = _linear(store.index, loop_vars, ana)
    src = _linear(load.index, loop_vars, ana)
    if dst is None or src is None:
        raise LoweringError(f"{what}: the copy under pragma {key!r} has an index that is not linear in its loops")
    extents = [f.extent for f in loops]
    zero = [_op.const(0, v.dtype) for v in loop_vars]
    if cond is None:
        before, after, shape = zero, zero, extents
        src_offset = src[0]
    else:
        b = _bounds(cond, loops, ana)
        if b is None:
            raise LoweringError(f"{what}: the padding condition {cond} under pragma {key!r} is not bounds on "
                                "the loop variables")
        lo, hi = b
        before = [ana.simplify(_op.max(_op.sub(lo[v], f.min), _op.const(0, v.dtype)))
                  for v, f in zip(loop_vars, loops)]
        after = [ana.simplify(_op.max(_op.sub(_op.add(f.min, f.extent), hi[v]), _op.const(0, v.dtype)))
                 for v, f in zip(loop_vars, loops)]
        shape = [ana.simplify(_op.sub(_op.sub(e, p), q)) for e, p, q in zip(extents, before, after)]
        start = {v: _op.add(f.min, p) for v, f, p in zip(loop_vars, loops, before)}
        src_offset = ana.simplify(substitute(load.index, start))
    dst_offset = ana.simplify(substitute(store.index, {v: f.min for v, f in zip(loop_vars, loops)}))
    src_buf = Buffer(load.buffer_var.name, shape, load.dtype, data=load.buffer_var, strides=src[1],
                     elem_offset=src_offset)
    dst_buf = Buffer(store.buffer_var.name, extents, store.value.dtype, data=store.buffer_var, strides=dst[1],
                     elem_offset=dst_offset)
    out = fcallback(src_buf, dst_buf, before, after, pad)
    if not isinstance(out, Stmt):
        raise LoweringError(f"{what}: the copy callback returned {type(out).__name__}, expected a statement")
    return out


def inject_copy_intrin(stmt, pragma_key, fcallback):
    """``stmt`` with each loop nest under ``pragma_<key>`` replaced by ``fcallback``'s statement."""
    key = pragma_key if pragma_key.startswith("pragma_") else "pragma_" + pragma_key
    ana = Analyzer()

    class M(IRMutator):
        def visit_For(self, s):
            if any(k == key for k, _ in s.annotations):
                return _copy_call(s, key, fcallback, ana, "InjectCopyIntrin")
            return self.generic_visit(s)

        def visit_AttrStmt(self, s):
            if s.attr_key == key and isinstance(s.body, For):
                return _copy_call(s.body, key, fcallback, ana, "InjectCopyIntrin")
            return self.generic_visit(s)
    return M().visit(stmt)

