"""Who writes which element, in which order, and which cache lines each loop touches.

``trace_accesses(s, args, sizes={"n": 16})`` lowers the schedule, interprets
the flattened loop nest (before vectorize and unroll, so every loop still has
its kind) on random inputs of that small instance, and records every load and
store with the loops around it.  From that record:

- ``owner_map(kind)``: for each output element, which parallel task / CUDA
  block / thread / vector lane / unrolled copy wrote it (-1: never written);
- ``order_map()``: the step at which each output element was first written;
- ``cache_report(loop)``: per input buffer, the cache lines touched per
  iteration of ``loop``, reuse distances (LRU stack distance, in lines) and the
  misses predicted for fully associative LRU caches of L1 and L2 size.

No native code runs: the numbers follow from the loop nest alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import TVMLabError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.functor import collect_vars
from ..ir.expr import Var
from ..ir.tensor import Tensor
from .interp import InterpError, Interpreter

LINE_BYTES = 64
L1_BYTES = 32 * 1024
L2_BYTES = 1024 * 1024
MAX_EVENTS = 400_000        # accesses recorded before the instance counts as too big
WHO_KINDS = ("parallel", "blockIdx", "threadIdx", "vthread", "vectorized", "unrolled")


class AnalysisError(TVMLabError, ValueError):
    """An analysis that cannot run: an instance too big to interpret, an unknown loop or size."""


class _TooBig(Exception):
    pass


@dataclass
class AccessTrace:
    """Every access of one small instance: ``events`` rows and the buffers' shapes."""
    sizes: dict
    outputs: list                 # names of the output buffers
    shapes: dict                  # buffer name -> shape (tuple of ints)
    itemsize: dict                # buffer name -> bytes per element
    loops: list                   # [(loop name, kind)] in the order first seen, outer first
    events: list = field(default_factory=list)   # (seq, is_store, buffer, flat index, frames)

    # ------------------------------------------------------------ writers
    def owner_map(self, kind, buffer=None):
        """Output-shaped int array: the value of the ``kind`` loop (see WHO_KINDS) that wrote each
        element first (-1 where never written; 0 everywhere when no loop of that kind exists)."""
        if kind not in WHO_KINDS:
            raise AnalysisError(f"owner_map: unknown kind {kind!r}; expected one of "
                                f"{', '.join(WHO_KINDS)}")
        name = self._out(buffer)
        out = np.full(int(np.prod(self.shapes[name])), -1, dtype=np.int64)
        for seq, st, buf, idx, frames in self.events:
            if not st or buf != name or out[idx] >= 0:
                continue
            out[idx] = _who(frames, kind)
        return out.reshape(self.shapes[name])

    def order_map(self, buffer=None):
        """Output-shaped array: the rank (0, 1, ...) of each element's first write (-1: never)."""
        name = self._out(buffer)
        out = np.full(int(np.prod(self.shapes[name])), -1, dtype=np.int64)
        k = 0
        for seq, st, buf, idx, frames in self.events:
            if st and buf == name and out[idx] < 0:
                out[idx] = k
                k += 1
        return out.reshape(self.shapes[name])

    def write_counts(self, buffer=None):
        """Output-shaped array: how many times each element is stored (a reduction: many)."""
        name = self._out(buffer)
        out = np.zeros(int(np.prod(self.shapes[name])), dtype=np.int64)
        for seq, st, buf, idx, frames in self.events:
            if st and buf == name:
                out[idx] += 1
        return out.reshape(self.shapes[name])

    def who_kinds(self):
        """The WHO_KINDS that occur in this loop nest."""
        seen = {k for _, kind in self.loops for k in WHO_KINDS if kind.startswith(k)}
        return [k for k in WHO_KINDS if k in seen]

    def _out(self, buffer):
        name = buffer if buffer is not None else self.outputs[-1]
        if name not in self.shapes:
            raise AnalysisError(f"no buffer {name!r}; buffers are {sorted(self.shapes)}")
        return name

    # ------------------------------------------------------------ caches
    def cache_report(self, loop=None, line_bytes=LINE_BYTES, l1_bytes=L1_BYTES, l2_bytes=L2_BYTES):
        """Per buffer: lines touched per iteration of ``loop`` (default: the outermost loop),
        reuse distances and predicted L1/L2 misses (fully associative LRU, ``line_bytes`` lines)."""
        names = [n for n, _ in self.loops]
        if loop is None:
            loop = names[0] if names else None
        if loop is not None and loop not in names:
            raise AnalysisError(f"cache_report: no loop named {loop!r}; loops are {names}")
        base, off = {}, 0
        for name in self.shapes:            # buffers laid out one after another, line-aligned
            base[name] = off
            size = int(np.prod(self.shapes[name])) * self.itemsize[name]
            off += -(-size // 4096) * 4096
        lines = []
        for seq, st, buf, idx, frames in self.events:
            lines.append((buf, (base[buf] + idx * self.itemsize[buf]) // line_bytes,
                          _iteration(frames, loop)))
        dist = reuse_distances([ln for _, ln, _ in lines])
        l1, l2 = l1_bytes // line_bytes, l2_bytes // line_bytes
        out = {}
        for name in self.shapes:
            rows = [(ln, it, d) for (b, ln, it), d in zip(lines, dist) if b == name]
            if not rows:
                continue
            per_iter = {}
            for ln, it, d in rows:
                per_iter.setdefault(it, set()).add(ln)
            finite = np.array([d for _, _, d in rows if d >= 0], dtype=np.int64)
            out[name] = {
                "accesses": len(rows),
                "distinct_lines": len({ln for ln, _, _ in rows}),
                "lines_per_iteration": float(np.mean([len(v) for v in per_iter.values()])),
                "iterations": len(per_iter),
                "cold_misses": sum(1 for _, _, d in rows if d < 0),
                "l1_misses": sum(1 for _, _, d in rows if d < 0 or d >= l1),
                "l2_misses": sum(1 for _, _, d in rows if d < 0 or d >= l2),
                "median_reuse": float(np.median(finite)) if finite.size else None,
                "reuse_histogram": _log_histogram(finite),
            }
        return {"loop": loop, "line_bytes": line_bytes, "l1_lines": l1, "l2_lines": l2,
                "buffers": out}


def _who(frames, kind):
    for var, k, value in frames:
        if k.startswith(kind):
            return value
    return 0


def _iteration(frames, loop):
    key = []
    for var, k, value in frames:
        key.append(value)
        if var.name == loop:
            return tuple(key)
    return None


def _log_histogram(d):
    """Counts of reuse distances in buckets [0,1), [1,2), [2,4), [4,8), ... (lines)."""
    if not d.size:
        return []
    edges = [0, 1] + [2 ** k for k in range(1, int(np.log2(max(2, d.max()))) + 2)]
    counts, _ = np.histogram(d, bins=edges)
    return [(int(lo), int(hi), int(c)) for lo, hi, c in zip(edges[:-1], edges[1:], counts)]


def reuse_distances(seq):
    """LRU stack distance of each access (distinct lines since the last access of that line;
    -1 at a first access), in O(n log n) with a Fenwick tree over access times."""
    n = len(seq)
    tree = [0] * (n + 1)

    def add(i, v):
        i += 1
        while i <= n:
            tree[i] += v
            i += i & -i

    def prefix(i):          # sum of marks at times < i
        s = 0
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s

    last = {}
    out = []
    for t, x in enumerate(seq):
        p = last.get(x)
        if p is None:
            out.append(-1)
        else:
            out.append(prefix(t) - prefix(p + 1))
            add(p, -1)
        add(t, 1)
        last[x] = t
    return out


# ---------------------------------------------------------------- tracing
def suggested_size(sch, low=16, high=32):
    """A size for symbolic shape variables that shows the schedule's tiles: one and a half times
    the largest constant split factor (so a tail tile shows too), within [low, high]."""
    from ..ir.expr import IntImm
    from ..schedule.relations import Split
    biggest = 0
    for st in getattr(sch, "stages", ()):
        for rel in st.relations:
            if isinstance(rel, Split):
                f = rel.factor if rel.factor is not None else rel.nparts
                f = f.value if isinstance(f, IntImm) else f
                if isinstance(f, int):
                    biggest = max(biggest, f)
    return max(low, min(high, biggest + biggest // 2))


def default_sizes(args, sizes=None, default=16):
    """{shape variable name: value}: ``sizes`` where given, else ``default``."""
    names = []
    for t in args:
        for d in (t.shape if isinstance(t, Tensor) else ()):
            if not isinstance(d, int):
                names += [v.name for v in collect_vars(d) if v.name not in names]
    names += [a.name for a in args if isinstance(a, Var) and a.name not in names]
    out = {n: default for n in names}
    for k, v in (sizes or {}).items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise AnalysisError(f"size of {k!r} must be a positive int, got {v!r}")
        out[k] = v
    return out


def trace_accesses(sch, args, sizes=None, lowered=None, max_events=MAX_EVENTS, seed=0):
    """Interpret ``sch`` on a small instance (sizes from ``sizes``, else ``suggested_size``)."""
    import tvmlab
    if lowered is None:
        lowered = tvmlab.lower(sch, list(args))
    func = lowered.history.get("storage_flatten") if getattr(lowered, "history", None) else None
    if func is None:
        raise AnalysisError("trace_accesses needs the lowering history (tvmlab.lower keeps it)")
    sizes = default_sizes(args, sizes, suggested_size(sch))
    env = {}
    for p in func.params:
        if p not in func.buffer_map:
            if p.name not in sizes:
                raise AnalysisError(f"no size for the scalar argument {p.name!r}")
            env[p] = sizes[p.name]
    shape_env = dict(env)
    probe = Interpreter(env={})
    buffers, shapes, itemsize = {}, {}, {}
    rng = np.random.default_rng(seed)
    for p, buf in func.buffer_map.items():
        dims = []
        for d in buf.shape:
            e = _op.convert(d)
            for v in collect_vars(e):
                if v.name not in sizes:
                    raise AnalysisError(f"no size for the shape variable {v.name!r}")
                shape_env[v] = sizes[v.name]
            probe.env = shape_env
            dims.append(int(probe.eval(e)))
        np_dtype = dt.to_numpy(buf.dtype)
        arr = (rng.standard_normal(dims) + 2).astype(np_dtype) if dt.is_float(buf.dtype) else \
            rng.integers(1, 7, size=dims).astype(np_dtype)
        buffers[buf.data] = arr
        shapes[buf.name] = tuple(dims)
        itemsize[buf.name] = arr.itemsize
    outputs = [t.name for t in sch.outputs for t in t.outputs] if hasattr(sch, "outputs") else []
    outputs = [n for n in outputs if n in shapes] or [list(shapes)[-1]]
    tr = AccessTrace(dict(sizes), outputs, shapes, itemsize, [])
    seen_loops = {}
    names = {v: b.name for v, b in ((b.data, b) for b in func.buffer_map.values())}
    counter = [0]

    def record(is_store):
        def hook(var, idx, mask, frames):
            name = names.get(var)
            if name is None:
                name = var.name
                if name not in shapes:       # an allocation: its size is learnt as it is used
                    shapes[name] = (0,)
                    itemsize[name] = 4
                    names[var] = name
            for v, kind, _ in frames:
                if v.name not in seen_loops:
                    seen_loops[v.name] = kind
            fr = frames                      # an immutable tuple, shared by the loop's accesses
            if np.ndim(idx):
                ix = np.asarray(idx)[np.asarray(mask, dtype=bool)]
                for lane, i in enumerate(ix):
                    _event(tr, counter, is_store, name, int(i), fr, max_events)
            elif mask:
                _event(tr, counter, is_store, name, int(idx), fr, max_events)
        return hook

    it = Interpreter(buffers=buffers, env=shape_env, on_store=record(True), on_load=record(False))
    try:
        it.run(func.body)
    except _TooBig:
        raise AnalysisError(f"this instance makes more than {max_events} accesses; choose smaller "
                            f"sizes (now {sizes or 'fixed by the shapes'}) for the access views"
                            ) from None
    except InterpError as e:
        raise AnalysisError(f"interpreting the loop nest failed: {e}") from None
    for name in list(shapes):
        if shapes[name] == (0,):
            top = max((i for _, _, b, i, _ in tr.events if b == name), default=-1)
            shapes[name] = (top + 1,)
    tr.loops = list(seen_loops.items())
    return tr


def _event(tr, counter, is_store, name, idx, frames, max_events):
    counter[0] += 1
    if counter[0] > max_events:
        raise _TooBig()
    tr.events.append((counter[0], is_store, name, idx, frames))
