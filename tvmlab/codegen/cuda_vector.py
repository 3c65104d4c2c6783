"""Vector code for the CUDA target: which vector bodies it prints, and how.

A vector Load or Store whose index is ``Ramp(base, 1, lanes)`` is one wide access,
``*(float4*)(A + base)``, where ``base`` is provably a multiple of the lanes (tvmlab's analyzer, with the
kernel's thread extents and loop ranges); buffers from the host are allocated aligned (``cuMemAlloc``:
256 bytes), and ``__shared__`` / local arrays accessed so are declared ``__align__`` the access width
(``__shared__`` arrays 16 bytes at least, so NVRTC may merge aligned scalar reads into wide ones).
Where alignment cannot be proved, the lanes are scalar accesses (correct, just not wide).

Arithmetic prints lane by lane: each vector expression is expanded into one scalar expression per lane,
printed by the ordinary scalar printer; a wide load or a broadcast scalar is first held in a temporary,
so ``B[ramp] = A[ramp] * 2 + 1`` prints as

    float4 A_v = *(float4*)(A + i);
    *(float4*)(B + i) = make_float4(((A_v.x * 2.0f) + 1.0f), ...);

Inside the arms of a choice with one condition for all lanes (``if_then_else(c, A[ramp], 0)``), nothing
is hoisted, so no load runs that the condition rules out.
"""
from __future__ import annotations

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.functor import IRVisitor, substitute
from ..ir.tensor import Range
from ..lower.gpu_vectorize import VECTOR_CHECKS

# shared arrays are declared 16-byte aligned: NVRTC then merges a thread's scalar reads of consecutive,
# provably aligned elements into one wide read (ld.shared.v4), a quarter of the instructions
SHARED_ALIGN = 16

# (element dtype, lanes) -> CUDA vector type (half2 / __nv_bfloat162 from cuda_fp16.h / cuda_bf16.h)
VECTOR_TYPES = {
    ("float32", 2): "float2", ("float32", 4): "float4",
    ("int32", 2): "int2", ("int32", 4): "int4",
    ("uint32", 2): "uint2", ("uint32", 4): "uint4",
    ("float64", 2): "double2", ("int64", 2): "longlong2", ("uint64", 2): "ulonglong2",
    ("float16", 2): "half2", ("bfloat16", 2): "__nv_bfloat162",
    ("int16", 2): "short2", ("int16", 4): "short4", ("uint16", 2): "ushort2", ("uint16", 4): "ushort4",
    ("int8", 2): "char2", ("int8", 4): "char4", ("uint8", 2): "uchar2", ("uint8", 4): "uchar4",
}
_MAKERS = {"half2": "make_half2", "__nv_bfloat162": "make_bfloat162"}
FIELDS = "xyzw"


def vector_type(dtype):
    """The CUDA vector type of vector dtype ``dtype`` ("float32x4" -> "float4"), or None."""
    return VECTOR_TYPES.get((dt.element_of(dtype), dt.lanes(dtype)))


# a vector copied unchanged moves as raw bits: 4, 8 or 16 bytes (8 halves as one uint4)
COPY_TYPES = {4: "unsigned int", 8: "uint2", 16: "uint4"}


def copy_type(store):
    """The raw type a vector Store that only copies a Load of its own dtype moves as, else None."""
    v = store.value
    if not (isinstance(v, E.Load) and _unit_ramp(v.index) and v.predicate is None):
        return None
    return COPY_TYPES.get(vector_bytes(v.dtype)) if vector_type(v.dtype) is None else None


def vector_bytes(dtype):
    return dt.itemsize(dt.element_of(dtype)) * dt.lanes(dtype)


def _unit_ramp(index):
    return isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm) and index.stride.value == 1


def _const_ramp(index):
    return isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm)


_LANEWISE = (E.Ramp, E.Broadcast, E.BinaryOp, E.CmpOp, E.Not, E.Select, E.Cast, E.Let, E.Call)


