"""Dispatch contexts: which config a template uses when it is called.

A template asks the current context for the config of its workload.
``ApplyConfig(cfg)`` answers ``cfg`` (measurement uses it); ``ApplyHistoryBest``
answers the best record of the workload; the root ``FallbackContext`` answers a
``FallbackConfigEntity`` (the template's defaults) and warns once per workload.
Contexts nest with ``with``; each thread has its own stack, so a tune running
in the background does not change what the notebook's code gets.
"""
from __future__ import annotations

import json
import logging
import threading

from ..space import ConfigEntity, FallbackConfigEntity

logger = logging.getLogger("autotvm")
_state = threading.local()


class _CurrentMeta(type):
    @property
    def current(cls):
        cur = getattr(_state, "current", None)
        if cur is None:
            cur = _state.current = FallbackContext()
        return cur

    @current.setter
    def current(cls, ctx):
        _state.current = ctx


def workload_key(workload):
    """A hashable, JSON-stable key of a workload tuple."""
    return json.dumps(workload, sort_keys=True, default=str)


def target_kind(target):
    """The kind of a target (its first word), or None."""
    if target is None:
        return None
    return str(target).split()[0] if str(target).split() else None


class DispatchContext(metaclass=_CurrentMeta):
    """Base: answers what it knows, else asks the context it was entered over."""

    def __init__(self):
        self._old_ctx = None

    def query(self, target, workload):
        cfg = self._query_inside(target, workload)
        if cfg is None:
            old = self._old_ctx if self._old_ctx is not None else FallbackContext.root()
            cfg = old.query(target, workload)
        return cfg

    def _query_inside(self, target, workload):
        return None

    def update(self, target, workload, cfg):
        raise NotImplementedError

    def __enter__(self):
        self._old_ctx = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, *exc):
        DispatchContext.current = self._old_ctx


class ApplyConfig(DispatchContext):
    """Every query gets ``config``."""

    def __init__(self, config):
        super().__init__()
        self._config = config
        self.workload = None

    def _query_inside(self, target, workload):
        self.workload = workload
        return self._config

    def update(self, target, workload, cfg):
        self._config = cfg


class FallbackContext(DispatchContext):
    """The root: a FallbackConfigEntity per workload, with one warning each."""
    _root = None

    @classmethod
    def root(cls):
        if cls._root is None:
            cls._root = FallbackContext()
        return cls._root

    def __init__(self):
        super().__init__()
        self.memory = {}
        self.silent = False

    def query(self, target, workload):
        return self._query_inside(target, workload)

    def _query_inside(self, target, workload):
        key = (target_kind(target), workload_key(workload))
        known = self.memory.get(key)
        if known is not None and not known.is_fallback:
            return known                  # set by update(): it wins over the shipped configs
        if workload is not None:
            from ..tophub import default_context
            shipped = default_context(target)
            cfg = shipped._query_inside(target, workload) if shipped is not None else None
            if cfg is not None:
                return cfg
        if known is not None:
            return known
        if workload is not None and not self.silent:
            logger.warning("Cannot find config for target=%s, workload=%s. A fallback configuration is used, "
                           "which may bring great performance regression.", target, workload)
        cfg = FallbackConfigEntity()
        if workload is not None:
            self.memory[key] = cfg
        return cfg

    def clear_cache(self, target, workload):
        self.memory.pop((target_kind(target), workload_key(workload)), None)

    def update(self, target, workload, cfg):
        self.memory[(target_kind(target), workload_key(workload))] = cfg


class ApplyHistoryBest(DispatchContext):
    """The best (lowest mean cost, no error) record of each workload.

    ``records``: a log file path, a list of paths, or (MeasureInput,
    MeasureResult) pairs.  A record matches a query of the same workload whose
    target has the same kind (or no target).
    """

    def __init__(self, records):
        super().__init__()
        self.best_by_targetkey = {}     # (kind, workload key) -> (mean cost, config)
        self._best_any = {}             # workload key -> (mean cost, config)
        if records is not None:
            self.load(records)

    def load(self, records):
        from ..record import load_from_file
        if isinstance(records, (str, bytes)) or hasattr(records, "__fspath__"):
            records = [records]
        n = 0
        for item in records:
            pairs = load_from_file(item) if isinstance(item, (str, bytes)) or hasattr(item, "__fspath__") \
                else [item]
            for inp, res in pairs:
                n += 1
                if res.error_no != 0 or not res.costs:
                    continue
                cost = sum(res.costs) / len(res.costs)
                wkey = workload_key(inp.task.workload)
                for table, key in ((self.best_by_targetkey, (target_kind(inp.target), wkey)),
                                   (self._best_any, wkey)):
                    if key not in table or cost < table[key][0]:
                        table[key] = (cost, inp.config)
        logger.debug("ApplyHistoryBest: %d records, %d workloads", n, len(self._best_any))

    def _query_inside(self, target, workload):
        if workload is None:
            return None
        wkey = workload_key(workload)
        kind = target_kind(target)
        hit = self.best_by_targetkey.get((kind, wkey)) if kind is not None else self._best_any.get(wkey)
        return hit[1] if hit is not None else None

    def update(self, target, workload, cfg):
        wkey = workload_key(workload)
        self.best_by_targetkey[(target_kind(target), wkey)] = (0.0, cfg)
        self._best_any[wkey] = (0.0, cfg)


def apply_history_best(records):
    """``with apply_history_best("tune.log"):`` templates use the best tuned config of their workload."""
    return ApplyHistoryBest(records)


__all__ = ["DispatchContext", "ApplyConfig", "ApplyHistoryBest", "FallbackContext", "apply_history_best",
           "ConfigEntity"]
