"""The differential fuzzer: random programs, random legal schedules, compared with numpy.

    python -m tvmlab.testing.fuzz --count 300 --seed 0 [--verbose]

Each program (``programs.generate``) gets a random sequence of schedule
primitives, mostly legal ones; a primitive that raises ScheduleError must leave
the schedule exactly as it was, and a few deliberately illegal calls must
raise.  The schedule is then lowered, built for LLVM and run on the program's
random inputs with NaN / sentinel-filled outputs, and the results are compared
with numpy.  Some programs also check the trace: its JSON round trip and its
``as_python`` text, replayed on fresh tensors, must lower to the same text.

Programs run in worker processes (``--jobs``), so one that crashes (a
segmentation fault, an LLVM abort) or hangs is reported and the run goes on.
A failure is printed as a Python script that rebuilds and rechecks it (the TE
definition plus the trace as code), after shrinking the trace to the fewest
steps that still fail the same way.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback

import numpy as np

from ..errors import ScheduleError
from ..ir.tensor import ComputeOp, IterVar
from .programs import generate

TARGET = "llvm"
TRACE_CHECK_RATE = 0.25
VECTOR_MAX = 32
UNROLL_MAX = 64
MAX_STEPS = 12


class Failure(Exception):
    """A program the compiler got wrong; ``phase`` says where."""

    def __init__(self, phase, message):
        super().__init__(f"[{phase}] {message}")
        self.phase, self.message = phase, message


# ---------------------------------------------------------------- schedule state

def snapshot(s):
    """Everything a failed primitive must leave untouched."""
    out = [len(s.trace), len(s.stages)]
    for st in s.stages:
        attrs = sorted((iv.var.name, a.kind, a.pragmas) for iv, a in st.iter_var_attrs.items())
        out.append((s.stage_key(st), id(st.op), tuple(iv.var.name for iv in st.leaf_iter_vars),
                    tuple(attrs), st.attach_type,
                    s.stage_key(st.attach_stage) if st.attach_stage is not None else None,
                    st.attach_ivar.var.name if st.attach_ivar is not None else None,
                    st.scope, len(st.relations)))
    return out


def leaf_extents(st):
    """Upper bounds of the leaf extents, from the root extents and the relations."""
    from ..schedule.relations import Fuse, Rebase, Singleton, Split
    ext = {}
    for iv in st.root_iter_vars:
        e = getattr(iv.dom, "extent", None)
        ext[iv] = e.value if hasattr(e, "value") else None

    def val(x):
        return x.value if hasattr(x, "value") else (x if isinstance(x, int) else None)

    for rel in st.relations:
        if isinstance(rel, Split):
            p = ext.get(rel.parent)
            if rel.factor is not None:
                f = val(rel.factor)
                ext[rel.inner] = f
                ext[rel.outer] = -(-p // f) if p is not None and f else None
            else:
                n = val(rel.nparts)
                ext[rel.outer] = n
                ext[rel.inner] = -(-p // n) if p is not None and n else None
        elif isinstance(rel, Fuse):
            a, b = ext.get(rel.outer), ext.get(rel.inner)
            ext[rel.fused] = a * b if a is not None and b is not None else None
        elif isinstance(rel, Rebase):
            ext[rel.rebased] = ext.get(rel.parent)
        elif isinstance(rel, Singleton):
            ext[rel.iter] = 1
    return ext


def _reads(s, q, st):
    """True if stage ``q``'s op reads an output of stage ``st`` (by any of its ops)."""
    return isinstance(q.op, ComputeOp) and any(s.stage_map.get(t.op) is st
                                               for t in q.op.input_tensors)


def _readers(s, st):
    """Non-inlined stages reading ``st``'s outputs, directly or through inlined stages."""
    found = []
    for q in s.stages:
        if q is not st and _reads(s, q, st):
            if q.attach_type == "inline":
                found += [r for r in _readers(s, q) if r not in found]
            elif q not in found:
                found.append(q)
    return found


