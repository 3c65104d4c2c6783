"""The tuner loop shared by every search: propose configs, measure them, learn, repeat.

``tuner.tune(n_trial, measure_option, early_stopping=None, callbacks=())``
asks ``next_batch`` for as many configs as the builder builds at once,
measures them, feeds the results to ``update`` and to each callback, and stops
after ``n_trial`` trials, when the space is exhausted, when ``early_stopping``
trials bring no improvement, or when ``stop()`` is called (from another
thread, e.g. the explorer).  ``best_config`` / ``best_flops`` hold the winner.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque

import numpy as np

from ...errors import TVMLabError
from ..measure import MeasureInput, create_measure_batch

logger = logging.getLogger("autotvm")
MAX_IN_FLIGHT = 8       # batches proposed ahead while earlier ones are measured (the tuner learns later)


class TunerError(TVMLabError, ValueError):
    """A tuner was given bad arguments."""


class Tuner:
    """Base class: subclasses implement ``next_batch``, ``update`` and ``has_next``."""

    def __init__(self, task, **kwargs):
        if task is None or getattr(task, "config_space", None) is None:
            raise TunerError(f"a tuner needs a task from autotvm.task.create(...), got {task!r}")
        if len(task.config_space) == 0:
            raise TunerError(f"task {task.name!r} has an empty config space")
        self.param = kwargs
        self.recorder = None
        self.task = task
        self.space = task.config_space
        self.best_config = None
        self.best_flops = 0.0
        self.best_measure_pair = None
        self.best_iter = 0
        self.n_trial = 0
        self.trials_done = 0
        self.ttl = None
        self.history = []          # (index, throughput) of every trial, in order
        self._stop = threading.Event()

    def has_next(self):
        raise NotImplementedError

    def _random_unvisited(self):
        """A random index not in ``self.visited`` (which the subclass keeps)."""
        n = len(self.space)
        if len(self.visited) > n // 2:          # dense: draw from what is left
            return int(self.rng.choice([i for i in range(n) if i not in self.visited]))
        while True:
            p = int(self.rng.integers(n))
            if p not in self.visited:
                return p

    def next_batch(self, batch_size):
        raise NotImplementedError

    def update(self, inputs, results):
        """Learn from measured results (model-free tuners ignore them)."""

    def stop(self):
        """Ask a running ``tune`` to return after its current batch."""
        self._stop.set()

    def throughput(self, inp, res):
        """FLOP/s of a result (1/seconds when the task's FLOPs are unknown); 0 for an error."""
        if res.error_no != 0 or not res.costs:
            return 0.0
        cost = float(np.mean(res.costs))
        flop = inp.task.flop or 1.0
        return flop / cost if cost > 0 else 0.0

    def tune(self, n_trial, measure_option, early_stopping=None, callbacks=(), si_prefix="G"):
        """Measure up to ``n_trial`` configs (see the module docstring)."""
        if isinstance(n_trial, bool) or not isinstance(n_trial, int) or n_trial < 1:
            raise TunerError(f"n_trial must be an int >= 1, got {n_trial!r}")
        if early_stopping is not None and (isinstance(early_stopping, bool) or not isinstance(early_stopping, int)
                                           or early_stopping < 1):
            raise TunerError(f"early_stopping must be None or an int >= 1, got {early_stopping!r}")
        scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(si_prefix)
        if scale is None:
            raise TunerError(f"si_prefix must be one of '', K, M, G, T; got {si_prefix!r}")
        callbacks = list(callbacks or ())
        for cb in callbacks:
            if not callable(cb):
                raise TunerError(f"callbacks must be callables fn(tuner, inputs, results), got {cb!r}")
        measure_batch = create_measure_batch(self.task, measure_option)
        n_parallel = getattr(measure_batch, "n_parallel", 1)
        pipe = getattr(measure_batch, "pipeline", None)
        early_stopping = early_stopping or 10 ** 9
        self.n_trial = n_trial
        self._stop.clear()
        i = 0
        error_ct = 0
        inflight = deque()          # (inputs, pipeline handle) proposed and not yet processed
        state = {"planned": 0, "exhausted": False}

        def propose():
            # one more batch in flight; False when there is none to propose
            if state["exhausted"] or state["planned"] >= n_trial or self._stop.is_set():
                return False
            configs = self.next_batch(min(n_parallel, n_trial - state["planned"])) if self.has_next() else []
            if not configs:
                state["exhausted"] = True
                return False
            inputs = [MeasureInput(self.task.target, self.task, c) for c in configs]
            inflight.append((inputs, pipe.submit(inputs) if pipe is not None else None))
            state["planned"] += len(inputs)
            return True

        def refill():
            # the pipeline's builders ran out of work while it waits for the oldest batch
            return sum(len(b) for b, _ in inflight) < MAX_IN_FLIGHT * n_parallel and propose()

        try:
            while True:
                if not inflight:
                    propose()
                if not inflight:
                    break
                inputs, handle = inflight.popleft()
                results = pipe.result(handle, refill) if pipe is not None else measure_batch(inputs)
                for k, (inp, res) in enumerate(zip(inputs, results)):
                    flops = self.throughput(inp, res)
                    error_ct = 0 if res.error_no == 0 else error_ct + 1
                    if flops > self.best_flops:
                        self.best_flops, self.best_config = flops, inp.config
                        self.best_measure_pair, self.best_iter = (inp, res), i + k
                    self.history.append((inp.config.index, flops))
                    logger.debug("No: %d\t%sFLOPS: %.2f/%.2f\tresult: %s\t%s", i + k + 1, si_prefix,
                                 flops / scale, self.best_flops / scale, res, inp.config)
                i += len(results)
                self.trials_done = i
                self.ttl = min(early_stopping + self.best_iter, n_trial) - i
                with pipe.in_background() if pipe is not None else contextlib.nullcontext():
                    self.update(inputs, results)
                    for cb in callbacks:
                        cb(self, inputs, results)
                if self._stop.is_set():
                    break
                if i >= self.best_iter + early_stopping:
                    logger.debug("Early stopped. Best iter: %d.", self.best_iter)
                    break
                if error_ct > 150:
                    logger.warning("Too many errors happen in the tuning: %d in a row. The last: %s", error_ct,
                                   results[-1].costs[0] if results and results[-1].costs else "?")
                    error_ct = 0
        finally:
            if pipe is not None:
                pipe.close()        # batches proposed but not processed are dropped, unrecorded
        return self.best_config

    def reset(self):
        self.best_config, self.best_flops, self.best_measure_pair, self.best_iter = None, 0.0, None, 0
        self.history = []

    def load_history(self, data_set, min_seed_records=500):
        """Use earlier records (model-free tuners ignore them)."""
