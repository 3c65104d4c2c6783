"""LLVM code for AST3 expressions: arithmetic, comparisons, casts, vectors, loads.

Integer arithmetic on signed types of 32 bits or more carries ``nsw`` (as in
TVM), which lets LLVM widen index arithmetic and vectorise; float arithmetic
carries ``contract`` so that multiply-add pairs may fuse into FMA.  Division
follows the node: Div/Mod truncate (C), FloorDiv/FloorMod round toward -inf.
"""
from __future__ import annotations

import math

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from . import llvm_ir as L
from .llvm_types import constant, memory_type, value_type

FP_FLAGS = "contract"
_PRED = {  # node: (signed int, unsigned int / bool, float)
    "EQ": ("eq", "eq", "oeq"), "NE": ("ne", "ne", "une"), "LT": ("slt", "ult", "olt"),
    "LE": ("sle", "ule", "ole"), "GT": ("sgt", "ugt", "ogt"), "GE": ("sge", "uge", "oge"),
}


def known_multiple(e):
    """A number that ``e`` is always a multiple of (0: ``e`` is 0); used to prove alignment."""
    if isinstance(e, E.IntImm):
        return abs(e.value)
    if isinstance(e, E.Mul):
        return known_multiple(e.a) * known_multiple(e.b)
    if isinstance(e, (E.Add, E.Sub)):
        return math.gcd(known_multiple(e.a), known_multiple(e.b))
    if isinstance(e, E.Cast) and dt.is_int(e.value.dtype):
        return known_multiple(e.value)
    return 1


def _all_positive(v):
    c = v.const
    if isinstance(c, tuple):
        return all(x is not None and x > 0 for x in c)
    return c is not None and c > 0


