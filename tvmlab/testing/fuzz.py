"""The differential fuzzer: random programs, random legal schedules, compared with numpy.

    python -m tvmlab.testing.fuzz --count 300 --seed 0 [--verbose]
    python -m tvmlab.testing.fuzz --target cuda --count 300 --seed 0

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

With ``--target cuda`` each program gets a random GPU schedule instead
(``random_gpu_schedule``: blocks, threads, vthreads, shared and local caches,
cross-thread reductions, double buffering, unroll pragmas), is built for CUDA
and run on the thread-level simulator (``tvmlab.testing.simulate``), so a race,
a divergent barrier or shuffle, an out-of-bounds access or a read of
uninitialized memory fails the program (phase "simulate") as a wrong result
does.  A schedule tvmlab refuses with a ScheduleError or LoweringError (an
unsupported combination) is counted as refused, not failed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import numpy as np

from ..errors import BuildError, LoweringError, ScheduleError
from .fuzz_gpu import CUDA_DTYPES, TooSlow
from .programs import generate
from .random_gpu_schedule import GPUScheduler, Refused
from .random_schedule import Failure, Scheduler

TARGET = "llvm"
TARGETS = ("llvm", "cuda")
TRACE_CHECK_RATE = 0.25
MAX_STEPS = 12


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


def run_compiled(prog, s, args, names, target=TARGET):
    """Build ``s`` for ``target``, run it on the program's inputs (on the GPU simulator for
    "cuda"), compare with numpy."""
    import tvmlab
    from . import poison
    try:
        f = tvmlab.build(s, args, target=target)
    except LoweringError as e:
        if target == "cuda" and not isinstance(e, BuildError):
            raise Refused(f"lowering: {e}") from e
        raise Failure("build", f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    except Exception as e:
        raise Failure("build", f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    if target == "cuda":
        from .fuzz_gpu import run_simulated
        run_simulated(f, prog, names, _compare)
        return
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


def check_trace(prog, s, args, target=TARGET):
    """JSON round trip and as_python of the trace rebuild a schedule that lowers identically."""
    from functools import partial

    from ..driver import lower as _lower
    from ..schedule import Trace
    lower = partial(_lower, target=target) if target != TARGET else _lower
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
    """The outcome of one program; ``refused`` holds the message of a schedule tvmlab refused."""

    def __init__(self, seed, prog=None, trace_py="", failure=None, steps=(), seconds=0.0, target=TARGET,
                 refused=None):
        self.seed, self.prog, self.trace_py, self.failure = seed, prog, trace_py, failure
        self.steps, self.seconds, self.target, self.refused = list(steps), seconds, target, refused

    @property
    def ok(self):
        return self.failure is None

    def report(self):
        """The failure, then a Python script that rebuilds and rechecks the program."""
        lines = [f"=== fuzz program {self.seed} ({self.target}) FAILED {self.failure}"]
        tgt = "" if self.target == TARGET else f", target={self.target!r}"
        if self.prog is not None:
            lines += ["# --- TE definition", self.prog.source().rstrip(),
                      "# --- schedule (the trace as Python, shrunk)",
                      self.trace_py.rstrip() or "s = te.create_schedule([t.op for t in outs])",
                      "# --- build, run on the program's inputs and compare with numpy",
                      "from tvmlab.testing import fuzz",
                      f"fuzz.check_schedule({self.seed}, s, args{tgt})"]
            original = getattr(self, "original_py", "")
            if original and original.rstrip() != self.trace_py.rstrip():
                # shrinking keeps any schedule that fails the same way, which may be one a user
                # would not write: the schedule as generated tells whether the bug is tvmlab's
                lines.append("# --- the schedule as generated, before shrinking")
                lines += ["# " + line for line in original.rstrip().splitlines()]
        opt = "" if self.target == TARGET else f"--target {self.target} "
        lines.append(f"# rerun: python -m tvmlab.testing.fuzz {opt}--seed {self.seed // 1_000_000} "
                     f"--start {self.seed % 1_000_000} --count 1 --verbose")
        return "\n".join(lines)


def check_schedule(pseed, s, args, target=TARGET):
    """Build ``s`` for ``target`` and compare it with program ``pseed``'s numpy results; raises
    Failure (or Refused, when tvmlab refuses to lower it for CUDA)."""
    prog = generate(pseed)
    args = [t for t in args if t.op in s]
    run_compiled(prog, s, args, [t.name for t in args], target)


def _schedule(prog, ns, pseed, target, log, steps=None):
    from .. import te
    s = te.create_schedule([t.op for t in ns["outs"]])
    if target == "cuda":
        bad = sorted({t.dtype for t in prog.tensors} - set(CUDA_DTYPES))
        if bad:
            raise Refused(f"dtype {bad[0]} is not one the cuda target takes")
        rng = np.random.default_rng([pseed, 2])
        try:
            GPUScheduler(s, rng, log).run()
        except Refused as e:
            e.schedule = s
            raise
        return s, rng
    rng = np.random.default_rng([pseed, 1])
    n_steps = int(rng.integers(0, MAX_STEPS + 1)) if steps is None else steps
    Scheduler(s, rng, log).run(n_steps)
    return s, rng


def check_one(pseed, trace_rate=TRACE_CHECK_RATE, minimize=True, steps=None, build=True, target=TARGET):
    """Generate, schedule, build, run and compare program ``pseed``; returns a Result.

    With ``build=False`` it stops after scheduling (to describe a program whose
    build or run crashed the process).
    """
    t0 = time.perf_counter()
    prog = None
    s = None
    log = []

    def result(failure=None, refused=None):
        return Result(pseed, prog, s.trace.as_python() if s is not None else "", failure, log,
                      time.perf_counter() - t0, target, refused)
    try:
        prog = generate(pseed)
        ns = prog.build_te()
        s, rng = _schedule(prog, ns, pseed, target, log, steps)
        args = used_args(ns, s)
        names = [t.name for t in args]
        if not build:
            res = result()
            res.trace_steps = list(s.trace.steps)
            return res
        run_compiled(prog, s, args, names, target)
        if rng.random() < trace_rate:
            check_trace(prog, s, args, target)
    except Refused as e:
        s = getattr(e, "schedule", s)
        return result(refused=str(e))
    except Failure as f:
        res = result(f)
        if minimize and s is not None and f.phase in ("build", "run", "compare", "simulate", "trace"):
            shrink(res, s)
        return res
    except Exception as e:  # a crash of the generator or of the compiler outside the phases
        return result(Failure("internal", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    return result()


def _same_failure(a, b):
    """Whether Failure ``b`` is the kind of failure ``a`` is (same phase; for the simulator, the
    same kinds of findings)."""
    if a.phase != b.phase:
        return False
    if a.phase == "simulate":
        return a.message.split(":")[0] == b.message.split(":")[0]
    return True


def shrink(res, s):
    """Drop trace steps one at a time while the program still fails in the same way."""
    from ..schedule import Trace
    prog = res.prog
    steps = list(s.trace.steps)

    def fails(sub):
        ns = prog.build_te()
        try:
            s2 = Trace(None, sub).replay([t.op for t in ns["outs"]])
        except ScheduleError:
            return None
        try:
            if res.failure.phase == "trace":
                check_trace(prog, s2, used_args(ns, s2), res.target)
            else:
                args = used_args(ns, s2)
                run_compiled(prog, s2, args, [t.name for t in args], res.target)
        except Failure as f:
            return (s2, f) if _same_failure(res.failure, f) else None
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
        res.original_py = res.trace_py
        res.trace_py = best[0].trace.as_python()
        res.failure = best[1]


class Outcome:
    """What a worker sends back about one program: picklable, with the report text."""

    def __init__(self, res, phase=None, report=None):
        self.seed, self.ok, self.seconds, self.steps = res.seed, res.ok, res.seconds, len(res.steps)
        self.refused = res.refused
        self.phase = phase or (None if res.ok else res.failure.phase)
        self._report = report or ("" if res.ok else res.report())
        if phase is not None:
            self.ok = False

    def report(self):
        return self._report


def _check(item):
    pseed, target, sim_seconds = item
    if sim_seconds is not None:
        from . import fuzz_gpu
        fuzz_gpu.SIM_SECONDS = sim_seconds
    return Outcome(check_one(pseed, target=target))


def _trial(pseed, steps, target=TARGET):
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
        run_compiled(prog, s, args, [t.name for t in args], target)
    except Failure as f:
        return f.phase
    except Refused:
        return "refused"
    return "ok"


def _trial_args(a):
    return _trial(*a)


def _died(item, status, timeout):
    """The Outcome of a program whose build or run crashed or hung its process.

    A crash is shrunk (each trial in a fresh process) to the fewest trace steps
    that still crash; a hang is reported with its whole trace.
    """
    from ..schedule import Trace
    from . import isolation
    pseed, target, _ = item
    res = check_one(pseed, build=False, target=target)
    if res.prog is None or not hasattr(res, "trace_steps"):
        res.failure = Failure(status, f"the process died or hung ({status}) and the program could not be "
                                      f"scheduled again: {res.refused or res.failure}")
        return Outcome(res, status, res.report())
    steps = list(res.trace_steps)
    if status == "crash":
        for k in reversed(range(len(steps))):
            trial = steps[:k] + steps[k + 1:]
            if isolation.call(_importable(_trial_args), (pseed, trial, target), timeout)[0] == "crash":
                steps = trial
    ns = res.prog.build_te()
    res.trace_py = Trace(None, steps).replay([t.op for t in ns["outs"]]).trace.as_python()
    what = ("the process died while building or running this program (segmentation fault "
            "or LLVM abort)" if status == "crash" else
            f"building or running this program took more than {timeout:g} s (a hang)")
    res.failure = Failure(status, what)
    return Outcome(res, status, res.report())


def _importable(fn):
    """``fn`` as workers can import it: under ``python -m tvmlab.testing.fuzz`` this module is
    ``__main__``, which a spawned worker cannot import functions from."""
    if __name__ != "__main__":
        return fn
    import importlib
    return getattr(importlib.import_module(__spec__.name), fn.__name__)


def _isolated_results(items, jobs, timeout):
    from . import isolation
    for item, status, value in isolation.imap(_importable(_check), items, jobs, timeout):
        yield value if status == "ok" else _died(item, status, timeout)


def run(count, seed=0, start=0, verbose=False, out=None, max_failures=20, jobs=1,
        isolate=True, timeout=60.0, target=TARGET, refused=None, sim_seconds=None):
    """Check ``count`` programs for ``target`` ("llvm" or "cuda"); returns (failed Outcomes,
    number checked, seconds).  ``refused``, a list, collects (seed, message) of the schedules
    tvmlab refused and of those too slow to simulate within ``sim_seconds`` (default
    ``fuzz_gpu.SIM_SECONDS``).

    With ``isolate`` (the default) programs run in ``jobs`` worker processes, so a
    program that crashes or hangs its worker is reported instead of ending the
    run; ``isolate=False`` runs them in this process, one after another.
    """
    if target not in TARGETS:
        raise ValueError(f"fuzz: unknown target {target!r}; expected one of {', '.join(TARGETS)}")
    out = out or (lambda s: print(s, flush=True))
    items = [(program_seed(seed, k), target, sim_seconds) for k in range(start, start + count)]
    failures = []
    t0 = time.perf_counter()
    results = _isolated_results(items, jobs, timeout) if isolate else map(_check, items)
    done = 0
    for res in results:
        done += 1
        if res.refused is not None and refused is not None:
            refused.append((res.seed, res.refused))
        if verbose:
            state = "ok" if res.ok else f"FAIL {res.phase}"
            if res.refused is not None:
                state = f"refused: {res.refused.splitlines()[0]}"
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


def _refusal_summary(refused, top=8):
    """The refusals grouped by their message's first line (numbers dropped), most frequent first."""
    import re
    groups = {}
    for seed, msg in refused:
        key = re.sub(r"\d+", "N", msg.splitlines()[0])[:160]
        groups.setdefault(key, []).append(seed)
    lines = []
    for key, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:top]:
        lines.append(f"  {len(seeds)} x {key}  (e.g. program {seeds[0]})")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tvmlab.testing.fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100, help="number of programs")
    ap.add_argument("--seed", type=int, default=0, help="base seed (program k uses seed*1e6+k)")
    ap.add_argument("--start", type=int, default=0, help="index of the first program")
    ap.add_argument("--target", default=TARGET, choices=TARGETS,
                    help="llvm: random CPU schedules, run natively; cuda: random GPU schedules, "
                         "run on the thread-level GPU simulator")
    ap.add_argument("--verbose", action="store_true", help="one line per program")
    ap.add_argument("--max-failures", type=int, default=20)
    ap.add_argument("--jobs", "-j", type=int, default=min(4, os.cpu_count() or 1),
                    help="worker processes (default: up to 4, one per core)")
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds one program may take before it counts as a hang")
    ap.add_argument("--sim-seconds", type=float, default=None,
                    help="cuda: seconds a simulation may run before the program is skipped as too "
                         "slow to simulate (default 20)")
    ap.add_argument("--in-process", action="store_true",
                    help="run programs in this process (faster start; a crash ends the run)")
    a = ap.parse_args(argv)
    refused = []
    failures, n, secs = run(a.count, a.seed, a.start, a.verbose, max_failures=a.max_failures,
                            jobs=a.jobs, isolate=not a.in_process, timeout=a.timeout, target=a.target,
                            refused=refused, sim_seconds=a.sim_seconds)
    slow = [r for r in refused if r[1].startswith(TooSlow.PREFIX)]
    refused = [r for r in refused if not r[1].startswith(TooSlow.PREFIX)]
    ref = (f", {len(refused)} refused" if refused else "") + (f", {len(slow)} too slow to simulate"
                                                              if slow else "")
    print(f"fuzz ({a.target}): {n} programs, {n - len(failures) - len(refused) - len(slow)} passed, "
          f"{len(failures)} failed{ref} ({secs:.1f}s, {n / max(secs, 1e-9):.1f} programs/s)")
    if refused:
        print("refused (tvmlab declined the schedule with a ScheduleError or LoweringError):")
        print(_refusal_summary(refused))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
