"""Sketches: the structure of a CPU schedule derived from the compute definition alone (GPU ones:
``sketch_gpu``).

A *sketch* fixes what a schedule looks like (which stages are inlined, which
reduction stage is tiled "SSRSRS", whether it writes through a local cache or
is fused into its elementwise consumer); a *state* fills in the numbers (tile
sizes per level, how many outer loops run in parallel, whether the innermost
loop is vectorized, the ``auto_unroll_max_step`` pragma).  A state is plain
JSON data, and ``apply_state`` turns it into an ordinary tvmlab schedule whose
trace replays, prints as Python and opens in the explorer.

Rules, per compute stage of the DAG (outputs first):

- an elementwise stage that is not an output is inlined;
- a reduction stage is tiled.  Spatial axes get four levels (S0 S1 S2 S3),
  reduction axes two (R0 R1), ordered ``S0 S1 R0 S2 R1 S3``.  Either in place
  ("tile"), or through ``cache_write(T, "local")`` whose copy-out stage keeps
  the S0 S1 levels and the cache is computed at the last S1 loop
  ("cache_write"), or - when its only consumer (after inlining) is an
  elementwise output of the same shape - that consumer takes the S0 S1 levels
  and the reduction is computed inside it ("fuse");
- any other output stage runs as a flat elementwise loop nest.
"""
from __future__ import annotations

import math

from ..errors import TVMLabError
from ..ir.expr import IntImm
from ..ir.tensor import ComputeOp, PlaceholderOp

UNROLL_STEPS = (0, 16, 64, 512)
MAX_VECTOR = 64
MAX_INNERMOST = 64       # the largest innermost tile a random state or a mutation makes


class SketchError(TVMLabError, ValueError):
    """A computation the auto-scheduler cannot sketch, or a state that does not fit its task."""


def _extent(iv):
    e = iv.dom.extent
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, int):
        return e
    raise SketchError(f"the auto-scheduler needs constant loop extents; axis {iv.var.name} has extent {e}")


def _ops(outputs):
    """Compute ops reachable from ``outputs``, consumers before producers; and the consumers map."""
    order, seen, consumers = [], set(), {}
    stack = list(outputs)
    while stack:
        op = stack.pop(0)
        if op in seen:
            continue
        seen.add(op)
        order.append(op)
        for t in op.input_tensors:
            consumers.setdefault(t.op, []).append(op)
            stack.append(t.op)
    # a producer must come after all its consumers: order by longest distance from the outputs
    depth = {}

    def d(op):
        if op not in depth:
            cs = consumers.get(op, [])
            depth[op] = 0 if not cs else 1 + max(d(c) for c in cs)
        return depth[op]
    order.sort(key=d)
    return [op for op in order if isinstance(op, ComputeOp)], consumers


def _is_reduction(op):
    return bool(op.reduce_axis)


class DAG:
    """The compute stages of a task and the sketches they admit (for a CPU; ``sketch_gpu.GPUDAG``
    for a GPU)."""

    gpu = False

    def __init__(self, args):
        from ..ir.tensor import Tensor
        outs = [a.op for a in args if isinstance(a, Tensor) and not isinstance(a.op, PlaceholderOp)]
        if not outs:
            raise SketchError("the workload returns no computed tensor among its arguments")
        for op in outs:
            if not isinstance(op, ComputeOp):
                raise SketchError(f"the auto-scheduler handles te.compute stages only; {op.name} is "
                                  f"{type(op).__name__}")
        self.outputs = outs
        self.ops, self.consumers = _ops(outs)
        for op in self.ops:
            if len(op.body) != 1:
                raise SketchError(f"stage {op.name} has {len(op.body)} outputs; one is supported")
            for iv in list(op.axis) + list(op.reduce_axis):
                _extent(iv)
        self.inlined = [op.name for op in self.ops if op not in outs and not _is_reduction(op)]
        self.tiled = [op.name for op in self.ops if _is_reduction(op)]
        self.fusable = {}           # reduction stage -> the elementwise output it can fuse into
        for op in self.ops:
            if _is_reduction(op):
                c = self._sole_consumer(op)
                if c is not None and c in outs and not _is_reduction(c) and \
                        [_extent(iv) for iv in c.axis] == [_extent(iv) for iv in op.axis]:
                    self.fusable[op.name] = c.name
        self.by_name = {op.name: op for op in self.ops}
        self.flops = _flops(self.ops)

    def _sole_consumer(self, op):
        # the first consumer that is not inlined, through inlined elementwise stages
        found = set()
        stack = list(self.consumers.get(op, []))
        while stack:
            c = stack.pop()
            if c.name in self.inlined:
                stack += self.consumers.get(c, [])
            else:
                found.add(c)
        return found.pop() if len(found) == 1 else None

    def sketches(self):
        """Each sketch: {reduction stage: "tile" | "cache_write" | "fuse"}."""
        choices = []
        for name in self.tiled:
            opts = ["tile", "cache_write"] + (["fuse"] if name in self.fusable else [])
            choices.append([(name, o) for o in opts])
        out = [{}]
        for opts in choices:
            out = [dict(s, **{n: o}) for s in out for n, o in opts]
        # a consumer takes at most one fused reduction
        return [s for s in out if len([n for n, o in s.items() if o == "fuse"]) ==
                len({self.fusable[n] for n, o in s.items() if o == "fuse"})]

    def spatial(self, name):
        return [_extent(iv) for iv in self.by_name[name].axis]

    def reduce(self, name):
        return [_extent(iv) for iv in self.by_name[name].reduce_axis]

    def plain_outputs(self, sketch):
        fused_into = {self.fusable[n] for n, o in sketch.items() if o == "fuse"}
        return [op.name for op in self.outputs if op.name not in self.tiled and op.name not in fused_into]


