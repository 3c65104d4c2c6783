"""The template-free auto-scheduler, as TVM spells it.

    @auto_scheduler.register_workload
    def matmul_add(N, L, M, dtype): ...return [A, B, D, C]
    task = auto_scheduler.SearchTask(func=matmul_add, args=(1024, 1024, 1024, "float32"), target="llvm")
    task.tune(auto_scheduler.TuningOptions(num_measure_trials=300,
                                           measure_callbacks=[auto_scheduler.RecordToFile("mm.json")]))
    sch, args = task.apply_best("mm.json")
    task.print_best("mm.json")

For ``target="cuda"`` the sketches are GPU ones (``sketch_gpu``: multi-level
tiling bound to blocks, virtual threads and threads with shared-memory
operands, cross-thread reductions, bound elementwise stages); states over the
target's limits are refused before they are measured, and the CUDA builds are
compiled by NVRTC and timed on ``cuda(0)`` through AutoTVM's measurement.

Schedules come from sketches of the compute definition (``sketch``), searched
by ``SketchPolicy`` with a learned cost model (``search``), measured by
AutoTVM's builders and runners (``measure``); the result is an ordinary
tvmlab schedule whose trace replays and prints as Python.
"""
from .measure import (DaskRunner, LocalBuilder, LocalRunner, MeasureCallback, MeasureInput,  # noqa: F401
                      MeasureResult, RecordError, RecordToFile, load_records, save_records)
from .search import CostModel, RandomModel, SearchError, SketchPolicy, XGBModel  # noqa: F401
from .sketch import SketchError  # noqa: F401
from .task import SearchTask, TuningOptions  # noqa: F401
from .dispatch import ApplyHistoryBest  # noqa: F401
from .workload import (WORKLOAD_FUNC_REGISTRY, ComputeDAG, WorkloadError, make_workload_key,  # noqa: F401
                       register_workload)
