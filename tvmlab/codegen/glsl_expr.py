"""GLSL text for AST3 expressions, shared by the fragment- and compute-shader generators.

GLSL has no vectors of our kind here, no 64-bit types and undefined integer
``/`` and ``%`` for negative operands, so: only float32 / int32 / uint32 /
bool scalars are accepted (anything else is a BuildError naming the dtype),
and floor/trunc division go through small helper functions unless both
operands are provably non-negative.  Loads are printed by the owner through
``load(expr) -> str``; variables through ``name_of(var) -> str``.
"""
from __future__ import annotations

import math
import struct

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E

GLSL_TYPES = {"float32": "float", "int32": "int", "uint32": "uint", "bool": "bool"}

RESERVED = frozenset("""
attribute const uniform varying buffer shared coherent volatile restrict readonly writeonly layout
centroid flat smooth noperspective patch sample break continue do for while switch case default if
else subroutine in out inout float double int void bool true false invariant precise discard return
mat2 mat3 mat4 vec2 vec3 vec4 ivec2 ivec3 ivec4 bvec2 bvec3 bvec4 uint uvec2 uvec3 uvec4 lowp mediump
highp precision sampler1D sampler2D sampler3D samplerCube isampler2D usampler2D sampler2DArray struct
common partition active asm class union enum typedef template this resource goto inline noinline
public static extern external interface long short half fixed unsigned superp input output sizeof
cast namespace using main texture texelFetch min max abs exp log sqrt pow floor ceil
""".split())

HELPERS = {
    "tl_floordiv": "int tl_floordiv(int a, int b) { int q = a / b; return (q * b != a && ((a < 0) != (b < 0))) "
                   "? q - 1 : q; }",
    "tl_floormod": "int tl_floormod(int a, int b) { int r = a - (a / b) * b; return (r != 0 && ((r < 0) != "
                   "(b < 0))) ? r + b : r; }",
    "tl_truncdiv": "int tl_truncdiv(int a, int b) { int q = abs(a) / abs(b); return ((a < 0) != (b < 0)) ? -q : q; }",
    "tl_truncmod": "int tl_truncmod(int a, int b) { return a - tl_truncdiv(a, b) * b; }",
    "tl_erf": "float tl_erf(float x) { float t = 1.0 / (1.0 + 0.3275911 * abs(x)); float y = 1.0 - (((((1.061405429 "
              "* t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-x * x); "
              "return sign(x) * y; }",
    "tl_tanh": "float tl_tanh(float x) { float e = exp(-2.0 * abs(x)); return sign(x) * (1.0 - e) / (1.0 + e); }",
    # bitCount needs GLSL 4.00; fragment shaders are 330
    "tl_popcount": "int tl_popcount(uint v) { v = v - ((v >> 1u) & 0x55555555u); v = (v & 0x33333333u) + "
                   "((v >> 2u) & 0x33333333u); return int((((v + (v >> 4u)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24u); }",
}
_HELPER_DEPS = {"tl_truncmod": ("tl_truncdiv",)}

_BIN = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">",
        E.GE: ">=", E.And: "&&", E.Or: "||"}
_MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "rsqrt": "inversesqrt",
         "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "round", "nearbyint": "roundEven",
         "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
         "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
         "fabs": "abs", "pow": "pow", "atan2": "atan", "isnan": "isnan", "isinf": "isinf"}
_BITS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "shift_left": "<<", "shift_right": ">>"}


def glsl_type(dtype, what):
    """The GLSL scalar type for ``dtype``; ``what`` names the value in the error."""
    t = GLSL_TYPES.get(dtype)
    if t is None:
        if dt.lanes(dtype) > 1:
            raise BuildError(f"{what} has vector type {dtype}; the OpenGL target has no vector "
                             "lanes (do not vectorize for it)")
        raise BuildError(f"{what} has dtype {dtype}, which the OpenGL target does not support; "
                         f"supported: {', '.join(GLSL_TYPES)}")
    return t


def float_literal(v):
    """A GLSL float literal that reads back as the same float32 (inf and nan by bit pattern)."""
    if math.isnan(v) or math.isinf(v):
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        return f"uintBitsToFloat({bits:#010x}u)"
    v32 = struct.unpack("<f", struct.pack("<f", v))[0]
    text = repr(v32)
    for digits in range(6, 10):
        short = f"{v32:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(short)))[0] == v32:
            text = short
            break
    if "e" not in text and "." not in text and "inf" not in text:
        text += ".0"
    return text


