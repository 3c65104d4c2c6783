"""Features of a candidate for the cost model, computed from lowered IR without building.

``itervar_features(mod)`` looks at the loop nest around each store of the
lowered function (AST3 as flattened, before vectorize and unroll expand the
annotated loops, so annotations are still visible; the final AST3 when that
step is not kept) and describes the heaviest nest, innermost loops last:

- per loop: log2 extent, depth, annotation (serial / parallel / vectorized /
  unrolled, one-hot), log2 of the iterations above and below it;
- per buffer the statement touches (largest first): log2 of the bytes it
  touches in the whole nest, log2 of its reuse (iterations that revisit the
  same element), the stride of its innermost access, and its stride along
  each loop of the nest.

``curve_features(mod)`` gives, per buffer, the bytes touched by the innermost
1, 2, ... loops: the curve of the working set as loops are added, which is
what caches see.  ``knob_features(config)`` is the config's knobs as numbers.
Every vector has a fixed length for given ``max_loops`` / ``max_buffers``.
"""
from __future__ import annotations

import math

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import IRVisitor

KINDS = ("serial", "parallel", "vectorized", "unrolled")
LOOP_FEATS = 3 + len(KINDS) + 1   # log extent, depth, top-down, kinds, bottom-up


def _log(x):
    return math.log2(abs(x) + 1.0)


