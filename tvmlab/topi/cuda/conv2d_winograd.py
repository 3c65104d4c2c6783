"""Winograd F(m x m, 3 x 3) convolution for CUDA, NCHW, unit stride: four kernels, as TVM's
``topi.cuda.conv2d_nchw_winograd``.

    Y = topi.cuda.conv2d_nchw_winograd(X, W, 1, 1, 1, "float32")          # X (N, C, H, W), W (O, C, 3, 3)
    s = topi.cuda.schedule_conv2d_nchw_winograd([Y])

The output is cut into P = N x ceil(OH / m) x ceil(OW / m) tiles of m x m pixels (m = 4, or 2 for a small
output: ``winograd_tile_size``).  With alpha = m + 2:

* weight transform ``U`` (alpha, alpha, C, O) = G g G^T of each channel pair: a kernel of its own, or a
  constant computed once (``conv2d_nchw_winograd_without_weight_transform`` takes ``U`` itself; relay
  folds it for a constant kernel);
* input transform ``V`` (alpha, alpha, C, P) = B^T d B: one thread per (channel, tile) loads its alpha x
  alpha input window into registers and transforms it there, rows then columns, with only the non-zero
  constants of B^T (each stage picks its expression by index; unrolling folds the choice away);
* batched product ``M`` (alpha, alpha, O, P) = U^T V over the input channels, one product per point: tiled
  as ``schedule_dense`` tiles a matmul (blocks of output channels x tiles, a register tile of 4 x 4 a
  thread, the channels stepped through double-buffered shared memory, where both operands already keep
  the channels outermost: a thread's 4 channels or tiles are one float4 read);
* inverse transform A^T M A, one thread per (channel, tile): the alpha x alpha values of ``M`` into
  registers, the m x m outputs written through the elementwise tail of a fused group (bias, activation,
  residual add).

Tiles and channels the blocks do not divide are guarded.  Inside an AutoTVM dispatch context with a config
for the workload, the product takes its tiles from the config (template ``conv2d_nchw_winograd.cuda``).
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir import dtype as dt
from ...ir import op as _op
from ...ir.tensor import ComputeOp
from ..generic import as_outputs
from ..nn.utils import _ints, get_pad_tuple_nd
from ..nn.winograd import _const_sum, _select_by, conv2d_winograd_weight_transform, winograd_matrices
from ..utils import OperatorError, check_tensor, const_or_none, shape_str
from .dense import _split3, kernel_scope
from .tiling import cooperative_fetch, fetch_lanes

TAG = "conv2d_nchw_winograd"
THREADS = 128                 # threads per block of the transforms (one (channel, tile) each)
# virtual threads on each axis of the product's tile where the extent divides their width: 2 gives a thread
# 8 x 8 outputs (4 multiply-adds per shared word read, against 2) at about twice the registers
PRODUCT_VTHREADS = 1


def winograd_tile_size(out_h, out_w):
    """The output tile m of F(m x m, 3 x 3): 4 (36 products for 16 outputs) unless the output is smaller
    than 8 on a side (a 7 x 7 map would waste a quarter of its 4 x 4 tiles), then 2."""
    return 4 if min(out_h, out_w) >= 8 else 2


def _cast(v, dtype):
    return v if v.dtype == dtype else _op.cast(dtype, v)


def _weight_transform(kernel, m, dtype):
    """U (alpha, alpha, C, O) = G g G^T of each (output, input) channel pair, non-zero constants only."""
    return conv2d_winograd_weight_transform(kernel, m, dtype, transpose=True)


def conv2d_nchw_winograd_weight_transform(kernel, tile_size):
    """The kernel (O, C, 3, 3) as ``conv2d_nchw_winograd_without_weight_transform`` reads it: (alpha, alpha,
    C, O), alpha = tile_size + 2."""
    op = "conv2d_nchw_winograd_weight_transform"
    check_tensor(op, kernel, "kernel", 4)
    if tuple(const_or_none(x) for x in kernel.shape[2:]) != (3, 3):
        raise OperatorError(f"{op}: a 3x3 kernel (O, C, 3, 3) expected, got {shape_str(kernel)}")
    if tile_size not in (2, 4):
        raise OperatorError(f"{op}: tile_size must be 2 or 4, got {tile_size!r}")
    return _weight_transform(kernel, tile_size, kernel.dtype)


def _combine(index, mat, loads, dtype):
    """Row ``index`` of ``mat`` times the vector ``loads``: a select over the rows, each a sum over the
    row's non-zero constants only; unrolling ``index`` folds the select away."""
    return _select_by(index, [_const_sum(list(zip(row, loads)), dtype) for row in mat])


