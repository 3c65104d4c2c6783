"""``SearchTask`` and ``TuningOptions``: what to tune, and how long and where to measure."""
from __future__ import annotations

import numbers

from .measure import (LocalBuilder, LocalRunner, MeasureCallback, RecordError, load_record_lines,
                      mean_cost)
from .sketch import DAG, apply_state, check_state
from .workload import WORKLOAD_FUNC_REGISTRY, WorkloadError, make_workload_key, workload_tensors


class TuningOptions:
    """How a task is tuned: trials, measurement, callbacks (TVM's spelling)."""

    def __init__(self, num_measure_trials=0, early_stopping=None, num_measures_per_round=64, verbose=1,
                 builder="local", runner="local", measure_callbacks=None):
        for what, v, lo in (("num_measure_trials", num_measure_trials, 0),
                            ("num_measures_per_round", num_measures_per_round, 1)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
                raise WorkloadError(f"TuningOptions: {what} must be an int >= {lo}, got {v!r}")
        if early_stopping is not None and (isinstance(early_stopping, bool) or
                                           not isinstance(early_stopping, numbers.Integral) or early_stopping < 1):
            raise WorkloadError(f"TuningOptions: early_stopping must be None or an int >= 1, got {early_stopping!r}")
        if builder == "local":
            builder = LocalBuilder()
        if runner == "local":
            self._own_runner = True
            runner = LocalRunner()
        else:
            self._own_runner = False
        from ..autotvm.measure import Builder, Runner
        if not isinstance(builder, Builder):
            raise WorkloadError(f"TuningOptions: builder must be LocalBuilder() or 'local', got {builder!r}")
        if not isinstance(runner, Runner):
            raise WorkloadError(f"TuningOptions: runner must be LocalRunner(), DaskRunner(...) or 'local', "
                                f"got {runner!r}")
        cbs = list(measure_callbacks or [])
        for cb in cbs:
            if not (isinstance(cb, MeasureCallback) or callable(cb)):
                raise WorkloadError(f"TuningOptions: a measure callback must be callable, got {cb!r}")
        self.num_measure_trials = int(num_measure_trials)
        self.early_stopping = early_stopping
        self.num_measures_per_round = int(num_measures_per_round)
        self.verbose = verbose
        self.builder, self.runner, self.measure_callbacks = builder, runner, cbs


def _tensors_by_name(tensors):
    out = {}
    stack = list(tensors)
    while stack:
        t = stack.pop()
        if t.op.name in out and out[t.op.name].op is not t.op:
            from ..ir.tensor import PlaceholderOp
            if not isinstance(t.op, PlaceholderOp):
                raise WorkloadError(f"two different stages are named {t.op.name!r}; give them distinct names")
            continue
        out[t.op.name] = t
        stack += list(t.op.input_tensors)
    return out


class SearchTask:
    """A computation to tune: ``SearchTask(func=f, args=(...), target="llvm")`` or ``workload_key=``."""

    def __init__(self, func=None, args=None, compute_dag=None, workload_key=None, target="llvm",
                 target_host=None, hardware_params=None, layout_rewrite_option=None, task_inputs=None):
        from ..codegen.registry import Target
        if compute_dag is not None:
            from .workload import ComputeDAG
            if not isinstance(compute_dag, ComputeDAG):
                raise WorkloadError(f"compute_dag must be an auto_scheduler.ComputeDAG, got {compute_dag!r:.80}")
            workload_key = compute_dag.workload_key
        if workload_key is None:
            if func is None:
                raise WorkloadError("SearchTask needs func= (a registered workload) or workload_key=")
            if isinstance(func, str):
                if func not in WORKLOAD_FUNC_REGISTRY:
                    raise WorkloadError(f"workload {func!r} is not registered")
            elif func not in WORKLOAD_FUNC_REGISTRY.values():
                register = getattr(func, "__name__", None)
                if register in WORKLOAD_FUNC_REGISTRY:
                    raise WorkloadError(f"another function is registered as {register!r}")
                from .workload import register_workload
                register_workload(func)
            workload_key = make_workload_key(func, tuple(args or ()))
        self.workload_key = workload_key
        self.target = target if isinstance(target, Target) else Target(target)
        if self.target.kind.name not in ("llvm", "cuda"):
            raise WorkloadError(f"the auto-scheduler tunes CPU (llvm) and CUDA (cuda) targets; got {self.target}")
        self.target_host = target_host
        self.hardware_params = hardware_params
        tensors = workload_tensors(workload_key)
        self.dag = self._dag(tensors)
        self.compute_dag = self.dag
        self.flop = self.dag.flops or 1

    @property
    def is_gpu(self):
        return self.target.kind.name == "cuda"

    def _dag(self, tensors):
        if not self.is_gpu:
            return DAG(tensors)
        from .sketch_gpu import GPUDAG, target_limits
        return GPUDAG(tensors, target_limits(self.target))

    def instantiate(self, state):
        """A fresh ``(schedule, args)`` of ``state`` (its trace records every step)."""
        from .. import te
        args = workload_tensors(self.workload_key)     # a ComputeDAG's own tensors, or fresh ones
        dag = self._dag(args)
        s = te.create_schedule([op for op in dag.outputs])
        apply_state(s, dag, state, _tensors_by_name(args))
        return s, args

    def check_state(self, state):
        """Raise SketchError unless ``state`` fits this task and its target: for a GPU, threads per block,
        virtual threads and the shared memory of every kernel (from bound inference, without lowering)
        within the target's limits (``tvmlab.lower.verify_gpu``'s, with the target's ``-max_...`` options)."""
        check_state(self.dag, state)
        if self.is_gpu:
            from .sketch_gpu import check_shared
            s, args = self.instantiate(state)
            check_shared(self._dag(args), s)

    def default_schedule(self):
        """``(schedule, args)`` where no record exists: ``te.create_schedule`` of the outputs; for a GPU
        with each kernel's loops bound to blocks and threads (``sketch_gpu.default_state``)."""
        from .. import te
        if self.is_gpu:
            from .sketch_gpu import default_state
            return self.instantiate(default_state(self.dag))
        args = workload_tensors(self.workload_key)
        return te.create_schedule([op for op in self._dag(args).outputs]), args

    def tune(self, tuning_options, search_policy=None, adaptive_training=False):
        """Search and measure; returns the best state (records go to the options' callbacks)."""
        from .search import SketchPolicy
        if not isinstance(tuning_options, TuningOptions):
            raise WorkloadError(f"task.tune needs TuningOptions, got {type(tuning_options).__name__}")
        policy = search_policy or SketchPolicy(self, verbose=tuning_options.verbose)
        try:
            return policy.search(tuning_options)
        finally:
            if tuning_options._own_runner:
                tuning_options.runner.close()

    def best_record(self, log_file):
        """``(state, result)`` of the fastest record of this task in ``log_file``."""
        best = None
        for key, target, state, res in load_record_lines(log_file):
            if key != self.workload_key or target.split()[0] != str(self.target).split()[0]:
                continue
            c = mean_cost(res)
            if c is not None and (best is None or c < best[2]):
                best = (state, res, c)
        if best is None:
            raise RecordError(f"{log_file} holds no successful record of {self.workload_key} for {self.target}")
        return best[0], best[1]

    def apply_best(self, log_file, include_compatible=False, layout_rewrite_option=None):
        """``(schedule, args)`` of the best record in ``log_file``."""
        state, _ = self.best_record(log_file)
        return self.instantiate(state)

    def print_best(self, log_file, print_mode="schedule"):
        """The best schedule as Python (TVM prints it as its own Python API), or with ``print_mode="cuda"``
        (a CUDA task) its CUDA source; also returned."""
        if print_mode not in ("schedule", "cuda") or (print_mode == "cuda" and not self.is_gpu):
            raise WorkloadError(f"print_mode must be 'schedule'{' or cuda' if self.is_gpu else ''} (CUDA source "
                                f"is produced for CUDA tasks only), got {print_mode!r}")
        s, args = self.apply_best(log_file)
        if print_mode == "cuda":
            from .. import build
            code = build(s, args, self.target).imported_modules[0].get_source()
        else:
            code = s.trace.as_python()
        print(code)
        return code

    def __getstate__(self):
        return {"workload_key": self.workload_key, "target": str(self.target)}

    def __setstate__(self, st):
        self.__init__(workload_key=st["workload_key"], target=st["target"])

    def __repr__(self):
        return f"SearchTask({self.workload_key}, target={self.target})"

