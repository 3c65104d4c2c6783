"""``GATuner``: a genetic algorithm over the knobs (each knob's entity index is a gene)."""
from __future__ import annotations

import numpy as np

from .tuner import Tuner, TunerError


class GATuner(Tuner):
    """Keeps ``elite_num`` best genes, breeds a population of ``pop_size`` by one-point crossover of
    parents drawn by fitness, and mutates each gene with ``mutation_prob``; never measures a config twice."""

    def __init__(self, task, pop_size=100, elite_num=3, mutation_prob=0.1, seed=None):
        super().__init__(task)
        if not (isinstance(pop_size, int) and pop_size >= 1 and isinstance(elite_num, int) and 0 <= elite_num
                <= pop_size and 0.0 <= mutation_prob <= 1.0):
            raise TunerError(f"GATuner needs pop_size >= 1, 0 <= elite_num <= pop_size and mutation_prob in "
                             f"[0, 1]; got {pop_size}, {elite_num}, {mutation_prob}")
        self.rng = np.random.default_rng(seed)
        self.dims = self.space.dims()
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.visited = set()
        self.genes, self.scores = [], []
        self.elites, self.elite_scores = [], []
        self.trial_pt = 0
        while len(self.genes) < self.pop_size:
            gene = [int(self.rng.integers(d)) for d in self.dims]
            if self.space.knob2point(gene) not in {self.space.knob2point(g) for g in self.genes}:
                self.genes.append(gene)

    def has_next(self):
        return len(self.visited) < len(self.space)

    def next_batch(self, batch_size):
        out = []
        while len(out) < batch_size and self.has_next():
            if self.trial_pt < len(self.genes):
                point = self.space.knob2point(self.genes[self.trial_pt])
                self.trial_pt += 1
                if point in self.visited:
                    point = self._random_unvisited()
            else:
                point = self._random_unvisited()
            self.visited.add(point)
            out.append(self.space.get(point))
        return out

    def update(self, inputs, results):
        for inp, res in zip(inputs, results):
            self.scores.append(self.throughput(inp, res))
            self.elites.append(self.space.point2knob(inp.config.index))
            self.elite_scores.append(self.scores[-1])
        if len(self.scores) >= len(self.genes) and self.trial_pt >= len(self.genes):
            self._next_generation()

    def _next_generation(self):
        genes = self.elites
        scores = np.asarray(self.elite_scores, dtype=np.float64)
        order = np.argsort(-scores)
        elites = [genes[i] for i in order[:self.elite_num]]
        elite_scores = [float(scores[i]) for i in order[:self.elite_num]]
        probs = scores + 1e-8
        probs = probs / probs.sum()
        children = []
        tries = 0
        while len(children) < self.pop_size and tries < 20 * self.pop_size:
            tries += 1
            a, b = self.rng.choice(len(genes), size=2, p=probs)
            cut = int(self.rng.integers(len(self.dims) + 1))
            child = list(genes[a][:cut]) + list(genes[b][cut:])
            for j, d in enumerate(self.dims):
                if self.rng.random() < self.mutation_prob:
                    child[j] = int(self.rng.integers(d))
            if self.space.knob2point(child) not in self.visited:
                children.append(child)
        self.genes = children or [self.space.point2knob(self._random_unvisited())]
        self.trial_pt = 0
        self.scores = []
        self.elites, self.elite_scores = elites, elite_scores