def _winograd(op, data, U, padding, m, out_dtype):
    """The input transform, batched product and inverse transform reading the transformed kernel ``U``."""
    n, c, h, w = data.shape
    alpha = m + 2
    (pt, pl), (pb, pr) = get_pad_tuple_nd(padding, [3, 3], op)
    if any(const_or_none(x) is None for x in (h, w)):
        raise OperatorError(f"{op}: the data's height and width must be constant, got {shape_str(data)}")
    oh, ow = h + pt + pb - 2, w + pl + pr - 2
    if oh < 1 or ow < 1:
        raise OperatorError(f"{op}: data {shape_str(data)} with padding {padding} leaves no output")
    o = U.shape[3]
    nh, nw = -(-oh // m), -(-ow // m)
    tiles = n * nh * nw
    at, bt, _ = winograd_matrices(m, 3)
    zero = _op.const(0, out_dtype)

    def window(ci, p, a, b):
        t = p % (nh * nw)
        y, x = (t // nw) * m + a - pt, (t % nw) * m + b - pl
        inside = _op.all(y >= 0, y < h, x >= 0, x < w)
        v = data[p // (nh * nw), ci, _op.max(_op.min(y, h - 1), 0), _op.max(_op.min(x, w - 1), 0)]
        return _op.if_then_else(inside, _cast(v, out_dtype), zero)
    d = te.compute((c, tiles, alpha, alpha), window, name="winograd_input_tile")
    # B^T d B: rows, then columns
    # (each stage reads each element of its producer through one load object, shared by the branches)
    V1 = te.compute((c, tiles, alpha, alpha), lambda ci, p, i, b: _combine(
        i, bt, [d[ci, p, a, b] for a in range(alpha)], out_dtype), name="winograd_input_rows")
    V = te.compute((alpha, alpha, c, tiles), lambda e, u, ci, p: _combine(
        u, bt, [V1[ci, p, e, b] for b in range(alpha)], out_dtype), name="winograd_data_pack")
    rc = te.reduce_axis((0, c), name="rc")
    M = te.compute((alpha, alpha, o, tiles), lambda e, u, co, p: te.sum(
        _cast(U[e, u, rc, co], out_dtype) * V[e, u, rc, p], axis=rc), name="winograd_bgemm")
    # A^T M A: rows, then columns
    Y1 = te.compute((o, tiles, m, alpha), lambda co, p, i, b: _combine(
        i, at, [M[a, b, co, p] for a in range(alpha)], out_dtype), name="winograd_inverse_rows")
    Y = te.compute((o, tiles, m, m), lambda co, p, i, j: _combine(
        j, at, [Y1[co, p, i, b] for b in range(alpha)], out_dtype), name="winograd_inverse")
    return te.compute((n, o, oh, ow), lambda b, co, y, x: Y[co, b * (nh * nw) + (y // m) * nw + x // m, y % m, x % m],
                      name="conv2d_nchw_winograd", tag=TAG,
                      attrs={"tile_size": m, "padding": (pt, pl, pb, pr), "kernel_size": 3})


def _check(op, data, kernel, strides, dilation, out_dtype):
    check_tensor(op, data, "data", 4)
    check_tensor(op, kernel, "kernel", 4)
    if _ints(op, "strides", strides, 2) != [1, 1]:
        raise OperatorError(f"{op}: Winograd needs unit strides, got {strides!r}")
    if _ints(op, "dilation", dilation, 2) != [1, 1]:
        raise OperatorError(f"{op}: this Winograd takes no dilation, got {dilation!r} (use conv2d_nchw)")
    if data.dtype != kernel.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(data)} but kernel is {shape_str(kernel)}; give out_dtype")
    return dt.canonical(out_dtype or data.dtype)


def _output_size(op, data, padding):
    (pt, pl), (pb, pr) = get_pad_tuple_nd(padding, [3, 3], op)
    h, w = (const_or_none(x) for x in data.shape[2:])
    if h is None or w is None:
        raise OperatorError(f"{op}: the data's height and width must be constant, got {shape_str(data)}")
    return h + pt + pb - 2, w + pl + pr - 2


def conv2d_nchw_winograd(data, kernel, strides, padding, dilation, out_dtype=None, tile_size=None):
    """Winograd F(m x m, 3 x 3) convolution: data (N, C, H, W), kernel (O, C, 3, 3) -> (N, O, OH, OW); the
    kernel transformed by a kernel of its own.  ``tile_size`` m defaults to ``winograd_tile_size``."""
    op = "conv2d_nchw_winograd"
    out_dtype = _check(op, data, kernel, strides, dilation, out_dtype)
    if tuple(const_or_none(x) for x in kernel.shape[2:]) != (3, 3) or const_or_none(kernel.shape[1]) is None \
            or const_or_none(kernel.shape[1]) != const_or_none(data.shape[1]):
        raise OperatorError(f"{op}: kernel {shape_str(kernel)} is not (O, C, 3, 3) for data {shape_str(data)}")
    m = tile_size or winograd_tile_size(*_output_size(op, data, padding))
    return _winograd(op, data, _weight_transform(kernel, m, out_dtype), padding, m, out_dtype)


def conv2d_nchw_winograd_without_weight_transform(data, kernel, strides, padding, dilation, out_dtype=None,
                                                  tile_size=None):
    """As ``conv2d_nchw_winograd`` with the kernel already transformed: (alpha, alpha, C, O), alpha = m + 2
    (``conv2d_nchw_winograd_weight_transform``); m follows from alpha."""
    op = "conv2d_nchw_winograd_without_weight_transform"
    out_dtype = _check(op, data, kernel, strides, dilation, out_dtype)
    a1, a2, c = (const_or_none(x) for x in kernel.shape[:3])
    if a1 is None or a1 != a2 or a1 not in (4, 6) or c != const_or_none(data.shape[1]) \
            or (tile_size is not None and tile_size != a1 - 2):
        raise OperatorError(f"{op}: kernel {shape_str(kernel)} is not a transformed (alpha, alpha, C, O) kernel "
                            f"for data {shape_str(data)} (alpha = tile_size + 2: 4 or 6)")
    return _winograd(op, data, kernel, padding, a1 - 2, out_dtype)


# ------------------------------------------------------------------ schedules


def find_winograd(outs):
    """The output stage of a CUDA Winograd convolution among ``outs``' stages (tag ``conv2d_nchw_winograd``
    made by this module), or None."""
    seen = set()
    stack = list(outs)
    while stack:
        t = stack.pop()
        op = t.op
        if not isinstance(op, ComputeOp) or op in seen:
            continue
        seen.add(op)
        if op.tag == TAG and "kernel_size" in op.attrs:
            return t
        stack.extend(op.input_tensors)
    return None


def _stages(conv):
    """(Y, Y1, M, U, V, V1, d) of the convolution whose output stage is ``conv``."""
    (Y,) = conv.op.input_tensors
    (Y1,) = Y.op.input_tensors
    (M,) = Y1.op.input_tensors
    U, V = M.op.input_tensors
    (V1,) = V.op.input_tensors
    (d,) = V1.op.input_tensors
    return Y, Y1, M, U, V, V1, d


def _product_tile(n, limit):
    """(vthreads, threads, per thread) for one axis of the product of extent ``n``: 64 wide (16 threads of
    4 consecutive outputs, as ``schedule_dense``) down to 4 wide for a small extent.  Both operands are
    stored channels outermost, so a thread's 4 outputs along an axis take one float4 read per channel."""
    for t in (16, 14, 12, 8):      # a width dividing n: no guarded reads of the last tile (those stay scalar)
        if t <= limit and n % (4 * t) == 0:
            return (PRODUCT_VTHREADS if n % (4 * t * PRODUCT_VTHREADS) == 0 else 1, t, 4)
    for split in ((1, 16, 4), (1, 8, 4), (1, 8, 2), (1, 4, 2), (1, 4, 1)):
        if split[0] * split[1] * split[2] <= max(n, 4) and split[1] <= limit:
            return split
    return (1, 4, 1)


def product_bytes(choices, elem=4):
    """Shared memory of one step of the product: the U and V slices of the block (twice: double buffered)."""
    rows = choices["y"][0] * choices["y"][1] * choices["y"][2]
    cols = choices["x"][0] * choices["x"][1] * choices["x"][2]
    return 2 * choices["rc"] * (rows + cols) * elem


def hand_written(M):
    """The hand-written choices for the batched product ``M`` (alpha, alpha, O, P): {"b", "y", "x":
    (vthreads, threads, per thread) of the points, output channels and tiles; "rc": input channels per
    shared-memory step; "unroll": (auto_unroll_max_step, unroll_explicit)}."""
    o, p = (const_or_none(x) for x in M.shape[2:])
    c = const_or_none(M.op.reduce_axis[0].dom.extent) or 1 << 30
    choices = {"b": (1, 1, 1), "y": _product_tile(o or 64, 16), "x": _product_tile(p or 64, 16),
               "unroll": (0, 1)}
    choices["rc"] = min(16 if c >= 64 else 8, c)
    return choices


# tvmlab.autotvm sets this: ``config_hook(conv, target)`` returns the choices of the current dispatch
# context's config for the convolution's workload (the keys of ``hand_written``), or None
config_hook = None


def _schedule_product(s, M, choices):
    U, V = M.op.input_tensors
    ML = s.cache_write(M, "local")
    UU, VV = s.cache_read(U, "shared", [ML]), s.cache_read(V, "shared", [ML])
    UL, VL = s.cache_read(UU, "local", [ML]), s.cache_read(VV, "local", [ML])
    e, u, o, p = s[M].op.axis
    b = s[M].fuse(e, u)
    scope, b = kernel_scope(s, M, b, choices["unroll"])
    bb, vb, tb, ib = _split3(s, M, b, choices["b"])
    by, vy, ty, iy = _split3(s, M, o, choices["y"])
    bx, vx, tx, ix = _split3(s, M, p, choices["x"])
    order = [scope, bb, by, bx, vb, vy, vx, tb, ty, tx, ib, iy, ix]
    s[M].reorder(*[a for a in order if a is not None])
    for ax, tag in ((bb, "blockIdx.z"), (by, "blockIdx.y"), (bx, "blockIdx.x"), (tb, "threadIdx.z"),
                    (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[M].bind(ax, te.thread_axis(tag))
    for ax, name in ((vb, "vb"), (vy, "vy"), (vx, "vx")):
        s[M].bind(ax, te.thread_axis("vthread", name=name))
    for ax in (ib, iy, ix):
        s[M].unroll(ax)
    s[ML].compute_at(s[M], tx)
    c = const_or_none(s[ML].op.reduce_axis[0].dom.extent) or 1 << 30
    step = min(choices["rc"], c)
    rco, rci = s[ML].split(s[ML].op.reduce_axis[0], factor=step)
    ml_axes = list(s[ML].op.axis)
    s[ML].reorder(rco, rci, *ml_axes)
    threads = (("threadIdx.z", choices["b"][1]), ("threadIdx.y", choices["y"][1]), ("threadIdx.x", choices["x"][1]))
    tiles = {UU: choices["y"], VV: choices["x"]}
    for X in (UU, VV):
        s[X].compute_at(s[ML], rco)
        if -(-c // step) > 1:
            s[X].double_buffer()
        lanes = fetch_lanes(X)
        v, t, i = tiles[X]
        cooperative_fetch(s, X, threads, lanes if (v * t * i) % lanes == 0 else 1)
    for X in (UL, VL):
        s[X].compute_at(s[ML], rci)
        for ax in s[X].op.axis:
            s[X].unroll(ax)
    s[ML].unroll(rci)
    for ax in ml_axes:
        s[ML].unroll(ax)


def _registers(s, stage, at, axis):
    """``stage`` computed by the thread of ``s[at]``'s ``axis``, in registers (its constant indices
    unrolled)."""
    s[stage].set_scope("local")
    s[stage].compute_at(s[at], axis)
    for ax in s[stage].op.axis:
        s[stage].unroll(ax)


def _bind_threads(s, stage, fused, num_threads=THREADS):
    bx, tx = s[stage].split(fused, factor=num_threads)
    s[stage].bind(bx, te.thread_axis("blockIdx.x"))
    s[stage].bind(tx, te.thread_axis("threadIdx.x"))
    return tx


def _winograd_outputs(outs, target, what):
    if str(target).split()[0] != "cuda":
        raise ScheduleError(f"topi.cuda.{what} is a CUDA schedule (target 'cuda'), got {target!r}")
    outs = as_outputs(outs, f"topi.cuda.{what}")
    conv = find_winograd(outs)
    if conv is None:
        raise ScheduleError(f"topi.cuda.{what}: no Winograd convolution (topi.cuda.conv2d_nchw_winograd) among "
                            f"the outputs {[o.op.name for o in outs]}")
    if len(outs) != 1 or len(outs[0].shape) != 4 or \
            tuple(const_or_none(x) for x in outs[0].shape) != tuple(const_or_none(x) for x in conv.shape):
        raise ScheduleError(f"topi.cuda.{what}: one output of the convolution's shape expected, got "
                            f"{[o.op.name for o in outs]}")
    return outs[0], conv


def schedule_winograd(outs, target="cuda", what="schedule_conv2d_nchw_winograd", choices=None):
    """The four-kernel schedule (see the module docstring) of a group whose anchor is a Winograd
    convolution of this module; ``choices`` (as ``hand_written`` gives them) tile the product, else the
    AutoTVM context's config for the workload, else the hand-written ones."""
    out, conv = _winograd_outputs(outs, target, what)
    Y, Y1, M, U, V, V1, d = _stages(conv)
    keep = {Y.op, Y1.op, M.op, V.op, V1.op, d.op, U.op, out.op}
    s = te.create_schedule([out.op])
    for st in list(s.stages):
        op = st.op
        if isinstance(op, ComputeOp) and op not in keep:
            if op.reduce_axis:
                raise ScheduleError(f"topi.cuda.{what}: stage {op.name!r} reduces; only elementwise operators may "
                                    f"follow the Winograd convolution in one group")
            s[op].compute_inline()
    if choices is None and config_hook is not None:
        choices = config_hook(conv, target)
    if choices is None:
        choices = hand_written(M)

    if isinstance(U.op, ComputeOp):           # the weight transform: a thread per channel pair
        e, u, ci, co = s[U].op.axis
        s[U].reorder(ci, co, e, u)
        _bind_threads(s, U, s[U].fuse(ci, co))
        s[U].unroll(e)
        s[U].unroll(u)

    # input transform: a thread per (channel, tile), the window and its rows in registers
    e, u, ci, p = s[V].op.axis
    s[V].reorder(ci, p, e, u)
    tx = _bind_threads(s, V, s[V].fuse(ci, p))
    s[V].unroll(e)
    s[V].unroll(u)
    _registers(s, V1, V, tx)
    _registers(s, d, V, tx)

    _schedule_product(s, M, choices)

    # inverse transform and the tail: a thread per (channel, tile)
    m = conv.op.attrs["tile_size"]
    n, co, y, x = s[out].op.axis
    yo, yi = s[out].split(y, factor=m)
    xo, xi = s[out].split(x, factor=m)
    s[out].reorder(n, co, yo, xo, yi, xi)
    tx = _bind_threads(s, out, s[out].fuse(n, co, yo, xo))
    s[out].unroll(yi)
    s[out].unroll(xi)
    ML = s.cache_read(M, "local", [Y1])
    for stage in (Y, Y1):
        _registers(s, stage, out, tx)
    s[ML].compute_at(s[out], tx)
    for ax in s[ML].op.axis:
        s[ML].unroll(ax)
    return s


def schedule_conv2d_nchw_winograd(outs, target="cuda"):
    """CUDA ``schedule_conv2d_nchw_winograd``: weight transform, input transform, tiled batched product and
    inverse transform with the fused tail (see the module docstring).  The generic compute
    (``topi.nn.conv2d_winograd_nchw``) gets a kernel per stage, a thread per element."""
    if find_winograd(as_outputs(outs, "topi.cuda.schedule_conv2d_nchw_winograd")) is None:
        from . import schedule_each_stage
        return schedule_each_stage(outs, target, "schedule_conv2d_nchw_winograd")
    return schedule_winograd(outs, target, "schedule_conv2d_nchw_winograd")


def schedule_conv2d_nchw_winograd_without_weight_transform(outs, target="cuda"):
    """CUDA ``schedule_conv2d_nchw_winograd_without_weight_transform``: as ``schedule_conv2d_nchw_winograd``,
    the transformed kernel read as it is."""
    return schedule_winograd(outs, target, "schedule_conv2d_nchw_winograd_without_weight_transform")


def workload_shape(conv):
    """(N, C, H, W, O, padding (top, left, bottom, right), tile size) of a Winograd output stage ``conv``."""
    Y, Y1, M, U, V, V1, d = _stages(conv)
    data = d.op.input_tensors[0]
    n, c, h, w = (const_or_none(x) for x in data.shape)
    o = const_or_none(conv.shape[1])
    return n, c, h, w, o, tuple(conv.op.attrs["padding"]), conv.op.attrs["tile_size"]


__all__ = ["conv2d_nchw_winograd", "conv2d_nchw_winograd_without_weight_transform",
           "conv2d_nchw_winograd_weight_transform", "schedule_conv2d_nchw_winograd",
           "schedule_conv2d_nchw_winograd_without_weight_transform", "winograd_tile_size"]