class _Check(IRVisitor):
    """The first vector construct the CUDA printer cannot print (see ``unprintable``)."""

    def __init__(self):
        super().__init__()
        self.reason = None

    def _fail(self, why):
        if self.reason is None:
            self.reason = why

    def _access(self, what, dtype, index, predicate, strided=False):
        if dt.lanes(dtype) == 1:
            return
        if vector_type(dtype) is None:
            self._fail(f"{what}: CUDA has no vector type for {dtype}")
        elif predicate is not None:
            self._fail(f"{what}: lanes masked by a condition that differs between them")
        elif not (_unit_ramp(index) or strided and _const_ramp(index)):
            self._fail(f"{what}: the lanes are not consecutive elements (index {index})")

    def visit_Store(self, s):
        if copy_type(s) is not None and s.predicate is None and _unit_ramp(s.index):
            return None         # a copy: raw words, or lane by lane
        # a store to lanes a constant stride apart prints lane by lane (its value may still be one wide
        # load: a copy transposed into shared memory reads a float4 and stores four words)
        self._access(f"store to {s.buffer_var.name}", s.value.dtype, s.index, s.predicate, strided=True)
        self.generic_visit(s)

    def visit_Load(self, e):
        self._access(f"load of {e.buffer_var.name}", e.dtype, e.index, e.predicate)
        self.generic_visit(e)

    def visit_LetStmt(self, s):
        if dt.lanes(s.var.dtype) > 1 and vector_type(s.var.dtype) is None:
            self._fail(f"let {s.var.name}: CUDA has no vector type for {s.var.dtype}")
        self.generic_visit(s)

    def generic_visit(self, n):
        if self.reason is not None:
            return None
        if isinstance(n, E.Expr) and dt.lanes(n.dtype) > 1 and not isinstance(n, (*_LANEWISE, E.Load, E.Var)):
            self._fail(f"a vector {type(n).__name__}")
            return None
        return super().generic_visit(n)


def unprintable(stmt):
    """None when the CUDA printer can print every vector construct of ``stmt`` (a vectorised loop body),
    else why not: vector loads, stores and lets of a type CUDA has (``VECTOR_TYPES``), each access to
    consecutive elements (a Ramp of stride 1) and unmasked; arithmetic of any kind (it prints per lane)."""
    c = _Check()
    c.visit(stmt)
    return c.reason


VECTOR_CHECKS["cuda"] = unprintable


class _Widths(IRVisitor):
    """The widest vector access (bytes) to each buffer."""

    def __init__(self):
        super().__init__()
        self.widths = {}

    def _see(self, var, dtype):
        if dt.lanes(dtype) > 1:
            self.widths[var] = max(self.widths.get(var, 0), vector_bytes(dtype))

    def visit_Load(self, e):
        self._see(e.buffer_var, e.dtype)
        self.generic_visit(e)

    def visit_Store(self, s):
        self._see(s.buffer_var, s.value.dtype)
        self.generic_visit(s)

    def visit_Call(self, e):
        # a tensor-core tile load or store needs its pointer 256-bit aligned (tile offsets are)
        if e.op in ("tvm_load_matrix_sync", "tvm_store_matrix_sync"):
            ptr = e.args[5]
            if isinstance(ptr, E.Call) and ptr.op == "tvm_access_ptr":
                var = ptr.args[1]
                self.widths[var] = max(self.widths.get(var, 0), 32)
        self.generic_visit(e)


def _simple(e):
    return isinstance(e, (E.Var, E.IntImm, E.FloatImm))


