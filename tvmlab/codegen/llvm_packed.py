"""LLVM code for ``tir.call_packed``: fill a stack array of 64-bit values, call the runtime's trampoline.

The layout of the values and the meaning of a call site are described in
``tvmlab.runtime.packed``.  A non-zero return makes the generated function
return an error code whose kind, ``packed:<site>``, lets the runtime raise
the exception the packed function raised.
"""
from __future__ import annotations

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from ..runtime import packed
from . import llvm_ir as L
from .llvm_types import memory_type, value_type


def _to_i64(cg, v, dtype):
    b = cg.b
    kind = dt.kind(dtype)
    if kind == "float":
        d = v if v.ty == "double" else b.cast("fpext", v, "double")
        return b.cast("bitcast", d, "i64"), ("float", dtype)
    if kind == "bool":
        x = v if v.ty != "i1" else b.cast("zext", v, "i8")
        return b.cast("zext", x, "i64"), ("bool",)
    if kind == "handle":
        return b.cast("ptrtoint", v, "i64"), ("handle",)
    if v.ty == "i64":
        return v, ("int", dtype)
    return b.cast("zext" if kind == "uint" else "sext", v, "i64"), ("int", dtype)


def emit_call_packed(cg, e):
    """Code for ``Call("tvm_call_packed", (name, *args))``; returns the call's value (the function's int)."""
    if not e.args or not isinstance(e.args[0], E.StringImm):
        raise BuildError(f"{cg.func_name}: call_packed needs the function name (a string) first")
    name = e.args[0].value
    kinds, slots = [], [L.const("i64", 0)]        # slot 0: the return value
    for k, a in enumerate(e.args[1:], 1):
        if isinstance(a, E.StringImm):
            kinds.append(("str", a.value))
        elif isinstance(a, E.Call) and a.op == "tvm_stack_make_array":
            data, dtype, offset, dims = a.args[0], a.args[1].value, a.args[2], a.args[3:]
            ndim = len(dims) // 2
            ptr = cg.buffer_ptr(data)
            if not (isinstance(offset, E.IntImm) and offset.value == 0):
                ptr = cg.b.gep(memory_type(dtype), ptr, cg.expr(offset), inbounds=False)
            slots.append(cg.b.cast("ptrtoint", ptr, "i64"))
            for d in dims:
                slots.append(_to_i64(cg, cg.expr(d), d.dtype)[0])
            kinds.append(("buffer", dtype, ndim))
        else:
            if dt.lanes(a.dtype) != 1:
                raise BuildError(f"{cg.func_name}: call_packed {name!r}: argument {k} is a vector ({a.dtype}); "
                                 "call it outside vectorized loops")
            v, kind = _to_i64(cg, cg.expr(a), a.dtype)
            slots.append(v)
            kinds.append(kind)
    packed.ensure_symbol()
    site = packed.register_site(name, kinds)
    arr = cg.b.alloca(f"[{max(1, len(slots))} x i64]", 8, hint="packed_args")
    for k, v in enumerate(slots):
        p = cg.b.gep("i64", arr, L.const("i32", k))
        cg.b.store(v, p, 8)
    cg.module.declare(packed.SYMBOL, "i32", ["i32", "ptr"])
    rc = cg.b.call("i32", packed.SYMBOL, [L.const("i32", site), arr], hint="rc")
    code = cg.error_code(f"packed:{site}", f"packed function {name!r} failed")
    cg.branch_fail(cg.b.icmp("eq", rc, L.const("i32", 0)), code)
    ret = cg.b.load("i64", arr, 8, hint="packed_ret")
    want = value_type(e.dtype)
    return ret if want == "i64" else cg.b.cast("trunc", ret, want)
