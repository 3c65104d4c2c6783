"""Build an operator with its CPU and CUDA schedules and compare both with numpy on random data: the CPU
build runs here, the CUDA build on the thread-level simulator (which also fails on races and
out-of-bounds accesses).  Outputs start as NaN (or a sentinel for integers)."""
import numpy as np

import tvmlab
from tvmlab.ir.tensor import PlaceholderOp
from tvmlab.testing import poison, random_data, tolerance


def _inputs(args, rng, ranges, inputs):
    out = []
    for a in args:
        if not isinstance(a.op, PlaceholderOp):
            continue
        if inputs and a.name in inputs:
            out.append(np.asarray(inputs[a.name]))
        else:
            lo, hi = (ranges or {}).get(a.name, (None, None))
            out.append(random_data([int(d) for d in a.shape], a.dtype, rng, lo, hi))
    return out


def verify(args, ref, rng, cpu=None, cuda=None, ranges=None, inputs=None, rtol=None, atol=None):
    """``args``: placeholders then outputs; ``ref(*input arrays)`` gives the outputs; ``cpu`` / ``cuda``:
    ``outs -> schedule`` for each target checked (a list of outputs is passed)."""
    outs = [a for a in args if not isinstance(a.op, PlaceholderOp)]
    data = _inputs(args, rng, ranges, inputs)
    want = ref(*data)
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    for target, sched in (("llvm", cpu), ("cuda", cuda)):
        if sched is None:
            continue
        with tvmlab.target.Target(target):
            f = tvmlab.build(sched(outs), args)
        results = [poison(np.empty([int(d) for d in o.shape], o.dtype)) for o in outs]
        if target == "llvm":
            nds = [tvmlab.nd.array(x) for x in data + results]
            f(*nds)
            got = [x.numpy() for x in nds[len(data):]]
        else:
            arrays = [x.copy() for x in data] + results
            tvmlab.testing.simulate(f, *arrays)
            got = arrays[len(data):]
        for o, g, w in zip(outs, got, want):
            r, a = tolerance(o.dtype)
            tvmlab.testing.assert_allclose(g, np.asarray(w).astype(g.dtype), rtol=rtol if rtol is not None else r,
                                           atol=atol if atol is not None else a)
    return data