class ExprMixin:
    """Expression visitors; needs ``self.b`` (Builder), ``self.st`` (function state)."""

    def expr(self, e):
        fn = self._expr_handlers.get(type(e))
        if fn is None:
            fn = self._find_handler(type(e), "_e_", self._expr_handlers, "expression")
        return fn(e)

    def _find_handler(self, cls, prefix, cache, what):
        for c in cls.__mro__:
            fn = getattr(self, prefix + c.__name__, None)
            if fn is not None:
                cache[cls] = fn
                return fn
        raise BuildError(f"the llvm target cannot generate code for the {what} node {cls.__name__}")

    # ------------------------------------------------------------ leaves
    def _e_Var(self, v):
        val = self.st.vars.get(v)
        if val is None:
            raise BuildError(f"{self.func_name}: variable '{v.name}' ({v.dtype}) is used but not defined: it is "
                             "neither a parameter nor bound by an enclosing loop, let or allocation")
        return val

    def _e_IntImm(self, e):
        return constant(e.dtype, e.value)

    _e_FloatImm = _e_IntImm

    def _e_StringImm(self, e):
        raise BuildError(f"{self.func_name}: string constant {e.value!r} cannot be used as a value")

    def _e_ProducerLoad(self, e):
        raise BuildError(f"{self.func_name}: found a tensor read {e.producer.name}[...] (AST1/AST2); "
                         "the llvm target needs AST3: lower the function first")

    def _e_Reduce(self, e):
        raise BuildError(f"{self.func_name}: found a Reduce node (AST1); lower the function to AST3 first")

    # ------------------------------------------------------------ helpers
    def same_lanes(self, a, b):
        la, lb = L.lanes(a.ty), L.lanes(b.ty)
        if la == lb:
            return a, b
        if la == 1:
            return self.b.splat(a, lb), b
        if lb == 1:
            return a, self.b.splat(b, la)
        raise BuildError(f"{self.func_name}: operands have different lane counts: {a.ty} and {b.ty}")

    def _operands(self, e):
        a, b = self.same_lanes(self.expr(e.a), self.expr(e.b))
        return a, b, dt.kind(e.a.dtype)

    @staticmethod
    def _int_flags(dtype):
        kind, bits, _ = dt.parse(dtype)
        return "nsw" if kind == "int" and bits >= 32 else ""

    def _arith(self, e, fop, iop):
        a, b, k = self._operands(e)
        if k == "float":
            return self.b.binop(fop, a, b, FP_FLAGS)
        return self.b.binop(iop, a, b, self._int_flags(e.a.dtype))

    # ------------------------------------------------------------ arithmetic
    def _e_Add(self, e):
        return self._arith(e, "fadd", "add")

    def _e_Sub(self, e):
        return self._arith(e, "fsub", "sub")

    def _e_Mul(self, e):
        return self._arith(e, "fmul", "mul")

    def _e_Div(self, e):
        a, b, k = self._operands(e)
        if k == "float":
            return self.b.binop("fdiv", a, b, FP_FLAGS)
        return self.b.binop("udiv" if k in ("uint", "bool") else "sdiv", a, b)

    def _e_Mod(self, e):
        a, b, k = self._operands(e)
        if k == "float":
            return self.b.binop("frem", a, b)
        return self.b.binop("urem" if k in ("uint", "bool") else "srem", a, b)

    def _floor_adjust(self, r, b):
        """i1 (per lane): the truncated remainder ``r`` needs a floor correction."""
        bl = self.b
        zero = L.zero(r.ty)
        if _all_positive(b):
            return bl.icmp("slt", r, zero)
        nonzero = bl.icmp("ne", r, zero)
        signs = bl.icmp("slt", bl.binop("xor", r, b), zero)
        return bl.binop("and", nonzero, signs)

    def _e_FloorDiv(self, e):
        a, b, k = self._operands(e)
        bl = self.b
        if k == "float":
            return self.math_call("floor", [bl.binop("fdiv", a, b, FP_FLAGS)], e.dtype)
        if k in ("uint", "bool"):
            return bl.binop("udiv", a, b)
        q = bl.binop("sdiv", a, b, hint="q")
        r = bl.binop("srem", a, b, hint="r")
        adj = bl.cast("zext", self._floor_adjust(r, b), q.ty)
        return bl.binop("sub", q, adj, hint="fdiv")

    def _e_FloorMod(self, e):
        a, b, k = self._operands(e)
        bl = self.b
        if k == "float":
            q = self.math_call("floor", [bl.binop("fdiv", a, b, FP_FLAGS)], e.dtype)
            return bl.binop("fsub", a, bl.binop("fmul", b, q, FP_FLAGS), FP_FLAGS)
        if k in ("uint", "bool"):
            return bl.binop("urem", a, b)
        r = bl.binop("srem", a, b, hint="r")
        fix = bl.select(self._floor_adjust(r, b), b, L.zero(r.ty))
        return bl.binop("add", r, fix, hint="fmod")

    def _minmax(self, e, is_min):
        a, b, k = self._operands(e)
        if k == "float":
            c = self.b.fcmp("olt" if is_min else "ogt", a, b)
        elif k in ("uint", "bool"):
            c = self.b.icmp("ult" if is_min else "ugt", a, b)
        else:
            c = self.b.icmp("slt" if is_min else "sgt", a, b)
        return self.b.select(c, a, b, hint="min" if is_min else "max")

    def _e_Min(self, e):
        return self._minmax(e, True)

    def _e_Max(self, e):
        return self._minmax(e, False)

    # ------------------------------------------------------------ logic
    def _e_CmpOp(self, e):
        a, b, k = self._operands(e)
        signed, unsigned, fl = _PRED[type(e).__name__]
        if k == "float":
            return self.b.fcmp(fl, a, b)
        return self.b.icmp(unsigned if k in ("uint", "bool", "handle") else signed, a, b)

    def as_i1(self, v, dtype):
        """``v`` as a bool value (non-zero test for numbers)."""
        if L.elem(v.ty) == "i1":
            return v
        if dt.is_float(dtype):
            return self.b.fcmp("une", v, L.zero(v.ty))
        return self.b.icmp("ne", v, L.zero(v.ty))

    def _e_And(self, e):
        a, b = self.same_lanes(self.as_i1(self.expr(e.a), e.a.dtype), self.as_i1(self.expr(e.b), e.b.dtype))
        return self.b.binop("and", a, b)

    def _e_Or(self, e):
        a, b = self.same_lanes(self.as_i1(self.expr(e.a), e.a.dtype), self.as_i1(self.expr(e.b), e.b.dtype))
        return self.b.binop("or", a, b)

    def _e_Not(self, e):
        a = self.as_i1(self.expr(e.a), e.a.dtype)
        return self.b.binop("xor", a, L.splat_const(L.const("i1", 1), L.lanes(a.ty)), hint="not")

    def _e_Select(self, e):
        c = self.as_i1(self.expr(e.condition), e.condition.dtype)
        t, f = self.same_lanes(self.expr(e.true_value), self.expr(e.false_value))
        if L.lanes(c.ty) > 1 and L.lanes(t.ty) == 1:
            t, f = self.b.splat(t, L.lanes(c.ty)), self.b.splat(f, L.lanes(c.ty))
        return self.b.select(c, t, f)

    # ------------------------------------------------------------ casts
    def _e_Cast(self, e):
        return self.cast(e.value.dtype, e.dtype, self.expr(e.value))

    def cast(self, src, dst, v):
        """Convert value ``v`` of dtype ``src`` to dtype ``dst``."""
        n = L.lanes(v.ty)
        if dt.lanes(dst) != n:
            if n != 1:
                raise BuildError(f"{self.func_name}: cannot cast {src} to {dst}: lane counts differ")
            return self.b.splat(self.cast(src, dt.element_of(dst), v), dt.lanes(dst))
        sk, sb, _ = dt.parse(src)
        dk, db, _ = dt.parse(dst)
        to = value_type(dst)
        if to == v.ty:
            return v
        bl = self.b
        if dk == "bool":
            return self.as_i1(v, src)
        if sk == "bool":
            return bl.cast("zext" if dk in ("int", "uint") else "uitofp", v, to)
        if sk in ("int", "uint") and dk in ("int", "uint"):
            if db < sb:
                return bl.cast("trunc", v, to)
            return bl.cast("sext" if sk == "int" else "zext", v, to)
        if sk in ("int", "uint") and dk == "float":
            return bl.cast("sitofp" if sk == "int" else "uitofp", v, to)
        if sk == "float" and dk in ("int", "uint"):
            return bl.cast("fptosi" if dk == "int" else "fptoui", v, to)
        if sk == "float" and dk == "float":
            if sb == 64 and db == 16:
                return bl.cast("fptrunc", self._double_to_float_odd(v), to)
            return bl.cast("fpext" if db > sb else "fptrunc", v, to)
        raise BuildError(f"{self.func_name}: cannot cast {src} to {dst}")

    def _double_to_float_odd(self, v):
        """float64 -> float32 rounded to odd, so that a further rounding to float16 is correctly rounded.

        x86 has no float64 -> float16 instruction (LLVM calls __truncdfhf2, which the JIT does not
        have); rounding to odd first makes the two-step conversion equal to the direct one.
        """
        bl = self.b
        n = L.lanes(v.ty)
        f = bl.cast("fptrunc", v, L.vec("float", n), hint="f32")
        back = bl.cast("fpext", f, v.ty)
        inexact = bl.fcmp("one", back, v, hint="inexact")
        away = bl.fcmp("ogt", self.intrinsic("llvm.fabs", v.ty, [back], [v.ty]),
                       self.intrinsic("llvm.fabs", v.ty, [v], [v.ty]), hint="away")
        it = L.vec("i32", n)
        bits = bl.cast("bitcast", f, it, hint="bits")
        bits = bl.binop("sub", bits, bl.cast("zext", away, it))          # toward zero when rounded away
        bits = bl.binop("or", bits, bl.cast("zext", inexact, it))        # sticky bit: make it odd
        return bl.cast("bitcast", bits, L.vec("float", n), hint="f32odd")

    # ------------------------------------------------------------ vectors
    def _e_Ramp(self, e):
        base, stride, n = self.expr(e.base), self.expr(e.stride), e.lanes
        t = base.ty
        if base.const is not None and stride.const is not None:
            return L.const_vector(t, [base.const + k * stride.const for k in range(n)])
        iota = L.const_vector(t, range(n))
        bl = self.b
        if L.is_float_type(t):
            return bl.binop("fadd", bl.splat(base, n), bl.binop("fmul", bl.splat(stride, n), iota, FP_FLAGS),
                            FP_FLAGS, hint="ramp")
        flags = self._int_flags(e.base.dtype)
        off = iota if stride.const == 1 else bl.binop("mul", bl.splat(stride, n), iota, flags)
        return bl.binop("add", bl.splat(base, n), off, flags, hint="ramp")

    def _e_Broadcast(self, e):
        return self.b.splat(self.expr(e.value), e.lanes)

    def _e_Let(self, e):
        value = self.expr(e.value)
        with self.bind(e.var, value):
            return self.expr(e.body)

    # ------------------------------------------------------------ memory
    def buffer_ptr(self, var):
        ptr = self.st.vars.get(var)
        if ptr is None:
            raise BuildError(f"{self.func_name}: buffer '{var.name}' is accessed but is neither a parameter "
                             "nor allocated in an enclosing Allocate")
        return ptr

    def access_align(self, var, base, elem_dtype, n):
        """Alignment in bytes of an ``n``-lane contiguous access at element ``base`` of ``var``."""
        size = dt.itemsize(elem_dtype)
        if n == 1 or var not in self.aligned:
            return size
        m = known_multiple(base)
        align = math.gcd(self.aligned[var], m * size) if m else self.aligned[var]
        align = min(align, size * n)
        return max(size, 1 << (align.bit_length() - 1))  # LLVM needs a power of two

    def active_mask(self, n, predicate):
        """The lanes a vector access may touch: the load/store predicate and enclosing vector conditions."""
        mask = None
        for m in self.st.masks:
            if L.lanes(m.ty) == n:
                mask = m if mask is None else self.b.binop("and", mask, m)
        if predicate is not None:
            p = self.as_i1(self.expr(predicate), predicate.dtype)
            if L.lanes(p.ty) == 1:
                p = self.b.splat(p, n)
            mask = p if mask is None else self.b.binop("and", mask, p)
        return mask

    def _e_Load(self, e):
        ptr = self.buffer_ptr(e.buffer_var)
        elem = dt.element_of(e.dtype)
        buf_elem = access_elem(self.buf_elem.get(e.buffer_var, elem), elem)
        n = dt.lanes(e.dtype)
        mty = memory_type(e.dtype)
        bl = self.b
        index = e.index
        if n == 1:
            if dt.lanes(index.dtype) != 1:
                raise BuildError(f"{self.func_name}: scalar load of {e.buffer_var.name} has a vector index")
            if e.predicate is not None:
                return self._guarded_scalar_load(e, ptr, buf_elem)
            addr = bl.gep(memory_type(buf_elem), ptr, self.expr(index))
            v = bl.load(mty, addr, self.access_align(e.buffer_var, index, buf_elem, 1))
            return self.from_memory(e.dtype, v)
        mask = self.active_mask(n, e.predicate)
        if isinstance(index, E.Ramp) and index.lanes == n and _is_one(index.stride):
            align = self.access_align(e.buffer_var, index.base, buf_elem, n)
            addr = bl.gep(memory_type(buf_elem), ptr, self.expr(index.base), inbounds=mask is None)
            if mask is None:
                v = bl.load(mty, addr, align)
            else:
                v = self.intrinsic("llvm.masked.load", mty, [addr, L.const("i32", align), mask, L.zero(mty)],
                                   [mty, "ptr"])
            return self.from_memory(e.dtype, v)
        if dt.lanes(index.dtype) != n:
            raise BuildError(f"{self.func_name}: {n}-lane load of {e.buffer_var.name} needs a {n}-lane index, "
                             f"got {index.dtype}")
        if mask is not None and isinstance(index, E.Broadcast) and dt.lanes(index.value.dtype) == 1 and \
                dt.lanes(e.dtype) == index.lanes and not dt.is_bool(e.dtype):
            # one address read under a mask (a broadcast operand in a guarded tile): a scalar load when any
            # lane is active, not a gather (llvm.masked.gather is a slow instruction, or a loop over the lanes)
            anyl = self.intrinsic("llvm.vector.reduce.or", "i1", [mask], [mask.ty])
            v = self._guarded_scalar_load(e, ptr, buf_elem, anyl, index.value)
            return self.b.select(mask, self.b.splat(v, n), L.zero(mty))
        addrs = bl.gep(memory_type(buf_elem), ptr, self.expr(index), inbounds=False)
        if mask is None:
            mask = L.splat_const(L.const("i1", 1), n)
        v = self.intrinsic("llvm.masked.gather", mty,
                           [addrs, L.const("i32", dt.itemsize(buf_elem)), mask, L.zero(mty)], [mty, addrs.ty])
        return self.from_memory(e.dtype, v)

    def _guarded_scalar_load(self, e, ptr, buf_elem, p=None, index=None):
        """A scalar load with a predicate (or the i1 ``p``, of element ``index``): read only when it holds,
        else 0."""
        bl = self.b
        if p is None:
            p = self.as_i1(self.expr(e.predicate), e.predicate.dtype)
        elem_dtype = dt.element_of(e.dtype)
        pre = bl.block
        then, done = bl.new_block("ld_then"), bl.new_block("ld_done")
        bl.cbr(p, then, done)
        bl.position(then)
        addr = bl.gep(memory_type(buf_elem), ptr, self.expr(e.index if index is None else index))
        v = self.from_memory(elem_dtype, bl.load(memory_type(elem_dtype), addr, dt.itemsize(buf_elem)))
        end = bl.block
        bl.br(done)
        bl.position(done)
        phi = bl.phi(v.ty)
        phi.incoming += [(v, end), (L.zero(v.ty), pre)]
        return L.Value(v.ty, phi.name)

    def from_memory(self, dtype, v):
        return self.b.icmp("ne", v, L.zero(v.ty)) if dt.is_bool(dtype) else v

    def to_memory(self, dtype, v):
        return self.b.cast("zext", v, memory_type(dtype)) if dt.is_bool(dtype) else v


def _is_one(x):
    return isinstance(x, E.IntImm) and x.value == 1


def access_elem(buf_elem, elem):
    """The element type an access indexes by: the buffer's, unless the access reads a type of
    another size (memory StorageRewrite shares between types), whose index counts its own elements."""
    if buf_elem != elem and dt.bits(buf_elem) != dt.bits(elem) and not (dt.is_bool(buf_elem) or dt.is_bool(elem)):
        return elem
    return buf_elem