def _flops(ops):
    from ..autotvm.task.task import compute_flop

    class _S:       # compute_flop reads stages' ops only
        def __init__(self, ops):
            self.stages = [type("St", (), {"op": op}) for op in ops]
    return compute_flop(_S(ops))


# ---------------------------------------------------------------------------- random states
def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def random_split(rng, extent, parts, max_innermost=MAX_INNERMOST):
    """``parts`` inner factors whose product divides ``extent`` (outermost level implied), the
    innermost at most ``max_innermost`` (TVM's max_innermost_split_factor)."""
    out, left = [], extent
    for _ in range(parts):
        f = rng.choice(divisors(left))
        out.append(f)
        left //= f
    rng.shuffle(out)
    if out[-1] > max_innermost:
        k = min(range(parts), key=lambda i: out[i])
        out[k], out[-1] = out[-1], out[k]
        if out[-1] > max_innermost:           # every factor is large: move the excess outward
            d = max(x for x in divisors(out[-1]) if x <= max_innermost)
            out[-1] = d
    return out


def random_state(dag, sketch, rng, max_innermost=MAX_INNERMOST):
    """A state of ``sketch`` with random tile sizes and annotations."""
    if dag.gpu:
        from . import sketch_gpu
        return sketch_gpu.random_state(dag, sketch, rng, max_innermost)
    tiles = {}
    for name in dag.tiled:
        tiles[name] = {"S": [random_split(rng, e, 3, max_innermost) for e in dag.spatial(name)],
                       "R": [random_split(rng, e, 1, max_innermost) for e in dag.reduce(name)]}
    ann = {}
    for name in dag.tiled + dag.plain_outputs(sketch):
        n_sp = len(dag.spatial(name)) if name in dag.tiled else len(dag.spatial(name))
        ann[name] = {"parallel": rng.randint(0, max(1, n_sp)) if n_sp else 0,
                     "vectorize": rng.random() < 0.8,
                     "unroll": rng.choice(UNROLL_STEPS)}
    return {"sketch": dict(sketch), "tiles": tiles, "ann": ann}


def _top(name, dag, sketch):
    """The stage whose loops carry the S0 S1 levels of reduction stage ``name``."""
    mode = sketch[name]
    return dag.fusable[name] if mode == "fuse" else name


def check_state(dag, state):
    """Raise SketchError unless ``state`` fits ``dag`` (records may come from elsewhere)."""
    if dag.gpu:
        from . import sketch_gpu
        return sketch_gpu.check_state(dag, state)
    try:
        sk, tiles, ann = state["sketch"], state["tiles"], state["ann"]
        if set(sk) != set(dag.tiled) or any(o not in ("tile", "cache_write", "fuse") for o in sk.values()):
            raise SketchError(f"the state's sketch {sk} does not match the reduction stages {dag.tiled}")
        for n, o in sk.items():
            if o == "fuse" and n not in dag.fusable:
                raise SketchError(f"stage {n} has no elementwise consumer to fuse into")
            t = tiles[n]
            for key, ext, parts in (("S", dag.spatial(n), 3), ("R", dag.reduce(n), 1)):
                if len(t[key]) != len(ext):
                    raise SketchError(f"stage {n}: {len(t[key])} {key} tile lists for {len(ext)} axes")
                for fs, e in zip(t[key], ext):
                    if len(fs) != parts or any(not isinstance(f, int) or f < 1 for f in fs) or \
                            e % math.prod(fs):
                        raise SketchError(f"stage {n}: tile sizes {fs} do not divide extent {e}")
        for n in dag.tiled + dag.plain_outputs(sk):
            a = ann[n]
            if not isinstance(a.get("parallel"), int) or not isinstance(a.get("vectorize"), bool) or \
                    not isinstance(a.get("unroll"), int):
                raise SketchError(f"stage {n}: bad annotation {a}")
    except (KeyError, TypeError, AttributeError) as e:
        raise SketchError(f"not an auto-scheduler state ({type(e).__name__}: {e}): {state!r:.200}") from None


