"""LLVM code for ``Call`` nodes: math intrinsics, bit operations, if_then_else.

Math goes through LLVM intrinsics where they exist (llvm.exp, llvm.sqrt, ...;
vector forms included, which LLVM expands per lane when the CPU has no vector
instruction); the rest calls libm (tanhf, erff, ...) once per lane.  float16
math is computed in float32 and rounded back, as numpy does.

``round`` is ``llvm.round`` (halfway cases away from zero, C's round, as in
TVM); ``nearbyint`` rounds halfway cases to even (numpy's ``np.round``).
"""
from __future__ import annotations

import struct

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from . import llvm_ir as L
from .llvm_expr import FP_FLAGS
from .llvm_types import constant, intrinsic_suffix, value_type

_LLVM_UNARY = {
    "exp": "exp", "exp2": "exp2", "exp10": "exp10", "log": "log", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "round", "nearbyint": "nearbyint", "sin": "sin", "cos": "cos",
}
_LLVM_BINARY = {"pow": "pow", "copysign": "copysign"}
_LIBM_UNARY = ("tan", "sinh", "cosh", "asin", "acos", "atan", "tanh", "erf", "erfc", "log1p", "expm1",
               "cbrt", "asinh", "acosh", "atanh")
_LIBM_BINARY = ("atan2", "hypot", "nextafter")
_BITWISE = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor", "shift_left": "shl"}


def _f32(v):
    """``v`` rounded to the nearest float32 (LLVM float constants must be exact)."""
    return struct.unpack("<f", struct.pack("<f", v))[0] if abs(v) != float("inf") else v


