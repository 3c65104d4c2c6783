"""``XGBTuner``: a learned cost model picks what to measure next.

After every ``plan_size`` trials the model (``tvmlab.tuning.XGBCostModel``)
is fitted on the features and throughputs measured so far; simulated
annealing then walks the space (one knob changed per step), scoring configs
with the model, and the ``plan_size`` best-scoring unvisited configs become
the next trials (5% of each plan is random, to keep exploring).

Features (``feature_type``): "knob" (the knob values), "itervar" (loop and
buffer features of the lowered IR: each config is instantiated and lowered,
not built) or "curve" (working-set curves of the lowered IR).  Features of a
config are computed once and cached; with the lowered-IR features each
annealing round computes at most ``feature_budget`` new ones.
``load_history(records)`` fits the model on earlier records of the same
template before the first trial (transfer learning).
"""
from __future__ import annotations

import heapq
import logging

import numpy as np

from ...tuning.features import curve_features, flat_function, itervar_features, knob_features
from ...tuning.executor import LocalExecutor
from .tuner import Tuner, TunerError

logger = logging.getLogger("autotvm")


class FeatureCache:
    """Feature rows of a task's configs by index.

    Lowered-IR features instantiate the template: new configs are computed in
    forked worker processes, a batch split over the CPUs, so a template that
    crashes for some config cannot take the tuner down (the rows of that worker's share are zeros).
    """

    PARALLEL_MIN = 1      # fewer missing rows than this are computed in this process

    def __init__(self, task, feature_type, n_parallel=None):
        if feature_type not in ("knob", "itervar", "curve"):
            raise TunerError(f"feature_type must be 'knob', 'itervar' or 'curve', got {feature_type!r}")
        self.task, self.feature_type = task, feature_type
        self.cache = {}
        self.width = None
        self.executor = LocalExecutor(n_parallel, method="fork") if self.expensive else None

    @property
    def expensive(self):
        return self.feature_type != "knob"

    def of_config(self, config, task=None):
        if self.feature_type == "knob":
            return knob_features(config)
        task = task or self.task
        try:
            s, args = task.instantiate(config)
            mod = flat_function(s, args)
        except Exception:  # noqa: BLE001 - an invalid config has no features; it scores low
            return None
        return itervar_features(mod) if self.feature_type == "itervar" else curve_features(mod)

    def _of_indices(self, indices):
        space = self.task.config_space
        return [self.of_config(space.get(int(i))) for i in indices]

    def _store(self, index, row):
        if row is None:
            row = [0.0] * (self.width or 1)
        elif self.width is None:
            self.width = len(row)
        self.cache[index] = row

    def get(self, index):
        if index not in self.cache:
            self._store(index, self._of_indices([index])[0])
        return self.cache[index]

    def prefetch(self, indices):
        """Compute the rows of ``indices`` not cached yet (in parallel when expensive)."""
        missing = list(dict.fromkeys(i for i in indices if i not in self.cache))
        if self.executor is None or len(missing) < self.PARALLEL_MIN:
            for i in missing:
                self.get(i)
            return
        n = self.executor.n_parallel
        chunks = [missing[k::n] for k in range(n) if missing[k::n]]
        for chunk, res in zip(chunks, self.executor.run(self._of_indices, [(c,) for c in chunks], timeout=300)):
            rows = res.value if res.ok else [None] * len(chunk)
            for i, row in zip(chunk, rows):
                self._store(i, row)

    def rows(self, indices):
        self.prefetch(indices)
        rows = [self.cache[i] for i in indices]
        width = self.width or 1
        return np.asarray([r if len(r) == width else [0.0] * width for r in rows], dtype=np.float64)


class SimulatedAnnealingOptimizer:
    """Finds configs the model scores highest by annealing over knob vectors."""

    def __init__(self, space, n_iter=300, temp=(1.0, 0.0), persistent=True, parallel_size=64,
                 early_stop=40, feature_budget=None, seed=None):
        self.space = space
        self.dims = space.dims()
        self.n_iter, self.temp, self.persistent = n_iter, temp, persistent
        self.parallel_size = min(parallel_size, len(space))
        self.early_stop = early_stop
        self.feature_budget = feature_budget
        self.rng = np.random.default_rng(seed)
        self.points = None

    def _random_points(self, n):
        return [int(self.rng.integers(len(self.space))) for _ in range(n)]

    def _walk(self, p):
        knob = self.space.point2knob(p)
        movable = [j for j, d in enumerate(self.dims) if d > 1]
        if not movable:
            return p
        j = movable[int(self.rng.integers(len(movable)))]
        old = knob[j]
        while knob[j] == old:
            knob[j] = int(self.rng.integers(self.dims[j]))
        return self.space.knob2point(knob)

    def find_maximums(self, score, num, exclusive, cache=None):
        """The ``num`` unvisited points with the best ``score(points)``."""
        points = self.points if (self.persistent and self.points is not None) else \
            self._random_points(self.parallel_size)
        scores = score(points)
        heap = [(-np.inf, -1 - k) for k in range(num)]   # (score, point), a min-heap of the best
        in_heap = set()
        for p, s in zip(points, scores):
            if p not in exclusive and p not in in_heap and s > heap[0][0]:
                _, old = heapq.heapreplace(heap, (float(s), p))
                in_heap.discard(old)
                in_heap.add(p)
        t0, t1 = self.temp
        start = len(cache.cache) if cache is not None else 0
        last_change = 0
        for k in range(self.n_iter):
            if cache is not None and self.feature_budget is not None and \
                    len(cache.cache) - start >= self.feature_budget:
                break
            t = t0 - (t0 - t1) * k / max(1, self.n_iter)
            new = [self._walk(p) for p in points]
            new_scores = score(new)
            accept = np.exp(np.minimum((new_scores - scores) / (t + 1e-5), 1.0)) > self.rng.random(len(new))
            points = [n if a else p for p, n, a in zip(points, new, accept)]
            scores = np.where(accept, new_scores, scores)
            changed = False
            for p, s in zip(new, new_scores):
                if p not in exclusive and p not in in_heap and s > heap[0][0]:
                    _, old = heapq.heapreplace(heap, (float(s), p))
                    in_heap.discard(old)
                    in_heap.add(p)
                    changed = True
            if changed:
                last_change = k
            elif k - last_change > self.early_stop:
                break
        self.points = points
        best = sorted(heap, reverse=True)
        return [p for s, p in best if p >= 0]


