"""Integer arithmetic on index expressions: simplification, bounds, intervals, proofs.

``Analyzer`` is the entry point; ``simplify`` and ``eval_interval`` are
one-shot conveniences.  Modules: ``keys`` (structural keys), ``linear``
(linear forms), ``int_bound`` (constant bounds), ``interval`` (symbolic
intervals), ``rewrite`` (the simplifier), ``analyzer`` (the facade).
"""
from .analyzer import Analyzer, ConstIntBound, simplify
from .interval import NEG_INF, POS_INF, IntervalSet, eval_interval, intersect, union

__all__ = ["Analyzer", "ConstIntBound", "simplify", "IntervalSet", "eval_interval", "union", "intersect",
           "POS_INF", "NEG_INF"]
