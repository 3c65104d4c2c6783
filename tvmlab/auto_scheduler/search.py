"""The search: cost models over state features and the evolutionary ``SketchPolicy``.

Each round the policy grows a population from random states of every sketch
and the best states measured so far, evolves it for a few generations
(mutating tile sizes by moving a prime factor between levels, changing
annotations, crossing over two parents of one sketch) with the cost model as
fitness, and measures the states the model ranks best (plus a few random ones,
``eps_greedy``) through the task's builder and runner.  The model is then
retrained on every measurement so far.

Features are computed from the state itself (log2 tile size of every level,
inner tile volumes, the parallel extent, vector length, unroll step), so
scoring thousands of candidates costs no lowering.
"""
from __future__ import annotations

import json
import math
import random
import time

import numpy as np

from ..errors import TVMLabError
from .measure import MeasureInput, mean_cost
from .sketch import UNROLL_STEPS, check_state, random_state

MAX_TILED, MAX_S, MAX_R, MAX_PLAIN = 2, 4, 3, 2
MODES = ("tile", "cache_write", "fuse")


class SearchError(TVMLabError, ValueError):
    """Bad search options."""


def _lg(x):
    return math.log2(max(1, x))


def state_features(dag, state):
    """A fixed-length feature vector of ``state`` (see the module docstring)."""
    if dag.gpu:
        from . import sketch_gpu
        return sketch_gpu.state_features(dag, state)
    sk, tiles, ann = state["sketch"], state["tiles"], state["ann"]
    row = []
    for name in (dag.tiled + [None] * MAX_TILED)[:MAX_TILED]:
        if name is None:
            row += [0.0] * (len(MODES) + 4 * MAX_S + 2 * MAX_R + 9)
            continue
        row += [float(sk[name] == m) for m in MODES]
        levels = []
        for e, fs in zip(dag.spatial(name), tiles[name]["S"]):
            levels.append([e // math.prod(fs)] + list(fs))
        rlev = [[e // math.prod(fs)] + list(fs) for e, fs in zip(dag.reduce(name), tiles[name]["R"])]
        for lv in (levels + [[1] * 4] * MAX_S)[:MAX_S]:
            row += [_lg(v) for v in lv]
        for lv in (rlev + [[1] * 2] * MAX_R)[:MAX_R]:
            row += [_lg(v) for v in lv]
        s3 = math.prod(lv[3] for lv in levels)
        s23 = math.prod(lv[2] * lv[3] for lv in levels)
        r1 = math.prod(lv[1] for lv in rlev)
        a = ann[name]
        par = math.prod(lv[0] for lv in levels[:a["parallel"]]) if a["parallel"] else 1
        vec = levels[-1][3] if levels and a["vectorize"] else 1
        row += [_lg(s3), _lg(s23), _lg(s23 * r1), _lg(s3 * r1), _lg(par), float(a["parallel"]), _lg(vec),
                _lg(a["unroll"]), _lg(levels[-1][3] * (levels[-1][2] if sk[name] != "tile" else 1))]
    for name in (dag.plain_outputs(sk) + [None] * MAX_PLAIN)[:MAX_PLAIN]:
        a = ann.get(name) if name else None
        row += [0.0, 0.0] if a is None else [float(a["parallel"]), float(a["vectorize"])]
    return row


class CostModel:
    """Scores states; higher means faster."""

    def update(self, dag, states, throughputs):
        pass

    def predict(self, dag, states):
        raise NotImplementedError


class RandomModel(CostModel):
    """Random scores: the search is then a random walk over sketches (a baseline)."""

    def __init__(self, seed=None):
        self.rng = np.random.default_rng(seed)

    def predict(self, dag, states):
        return self.rng.random(len(states))


class XGBModel(CostModel):
    """Boosted trees (tvmlab.tuning's XGBCostModel, pairwise rank loss) over state features."""

    def __init__(self, num_warmup_sample=32, seed=0, loss_type="rank"):
        from ..tuning.cost_model import XGBCostModel
        self.model = XGBCostModel(loss_type=loss_type, seed=seed)
        self.num_warmup_sample = num_warmup_sample
        self.n = 0

    def update(self, dag, states, throughputs):
        self.n = len(states)
        if len(states) >= 2 and max(throughputs) > 0:
            self.model.fit([state_features(dag, s) for s in states], throughputs)

    def predict(self, dag, states):
        if not self.model.trained or self.n < min(self.num_warmup_sample, 2):
            return np.random.default_rng(len(states) + self.n).random(len(states))
        return self.model.predict([state_features(dag, s) for s in states])


def _key(state):
    return json.dumps(state, sort_keys=True)


def _prime_factor(rng, n):
    ps, d = [], 2
    while d * d <= n:
        while n % d == 0:
            ps.append(d)
            n //= d
        d += 1
    if n > 1:
        ps.append(n)
    return rng.choice(ps)


class SketchPolicy:
    """Sketch generation plus evolutionary search guided by ``program_cost_model``.

    ``params``: population_size (256), num_generations (4), mutation_prob
    (0.85), eps_greedy (0.05), retain_best (16), max_innermost_split_factor (64).
    """

    DEFAULTS = {"population_size": 256, "num_generations": 4, "mutation_prob": 0.85, "eps_greedy": 0.05,
                "retain_best": 16, "max_innermost_split_factor": 64}

    def __init__(self, task, program_cost_model=None, params=None, seed=None, verbose=1,
                 init_search_callbacks=None):
        self.task = task
        self.model = program_cost_model if program_cost_model is not None else XGBModel()
        if not isinstance(self.model, CostModel):
            raise SearchError(f"program_cost_model must be XGBModel() or RandomModel(), got {self.model!r}")
        unknown = set(params or {}) - set(self.DEFAULTS)
        if unknown:
            raise SearchError(f"unknown SketchPolicy params {sorted(unknown)}; known: {sorted(self.DEFAULTS)}")
        self.params = dict(self.DEFAULTS, **(params or {}))
        self.rng = random.Random(seed)
        self.verbose = verbose
        self.dag = task.dag
        self.sketches = self.dag.sketches()
        self.measured = {}          # state key -> throughput (0 for failures)
        self.states, self.throughputs = [], []
        self.history = []           # (trial, gflops or 0, best gflops so far)
        self.best_state, self.best_cost = None, None
        self.stopped = False
        self.predicted = {}         # state key -> the model's score when it was picked (last round)
        self.rejected = 0           # states refused before measurement (over the target's limits)

    # ------------------------------------------------------------ generation
    def sample_initial_population(self, n):
        return [random_state(self.dag, self.rng.choice(self.sketches), self.rng,
                             self.params["max_innermost_split_factor"]) for _ in range(n)]

    def mutate(self, state):
        dag = self.dag
        if dag.gpu:
            from . import sketch_gpu
            return sketch_gpu.mutate(dag, state, self.rng, self.params["max_innermost_split_factor"])
        s = json.loads(json.dumps(state))
        if dag.tiled and self.rng.random() < 0.7:
            name = self.rng.choice(dag.tiled)
            kind = self.rng.choice(["S", "R"]) if dag.reduce(name) else "S"
            axes = dag.spatial(name) if kind == "S" else dag.reduce(name)
            if not axes:
                return s
            k = self.rng.randrange(len(axes))
            fs = s["tiles"][name][kind][k]
            lv = [axes[k] // math.prod(fs)] + fs
            src = [i for i, v in enumerate(lv) if v > 1]
            if src:
                a = self.rng.choice(src)
                p = _prime_factor(self.rng, lv[a])
                b = self.rng.choice([i for i in range(len(lv)) if i != a])
                lv[a] //= p
                lv[b] *= p
                if lv[-1] <= self.params["max_innermost_split_factor"]:
                    s["tiles"][name][kind][k] = lv[1:]
            return s
        name = self.rng.choice(list(s["ann"]))
        a = s["ann"][name]
        what = self.rng.choice(["parallel", "vectorize", "unroll"])
        if what == "parallel":
            a["parallel"] = self.rng.randint(0, max(1, len(dag.spatial(name))))
        elif what == "vectorize":
            a["vectorize"] = not a["vectorize"]
        else:
            a["unroll"] = self.rng.choice(UNROLL_STEPS)
        return s

    def crossover(self, s1, s2):
        if s1["sketch"] != s2["sketch"]:
            return self.mutate(s1)
        child = json.loads(json.dumps(s1))
        for name in child["tiles"]:
            for kind in ("S", "R"):
                for k in range(len(child["tiles"][name][kind])):
                    if self.rng.random() < 0.5:
                        child["tiles"][name][kind][k] = list(s2["tiles"][name][kind][k])
        for name in child["ann"]:
            if self.rng.random() < 0.5:
                child["ann"][name] = dict(s2["ann"][name])
        return child

    def evolve(self, n_out):
        """``n_out`` unmeasured states the model ranks best (a share picked at random)."""
        P = self.params
        pop = self.sample_initial_population(P["population_size"])
        best = sorted(zip(self.throughputs, range(len(self.states))), reverse=True)[:P["retain_best"]]
        pop += [self.states[i] for t, i in best if t > 0]
        seen = {}
        for s in pop:
            seen[_key(s)] = s
        for _ in range(P["num_generations"]):
            pop = list(seen.values())
            scores = np.asarray(self.model.predict(self.dag, pop), dtype=float)
            order = np.argsort(-scores)
            elite = [pop[i] for i in order[:max(2, len(pop) // 4)]]
            children = []
            for _ in range(P["population_size"]):
                p1 = self.rng.choice(elite)
                if self.rng.random() < P["mutation_prob"]:
                    c = self.mutate(p1)
                else:
                    c = self.crossover(p1, self.rng.choice(elite))
                children.append(c)
            seen = {_key(s): s for s in elite}
            for c in children:
                try:
                    check_state(self.dag, c)
                except TVMLabError:
                    continue
                seen.setdefault(_key(c), c)
        pop = [s for k, s in seen.items() if k not in self.measured]
        if not pop:
            return self.sample_initial_population(n_out)
        scores = np.asarray(self.model.predict(self.dag, pop), dtype=float)
        order = list(np.argsort(-scores))
        n_rand = int(round(n_out * P["eps_greedy"]))
        picked = [pop[i] for i in order[:n_out - n_rand]]
        self.predicted = {_key(pop[i]): float(scores[i]) for i in order[:n_out - n_rand]}
        keys = {_key(s) for s in picked}
        for s in self.sample_initial_population(n_rand * 4):
            if len(picked) >= n_out:
                break
            k = _key(s)
            if k not in keys and k not in self.measured:
                picked.append(s)
                keys.add(k)
        return picked

    # ------------------------------------------------------------ the loop
    def search(self, options):
        """Measure ``options.num_measure_trials`` states; returns the best state."""
        from ..autotvm.measure import create_measure_batch, measure_option
        mo = measure_option(builder=options.builder, runner=options.runner)
        measure = create_measure_batch(self.task, mo)
        total, per_round = options.num_measure_trials, options.num_measures_per_round
        t0, best_at = time.time(), len(self.history)
        self.stopped = False
        progress = Progress(total) if self.verbose else None
        try:
            self._search_rounds(options, measure, total, per_round, t0, best_at, progress)
        finally:
            if progress is not None:
                progress.close()
        return self.best_state

    def _search_rounds(self, options, measure, total, per_round, t0, best_at, progress):
        done, idle = 0, 0
        while done < total and not self.stopped:
            n = min(per_round, total - done)
            states = self.valid(self.evolve(n) if self.states else self.sample_initial_population(n), n)
            if not states:
                idle += 1
                if idle >= 8:           # every state drawn is over the target's limits
                    break
                continue
            inputs = [MeasureInput(self.task, s) for s in states]
            results = measure(inputs)
            for s, r in zip(states, results):
                c = mean_cost(r)
                tp = self.task.flop / c if c else 0.0
                self.measured[_key(s)] = tp
                self.states.append(s)
                self.throughputs.append(tp)
                improved = bool(c) and (self.best_cost is None or c < self.best_cost)
                if improved:
                    self.best_cost, self.best_state = c, s
                best = self.task.flop / self.best_cost / 1e9 if self.best_cost else 0.0
                self.history.append((len(self.history) + 1, tp / 1e9, best))
                if improved:
                    best_at = len(self.history)
            done += len(states)
            for cb in options.measure_callbacks:
                cb(self, inputs, results)
            self.model.update(self.dag, self.states, self.throughputs)
            if progress is not None:
                best = self.task.flop / self.best_cost / 1e9 if self.best_cost else 0.0
                ok = sum(1 for r in results if r.error_no == 0)
                progress.update(len(results), done, best, ok, done / max(time.time() - t0, 1e-9))
            if options.early_stopping and len(self.history) - best_at >= options.early_stopping:
                break

    def valid(self, states, n):
        """Up to ``n`` of ``states`` (topped up with random ones) that pass ``task.check_state``, i.e. fit
        the target: states over its limits are refused here, before any is built or measured."""
        out, seen = [], set()

        def take(s):
            k = _key(s)
            if k in self.measured or k in seen:
                return
            seen.add(k)
            try:
                self.task.check_state(s)
            except TVMLabError:
                self.measured[k] = 0.0
                self.rejected += 1
                return
            out.append(s)
        for s in states:
            if len(out) < n:
                take(s)
        for s in self.sample_initial_population(4 * (n - len(out))):
            if len(out) >= n:
                break
            take(s)
        return out

    def stop(self):
        """Ask a running search to stop after the current batch (from another thread)."""
        self.stopped = True


class Progress:
    """The search's progress: a tqdm bar of trials with the best GFLOP/s so far (as AutoTVM's
    ``callback.progress_bar``; a widget in a notebook), or one printed line per round where tqdm
    is not installed."""

    def __init__(self, total):
        self.total = total
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=total, desc="auto_scheduler", unit="trial")

    def update(self, n, done, best_gflops, ok, rate):
        text = f"best {best_gflops:.2f} GFLOP/s, ok {ok}/{n} in the last round"
        if self.bar is None:
            print(f"[auto_scheduler] trials {done}/{self.total}  {text}  {rate:.2f} trials/s", flush=True)
            return
        self.bar.set_postfix_str(text, refresh=False)
        self.bar.update(n)

    def close(self):
        if self.bar is not None:
            self.bar.close()