class IntrinMixin:
    """Call handling; needs ExprMixin."""

    # ------------------------------------------------------------ declarations
    def intrinsic(self, name, ret, args, overloads):
        """Call LLVM intrinsic ``name`` overloaded on ``overloads`` (LLVM types)."""
        full = ".".join([name] + [intrinsic_suffix(t) for t in overloads])
        self.module.declare(full, ret, [a.ty for a in args])
        return self.b.call(ret, full, args, hint=name.split(".")[-1])

    def libm(self, name, args):
        """Call libm function ``name`` (float suffix for float32), lane by lane for vectors."""
        t = L.elem(args[0].ty)
        fname = name + ("f" if t == "float" else "")
        self.module.declare(fname, t, [t] * len(args), "nounwind")
        n = L.lanes(args[0].ty)
        if n == 1:
            return self.b.call(t, fname, args, hint=name)
        out = L.poison(args[0].ty)
        for k in range(n):
            lane = [self.b.extract(a, k) for a in args]
            out = self.b.insert(out, self.b.call(t, fname, lane, hint=name), k)
        return out

    def _promote(self, args):
        """float16 operands as float32 (libm and most intrinsics have no half form)."""
        if L.elem(args[0].ty) != "half":
            return args, None
        ft = L.vec("float", L.lanes(args[0].ty))
        return [self.b.cast("fpext", a, ft) for a in args], args[0].ty

    def math_call(self, op, args, dtype):
        """Float math ``op`` on LLVM values ``args`` of float dtype ``dtype``."""
        if not dt.is_float(dtype):
            raise BuildError(f"{self.func_name}: {op} needs a float argument, got {dtype}")
        args, half = self._promote(args)
        t = args[0].ty
        bl = self.b
        vec32 = L.elem(t) == "float" and L.lanes(t) > 1
        if op == "exp" and vec32:
            r = self.vector_expf(args[0])
        elif op == "tanh" and vec32:
            r = self.vector_tanhf(args[0])
        elif op == "sigmoid" and vec32:
            one = L.splat_const(L.const("float", 1.0), L.lanes(t))
            ex = self.vector_expf(bl.fneg(args[0]))
            r = bl.binop("fdiv", one, bl.binop("fadd", one, ex, FP_FLAGS), FP_FLAGS, hint="sigmoid")
        elif op in _LLVM_UNARY:
            r = self.intrinsic("llvm." + _LLVM_UNARY[op], t, args[:1], [t])
        elif op in _LLVM_BINARY:
            r = self.intrinsic("llvm." + _LLVM_BINARY[op], t, args[:2], [t])
        elif op in _LIBM_UNARY or op in _LIBM_BINARY:
            r = self.libm(op, args)
        elif op == "rsqrt":
            r = bl.binop("fdiv", L.splat_const(L.const(L.elem(t), 1.0), L.lanes(t)),
                         self.intrinsic("llvm.sqrt", t, args[:1], [t]), FP_FLAGS, hint="rsqrt")
        elif op == "sigmoid":
            one = L.splat_const(L.const(L.elem(t), 1.0), L.lanes(t))
            ex = self.intrinsic("llvm.exp", t, [bl.fneg(args[0])], [t])
            r = bl.binop("fdiv", one, bl.binop("fadd", one, ex, FP_FLAGS), FP_FLAGS, hint="sigmoid")
        elif op == "fmod":
            r = bl.binop("frem", args[0], args[1], hint="fmod")
        else:
            raise BuildError(f"{self.func_name}: unknown float intrinsic {op!r}")
        return bl.cast("fptrunc", r, half) if half else r

    def vector_expf(self, x):
        """exp of a float32 vector, inline: LLVM would call expf once per lane.

        Cephes' expf: n = round(x / ln 2), r = x - n ln 2 (in two parts), a degree-7
        polynomial for exp(r), scaled by 2^n as two factors so that results down to the
        smallest subnormal and up to FLT_MAX are exact powers (error about 1 ulp).
        Above ln(FLT_MAX) gives inf, below ln(smallest subnormal) 0, NaN stays NaN.
        """
        bl = self.b
        t = x.ty
        n = L.lanes(t)
        it = L.vec("i32", n)

        def c(v):
            return L.splat_const(L.const("float", _f32(v)), n)

        def ci(v):
            return L.splat_const(L.const("i32", v), n)

        hi, lo = 88.72283935546875, -103.97207708
        xc = bl.select(bl.fcmp("olt", x, c(lo)), c(lo), x)
        xc = bl.select(bl.fcmp("ogt", xc, c(hi)), c(hi), xc, hint="xc")
        k = self.intrinsic("llvm.rint", t, [bl.binop("fmul", xc, c(1.44269504088896341))], [t])
        r = self.intrinsic("llvm.fma", t, [k, c(-0.693359375), xc], [t])
        r = self.intrinsic("llvm.fma", t, [k, c(2.12194440e-4), r], [t])
        p = c(1.9875691500e-4)
        for coef in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
            p = self.intrinsic("llvm.fma", t, [p, r, c(coef)], [t])
        p = self.intrinsic("llvm.fma", t, [p, bl.binop("fmul", r, r), r], [t])
        p = bl.binop("fadd", p, c(1.0), hint="poly")
        ki = bl.cast("fptosi", k, it)
        k1 = bl.binop("ashr", ki, ci(1))
        k2 = bl.binop("sub", ki, k1)
        for part in (k1, k2):
            scale = bl.cast("bitcast", bl.binop("shl", bl.binop("add", part, ci(127)), ci(23)), t)
            p = bl.binop("fmul", p, scale)
        p = bl.select(bl.fcmp("ogt", x, c(hi)), c(float("inf")), p)
        p = bl.select(bl.fcmp("olt", x, c(lo)), c(0.0), p)
        return bl.select(bl.fcmp("uno", x, x), x, p, hint="exp")

    def vector_tanhf(self, x):
        """tanh of a float32 vector, inline (libm's tanhf would be called once per lane; an LSTM step is
        mostly its gates' tanh and sigmoid).

        Cephes' tanhf: below |x| = 0.625 an odd polynomial x + x^3 P(x^2) (no cancellation near 0), above it
        1 - 2 / (exp(2|x|) + 1); the sign of x (-0 stays -0; exp overflowing to inf gives exactly 1).  About 2 ulp;
        NaN stays NaN.
        """
        bl = self.b
        t = x.ty
        n = L.lanes(t)

        def c(v):
            return L.splat_const(L.const("float", _f32(v)), n)

        ax = self.intrinsic("llvm.fabs", t, [x], [t])
        z = bl.binop("fmul", x, x)
        p = c(-5.70498872745e-3)
        for coef in (2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1):
            p = self.intrinsic("llvm.fma", t, [p, z, c(coef)], [t])
        small = self.intrinsic("llvm.fma", t, [bl.binop("fmul", p, z), x, x], [t])
        e = self.vector_expf(bl.binop("fadd", ax, ax))
        big = bl.binop("fsub", c(1.0), bl.binop("fdiv", c(2.0), bl.binop("fadd", e, c(1.0))))
        r = bl.select(bl.fcmp("olt", ax, c(0.625)), small, big)
        return self.intrinsic("llvm.copysign", t, [r, x], [t])

    # ------------------------------------------------------------ Call nodes
    def _e_Call(self, e):
        op = e.op[4:] if e.op.startswith("tir.") else e.op
        special = getattr(self, "_call_" + op, None)
        if special is not None:
            return special(e)
        if op in _BITWISE:
            a, b = self.same_lanes(self.expr(e.args[0]), self.expr(e.args[1]))
            return self.b.binop(_BITWISE[op], a, b, hint=op)
        if op in _LLVM_UNARY or op in _LLVM_BINARY or op in _LIBM_UNARY or op in _LIBM_BINARY \
                or op in ("rsqrt", "sigmoid", "fmod"):
            args = [self.expr(a) for a in e.args]
            if len(args) == 2:
                args = list(self.same_lanes(*args))
            return self.math_call(op, args, e.args[0].dtype)
        raise BuildError(f"{self.func_name}: intrinsic {e.op!r} is not supported by the llvm target; "
                         f"supported: {', '.join(supported_intrinsics())}")

    def _call_likely(self, e):
        return self.expr(e.args[0])

    def _call_abs(self, e):
        x = self.expr(e.args[0])
        k = dt.kind(e.args[0].dtype)
        if k == "float":
            return self.math_call("fabs", [x], e.args[0].dtype)
        if k in ("uint", "bool"):
            return x
        neg = self.b.binop("sub", L.zero(x.ty), x)
        return self.b.select(self.b.icmp("slt", x, L.zero(x.ty)), neg, x, hint="abs")

    def _call_isnan(self, e):
        x = self.expr(e.args[0])
        if not dt.is_float(e.args[0].dtype):
            return constant(dt.bool_like(e.args[0].dtype), False)
        return self.b.fcmp("uno", x, x, hint="isnan")

    def _finite_test(self, e, pred):
        x = self.expr(e.args[0])
        if not dt.is_float(e.args[0].dtype):
            return constant(dt.bool_like(e.args[0].dtype), pred == "olt")
        ax = self.intrinsic("llvm.fabs", x.ty, [x], [x.ty])
        inf = L.splat_const(L.const(L.elem(x.ty), float("inf")), L.lanes(x.ty))
        return self.b.fcmp(pred, ax, inf)

    def _call_isinf(self, e):
        return self._finite_test(e, "oeq")

    def _call_isfinite(self, e):
        return self._finite_test(e, "olt")

    def _call_bitwise_not(self, e):
        x = self.expr(e.args[0])
        return self.b.binop("xor", x, L.splat_const(L.const(L.elem(x.ty), -1), L.lanes(x.ty)), hint="not")

    def _call_shift_right(self, e):
        a, b = self.same_lanes(self.expr(e.args[0]), self.expr(e.args[1]))
        return self.b.binop("lshr" if dt.is_uint(e.args[0].dtype) else "ashr", a, b, hint="shr")

    def _call_popcount(self, e):
        x = self.expr(e.args[0])
        r = self.intrinsic("llvm.ctpop", x.ty, [x], [x.ty])
        return self.cast(e.args[0].dtype, e.dtype, r)

    def _call_reinterpret(self, e):
        x = self.expr(e.args[0])
        if dt.itemsize(e.dtype) != dt.itemsize(e.args[0].dtype) or dt.is_bool(e.dtype):
            raise BuildError(f"{self.func_name}: reinterpret needs types of one size, got "
                             f"{e.args[0].dtype} -> {e.dtype}")
        return self.b.cast("bitcast", x, value_type(e.dtype))

    def _call_call_extern(self, e):
        if not e.args or not isinstance(e.args[0], E.StringImm):
            raise BuildError(f"{self.func_name}: {e.op} needs the function name (a string) as first argument")
        args = [self.expr(a) for a in e.args[1:]]
        ret = "void" if dt.is_handle(e.dtype) else value_type(e.dtype)
        self.module.declare(e.args[0].value, ret, [a.ty for a in args])
        r = self.b.call(ret, e.args[0].value, args, hint="ext")
        return r if r is not None else L.const("i32", 0)

    _call_call_pure_extern = _call_call_extern

    def _call_tvm_call_packed(self, e):
        """``tir.call_packed``: a registered Python function, through the runtime's trampoline."""
        from .llvm_packed import emit_call_packed
        return emit_call_packed(self, e)

    def _call_tvm_access_ptr(self, e):
        """``&data[offset]`` (``Buffer.access_ptr``): a pointer a C function can take."""
        from .llvm_types import memory_type
        data = e.args[1]
        elem = self.buf_elem.get(data, e.args[0].value if isinstance(e.args[0], E.StringImm) else "float32")
        return self.b.gep(memory_type(elem), self.buffer_ptr(data), self.expr(e.args[2]), inbounds=False)

    def _call_address_of(self, e):
        """``&buffer[index]`` of a scalar load."""
        from .llvm_types import memory_type
        ld = e.args[0]
        if not isinstance(ld, E.Load) or dt.lanes(ld.index.dtype) != 1:
            raise BuildError(f"{self.func_name}: address_of needs a scalar load, got {ld!r}")
        elem = self.buf_elem.get(ld.buffer_var, dt.element_of(ld.dtype))
        return self.b.gep(memory_type(elem), self.buffer_ptr(ld.buffer_var), self.expr(ld.index),
                          inbounds=False)

    def _call_prefetch(self, e):
        """``prefetch(address, rw, locality, cache)``: LLVM's prefetch hint (never faults)."""
        addr = self.expr(e.args[0])
        flags = [L.const("i32", int(a.value)) for a in e.args[1:4]]
        self.intrinsic("llvm.prefetch", "void", [addr] + flags, [addr.ty])
        return L.const("i32", 0)

    def _call_if_then_else(self, e):
        """Evaluate only the taken branch: branches and a phi (a vector condition masks memory instead)."""
        cond_e, t_e, f_e = e.args
        c = self.as_i1(self.expr(cond_e), cond_e.dtype)
        bl = self.b
        if L.lanes(c.ty) > 1:
            self.st.masks.append(c)
            try:
                t = self.expr(t_e)
                self.st.masks[-1] = bl.binop("xor", c, L.splat_const(L.const("i1", 1), L.lanes(c.ty)))
                f = self.expr(f_e)
            finally:
                self.st.masks.pop()
            t, f = self.same_lanes(t, f)
            return bl.select(c, t, f, hint="ite")
        then, other, done = bl.new_block("if_true"), bl.new_block("if_false"), bl.new_block("if_done")
        bl.cbr(c, then, other)
        bl.position(then)
        t = self.expr(t_e)
        t_end = bl.block
        bl.position(other)
        f = self.expr(f_e)
        t_pos, f_end = t_end, bl.block
        if L.lanes(t.ty) != L.lanes(f.ty):      # splat in the branch that needs it
            if L.lanes(t.ty) == 1:
                bl.position(t_pos)
                t = bl.splat(t, L.lanes(f.ty))
            else:
                f = bl.splat(f, L.lanes(t.ty))
        bl.position(f_end)
        bl.br(done)
        bl.position(t_pos)
        bl.br(done)
        bl.position(done)
        phi = bl.phi(t.ty, hint="ite")
        phi.incoming += [(t, t_pos), (f, f_end)]
        return L.Value(t.ty, phi.name)


def supported_intrinsics():
    names = set(_LLVM_UNARY) | set(_LLVM_BINARY) | set(_LIBM_UNARY) | set(_LIBM_BINARY) | set(_BITWISE)
    names |= {n[6:] for n in dir(IntrinMixin) if n.startswith("_call_")}
    names |= {"rsqrt", "sigmoid", "fmod"}
    return sorted(names)
