"""Matrix products on tensor cores (CUDA wmma), TVM's ``dense_tensorcore`` and
``batch_matmul_tensorcore``: float16 inputs, float32 or float16 output.

    C = topi.cuda.dense_tensorcore(X, W)            # X (batch, in_dim), W (out_dim, in_dim): X @ W.T
    s = topi.cuda.schedule_dense_tensorcore([C])
    f = tvm.build(s, [X, W, C], "cuda")            # sm_70 or newer; tvm.testing.simulate(f, ...) anywhere

The schedule stages tiles of both operands in shared memory, loads them into register fragments
(``wmma.matrix_a`` / ``wmma.matrix_b``) and accumulates in ``wmma.accumulator`` fragments: each warp
computes a ``warp_row_tiles x warp_col_tiles`` grid of fragments, a block a grid of warps.  Every
dimension must be a multiple of the fragment shape (16x16x16, 32x8x16 or 8x32x16, chosen from the
shape); anything else raises ScheduleError naming the shape.
"""
from __future__ import annotations

from ... import te
from ...errors import ScheduleError
from ...ir import op as _op
from ...ir.function import Buffer
from ...ir.stmt import Evaluate
from ...ir.tensor import Tensor
from ...schedule.tensorize import decl_tensor_intrin
from ..generic import as_outputs

FRAGMENTS = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
WARP = 32
LARGE_BLOCKS = 256      # blocks the 128 x 128 tiles must make (about two per multiprocessor of an H100)


def _buffer(shape, dtype, scope, name, factor, strided=True):
    return Buffer(name, shape, dtype, strides=[te.var(f"{name}_s"), 1] if strided else None, scope=scope,
                  elem_offset=te.var(f"{name}_off"), offset_factor=factor)


def _index(buf, rows, cols):
    """Which fragment of a fragment buffer a (strided) tile is: the buffer holds a grid of rows x cols
    tiles no wider than ``rows`` tiles, so the tile's offset says both its tile row and column."""
    off = buf.elem_offset
    return off // (rows * cols) + off % (rows * cols) // cols


def intrin_load(shape, scope, layout="row_major"):
    """Tensor intrinsic copying a shared-memory tile into a fragment of ``scope`` (matrix_a: m x k,
    matrix_b: k x n); ``layout`` "col_major" reads the tile transposed (an (n, k) tile for matrix_b)."""
    m, n, k = shape
    rows, cols = (m, k) if scope == "wmma.matrix_a" else (k, n)
    src = (rows, cols) if layout == "row_major" else (cols, rows)
    A = te.placeholder(src, name="A", dtype="float16")
    if layout == "row_major":
        C = te.compute((rows, cols), lambda i, j: A[i, j], name="C")
    else:
        C = te.compute((rows, cols), lambda i, j: A[j, i], name="C")
    BA = _buffer(A.shape, "float16", "shared", "BA", 1, strided=True)
    BC = _buffer(C.shape, "float16", scope, "BC", rows * cols)

    def body(ins, outs):
        return Evaluate(_op.call_intrin("handle", "tir.tvm_load_matrix_sync", outs[0].data, m, n, k,
                                            _index(outs[0], rows, cols), ins[0].access_ptr("r"),
                                            ins[0].strides[0], layout))
    return decl_tensor_intrin(C.op, body, name=f"wmma_load_{scope.split('.')[1]}", binds={A: BA, C: BC})


