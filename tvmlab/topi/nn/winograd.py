"""Winograd convolution F(m x m, r x r) over height and width, as TVM's ``conv2d_winograd_nhwc`` (and the
NCHW and 3-D forms its CUDA schedules use): ``Y = A^T [(G g G^T) . (B^T d B)] A`` per output tile.

    Y = topi.nn.conv2d_winograd_nhwc(X, W, 1, 1, 1, "float32")          # X (N, H, W, C), W (KH, KW, C, O)

Stages: the kernel transform ``U`` (alpha x alpha per channel pair), the input transform ``V`` of each
tile, a batched product over input channels ``M``, the output transform, then the output in the data's
layout.  The transform matrices come from the Cook-Toom construction on the points 0, +-1, +-2, +-1/2,
... and infinity (``winograd_matrices``); they are constant tensors.  Unit stride only (the algorithm's
premise); a dilated kernel is spread first.  Depth, in 3-D, is summed directly.
"""
from __future__ import annotations

import functools
import itertools
from fractions import Fraction

import numpy as np

from ... import te
from ...ir import dtype as dt
from ...ir import op as _op
from ..utils import OperatorError, check_tensor, const_or_none, shape_str
from .pad import pad as _pad
from .utils import _ints, get_pad_tuple_nd

_POINTS = [Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2), Fraction(1, 2), Fraction(-1, 2),
           Fraction(3), Fraction(-3), Fraction(1, 3), Fraction(-1, 3)]


@functools.lru_cache(maxsize=None)
def winograd_matrices(m, r):
    """(A^T (m x alpha), B^T (alpha x alpha), G (alpha x r)) of F(m, r), alpha = m + r - 1, as float64 arrays:
    for a signal d of alpha values and a filter g of r, ``A^T ((G g) * (B^T d))`` is their correlation."""
    alpha = m + r - 1
    if alpha - 1 > len(_POINTS):
        raise OperatorError(f"winograd: F({m}, {r}) needs {alpha - 1} points; at most {len(_POINTS)} are known")
    pts = _POINTS[:alpha - 1]
    at = [[p ** j for p in pts] + [Fraction(int(j == m - 1))] for j in range(m)]
    g = []
    for i, p in enumerate(pts):
        norm = Fraction(1)
        for q in pts[:i] + pts[i + 1:]:
            norm *= p - q
        g.append([p ** k / norm for k in range(r)])
    g.append([Fraction(int(k == r - 1)) for k in range(r)])
    # B^T solves  sum_i AT[j, i] G[i, k] BT[i, l] = [l == j + k]  for every j, k, l
    rows, rhs = [], []
    for j, k in itertools.product(range(m), range(r)):
        row = np.zeros((alpha, alpha * alpha))
        for i in range(alpha):
            for lo in range(alpha):
                row[lo, i * alpha + lo] = float(at[j][i] * g[i][k])
        rows.append(row)
        rhs.append(np.eye(alpha)[j + k])
    sol, *_ = np.linalg.lstsq(np.concatenate(rows), np.concatenate(rhs), rcond=None)
    bt = sol.reshape(alpha, alpha)
    at_, g_ = np.array(at, dtype=np.float64), np.array(g, dtype=np.float64)
    d, w = np.random.default_rng(0).standard_normal(alpha), np.random.default_rng(1).standard_normal(r)
    want = np.array([d[j:j + r] @ w for j in range(m)])
    if not np.allclose(at_ @ ((g_ @ w) * (bt @ d)), want, rtol=1e-9, atol=1e-9):
        raise OperatorError(f"winograd: the F({m}, {r}) transform could not be built exactly")
    return at_, np.round(bt, 12), g_


