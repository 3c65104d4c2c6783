"""GPU sketches: the structure of a CUDA schedule derived from the compute definition alone.

The rules, per compute stage (outputs first), as Ansor's for GPUs:

- an elementwise stage that is not an output is inlined (an operand of a tiled stage, such as a
  convolution's padding, is inlined into the stage's shared-memory copy, so the padding is done while
  fetching);
- a *compute-intensive* reduction (an operand misses a spatial axis, so its elements are reused, as in a
  matmul or a convolution) is tiled "SSSRRSRS": each spatial axis splits into five levels S0..S4 (S0 of
  every axis fused and bound to ``blockIdx.x``, S1 to a ``vthread``, S2 to ``threadIdx.x``; S3 and S4
  run in each thread) and each reduction axis into three, ordered ``S0 S1 S2 | R0 R1 S3 R2 S4``.  The
  sums stay in registers: a ``cache_write(T, "local")`` computed at the thread loop ("cache_write"), or,
  when the reduction's only consumer is an elementwise output of its shape, that consumer takes the
  block and thread loops and the reduction (scope local) is computed inside them ("fuse").  Every operand
  is copied into shared memory once per R0 step (``cache_read(..., "shared")``) by all the block's
  threads together: the copy's loops are fused, split by the thread count and bound to ``threadIdx.x``
  (cooperative fetching), each thread taking ``vector`` consecutive elements;
- a reduction whose spatial extent is small next to its reduction ("cross_thread"): the reduction is
  split by a thread count and ``rfactor``-ed, the partial sums combined across ``threadIdx.x``, one block
  per output element;
- every other stage ("simple", and elementwise outputs): its loops fused, split by a thread count and
  bound to ``blockIdx.x`` / ``threadIdx.x``.

A state holds the numbers: per tiled stage ``tiles[name] = {"S": [[v, t, i3, i4] per spatial axis],
"R": [[r1, r2] per reduction axis]}`` (inner factors; the outermost level is what is left, rounded up, so
factors need not divide the extents: the loops are guarded), and per stage ``ann[name]`` with
``unroll`` (an ``auto_unroll_max_step`` pragma), ``vector`` (tiled stages) or ``threads`` (the others).
"""
from __future__ import annotations

import math

from ..ir.expr import ProducerLoad
from ..ir.functor import collect_vars, post_order_visit
from .sketch import DAG, SketchError, _split_levels

UNROLL_STEPS = (0, 16, 64, 512, 1024)
FETCH_VECTORS = (1, 2, 4)
WARP = 32
MAX_VTHREAD = 8                 # virtual threads of one block (TVM's max_vthread_extent)
MAX_INNERMOST = 64              # the largest S4 / R2 factor a random state makes
MAX_REGISTERS = 64              # outputs one thread keeps in registers in a random state
MAX_STEP = 64                   # reduction elements per shared-memory step (R1 x R2) in a random state
TILED = ("cache_write", "fuse")
MODES = TILED + ("cross_thread", "simple")


def target_limits(target):
    """The GPU limits of ``target`` (verify_gpu's defaults, with the target's ``-max_...`` options)."""
    from ..lower.verify_gpu import DEFAULT_LIMITS, gpu_limits
    return gpu_limits({k: v for k, v in target.options.items() if k in DEFAULT_LIMITS})


def has_reuse(op):
    """True when an operand of reduction ``op`` is read without one of its spatial axes (reused)."""
    spatial = {iv.var for iv in op.axis}
    found = []

    def visit(x):
        if isinstance(x, ProducerLoad):
            used = set()
            for i in x.indices:
                used.update(collect_vars(i))
            if spatial - used:
                found.append(x)
    post_order_visit(op.body[0], visit)
    return bool(found)


def values(n):
    """Split factors worth trying for an extent ``n``: its divisors and the powers of two below it."""
    out = {d for d in range(1, n + 1) if n % d == 0}
    p = 1
    while p <= n:
        out.add(p)
        p *= 2
    return sorted(out)


def _pow2_at_least(n):
    p = 1
    while p < n:
        p *= 2
    return p