def intrin_gemm(shape, out_dtype, b_transposed=False):
    """Tensor intrinsic: fragment C (m x n, ``out_dtype``) += A (m x k) * B (k x n; with ``b_transposed``
    B is indexed [n, k]), its reset the fill with zero."""
    m, n, k = shape
    A = te.placeholder((m, k), name="A", dtype="float16")
    B = te.placeholder((n, k) if b_transposed else (k, n), name="B", dtype="float16")
    kk = te.reduce_axis((0, k), name="k")
    if b_transposed:
        C = te.compute((m, n), lambda i, j: te.sum(A[i, kk].astype(out_dtype) * B[j, kk].astype(out_dtype),
                                                   axis=kk), name="C")
    else:
        C = te.compute((m, n), lambda i, j: te.sum(A[i, kk].astype(out_dtype) * B[kk, j].astype(out_dtype),
                                                   axis=kk), name="C")
    BA = _buffer(A.shape, "float16", "wmma.matrix_a", "BA", m * k)
    BB = _buffer(B.shape, "float16", "wmma.matrix_b", "BB", k * n)
    BC = _buffer(C.shape, out_dtype, "wmma.accumulator", "BC", m * n)
    bshape = (n, k) if b_transposed else (k, n)

    def body(ins, outs):
        ba, bb = ins
        bc = outs[0]
        fill = Evaluate(_op.call_intrin("handle", "tir.tvm_fill_fragment", bc.data, m, n, k,
                                            _index(bc, m, n), _op.const(0.0, out_dtype)))
        mma = Evaluate(_op.call_intrin("handle", "tir.tvm_mma_sync", bc.data, _index(bc, m, n),
                                           ba.data, _index(ba, m, k), bb.data, _index(bb, *bshape),
                                           bc.data, _index(bc, m, n)))
        return mma, fill, mma
    return decl_tensor_intrin(C.op, body, name="wmma_gemm", binds={A: BA, B: BB, C: BC})


def intrin_store(shape, out_dtype, scope="global"):
    """Tensor intrinsic writing an accumulator fragment to a (strided) tile in ``scope`` memory."""
    m, n, k = shape
    A = te.placeholder((m, n), name="A", dtype=out_dtype)
    C = te.compute((m, n), lambda i, j: A[i, j], name="C")
    BA = _buffer(A.shape, out_dtype, "wmma.accumulator", "BA", m * n)
    BC = _buffer(C.shape, out_dtype, scope, "BC", 1, strided=True)

    def body(ins, outs):
        return Evaluate(_op.call_intrin("handle", "tir.tvm_store_matrix_sync", ins[0].data, m, n, k,
                                            _index(ins[0], m, n), outs[0].access_ptr("w"),
                                            outs[0].strides[0], "row_major"))
    return decl_tensor_intrin(C.op, body, name=f"wmma_store_{scope}", binds={A: BA, C: BC})


# ---------------------------------------------------------------- computes
def _dims(t, what, rank):
    if not isinstance(t, Tensor) or len(t.shape) != rank:
        raise ScheduleError(f"topi.cuda.{what}: expected a {rank}-d tensor, got "
                            f"{getattr(t, 'shape', type(t).__name__)}")
    try:
        return [int(d) for d in t.shape]
    except TypeError:
        raise ScheduleError(f"topi.cuda.{what}: tensor cores need constant shapes, got {tuple(t.shape)}") from None


def fragment_shape(m, n, k, what="tensorcore"):
    """The (m, n, k) fragment for an m x k by k x n product, or ScheduleError naming the shape."""
    for fm, fn, fk in FRAGMENTS:
        if m % fm == 0 and n % fn == 0 and k % fk == 0:
            return fm, fn, fk
    raise ScheduleError(f"topi.cuda.{what}: the product (M, N, K) = ({m}, {n}, {k}) does not fit tensor cores: "
                        "M, N, K must be multiples of one fragment shape (16, 16, 16), (32, 8, 16) or (8, 32, 16)")


def _check_inputs(what, a, b, out_dtype):
    if a.dtype != "float16" or b.dtype != "float16":
        raise ScheduleError(f"topi.cuda.{what}: tensor cores take float16 inputs, got {a.dtype} and {b.dtype}")
    if out_dtype not in ("float32", "float16"):
        raise ScheduleError(f"topi.cuda.{what}: out_dtype must be 'float32' or 'float16', got {out_dtype!r}")


