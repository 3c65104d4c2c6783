"""One kernel per group of rows: the shared core of the CUDA reduction, softmax and layer-norm schedules.

A *row group* is a fused group whose reductions all reduce the trailing axes of its output's rows (a row
sum, softmax's max and sum of exponentials, layer norm's two sums, ``x - mean(x, -1, keepdims=True)``).
Each row is handled by ``tx`` threads along ``threadIdx.x`` (a warp for short rows, several warps for long
ones), ``ty`` rows per block along ``threadIdx.y``: every reduction is ``rfactor``-ed into a strided part
per thread (consecutive threads read consecutive elements) and combined across the threads (warp
shuffles; ``lower_thread_allreduce``), then the row's outputs are written by the same threads, so the
whole group is one kernel.

Rows a multiple of 128 long (up to 4096; softmax over 1024, layer norm over 768) are cut differently:
each thread takes 4 consecutive elements (``n / 4`` threads a row, several rows a block where that leaves
a block under 256 threads), so each access is one float4, and a tensor every stage reads only at its own
element (softmax's input, its exponentials; layer norm's input under a GPU target) is loaded once into
the thread's registers and read from there by every reduction and the output: the row comes from
memory once.  Other rows: each reduction reads it again (from cache, mostly).
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir.expr import ProducerLoad
from ...ir.functor import post_order_visit, uses_var
from ...ir.structural import structural_equal
from ...ir.tensor import ComputeOp, PlaceholderOp
from ..utils import const_or_none

WARP = 32
SHORT_ROW = 512        # rows up to this many elements get a warp each, longer ones a block
# rows whose length is a multiple of 4 x 32 (up to 4096): each thread takes 4 consecutive elements (one
# float4 load or store), kept in registers across the row's reductions; BLOCK threads a block at least
CONTIGUOUS = True
LANES = 4
MAX_THREADS = 1024
BLOCK = 256


def row_threads(n):
    """(threads per row, rows per block) for rows of ``n`` elements (None: not known until run time)."""
    if n is not None and n <= SHORT_ROW:
        return WARP, 8
    if n is not None and n <= 4096:
        return 256, 1
    return 512, 1


def reductions(outs):
    """The stages with a reduction that ``outs`` read, producers first."""
    found, seen = [], set()

    def walk(op):
        if op in seen or isinstance(op, PlaceholderOp) or not isinstance(op, ComputeOp):
            return
        seen.add(op)
        for t in op.input_tensors:
            walk(t.op)
        if op.reduce_axis:
            found.append(op)
    for o in outs:
        walk(o.op)
    return found


def inline_rest(s, keep):
    """Inline every stage that is neither an output, a reduction nor in ``keep``."""
    outs = set(s.outputs)
    for st in list(s.stages):
        op = st.op
        if isinstance(op, ComputeOp) and op not in outs and op not in keep and not op.reduce_axis:
            s[op].compute_inline()


def reduces_innermost(op):
    """Whether reduction ``op`` runs along the last axis of what it reads (a row, not a column)."""
    rvars = {iv.var for iv in op.reduce_axis}
    found = []

    def visit(x):
        if isinstance(x, ProducerLoad) and x.indices and uses_var(x.indices[-1], lambda v: v in rvars):
            found.append(x)
    for b in op.body:
        post_order_visit(b, visit)
    return bool(found)


def _same(x, y):
    a, b = const_or_none(x), const_or_none(y)
    return a == b if a is not None or b is not None else structural_equal(x, y)


def _prefix(rshape, oshape, n):
    return all(_same(a, b) for a, b in zip(rshape[:n], oshape[:n]))


def _one(x):
    return const_or_none(x) == 1


def row_split(out, reds):
    """The number of leading axes of ``out`` that are rows for every reduction in ``reds`` (each reduction's
    shape is those axes, or those axes and ones for reduced axes kept), or None when they do not line up.
    Row counts may be symbolic."""
    oshape = tuple(out.shape)
    found = None
    for r in reds:
        rshape = tuple(r.output(0).shape)
        if len(rshape) < len(oshape) and _prefix(rshape, oshape, len(rshape)):
            rows = len(rshape)
        elif len(rshape) == len(oshape):
            rows = len(rshape)
            while rows > 0 and _one(rshape[rows - 1]) and not _one(oshape[rows - 1]):
                rows -= 1
            if not _prefix(rshape, oshape, rows) or not all(_one(x) for x in rshape[rows:]):
                return None
        else:
            return None
        if found is not None and found != rows:
            return None
        found = rows
        inner = 1
        for x in oshape[rows:]:
            x = const_or_none(x)
            inner = None if x is None or inner is None else inner * x
        if rows < len(oshape) and None not in (inner, reduce_length(r)) and inner != reduce_length(r):
            return None
    return found


def reduce_length(op):
    """The number of elements ``op`` reduces per output (None: symbolic)."""
    n = 1
    for iv in op.reduce_axis:
        e = const_or_none(iv.dom.extent)
        if e is None:
            return None
        n *= e
    return n


def contiguous_threads(n):
    """Threads per row when each thread takes ``LANES`` consecutive elements of a row of ``n`` (whole warps,
    at most 1024), else None."""
    if n is None or n % LANES:
        return None
    t = n // LANES
    return t if t % WARP == 0 and t <= MAX_THREADS else None


def _exact_row_loads(ops, rows):
    """The tensors every op of ``ops`` reads only at its own row and its own element of the row: the row
    indices its leading axes, the last index its last axis or its one reduce axis.  Such a tensor a thread
    can read once into registers for all of them (see ``schedule_rows``)."""
    exact, other = set(), set()
    for op in ops:
        row_vars = [iv.var for iv in op.axis[:rows]]
        last = [op.axis[-1].var] if len(op.axis) > rows else []
        if len(op.reduce_axis) == 1:
            last.append(op.reduce_axis[0].var)

        def visit(x, row_vars=row_vars, last=last):
            if not isinstance(x, ProducerLoad):
                return
            idx = x.indices
            ok = len(idx) == rows + 1 == len(row_vars) + 1 and \
                all(i is v for i, v in zip(idx[:rows], row_vars)) and any(idx[-1] is v for v in last)
            (exact if ok else other).add(x.producer)
        for b in op.body:
            post_order_visit(b, visit)
    return exact - other


def schedule_rows(outs, what, threads=None):
    """The row-group schedule of ``outs`` (one output; see the module docstring).  ``threads``: (threads per
    row, rows per block), else chosen from the row length.  ScheduleError when ``outs`` is no row group."""
    if len(outs) != 1:
        raise ScheduleError(f"topi.cuda.{what}: the one-kernel-per-row schedule takes one output, got {len(outs)}")
    out = outs[0]
    s = te.create_schedule(out.op)
    reds = reductions(outs)
    if not reds:
        raise ScheduleError(f"topi.cuda.{what}: {out.op.name!r} reads no reduction")
    rows = row_split(out, reds)
    if rows is None or (rows == 0 and out.shape):
        raise ScheduleError(f"topi.cuda.{what}: the reductions of {out.op.name!r} do not reduce the trailing "
                            f"axes of its rows")
    inline_rest(s, ())
    n = reduce_length(reds[0])
    lanes = 1
    own = out.op in reds                    # the output is itself the (last) reduction
    row_shaped = all(_one(x) for x in out.shape[rows:]) if own else rows == len(out.shape) - 1
    if threads is None and CONTIGUOUS and row_shaped and \
            all(len(r.reduce_axis) == 1 and reduce_length(r) == n for r in reds) and contiguous_threads(n):
        lanes, tx_n = LANES, contiguous_threads(n)
        ty_n = max(1, BLOCK // tx_n)
    else:
        tx_n, ty_n = threads or row_threads(n)
    tx = te.thread_axis((0, tx_n), "threadIdx.x")
    cached = _exact_row_loads([st.op for st in s.stages if isinstance(st.op, ComputeOp)], rows) \
        if lanes > 1 else set()
    if own:
        reds = reds[:-1]
        spread_reduction(s, out, tx, tx_n, lanes)
    axes = list(s[out].op.axis)
    row = axes[0] if rows == 1 else s[out].fuse(*axes[:rows])     # a scalar: one row (a singleton axis)
    count = 1
    for x in out.shape[:rows]:
        count = None if count is None or const_or_none(x) is None else count * const_or_none(x)
    while count is not None and ty_n > max(count, 1):       # few rows: no idle warps in the block
        ty_n //= 2
    if ty_n > 1:
        bx, ty = s[out].split(row, factor=ty_n)
        s[out].bind(ty, te.thread_axis((0, ty_n), "threadIdx.y"))
    else:                                   # a block per row: no threadIdx.y (the results stay registers)
        bx = ty = row
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    inner = axes[rows:]
    if inner and lanes > 1 and not own:     # each thread its LANES consecutive elements: one vector access
        jo, ji = s[out].split(inner[0], factor=lanes)
        s[out].bind(jo, tx)
        s[out].vectorize(ji)
    elif inner:
        j = s[out].fuse(*inner) if len(inner) > 1 else inner[0]
        jo, ji = s[out].split(j, factor=tx_n)
        s[out].reorder(*dict.fromkeys([bx, ty]), ji, jo)
        s[out].bind(ji, tx)
    else:
        s[out].set_store_predicate(tx.var.equal(0))
    for r in reds:
        attach_row_reduction(s, r.output(0), s[out], ty, tx, tx_n, lanes)
    # a row tensor every stage reads at its own element: each thread loads its elements once, into
    # registers, for every reduction and the output (softmax reads its row from memory once, not three times)
    for t in sorted(cached, key=lambda t: t.op.name):
        readers = [st.op for st in s.stages if isinstance(st.op, ComputeOp) and t in st.op.input_tensors]
        local = s.cache_read(t, "local", readers)
        s[local].compute_at(s[out], ty)
        s[local].vectorize(s[local].op.axis[-1])
    return s


def spread_reduction(s, red, tx, tx_n, lanes=1):
    """Spread reduction ``red`` over the ``tx_n`` threads of ``tx``: its (fused) reduce axis split, the
    inner part ``rfactor``-ed into one strided part per thread, the parts combined across ``tx``.  With
    ``lanes`` > 1 each thread's part is ``lanes`` consecutive elements instead (the row is ``tx_n x lanes``
    long)."""
    rax = list(s[red].op.reduce_axis)
    k = s[red].fuse(*rax) if len(rax) > 1 else rax[0]
    if lanes > 1:
        ki, _ = s[red].split(k, factor=lanes)
    else:
        _, ki = s[red].split(k, factor=tx_n)
    part = s.rfactor(red, ki)
    part = part[0] if isinstance(part, (list, tuple)) else part
    k = s[red].op.reduce_axis[0]
    s[red].bind(k, tx)
    s[part].compute_at(s[red], k)
    return part


def attach_row_reduction(s, red, at_stage, at_axis, tx, tx_n, lanes=1):
    """Compute reduction ``red`` at ``at_axis`` of ``at_stage``, its reduction spread over ``tx``."""
    s[red].compute_at(at_stage, at_axis)
    return spread_reduction(s, red, tx, tx_n, lanes)
