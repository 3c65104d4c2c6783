"""The fuzzer's cuda mode: run a CUDA build on the thread-level GPU simulator, poisoned, and
compare with numpy.

The simulator runs every statement once per loop iteration for all threads of a
launch together, so its cost is the statements executed by one thread times
the launches (``simulation_steps``).  A schedule above ``MAX_SIM_STEPS`` (one
thread copying a large tile, say) is skipped as too slow to simulate rather
than run for minutes; the fuzzer counts such programs.
"""
from __future__ import annotations

import math
import traceback

import numpy as np

from ..errors import SimulationError
from ..ir import stmt as S
from ..ir.expr import Call, IntImm
from ..ir.functor import post_order_visit
from .random_gpu_schedule import Refused
from .random_schedule import Failure

CUDA_DTYPES = ("float32", "float64", "int32")
MAX_SIM_STEPS = 60_000
UNKNOWN_EXTENT = 64


class TooSlow(Refused):
    """A schedule whose simulation would take too long (not a refusal by tvmlab)."""
    PREFIX = "too slow to simulate"


def _extent(e, ana):
    if isinstance(e, IntImm):
        return e.value
    hi = ana.const_int_bound(e)[1]
    return int(hi) if math.isfinite(hi) else UNKNOWN_EXTENT


def _size(*exprs):
    """Expression nodes: the simulator evaluates each once per statement it runs."""
    n = [0]
    for e in exprs:
        if e is not None:
            post_order_visit(e, lambda _: n.__setitem__(0, n[0] + 1))
    return n[0]


def _steps(s, ana):
    """The work one thread does in ``s``: each statement run weighs 1 + its expression nodes (loops
    multiply, both arms of an ``if`` count)."""
    if isinstance(s, S.SeqStmt):
        return sum(_steps(x, ana) for x in s.seq)
    if isinstance(s, S.For):
        return 1 + max(0, _extent(s.extent, ana)) * _steps(s.body, ana)
    if isinstance(s, S.IfThenElse):
        return 1 + _size(s.condition) + _steps(s.then_case, ana) + (
            _steps(s.else_case, ana) if s.else_case is not None else 0)
    if isinstance(s, S.Store):
        return 1 + _size(s.value, s.index)
    if isinstance(s, S.Evaluate):
        return 1 + _size(s.value)
    body = getattr(s, "body", None)
    if isinstance(body, S.Stmt):
        return 1 + _steps(body, ana)
    return 1


def simulation_steps(f):
    """An estimate of the simulator's work for GPU build ``f``: per launch, the statements one thread
    executes times the chunks of threads, summed over the launches host loops make."""
    from ..analysis.gpusim import device_program
    from ..analysis.gpusim.machine import MAX_THREADS
    from ..ir.arith import Analyzer
    host, launches, kernels = device_program(f)
    ana = Analyzer()
    by_name = {ln.name: ln for ln in launches}

    def launch_cost(name):
        ln = by_name[name]
        threads = math.prod(_extent(x, ana) for x in ln.grid()) * math.prod(_extent(x, ana) for x in ln.block())
        return _steps(kernels[name].body, ana) * max(1, -(-threads // MAX_THREADS))

    def walk(s):
        if isinstance(s, S.SeqStmt):
            return sum(walk(x) for x in s.seq)
        if isinstance(s, S.For):
            return max(0, _extent(s.extent, ana)) * walk(s.body)
        if isinstance(s, S.IfThenElse):
            return walk(s.then_case) + (walk(s.else_case) if s.else_case is not None else 0)
        if isinstance(s, S.Evaluate) and isinstance(s.value, Call) and s.value.op == "launch_kernel":
            return launch_cost(s.value.args[0].value)
        body = getattr(s, "body", None)
        return walk(body) if isinstance(body, S.Stmt) else 0
    return walk(host.body)


def run_simulated(f, prog, names, compare):
    """Simulate build ``f`` on program ``prog``'s inputs (outputs poisoned) and ``compare`` each output
    ``compare(name, got, want, rtol)``; raises Failure ("simulate" for a finding, "run" for a crash)."""
    from . import poison, simulate
    steps = simulation_steps(f)
    if steps > MAX_SIM_STEPS:
        raise TooSlow(f"{TooSlow.PREFIX}: about {steps} statement steps (limit {MAX_SIM_STEPS})")
    data, expected = prog.input_data(), prog.expected()
    arrays = [data[n].copy() if n in data else poison(np.empty(expected[n].shape, expected[n].dtype))
              for n in names]
    try:
        simulate(f, *arrays)
    except SimulationError as e:
        report = getattr(e, "report", None)
        kinds = ", ".join(sorted(report.counts)) if report is not None and report.counts else "an error"
        raise Failure("simulate", f"the GPU simulator found {kinds}: {e}") from e
    except Exception as e:
        raise Failure("run", f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    for n, a in zip(names, arrays):
        if n in expected:
            compare(n, a, expected[n], prog.float_tolerance())