def _dtype_bytes(dtype):
    from ..ir import dtype as dt
    try:
        _, bits, lanes = dt.parse(dt.canonical(str(dtype)))
        return max(1, bits // 8) * max(1, lanes)
    except Exception:  # noqa: BLE001 - an unusual dtype counts as 4 bytes
        return 4


def _const(x):
    if isinstance(x, E.IntImm):
        return x.value
    return x if isinstance(x, int) else None


class _Eval:
    """Integer evaluation of an index with some variables set; unknown variables are 0."""

    def __init__(self, env):
        self.env = env

    def __call__(self, e):
        if isinstance(e, int):
            return e
        if isinstance(e, E.IntImm):
            return e.value
        if isinstance(e, E.FloatImm):
            return int(e.value)
        if isinstance(e, E.Var):
            return self.env.get(e, 0)
        if isinstance(e, E.Cast):
            return self(e.value)
        if isinstance(e, E.Ramp):
            return self(e.base)
        if isinstance(e, E.Broadcast):
            return self(e.value)
        if isinstance(e, E.BinaryOp):
            a, b = self(e.a), self(e.b)
            if isinstance(e, E.Add):
                return a + b
            if isinstance(e, E.Sub):
                return a - b
            if isinstance(e, E.Mul):
                return a * b
            if isinstance(e, (E.FloorDiv, E.Div)):
                return a // b if b else 0
            if isinstance(e, (E.FloorMod, E.Mod)):
                return a % b if b else 0
            if isinstance(e, E.Min):
                return min(a, b)
            if isinstance(e, E.Max):
                return max(a, b)
        return 0


def _stride(index, var):
    """How far ``index`` moves when ``var`` goes from 0 to 1 (others 0)."""
    return _Eval({var: 1})(index) - _Eval({var: 0})(index)


def _uses(index, var):
    found = []

    class V(IRVisitor):
        def visit_Var(self, n):
            if n is var:
                found.append(n)

    V().visit(index)
    return bool(found) or _stride(index, var) != 0


class _Nest:
    """A store with its enclosing loops (outermost first) and the accesses it makes."""

    def __init__(self, loops, buffer, index, dtype, value):
        self.loops = loops                 # [(var, extent, kind, depth)]
        self.accesses = [(buffer, index, dtype, True)]
        _collect_loads(value, self.accesses)

    @property
    def iterations(self):
        n = 1
        for _, ext, _, _ in self.loops:
            n *= ext
        return n


def _collect_loads(value, out):
    class V(IRVisitor):
        def visit_Load(self, n):
            out.append((n.buffer_var, n.index, n.dtype, False))
            self.generic_visit(n)

    V().visit(value)


def _nests(body):
    """Every store of ``body`` with its loop nest."""
    found = []

    def walk(s, loops):
        if s is None:
            return
        if isinstance(s, S.For):
            ext = _const(s.extent)
            kind = s.kind if s.kind in KINDS else ("vectorized" if "vector" in s.kind else
                                                   "unrolled" if "unroll" in s.kind else "serial")
            walk(s.body, loops + [(s.loop_var, ext if ext is not None else 16, kind, len(loops))])
        elif isinstance(s, S.Store):
            found.append(_Nest(loops, s.buffer_var, s.index, getattr(s.value, "dtype", "float32"), s.value))
        elif isinstance(s, S.SeqStmt):
            for x in s.seq:
                walk(x, loops)
        elif isinstance(s, S.IfThenElse):
            walk(s.then_case, loops)
            walk(s.else_case, loops)
        else:
            for name in s.field_names():
                v = getattr(s, name)
                if isinstance(v, S.Stmt):
                    walk(v, loops)

    walk(body, [])
    return found


def _function(mod):
    """The PrimFunc whose body describes loop annotations best (see the module docstring)."""
    from ..ir.function import IRModule, PrimFunc
    if isinstance(mod, PrimFunc):
        return mod
    if not isinstance(mod, IRModule):
        raise TypeError(f"features need a lowered IRModule or PrimFunc, got {type(mod).__name__}")
    hist = getattr(mod, "history", {}) or {}
    for step in ("storage_flatten", "loop_partition"):
        f = hist.get(step)
        if isinstance(f, PrimFunc):
            return f
    return next(iter(mod.functions.values()))


def _main_nest(mod):
    nests = _nests(_function(mod).body)
    if not nests:
        return None
    return max(nests, key=lambda n: (n.iterations * len(n.accesses), len(n.loops)))


def _buffer_stats(nest):
    """Per buffer: (name, touched bytes, reuse, innermost stride, [stride per loop])."""
    stats = {}
    loops = nest.loops
    for buf, index, dtype, _ in nest.accesses:
        strides = [_stride(index, v) for v, _, _, _ in loops]
        lanes = index.lanes if isinstance(index, E.Ramp) else 1
        elem = _dtype_bytes(dtype) // max(1, lanes) if lanes > 1 else _dtype_bytes(dtype)
        touched, reuse = lanes * elem, 1
        for (v, ext, _, _), st in zip(loops, strides):
            if st != 0 or _uses(index, v):
                touched *= ext
            else:
                reuse *= ext
        inner = next((st for st in reversed(strides) if st != 0), 0)
        key = getattr(buf, "name", str(buf))
        old = stats.get(key)
        if old is None or touched > old[1]:
            stats[key] = (key, touched, reuse, inner, strides)
    return sorted(stats.values(), key=lambda s: (-s[1], s[0]))


def itervar_features(mod, max_loops=8, max_buffers=4):
    """A fixed-length vector (``max_loops * (8 + max_buffers) + max_buffers * 3 + 2`` floats)."""
    nest = _main_nest(mod)
    per_loop = LOOP_FEATS + max_buffers
    out = [0.0] * (max_loops * per_loop + max_buffers * 3 + 2)
    if nest is None:
        return out
    loops = nest.loops[-max_loops:]
    bufs = _buffer_stats(nest)[:max_buffers]
    exts = [ext for _, ext, _, _ in nest.loops]
    skip = len(nest.loops) - len(loops)
    pad = max_loops - len(loops)          # innermost loops are aligned at the end
    for k, (v, ext, kind, depth) in enumerate(loops):
        pos = skip + k
        above = math.prod(exts[:pos])
        below = math.prod(exts[pos + 1:])
        row = [_log(ext), depth / 8.0, _log(above)] + [1.0 if kind == x else 0.0 for x in KINDS] + [_log(below)]
        row += [_log(b[4][pos]) for b in bufs] + [0.0] * (max_buffers - len(bufs))
        base = (pad + k) * per_loop
        out[base:base + per_loop] = row
    base = max_loops * per_loop
    for j, b in enumerate(bufs):
        out[base + 3 * j: base + 3 * j + 3] = [_log(b[1]), _log(b[2]), _log(b[3])]
    out[-2] = _log(nest.iterations)
    out[-1] = float(len(nest.accesses))
    return out


def curve_features(mod, max_loops=8, max_buffers=4):
    """Per buffer, log2 bytes touched by the innermost 1..max_loops loops (``max_buffers * max_loops``)."""
    nest = _main_nest(mod)
    out = [0.0] * (max_buffers * max_loops)
    if nest is None:
        return out
    bufs = _buffer_stats(nest)[:max_buffers]
    for j, b in enumerate(bufs):
        strides = b[4]
        touched = 1
        for level in range(max_loops):
            pos = len(nest.loops) - 1 - level
            if pos >= 0 and strides[pos] != 0:
                touched *= nest.loops[pos][1]
            out[j * max_loops + level] = _log(touched * 4)
    return out


def flat_function(sch, args):
    """The schedule lowered just far enough for features: AST2 flattened to AST3 loads and stores
    (``storage_flatten``), without the later passes (faster than ``tvmlab.lower``)."""
    from ..driver.build_module import make_function
    from ..lower.storage_flatten import storage_flatten
    func, binds = make_function(sch, list(args), "main")
    return func.with_body(storage_flatten(func.body, binds))


def knob_features(config):
    """A config's knobs as numbers (split factors as log2, orders, annotation codes, values)."""
    return [float(x) for x in config.get_flatten_feature()]


def loop_summary(mod):
    """Readable per-loop description of the heaviest nest: [(name, extent, annotation, depth)]."""
    nest = _main_nest(mod)
    return [] if nest is None else [(v.name, ext, kind, depth) for v, ext, kind, depth in nest.loops]