def _direct_readers(s, st):
    return [q for q in s.stages if q is not st and q.attach_type != "inline" and _reads(s, q, st)]


def _has_kind(st, kind):
    return any(a.kind == kind for a in st.iter_var_attrs.values())


def _attached_below(s, st):
    """Stages attached (transitively) at ``st``."""
    out = []
    for q in s.stages:
        a = q.attach_stage
        while a is not None:
            if a is st:
                out.append(q)
                break
            a = a.attach_stage
    return out


# ---------------------------------------------------------------- the scheduler

class Scheduler:
    """Applies random primitives to a schedule, checking the error contract as it goes."""

    def __init__(self, s, rng, log=None):
        self.s, self.rng = s, rng
        self.log = log if log is not None else []
        self.errors = 0

    def pick(self, seq):
        seq = list(seq)
        return seq[int(self.rng.integers(0, len(seq)))] if seq else None

    def chance(self, p):
        return self.rng.random() < p

    def computed(self):
        return [st for st in self.s.stages if isinstance(st.op, ComputeOp)]

    def active(self):
        return [st for st in self.computed() if st.attach_type != "inline"]

    def run(self, n_steps):
        actions = [(self.split, 5), (self.fuse, 2), (self.reorder, 2), (self.tile, 1.5),
                   (self.vectorize, 2.5), (self.unroll, 1.5), (self.parallel, 2),
                   (self.pragma, 0.7), (self.compute_at, 3.5), (self.compute_inline, 2),
                   (self.compute_root, 0.5), (self.cache_read, 1), (self.cache_write, 1),
                   (self.rfactor, 1.2), (self.normalize, 0.2), (self.illegal, 1)]
        fns = [a for a, _ in actions]
        w = np.array([x for _, x in actions], dtype=float)
        w /= w.sum()
        for _ in range(n_steps):
            fn = fns[int(self.rng.choice(len(fns), p=w))]
            call = fn()
            if call is None:
                continue
            what, thunk, must_fail = call
            self.apply(what, thunk, must_fail)

    def apply(self, what, thunk, must_fail=False):
        before = snapshot(self.s)
        try:
            thunk()
        except ScheduleError as e:
            self.errors += 1
            after = snapshot(self.s)
            if after != before:
                raise Failure("schedule", f"{what} raised ScheduleError ({e}) but changed the "
                                          f"schedule:\nbefore {before}\nafter  {after}")
            self.log.append(f"# {what}: ScheduleError: {e}")
            return
        except Failure:
            raise
        except Exception as e:
            raise Failure("schedule", f"{what} raised {type(e).__name__} instead of "
                                      f"ScheduleError: {e}\n{traceback.format_exc()}") from e
        if must_fail:
            raise Failure("schedule", f"{what} is illegal but raised no ScheduleError")
        self.log.append(what)

    # -------------------------------------------------------- primitives
    def split(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ax = self.pick([iv for iv in st.leaf_iter_vars if st.attr(iv).kind == "serial"])
        if ax is None:
            return None
        if self.chance(0.75):
            f = int(self.rng.integers(1, 17))
            return (f"s[{st.name}].split({ax.var.name}, factor={f})",
                    lambda: st.split(ax, factor=f), False)
        n = int(self.rng.integers(1, 9))
        return (f"s[{st.name}].split({ax.var.name}, nparts={n})",
                lambda: st.split(ax, nparts=n), False)

    def fuse(self):
        st = self.pick(self.active())
        if st is None or len(st.leaf_iter_vars) < 2:
            return None
        leaves = st.leaf_iter_vars
        k = int(self.rng.integers(0, len(leaves) - 1))
        n = 3 if self.chance(0.2) and k + 3 <= len(leaves) else 2
        axes = leaves[k:k + n]
        if len({iv.iter_type for iv in axes}) != 1 or any(st.attr(a).kind != "serial" for a in axes):
            return None
        if any(q.attach_stage is st and q.attach_ivar in axes for q in self.s.stages):
            return None
        return (f"s[{st.name}].fuse({', '.join(a.var.name for a in axes)})",
                lambda: st.fuse(*axes), False)

    def reorder(self):
        st = self.pick(self.active())
        if st is None or len(st.leaf_iter_vars) < 2:
            return None
        leaves = list(st.leaf_iter_vars)
        n = int(self.rng.integers(2, len(leaves) + 1))
        sub = [leaves[i] for i in sorted(self.rng.choice(len(leaves), n, replace=False))]
        perm = [sub[i] for i in self.rng.permutation(n)]
        return (f"s[{st.name}].reorder({', '.join(a.var.name for a in perm)})",
                lambda: st.reorder(*perm), False)

    def tile(self):
        st = self.pick(self.active())
        if st is None:
            return None
        leaves = [iv for iv in st.leaf_iter_vars if st.attr(iv).kind == "serial"]
        if len(leaves) < 2:
            return None
        k = int(self.rng.integers(0, len(leaves) - 1))
        x, y = (leaves[k], leaves[k + 1]) if self.chance(0.7) else \
            tuple(leaves[i] for i in self.rng.choice(len(leaves), 2, replace=False))
        xf, yf = int(self.rng.integers(1, 17)), int(self.rng.integers(1, 17))
        return (f"s[{st.name}].tile({x.var.name}, {y.var.name}, {xf}, {yf})",
                lambda: st.tile(x, y, xf, yf), False)

    def vectorize(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ext = leaf_extents(st)
        ax = st.leaf_iter_vars[-1] if self.chance(0.85) else self.pick(st.leaf_iter_vars)
        e = ext.get(ax)
        if ax.iter_type == IterVar.REDUCE or e is None or e > VECTOR_MAX or \
                st.attr(ax).kind != "serial":
            return None
        return (f"s[{st.name}].vectorize({ax.var.name})", lambda: st.vectorize(ax), False)

    def unroll(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ext = leaf_extents(st)
        ax = self.pick(st.leaf_iter_vars)
        e = ext.get(ax)
        done = math.prod(ext.get(iv) or 1 for iv, a in st.iter_var_attrs.items()
                         if a.kind in ("unrolled", "vectorized"))
        if e is None or e > 16 or done * e > UNROLL_MAX or st.attr(ax).kind != "serial":
            return None
        return (f"s[{st.name}].unroll({ax.var.name})", lambda: st.unroll(ax), False)

    def parallel(self):
        cands = [st for st in self.active() if st.attach_type == "root" and st.leaf_iter_vars
                 and not _has_kind(st, "parallel")
                 and not any(_has_kind(q, "parallel") for q in _attached_below(self.s, st))]
        st = self.pick(cands)
        if st is None:
            return None
        ax = st.leaf_iter_vars[0]
        if ax.iter_type == IterVar.REDUCE or st.attr(ax).kind != "serial":
            return None
        return (f"s[{st.name}].parallel({ax.var.name})", lambda: st.parallel(ax), False)

    def pragma(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ax = self.pick(st.leaf_iter_vars)
        v = int(self.pick([4, 8, 16, 32]))
        return (f"s[{st.name}].pragma({ax.var.name}, 'auto_unroll_max_step', {v})",
                lambda: st.pragma(ax, "auto_unroll_max_step", v), False)

    def compute_at(self):
        cands = [st for st in self.active() if not st.is_output and not _has_kind(st, "parallel")]
        st = self.pick(cands)
        if st is None:
            return None
        readers = _readers(self.s, st)
        if len(readers) != 1:
            return None
        parent = readers[0]
        if not parent.leaf_iter_vars:
            return None
        ax = self.pick(parent.leaf_iter_vars)
        if parent.attr(ax).kind == "vectorized" and not self.chance(0.2):
            return None
        return (f"s[{st.name}].compute_at(s[{parent.name}], {ax.var.name})",
                lambda: st.compute_at(parent, ax), False)

    def compute_inline(self):
        cands = [st for st in self.active() if not st.is_output and not st.op.is_reduction
                 and not any(q.attach_stage is st for q in self.s.stages)]
        st = self.pick(cands)
        if st is None:
            return None
        return (f"s[{st.name}].compute_inline()", st.compute_inline, False)

    def compute_root(self):
        st = self.pick([st for st in self.computed() if st.attach_type == "scope"])
        if st is None:
            return None
        return (f"s[{st.name}].compute_root()", st.compute_root, False)

    def cache_read(self):
        # a stage computed inside a reader's loop cannot also be read by a new root stage
        srcs = [st for st in self.s.stages if st.attach_type == "root" and
                _direct_readers(self.s, st)]
        st = self.pick(srcs)
        if st is None:
            return None
        reader = self.pick(_direct_readers(self.s, st))
        t = st.op.output(0)
        scope = self.pick(["local", "global"])
        return (f"s.cache_read({t.name}, {scope!r}, [{reader.name}])",
                lambda: self.s.cache_read(t, scope, [reader.op.output(0)]), False)

    def cache_write(self):
        cands = [st for st in self.active() if not st.relations and not st.iter_var_attrs
                 and not any(q.attach_stage is st for q in self.s.stages)]
        st = self.pick(cands)
        if st is None:
            return None
        t = st.op.output(0)
        return (f"s.cache_write({t.name}, 'local')", lambda: self.s.cache_write(t, "local"), False)

    def rfactor(self):
        cands = [st for st in self.active() if st.op.is_reduction and
                 not any(q.attach_stage is st for q in self.s.stages)]
        st = self.pick(cands)
        if st is None:
            return None
        red = [iv for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]
        split = [iv for iv in red if iv not in st.root_iter_vars]
        if not split and len(red) < 2 and not self.chance(0.1):
            return None
        ax = self.pick(split) if split and self.chance(0.8) else self.pick(red)
        if ax is None:
            return None
        t = st.op.output(0)
        return (f"s.rfactor({t.name}, {ax.var.name})", lambda: self.s.rfactor(t, ax), False)

    def normalize(self):
        return ("s.normalize()", self.s.normalize, False)

    def illegal(self):
        """A call that must raise ScheduleError."""
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        k = int(self.rng.integers(0, 6))
        leaves = st.leaf_iter_vars
        if k == 0:
            red = [iv for iv in leaves if iv.iter_type == IterVar.REDUCE]
            if not red:
                return None
            ax = self.pick(red)
            how = self.pick(["vectorize", "parallel"])
            return (f"s[{st.name}].{how}({ax.var.name})  # reduction axis",
                    lambda: getattr(st, how)(ax), True)
        if k == 1:
            ax = self.pick(leaves)
            return (f"s[{st.name}].split({ax.var.name}, factor=0)",
                    lambda: st.split(ax, factor=0), True)
        if k == 2 and len(leaves) >= 3:
            a, b = leaves[0], leaves[2]
            return (f"s[{st.name}].fuse({a.var.name}, {b.var.name})  # not adjacent",
                    lambda: st.fuse(a, b), True)
        if k == 3 and st.is_output:
            return (f"s[{st.name}].compute_inline()  # output", st.compute_inline, True)
        if k == 4:
            ax = self.pick(leaves)
            return (f"s[{st.name}].reorder({ax.var.name}, {ax.var.name})",
                    lambda: st.reorder(ax, ax), True)
        if k == 5:
            others = [q for q in self.active() if q is not st and q.leaf_iter_vars and
                      q not in _readers(self.s, st)]
            q = self.pick(others)
            if q is None or st.is_output:
                return None
            ax = self.pick(q.leaf_iter_vars)
            return (f"s[{st.name}].compute_at(s[{q.name}], {ax.var.name})  # not a reader",
                    lambda: st.compute_at(q, ax), True)
        return None


# ---------------------------------------------------------------- checking

def _compare(name, got, want, rtol):
    if want.dtype.kind == "f":
        finite = want[np.isfinite(want)]
        scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
        try:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)
        except AssertionError as e:
            raise Failure("compare", f"output {name} differs from numpy (rtol={rtol}, "
                                     f"atol={rtol * scale:g}):{e}") from None
    elif not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        first = tuple(int(x) for x in bad[0])
        raise Failure("compare", f"output {name} differs from numpy at {len(bad)} of {want.size} "
                                 f"elements; first at {first}: got {got[first]}, expected "
                                 f"{want[first]}")


def used_args(ns, s):
    """The program's arguments, less inputs that constant folding removed from the graph
    (``x % 1`` folds to 0), which ``lower`` rejects as not part of the schedule."""
    return [t for t in ns["args"] if t.op in s]


def run_compiled(prog, s, args, names):
    """Build ``s``, run it on the program's inputs, compare with numpy."""
    import tvmlab
    from . import poison
    try:
        f = tvmlab.build(s, args, target=TARGET)
    except Exception as e:
        raise Failure("build", f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    dev = tvmlab.cpu(0)
    data = prog.input_data()
    expected = prog.expected()
    arrays = []
    for n in names:
        if n in data:
            arrays.append(tvmlab.nd.array(data[n], dev))
        else:
            want = expected[n]
            arrays.append(poison(tvmlab.nd.empty(want.shape, str(want.dtype), dev)))
    try:
        f(*arrays)
    except Exception as e:
        raise Failure("run", f"{type(e).__name__}: {e}") from e
    for n, a in zip(names, arrays):
        if n in expected:
            _compare(n, a.numpy(), expected[n], prog.float_tolerance())


def check_trace(prog, s, args):
    """JSON round trip and as_python of the trace rebuild a schedule that lowers identically."""
    from ..driver import lower
    from ..schedule import Trace
    want = str(lower(s, args))
    ns = prog.build_te()
    try:
        s2 = Trace.from_json(s.trace.to_json()).replay([t.op for t in ns["outs"]])
    except ScheduleError as e:
        raise Failure("trace", f"replaying the trace's JSON failed: {e}") from e
    got = str(lower(s2, used_args(ns, s2)))
    if got != want:
        raise Failure("trace", "replaying the trace's JSON gives a different lowered function:\n"
                               + _diff(want, got))
    ns3 = prog.build_te()
    try:
        exec(s.trace.as_python(), ns3)
    except Exception as e:
        raise Failure("trace", f"running the trace's as_python() failed: "
                               f"{type(e).__name__}: {e}") from e
    got = str(lower(ns3["s"], used_args(ns3, ns3["s"])))
    if got != want:
        raise Failure("trace", "the trace's as_python() gives a different lowered function:\n"
                               + _diff(want, got))


def _diff(a, b):
    import difflib
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "original",
                                        "replayed", n=2))


def program_seed(seed, index):
    return seed * 1_000_000 + index


class Result:
    """The outcome of one program."""

    def __init__(self, seed, prog=None, trace_py="", failure=None, steps=(), seconds=0.0):
        self.seed, self.prog, self.trace_py, self.failure = seed, prog, trace_py, failure
        self.steps, self.seconds = list(steps), seconds

    @property
    def ok(self):
        return self.failure is None

    def report(self):
        """The failure, then a Python script that rebuilds and rechecks the program."""
        lines = [f"=== fuzz program {self.seed} FAILED {self.failure}"]
        if self.prog is not None:
            lines += ["# --- TE definition", self.prog.source().rstrip(),
                      "# --- schedule (the trace as Python, shrunk)",
                      self.trace_py.rstrip() or "s = te.create_schedule([t.op for t in outs])",
                      "# --- build, run on the program's inputs and compare with numpy",
                      "from tvmlab.testing import fuzz",
                      f"fuzz.check_schedule({self.seed}, s, args)"]
        lines.append(f"# rerun: python -m tvmlab.testing.fuzz --seed {self.seed // 1_000_000} "
                     f"--start {self.seed % 1_000_000} --count 1 --verbose")
        return "\n".join(lines)


def check_schedule(pseed, s, args):
    """Build ``s`` and compare it with program ``pseed``'s numpy results; raises Failure."""
    prog = generate(pseed)
    args = [t for t in args if t.op in s]
    run_compiled(prog, s, args, [t.name for t in args])


def check_one(pseed, trace_rate=TRACE_CHECK_RATE, minimize=True, steps=None, build=True):
    """Generate, schedule, build, run and compare program ``pseed``; returns a Result.

    With ``build=False`` it stops after scheduling (to describe a program whose
    build or run crashed the process).
    """
    t0 = time.perf_counter()
    prog = None
    s = None
    log = []
    try:
        prog = generate(pseed)
        ns = prog.build_te()
        from .. import te
        s = te.create_schedule([t.op for t in ns["outs"]])
        rng = np.random.default_rng([pseed, 1])
        n_steps = int(rng.integers(0, MAX_STEPS + 1)) if steps is None else steps
        sched = Scheduler(s, rng, log)
        sched.run(n_steps)
        args = used_args(ns, s)
        names = [t.name for t in args]
        if not build:
            res = Result(pseed, prog, s.trace.as_python(), None, log, time.perf_counter() - t0)
            res.trace_steps = list(s.trace.steps)
            return res
        run_compiled(prog, s, args, names)
        if rng.random() < trace_rate:
            check_trace(prog, s, args)
    except Failure as f:
        res = Result(pseed, prog, s.trace.as_python() if s is not None else "", f, log,
                     time.perf_counter() - t0)
        if minimize and s is not None and f.phase in ("build", "run", "compare", "trace"):
            shrink(res, s)
        return res
    except Exception as e:  # a crash of the generator or of the compiler outside the phases
        f = Failure("internal", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        return Result(pseed, prog, s.trace.as_python() if s is not None else "", f, log,
                      time.perf_counter() - t0)
    return Result(pseed, prog, s.trace.as_python(), None, log, time.perf_counter() - t0)


def shrink(res, s):
    """Drop trace steps one at a time while the program still fails in the same phase."""
    from ..schedule import Trace
    prog = res.prog
    steps = list(s.trace.steps)
    phase = res.failure.phase

    def fails(sub):
        ns = prog.build_te()
        try:
            s2 = Trace(None, sub).replay([t.op for t in ns["outs"]])
        except ScheduleError:
            return None
        try:
            if phase == "trace":
                check_trace(prog, s2, used_args(ns, s2))
            else:
                args = used_args(ns, s2)
                run_compiled(prog, s2, args, [t.name for t in args])
        except Failure as f:
            return (s2, f) if f.phase == phase else None
        except Exception:
            return None
        return None

    k = len(steps) - 1
    best = None
    while k >= 0:
        trial = steps[:k] + steps[k + 1:]
        r = fails(trial)
        if r is not None:
            steps, best = trial, r
        k -= 1
    if best is not None:
        res.trace_py = best[0].trace.as_python()
        res.failure = best[1]


class Outcome:
    """What a worker sends back about one program: picklable, with the report text."""

    def __init__(self, res, phase=None, report=None):
        self.seed, self.ok, self.seconds, self.steps = res.seed, res.ok, res.seconds, len(res.steps)
        self.phase = phase or (None if res.ok else res.failure.phase)
        self._report = report or ("" if res.ok else res.report())
        if phase is not None:
            self.ok = False

    def report(self):
        return self._report


def _check(pseed):
    return Outcome(check_one(pseed))


def _trial(pseed, steps):
    """Replay ``steps`` on program ``pseed`` and build, run, compare: the phase that failed."""
    from ..schedule import Trace
    prog = generate(pseed)
    ns = prog.build_te()
    try:
        s = Trace(None, steps).replay([t.op for t in ns["outs"]])
    except ScheduleError:
        return "schedule-error"
    args = used_args(ns, s)
    try:
        run_compiled(prog, s, args, [t.name for t in args])
    except Failure as f:
        return f.phase
    return "ok"


def _trial_args(a):
    return _trial(*a)


def _died(pseed, status, timeout):
    """The Outcome of a program whose build or run crashed or hung its process.

    A crash is shrunk (each trial in a fresh process) to the fewest trace steps
    that still crash; a hang is reported with its whole trace.
    """
    from ..schedule import Trace
    from . import isolation
    res = check_one(pseed, build=False)
    steps = list(res.trace_steps)
    if status == "crash":
        for k in reversed(range(len(steps))):
            trial = steps[:k] + steps[k + 1:]
            if isolation.call(_trial_args, (pseed, trial), timeout)[0] == "crash":
                steps = trial
    ns = res.prog.build_te()
    res.trace_py = Trace(None, steps).replay([t.op for t in ns["outs"]]).trace.as_python()
    what = ("the process died while building or running this program (segmentation fault "
            "or LLVM abort)" if status == "crash" else
            f"building or running this program took more than {timeout:g} s (a hang)")
    res.failure = Failure(status, what)
    return Outcome(res, status, res.report())


def _isolated_results(seeds, jobs, timeout):
    from . import isolation
    for pseed, status, value in isolation.imap(_check, seeds, jobs, timeout):
        yield value if status == "ok" else _died(pseed, status, timeout)


def run(count, seed=0, start=0, verbose=False, out=None, max_failures=20, jobs=1,
        isolate=True, timeout=60.0):
    """Check ``count`` programs; returns (failed Outcomes, number checked, seconds).

    With ``isolate`` (the default) programs run in ``jobs`` worker processes, so a
    program that crashes or hangs its worker is reported instead of ending the
    run; ``isolate=False`` runs them in this process, one after another.
    """
    out = out or (lambda s: print(s, flush=True))
    seeds = [program_seed(seed, k) for k in range(start, start + count)]
    failures = []
    t0 = time.perf_counter()
    results = _isolated_results(seeds, jobs, timeout) if isolate else map(_check, seeds)
    done = 0
    for res in results:
        done += 1
        if verbose:
            state = "ok" if res.ok else f"FAIL {res.phase}"
            out(f"program {res.seed}: {state} ({res.seconds:.2f}s, {res.steps} steps)")
        if not res.ok:
            failures.append(res)
            out(res.report())
            if len(failures) >= max_failures:
                out(f"fuzz: stopping after {max_failures} failures")
                break
        elif not verbose and done % 100 == 0:
            el = time.perf_counter() - t0
            out(f"fuzz: {done}/{count} programs, {len(failures)} failed, "
                f"{done / el:.1f} programs/s")
    return failures, done, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tvmlab.testing.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100, help="number of programs")
    ap.add_argument("--seed", type=int, default=0, help="base seed (program k uses seed*1e6+k)")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--verbose", action="store_true", help="one line per program")
    ap.add_argument("--max-failures", type=int, default=20)
    ap.add_argument("--jobs", "-j", type=int, default=min(4, os.cpu_count() or 1),
                    help="worker processes (default: up to 4, one per core)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds one program may take before it counts as a hang")
    ap.add_argument("--in-process", action="store_true",
                    help="run programs in this process (faster start; a crash ends the run)")
    a = ap.parse_args(argv)
    failures, n, secs = run(a.count, a.seed, a.start, a.verbose, max_failures=a.max_failures,
                            jobs=a.jobs, isolate=not a.in_process, timeout=a.timeout)
    print(f"fuzz: {n} programs, {n - len(failures)} passed, {len(failures)} failed "
          f"({secs:.1f}s, {n / max(secs, 1e-9):.1f} programs/s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
