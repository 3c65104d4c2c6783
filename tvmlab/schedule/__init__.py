"""Schedules: stages, IterVar relations, primitives, the trace, InferBound and ScheduleOps."""
from .schedule import Schedule, create_schedule  # noqa: F401
from .stage import Stage  # noqa: F401
from .trace import Trace  # noqa: F401
from .steps import (AutoInlineBroadcast, AutoInlineElemWise, AutoInlineInjective, InferBound, ScheduleOps,  # noqa: F401
                    SchedulePostProcToPrimFunc)
from . import json_io  # noqa: F401  (tvm.ir.save_json of a schedule)
from ..ir.tensor import IterVar  # noqa: F401  (TVM's te.schedule.IterVar and its type codes)
from .relations import Fuse, Rebase, Singleton, Split  # noqa: F401
from .graph import CreateReadGraph, PostDFSOrder, ScanFixPointAnalysis, ScanGetBody  # noqa: F401
from ..ir.function import Buffer  # noqa: F401,E402  (te.schedule.Buffer: what te.extern's fcompute receives)
