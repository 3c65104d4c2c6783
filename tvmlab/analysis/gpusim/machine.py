"""The SIMT machine: a kernel's statements compiled into closures ``g(ch, m)`` run in lockstep over a
chunk of blocks, ``m`` being the mask of active threads.

``IfThenElse`` runs each branch under the threads that take it, a loop whose trip count differs
between threads runs to the largest count with the finished threads masked off, and a barrier checks
that each block arrives whole (else it is a divergent barrier: a deadlock on hardware, and the end of
the simulation) before it starts the block's next epoch.
"""
from __future__ import annotations

import numpy as np

from ...codegen.common import written_buffers
from ...errors import SimulationError
from ...ir import dtype as dt
from ...ir.expr import Call, IntImm
from ...ir.functor import IRVisitor
from ...ir.tensor import IterVar
from ...lower.split_host_device import THREAD_TAGS
from ...lower.thread_sync import is_barrier
from ...lower.tensor_core import WMMA_CALLS, WMMA_SCOPES, infer_fragments
from .expr import ExprCompiler, narrow
from .memory import Memory, garbage
from .report import (DIVERGENT_BARRIER, DIVERGENT_SHUFFLE, Finding, Launch, coords, stmt_text, thread_text,
                     tuple_text)

# Threads simulated at once (whole blocks); a launch with more runs in chunks of blocks.
MAX_THREADS = 1 << 15
# A while loop running longer than this is taken for a hang.
MAX_WHILE_STEPS = 1 << 20


class Diverged(Exception):
    """A divergent barrier: the launch cannot go on."""


class _ThreadVars(IRVisitor):
    """Vars named after a thread tag (a kernel written by hand, without ``thread_vars``)."""

    def __init__(self):
        super().__init__()
        self.vars = {}

    def visit_Var(self, v):
        if v.name in THREAD_TAGS:
            self.vars.setdefault(v, v.name)


