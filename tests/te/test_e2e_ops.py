"""End to end: operators built for LLVM and compared with numpy on random data."""
import math

import numpy as np
import pytest

import tvmlab
import tvmlab as tvm
import tvmlab.testing
from tvmlab import te



def test_vector_add_seed():
    n = 1024
    A = tvm.te.placeholder((n,), name='A')
    B = tvm.te.placeholder((n,), name='B')
    C = tvm.te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = tvm.te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], "llvm")
    dev = tvm.device("llvm", 0)
    a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


_erf = np.vectorize(math.erf, otypes=[np.float64])

# name: (te function of x (and y), numpy reference, input range)
UNARY = {
    "neg": (lambda x: -x, lambda x: -x, (-2, 2)),
    "exp": (te.exp, np.exp, (-4, 4)),
    "log": (te.log, np.log, (0.01, 10)),
    "sqrt": (te.sqrt, np.sqrt, (0, 10)),
    "rsqrt": (te.rsqrt, lambda x: 1 / np.sqrt(x), (0.05, 10)),
    "tanh": (te.tanh, np.tanh, (-5, 5)),
    "sigmoid": (te.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-8, 8)),
    "abs": (te.abs, np.abs, (-3, 3)),
    "floor": (te.floor, np.floor, (-5, 5)),
    "ceil": (te.ceil, np.ceil, (-5, 5)),
    "erf": (te.erf, lambda x: _erf(x).astype(np.float32), (-3, 3)),
    "square_plus_const": (lambda x: x * x + 1.5, lambda x: x * x + np.float32(1.5), (-3, 3)),
    "relu": (lambda x: te.if_then_else(x > 0, x, te.const(0, "float32")),
             lambda x: np.maximum(x, 0), (-1, 1)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, check_build):
    fte, fnp, rng_ = UNARY[name]
    A = te.placeholder((7, 33), name="A")
    B = te.compute(A.shape, lambda i, j: fte(A[i, j]), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], fnp, ranges={"A": rng_}, rtol=2e-5, atol=2e-6)


def test_round_half_away_from_zero(check_build):
    A = te.placeholder((8,), name="A")
    B = te.compute(A.shape, lambda i: te.round(A[i]), name="B")
    s = te.create_schedule(B.op)
    data = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, 2.4, -2.6], dtype="float32")
    check_build(s, [A, B], lambda a: np.where(np.abs(a - np.trunc(a)) >= 0.5,
                                              np.trunc(a) + np.sign(a), np.trunc(a)),
                inputs={"A": data})


