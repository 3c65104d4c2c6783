"""CPU schedules for ``topi.nn.dense`` / ``matmul`` / ``batch_matmul``, each handling a fused group.

    out = topi.nn.relu(topi.nn.dense(X, W, b)); s = topi.x86.schedule_dense([out])

With W packed (more than ``SMALL_M`` rows of X), the loop nest is ``topi.schedule_matmul``'s: a
``rows x block`` tile accumulated over the whole reduction in registers, then passed through the
group's elementwise stages (bias, activation) as it is stored.  With few rows (batch-1 inference),
each output is a dot product of a row of W with a row of X, read in place: the reduction is split
into vector-wide partial sums (``rfactor``), and the output columns are spread over the cores.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..matmul import K_UNROLL, tile_rows
from ..utils import const_or_none
from .conv2d import _same_axes
from .injective import check_target, find_anchor, inline_around, lanes_of, parallel_vectorize

DOT_COLS = 16        # output columns of one parallel task in the dot-product form


def _dot(s, dense, out, target):
    """Few rows: vector partial sums over k, one column block per task."""
    lanes = lanes_of(dense.output(0).dtype, target)
    (k,) = s[dense].op.reduce_axis
    K = const_or_none(k.dom.extent)
    vec = 2 * lanes if K is None or K >= 2 * lanes else max(1, K)
    ko, ki = s[dense].split(k, factor=vec)
    rf = s.rfactor(dense.output(0), ki)
    i, j = s[out].op.axis
    jo, ji = s[out].split(j, factor=DOT_COLS)
    s[out].reorder(jo, i, ji)
    s[out].parallel(jo)
    if out.op is dense:
        s[rf].compute_at(s[dense], ji)
    else:
        s[dense].compute_at(s[out], ji)
        s[rf].compute_at(s[dense], s[dense].op.axis[-1])
    lanes_axis = s[rf].op.axis[0]
    s[rf].reorder(*[a for a in s[rf].leaf_iter_vars if a is not lanes_axis], lanes_axis)
    s[rf].vectorize(lanes_axis)


def _packed(s, dense, out, target):
    """Register-tiled: rows x block tiles of the output, W panels packed."""
    block = int(dense.attrs["block"])
    for wp in dense.input_tensors:
        if isinstance(wp.op, ComputeOp) and wp.op.name.endswith("_pack"):
            jp, kp, bp = s[wp].op.axis
            s[wp].vectorize(bp)
            s[wp].parallel(jp)
    rows = tile_rows(block, dense.output(0).dtype, target)
    if out.op is dense:
        acc = s.cache_write(dense.output(0), "global")
    else:
        acc = dense
    i, j = s[out].op.axis
    M = const_or_none(out.shape[0])
    row_block = 2 * rows if M is None else min(2 * rows, -(-M // rows) * rows)
    io, ii = s[out].split(i, factor=row_block)
    jo, ji = s[out].split(j, factor=block)
    iio, iii = s[out].split(ii, factor=rows)
    s[out].reorder(jo, io, iio, iii, ji)
    s[out].parallel(s[out].fuse(jo, io))
    s[out].unroll(iii)
    s[out].vectorize(ji)
    s[acc].compute_at(s[out], iio)
    ci, cj = s[acc].op.axis
    (ck,) = s[acc].op.reduce_axis
    ko, ki = s[acc].split(ck, factor=K_UNROLL)
    s[acc].reorder(ko, ki, ci, cj)
    s[acc].unroll(ki)
    s[acc].unroll(ci)
    s[acc].vectorize(cj)


def schedule_dense(outs, target="llvm"):
    """Schedule a fused group whose anchor is ``dense`` (tag ``dense``)."""
    check_target("schedule_dense", target)
    outs = as_outputs(outs, "schedule_dense")
    s = te.create_schedule([o.op for o in outs])
    dense = find_anchor(outs, ("dense", "dense_pack"))
    if dense is None:
        raise ScheduleError(f"schedule_dense: no dense (tag 'dense' or 'dense_pack') feeds {[o.op.name for o in outs]}")
    inline_around(s, dense)
    out = outs[0]
    dt_ = dense.output(0)
    fused = out.op is not dense and dense not in s.outputs and _same_axes(out, dt_)
    target_out = out if fused else dt_
    if int(dense.attrs.get("packed", 0)):
        _packed(s, dense, target_out, target)
    else:
        _dot(s, dense, target_out, target)
    for o in outs:
        if o is not target_out and o.op is not dense:
            parallel_vectorize(s, o, target)
    return s


def _simple_reduce(s, op, out, target):
    """Parallel over the outer output axes of ``out``; ``op`` (the reduction) computed per output row."""
    axes = s[out].op.axis
    outer = s[out].fuse(*axes[:-1]) if len(axes) > 2 else axes[0]
    s[out].parallel(outer)
    if out.op is not op:
        s[op].compute_at(s[out], axes[-1])


def schedule_matmul(outs, target="llvm"):
    """Schedule a fused group whose anchor is ``topi.nn.matmul``: parallel over rows."""
    check_target("schedule_matmul", target)
    outs = as_outputs(outs, "schedule_matmul")
    s = te.create_schedule([o.op for o in outs])
    mm = find_anchor(outs, ("matmul", "dense", "dense_pack"))
    if mm is None:
        raise ScheduleError(f"schedule_matmul: no matmul feeds {[o.op.name for o in outs]}")
    if mm.tag in ("dense", "dense_pack"):
        return schedule_dense(outs, target)
    inline_around(s, mm)
    out = outs[0]
    fused = out.op is not mm and mm not in s.outputs and _same_axes(out, mm.output(0))
    target_out = out if fused else mm.output(0)
    _simple_reduce(s, mm, target_out, target)
    for o in outs:
        if o is not target_out and o.op is not mm:
            parallel_vectorize(s, o, target)
    return s


def schedule_batch_matmul(outs, target="llvm"):
    """Schedule a fused group whose anchor is ``batch_matmul``: parallel over (batch, row)."""
    check_target("schedule_batch_matmul", target)
    outs = as_outputs(outs, "schedule_batch_matmul")
    s = te.create_schedule([o.op for o in outs])
    bm = find_anchor(outs, ("batch_matmul",))
    if bm is None:
        raise ScheduleError(f"schedule_batch_matmul: no batch_matmul feeds {[o.op.name for o in outs]}")
    inline_around(s, bm)
    out = outs[0]
    fused = out.op is not bm and bm not in s.outputs and _same_axes(out, bm.output(0))
    target_out = out if fused else bm.output(0)
    _simple_reduce(s, bm, target_out, target)
    for o in outs:
        if o is not target_out and o.op is not bm:
            parallel_vectorize(s, o, target)
    return s
