"""The roofline: where a kernel sits between the machine's memory roof and its compute roof.

``kernel_counts(lowered, sizes)`` counts, from AST3, the floating-point
operations the kernel performs (each vector op counts its lanes, masked
lanes included) and the distinct bytes each buffer moves to or from memory
(an argument moves its touched size once; an allocation only when it is
bigger than L2 and not "local"/"shared" scratch), for the real sizes.  Arithmetic intensity = flops / distinct bytes.
``memory_bandwidth()`` measures this machine's streaming bandwidth with a
tvmlab kernel (a parallel, vectorized scale of a buffer far bigger than the
caches), as ``bench.peak`` measures the FMA roof.  ``RooflinePoint`` ties one
step's counts to its measured time.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import collect_vars, post_order_visit
from ..ir.tensor import IterVar
from .access import L2_BYTES, AnalysisError, default_sizes
from .interp import InterpError, Interpreter

_FLOP_NODES = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max)
ITERATION_BUDGET = 200_000     # loop iterations walked one by one before averaging takes over
BANDWIDTH_ELEMENTS = 1 << 24   # 64 MiB per float32 buffer: far past any L3


@dataclass
class Counts:
    flops: float
    bytes_by_buffer: dict          # distinct bytes each buffer moves to or from memory
    accessed_bytes: dict           # every load and store, counted each time

    @property
    def bytes(self):
        return float(sum(self.bytes_by_buffer.values()))

    @property
    def intensity(self):
        return self.flops / self.bytes if self.bytes else float("inf")


@dataclass
class RooflinePoint:
    label: str
    flops: float
    bytes: float
    seconds: float = None

    @property
    def intensity(self):
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def gflops(self):
        return self.flops / self.seconds / 1e9 if self.seconds else None

    def bound(self, peak_gflops, bandwidth_gbs):
        """The attainable GFLOP/s at this intensity: min(peak, bandwidth x intensity)."""
        return min(peak_gflops, bandwidth_gbs * self.intensity)


def _expr_flops(e):
    n = [0]

    def visit(x):
        if isinstance(x, _FLOP_NODES) and dt.is_float(x.dtype):
            n[0] += dt.lanes(x.dtype)
        elif isinstance(x, E.Call) and dt.is_float(x.dtype) and x.op not in (
                "likely", "if_then_else", "reinterpret"):
            n[0] += dt.lanes(x.dtype)
    post_order_visit(e, visit)
    return n[0]


def _expr_loads(e):
    out = {}

    def visit(x):
        if isinstance(x, E.Load):
            lanes = dt.lanes(x.dtype)
            out[x.buffer_var] = out.get(x.buffer_var, 0) + lanes
    post_order_visit(e, visit)
    return out


class _Counter:
    def __init__(self, env):
        self.it = Interpreter(env=env)
        self.budget = ITERATION_BUDGET

    def value(self, e):
        try:
            return self.it.eval(e)
        except InterpError:
            return None

    def cost(self, s):
        """(flops, {buffer var: elements accessed})."""
        m = getattr(self, "c_" + type(s).__name__, None)
        if m is None:
            return 0.0, {}
        return m(s)

    def c_SeqStmt(self, s):
        f, acc = 0.0, {}
        for x in s.seq:
            f2, a2 = self.cost(x)
            f += f2
            _add(acc, a2)
        return f, acc

    def c_Store(self, s):
        acc = _expr_loads(s.value)
        lanes = dt.lanes(s.value.dtype)
        acc[s.buffer_var] = acc.get(s.buffer_var, 0) + lanes
        return float(_expr_flops(s.value)), acc

    def c_Evaluate(self, s):
        return float(_expr_flops(s.value)), _expr_loads(s.value)

    def c_LetStmt(self, s):
        v = self.value(s.value)
        if v is not None:
            self.it.env[s.var] = v
        f, a = self.cost(s.body)
        f += _expr_flops(s.value)
        _add(a, _expr_loads(s.value))
        self.it.env.pop(s.var, None)
        return f, a

    def c_Allocate(self, s):
        return self.cost(s.body)

    def c_AssertStmt(self, s):
        return self.cost(s.body)

    def c_IfThenElse(self, s):
        c = self.value(s.condition)
        if c is None or bool(c):       # unknown (data-dependent): count the likely branch
            return self.cost(s.then_case)
        return self.cost(s.else_case) if s.else_case is not None else (0.0, {})

    def c_AttrStmt(self, s):
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar):
            return self._loop(s.node.var, 0, s.value, s.body)
        return self.cost(s.body)

    def c_For(self, s):
        return self._loop(s.loop_var, s.min, s.extent, s.body)

    def _loop(self, var, lo, extent, body):
        lo, ext = self.value(lo), self.value(extent)
        if lo is None or ext is None:
            raise AnalysisError(f"loop {var.name}: its range depends on a value unknown before "
                                f"run time ({extent}); give sizes for every shape variable")
        ext = int(ext)
        if ext <= 0:
            return 0.0, {}
        if not _controls(body, var):
            f, a = self.cost(body)
            return f * ext, {k: v * ext for k, v in a.items()}
        if ext <= self.budget:
            self.budget -= ext
            f, acc = 0.0, {}
            for k in range(int(lo), int(lo) + ext):
                self.it.env[var] = k
                f2, a2 = self.cost(body)
                f += f2
                _add(acc, a2)
            self.it.env.pop(var, None)
            return f, acc
        # too many to walk: the first, middle and last iterations, averaged
        f, acc = 0.0, {}
        picks = [int(lo), int(lo) + ext // 2, int(lo) + ext - 1]
        for k in picks:
            self.it.env[var] = k
            f2, a2 = self.cost(body)
            f += f2 * ext / 3
            _add(acc, {b: v * ext / 3 for b, v in a2.items()})
        self.it.env.pop(var, None)
        return f, acc


def _add(acc, more):
    for k, v in more.items():
        acc[k] = acc.get(k, 0) + v


def _controls(body, var):
    """True if ``var`` shapes control flow inside ``body`` (a loop range, a condition, a let)."""
    found = [False]

    def visit(n):
        if found[0]:
            return
        exprs = ()
        if isinstance(n, S.For):
            exprs = (n.min, n.extent)
        elif isinstance(n, S.IfThenElse):
            exprs = (n.condition,)
        elif isinstance(n, S.LetStmt):
            exprs = (n.value,)
        elif isinstance(n, S.AttrStmt) and n.attr_key == "thread_extent":
            exprs = (n.value,)
        for e in exprs:
            if var in collect_vars(e):
                found[0] = True
    post_order_visit(body, visit)
    return found[0]


def _func(lowered):
    fs = getattr(lowered, "functions", None)
    if fs is None:
        return lowered
    if not fs:
        raise AnalysisError("the lowered module has no function")
    return next(iter(fs.values()))


def kernel_counts(lowered, args=None, sizes=None):
    """Counts of the AST3 of ``lowered`` (an IRModule or PrimFunc) at ``sizes`` (shape var -> int)."""
    func = _func(lowered)
    sizes = default_sizes(args or [], sizes, default=1024) if args is not None else dict(sizes or {})
    env = {}
    by_name = {}
    for p in func.params:
        b = func.buffer_map.get(p)
        for v in ([p] if b is None else [v for d in b.shape if not isinstance(d, int)
                                            for v in collect_vars(d)]):
            if v.name not in sizes:
                raise AnalysisError(f"kernel_counts: no size for {v.name!r}")
            env[v] = sizes[v.name]
    c = _Counter(env)
    flops, acc = c.cost(func.body)
    total, distinct = {}, {}
    buffers = {b.data: b for b in func.buffer_map.values()}
    allocs = {}
    post_order_visit(func.body, lambda n: allocs.__setitem__(n.buffer_var, n)
                     if isinstance(n, S.Allocate) else None)
    for var, elems in acc.items():
        if var in buffers:
            b = buffers[var]
            size = 1
            for d in b.shape:
                size *= int(c.value(d) if not isinstance(d, int) else d)
            item = dt.bits(b.dtype) // 8 or 1
            name = b.name
            moved = min(elems, size) * item
        elif var in allocs:
            a = allocs[var]
            item = dt.bits(a.dtype) // 8 or 1
            name = var.name
            size = 1
            for e in a.extents:
                v = c.value(e)
                size *= int(v) if v is not None else 1
            # scratch in registers/shared memory, or small enough to stay in L2, moves nothing
            moved = 0 if a.scope in ("local", "shared", "warp") or size * item <= L2_BYTES \
                else min(elems, size) * item
        else:
            continue
        by_name[name] = by_name.get(name, 0) + moved
        total[name] = total.get(name, 0) + elems * item
        distinct[name] = by_name[name]
    return Counts(float(flops), distinct, total)


# ---------------------------------------------------------------- the memory roof
_BW = None
_BW_LOCK = threading.Lock()


def measure_bandwidth(elements=BANDWIDTH_ELEMENTS, rounds=3):
    """GB/s of a parallel, vectorized ``B[i] = A[i] * 2`` over ``elements`` float32 (read + write)."""
    import numpy as np

    import tvmlab
    from .. import te
    from ..codegen.llvm_vector import vector_registers
    lanes = vector_registers("llvm").lanes("float32")
    n = int(elements)
    A = te.placeholder((n,), name="A")
    Bt = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(Bt.op)
    xo, xi = s[Bt].split(Bt.op.axis[0], factor=lanes * 64)
    xio, xii = s[Bt].split(xi, factor=lanes)
    s[Bt].parallel(xo)
    s[Bt].vectorize(xii)
    f = tvmlab.build(s, [A, Bt], target="llvm", name="stream_scale")
    dev = tvmlab.cpu(0)
    a = tvmlab.nd.array(np.random.default_rng(0).standard_normal(n).astype("float32") + 1, dev)
    b = tvmlab.nd.array(np.full(n, np.nan, dtype="float32"), dev)
    f(a, b)
    if not np.allclose(b.numpy()[:: max(1, n // 1000)], a.numpy()[:: max(1, n // 1000)] * 2):
        raise AnalysisError("the bandwidth kernel computed a wrong result")
    best = None
    for _ in range(max(1, rounds)):
        t0 = time.perf_counter()
        f(a, b)
        el = time.perf_counter() - t0
        best = el if best is None else min(best, el)
    return 2 * 4 * n / best / 1e9


def memory_bandwidth(rounds=3):
    """(GB/s, how it was found): ``TVMLAB_BANDWIDTH_GBS`` if set, else measured once per process."""
    global _BW
    env = os.environ.get("TVMLAB_BANDWIDTH_GBS")
    if env:
        try:
            return float(env), "TVMLAB_BANDWIDTH_GBS"
        except ValueError:
            raise AnalysisError(f"TVMLAB_BANDWIDTH_GBS must be a number, got {env!r}") from None
    with _BW_LOCK:
        if _BW is None:
            gbs = measure_bandwidth(rounds=rounds)
            _BW = (gbs, f"measured: parallel vectorized stream of {BANDWIDTH_ELEMENTS * 4 >> 20} "
                        "MiB in, the same out")
        return _BW