BINARY = {
    "add": (lambda x, y: x + y, np.add, (-2, 2), (-2, 2)),
    "sub": (lambda x, y: x - y, np.subtract, (-2, 2), (-2, 2)),
    "mul": (lambda x, y: x * y, np.multiply, (-2, 2), (-2, 2)),
    "div": (lambda x, y: x / y, np.divide, (-2, 2), (0.5, 3)),
    "pow": (te.power, np.power, (0.1, 3), (-2, 2)),
    "fmod": (te.fmod, np.fmod, (-5, 5), (0.5, 2)),
    "max": (tvm.tir.max, np.maximum, (-2, 2), (-2, 2)),
    "min": (tvm.tir.min, np.minimum, (-2, 2), (-2, 2)),
    "select": (lambda x, y: tvm.tir.Select(x < y, x * 2, y), lambda x, y: np.where(x < y, x * 2, y),
               (-2, 2), (-2, 2)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, check_build):
    fte, fnp, ra, rb = BINARY[name]
    A = te.placeholder((5, 17), name="A")
    B = te.placeholder((5, 17), name="B")
    C = te.compute(A.shape, lambda i, j: fte(A[i, j], B[i, j]), name="C")
    s = te.create_schedule(C.op)
    check_build(s, [A, B, C], fnp, ranges={"A": ra, "B": rb}, rtol=2e-5, atol=1e-6)


def test_broadcast_row(check_build):
    A = te.placeholder((12, 9), name="A")
    b = te.placeholder((9,), name="b")
    C = te.compute(A.shape, lambda i, j: A[i, j] + b[j], name="C")
    s = te.create_schedule(C.op)
    check_build(s, [A, b, C], lambda a, bb: a + bb[None, :])


def test_broadcast_column_and_scalar_tensor(check_build):
    A = te.placeholder((6, 10), name="A")
    c = te.placeholder((6, 1), name="c")
    d = te.placeholder((1,), name="d")
    C = te.compute(A.shape, lambda i, j: A[i, j] * c[i, 0] - d[0], name="C")
    s = te.create_schedule(C.op)
    check_build(s, [A, c, d, C], lambda a, cc, dd: a * cc - dd[0])


def test_transpose(check_build):
    A = te.placeholder((13, 7), name="A")
    B = te.compute((7, 13), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: a.T)


def test_transpose_3d(check_build):
    A = te.placeholder((3, 4, 5), name="A")
    B = te.compute((5, 3, 4), lambda i, j, k: A[j, k, i], name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: a.transpose(2, 0, 1))


def test_matmul(check_build):
    n, m, l = 19, 23, 29
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    check_build(s, [A, B, C], lambda a, b: a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_transposed_b(check_build):
    A = te.placeholder((8, 16), name="A")
    B = te.placeholder((12, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((8, 12), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    check_build(s, [A, B, C], lambda a, b: a @ b.T, rtol=1e-5, atol=1e-5)


REDUCERS = {"sum": (te.sum, np.sum), "max": (te.max, np.max), "min": (te.min, np.min)}


@pytest.mark.parametrize("red", sorted(REDUCERS))
def test_reduce_one_axis(red, check_build):
    fte, fnp = REDUCERS[red]
    A = te.placeholder((11, 37), name="A")
    k = te.reduce_axis((0, 37), name="k")
    B = te.compute((11,), lambda i: fte(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: fnp(a, axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("red", sorted(REDUCERS))
def test_reduce_two_axes(red, check_build):
    fte, fnp = REDUCERS[red]
    A = te.placeholder((5, 9, 13), name="A")
    k1 = te.reduce_axis((0, 5), name="k1")
    k2 = te.reduce_axis((0, 13), name="k2")
    B = te.compute((9,), lambda j: fte(A[k1, j, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: fnp(a, axis=(0, 2)), rtol=1e-5, atol=1e-5)


def test_reduce_all_to_scalar_shape(check_build):
    A = te.placeholder((6, 7), name="A")
    i = te.reduce_axis((0, 6), name="i")
    j = te.reduce_axis((0, 7), name="j")
    B = te.compute((1,), lambda _: te.sum(A[i, j], axis=[i, j]), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: a.sum().reshape(1), rtol=1e-5, atol=1e-5)


def test_sum_with_where_triangular(check_build):
    n = 17
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=k <= i), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: np.tril(a).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_max_with_where_empty_rows_give_identity(check_build):
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k, where=k < i), name="B")
    s = te.create_schedule(B.op)

    def ref(a):
        out = np.full(4, -np.inf, dtype="float32")
        for i in range(1, 4):
            out[i] = a[i, :i].max()
        return out
    check_build(s, [A, B], ref)


def test_prod_reducer(check_build):
    A = te.placeholder((5, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((5,), lambda i: te.prod(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: np.prod(a, axis=1), ranges={"A": (0.5, 1.5)},
                rtol=1e-5, atol=1e-6)


def test_custom_comm_reducer_product(check_build):
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    A = te.placeholder((6, 9), name="A")
    k = te.reduce_axis((0, 9), name="k")
    B = te.compute((6,), lambda i: prod(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: np.prod(a, axis=1), ranges={"A": (0.5, 1.5)},
                rtol=1e-5, atol=1e-6)


def test_custom_comm_reducer_max_abs(check_build):
    maxabs = te.comm_reducer(lambda x, y: tvm.tir.Select(te.abs(x) >= te.abs(y), x, y),
                             lambda t: te.const(0, t), name="maxabs")
    A = te.placeholder((10, 21), name="A")
    k = te.reduce_axis((0, 21), name="k")
    B = te.compute((10,), lambda i: maxabs(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)

    def ref(a):
        return a[np.arange(a.shape[0]), np.abs(a).argmax(axis=1)]
    check_build(s, [A, B], ref)


def test_tuple_reducer_argmax(check_build):
    def fcombine(x, y):
        lhs = tvm.tir.Select(x[1] >= y[1], x[0], y[0])
        rhs = tvm.tir.Select(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return te.const(-1, t0), tvm.tir.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((7, 15), name="A")
    k = te.reduce_axis((0, 15), name="k")
    idx, val = te.compute((7,), lambda i: argmax((k, A[i, k]), axis=k), name="T")
    s = te.create_schedule(idx.op)
    check_build(s, [A, idx, val],
                lambda a: (a.argmax(axis=1).astype("int32"), a.max(axis=1)))


def _softmax(n, m):
    A = te.placeholder((n, m), name="A")
    k1 = te.reduce_axis((0, m), name="k1")
    mx = te.compute((n,), lambda i: te.max(A[i, k1], axis=k1), name="mx")
    ex = te.compute((n, m), lambda i, j: te.exp(A[i, j] - mx[i]), name="ex")
    k2 = te.reduce_axis((0, m), name="k2")
    sm = te.compute((n,), lambda i: te.sum(ex[i, k2], axis=k2), name="sm")
    out = te.compute((n, m), lambda i, j: ex[i, j] / sm[i], name="out")
    return A, mx, ex, sm, out


def _np_softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax(check_build):
    A, mx, ex, sm, out = _softmax(9, 31)
    s = te.create_schedule(out.op)
    check_build(s, [A, out], _np_softmax, ranges={"A": (-5, 5)}, rtol=1e-5, atol=1e-6)


def test_softmax_scheduled(check_build):
    A, mx, ex, sm, out = _softmax(9, 31)
    s = te.create_schedule(out.op)
    s[ex].compute_inline()
    i, j = out.op.axis
    s[mx].compute_at(s[out], i)
    s[sm].compute_at(s[out], i)
    jo, ji = s[out].split(j, factor=8)
    s[out].vectorize(ji)
    s[out].parallel(i)
    check_build(s, [A, out], _np_softmax, ranges={"A": (-5, 5)}, rtol=1e-5, atol=1e-6)


def _conv2d_nchw(N, C, H, W, K, R, pad, stride=1):
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((K, C, R, R), name="kernel")
    Hp, Wp = H + 2 * pad, W + 2 * pad
    padded = te.compute(
        (N, C, Hp, Wp),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= pad, y < H + pad, x >= pad, x < W + pad),
            data[n, c, y - pad, x - pad], te.const(0.0, "float32")),
        name="padded")
    OH, OW = (Hp - R) // stride + 1, (Wp - R) // stride + 1
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    out = te.compute(
        (N, K, OH, OW),
        lambda n, f, y, x: te.sum(padded[n, rc, y * stride + ry, x * stride + rx] *
                                  kernel[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")
    return data, kernel, padded, out


def _np_conv2d(d, k, pad, stride=1):
    N, C, H, W = d.shape
    K, _, R, _ = k.shape
    p = np.pad(d, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - R) // stride + 1, (W + 2 * pad - R) // stride + 1
    out = np.zeros((N, K, OH, OW), dtype=np.float64)
    for y in range(OH):
        for x in range(OW):
            win = p[:, :, y * stride:y * stride + R, x * stride:x * stride + R]
            out[:, :, y, x] = np.einsum("ncij,kcij->nk", win, k)
    return out.astype(d.dtype)


@pytest.mark.parametrize("pad,stride", [(1, 1), (2, 2), (0, 1)])
def test_conv2d_nchw(pad, stride, check_build):
    data, kernel, padded, out = _conv2d_nchw(2, 3, 9, 8, 4, 3, pad, stride)
    s = te.create_schedule(out.op)
    check_build(s, [data, kernel, out], lambda d, k: _np_conv2d(d, k, pad, stride),
                rtol=1e-5, atol=1e-5)


def test_conv2d_nchw_inlined_padding(check_build):
    data, kernel, padded, out = _conv2d_nchw(1, 4, 10, 10, 5, 3, 1)
    s = te.create_schedule(out.op)
    s[padded].compute_inline()
    n, f, y, x = out.op.axis
    xo, xi = s[out].split(x, factor=4)
    s[out].vectorize(xi)
    check_build(s, [data, kernel, out], lambda d, k: _np_conv2d(d, k, 1), rtol=1e-5, atol=1e-5)


def test_scalar_var_argument(check_build):
    A = te.placeholder((20,), name="A")
    alpha = te.var("alpha", "float32")
    B = te.compute(A.shape, lambda i: A[i] * alpha + 1.0, name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, alpha, B], lambda a, al: a * np.float32(al) + np.float32(1),
                scalars={alpha: 2.5})


def test_two_outputs(check_build):
    A = te.placeholder((15,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2.0, name="B")
    C = te.compute(A.shape, lambda i: B[i] + A[i], name="C")
    s = te.create_schedule([B.op, C.op])
    check_build(s, [A, B, C], lambda a: (a * 2, a * 2 + a))


def test_same_input_read_twice_with_offsets(check_build):
    A = te.placeholder((30,), name="A")
    B = te.compute((28,), lambda i: A[i] + A[i + 2] - A[27 - i], name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: a[:28] + a[2:] - a[27::-1][:28])


def test_index_arithmetic_values(check_build):
    A = te.placeholder((6, 7), dtype="int32", name="A")
    B = te.compute((6, 7), lambda i, j: A[i, j] + (i * 7 + j) % 5 - (i - j) // 2, name="B")
    s = te.create_schedule(B.op)
    ii, jj = np.meshgrid(np.arange(6), np.arange(7), indexing="ij")
    check_build(s, [A, B], lambda a: (a + (ii * 7 + jj) % 5 - np.floor_divide(ii - jj, 2)
                                      ).astype("int32"))


def test_unused_placeholder_argument_is_accepted(check_build):
    """As in TVM, an argument the computation does not read (here x % 1 folds to 0) is allowed."""
    A = te.placeholder((6,), dtype="int32", name="A")
    B = te.compute((6,), lambda i: A[i] % 1 + 3, name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: np.full(6, 3, "int32"))


def test_lower_prints_and_has_history():
    A = te.placeholder((16,), name="A")
    B = te.compute(A.shape, lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    tvmlab.build(s, [A, B])
    mod = tvmlab.lower(s, [A, B], simple_mode=True)
    text = str(mod)
    assert "B" in text and "A" in text
    assert "AST2" in mod.history
