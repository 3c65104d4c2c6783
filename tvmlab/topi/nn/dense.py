"""Dense layers and matrix products, as TVM's ``topi.nn``.

    Y = topi.nn.dense(X, W)              # X (M, K), W (N, K): Y[i, j] = sum_k X[i, k] * W[j, k]
    Z = topi.nn.batch_matmul(A, B)       # A (b, M, K), B (b, N, K) (transpose_b=True, TVM's default)

``dense`` reads W through a packed copy ``W_pack[jo, k, ji] = W[jo * block + ji, k]`` (zero past N)
when X has more than ``SMALL_M`` rows: each panel of ``block`` output columns is contiguous, so the
schedule's inner loop loads it with full vectors (as ``matmul(..., blocked=True)`` packs B).  With few
rows (batch-1 inference) the product is bound by reading W once, which is done in place.
"""
from __future__ import annotations

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from .. import tag
from ..utils import pack_blocks, vector_block
from ..utils import (OperatorError, check_options, check_tensor, const_or_none, gpu_target_current, shape_str,
                     with_cpu_target)

SMALL_M = 16        # at most this many rows: the right operand is read in place, not packed


def _out_dtype(op, a, b, out_dtype):
    if a.dtype != b.dtype and out_dtype is None:
        raise OperatorError(f"{op}: operands are {shape_str(a)} and {shape_str(b)}; give out_dtype or cast one")
    return dt.canonical(out_dtype or a.dtype)


def _cast(dtype, v):
    return v if v.dtype == dtype else _op.cast(dtype, v)


def _check_k(op, ka, kb, a, b):
    ca, cb = const_or_none(ka), const_or_none(kb)
    if ca is not None and cb is not None and ca != cb:
        raise OperatorError(f"{op}: reduction sizes differ: {shape_str(a)} has {ca}, {shape_str(b)} has {cb}")


def _with_bias(op, out, bias, n):
    """``out + bias[j]`` (a broadcast stage), or ``out`` when there is no bias."""
    if bias is None:
        return out
    check_tensor(op, bias, "bias", 1)
    _check_k(f"{op} (bias)", n, bias.shape[0], out, bias)
    return te.compute(out.shape, lambda *i: out(*i) + _cast(out.dtype, bias[i[-1]]), name="T_add",
                      tag=tag.BROADCAST)