def dense_tensorcore(data, weight, bias=None, out_dtype=None):
    """``data @ weight.T`` (+ ``bias``, (out_dim,)) on tensor cores: data (batch, in_dim), weight (out_dim,
    in_dim).  The bias is an elementwise stage after the product (computed in the product's kernel by the
    schedule)."""
    if isinstance(bias, str) and out_dtype is None:     # dense_tensorcore(x, w, "float16")
        bias, out_dtype = None, bias
    out_dtype = out_dtype or "float32"
    (batch, ind), (outd, ind2) = _dims(data, "dense_tensorcore", 2), _dims(weight, "dense_tensorcore", 2)
    _check_inputs("dense_tensorcore", data, weight, out_dtype)
    if ind != ind2:
        raise ScheduleError(f"topi.cuda.dense_tensorcore: data {tuple(data.shape)} and weight {tuple(weight.shape)} "
                            "differ in in_dim")
    fragment_shape(batch, outd, ind, "dense_tensorcore")
    k = te.reduce_axis((0, ind), name="k")
    out = te.compute((batch, outd), lambda i, j: te.sum(data[i, k].astype(out_dtype) *
                                                         weight[j, k].astype(out_dtype), axis=k),
                     name="T_dense", tag="dense_tensorcore")
    if bias is None:
        return out
    if not isinstance(bias, Tensor) or len(bias.shape) != 1 or _dims(bias, "dense_tensorcore", 1) != [outd]:
        raise ScheduleError(f"topi.cuda.dense_tensorcore: bias must be a tensor of shape ({outd},), got "
                            f"{getattr(bias, 'shape', type(bias).__name__)}")
    return te.compute((batch, outd), lambda i, j: out[i, j] + bias[j].astype(out_dtype), name="T_bias_add",
                      tag="broadcast")


def batch_matmul_tensorcore(x, y, out_shape=None, out_dtype=None):
    """``x @ y.T`` per batch on tensor cores: x (batch, M, K), y (batch, N, K) -> (batch, M, N)."""
    out_dtype = out_dtype or "float32"
    (bx, m, kx), (by, n, ky) = _dims(x, "batch_matmul_tensorcore", 3), _dims(y, "batch_matmul_tensorcore", 3)
    _check_inputs("batch_matmul_tensorcore", x, y, out_dtype)
    if bx != by or kx != ky:
        raise ScheduleError(f"topi.cuda.batch_matmul_tensorcore: x {tuple(x.shape)} and y {tuple(y.shape)} must "
                            "agree in batch and K (y is (batch, N, K))")
    if out_shape is not None and tuple(int(d) for d in out_shape) != (bx, m, n):
        raise ScheduleError(f"topi.cuda.batch_matmul_tensorcore: out_shape {tuple(out_shape)} is not {(bx, m, n)}")
    fragment_shape(m, n, kx, "batch_matmul_tensorcore")
    k = te.reduce_axis((0, kx), name="k")
    return te.compute((bx, m, n), lambda b, i, j: te.sum(x[b, i, k].astype(out_dtype) *
                                                          y[b, j, k].astype(out_dtype), axis=k),
                      name="T_batch_matmul", tag="batch_matmul_tensorcore")


# ---------------------------------------------------------------- schedule
def _pick(total, options):
    for o in options:
        if total % o == 0:
            return o
    return 1


# float16 elements a shared tile row is padded by: rows of a multiple of 128 bytes would put the 8 rows
# each phase of a fragment load reads in the same banks (8-way conflicts); 16 bytes more spreads them
PAD = 8
PAD_BYTES = 16  # the same for the tile of results stored to shared memory (wmma's ldm: whole 16 bytes)
VEC = 8         # float16 elements each thread copies at once (16 bytes)


