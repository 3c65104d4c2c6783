"""The fuzzer's cuda mode: run a CUDA build on the thread-level GPU simulator, poisoned, and
compare with numpy.

The simulator runs every statement once per loop iteration for all threads of a
launch together; a schedule that makes one thread copy a large tile again and
again can take minutes.  A simulation that runs past ``SIM_SECONDS`` is stopped
and the program counted as too slow to simulate (``TooSlow``), not failed.
"""
from __future__ import annotations

import signal
import threading
import traceback
from contextlib import contextmanager

import numpy as np

from ..errors import SimulationError
from .random_gpu_schedule import Refused
from .random_schedule import Failure

CUDA_DTYPES = ("float32", "float64", "int32")
SIM_SECONDS = 20.0


class TooSlow(Refused):
    """A schedule whose simulation would take too long (not a refusal by tvmlab)."""
    PREFIX = "too slow to simulate"


@contextmanager
def deadline(seconds):
    """Raise TooSlow in this (main) thread after ``seconds``; elsewhere, or with None, no limit."""
    if seconds is None or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def stop(signum, frame):
        raise TooSlow(f"{TooSlow.PREFIX}: the simulation ran past {seconds:g} s")
    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_simulated(f, prog, names, compare, seconds=None):
    """Simulate build ``f`` on program ``prog``'s inputs (outputs poisoned) and ``compare`` each output
    ``compare(name, got, want, rtol)``; raises Failure ("simulate" for a finding, "run" for a crash),
    or TooSlow after ``seconds`` (default ``SIM_SECONDS``)."""
    from . import poison, simulate
    data, expected = prog.input_data(), prog.expected()
    arrays = [data[n].copy() if n in data else poison(np.empty(expected[n].shape, expected[n].dtype))
              for n in names]
    try:
        with deadline(SIM_SECONDS if seconds is None else seconds):
            simulate(f, *arrays)
    except TooSlow:
        raise
    except SimulationError as e:
        report = getattr(e, "report", None)
        kinds = ", ".join(sorted(report.counts)) if report is not None and report.counts else "an error"
        raise Failure("simulate", f"the GPU simulator found {kinds}: {e}") from e
    except Exception as e:
        raise Failure("run", f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    for n, a in zip(names, arrays):
        if n in expected:
            compare(n, a, expected[n], prog.float_tolerance())