@with_cpu_target
def dense(data, weight, bias=None, out_dtype=None, target=None, packed=None):
    """``data @ weight.T (+ bias)``: data (M, K), weight (N, K), bias (N,). Tag ``dense``.

    ``packed`` (default: with more than ``SMALL_M`` rows, or rows unknown) packs the weight into panels
    one vector block wide for register tiles; unpacked, each output is a dot product read in place."""
    check_tensor("dense", data, "data", 2)
    check_tensor("dense", weight, "weight", 2)
    out_dtype = _out_dtype("dense", data, weight, out_dtype)
    M, K = data.shape
    N, K2 = weight.shape
    _check_k("dense", K, K2, data, weight)
    k = te.reduce_axis((0, K), name="k")
    m = const_or_none(M)
    if packed is None:
        packed = (m is None or m > SMALL_M) and not gpu_target_current()
    if packed:
        block = vector_block(out_dtype, target)
        wp = pack_blocks(((N + block - 1) // block, K, block), lambda jo, kk, ji: weight[jo * block + ji, kk], N,
                         weight.dtype, "T_dense_pack")
        out = te.compute((M, N), lambda i, j: te.sum(_cast(out_dtype, data[i, k]) *
                                                     _cast(out_dtype, wp[j // block, k, j % block]), axis=k),
                         name="T_dense", tag="dense", attrs={"block": block, "packed": 1})
    else:
        out = te.compute((M, N), lambda i, j: te.sum(_cast(out_dtype, data[i, k]) * _cast(out_dtype, weight[j, k]),
                                                     axis=k), name="T_dense", tag="dense", attrs={"packed": 0})
    return _with_bias("dense", out, bias, N)


def dense_pack(data, packed_weight, bias=None, out_dtype=None, units=None):
    """``dense`` with the weight already packed: packed_weight (N / block, K, block) is
    ``layout_transform(weight, "NK", f"NK{block}n")``, done once for a constant weight. Tag ``dense_pack``.

    ``data`` may have leading axes (..., M, K) (a transformer's (batch, tokens, hidden)): the output is
    (..., M, N), each leading index a product of its own, so an element-wise tail of that shape fuses.
    ``units`` is N when ``block`` does not divide it (the packed weight's last block is zero-padded)."""
    check_tensor("dense_pack", data, "data")
    check_tensor("dense_pack", packed_weight, "packed_weight", 3)
    if len(data.shape) < 2:
        raise OperatorError(f"dense_pack: data must have 2 or more axes (..., M, K), got {shape_str(data)}")
    out_dtype = _out_dtype("dense_pack", data, packed_weight, out_dtype)
    K = data.shape[-1]
    nb, K2, block = packed_weight.shape
    _check_k("dense_pack", K, K2, data, packed_weight)
    block = const_or_none(block)
    if block is None:
        raise OperatorError(f"dense_pack: the packed weight's block must be constant, got {shape_str(packed_weight)}")
    N = units if units is not None else nb * block
    k = te.reduce_axis((0, K), name="k")
    out = te.compute((*data.shape[:-1], N),
                     lambda *i: te.sum(_cast(out_dtype, data[(*i[:-1], k)]) *
                                       _cast(out_dtype, packed_weight[i[-1] // block, k, i[-1] % block]), axis=k),
                     name="T_dense", tag="dense_pack", attrs={"block": block, "packed": 1})
    return _with_bias("dense_pack", out, bias, N)


@with_cpu_target
def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False, transpose_b=False, *, blocked=False,
           pack_b=None, block=None, rows=0, name="T_matmul", target=None):
    """``op(a) @ op(b) (+ bias)`` where op transposes when asked. Tag ``matmul``; ``transpose_b`` alone is
    ``dense``.

    ``blocked=True`` (``topi.matmul``) lays ``a @ b`` out for a BLAS kernel and records the layout in the
    op's attrs (``block``, ``rows``, ``packed_b``), which ``topi.x86.schedule_matmul`` follows: b is packed
    into column panels, ``Bp[jo, k, ji] = b[k, jo * block + ji]`` (zero past the last column), so a register
    tile reads it with full-width vector loads, one cache line after the other.  ``block`` defaults to two
    vector registers of the target (``vector_block``).  ``pack_b=None`` packs b unless a has at most
    ``SMALL_M`` rows (a constant: a pass over all of b then costs more than reading it in place).
    ``rows > 0`` also packs a into panels of ``rows`` rows (``Ap[io, k, ii] = a[io * rows + ii, k]``, a
    parallel pass of its own); reading a in place costs no memory and is as fast.  With ``blocked``,
    transposed operands are read in place (a plain product)."""
    check_tensor("matmul", tensor_a, "tensor_a", 2)
    check_tensor("matmul", tensor_b, "tensor_b", 2)
    if pack_b not in (None, True, False):
        raise OperatorError(f"matmul: pack_b must be True, False or None (choose), got {pack_b!r}")
    check_options("matmul", block=block, rows=rows or None)
    if not blocked and (pack_b is not None or block is not None or rows):
        raise OperatorError("matmul: pack_b, block and rows lay out the blocked product: give blocked=True")
    if rows and pack_b is False:
        raise OperatorError("matmul: rows > 0 packs A, which needs pack_b (B packed too)")
    if not transpose_a and transpose_b and not blocked:
        out = dense(tensor_a, tensor_b, bias, out_dtype)
        return out
    out_dtype = _out_dtype("matmul", tensor_a, tensor_b, out_dtype)
    K, M = tensor_a.shape if transpose_a else tensor_a.shape[::-1]
    N, K2 = tensor_b.shape if transpose_b else tensor_b.shape[::-1]
    _check_k("matmul", K, K2, tensor_a, tensor_b)
    k = te.reduce_axis((0, K), name="k")

    def a(i):
        return tensor_a[k, i] if transpose_a else tensor_a[i, k]

    def b(j):
        return tensor_b[j, k] if transpose_b else tensor_b[k, j]
    attrs = None
    if blocked and not (transpose_a or transpose_b):
        a, b, attrs = _panels(tensor_a, tensor_b, k, out_dtype, pack_b, block, rows, name, target)
    out = te.compute((M, N), lambda i, j: te.sum(_cast(out_dtype, a(i)) * _cast(out_dtype, b(j)), axis=k),
                     name=name, tag="matmul", attrs=attrs)
    return _with_bias("matmul", out, bias, N)


def _panels(A, B, k, out_dtype, pack_b, block, rows, name, target):
    """``matmul(A, B, blocked=True)``'s readers of A and B (through their packed panels) and its attrs."""
    (M, K), N = A.shape, B.shape[1]
    block = vector_block(out_dtype, target) if block is None else block
    if pack_b is None:
        pack_b = bool(rows) or const_or_none(M) is None or const_or_none(M) > SMALL_M
    a, b = (lambda i: A[i, k]), (lambda j: B[k, j])
    if pack_b:
        Bp = pack_blocks(((N + block - 1) // block, K, block), lambda jo, k, ji: B[k, jo * block + ji], N, B.dtype,
                         name + "_packB")
        b = (lambda j: Bp[j // block, k, j % block])
    if rows:
        Ap = pack_blocks(((M + rows - 1) // rows, K, rows), lambda io, k, ii: A[io * rows + ii, k], M, A.dtype,
                         name + "_packA")
        a = (lambda i: Ap[i // rows, k, i % rows])
    return a, b, {"block": block, "rows": rows, "packed_b": int(pack_b)}


@with_cpu_target
def batch_matmul(tensor_a, tensor_b, oshape=None, out_dtype=None, transpose_a=False, transpose_b=True, target=None):
    """Batched product of 3-D tensors; a batch of 1 broadcasts. Default (TVM's): a (b, M, K), b (b, N, K),
    read through panels of ``block`` columns (``T_batch_matmul_pack``, as ``dense``); ``transpose_b=False``:
    b (b, K, N), read in place (its rows are already contiguous columns of the output). Under a GPU target b
    is read in place too (a GPU schedule tiles the operands in shared memory instead).

    Operands of more axes (one rank) have several leading batch axes, each equal or 1 (broadcast)."""
    check_tensor("batch_matmul", tensor_a, "tensor_a")
    check_tensor("batch_matmul", tensor_b, "tensor_b")
    if len(tensor_a.shape) < 3 or len(tensor_a.shape) != len(tensor_b.shape):
        raise OperatorError(f"batch_matmul: needs 3-D tensors (or N-D of one rank), got {shape_str(tensor_a)} "
                            f"and {shape_str(tensor_b)}")
    out_dtype = _out_dtype("batch_matmul", tensor_a, tensor_b, out_dtype)
    lead = len(tensor_a.shape) - 2
    batch = []
    for x, y in zip(tensor_a.shape[:lead], tensor_b.shape[:lead]):
        cx, cy = const_or_none(x), const_or_none(y)
        if cx is not None and cy is not None and cx != cy and 1 not in (cx, cy):
            raise OperatorError(f"batch_matmul: batch sizes {cx} and {cy} differ (one may be 1)")
        batch.append(y if cx == 1 else x)
    M, K = (tensor_a.shape[-1], tensor_a.shape[-2]) if transpose_a else (tensor_a.shape[-2], tensor_a.shape[-1])
    N, K2 = (tensor_b.shape[-2], tensor_b.shape[-1]) if transpose_b else (tensor_b.shape[-1], tensor_b.shape[-2])
    _check_k("batch_matmul", K, K2, tensor_a, tensor_b)
    k = te.reduce_axis((0, K), name="k")

    def index(t, b):        # the batch index into operand t (0 where it broadcasts)
        return tuple(0 if const_or_none(d) == 1 else x for d, x in zip(t.shape[:lead], b))

    def a(b, i):
        b = index(tensor_a, b)
        return tensor_a[(*b, k, i)] if transpose_a else tensor_a[(*b, i, k)]

    packed = None

    block = vector_block(out_dtype, target)
    if transpose_b and not gpu_target_current():
        # rows of b become contiguous panels of ``block`` columns: Bp[b, jo, k, ji] = b[b, jo * block + ji, k]
        nb = (N + block - 1) // block
        exact = const_or_none(N) is not None and const_or_none(N) % block == 0
        zero = _op.const(0, tensor_b.dtype)

        def pack(*idx):
            *b, jo, kk, ji = idx
            j = jo * block + ji
            v = tensor_b[(*b, _op.min(j, N - 1) if not exact else j, kk)]
            return v if exact else _op.if_then_else(j < N, v, zero)
        packed = te.compute((*tensor_b.shape[:lead], nb, K, block), pack, name="T_batch_matmul_pack")

    def bmat(b, j):
        b = index(tensor_b, b)
        if transpose_b:
            return packed[(*b, j // block, k, j % block)] if packed is not None else tensor_b[(*b, j, k)]
        return tensor_b[(*b, k, j)]
    return te.compute((*batch, M, N), lambda *i: te.sum(_cast(out_dtype, a(i[:lead], i[-2])) *
                                                        _cast(out_dtype, bmat(i[:lead], i[-1])), axis=k),
                      name="T_batch_matmul", tag="batch_matmul", attrs={"block": block})