def _stage_shared(s, t, by, bz, warps, rows, row):
    """Spread the copy of a shared tile (``rows`` x ``row`` elements) over the block's threads (lanes, then
    warps), 16 bytes per thread where every thread gets whole vectors, into rows padded against bank
    conflicts."""
    axes = s[t].op.axis
    s[t].storage_align(axes[-2], row, PAD)
    fused = s[t].fuse(*axes)
    if row % VEC == 0 and (rows * row // VEC) % (WARP * warps[0] * warps[1]) == 0:
        fused, vec = s[t].split(fused, factor=VEC)
        s[t].vectorize(vec)
    fo, tx = s[t].split(fused, factor=WARP)
    fo, tz = s[t].split(fo, factor=warps[1])
    _, ty = s[t].split(fo, factor=warps[0])
    s[t].bind(tx, te.thread_axis("threadIdx.x"))
    s[t].bind(ty, by)
    s[t].bind(tz, bz)


def _schedule_product(s, C, batched, tail=None):
    """Tile product stage ``C`` ([b,] i, j; reduce k; inputs A [b,] i, k and B [b,] j, k) on tensor cores.

    With ``tail`` (an elementwise output of C's shape: bias, activation) the fragments are stored to a
    block tile in shared memory instead, and the block's threads pass it through the tail to global
    memory, coalesced: one kernel."""
    prod = C.op
    if len(prod.input_tensors) != 2:
        raise ScheduleError(f"topi.cuda.schedule_tensorcore: {prod.name!r} reads one tensor as both operands; "
                            "tensor cores stage each operand on its own (pass a second placeholder with the data)")
    A, B = prod.input_tensors[0], prod.input_tensors[1]
    out_dtype = C.dtype
    shape = [int(d) for d in C.shape]
    M, N = shape[-2], shape[-1]
    K = int(prod.reduce_axis[0].dom.extent)
    fm, fn, fk = fragment_shape(M, N, K, "schedule_tensorcore")
    # fragments per warp, rows / cols: 4 x 4 (a 128 x 128 block tile) where that still makes LARGE_BLOCKS
    # blocks, else 2 x 2 (64 x 64).  Each block reads its two operand slices through L2 once per step: the
    # larger tile halves those bytes per FLOP, which at 64 x 64 tiles bound 4096^3 (160 TFLOP/s on an H100
    # is 5 TB/s from L2); a smaller product needs the smaller tiles to fill the GPU's multiprocessors
    big = (M // (2 * 4 * fm)) * (N // (2 * 4 * fn)) >= LARGE_BLOCKS
    wrt = _pick(M // fm, (4, 2, 1) if big else (2, 1))
    wct = _pick(N // fn, (4, 2, 1) if big else (2, 1))
    brw = _pick(M // (fm * wrt), (2, 1))           # warps per block, rows / cols
    bcw = _pick(N // (fn * wct), (2, 1))
    chunk = _pick(K // fk, (4, 2, 1))              # fragments of K per shared tile

    AS = s.cache_read(A, "shared", [C])
    BS = s.cache_read(B, "shared", [C])
    AF = s.cache_read(AS, "wmma.matrix_a", [C])
    BF = s.cache_read(BS, "wmma.matrix_b", [C])
    CF = s.cache_write(C, "wmma.accumulator")
    ty, tz = te.thread_axis("threadIdx.y"), te.thread_axis("threadIdx.z")

    tile_m, tile_n = brw * wrt * fm, bcw * wct * fn
    if tail is None:
        axes = list(s[C].op.axis)
        i, j = axes[-2], axes[-1]
        bi, i = s[C].split(i, factor=tile_m)
        bj, j = s[C].split(j, factor=tile_n)
        lead = [*axes[:-2], bi, bj]
        _bind_blocks(s, C, axes[0] if batched else None, bi, bj)
    else:
        block = _tail_tile(s, tail, batched, tile_m, tile_n, (ty, tz), (brw, bcw))
        s[C].set_scope("shared")
        s[C].storage_align(s[C].op.axis[-2], tile_n, PAD_BYTES // (2 if out_dtype == "float16" else 4))
        s[C].compute_at(s[tail], block)
        axes = list(s[C].op.axis)
        i, j = axes[-2], axes[-1]
        lead = axes[:-2]
    wi, i = s[C].split(i, factor=wrt * fm)
    wj, j = s[C].split(j, factor=wct * fn)
    ti, fi = s[C].split(i, factor=fm)
    tj, fj = s[C].split(j, factor=fn)
    s[C].reorder(*lead, wi, wj, ti, tj, fi, fj)
    s[C].bind(wi, ty)
    s[C].bind(wj, tz)

    s[CF].compute_at(s[C], wj)
    caxes = list(s[CF].op.axis)
    ci, cj = caxes[-2], caxes[-1]
    (kaxis,) = s[CF].op.reduce_axis
    ko, kf = s[CF].split(kaxis, factor=fk)
    ko, ki = s[CF].split(ko, factor=chunk)
    cio, cif = s[CF].split(ci, factor=fm)
    cjo, cjf = s[CF].split(cj, factor=fn)
    s[CF].reorder(*caxes[:-2], ko, ki, cio, cjo, cif, cjf, kf)

    s[AF].compute_at(s[CF], ki)
    s[BF].compute_at(s[CF], ki)
    s[AS].compute_at(s[CF], ko)
    s[BS].compute_at(s[CF], ko)
    _stage_shared(s, AS, ty, tz, (brw, bcw), brw * wrt * fm, chunk * fk)
    _stage_shared(s, BS, ty, tz, (brw, bcw), bcw * wct * fn, chunk * fk)

    ai, ak = s[AF].op.axis[-2], s[AF].op.axis[-1]
    aio, aif = s[AF].split(ai, factor=fm)
    ako, akf = s[AF].split(ak, factor=fk)
    s[AF].reorder(aio, ako, aif, akf)
    s[AF].tensorize(aif, intrin_load((fm, fn, fk), "wmma.matrix_a"))
    bj_, bk = s[BF].op.axis[-2], s[BF].op.axis[-1]
    bjo, bjf = s[BF].split(bj_, factor=fn)
    bko, bkf = s[BF].split(bk, factor=fk)
    s[BF].reorder(bjo, bko, bjf, bkf)
    s[BF].tensorize(bjf, _load_b_col((fm, fn, fk)))
    s[CF].tensorize(cif, intrin_gemm((fm, fn, fk), out_dtype, b_transposed=True))
    s[C].tensorize(fi, intrin_store((fm, fn, fk), out_dtype, "global" if tail is None else "shared"))
    return s


def _bind_blocks(s, t, batch, bi, bj):
    if batch is not None:
        s[t].bind(batch, te.thread_axis("blockIdx.z"))
    s[t].bind(bi, te.thread_axis("blockIdx.y"))
    s[t].bind(bj, te.thread_axis("blockIdx.x"))


def _tail_tile(s, out, batched, tile_m, tile_n, threads, warps):
    """Block tiles of the elementwise output ``out``, each written by the block's threads in order (lanes
    on consecutive elements); returns the block axis."""
    axes = list(s[out].op.axis)
    i, j = axes[-2], axes[-1]
    bi, i = s[out].split(i, factor=tile_m)
    bj, j = s[out].split(j, factor=tile_n)
    s[out].reorder(*axes[:-2], bi, bj, i, j)
    _bind_blocks(s, out, axes[0] if batched else None, bi, bj)
    x = s[out].fuse(i, j)
    x, tx = s[out].split(x, factor=WARP)
    x, tz = s[out].split(x, factor=warps[1])
    _, ty = s[out].split(x, factor=warps[0])
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    s[out].bind(ty, threads[0])
    s[out].bind(tz, threads[1])
    return bj


def _load_b_col(shape):
    """matrix_b from an (n, k) tile of the row-major (out_dim, in_dim) weight: a col_major load."""
    m, n, k = shape
    A = te.placeholder((n, k), name="A", dtype="float16")
    C = te.compute((n, k), lambda i, j: A[i, j], name="C")
    BA = _buffer(A.shape, "float16", "shared", "BA", 1, strided=True)
    BC = _buffer(C.shape, "float16", "wmma.matrix_b", "BC", n * k)

    def body(ins, outs):
        return Evaluate(_op.call_intrin("handle", "tir.tvm_load_matrix_sync", outs[0].data, m, n, k,
                                            _index(outs[0], n, k), ins[0].access_ptr("r"),
                                            ins[0].strides[0], "col_major"))
    return decl_tensor_intrin(C.op, body, name="wmma_load_matrix_b_col", binds={A: BA, C: BC})


def _schedule(outs, what, tag, batched):
    from . import _bind_flat
    from ...ir.tensor import ComputeOp
    outs = as_outputs(outs, f"topi.cuda.{what}")
    s = te.create_schedule([o.op for o in outs])
    products = [st.op for st in s.stages if getattr(st.op, "tag", "") == tag]
    if not products:
        raise ScheduleError(f"topi.cuda.{what}: no {tag} stage among the outputs {[o.op.name for o in outs]}")
    out_ops = [o.op for o in outs]
    for st in list(s.stages):
        # a fused elementwise tail (bias, activation): its stages inlined into the outputs
        op = st.op
        if isinstance(op, ComputeOp) and op not in out_ops and op not in products and not op.reduce_axis:
            s[op].compute_inline()
    for o in outs:
        if o.op not in products and (not isinstance(o.op, ComputeOp) or o.op.reduce_axis):
            raise ScheduleError(f"topi.cuda.{what}: output {o.op.name!r} after the {tag} product must be "
                                "elementwise")
    # one product and one output of its shape after it: the tail runs in the product's kernel, from the
    # block's tile in shared memory; otherwise the fragments go to global memory and each other output
    # is a kernel of its own
    tails = [o for o in outs if o.op not in products]
    fused = len(products) == 1 and len(outs) == 1 and len(tails) == 1 and \
        [int(d) for d in tails[0].shape] == [int(d) for d in products[0].output(0).shape]
    for op in products:
        _schedule_product(s, op.output(0), batched, tails[0] if fused else None)
    if not fused:
        for o in tails:
            _bind_flat(s, o, 256)
    return s


def tensorcore_fits(a, b, batched, target=None):
    """Whether the product of ``a`` and ``b`` (dense: (M, K) x (N, K); batched: (B, M, K) x (B, N, K)) can
    run on tensor cores for ``target``: float16, constant shapes that fit a fragment, sm_70 or newer."""
    from ...codegen.cuda_build import _arch
    from ...codegen.registry import Target
    t = target or Target.current(allow_none=True)
    rank = 3 if batched else 2
    if t is None or t.kind != "cuda" or a.dtype != "float16" or b.dtype != "float16" or \
            len(a.shape) != rank or len(b.shape) != rank:
        return False
    try:
        ash, bsh = [int(d) for d in a.shape], [int(d) for d in b.shape]
        if ash[-1] != bsh[-1] or (batched and ash[0] != bsh[0]) or _arch(t)[0] < 70:
            return False
        fragment_shape(ash[-2], bsh[-2], ash[-1])
    except (TypeError, ScheduleError):
        return False
    return True


def schedule_dense_tensorcore(outs):
    """Schedule of ``dense_tensorcore``: the product on tensor cores; a fused elementwise tail after it (bias,
    activation: the output) runs in the same kernel, from each block's tile of results in shared memory."""
    return _schedule(outs, "schedule_dense_tensorcore", "dense_tensorcore", False)


def schedule_batch_matmul_tensorcore(outs):
    """Schedule of ``batch_matmul_tensorcore``."""
    return _schedule(outs, "schedule_batch_matmul_tensorcore", "batch_matmul_tensorcore", True)


__all__ = ["dense_tensorcore", "schedule_dense_tensorcore", "batch_matmul_tensorcore",
           "schedule_batch_matmul_tensorcore", "fragment_shape", "intrin_load", "intrin_gemm", "intrin_store"]
