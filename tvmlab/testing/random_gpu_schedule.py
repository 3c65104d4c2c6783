"""Random GPU schedules for the fuzzer's cuda mode: every stage bound to blocks and threads.

``GPUScheduler(s, rng).run()`` first places each intermediate stage (inlined,
computed inside a reader, or a kernel of its own), then schedules each kernel
from the outputs back:

- data-parallel axes split by random factors (which need not divide), fused,
  bound to blockIdx / vthread / threadIdx in one or two dimensions (a third
  axis on blockIdx.z or left serial), with serial parts inside each thread;
- reductions run serially in each thread, through a ``cache_write(.., "local")``
  stage computed at the thread (or block) axis, across threads after rfactor
  (the rfactored axis bound to threadIdx.x or .y, with or without a store
  predicate), or with the reduce axis split by nparts and bound to a thread;
- inputs staged through ``cache_read(.., "shared")`` copies computed at the block
  axis or a serial reduction loop and fetched cooperatively (their axes bound to
  the kernel's threadIdx axes with the same extents), double buffered at a serial
  loop, and ``cache_read(.., "local")`` copies inside the thread;
- intermediates computed at a reader's block axis (shared: fetched cooperatively
  or computed by every thread) or inside its threads (local);
- unroll pragmas and unrolled small loops.

Every step is a schedule primitive, so the schedule's trace replays it.  A step
that raises ScheduleError must leave the schedule unchanged; it ends the
schedule as a refusal (``Refused``), which the fuzzer counts but does not fail.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ScheduleError
from ..ir.tensor import ComputeOp, IterVar, PlaceholderOp
from .random_schedule import Failure, _readers, leaf_extents, snapshot

MAX_THREADS = 512          # threads per block the generator uses (the device allows 1024)
THREADS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 32, 64, 128]
THREAD_W = [1, 2, 1, 3, 1, 1, 3, 1, 3, 1, 3, 2, 1]
UNROLL_MAX = 16
TAGS = ("x", "y", "z")
MAX_Z = 64                 # threadIdx.z's limit
SHARED_BUDGET = 32 << 10   # bytes of shared memory per kernel the generator plans for (whole tensors)


class Refused(Exception):
    """A primitive the schedule refused (ScheduleError), with the schedule left unchanged."""


def _te():
    from .. import te
    return te


def thread_tag(st, iv):
    t = st.attr(iv).bind_thread
    return t.thread_tag if t is not None else None


def _kind(tag):
    if tag is None:
        return None
    return "vthread" if tag in ("vthread", "cthread") else tag.split(".")[0]


def _one_element(reader, st):
    """Whether ``reader`` reads ``st`` at one index only: then the part of ``st`` an iteration of
    the reader's innermost loop needs is one element, and the loops around a reduction of it run
    alike in every thread (a reduction across threads needs barriers every thread reaches)."""
    from ..schedule.bound import accesses
    reads = accesses(reader.op.body).get(st.op.output(0), [])
    return len({tuple(str(i) for i in idx) for idx in reads}) == 1


class GPUScheduler:
    """Builds one random GPU schedule on ``s`` (a fresh ``te.create_schedule``)."""

    def __init__(self, s, rng, log=None):
        self.s, self.rng = s, rng
        self.log = log if log is not None else []
        self.threads = {}          # root stage name -> {"threadIdx.x": extent, ...}
        self.shared = {}           # root stage name -> bytes of shared tensors planned
        self.free_x = set()        # root stages that leave threadIdx.x to a reduction computed inside
        self.unrolled = set()      # root stages whose kernel has an unrolled loop or unroll pragma

    # -------------------------------------------------------- randomness
    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq, w=None):
        seq = list(seq)
        if not seq:
            return None
        if w is None:
            return seq[int(self.rng.integers(0, len(seq)))]
        p = np.asarray(w, dtype=float)
        return seq[int(self.rng.choice(len(seq), p=p / p.sum()))]

    def nthreads(self, cap):
        opts = [(t, w) for t, w in zip(THREADS, THREAD_W) if t <= cap]
        return int(self.pick([t for t, _ in opts], [w for _, w in opts]))

    # -------------------------------------------------------- applying primitives
    def do(self, what, fn, *args, **kw):
        """Apply one primitive; a ScheduleError must leave the schedule unchanged and ends it (Refused)."""
        before = snapshot(self.s)
        try:
            out = fn(*args, **kw)
        except ScheduleError as e:
            if snapshot(self.s) != before:
                raise Failure("schedule", f"{what} raised ScheduleError ({e}) but changed the schedule")
            self.log.append(f"# {what}: ScheduleError: {e}")
            raise Refused(f"{what}: {e}") from None
        self.log.append(what)
        return out

    def split(self, st, iv, factor=None, nparts=None):
        how = f"factor={factor}" if factor is not None else f"nparts={nparts}"
        return self.do(f"s[{st.name}].split({iv.var.name}, {how})", st.split, iv, factor=factor, nparts=nparts)

    def fuse(self, st, *ivs):
        if len(ivs) == 1:
            return ivs[0]
        return self.do(f"s[{st.name}].fuse({', '.join(iv.var.name for iv in ivs)})", st.fuse, *ivs)

    def bind(self, st, iv, tag):
        self.do(f"s[{st.name}].bind({iv.var.name}, {tag})", st.bind, iv, _te().thread_axis(tag))

    def reorder(self, st, ivs):
        ivs = [iv for iv in ivs if iv is not None]
        if len(ivs) > 1 and ivs != [iv for iv in st.leaf_iter_vars if iv in ivs]:
            self.do(f"s[{st.name}].reorder({', '.join(iv.var.name for iv in ivs)})", st.reorder, *ivs)

    def compute_at(self, st, parent, iv):
        self.do(f"s[{st.name}].compute_at(s[{parent.name}], {iv.var.name})", st.compute_at, parent, iv)

    def extent(self, st, iv):
        return leaf_extents(st).get(iv) or 1

    # -------------------------------------------------------- the schedule
    def run(self):
        stages = [st for st in self.s.stages if isinstance(st.op, ComputeOp)]
        place = self.plan(stages)
        for st in stages:
            if place[st.name] == "inline":
                self.do(f"s[{st.name}].compute_inline()", st.compute_inline)
        for st in reversed(stages):
            if place[st.name] == "root":
                self.kernel(st)
            elif place[st.name] == "at":
                self.attach(st)
        for st in [q for q in self.s.stages if isinstance(q.op, ComputeOp) and q.attach_type != "inline"]:
            self.unroll(st)

    def plan(self, stages):
        """Placement of each stage: "root" (a kernel), "at" (inside its one reader) or "inline"."""
        place = {}
        readers = {st.name: [q for q in stages if q is not st and any(
            self.s.stage_map.get(t.op) is st for t in q.op.input_tensors)] for st in stages}

        def effective(st):
            out = []
            for q in readers[st.name]:
                for r in (effective(q) if place.get(q.name) == "inline" else [q]):
                    if r not in out:
                        out.append(r)
            return out
        for st in reversed(stages):
            if st.is_output or not readers[st.name]:
                place[st.name] = "root"
                continue
            opts, w = ["root"], [2]
            if not st.op.is_reduction:
                opts.append("inline")
                w.append(3)
            if len(effective(st)) == 1:
                opts.append("at")
                w.append(4)
            place[st.name] = self.pick(opts, w)
            readers_now = effective(st)
            if place[st.name] == "at" and st.op.is_reduction and readers_now[0].is_output and self.chance(0.4):
                self.free_x.add(readers_now[0].name)
        return place

    # -------------------------------------------------------- kernels
    def kernel(self, st):
        """Bind a root stage's axes, choosing how its reduction (if any) runs."""
        t = st.op.output(0)
        red = st.op.is_reduction
        mode = "serial"
        if red:
            mode = self.pick(["serial", "cache_write", "rfactor", "nparts", "bind"], [3, 3, 3, 2, 1])
        elif self.chance(0.2):
            mode = "cache_write"
        avoid = ("threadIdx.x",) if st.name in self.free_x else ()
        if mode == "cache_write":
            cl = self.s[self.do(f"s.cache_write({t.name}, 'local')", self.s.cache_write, t, "local")]
            st = self.s[t]
            threads = self.bind_spatial(st, avoid)
            self.threads[st.name] = threads
            self.place_inside(cl, st, prefer_thread=0.8)
            self.reduce_serial(cl, threads)
            return
        if mode == "serial":
            threads = self.bind_spatial(st, avoid)
            self.threads[st.name] = threads
            if red:
                self.reduce_serial(st, threads)
            else:
                self.cache_inputs(st, threads)
            return
        self.cross_thread(st, mode)

    def bind_spatial(self, st, avoid=(), cap=MAX_THREADS):
        """Split, fuse and bind ``st``'s data-parallel leaves; returns {thread tag: extent}."""
        axes = [iv for iv in st.leaf_iter_vars if iv.iter_type != IterVar.REDUCE]
        dims = [d for d in TAGS if f"threadIdx.{d}" not in avoid]
        ndim = 1 if len(dims) < 2 or not axes or self.chance(0.55) else 2
        if axes and len(axes) > ndim and self.chance(0.6):
            k = int(self.rng.integers(0, len(axes) - ndim + 1))
            fused = self.fuse(st, *axes[k:k + len(axes) - ndim + 1])
            axes = axes[:k] + [fused] + axes[k + len(axes) - ndim + 1:]
        bound = list(axes)
        if len(axes) > ndim:
            bound = [axes[i] for i in sorted(self.rng.choice(len(axes), ndim, replace=False).tolist())]
        rest = [iv for iv in axes if iv not in bound]
        if len(bound) == 2 and self.chance(0.3):
            bound.reverse()                        # threadIdx.x on the outer axis
        budget = cap
        parts = []                                 # per bound axis: (block, vthread, thread, serial)
        for n, iv in enumerate(bound):
            d = dims[len(bound) - 1 - n] if len(bound) > 1 else self.pick(dims, [6, 1, 1][:len(dims)])
            parts.append(self.decompose(st, iv, d, budget))
            budget = max(1, budget // max(1, parts[-1][4]))
        threads = {f"threadIdx.{p[5]}": p[4] for p in parts if p[2] is not None}
        zaxis = None
        if rest and "blockIdx.z" not in [f"blockIdx.{p[5]}" for p in parts] and self.chance(0.3):
            zaxis = rest.pop(int(self.rng.integers(0, len(rest))))
            self.bind(st, zaxis, "blockIdx.z")
        host = [iv for iv in rest if self.extent(st, iv) <= 4 and self.chance(0.2)]   # around the launch
        inner = [iv for iv in rest if iv not in host]
        order = host + [zaxis] + [p[0] for p in parts] + [p[1] for p in parts] + [p[2] for p in parts] \
            + [p[3] for p in parts] + inner
        self.reorder(st, order)
        return threads

    def decompose(self, st, iv, d, cap):
        """``iv`` -> (block, vthread, thread, serial, thread extent, dim); binds the parts.

        The thread part always has a constant extent: bound inference may shrink an intermediate's
        axes to what its readers need, and the kernel's other stages bind the same extent."""
        ext = self.extent(st, iv)
        cap = min(cap, MAX_Z) if d == "z" else cap
        t = self.nthreads(min(cap, max(2, 2 * ext)))
        v = int(self.pick([2, 3, 4])) if self.chance(0.15) else 1
        p = int(self.pick([2, 3, 4])) if self.chance(0.2) else 1
        block = vt = serial = None
        if st.is_output and ext <= cap and self.chance(0.15):
            thread = iv                             # the whole axis on threads, one block
        elif self.chance(0.25):
            nb = max(1, -(-ext // (t * v * p)) + int(self.rng.integers(-1, 2)))
            block, thread = self.split(st, iv, nparts=nb)
            t = max(1, min(t, -(-self.extent(st, thread) // (v * p))))
            if v > 1:
                vt, thread = self.split(st, thread, nparts=v)
            thread, serial = self.split(st, thread, nparts=t)
        else:
            block, thread = self.split(st, iv, factor=t * v * p)
            if v > 1:
                vt, thread = self.split(st, thread, nparts=v)
            if p > 1:
                if self.chance(0.5):
                    thread, serial = self.split(st, thread, nparts=t)
                else:
                    thread, serial = self.split(st, thread, factor=p)
        t = self.extent(st, thread)
        if block is not None and (self.extent(st, block) > 4 or self.chance(0.8)):
            self.bind(st, block, f"blockIdx.{d}")
        if vt is not None:
            self.bind(st, vt, "vthread")
        self.bind(st, thread, f"threadIdx.{d}")
        return block, vt, thread, serial, t, d

    # -------------------------------------------------------- reductions
    def reduce_serial(self, st, threads, loops=True):
        """Split ``st``'s reduce axes (serial in each thread) and stage its inputs through caches."""
        red = [iv for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]
        outer = []
        for iv in red:
            if self.chance(0.6):
                f = int(self.rng.integers(1, 17))
                ko, ki = self.split(st, iv, factor=f) if self.chance(0.8) else self.split(st, iv, nparts=f)
                outer.append(ko)
        if outer and self.chance(0.6):
            leaves = st.leaf_iter_vars
            last = max([k for k, iv in enumerate(leaves) if thread_tag(st, iv) is not None], default=-1)
            movable = [iv for iv in leaves[last + 1:] if st.attr(iv).kind == "serial"]
            self.reorder(st, outer + [iv for iv in movable if iv not in outer])
        self.cache_inputs(st, threads, loops)

    def cross_thread(self, st, mode):
        """A reduction whose parts are combined across the threads of a block."""
        t = st.op.output(0)
        tag = "threadIdx.x" if self.chance(0.75) else "threadIdx.y"
        red = [iv for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]
        if len(red) > 1 and self.chance(0.4):
            red = [self.fuse(st, *red)]
        k = self.pick(red)
        ext = self.extent(st, k)
        pow2 = self.chance(0.6)
        n = int(self.pick([2, 4, 8, 16, 32, 64, 128] if pow2 else [3, 5, 6, 12, 20, 24, 40]))
        if mode == "bind" and ext <= 256:
            n = ext
        elif mode == "bind":
            mode = "nparts"
        rf = None
        if mode == "rfactor":
            if self.chance(0.6):
                _, ki = self.split(st, k, factor=n)
                axis = ki
            else:
                axis, _ = self.split(st, k, nparts=n)
            fa = int(self.rng.integers(0, len(st.op.axis) + 1)) if self.chance(0.2) else 0
            rf = self.do(f"s.rfactor({t.name}, {axis.var.name}, factor_axis={fa})", self.s.rfactor, t, axis, fa)
            rf = self.s[rf[0] if isinstance(rf, (list, tuple)) else rf]
            st = self.s[t]
            rk = st.op.reduce_axis[0]
        elif mode == "nparts":
            rk, _ = self.split(st, k, nparts=n)
        else:
            rk = k
        n = self.extent(st, rk)
        self.bind(st, rk, tag)
        threads = self.bind_spatial(st, avoid=(tag,), cap=max(1, MAX_THREADS // n))
        threads[tag] = n
        self.threads[st.name] = threads
        leaves = st.leaf_iter_vars
        self.reorder(st, [iv for iv in leaves if iv is not rk] + [rk] if self.chance(0.3) else leaves)
        if self.chance(0.4):
            pred = _te().thread_axis(tag).var.equal(0)
            self.do(f"s[{st.name}].set_store_predicate({tag} == 0)", st.set_store_predicate, pred)
        if rf is not None:
            self.compute_at(rf, st, rk)
            self.reduce_serial(rf, threads)
        else:
            self.cache_inputs(st, threads)

    # -------------------------------------------------------- placing producers
    def context(self, st, iv):
        """Where leaf ``iv`` of ``st`` runs: "thread" (a threadIdx in scope), "block" or "host"."""
        kinds = set()
        for q, leaves in self.chain(st, iv):
            kinds.update(_kind(thread_tag(q, x)) for x in leaves)
        return "thread" if "threadIdx" in kinds else "block" if "blockIdx" in kinds else "host"

    def chain(self, st, iv):
        """[(stage, leaves in scope at iv)] from ``st`` up to its root."""
        out, q, at = [], st, iv
        while q is not None:
            leaves = q.leaf_iter_vars
            out.append((q, leaves[:leaves.index(at) + 1] if at in leaves else []))
            at, q = q.attach_ivar, (q.attach_stage if q.attach_type == "scope" else None)
        return out

    def root_of(self, st):
        while st.attach_type == "scope":
            st = st.attach_stage
        return st

    def kernel_threads(self, st):
        return self.threads.get(self.root_of(st).name, {})

    def attach_points(self, reader):
        """(stage, leaf) where a producer of ``reader`` may be computed: ``reader``'s leaves and those of
        the stages it is computed in, outside its own attach point."""
        pts, q, limit = [], reader, None
        while q is not None:
            leaves = q.leaf_iter_vars
            upto = leaves if limit is None else leaves[:leaves.index(limit) + 1]
            pts += [(q, iv) for iv in upto if self.context(q, iv) != "host"]
            limit, q = q.attach_ivar, (q.attach_stage if q.attach_type == "scope" else None)
        return pts

    def attach(self, st):
        """Compute intermediate ``st`` inside its one reader."""
        readers = _readers(self.s, st)
        if len(readers) != 1:
            self.kernel(st)
            return
        r = readers[0]
        if st.op.is_reduction and "threadIdx.x" not in self.kernel_threads(r) and self.chance(0.8) \
                and r.attach_type == "root" and _one_element(r, st) \
                and self.context(r, r.leaf_iter_vars[-1]) == "thread":
            self.across_threads_inside(st, readers[0])
            return
        self.place_inside(st, readers[0], prefer_thread=0.5)
        # its loops may run a different number of times in each thread: no barriers inside them
        if st.op.is_reduction:
            self.reduce_serial(st, self.kernel_threads(st), loops=False)
        else:
            self.cache_inputs(st, self.kernel_threads(st), loops=False)

    def across_threads_inside(self, st, reader):
        """Reduce ``st`` across threadIdx.x, which its reader's kernel leaves free, inside one of the
        reader's threads (TVM's rfactor with an elementwise consumer): every threadIdx.x of the
        block gets the total, and the reader's stores repeat along it (or a predicate picks one)."""
        t = st.op.output(0)
        threads = self.kernel_threads(reader)
        cap = max(1, MAX_THREADS // max(1, math.prod(threads.values())))
        red = [iv for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]
        k = self.pick(red)
        n = int(self.pick([n for n in (2, 3, 4, 5, 8, 12, 16, 32) if n <= cap] or [1]))
        rf = None
        if self.chance(0.7):
            _, ki = self.split(st, k, factor=n)
            rf = self.do(f"s.rfactor({t.name}, {ki.var.name})", self.s.rfactor, t, ki)
            rf = self.s[rf[0] if isinstance(rf, (list, tuple)) else rf]
            st = self.s[t]
            rk = st.op.reduce_axis[0]
        else:
            rk, _ = self.split(st, k, nparts=n)
        self.compute_at(st, reader, reader.leaf_iter_vars[-1])      # one element per iteration
        self.bind(st, rk, "threadIdx.x")
        threads["threadIdx.x"] = self.extent(st, rk)
        # a predicate on st leaves its (local) total in threadIdx.x == 0 only: the reader then
        # stores from that thread alone, as in TVM's schedule
        pred = _te().thread_axis("threadIdx.x").var.equal(0)
        root = self.root_of(st)
        which = "none" if root.store_predicate is not None else self.pick(
            ["none", "reader", "both"], [2, 1, 1 if reader is root else 0])
        if which == "both":
            self.do(f"s[{st.name}].set_store_predicate(threadIdx.x == 0)", st.set_store_predicate, pred)
        if which != "none":
            self.do(f"s[{root.name}].set_store_predicate(threadIdx.x == 0)", root.set_store_predicate, pred)
        if rf is not None:
            self.compute_at(rf, st, rk)
            self.reduce_serial(rf, threads, loops=False)
        else:
            self.cache_inputs(st, threads, loops=False)

    def use_shared(self, st, t):
        """Whether tensor ``t`` (whole) still fits the shared memory planned for ``st``'s kernel."""
        root = self.root_of(st).name
        size = math.prod(int(d.value) for d in t.shape) * np.dtype(t.dtype).itemsize
        if self.shared.get(root, 0) + size > SHARED_BUDGET:
            return False
        self.shared[root] = self.shared.get(root, 0) + size
        return True

    def place_inside(self, st, reader, prefer_thread):
        pts = self.attach_points(reader)
        if not pts:
            raise Refused(f"{st.name}: its reader {reader.name} has no loop inside a kernel")
        inner = [p for p in pts if self.context(*p) == "thread"]
        block = [p for p in pts if self.context(*p) == "block"]
        if block and inner and not self.use_shared(reader, st.op.output(0)):
            block = []
        use = inner if inner and (not block or self.chance(prefer_thread)) else block
        parent, iv = self.pick(use)
        self.compute_at(st, parent, iv)
        if self.context(parent, iv) == "block" and self.chance(0.75):
            if st.scope == "local":                # a cache_write stage: each thread its own copy
                if self.chance(0.5):
                    return
                self.do(f"s[{st.name}].set_scope('shared')", st.set_scope, "shared")
            self.cooperate(st)

    def cooperate(self, st, threads=None):
        """Bind the data-parallel axes of a block-level stage to the kernel's threads (same extents)."""
        threads = threads if threads is not None else self.kernel_threads(st)
        tags = [t for t in ("threadIdx.z", "threadIdx.y", "threadIdx.x") if t in threads]
        if not tags:
            return
        if len(tags) > 1 and self.chance(0.25):
            tags = [self.pick(tags)]               # the other threads repeat the work (one writer stores)
        axes = [iv for iv in st.leaf_iter_vars if iv.iter_type != IterVar.REDUCE]
        if not axes:
            return
        f = self.fuse(st, *axes)
        if self.chance(0.5):
            bound, cur = [], f                     # outer serial loop, threads inside: factor splits
            for tag in reversed(tags):
                cur, inner = self.split(st, cur, factor=threads[tag])
                bound.insert(0, (inner, tag))
        else:
            bound, cur = [], f                     # threads outside, serial inside: nparts splits
            for tag in tags:
                outer, cur = self.split(st, cur, nparts=threads[tag])
                bound.append((outer, tag))
        for iv, tag in bound:
            self.bind(st, iv, tag)

    def cache_inputs(self, st, threads, loops=True):
        """Stage some of the placeholders ``st`` reads through shared or local copies (shared ones at
        a block-level loop or, with ``loops``, at a serial reduction loop of ``st``)."""
        srcs = []
        for t in st.op.input_tensors:
            src = self.s.stage_map.get(t.op)
            if src is not None and isinstance(src.op, PlaceholderOp) and t not in srcs:
                srcs.append(t)
        pts = self.attach_points(st)
        inner = [p for p in pts if self.context(*p) == "thread"]
        # shared: at a block-level loop, or a serial reduction loop every thread of the block runs alike
        outer = [p for p in pts if self.context(*p) == "block" or (
            loops and p[0] is st and st.attr(p[1]).kind == "serial" and p[1].iter_type == IterVar.REDUCE)]
        for t in srcs:
            if self.chance(0.5):
                continue
            scope = self.pick(["shared", "local"], [3, 1])
            if not (outer if scope == "shared" else inner) or scope == "shared" and not self.use_shared(st, t):
                continue
            cache = self.s[self.do(f"s.cache_read({t.name}, {scope!r}, [{st.name}])",
                                   self.s.cache_read, t, scope, [st.op.output(0)])]
            if scope == "local":
                self.compute_at(cache, *self.pick(inner))
                continue
            parent, iv = self.pick(outer)
            local = None
            below = [p for p in inner if self._after(p, (parent, iv))]
            if below and self.chance(0.2):         # shared -> local chain, as in TVM's conv2d schedules
                local = self.s[self.do(f"s.cache_read({cache.name}, 'local', [{st.name}])", self.s.cache_read,
                                       cache.op.output(0), "local", [st.op.output(0)])]
            self.compute_at(cache, parent, iv)
            if local is not None:
                self.compute_at(local, *self.pick(below))
            self.cooperate(cache, threads)
            if self.context(parent, iv) == "thread" and self.chance(0.5) and self.use_shared(st, t):
                self.do(f"s[{cache.name}].double_buffer()", cache.double_buffer)      # (two tiles)

    @staticmethod
    def _after(p, q):
        """Whether attach point ``p`` is inside ``q``: a later leaf of the same stage, or any leaf of a
        stage computed inside ``q``'s loop."""
        (st, iv), up = p, 0
        while st is not q[0]:
            if st.attach_type != "scope":
                return False
            st, iv, up = st.attach_stage, st.attach_ivar, 1
        return st.leaf_iter_vars.index(iv) + up > q[0].leaf_iter_vars.index(q[1])

    # -------------------------------------------------------- unrolling
    def unroll(self, st):
        leaves = st.leaf_iter_vars
        if not leaves:
            return
        last = leaves[-1]
        if self.chance(0.12) and last.iter_type != IterVar.REDUCE and st.attr(last).kind == "serial" \
                and (leaf_extents(st).get(last) or 99) <= 8 \
                and not any(q.attach_stage is st and q.attach_ivar is last for q in self.s.stages):
            # a GPU kernel runs a vectorized loop as a loop in each thread
            self.do(f"s[{st.name}].vectorize({last.var.name})", st.vectorize, last)
        # one unrolling per kernel: nested ones multiply the code NVRTC has to compile
        root = self.root_of(st).name
        if root in self.unrolled:
            return
        if self.chance(0.15):
            self.unrolled.add(root)
            iv = leaves[0]
            step = int(self.pick([4, 16, 64]))
            self.do(f"s[{st.name}].pragma({iv.var.name}, 'auto_unroll_max_step', {step})",
                    st.pragma, iv, "auto_unroll_max_step", step)
            if self.chance(0.5):
                self.do(f"s[{st.name}].pragma({iv.var.name}, 'unroll_explicit', False)",
                        st.pragma, iv, "unroll_explicit", False)
        if self.chance(0.2):
            ext = leaf_extents(st)
            serial = [iv for iv in leaves if st.attr(iv).kind == "serial" and (ext.get(iv) or 99) <= UNROLL_MAX
                      and not any(q.attach_stage is st and q.attach_ivar is iv for q in self.s.stages)]
            iv = self.pick(serial)
            if iv is not None and root not in self.unrolled:
                self.unrolled.add(root)
                self.do(f"s[{st.name}].unroll({iv.var.name})", st.unroll, iv)