# ---------------------------------------------------------------------------- state -> schedule
def _split_levels(st, ax, factors):
    """Split ``ax`` into len(factors)+1 loops, inner factors as given (outermost first)."""
    loops = []
    rest = ax
    for k in range(len(factors)):
        outer, rest = st.split(rest, factor=math.prod(factors[k:]))
        loops.append(outer)
    loops.append(rest)
    return loops


def _parallel(st, loops, n):
    if n <= 0 or not loops:
        return None
    n = min(n, len(loops))
    f = st.fuse(*loops[:n]) if n > 1 else loops[0]
    st.parallel(f)
    return f


def _vectorize(st, ax, extent, on):
    if on and 1 < extent <= MAX_VECTOR:
        st.vectorize(ax)


def apply_state(s, dag, state, tensors):
    """Apply ``state`` to schedule ``s`` of the DAG (``tensors``: name -> output tensor)."""
    if dag.gpu:
        from . import sketch_gpu
        return sketch_gpu.apply_state(s, dag, state, tensors)
    check_state(dag, state)
    sk, tiles, ann = state["sketch"], state["tiles"], state["ann"]
    for name in dag.inlined:
        s[tensors[name]].compute_inline()
    for name in dag.tiled:
        mode, t, a = sk[name], tiles[name], ann[name]
        T = tensors[name]
        fs, rs = t["S"], t["R"]
        if mode == "tile":
            st = s[T]
            lv = [_split_levels(st, ax, f) for ax, f in zip(st.op.axis, fs)]
            rv = [_split_levels(st, ax, f) for ax, f in zip(st.op.reduce_axis, rs)]
            order = [l[0] for l in lv] + [l[1] for l in lv] + [r[0] for r in rv] + [l[2] for l in lv] + \
                [r[1] for r in rv] + [l[3] for l in lv]
            st.reorder(*order)
            if a["unroll"]:
                st.pragma(order[0], "auto_unroll_max_step", a["unroll"])
            if lv:
                _vectorize(st, lv[-1][3], fs[-1][2], a["vectorize"])
            _parallel(st, [l[0] for l in lv], a["parallel"])
            continue
        if mode == "cache_write":
            L = s.cache_write(T, "local")
            top, inner = s[T], s[L]
        else:
            top, inner = s[tensors[dag.fusable[name]]], s[T]
        # the top stage keeps S0 S1 (and walks its own S2*S3 tile); the inner stage R0 S2 R1 S3
        lv = [_split_levels(top, ax, [f[0], f[1] * f[2]]) for ax, f in zip(top.op.axis, fs)]
        top.reorder(*([l[0] for l in lv] + [l[1] for l in lv] + [l[2] for l in lv]))
        if lv:
            inner.compute_at(top, lv[-1][1])
        iv = [_split_levels(inner, ax, [f[2]]) for ax, f in zip(inner.op.axis, fs)]
        rv = [_split_levels(inner, ax, f) for ax, f in zip(inner.op.reduce_axis, rs)]
        order = [r[0] for r in rv] + [l[0] for l in iv] + [r[1] for r in rv] + [l[1] for l in iv]
        inner.reorder(*order)
        if a["unroll"] and order:
            inner.pragma(order[0], "auto_unroll_max_step", a["unroll"])
        if iv:
            _vectorize(inner, iv[-1][1], fs[-1][2], a["vectorize"])
            _vectorize(top, lv[-1][2], fs[-1][1] * fs[-1][2], a["vectorize"])
        _parallel(top, [l[0] for l in lv], a["parallel"])
    for name in dag.plain_outputs(sk):
        st, a = s[tensors[name]], ann[name]
        axes = list(st.op.axis)
        if not axes:
            continue
        last = _extent(axes[-1])
        vec = max(d for d in divisors(last) if d <= 16)
        if a["vectorize"] and vec > 1:
            o, i = st.split(axes[-1], factor=vec)
            axes[-1:] = [o, i]
            st.vectorize(i)
        _parallel(st, axes[:-1] if len(axes) > 1 else [], a["parallel"])
    return s
