"""``check_schedule``: a GPU schedule lowered for CUDA and run on the simulator at a small size, for the
explorer's Iteration space view and for quick checks in a notebook (no GPU, no NVRTC needed)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import dtype as dt
from ...ir.expr import Var
from ...ir.tensor import Tensor
from ..access import default_sizes, suggested_size
from ..interp import Interpreter


def binds_gpu_threads(sch):
    """Whether any stage of ``sch`` binds an axis to a GPU thread (blockIdx / threadIdx / vthread)."""
    return any(a.bind_thread is not None for st in getattr(sch, "stages", ())
               for a in st.iter_var_attrs.values())


@dataclass
class ScheduleCheck:
    """``report`` (a SimReport), ``sizes`` used, ``arrays`` {tensor name: numpy array after the run}."""
    report: object
    sizes: dict
    arrays: dict


def check_schedule(sch, args, sizes=None, target="cuda", seed=0, traffic=True):
    """Lower ``sch`` for ``target`` and simulate it on random inputs at ``sizes`` (shape variables;
    default: the explorer's suggested size).  Never raises on findings: they are in ``report``, with the
    memory traffic of every access (``report.traffic()``) unless ``traffic`` is False."""
    import tvmlab
    from . import simulate
    mod = tvmlab.lower(sch, list(args), target=target)
    sizes = default_sizes(args, sizes, suggested_size(sch))
    env = {}
    rng = np.random.default_rng(seed)
    arrays, call = {}, []
    outputs = {t.name for op in getattr(sch, "outputs", ()) for t in op.outputs}
    for a in args:
        if isinstance(a, Var):
            call.append(sizes[a.name])
            continue
        if not isinstance(a, Tensor):
            continue
        for d in a.shape:
            for v in _vars(d):
                env[v] = sizes[v.name]
        dims = [int(Interpreter(env=env).eval(tvmlab.tir.const(d) if isinstance(d, int) else d)) for d in a.shape]
        if a.name in outputs:
            from ...testing import poison
            arr = poison(np.empty(dims, dt.to_numpy(a.dtype)))
        elif dt.is_float(a.dtype):
            arr = rng.standard_normal(dims).astype(dt.to_numpy(a.dtype))
        else:
            arr = rng.integers(1, 7, size=dims).astype(dt.to_numpy(a.dtype))
        arrays[a.name] = arr
        call.append(arr)
    report = simulate(mod, *call, check=False, traffic=traffic)
    return ScheduleCheck(report, dict(sizes), arrays)


def _vars(e):
    from ...ir.functor import collect_vars
    return [] if isinstance(e, int) else collect_vars(e)