class KernelSim:
    """One kernel PrimFunc compiled for simulation; ``launch`` runs it on a grid."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.name = kernel.name
        tv = kernel.attrs.get("thread_vars") or {}
        self.thread_vars = {v: tag for tag, v in tv.items()}
        found = _ThreadVars()
        found.visit(kernel.body)
        for v, tag in found.vars.items():
            self.thread_vars.setdefault(v, tag)
        self.written = set(written_buffers(kernel.body))
        self.sites = []
        self._texts = {}
        self.cur_site = 0
        self.expr = ExprCompiler(self)
        self.fragments = infer_fragments(kernel.body)
        self.body = self.stmt(kernel.body)

    # ---------------------------------------------------------------- sites
    def _site(self, s):
        self.sites.append(s)
        self.cur_site = len(self.sites) - 1
        return self.cur_site

    def site_text(self, k):
        t = self._texts.get(k)
        if t is None:
            t = self._texts[k] = stmt_text(self.sites[k])
        return t

    # ---------------------------------------------------------------- memory and shuffles (for ExprCompiler)
    def load(self, e, fi, fp):
        var, lanes, site = e.buffer_var, dt.lanes(e.dtype), self.cur_site

        def load(ch, m):
            return ch.memory(var).load(ch, fi(ch, m), m, fp(ch, m) if fp else None, lanes, site)
        return load

    def shuffle(self, e, fv, fa, fw):
        down, site = e.op == "tvm_warp_shuffle_down", self.cur_site
        return lambda ch, m: ch.shuffle(fv(ch, m), fa(ch, m), fw(ch, m), down, m, site)

    # ---------------------------------------------------------------- statements
    def stmt(self, s):
        fn = getattr(self, "s_" + type(s).__name__, None)
        if fn is None:
            raise SimulationError(f"{self.name}: the GPU simulator cannot run {type(s).__name__} statements "
                                  "(only lowered kernels, AST3)")
        return fn(s)

    def s_SeqStmt(self, s):
        fs = [self.stmt(x) for x in s.seq]

        def seq(ch, m):
            for f in fs:
                f(ch, m)
        return seq

    def s_Evaluate(self, s):
        site = self._site(s)
        if is_barrier(s):
            return lambda ch, m: ch.barrier(m, site)
        if isinstance(s.value, IntImm):
            return lambda ch, m: None
        if isinstance(s.value, Call) and s.value.op in WMMA_CALLS:
            from .wmma import compile_call
            return compile_call(self, s, site)
        f = self.expr(s.value)

        def evaluate(ch, m):
            f(ch, m)
        return evaluate

    def s_Store(self, s):
        site = self._site(s)
        fv, fi = self.expr(s.value), self.expr(s.index)
        fp = self.expr(s.predicate) if s.predicate is not None else None
        var, lanes = s.buffer_var, dt.lanes(s.value.dtype)

        def store(ch, m):
            v = fv(ch, m)                 # the value's reads come before the write
            ch.memory(var).store(ch, fi(ch, m), v, m, fp(ch, m) if fp else None, lanes, site)
        return store

    def s_LetStmt(self, s):
        self._site(s)
        fv, var = self.expr(s.value), s.var
        fb = self.stmt(s.body)

        def let(ch, m):
            ch.env[var] = fv(ch, m)
            fb(ch, m)
        return let

    def s_AttrStmt(self, s):
        fb = self.stmt(s.body)
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar) and s.node.thread_tag in THREAD_TAGS:
            var, tag = s.node.var, s.node.thread_tag

            def bind(ch, m):
                ch.env[var] = ch.threads[tag]
                fb(ch, m)
            return bind
        return fb

    def s_AssertStmt(self, s):
        return self.stmt(s.body)          # as on the CUDA target, which does not check asserts

    def s_IfThenElse(self, s):
        site = self._site(s)
        fc = self.expr(s.condition)
        ft = self.stmt(s.then_case)
        fe = self.stmt(s.else_case) if s.else_case is not None else None

        def branch(ch, m):
            c = fc(ch, m)
            if not isinstance(c, np.ndarray):
                if c:
                    ft(ch, m)
                elif fe is not None:
                    fe(ch, m)
                return
            mt = narrow(ch, m, c)
            if mt is not None:
                ch.ctx.append((site, "then"))
                ft(ch, mt)
                ch.ctx.pop()
            if fe is not None:
                mf = narrow(ch, m, np.logical_not(c))
                if mf is not None:
                    ch.ctx.append((site, "else"))
                    fe(ch, mf)
                    ch.ctx.pop()
        return branch

    def s_For(self, s):
        site = self._site(s)
        flo, fext, var = self.expr(s.min), self.expr(s.extent), s.loop_var
        fb = self.stmt(s.body)

        def loop(ch, m):
            lo, ext = flo(ch, m), fext(ch, m)
            env = ch.env
            if not isinstance(ext, np.ndarray):
                if isinstance(lo, np.ndarray):
                    for k in range(int(ext)):
                        env[var] = lo + k
                        fb(ch, m)
                    return
                lo = int(lo)
                for k in range(lo, lo + int(ext)):
                    env[var] = k
                    fb(ch, m)
                return
            ext = np.broadcast_to(ext, (ch.N,))
            top = int(ext[m].max()) if m.any() else 0
            ch.ctx.append((site, "a loop whose trip count differs between threads"))
            for k in range(top):
                mk = narrow(ch, m, ext > k)
                if mk is None:
                    break
                env[var] = lo + k
                fb(ch, mk)
            ch.ctx.pop()
        return loop

    def s_While(self, s):
        site = self._site(s)
        fc, fb = self.expr(s.condition), self.stmt(s.body)

        def loop(ch, m):
            ch.ctx.append((site, "a while loop"))
            mk, steps = narrow(ch, m, fc(ch, m)), 0
            while mk is not None:
                fb(ch, mk)
                steps += 1
                if steps > MAX_WHILE_STEPS:
                    raise SimulationError(f"{self.name}: `{self.site_text(site)}` ran {MAX_WHILE_STEPS} "
                                          "iterations without ending; the kernel looks like it hangs")
                mk = narrow(ch, mk, fc(ch, mk))
            ch.ctx.pop()
        return loop

    def s_Allocate(self, s):
        site = self._site(s)
        fext = [self.expr(x) for x in s.extents]
        fb = self.stmt(s.body)
        var, dtype, scope = s.buffer_var, s.dtype, s.scope
        if scope in WMMA_SCOPES:
            from .wmma import WARP, FragmentMemory
            frag = self.fragments[var]

            def fragments(ch, m):
                ch.mem[var] = FragmentMemory(var.name, frag, ch.C * -(-ch.T // WARP))
                fb(ch, m)
            return fragments
        if scope not in ("shared", "local", "warp", ""):
            raise SimulationError(f"{self.name}: buffer {var.name} is allocated in {scope!r} memory inside "
                                  "the kernel; kernels allocate only 'shared' and 'local' buffers")
        races = var in self.written

        def alloc(ch, m):
            n = 1
            for f in fext:
                x = f(ch, m)
                if isinstance(x, np.ndarray):
                    raise SimulationError(f"{self.name}: `{self.site_text(site)}`: the size of {var.name} "
                                          "differs between threads")
                n *= int(x)
            if scope == "shared":
                if var not in ch.mem:     # one copy per block for the whole kernel, wherever declared
                    ch.mem[var] = Memory(var.name, "shared", dtype, n, garbage(dtype, ch.C * n), races, True)
            else:
                ch.mem[var] = Memory(var.name, "local", dtype, n, garbage(dtype, ch.N * n), False, True)
            fb(ch, m)
        return alloc

    # ---------------------------------------------------------------- launch
    def launch(self, grid, block, args, report, max_threads=MAX_THREADS, traffic=False):
        """Run on ``grid`` x ``block`` threads; ``args`` align with the kernel's params (flat numpy arrays
        for buffers, numbers for scalars).  Findings go to ``report``; returns False after a divergent
        barrier.  With ``traffic`` the launch record counts its memory traffic (``traffic.Traffic``)."""
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        rec = Launch(self.name, grid, block)
        report.launches.append(rec)
        env, mem = {}, {}
        for p, a in zip(self.kernel.params, args):
            if p.dtype == "handle":
                a = a.reshape(-1)
                buf = self.kernel.buffer_map.get(p)
                mem[p] = Memory(buf.name if buf is not None else p.name, "global", str(a.dtype), a.size, a,
                                p in self.written, False)
            else:
                env[p] = a
        t = block[0] * block[1] * block[2]
        nblocks = grid[0] * grid[1] * grid[2]
        per = max(1, min(nblocks, max_threads // t))
        run = _Run(self, grid, block, report, rec)
        if traffic:
            from .traffic import Traffic
            run.traffic = rec.traffic = Traffic(self.name)
        with np.errstate(all="ignore"):
            for start in range(0, nblocks, per):
                ch = Chunk(run, start, min(per, nblocks - start), env, mem)
                try:
                    self.body(ch, ch.full)
                except Diverged:
                    return False
        return True


def _dims(d, what):
    d = (d,) if isinstance(d, (int, np.integer)) else tuple(d)
    if not 1 <= len(d) <= 3 or any(not isinstance(x, (int, np.integer)) or x < 1 for x in d):
        raise SimulationError(f"{what} must be 1 to 3 positive ints (x, y, z), got {d}")
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


class _Run:
    """What the chunks of one launch share: the kernel, dimensions, report, findings already seen."""

    def __init__(self, sim, grid, block, report, rec):
        self.sim, self.grid, self.block, self.report, self.rec = sim, grid, block, report, rec
        self.seen = set()
        self.traffic = None


class Chunk:
    """The threads of ``count`` consecutive blocks (from linear block ``start``), run in lockstep."""

    def __init__(self, run, start, count, env, mem):
        self.run = run
        bx, by, bz = run.block
        gx, gy, _ = run.grid
        self.T = t = bx * by * bz
        self.C = count
        self.N = n = t * count
        self.lanes = np.arange(n, dtype=np.int64)
        self.full = np.ones(n, dtype=bool)
        self.slot = self.lanes // t
        self.tid = self.lanes % t
        self.gblk = start + self.slot
        self.gtid = self.gblk * t + self.tid
        tid, blk = self.tid, self.gblk
        self.threads = {"threadIdx.x": tid % bx, "threadIdx.y": (tid // bx) % by, "threadIdx.z": tid // (bx * by),
                        "blockIdx.x": blk % gx, "blockIdx.y": (blk // gx) % gy, "blockIdx.z": blk // (gx * gy)}
        self.env = dict(env)
        for v, tag in run.sim.thread_vars.items():
            self.env[v] = self.threads[tag]
        self.mem = dict(mem)
        self.epoch = np.zeros(count, np.int64)
        self._keys = None
        self._am = self._al = None
        self.ctx = []

    def memory(self, var):
        m = self.mem.get(var)
        if m is None:
            raise SimulationError(f"{self.run.sim.name}: buffer {var.name} is not bound (no argument and no "
                                  "allocation in the kernel)")
        return m

    def active(self, m):
        """The positions of the active threads of mask ``m`` (cached: a branch passes one mask on)."""
        if m is not self._am:
            self._am, self._al = m, np.flatnonzero(m)
        return self._al

    def ids(self, ln):
        """(global thread id, block, epoch << 32 | thread id) of the threads at positions ``ln``."""
        if self._keys is None:
            self._keys = (self.epoch[self.slot] << 32) | self.gtid
        if ln is self.lanes:
            return self.gtid, self.gblk, self._keys
        return self.gtid[ln], self.gblk[ln], self._keys[ln]

    # ---------------------------------------------------------------- findings
    def find(self, kind, site, message, buffer=None, element=None, key=None, threads=(), arrived=(),
             missing=()):
        """Record a finding; ``threads`` are global thread ids, ``arrived`` / ``missing`` thread ids
        within the block."""
        run = self.run
        k = (kind, site, buffer, element if key is None else key)
        if k in run.seen:
            return
        run.seen.add(k)
        t = run.block[0] * run.block[1] * run.block[2]
        pairs = tuple((coords(int(g) % t, run.block), coords(int(g) // t, run.grid)) for g in threads)
        local = lambda ids: tuple(coords(int(i), run.block) for i in ids)  # noqa: E731
        run.report.add(Finding(kind, run.sim.name, run.sim.site_text(site), message, buffer, element,
                               pairs, tuple(run.block), local(arrived), local(missing)))

    def thread(self, gtid):
        return thread_text(gtid, self.run.block, self.run.grid)

    def who(self, lane):
        return self.thread(self.gtid[lane])

    def at(self, other, site):
        return " in the same statement" if other == site else f" at `{self.run.sim.site_text(int(other))}`"

    def _threads_text(self, tids, limit=4):
        shown = [tuple_text(coords(int(t), self.run.block)) for t in tids[:limit]]
        more = f" and {len(tids) - limit} more" if len(tids) > limit else ""
        return ", ".join(shown) + more

    def _under(self):
        if not self.ctx:
            return ""
        sim = self.run.sim
        return "; enclosing: " + ", ".join(f"`{sim.site_text(s)}` ({what})" for s, what in self.ctx)

    # ---------------------------------------------------------------- barrier
    def barrier(self, m, site):
        if m is self.full:
            self.epoch += 1
            self._keys = None
            self.run.rec.barriers += self.C
            return
        cnt = m.reshape(self.C, self.T).sum(axis=1)
        bad = np.flatnonzero((cnt > 0) & (cnt < self.T))
        if len(bad):
            b = int(bad[0])
            lanes = m[b * self.T:(b + 1) * self.T]
            arrive, miss = np.flatnonzero(lanes), np.flatnonzero(~lanes)
            blk = tuple_text(coords(int(self.gblk[b * self.T]), self.run.grid))
            more = f" (and {len(bad) - 1} more block(s))" if len(bad) > 1 else ""
            self.find(DIVERGENT_BARRIER, site, f"in blockIdx={blk}{more}, {len(arrive)} of {self.T} threads "
                      f"arrive (threadIdx={self._threads_text(arrive)}) and {len(miss)} do not "
                      f"(threadIdx={self._threads_text(miss)}): a deadlock on a GPU{self._under()}",
                      threads=[int(self.gblk[b * self.T]) * self.T], arrived=arrive, missing=miss)
            self.run.report.stopped = f"divergent barrier in {self.run.sim.name}"
            raise Diverged()
        hit = cnt == self.T
        self.epoch += hit
        self._keys = None
        self.run.rec.barriers += int(hit.sum())

    # ---------------------------------------------------------------- warp shuffles
    def split_group(self, m, width):
        """The first group of ``width`` consecutive threads of a block (a warp, a shuffle segment) that
        mask ``m`` splits: (group id, positions of its active and inactive threads, its block as text,
        complete) where ``complete`` marks the threads whose group ``m`` keeps whole; None if none is split."""
        n = -(-self.T // width)
        group = self.slot * n + self.tid // width
        active = np.bincount(group[m], minlength=self.C * n)
        present = np.bincount(group, minlength=self.C * n)
        bad = np.flatnonzero((active > 0) & (active < present))
        if not len(bad):
            return None
        g = int(bad[0])
        members = np.flatnonzero(group == g)
        on, off = members[m[members]], members[~m[members]]
        blk = tuple_text(coords(int(self.gblk[members[0]]), self.run.grid))
        return g, on, off, blk, (active == present)[group]

    def shuffle(self, val, arg, width, down, m, site):
        name = "tvm_warp_shuffle_down" if down else "tvm_warp_shuffle"
        if isinstance(width, np.ndarray):
            ws = np.unique(width[m] if width.ndim else width)
            if len(ws) != 1:
                raise SimulationError(f"{self.run.sim.name}: {name} width differs between threads: {ws}")
            width = ws[0]
        width = int(width)
        if width < 1 or width > 32 or width & (width - 1):
            raise SimulationError(f"{self.run.sim.name}: {name} width must be a power of two <= 32, got {width}")
        t, n = self.T, self.N
        lane = self.tid % 32
        if down:
            src = np.where(lane % width + arg < width, lane + arg, lane)
        else:
            src = lane - lane % width + np.mod(arg, width)
        src_tid = self.tid - lane + src
        exists = (src_tid >= 0) & (src_tid < t)
        src_lane = np.clip(self.lanes - self.tid + src_tid, 0, n - 1)
        if m is not self.full:
            split = self.split_group(m, width)
            if split is not None:
                g, on, off, blk = split[:4]
                self.find(DIVERGENT_SHUFFLE, site, f"in blockIdx={blk}, threadIdx={self._threads_text(self.tid[on])} "
                          f"run {name} (width {width}) but threadIdx={self._threads_text(self.tid[off])} of the "
                          f"same width-{width} segment do not{self._under()}", key=g,
                          threads=[int(self.gtid[on[0]])], arrived=self.tid[on], missing=self.tid[off])
        vals = np.broadcast_to(val, (n,) + np.shape(val)[1:]) if np.ndim(val) else np.full(n, val)
        out = vals[src_lane]
        undefined = ~exists | ~m[src_lane]
        if undefined.any():           # the value of a missing or inactive lane is undefined
            out = out.copy()
            out[undefined] = garbage(_dtype_of(out), 1)[0]
        return out


def _dtype_of(arr):
    return "float64" if arr.dtype.kind == "f" else "bool" if arr.dtype == bool else "int64"


__all__ = ["KernelSim", "Chunk", "Diverged", "MAX_THREADS"]
