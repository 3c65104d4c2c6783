"""TVM's ``tvm.instrument``: objects a PassContext calls around every pass.

    timing = tvm.instrument.PassTimingInstrument()
    with tvm.transform.PassContext(instruments=[timing]):
        tvm.lower(s, [A, B, C])             # runs tvmlab's passes as tir.transform passes
        print(timing.render())

An instrument may define ``enter_pass_ctx()``, ``exit_pass_ctx()``,
``should_run(mod, info)``, ``run_before_pass(mod, info)`` and
``run_after_pass(mod, info)``; ``@pass_instrument`` marks a class as one.
"""
from __future__ import annotations

import time


class PassInstrument:
    """Base class: every hook does nothing."""

    def enter_pass_ctx(self):
        pass

    def exit_pass_ctx(self):
        pass

    def should_run(self, mod, info):
        return True

    def run_before_pass(self, mod, info):
        pass

    def run_after_pass(self, mod, info):
        pass


def pass_instrument(pi_cls=None):
    """Class decorator: the class becomes a PassInstrument (its hooks override the no-op ones)."""
    def wrap(cls):
        if issubclass(cls, PassInstrument):
            return cls
        return type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__,
                                                          "__module__": cls.__module__})
    return wrap(pi_cls) if pi_cls is not None else wrap


class PrintBeforeAll(PassInstrument):
    """Print the module before every pass."""

    def run_before_pass(self, mod, info):
        print(f"Before Running Pass: {info}\n{mod}")


class PrintAfterAll(PassInstrument):
    """Print the module after every pass."""

    def run_after_pass(self, mod, info):
        print(f"After Running Pass: {info}\n{mod}")


class PassTimingInstrument(PassInstrument):
    """Time every pass; ``render()`` gives one line per pass run, nested passes indented (microseconds)."""

    def __init__(self):
        self.records = []       # [pass name, depth, seconds], in the order the passes started
        self._open = []

    def enter_pass_ctx(self):
        self.records = []

    def run_before_pass(self, mod, info):
        rec = [info.name, len(self._open), None]
        self.records.append(rec)
        self._open.append((rec, time.perf_counter()))

    def run_after_pass(self, mod, info):
        if self._open:
            rec, t0 = self._open.pop()
            rec[2] = time.perf_counter() - t0

    def render(self):
        done = [r for r in self.records if r[2] is not None]
        total = sum(t for _, depth, t in done if depth == 0)
        lines = [f"Total: {total * 1e6:.0f}us"]
        lines += [f"{'  ' * (depth + 1)}{name}: {t * 1e6:.0f}us" for name, depth, t in done]
        return "\n".join(lines)
