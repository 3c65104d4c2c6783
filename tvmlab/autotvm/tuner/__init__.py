"""``autotvm.tuner``: RandomTuner, GridSearchTuner, GATuner, XGBTuner."""
from .ga_tuner import GATuner  # noqa: F401
from .index_based_tuner import GridSearchTuner, IndexBaseTuner, RandomTuner  # noqa: F401
from .tuner import Tuner, TunerError  # noqa: F401
from .xgboost_tuner import ModelBasedTuner, SimulatedAnnealingOptimizer, XGBTuner  # noqa: F401