def const_matrix(mat, name, dtype):
    """A constant 2-D tensor holding ``mat`` (its body selects the value by index)."""
    rows, cols = mat.shape

    def f(i, j):
        out = _op.const(0.0, dtype)
        for a in range(rows):
            for b in range(cols):
                if mat[a, b] != 0:
                    out = _op.select(_op.logical_and(i == a, j == b), _op.const(float(mat[a, b]), dtype), out)
        return out
    return te.compute((rows, cols), f, name=name, tag="const_matrix")


def _tile_size(r, out_h, out_w):
    return 4 if r == 3 and min(out_h, out_w) >= 4 else 2


def _winograd(src, ker, shape, out_dtype, layout, depth=None, tile_size=None, name="conv2d_winograd"):
    """The stages of a Winograd convolution; ``src(n, c, [z,] y, x)`` reads the padded input (zero past
    it), ``ker(o, c, [kz,] ky, kx)`` the kernel.  ``shape`` = (N, C, O, Hp, Wp, r); ``depth`` = (Dp, kd,
    stride, dilation) in 3-D.  The output is in ``layout`` ("NCHW", "NHWC" or "NCDHW")."""
    n, c, o, hp, wp, r = shape
    oh, ow = hp - r + 1, wp - r + 1
    m = tile_size or _tile_size(r, oh, ow)
    alpha = m + r - 1
    at, bt, g = winograd_matrices(m, r)
    A = const_matrix(at.T, "A", out_dtype)                # (alpha, m)
    B = const_matrix(bt.T, "B", out_dtype)                # (alpha, alpha): B[ra, eps] = B^T[eps, ra]
    G = const_matrix(g, "G", out_dtype)                   # (alpha, r)
    nh, nw = -(-oh // m), -(-ow // m)
    zero = _op.const(0, out_dtype)
    cast = (lambda v: v) if out_dtype is None else (lambda v: v if v.dtype == out_dtype else _op.cast(out_dtype, v))
    ry, rx = te.reduce_axis((0, r), name="ry"), te.reduce_axis((0, r), name="rx")
    if depth is None:
        U = te.compute((alpha, alpha, o, c), lambda e, u, co, ci: te.sum(
            G[e, ry] * cast(ker(co, ci, ry, rx)) * G[u, rx], axis=[ry, rx]), name=name + "_U")
    else:
        dp, kd, sd, dd = depth
        U = te.compute((alpha, alpha, o, c, kd), lambda e, u, co, ci, z: te.sum(
            G[e, ry] * cast(ker(co, ci, z, ry, rx)) * G[u, rx], axis=[ry, rx]), name=name + "_U")
    ra, rb = te.reduce_axis((0, alpha), name="ra"), te.reduce_axis((0, alpha), name="rb")

    def tile(ci, lead, th, tw, a, b):
        y, x = th * m + a, tw * m + b
        return _op.if_then_else(_op.all(y < hp, x < wp),
                                cast(src(*lead[:1], ci, *lead[1:], _op.min(y, hp - 1), _op.min(x, wp - 1))), zero)
    lead_shape = (n,) if depth is None else (n, dp)
    V = te.compute((alpha, alpha, c) + lead_shape + (nh, nw), lambda e, u, ci, *rest: te.sum(
        tile(ci, rest[:-2], rest[-2], rest[-1], ra, rb) * B[ra, e] * B[rb, u], axis=[ra, rb]), name=name + "_V")
    rc = te.reduce_axis((0, c), name="rc")
    if depth is None:
        Mt = te.compute((alpha, alpha, o, n, nh, nw), lambda e, u, co, b, th, tw: te.sum(
            U[e, u, co, rc] * V[e, u, rc, b, th, tw], axis=rc), name=name + "_M")
    else:
        od = (dp - (kd - 1) * dd - 1) // sd + 1
        rz = te.reduce_axis((0, kd), name="rz")
        Mt = te.compute((alpha, alpha, o, n, od, nh, nw), lambda e, u, co, b, z, th, tw: te.sum(
            U[e, u, co, rc, rz] * V[e, u, rc, b, z * sd + rz * dd, th, tw], axis=[rc, rz]), name=name + "_M")
    ra2, rb2 = te.reduce_axis((0, alpha), name="ra"), te.reduce_axis((0, alpha), name="rb")
    Y = te.compute((o,) + tuple(Mt.shape[3:]) + (m, m), lambda co, *rest: te.sum(
        Mt(ra2, rb2, co, *rest[:-2]) * A[ra2, rest[-2]] * A[rb2, rest[-1]], axis=[ra2, rb2]), name=name + "_Y")
    attrs = {"tile_size": m}
    if layout == "NCHW":
        return te.compute((n, o, oh, ow), lambda b, co, y, x: Y[co, b, y // m, x // m, y % m, x % m],
                          name=name, tag="conv2d_nchw_winograd", attrs=attrs)
    if layout == "NHWC":
        return te.compute((n, oh, ow, o), lambda b, y, x, co: Y[co, b, y // m, x // m, y % m, x % m],
                          name=name, tag="conv2d_nhwc_winograd", attrs=attrs)
    return te.compute((n, o, Mt.shape[4], oh, ow), lambda b, co, z, y, x: Y[co, b, z, y // m, x // m, y % m, x % m],
                      name=name, tag="conv3d_ncdhw_winograd", attrs=attrs)


def _prepare(op, data, kernel, strides, padding, dilation, out_dtype, spatial_at, kernel_at, channel_at, nsp):
    """Check the arguments; the padded data, the (dilated) kernel and their sizes."""
    check_tensor(op, data, "data", nsp + 2)
    check_tensor(op, kernel, "kernel", nsp + 2)
    ss = _ints(op, "strides", strides, nsp)
    ds = _ints(op, "dilation", dilation, nsp)
    if ss[-2:] != [1, 1]:
        raise OperatorError(f"{op}: Winograd needs unit strides over height and width, got {tuple(ss)}")
    ks = [const_or_none(kernel.shape[a]) for a in kernel_at]
    if None in ks or ks[-1] != ks[-2]:
        raise OperatorError(f"{op}: the kernel's window must be constant and square, got {shape_str(kernel)}")
    eff = [(k - 1) * d + 1 for k, d in zip(ks, ds)]
    before, after = get_pad_tuple_nd(padding, eff, op)
    pb, pa = [0] * (nsp + 2), [0] * (nsp + 2)
    for k, a in enumerate(spatial_at):
        pb[a], pa[a] = before[k], after[k]
    src = _pad(data, pb, pa, 0.0, name=op + "_pad") if any(before) or any(after) else data
    if data.dtype != kernel.dtype and out_dtype is None:
        raise OperatorError(f"{op}: data is {shape_str(data)} but kernel is {shape_str(kernel)}; give out_dtype")
    return src, ks, ds, ss, dt.canonical(out_dtype or data.dtype)


def _dilated(ker, ks, ds, kernel_at):
    """A kernel accessor reading the kernel spread by the dilations (zeros between taps)."""
    def read(*idx):
        idx = list(idx)
        conds = []
        for a, d in zip(kernel_at, ds):
            if d > 1:
                conds.append(_op.floormod(idx[a], d) == 0)
                idx[a] = _op.floordiv(idx[a], d)
        v = ker(*idx)
        return _op.if_then_else(_op.all(*conds), v, _op.const(0, v.dtype)) if conds else v
    return read


def conv2d_winograd_nchw(data, kernel, strides, padding, dilation, out_dtype, pre_computed=False, tile_size=None):
    """Winograd convolution: data (N, C, H, W), kernel (O, C, KH, KW) -> (N, O, OH, OW)."""
    op = "conv2d_winograd_nchw"
    if pre_computed:
        raise OperatorError(f"{op}: a pre-transformed kernel is not supported; pass the plain (O, C, KH, KW) one")
    src, ks, ds, _, out_dtype = _prepare(op, data, kernel, strides, padding, dilation, out_dtype, (2, 3), (2, 3),
                                         1, 2)
    ker = _dilated(lambda co, ci, y, x: kernel[co, ci, y, x], ks, ds, (2, 3))
    r = (ks[0] - 1) * ds[0] + 1
    n, c, hp, wp = src.shape
    return _winograd(lambda b, ci, y, x: src[b, ci, y, x], ker, (n, c, kernel.shape[0], hp, wp, r), out_dtype,
                     "NCHW", tile_size=tile_size, name=op)


def conv2d_winograd_nhwc(data, weight, strides, padding, dilation, out_dtype, pre_computed=False,
                         auto_scheduler_rewritten_layout="", meta_schedule_original_shape=None, tile_size=None):
    """Winograd convolution: data (N, H, W, C), weight (KH, KW, C, O) -> (N, OH, OW, O)."""
    op = "conv2d_winograd_nhwc"
    if pre_computed:
        raise OperatorError(f"{op}: a pre-transformed kernel is not supported; pass the plain (KH, KW, C, O) one")
    src, ks, ds, _, out_dtype = _prepare(op, data, weight, strides, padding, dilation, out_dtype, (1, 2), (0, 1),
                                         3, 2)
    spread = _dilated(lambda y, x, ci, co: weight[y, x, ci, co], ks, ds, (0, 1))
    r = (ks[0] - 1) * ds[0] + 1
    n, hp, wp, c = src.shape
    return _winograd(lambda b, ci, y, x: src[b, y, x, ci], lambda co, ci, y, x: spread(y, x, ci, co),
                     (n, c, weight.shape[3], hp, wp, r), out_dtype, "NHWC", tile_size=tile_size, name=op)


def conv3d_winograd_ncdhw(data, kernel, strides, padding, dilation, groups=1, out_dtype=None, tile_size=None):
    """Winograd over height and width, depth summed directly: data (N, C, D, H, W), kernel (O, C, KD, KH, KW)."""
    op = "conv3d_winograd_ncdhw"
    if groups != 1:
        raise OperatorError(f"{op}: groups must be 1, got {groups!r}")
    src, ks, ds, ss, out_dtype = _prepare(op, data, kernel, strides, padding, dilation, out_dtype, (2, 3, 4),
                                          (2, 3, 4), 1, 3)
    ker = _dilated(lambda co, ci, z, y, x: kernel[co, ci, z, y, x], [ks[1], ks[2]], ds[1:], (3, 4))
    r = (ks[1] - 1) * ds[1] + 1
    n, c, dp, hp, wp = src.shape
    return _winograd(lambda b, ci, z, y, x: src[b, ci, z, y, x], ker, (n, c, kernel.shape[0], hp, wp, r), out_dtype,
                     "NCDHW", depth=(const_or_none(dp), ks[0], ss[0], ds[0]), tile_size=tile_size, name=op)


# ------------------------------------------------------------------ blocked (NCHWc) form for the CPU
def _const_sum(terms, dtype):
    """``sum(c * x)`` over the (constant, expression) pairs whose constant is not zero."""
    out = None
    for c, x in terms:
        if c == 0:
            continue
        t = x if c == 1 else x * _op.const(float(c), dtype)
        out = t if out is None else out + t
    return out if out is not None else _op.const(0.0, dtype)


def _select_by(index, exprs):
    """``exprs[index]`` for an integer expression ``index``: a chain of selects that folds to one entry
    once ``index`` is a constant (the schedules unroll these axes)."""
    out = exprs[-1]
    for i in range(len(exprs) - 2, -1, -1):
        out = _op.select(index == i, exprs[i], out)
    return out


def conv2d_winograd_weight_transform(kernel, tile_size, out_dtype=None, transpose=False):
    """A 3x3 kernel (O, C, 3, 3) as ``G g G^T`` at each of the alpha x alpha Winograd points of F(m x m, 3 x 3),
    m = ``tile_size``: (alpha, alpha, O, C) (TVM's ``topi.nn.conv2d_winograd_weight_transform``), or with
    ``transpose`` (alpha, alpha, C, O), as ``topi.cuda.conv2d_nchw_winograd_without_weight_transform`` reads
    it.  Each point sums only the non-zero constants (a select by point that unrolling folds)."""
    op = "conv2d_winograd_weight_transform"
    check_tensor(op, kernel, "kernel", 4)
    o, c, kh, kw = (const_or_none(x) for x in kernel.shape)
    if (kh, kw) != (3, 3) or tile_size not in (2, 4):
        raise OperatorError(f"{op}: a 3x3 kernel (O, C, 3, 3) and tile_size 2 or 4 expected, got {shape_str(kernel)} "
                            f"and {tile_size!r}")
    dtype = dt.canonical(out_dtype or kernel.dtype)
    alpha = tile_size + 2
    _, _, g = winograd_matrices(tile_size, 3)

    def body(e, u, co, ci):
        k = [[kernel[co, ci, a, b] if kernel.dtype == dtype else _op.cast(dtype, kernel[co, ci, a, b])
              for b in range(3)] for a in range(3)]          # each load once, shared by the points' sums
        return _select_by(e, [_select_by(u, [_const_sum(
            [(g[i, a] * g[j, b], k[a][b]) for a in range(3) for b in range(3)], dtype)
            for j in range(alpha)]) for i in range(alpha)])
    if transpose:
        return te.compute((alpha, alpha, kernel.shape[1], kernel.shape[0]), lambda e, u, ci, co: body(e, u, co, ci),
                          name="winograd_kernel_pack", tag="winograd_weight_transform")
    return te.compute((alpha, alpha, kernel.shape[0], kernel.shape[1]), body, name="winograd_kernel_pack",
                      tag="winograd_weight_transform")


def winograd_weight_transform_NCHWc(kernel, tile_size=4, out_block=16):
    """The kernel (O, C, r, r) transformed for ``conv2d_winograd_NCHWc``: (alpha * alpha, O / ob, C, ob)
    holding ``G g G^T`` of each (output, input) channel pair, output channels in blocks of ``out_block``
    (TVM's ``contrib_conv2d_winograd_weight_transform``, blocked).  Constant weights make it a constant."""
    op = "winograd_weight_transform_NCHWc"
    check_tensor(op, kernel, "kernel", 4)
    o, c, kh, kw = (const_or_none(x) for x in kernel.shape)
    if None in (o, kh, kw) or kh != kw:
        raise OperatorError(f"{op}: the kernel must be (O, C, r, r) with constant O and r, got {shape_str(kernel)}")
    if o % out_block:
        raise OperatorError(f"{op}: {o} output channels do not divide into blocks of {out_block}")
    m, r = tile_size, kh
    alpha = m + r - 1
    _, _, g = winograd_matrices(m, r)
    G = const_matrix(g, "G", kernel.dtype)
    ry, rx = te.reduce_axis((0, r), name="ry"), te.reduce_axis((0, r), name="rx")
    return te.compute((alpha * alpha, o // out_block, kernel.shape[1], out_block), lambda e, ko, ci, ki: te.sum(
        G[e // alpha, ry] * kernel[ko * out_block + ki, ci, ry, rx] * G[e % alpha, rx], axis=[ry, rx]),
        name="winograd_U", tag="winograd_weight_transform")


def conv2d_winograd_NCHWc(data, U, padding, tile_size=4, out_dtype=None):
    """Winograd F(m x m, 3 x 3) convolution, unit stride, in blocked layouts: data (N, C/ib, H, W, ib) and
    the transformed kernel ``U`` = ``winograd_weight_transform_NCHWc(kernel, m, ob)`` -> (N, O/ob, OH, OW, ob).

    Most of the work is one batched matrix product: ``V`` (alpha * alpha, P, C) transforms each input
    tile (P tiles of m x m outputs, zero past the padded input; rows in ``V1``, then columns), ``M``
    (alpha * alpha, O/ob, P, ob) = ``V @ U`` for each of the alpha * alpha points, and the output (tag
    ``conv2d_winograd_NCHWc``) transforms each tile of ``M`` back (rows in ``Y1``, then columns).  The
    transforms are written out with their non-zero constants only; each stage picks its expression by
    index (a select chain that unrolling folds to one entry)."""
    op = "conv2d_winograd_NCHWc"
    check_tensor(op, data, "data", 5)
    check_tensor(op, U, "U", 4)
    n, cbk, h, w, ib = data.shape
    ee, ko, c, ob = U.shape
    m = tile_size
    ib, ee, c, ob = (const_or_none(x) for x in (ib, ee, c, ob))
    alpha = int(round((ee or 0) ** 0.5))
    if None in (ib, ee, c, ob) or alpha * alpha != ee or alpha - m + 1 < 1 or const_or_none(cbk) * ib != c:
        raise OperatorError(f"{op}: data {shape_str(data)} and U {shape_str(U)} do not match (expected "
                            f"(N, C/ib, H, W, ib) and (alpha * alpha, O/ob, C, ob) with alpha = {m} + r - 1)")
    r = alpha - m + 1
    (pt, pl), (pb, pr) = get_pad_tuple_nd(padding, [r, r], op)
    oh, ow = h + pt + pb - r + 1, w + pl + pr - r + 1
    nh, nw = -(-oh // m), -(-ow // m)
    tiles = n * nh * nw
    dtype = dt.canonical(out_dtype or data.dtype)
    at, bt, _ = winograd_matrices(m, r)
    zero = _op.const(0, dtype)

    def read(p, ci, a, b):
        t = p % (nh * nw)
        y, x = (t // nw) * m + a - pt, (t % nw) * m + b - pl
        inside = _op.all(y >= 0, y < h, x >= 0, x < w)
        v = data[p // (nh * nw), ci // ib, _op.max(_op.min(y, h - 1), 0), _op.max(_op.min(x, w - 1), 0), ci % ib]
        return _op.if_then_else(inside, v if v.dtype == dtype else _op.cast(dtype, v), zero)

    # B^T d B and A^T M A, each as two passes of one matrix (rows, then columns)
    V1 = te.compute((alpha, alpha, tiles, c), lambda e1, b, p, ci: _select_by(e1, [
        _const_sum([(bt[i, a], read(p, ci, a, b)) for a in range(alpha)], dtype) for i in range(alpha)]),
        name=op + "_V1")
    V = te.compute((ee, tiles, c), lambda e, p, ci: _select_by(e % alpha, [
        _const_sum([(bt[j, b], V1[e // alpha, b, p, ci]) for b in range(alpha)], dtype) for j in range(alpha)]),
        name=op + "_V")
    rc = te.reduce_axis((0, c), name="rc")
    M = te.compute((ee, ko, tiles, ob), lambda e, k, p, ki: te.sum(
        V[e, p, rc] * (U[e, k, rc, ki] if U.dtype == dtype else _op.cast(dtype, U[e, k, rc, ki])), axis=rc),
        name=op + "_M")
    Y1 = te.compute((m, alpha, ko, tiles, ob), lambda i, b, k, p, ki: _select_by(i, [
        _const_sum([(at[r_, a], M[a * alpha + b, k, p, ki]) for a in range(alpha)], dtype) for r_ in range(m)]),
        name=op + "_Y1")

    def y_body(bn, k, y, x, ki):
        p = bn * (nh * nw) + (y // m) * nw + x // m
        return _select_by(x % m, [_const_sum([(at[j, b], Y1[y % m, b, k, p, ki]) for b in range(alpha)], dtype)
                                  for j in range(m)])

    return te.compute((n, ko, oh, ow, ob), y_body, name=op, tag=op, attrs={"tile_size": m, "tiles": tiles})
