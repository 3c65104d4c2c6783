"""Softmax over the last axis of a 2-D tensor: the compute and a CPU schedule.

``softmax(x)[i, j] = exp(x[i, j] - max_k x[i, k]) / sum_k exp(x[i, k] - max_k x[i, k])``,
in four stages (row max, shifted exponentials, row sum, normalisation) as numpy
computes it.  The schedule handles one row per task: the exponentials are a
parallel pass that computes each row's max inside its row loop, then the
output pass computes each row's sum just before dividing by it (the row is
still in cache); the two reductions are split by ``rfactor`` into a vector of
partial results, which makes them vectorised (LLVM does not reorder a float
reduction by itself).
"""
from __future__ import annotations

from .. import te
from ..errors import ScheduleError
from .utils import const_or_none, vector_block


def softmax(x, name="softmax"):
    """Softmax of 2-D tensor ``x`` along its last axis."""
    if len(x.shape) != 2:
        raise ScheduleError(f"softmax needs a 2-D tensor, got shape {tuple(x.shape)}")
    m, n = x.shape
    k1 = te.reduce_axis((0, n), name="k1")
    mx = te.compute((m,), lambda i: te.max(x[i, k1], axis=k1), name=name + "_max")
    e = te.compute((m, n), lambda i, j: te.exp(x[i, j] - mx[i]), name=name + "_exp")
    k2 = te.reduce_axis((0, n), name="k2")
    sm = te.compute((m,), lambda i: te.sum(e[i, k2], axis=k2), name=name + "_sum")
    return te.compute((m, n), lambda i, j: e[i, j] / sm[i], name=name, tag="softmax")


def schedule_softmax(out, target="llvm"):
    """One row per parallel task; max, exp and sum computed inside the row loop, vectorised."""
    if str(target).split()[0] != "llvm":
        raise ScheduleError(f"schedule_softmax has a schedule for target 'llvm', got {target!r}")
    if getattr(out.op, "tag", "") != "softmax":
        raise ScheduleError(f"schedule_softmax needs the output of topi.softmax, got {out.op.name!r}")
    e, sm = out.op.input_tensors
    if e.op.name.endswith("_sum"):
        e, sm = sm, e
    mx = [t for t in e.op.input_tensors if t.op.name.endswith("_max")][0]
    s = te.create_schedule(out.op)
    n = const_or_none(out.shape[1])
    vec = vector_block(out.dtype, target)    # two registers: partial sums in two independent chains
    vec = vec if n is None or n >= vec else max(1, n)

    i, j = s[out].op.axis
    s[out].parallel(i)
    jo, ji = s[out].split(j, factor=vec)
    s[out].vectorize(ji)

    # exp (and the sum reading it) inside the row loop; the max inside exp's row loop
    s[sm].compute_at(s[out], i)
    ie, je = s[e].op.axis      # read by the sum and the output: computed at the root
    s[e].parallel(ie)
    jeo, jei = s[e].split(je, factor=vec)
    s[e].vectorize(jei)
    s[mx].compute_at(s[e], ie)
    for red in (mx, sm):
        (k,) = s[red].op.reduce_axis
        ko, ki = s[red].split(k, factor=vec)
        rf = s.rfactor(red, ki)
        s[rf].compute_at(s[red], s[red].op.axis[0])
        lanes = s[rf].op.axis[0]
        s[rf].reorder(*[a for a in s[rf].leaf_iter_vars if a is not lanes], lanes)
        s[rf].vectorize(lanes)
    return s