class ModelBasedTuner(Tuner):
    """Measures the model's plan; refits the model every ``plan_size`` trials."""

    def __init__(self, task, cost_model, features, optimizer, plan_size=64, seed=None):
        super().__init__(task)
        self.cost_model, self.features, self.optimizer = cost_model, features, optimizer
        if not isinstance(plan_size, int) or plan_size < 1:
            raise TunerError(f"plan_size must be an int >= 1, got {plan_size!r}")
        self.plan_size = plan_size
        self.rng = np.random.default_rng(seed)
        self.trials, self.trial_pt = [], 0
        self.visited = set()
        self.xs, self.ys = [], []
        self.flops_max = 0.0
        self.train_ct = 0
        self.predicted = {}          # index -> the model's score when it was planned

    def has_next(self):
        return len(self.visited) < len(self.space)

    def next_batch(self, batch_size):
        out = []
        while len(out) < batch_size and self.has_next():
            while self.trial_pt < len(self.trials) and self.trials[self.trial_pt] in self.visited:
                self.trial_pt += 1
            if self.trial_pt >= len(self.trials) - int(0.05 * self.plan_size):
                index = self._random_unvisited()       # no plan yet, or the random 5% of each plan
            else:
                index = self.trials[self.trial_pt]
                self.trial_pt += 1
            self.visited.add(index)
            out.append(self.space.get(index))
        return out

    def _score(self, points):
        return self.cost_model.predict(self.features.rows(points))

    def update(self, inputs, results):
        for inp, res in zip(inputs, results):
            flops = self.throughput(inp, res)
            self.xs.append(inp.config.index)
            self.ys.append(flops)
            self.flops_max = max(self.flops_max, flops)
        if len(self.xs) >= self.plan_size * (self.train_ct + 1) and self.flops_max > 0:
            self.cost_model.fit(self.features.rows(self.xs), self.ys)
            self._plan()
            self.train_ct += 1

    def _plan(self):
        self.trials = self.optimizer.find_maximums(self._score, self.plan_size, self.visited, self.features)
        if self.trials:
            for p, s in zip(self.trials, self._score(self.trials)):
                self.predicted[p] = float(s)
        self.trial_pt = 0

    def load_history(self, data_set, min_seed_records=500):
        """Fit the model on ``data_set`` ((MeasureInput, MeasureResult) pairs, or a log path) of the same
        template, then plan from it; with fewer than ``min_seed_records`` usable records nothing happens."""
        from ..record import load_from_file
        if isinstance(data_set, str) or hasattr(data_set, "__fspath__"):
            data_set = list(load_from_file(data_set))
        rows, ys = [], []
        for inp, res in data_set:
            if inp.task.name != self.task.name:
                continue
            task = inp.task if inp.task.func is not None else self.task
            row = self.features.of_config(inp.config, task)
            if row is None or (self.features.width is not None and len(row) != self.features.width):
                continue
            self.features.width = self.features.width or len(row)
            rows.append(row)
            ys.append(self.throughput(inp, res))
        if len(rows) < min_seed_records or not any(ys):
            logger.debug("load_history: %d usable records (< %d): not used", len(rows), min_seed_records)
            return False
        self.cost_model.fit_log(np.asarray(rows), np.asarray(ys))
        self._plan()
        return True


class XGBTuner(ModelBasedTuner):
    """TVM's XGBTuner: ``XGBTuner(task, plan_size=64, feature_type="itervar", loss_type="rank")``."""

    def __init__(self, task, plan_size=64, feature_type="itervar", loss_type="rank", num_threads=None,
                 optimizer="sa", diversity_filter_ratio=None, log_interval=50, seed=None, feature_budget=None):
        from ...tuning.cost_model import XGBCostModel
        if optimizer != "sa":
            raise TunerError(f"optimizer must be 'sa' (simulated annealing), got {optimizer!r}")
        if diversity_filter_ratio is not None:
            raise TunerError("diversity_filter_ratio is not supported by tvmlab's XGBTuner")
        feats = FeatureCache(task, feature_type)
        if feature_budget is None:
            feature_budget = 400 if feats.expensive else None
        opt = SimulatedAnnealingOptimizer(task.config_space, feature_budget=feature_budget, seed=seed)
        model = XGBCostModel(loss_type=loss_type, num_threads=num_threads, seed=seed or 0)
        super().__init__(task, model, feats, opt, plan_size, seed)
        self.feature_type, self.loss_type = feature_type, loss_type