def int_literal(v, dtype):
    if dtype == "bool":
        return "true" if v else "false"
    if dtype == "uint32":
        return f"{v & 0xFFFFFFFF}u"
    if v == -2**31:
        return "(-2147483647 - 1)"
    return f"({v})" if v < 0 else str(v)


class Names:
    """Unique GLSL identifiers for IR variables and buffers."""

    def __init__(self):
        self._names = {}
        self._used = set()

    def fresh(self, hint):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        if base.startswith("gl_") or base.startswith("tl_") or "__" in base:
            base = "v_" + base.replace("__", "_")
        name, k = base, 1
        while name in self._used or name in RESERVED:
            name = f"{base}_{k}"
            k += 1
        self._used.add(name)
        return name

    def of(self, key, hint):
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = self.fresh(hint)
        return name

    def get(self, key):
        return self._names.get(key)


class ExprPrinter:
    """Prints one expression; needs ``self.names``, ``self.ana`` (an Analyzer), ``self.helpers``
    (a set) and ``self.load(expr)`` from the owner."""

    def expr(self, e):
        fn = getattr(self, "_e_" + type(e).__name__, None)
        if fn is None:
            raise BuildError(f"{self.where}: the OpenGL target cannot generate {type(e).__name__} "
                             f"expressions ({e})")
        return fn(e)

    def type_of(self, e):
        return glsl_type(e.dtype, f"{self.where}: expression {e}")

    def use_helper(self, name):
        for d in _HELPER_DEPS.get(name, ()):
            self.helpers.add(d)
        self.helpers.add(name)
        return name

    def _e_IntImm(self, e):
        self.type_of(e)
        return int_literal(e.value, e.dtype)

    def _e_FloatImm(self, e):
        self.type_of(e)
        return float_literal(e.value)

    def _e_Var(self, e):
        name = self.names.get(e)
        if name is None:
            raise BuildError(f"{self.where}: variable {e.name} is not defined in the shader")
        return name

    _e_SizeVar = _e_Var

    def _e_Cast(self, e):
        t = self.type_of(e)
        v = self.expr(e.value)
        return v if e.value.dtype == e.dtype else f"{t}({v})"

    def _binary(self, e):
        self.type_of(e.a)
        return f"({self.expr(e.a)} {_BIN[type(e)]} {self.expr(e.b)})"

    _e_Add = _e_Sub = _e_Mul = _e_EQ = _e_NE = _e_LT = _e_LE = _e_GT = _e_GE = _e_And = _e_Or = _binary

    def _e_Not(self, e):
        return f"(!{self.expr(e.a)})"

    def _nonneg(self, *xs):
        return all(self.ana.can_prove(x >= 0) for x in xs)

    def _e_Div(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype) or dt.is_uint(e.dtype) or self._nonneg(e.a, e.b):
            return f"({a} / {b})"
        return f"{self.use_helper('tl_truncdiv')}({a}, {b})"

    def _e_Mod(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return f"({a} - {b} * trunc({a} / {b}))"
        if dt.is_uint(e.dtype) or self._nonneg(e.a, e.b):
            return f"({a} % {b})"
        return f"{self.use_helper('tl_truncmod')}({a}, {b})"

    def _e_FloorDiv(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return f"floor({a} / {b})"
        if dt.is_uint(e.dtype) or self._nonneg(e.a, e.b):
            return f"({a} / {b})"
        return f"{self.use_helper('tl_floordiv')}({a}, {b})"

    def _e_FloorMod(self, e):
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return f"({a} - {b} * floor({a} / {b}))"
        if dt.is_uint(e.dtype) or self._nonneg(e.a, e.b):
            return f"({a} % {b})"
        return f"{self.use_helper('tl_floormod')}({a}, {b})"

    def _e_Min(self, e):
        self.type_of(e)
        return f"min({self.expr(e.a)}, {self.expr(e.b)})"

    def _e_Max(self, e):
        self.type_of(e)
        return f"max({self.expr(e.a)}, {self.expr(e.b)})"

    def _e_Select(self, e):
        self.type_of(e)
        return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"

    def _e_Load(self, e):
        self.type_of(e)
        if e.predicate is not None and not (isinstance(e.predicate, E.IntImm) and e.predicate.value):
            raise BuildError(f"{self.where}: predicated loads are not supported by the OpenGL target")
        return self.load(e)

    def _e_Ramp(self, e):
        raise BuildError(f"{self.where}: vector index {e} (from vectorize); the OpenGL target has no "
                         "vector lanes, do not vectorize for it")

    _e_Broadcast = _e_Ramp

    def _e_Call(self, e):
        op = e.op[4:] if e.op.startswith("tir.") else e.op
        args = e.args
        if op == "likely":
            return self.expr(args[0])
        if op == "if_then_else":
            self.type_of(e)
            return f"({self.expr(args[0])} ? {self.expr(args[1])} : {self.expr(args[2])})"
        if op in _BITS:
            self.type_of(e)
            return f"({self.expr(args[0])} {_BITS[op]} {self.expr(args[1])})"
        if op == "bitwise_not":
            return f"(~{self.expr(args[0])})"
        if op == "abs":
            return f"abs({self.expr(args[0])})"
        if op in ("call_extern", "call_pure_extern"):
            self.type_of(e)
            return f"{args[0].value}({', '.join(self.expr(a) for a in args[1:])})"
        if op == "popcount":
            return f"{self.type_of(e)}({self.use_helper('tl_popcount')}(uint({self.expr(args[0])})))"
        if op == "isfinite":
            x = self.expr(args[0])
            return f"(!(isnan({x}) || isinf({x})))"
        if op == "reinterpret":
            src, dst = args[0].dtype, e.dtype
            fn = {("float32", "int32"): "floatBitsToInt", ("float32", "uint32"): "floatBitsToUint",
                  ("int32", "float32"): "intBitsToFloat", ("uint32", "float32"): "uintBitsToFloat",
                  ("int32", "uint32"): "uint", ("uint32", "int32"): "int"}.get((src, dst))
            if fn is None:
                raise BuildError(f"{self.where}: cannot reinterpret {src} as {dst} in GLSL")
            return f"{fn}({self.expr(args[0])})"
        if not dt.is_float(e.dtype) and op not in ("isnan", "isinf"):
            raise BuildError(f"{self.where}: intrinsic {op!r} on {e.dtype} is not supported by the "
                             "OpenGL target")
        if op in ("isnan", "isinf") and not dt.is_float(args[0].dtype):
            return "false"
        xs = [self.expr(a) for a in args]
        for a in args:
            self.type_of(a)
        if op in _MATH:
            return f"{_MATH[op]}({', '.join(xs)})"
        if op == "tanh":
            return f"{self.use_helper('tl_tanh')}({xs[0]})"
        if op == "erf":
            return f"{self.use_helper('tl_erf')}({xs[0]})"
        if op == "sigmoid":
            return f"(1.0 / (1.0 + exp(-{xs[0]})))"
        if op == "exp10":
            return f"pow(10.0, {xs[0]})"
        if op == "log10":
            return f"(log2({xs[0]}) * 0.30102999566)"
        if op == "log1p":
            return f"log(1.0 + {xs[0]})"
        if op == "expm1":
            return f"(exp({xs[0]}) - 1.0)"
        if op == "fmod":
            return f"({xs[0]} - {xs[1]} * trunc({xs[0]} / {xs[1]}))"
        if op == "copysign":
            return (f"(abs({xs[0]}) * (({xs[1]} < 0.0 || (({xs[1]}) == 0.0 && floatBitsToInt({xs[1]}) < 0))"
                    " ? -1.0 : 1.0))")
        if op == "hypot":
            return f"length(vec2({xs[0]}, {xs[1]}))"
        raise BuildError(f"{self.where}: intrinsic {op!r} is not supported by the OpenGL target")


def helper_source(helpers):
    """The GLSL text of the helper functions used, in dependency order."""
    order = [h for h in HELPERS if h in helpers]
    return "\n".join(HELPERS[h] for h in order)


def shader_source(preamble, declarations, helpers, body):
    """One shader's GLSL: version and comment lines, declarations, the helpers used, ``main()``."""
    src = list(preamble) + list(declarations)
    text = helper_source(helpers)
    if text:
        src.append(text)
    src += ["void main() {", *body, "}"]
    return "\n".join(src) + "\n"