class GPUDAG(DAG):
    """The stages of a task for a GPU target (``limits``: verify_gpu's) and the sketches they admit."""

    gpu = True

    def __init__(self, args, limits):
        super().__init__(args)
        self.limits = dict(limits)
        self.modes = {}
        for name in self.tiled:
            op = self.by_name[name]
            space, red = math.prod(self.spatial(name)), math.prod(self.reduce(name))
            if has_reuse(op):
                opts = ["cache_write"] + (["fuse"] if name in self.fusable else [])
                if red > WARP and space <= red:
                    opts.append("cross_thread")
            else:
                opts = ["simple"] + (["cross_thread"] if red > WARP else [])
            self.modes[name] = opts

    def sketches(self):
        out = [{}]
        for name in self.tiled:
            out = [dict(s, **{name: m}) for s in out for m in self.modes[name]]
        return out

    def max_threads(self):
        return min(self.limits["max_threads_per_block"], self.limits["max_thread_x"])


# ---------------------------------------------------------------------------- random states
def _level_factors(rng, extent, n, cap=None):
    """``n`` inner factors of ``extent`` (outermost first); each from ``values`` of what is left."""
    out, left = [], extent
    for k in range(n):
        vs = [v for v in values(left) if cap is None or k != n - 1 or v <= cap]
        f = rng.choice(vs)
        out.append(f)
        left = -(-left // f)
    return out


def _random_tiles(dag, name, rng, max_innermost, tries=64):
    sp, rd = dag.spatial(name), dag.reduce(name)
    cap = dag.max_threads()
    best = None
    for _ in range(tries):
        # threads first (the innermost axes' more often), then vthreads and per-thread tiles
        S = []
        for e in sp:
            t = rng.choice(values(e))
            rest = -(-e // t)
            v = rng.choice([x for x in values(rest) if x <= MAX_VTHREAD])
            rest = -(-rest // v)
            i3 = rng.choice(values(rest))
            i4 = rng.choice([x for x in values(-(-rest // i3)) if x <= max_innermost])
            S.append([v, t, i3, i4])
        threads = math.prod(f[1] for f in S)
        vth = math.prod(f[0] for f in S)
        regs = math.prod(f[0] * f[2] * f[3] for f in S)
        ok = threads <= cap and vth <= MAX_VTHREAD and regs <= MAX_REGISTERS
        if ok and (threads >= WARP or math.prod(sp) <= 2 * WARP):
            best = S
            break
        if ok and best is None:
            best = S
    if best is None:
        best = [[1, 1, 1, 1] for _ in sp]
    R = [_level_factors(rng, e, 2, max_innermost) for e in rd]
    for _ in range(tries):
        if math.prod(math.prod(r) for r in R) <= MAX_STEP:
            break
        R = [_level_factors(rng, e, 2, max_innermost) for e in rd]
    return {"S": best, "R": R}


def _thread_choices(dag, extent):
    top = min(dag.max_threads(), max(WARP, _pow2_at_least(extent)))
    return [t for t in (32, 64, 128, 256, 512, 1024) if t <= top] or [top]


def _flat_extent(dag, name, mode):
    return math.prod(dag.reduce(name)) if mode == "cross_thread" else math.prod(dag.spatial(name))


def random_state(dag, sketch, rng, max_innermost=MAX_INNERMOST):
    """A state of GPU ``sketch`` with random tile sizes and annotations."""
    tiles, ann = {}, {}
    for name in dag.tiled:
        mode = sketch[name]
        if mode in TILED:
            tiles[name] = _random_tiles(dag, name, rng, max_innermost)
            ann[name] = {"unroll": rng.choice(UNROLL_STEPS), "vector": rng.choice(FETCH_VECTORS)}
        else:
            ann[name] = {"threads": rng.choice(_thread_choices(dag, _flat_extent(dag, name, mode))),
                         "unroll": rng.choice(UNROLL_STEPS)}
    for name in dag.plain_outputs(sketch):
        ann[name] = {"threads": rng.choice(_thread_choices(dag, math.prod(dag.spatial(name)))), "unroll": 0}
    return {"sketch": dict(sketch), "tiles": tiles, "ann": ann}


def default_state(dag):
    """The state used where no record exists: nothing tiled, every stage bound with 64 threads."""
    sketch = {n: "simple" for n in dag.tiled}
    ann = {n: {"threads": 64, "unroll": 0} for n in dag.tiled + dag.plain_outputs(sketch)}
    return {"sketch": sketch, "tiles": {}, "ann": ann}


def _int(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def check_state(dag, state):
    """Raise SketchError unless ``state`` fits ``dag`` and the GPU's limits (threads per block, virtual
    threads); shared memory is checked when the state is lowered (``SearchTask.verify_state``)."""
    try:
        sk, tiles, ann = state["sketch"], state["tiles"], state["ann"]
        if set(sk) != set(dag.tiled):
            raise SketchError(f"the state's sketch {sk} does not match the reduction stages {dag.tiled}")
        for n, m in sk.items():
            if m not in dag.modes[n] and m != "simple":      # "simple" fits any stage (the default)
                raise SketchError(f"stage {n}: mode {m!r} is not one of its GPU sketches {dag.modes[n]}")
            a = ann[n]
            if not isinstance(a.get("unroll"), int) or a["unroll"] < 0:
                raise SketchError(f"stage {n}: bad annotation {a}")
            if m not in TILED:
                _check_threads(dag, n, a.get("threads"))
                continue
            if a.get("vector") not in FETCH_VECTORS:
                raise SketchError(f"stage {n}: fetch vector must be one of {FETCH_VECTORS}, got {a.get('vector')!r}")
            t = tiles[n]
            for key, ext, parts in (("S", dag.spatial(n), 4), ("R", dag.reduce(n), 2)):
                if len(t[key]) != len(ext):
                    raise SketchError(f"stage {n}: {len(t[key])} {key} tile lists for {len(ext)} axes")
                for fs, e in zip(t[key], ext):
                    if len(fs) != parts or not all(_int(f) for f in fs) or math.prod(fs) > 2 * e:
                        raise SketchError(f"stage {n}: tile sizes {fs} do not fit extent {e}")
            threads = math.prod(f[1] for f in t["S"])
            if threads > dag.max_threads():
                raise SketchError(f"stage {n}: {threads} threads per block (S2 factors "
                                  f"{[f[1] for f in t['S']]}) is more than the target's {dag.max_threads()}")
            vth = math.prod(f[0] for f in t["S"])
            if vth > MAX_VTHREAD:
                raise SketchError(f"stage {n}: {vth} virtual threads is more than {MAX_VTHREAD}")
        for n in dag.plain_outputs(sk):
            _check_threads(dag, n, ann[n].get("threads"))
    except (KeyError, TypeError, AttributeError) as e:
        raise SketchError(f"not an auto-scheduler GPU state ({type(e).__name__}: {e}): {state!r:.200}") from None


def _check_threads(dag, name, t):
    if not _int(t) or t > dag.max_threads():
        raise SketchError(f"stage {name}: threads must be an int in 1..{dag.max_threads()} (the target's "
                          f"threads per block), got {t!r}")


# ---------------------------------------------------------------------------- mutation
def mutate(dag, state, rng, max_innermost=MAX_INNERMOST):
    """A copy of ``state`` with one tile level or one annotation changed (may be invalid: check it)."""
    import json
    s = json.loads(json.dumps(state))
    tiled = [n for n in dag.tiled if s["sketch"][n] in TILED]
    if tiled and rng.random() < 0.7:
        name = rng.choice(tiled)
        kind = rng.choice(["S", "R"])
        ext = dag.spatial(name) if kind == "S" else dag.reduce(name)
        if not ext:
            return s
        k = rng.randrange(len(ext))
        fs = s["tiles"][name][kind][k]
        j = rng.randrange(len(fs))
        left = -(-ext[k] // math.prod(f for i, f in enumerate(fs) if i != j))
        vs = [v for v in values(max(1, left)) if j != len(fs) - 1 or v <= max_innermost]
        fs[j] = rng.choice(vs)
        return s
    name = rng.choice(list(s["ann"]))
    a = s["ann"][name]
    what = rng.choice([k for k in a if k != "unroll" or name in dag.tiled])
    if what == "unroll":
        a["unroll"] = rng.choice(UNROLL_STEPS)
    elif what == "vector":
        a["vector"] = rng.choice(FETCH_VECTORS)
    else:
        mode = s["sketch"].get(name, "simple")
        a["threads"] = rng.choice(_thread_choices(dag, _flat_extent(dag, name, mode)))
    return s


# ---------------------------------------------------------------------------- features
def state_features(dag, state, max_tiled=2, max_s=4, max_r=3, max_plain=2):
    """A fixed-length feature vector of a GPU state (log2 of levels, threads, registers, unroll...)."""
    import math as m
    lg = lambda x: m.log2(max(1, x))   # noqa: E731
    sk, tiles, ann = state["sketch"], state["tiles"], state["ann"]
    row = []
    for name in (dag.tiled + [None] * max_tiled)[:max_tiled]:
        mode = sk.get(name) if name else None
        row += [float(mode == x) for x in MODES]
        if mode not in TILED:
            row += [0.0] * (5 * max_s + 3 * max_r + 7)
            if mode is not None:
                row[-7:-5] = [lg(ann[name]["threads"]), lg(ann[name]["unroll"])]
            continue
        t, a = tiles[name], ann[name]
        lv = [[-(-e // m.prod(f))] + list(f) for e, f in zip(dag.spatial(name), t["S"])]
        rv = [[-(-e // m.prod(f))] + list(f) for e, f in zip(dag.reduce(name), t["R"])]
        for x in (lv + [[1] * 5] * max_s)[:max_s]:
            row += [lg(v) for v in x]
        for x in (rv + [[1] * 3] * max_r)[:max_r]:
            row += [lg(v) for v in x]
        threads = m.prod(x[2] for x in lv)
        regs = m.prod(x[1] * x[3] * x[4] for x in lv)
        step = m.prod(x[1] * x[2] for x in rv)
        blocks = m.prod(x[0] for x in lv)
        row += [lg(threads), lg(a["unroll"]), lg(regs), lg(step), lg(blocks), lg(regs * threads * step),
                lg(a["vector"])]
    for name in (dag.plain_outputs(sk) + [None] * max_plain)[:max_plain]:
        row += [lg(ann[name]["threads"]) if name else 0.0]
    return row


# ---------------------------------------------------------------------------- state -> schedule
def _bind(st, loops, tag):
    from .. import te
    if not loops:
        return None
    ax = st.fuse(*loops) if len(loops) > 1 else loops[0]
    st.bind(ax, te.thread_axis(tag))
    return ax


def _flat(s, st, threads, unroll):
    """Fuse the stage's spatial loops, split by ``threads``, bind to blockIdx.x / threadIdx.x."""
    axes = list(st.op.axis)
    if unroll and st.op.reduce_axis:
        st.pragma(st.op.reduce_axis[0], "auto_unroll_max_step", unroll)
    if not axes:
        return
    fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    bx, tx = st.split(fused, factor=threads)
    _bind(st, [bx], "blockIdx.x")
    _bind(st, [tx], "threadIdx.x")


def _cross_thread(s, T, threads, unroll):
    from .. import te
    st = s[T]
    raxes = list(st.op.reduce_axis)
    r = st.fuse(*raxes) if len(raxes) > 1 else raxes[0]
    _, ki = st.split(r, factor=threads)
    TF = s.rfactor(T, ki)
    st = s[T]
    if st.op.axis:
        _bind(st, list(st.op.axis), "blockIdx.x")
    tx = te.thread_axis("threadIdx.x")
    st.bind(st.op.reduce_axis[0], tx)
    s[TF].compute_at(st, st.op.reduce_axis[0])
    st.set_store_predicate(tx.var.equal(0))
    if unroll:
        s[TF].pragma(s[TF].op.reduce_axis[0], "auto_unroll_max_step", unroll)


def _tile(s, top, inner, shared, fs, rs, a):
    """Multi-level tiling of ``inner`` (its block and thread loops on ``top``) with shared copies."""
    lv = [_split_levels(top, ax, [f[0], f[1], f[2] * f[3]]) for ax, f in zip(top.op.axis, fs)]
    top.reorder(*[l[0] for l in lv], *[l[1] for l in lv], *[l[2] for l in lv], *[l[3] for l in lv])
    _bind(top, [l[0] for l in lv], "blockIdx.x")
    _bind(top, [l[1] for l in lv], "vthread")
    tx = _bind(top, [l[2] for l in lv], "threadIdx.x")
    inner.compute_at(top, tx)
    iv = [_split_levels(inner, ax, [f[3]]) for ax, f in zip(inner.op.axis, fs)]
    rv = [_split_levels(inner, ax, f) for ax, f in zip(inner.op.reduce_axis, rs)]
    inner.reorder(*[r[0] for r in rv], *[r[1] for r in rv], *[x[0] for x in iv], *[r[2] for r in rv],
                  *[x[1] for x in iv])
    if a["unroll"]:
        inner.pragma(rv[0][0], "auto_unroll_max_step", a["unroll"])
    threads = math.prod(f[1] for f in fs)
    for X in shared:
        X.compute_at(inner, rv[-1][0])
        fused = X.fuse(*X.op.axis) if len(X.op.axis) > 1 else X.op.axis[0]
        if a["vector"] > 1:
            fused, vec = X.split(fused, factor=a["vector"])
            X.unroll(vec)
        _, t = X.split(fused, factor=threads)
        _bind(X, [t], "threadIdx.x")


def apply_state(s, dag, state, tensors):
    """Apply GPU ``state`` to schedule ``s`` of the DAG (``tensors``: name -> output tensor)."""
    check_state(dag, state)
    sk, tiles, ann = state["sketch"], state["tiles"], state["ann"]
    plans = []
    for name in dag.tiled:                  # caches first: inlining then folds operands into the copies
        T, mode = tensors[name], sk[name]
        if mode not in TILED:
            continue
        if mode == "cache_write":
            L = s.cache_write(T, "local")
            top, inner, reader = s[T], s[L], L
        else:
            s[T].set_scope("local")
            top, inner, reader = s[tensors[dag.fusable[name]]], s[T], T
        ins = []
        for t in inner.op.input_tensors:
            if t not in ins:
                ins.append(t)
        shared = [s[s.cache_read(t, "shared", [reader])] for t in ins]
        plans.append((name, top, inner, shared))
    for name in dag.inlined:
        s[tensors[name]].compute_inline()
    for name, top, inner, shared in plans:
        _tile(s, top, inner, shared, tiles[name]["S"], tiles[name]["R"], ann[name])
    for name in dag.tiled:
        mode, a = sk[name], ann[name]
        if mode == "cross_thread":
            _cross_thread(s, tensors[name], a["threads"], a["unroll"])
        elif mode == "simple":
            _flat(s, s[tensors[name]], a["threads"], a["unroll"])
    for name in dag.plain_outputs(sk):
        _flat(s, s[tensors[name]], ann[name]["threads"], 0)
    return s



def shared_bytes(s):
    """Shared memory each kernel of schedule ``s`` allocates, by the stage at its root: the copies'
    extents from bound inference (so a state's shared memory is known without lowering it)."""
    from ..ir import dtype as dt
    from ..ir.expr import IntImm
    from ..schedule.bound import infer_bound
    ranges = infer_bound(s)
    out = {}
    for st in s.stages:
        if st.scope != "shared" or st.attach_type == "inline":
            continue
        n = max(1, dt.parse(str(st.op.output(0).dtype))[1] // 8)
        for iv in st.op.axis:
            ext = ranges[iv].extent
            n *= ext.value if isinstance(ext, IntImm) else int(ext)
        root = st
        while root.attach_type == "scope" and root.attach_stage is not None:
            root = root.attach_stage
        out[root.op.name] = out.get(root.op.name, 0) + n
    return out


def check_shared(dag, s):
    """Raise SketchError when a kernel of applied schedule ``s`` needs more shared memory than the target
    has per block."""
    limit = dag.limits["max_shared_memory_per_block"]
    for name, n in shared_bytes(s).items():
        if n > limit:
            raise SketchError(f"stage {name}: its shared-memory copies take {n} bytes per block, more than the "
                              f"target's {limit}; smaller tiles (S or R factors)")
