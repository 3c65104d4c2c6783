"""Shared tuning machinery: executors, measurement, features and the learned cost model.

Used by ``tvmlab.autotvm`` (templates) and by template-free searches alike.
"""
from .executor import DaskExecutor, Executor, ExecutorError, JobResult, LocalExecutor, WorkerPool  # noqa: F401
from .measure import MeasureError, MeasureErrorNo, build_candidate, run_candidate  # noqa: F401
from .features import curve_features, itervar_features, knob_features  # noqa: F401


def __getattr__(name):
    # the cost model imports xgboost: only when asked for
    if name in ("XGBCostModel", "CostModelError"):
        from . import cost_model
        return getattr(cost_model, name)
    raise AttributeError(f"module 'tvmlab.tuning' has no attribute {name!r}")