class VectorCode:
    """The vector half of CodeGenCUDA (a mixin: it uses the scalar printer's ``expr``, ``emit``, ``_name``,
    ``ctype`` and ``buf_types``)."""

    def start_vectors(self, func):
        """Per kernel: the analyzer knows the thread indices' ranges; the widest access to each buffer."""
        self.ana = Analyzer()
        launch = func.attrs.get("launch", {})
        for tag, v in func.attrs.get("thread_vars", {}).items():
            ext = launch.get(tag)
            if ext is not None:
                self.ana.bind(v, Range(_op.const(0, v.dtype), ext))
        w = _Widths()
        w.visit(func.body)
        self.vec_widths = w.widths
        self.vec_vars = {}          # vector Var -> its lanes (Vars printing as "v.x", ...)

    def align_prefix(self, buffer_var, dtype, least=0):
        """``__align__(n) `` for an array read or written ``n`` bytes at a time (n wider than an element),
        or aligned to ``least`` bytes anyway (shared memory: SHARED_ALIGN)."""
        n = max(self.vec_widths.get(buffer_var, 0), least)
        return f"__align__({n}) " if n > dt.itemsize(dt.element_of(dtype)) else ""

    def loop_scope(self, loop):
        return self.ana.with_bindings(loop.loop_var, Range(loop.min, loop.extent))

    def let_scope(self, var, value):
        if dt.is_int(var.dtype) and dt.lanes(var.dtype) == 1:
            return self.ana.with_bindings(var, value)
        return self.ana.with_bindings({})

    # ---------------------------------------------------------------- alignment
    def wide(self, buffer_var, dtype, index):
        """Whether this access prints as one wide access: its base a multiple of the lanes, the buffer
        of the access's element type."""
        lanes = dt.lanes(dtype)
        if not _unit_ramp(index) or vector_type(dtype) is None:
            return False
        if self.buf_types.get(buffer_var) != self.ctype(dt.element_of(dtype)):
            return False
        rem = self.ana.simplify(_op.floormod(index.base, lanes))
        return isinstance(rem, E.IntImm) and rem.value == 0

    def _pointer(self, buffer_var, dtype, index):
        base = self.expr(index.base)
        return f"*({self.ctype(dtype)}*)({self._name(buffer_var)} + {base})"

    # ---------------------------------------------------------------- temporaries
    def _temp(self, dtype, text, hint):
        v = E.Var(hint, dtype)
        name = self._name(v)
        self.emit(f"{self.ctype(dtype)} {name} = {text};")
        return v

    def _lane_vars(self, v, lanes):
        out = []
        elem = dt.element_of(v.dtype)
        for k in range(lanes):
            lv = E.Var(f"{v.name}_{FIELDS[k]}", elem)
            self.names[lv] = f"{self._name(v)}.{FIELDS[k]}"
            out.append(lv)
        return out

    # ---------------------------------------------------------------- expansion
    def lanes_of(self, e, hoist):
        """One scalar expression per lane of vector ``e``; with ``hoist``, wide loads and broadcast
        scalars are held in temporaries emitted before the statement."""
        n = dt.lanes(e.dtype)
        if n == 1:
            if hoist and not _simple(e):
                key = ("scalar", e)
                got = self.vec_cache.get(key)
                if got is None:
                    got = self.vec_cache[key] = self._temp(e.dtype, self.expr(e), "s")
                return got
            return e
        if isinstance(e, E.Var):
            lv = self.vec_vars.get(e)
            if lv is None:
                raise BuildError(f"the cuda target: vector variable {e.name} is not bound by a let")
            return lv
        if isinstance(e, E.Load):
            return self._load_lanes(e, hoist)
        if isinstance(e, E.Broadcast):
            return [self.lanes_of(e.value, hoist)] * n
        if isinstance(e, E.Ramp):
            return [_op.add(e.base, _op.mul(e.stride, k)) for k in range(n)]
        if isinstance(e, E.Let):
            return self.lanes_of(substitute(e.body, {e.var: e.value}), hoist)
        if isinstance(e, (E.Select, E.Call)) and self._one_condition(e):
            cond, t, f = (e.condition, e.true_value, e.false_value) if isinstance(e, E.Select) else e.args
            if hoist:       # one temporary, the arms inside the ternary
                v = self._temp(e.dtype, self.whole(e, hoist=False), "sel")
                return self._lane_vars(v, n)
            ts, fs = self.lanes_of(t, False), self.lanes_of(f, False)
            return [E.Select(cond, a, b) for a, b in zip(ts, fs)]
        if isinstance(e, E.Cast):
            elem = dt.element_of(e.dtype)
            return [E.Cast(elem, x) for x in self._lanes_n(e.value, n, hoist)]
        if isinstance(e, E.Not):
            return [E.Not(x) for x in self._lanes_n(e.a, n, hoist)]
        if isinstance(e, (E.BinaryOp, E.CmpOp)):
            return [type(e)(a, b) for a, b in zip(self._lanes_n(e.a, n, hoist), self._lanes_n(e.b, n, hoist))]
        if isinstance(e, E.Select):
            parts = [self._lanes_n(x, n, hoist) for x in (e.condition, e.true_value, e.false_value)]
            return [E.Select(c, a, b) for c, a, b in zip(*parts)]
        if isinstance(e, E.Call):
            elem = dt.element_of(e.dtype)
            args = [self._lanes_n(a, n, hoist) for a in e.args]
            return [E.Call(elem, e.op, tuple(a[k] for a in args)) for k in range(n)]
        raise BuildError(f"the cuda target cannot print a vector {type(e).__name__} ({e})")

    def _lanes_n(self, e, n, hoist):
        got = self.lanes_of(e, hoist)
        return got if isinstance(got, list) else [got] * n

    @staticmethod
    def _one_condition(e):
        """A choice between vector arms by one condition for all lanes."""
        if isinstance(e, E.Select):
            return dt.lanes(e.condition.dtype) == 1
        return e.op == "if_then_else" and dt.lanes(e.args[0].dtype) == 1

    def _load_lanes(self, e, hoist):
        n = dt.lanes(e.dtype)
        if hoist and self.wide(e.buffer_var, e.dtype, e.index):
            key = ("load", e)
            v = self.vec_cache.get(key)
            if v is None:
                v = self.vec_cache[key] = self._temp(e.dtype, self._pointer(e.buffer_var, e.dtype, e.index),
                                                     f"{e.buffer_var.name}_v")
            return self._lane_vars(v, n)
        elem = dt.element_of(e.dtype)
        base, stride = e.index.base, e.index.stride
        return [E.Load(elem, e.buffer_var, _op.add(base, _op.mul(stride, k))) for k in range(n)]

    def whole(self, e, hoist):
        """C text of vector ``e`` as a value of its vector type."""
        t = self.ctype(e.dtype)
        if isinstance(e, E.Load) and self.wide(e.buffer_var, e.dtype, e.index):
            return self._pointer(e.buffer_var, e.dtype, e.index)
        if isinstance(e, E.Var) and e in self.vec_vars:
            return self._name(e)
        if isinstance(e, (E.Select, E.Call)) and self._one_condition(e):
            cond, a, b = (e.condition, e.true_value, e.false_value) if isinstance(e, E.Select) else e.args
            return f"({self.expr(cond)} ? {self.whole(a, False)} : {self.whole(b, False)})"
        lanes = self._lanes_n(e, dt.lanes(e.dtype), hoist)
        maker = _MAKERS.get(t, "make_" + t)
        return f"{maker}({', '.join(_strip(self.expr(x)) for x in lanes)})"

    # ---------------------------------------------------------------- statements
    def vector_store(self, s):
        self.vec_cache = {}
        if s.predicate is not None or not _const_ramp(s.index):
            raise BuildError(f"the cuda target stores vectors to elements a constant stride apart without a "
                             f"mask; got a store to {s.buffer_var.name} at {s.index}"
                             f"{' with a predicate' if s.predicate is not None else ''}")
        dtype = s.value.dtype
        raw = copy_type(s) if _unit_ramp(s.index) else None
        if raw is not None:
            self._copy(s, raw)
            return
        self.ctype(dtype)
        if self.wide(s.buffer_var, dtype, s.index):
            self.emit(f"{self._pointer(s.buffer_var, dtype, s.index)} = {self.whole(s.value, True)};")
            return
        name = self.array(s.buffer_var, dtype)
        for k, x in enumerate(self._lanes_n(s.value, dt.lanes(dtype), True)):
            idx = _op.add(s.index.base, _op.mul(s.index.stride, k))
            self.emit(f"{name}[{_strip(self.expr(idx))}] = {_strip(self.expr(x))};")

    def _copy(self, s, raw):
        """A vector copied unchanged: one access of ``raw`` words where both ends are aligned to its
        width, else element by element."""
        src, lanes = s.value, dt.lanes(s.value.dtype)
        elem = dt.element_of(s.value.dtype)

        def aligned(var, index):
            if self.buf_types.get(var) != self.ctype(elem):
                return False
            rem = self.ana.simplify(_op.floormod(index.base, lanes))
            return isinstance(rem, E.IntImm) and rem.value == 0
        if aligned(s.buffer_var, s.index) and aligned(src.buffer_var, src.index):
            self.emit(f"*({raw}*)({self._name(s.buffer_var)} + {_strip(self.expr(s.index.base))}) = "
                      f"*({raw}*)({self._name(src.buffer_var)} + {_strip(self.expr(src.index.base))});")
            return
        name, sname = self.array(s.buffer_var, src.dtype), self.array(src.buffer_var, src.dtype)
        for k in range(lanes):
            self.emit(f"{name}[{_strip(self.expr(_op.add(s.index.base, k)))}] = "
                      f"{sname}[{_strip(self.expr(_op.add(src.index.base, k)))}];")

    def vector_let(self, s):
        self.vec_cache = {}
        self.ctype(s.var.dtype)
        text = self.whole(s.value, True)
        self.emit(f"{self.ctype(s.var.dtype)} {self._name(s.var)} = {text};")
        self.vec_vars[s.var] = self._lane_vars(s.var, dt.lanes(s.var.dtype))

    def vector_load_error(self, e):
        raise BuildError(f"the cuda target: a vector load of {e.buffer_var.name} outside a vector store or let "
                         f"({e})")


def _strip(text):
    from .cuda_codegen import _strip as strip
    return strip(text)

