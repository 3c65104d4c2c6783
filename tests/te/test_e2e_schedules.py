"""End to end: every schedule primitive, alone and combined, checked against numpy."""
import numpy as np
import pytest

import tvmlab
import tvmlab.testing
from tvmlab import te
from tvmlab.schedule import Trace



def vadd(n=1000):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0 + B[i], name="C")
    return A, B, C


def ew2d(n, m):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 3.0 - 1.0, name="B")
    return A, B


def matmul(n, m, l, dtype="float32"):
    A = te.placeholder((n, l), dtype=dtype, name="A")
    B = te.placeholder((l, m), dtype=dtype, name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def mm_ref(a, b):
    return (a.astype("float64") @ b.astype("float64")).astype(a.dtype)


# ---------------------------------------------------------------- single primitives

@pytest.mark.parametrize("n,how,amount", [(1000, "factor", 64), (37, "factor", 8), (1000, "nparts", 7),
                                          (5, "factor", 16), (64, "factor", 1), (64, "nparts", 64)])
def test_split(n, how, amount, check_build):
    A, B, C = vadd(n)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], **{how: amount})
    check_build(s, [A, B, C], lambda a, b: a * 2 + b)


def test_split_twice_and_reduce_axis(check_build):
    A, B, C = matmul(20, 13, 37)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=6)
    iio, iii = s[C].split(ii, nparts=4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=5)
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


def test_fuse(check_build):
    A, B = ew2d(33, 17)
    s = te.create_schedule(B.op)
    s[B].fuse(*B.op.axis)
    check_build(s, [A, B], lambda a: a * 3 - 1)


def test_fuse_then_split(check_build):
    A = te.placeholder((5, 7, 9), name="A")
    B = te.compute((5, 7, 9), lambda i, j, k: A[i, j, k] + 1.0, name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    fo, fi = s[B].split(f, factor=16)
    s[B].vectorize(fi)
    check_build(s, [A, B], lambda a: a + 1)


def test_reorder(check_build):
    A = te.placeholder((4, 5, 6), name="A")
    B = te.compute((4, 5, 6), lambda i, j, k: A[i, j, k] * A[i, j, k], name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    s[B].reorder(k, i, j)
    check_build(s, [A, B], lambda a: a * a)


def test_reorder_reduction_outside(check_build):
    A, B, C = matmul(9, 11, 13)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    s[C].reorder(k, i, j)
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,m,xf,yf", [(33, 17, 8, 4), (32, 32, 8, 8), (3, 5, 4, 8)])
def test_tile(n, m, xf, yf, check_build):
    A, B = ew2d(n, m)
    s = te.create_schedule(B.op)
    s[B].tile(B.op.axis[0], B.op.axis[1], xf, yf)
    check_build(s, [A, B], lambda a: a * 3 - 1)


@pytest.mark.parametrize("n,f", [(1000, 8), (37, 8), (16, 16), (7, 4)])
def test_vectorize(n, f, check_build):
    A, B, C = vadd(n)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=f)
    s[C].vectorize(xi)
    check_build(s, [A, B, C], lambda a, b: a * 2 + b)


def test_vectorize_odd_lanes_isolated(isolated):
    """Lanes that are not a power of two, with and without a tail (n < f, n % f != 0)."""
    rc, out = isolated("""
        import numpy as np
        import tvmlab as tvm
        from tvmlab import te
        bad = []
        for f in (3, 5, 6, 7, 12):
            for n in (f, 2 * f, f - 1, 2 * f + 1):
                A = te.placeholder((n,), name="A")
                B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
                s = te.create_schedule(B.op)
                xo, xi = s[B].split(B.op.axis[0], factor=f)
                s[B].vectorize(xi)
                try:
                    m = tvm.build(s, [A, B])
                except Exception as e:
                    bad.append((n, f, type(e).__name__, str(e).splitlines()[1:2]))
                    continue
                a = np.arange(n, dtype="float32")
                b = tvm.nd.array(np.full(n, np.nan, "float32"))
                m(tvm.nd.array(a), b)
                if not np.allclose(b.numpy(), a * 2):
                    bad.append((n, f, "wrong result"))
        print("BAD", bad)
    """)
    assert rc == 0 and "BAD []" in out, f"exit code {rc}:\n{out[-3000:]}"


def test_vectorize_whole_small_axis(check_build):
    A, B = ew2d(5, 12)
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    check_build(s, [A, B], lambda a: a * 3 - 1)


def test_vectorize_with_transposed_read(check_build):
    A = te.placeholder((12, 10), name="A")
    B = te.compute((10, 12), lambda i, j: A[j, i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=4)
    s[B].vectorize(ji)
    check_build(s, [A, B], lambda a: a.T + 1)


def test_unroll_over_conditional_reduction_isolated(isolated):
    """Unrolling an outer axis around a reduction with a data-dependent where must build."""
    rc, out = isolated("""
        import numpy as np
        import tvmlab as tvm
        from tvmlab import te
        A = te.placeholder((37,), dtype="float64", name="A")
        r = te.reduce_axis((0, 37), name="r")
        B = te.compute((2, 8), lambda i, j: te.sum(A[r], axis=r, where=A[r] >= A[i]), name="B")
        s = te.create_schedule(B.op)
        s[B].unroll(B.op.axis[0])
        f = tvm.build(s, [A, B])
        a = np.random.default_rng(0).uniform(-1, 1, 37)
        b = tvm.nd.empty((2, 8), "float64")
        f(tvm.nd.array(a), b)
        want = np.array([[a[a >= a[i]].sum()] * 8 for i in range(2)])
        np.testing.assert_allclose(b.numpy(), want)
        print("OK")
    """, timeout=20)
    assert rc == 0 and "OK" in out, f"exit code {rc}:\n{out[-2000:]}"


@pytest.mark.parametrize("n,f", [(100, 4), (37, 8)])
def test_unroll(n, f, check_build):
    A, B, C = vadd(n)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=f)
    s[C].unroll(xi)
    check_build(s, [A, B, C], lambda a, b: a * 2 + b)


@pytest.mark.parametrize("n", [1000, 3, 1])
def test_parallel(n, check_build):
    A, B, C = vadd(n)
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    check_build(s, [A, B, C], lambda a, b: a * 2 + b)


def test_parallel_outer_of_split(check_build):
    A, B = ew2d(37, 23)
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    fo, fi = s[B].split(f, factor=32)
    s[B].parallel(fo)
    s[B].vectorize(fi)
    check_build(s, [A, B], lambda a: a * 3 - 1)


def test_pragma_auto_unroll(check_build):
    A, B, C = matmul(8, 9, 10)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].pragma(i, "auto_unroll_max_step", 16)
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


def test_combined_split_fuse_reorder_unroll_vectorize_parallel(check_build):
    A = te.placeholder((21, 34, 5), name="A")
    B = te.compute((21, 34, 5), lambda i, j, k: te.exp(A[i, j, k]) + A[i, j, 4 - k], name="B")
    s = te.create_schedule(B.op)
    i, j, k = B.op.axis
    jo, ji = s[B].split(j, factor=8)
    s[B].reorder(i, jo, k, ji)
    f = s[B].fuse(i, jo)
    s[B].parallel(f)
    s[B].unroll(k)
    s[B].vectorize(ji)
    check_build(s, [A, B], lambda a: np.exp(a) + a[:, :, ::-1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("how", ["factor", "nparts"])
def test_nested_split_larger_than_parent_reduction(how, check_build):
    """k (7) split by 2, then k.inner (2) split by 16: the k.inner < 2 guard is needed."""
    A = te.placeholder((7,), name="A")
    k = te.reduce_axis((0, 7), name="k")
    B = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=2)
    if how == "factor":
        s[B].split(ki, factor=16)
    else:
        s[B].split(ko, nparts=3)
    check_build(s, [A, B], lambda a: a.sum().reshape(1), rtol=1e-5, atol=1e-5)


def test_nested_split_larger_than_parent_data_parallel(check_build):
    """Overlapping iterations of a data-parallel axis must not repeat reduction updates."""
    A = te.placeholder((35, 17), name="A")
    k = te.reduce_axis((0, 17), name="k")
    B = te.compute((35,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=11)
    s[B].reorder(k, io)
    iio, iii = s[B].split(ii, factor=5)
    check_build(s, [A, B], lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_nested_split_larger_than_parent_elementwise(check_build):
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(B.op.axis[0], factor=3)
    iio, iii = s[B].split(ii, factor=8)
    check_build(s, [A, B], lambda a: a + 1)


# ---------------------------------------------------------------- attachment

def chain3(n=37, m=19):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] * 2.0, name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] - B[i, j] * 0.5, name="D")
    return A, B, C, D


def chain3_ref(a):
    b = a + 1
    return b * 2 - b * np.float32(0.5)


def test_compute_inline_chain(check_build):
    A, B, C, D = chain3()
    s = te.create_schedule(D.op)
    s[B].compute_inline()
    s[C].compute_inline()
    check_build(s, [A, D], chain3_ref)


def test_compute_at_inner_axis(check_build):
    A = te.placeholder((37, 19), name="A")
    B = te.compute((37, 19), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((37, 19), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[B].compute_at(s[C], j)
    check_build(s, [A, C], lambda a: (a + 1) * 2)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_compute_at_levels(level, check_build):
    A = te.placeholder((37, 19), name="A")
    B = te.compute((37, 19), lambda i, j: A[i, j] * A[i, j], name="B")
    C = te.compute((35, 19), lambda i, j: B[i, j] + B[i + 2, j], name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=8)
    jo, ji = s[C].split(j, factor=4)
    s[C].reorder(io, jo, ii, ji)
    s[B].compute_at(s[C], [io, jo, ii, ji][level])
    check_build(s, [A, C], lambda a: (a * a)[:35] + (a * a)[2:])


def test_compute_at_nested_two_levels(check_build):
    A = te.placeholder((30, 20), name="A")
    B = te.compute((30, 20), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((30, 20), lambda i, j: B[i, j] * 3.0, name="C")
    D = te.compute((30, 20), lambda i, j: C[i, j] - 2.0, name="D")
    s = te.create_schedule(D.op)
    i, j = D.op.axis
    io, ii = s[D].split(i, factor=7)
    s[C].compute_at(s[D], io)
    s[B].compute_at(s[C], C.op.axis[0])
    check_build(s, [A, D], lambda a: (a + 1) * 3 - 2)


def test_compute_root_after_compute_at(check_build):
    A, B, C, D = chain3()
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[C].compute_root()
    check_build(s, [A, D], chain3_ref)


def test_compute_at_reduction_into_consumer(check_build):
    A = te.placeholder((16, 24), name="A")
    k = te.reduce_axis((0, 24), name="k")
    S = te.compute((16,), lambda i: te.sum(A[i, k], axis=k), name="S")
    N = te.compute((16, 24), lambda i, j: A[i, j] / S[i], name="N")
    s = te.create_schedule(N.op)
    s[S].compute_at(s[N], N.op.axis[0])
    check_build(s, [A, N], lambda a: a / a.sum(axis=1, keepdims=True),
                ranges={"A": (0.5, 1.5)}, rtol=1e-5, atol=1e-6)


def test_compute_at_with_split_producer_and_vectorize(check_build):
    A = te.placeholder((64, 40), name="A")
    B = te.compute((64, 40), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((64, 40), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=16)
    s[B].compute_at(s[C], io)
    bj_o, bj_i = s[B].split(B.op.axis[1], factor=8)
    s[B].vectorize(bj_i)
    s[C].parallel(io)
    check_build(s, [A, C], lambda a: a * 2 + 1)


# ---------------------------------------------------------------- caches

def test_cache_read_local(check_build):
    A = te.placeholder((20, 30), name="A")
    B = te.compute((20, 30), lambda i, j: A[i, j] + A[i, 29 - j], name="B")
    s = te.create_schedule(B.op)
    AL = s.cache_read(A, "local", [B])
    s[AL].compute_at(s[B], B.op.axis[0])
    check_build(s, [A, B], lambda a: a + a[:, ::-1])


def test_cache_write_local(check_build):
    A, B, C = matmul(17, 19, 23)
    s = te.create_schedule(C.op)
    s.cache_write(C, "local")
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


def test_matmul_cache_write_compute_at_vectorize(check_build):
    A, B, C = matmul(64, 64, 48)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].parallel(xo)
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


def test_cache_read_and_write_together(check_build):
    A, B, C = matmul(24, 20, 16)
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    AA = s.cache_read(A, "global", [CL])
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=8)
    s[CL].compute_at(s[C], io)
    s[AA].compute_at(s[CL], s[CL].op.reduce_axis[0])
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- rfactor

def vsum(n=1000):
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="B")
    return A, B


def test_rfactor_split_part(check_build):
    A, B = vsum(1000)
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    s.rfactor(B, ki)
    check_build(s, [A, B], lambda a: a.sum(dtype="float64").reshape(1).astype("float32"),
                rtol=1e-5, atol=1e-4)


def test_rfactor_parallel_over_factored_axis(check_build):
    A, B = vsum(1000)
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], nparts=8)
    BF = s.rfactor(B, ko)
    s[BF].parallel(BF.op.axis[0])
    check_build(s, [A, B], lambda a: a.sum(dtype="float64").reshape(1).astype("float32"),
                rtol=1e-5, atol=1e-4)


def test_rfactor_vectorized_partials(check_build):
    A = te.placeholder((12, 100), name="A")
    k = te.reduce_axis((0, 100), name="k")
    B = te.compute((12,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    BF = s.rfactor(B, ki, factor_axis=1)
    s[BF].vectorize(BF.op.axis[1])
    check_build(s, [A, B], lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_rfactor_max(check_build):
    A = te.placeholder((9, 50), name="A")
    k = te.reduce_axis((0, 50), name="k")
    B = te.compute((9,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=7)
    s.rfactor(B, ko)
    check_build(s, [A, B], lambda a: a.max(axis=1))


# ---------------------------------------------------------------- normalize / symbolic

def test_normalize(check_build):
    A, B, C = vadd(100)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=9)
    s.normalize()
    check_build(s, [A, B, C], lambda a, b: a * 2 + b)


def test_normalize_reduction_with_offset_axis(check_build):
    A = te.placeholder((30,), name="A")
    k = te.reduce_axis((5, 25), name="k")
    B = te.compute((1,), lambda _: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s.normalize()
    check_build(s, [A, B], lambda a: a[5:25].sum().reshape(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 7, 64, 100, 1001])
def test_symbolic_shape_split_vectorize(n, check_build):
    nv = te.var("n")
    A = te.placeholder((nv,), name="A")
    B = te.placeholder((nv,), name="B")
    C = te.compute((nv,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    f, _ = check_build(s, [A, B, C], lambda a, b: a + b, env={"n": n})


def test_symbolic_module_reused_for_several_n(rng):
    nv = te.size_var("n")
    m = te.size_var("m")
    A = te.placeholder((nv, m), name="A")
    B = te.compute((nv, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 8)
    f = tvmlab.build(s, [A, B])
    for n_, m_ in [(1, 1), (5, 9), (16, 32), (33, 17)]:
        a = rng.uniform(-1, 1, (n_, m_)).astype("float32")
        b = tvmlab.nd.array(np.full((n_, m_), np.nan, dtype="float32"))
        f(tvmlab.nd.array(a), b)
        tvmlab.testing.assert_allclose(b.numpy(), a * 2)


def test_symbolic_reduction(check_build):
    n = te.var("n")
    A = te.placeholder((n, 12), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((12,), lambda j: te.sum(A[k, j], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    check_build(s, [A, B], lambda a: a.sum(axis=0), env={"n": 23}, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- the CPU matmul tutorial

def test_matmul_tutorial_blocking(check_build):
    M = K = N = 128
    bn = 32
    A, B, C = matmul(M, N, K)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    s[C].parallel(xo)
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


def test_matmul_tutorial_packed_b_cache_write(check_build):
    M = K = N = 128
    bn = 32
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute((M, N), lambda x, y: te.sum(
        A[x, k] * packedB[tvmlab.tir.indexdiv(y, bn), k, tvmlab.tir.indexmod(y, bn)], axis=k),
        name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].parallel(xo)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    mod, _ = check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)
    assert mod.entry_name == "default_function"


def test_matmul_odd_sizes_full_schedule(check_build):
    A, B, C = matmul(45, 37, 29)
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    (k,) = C.op.reduce_axis
    ko, ki = s[C].split(k, factor=3)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].unroll(ki)
    s[C].vectorize(yi)
    s[C].parallel(xo)
    check_build(s, [A, B, C], mm_ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- lowering modes and traces

def _scheduled_matmul():
    A, B, C = matmul(33, 20, 17)
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 4)
    s[CL].compute_at(s[C], yo)
    s[CL].vectorize(s[CL].op.axis[1])
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=4)
    s[C].parallel(xo)
    return s, (A, B, C)


def test_simple_mode_same_results(rng):
    s, args = _scheduled_matmul()
    a = rng.uniform(-1, 1, (33, 17)).astype("float32")
    b = rng.uniform(-1, 1, (17, 20)).astype("float32")
    outs = []
    for simple in (True, False):
        mod = tvmlab.lower(s, list(args), simple_mode=simple)
        f = tvmlab.build(mod, target="llvm")
        c = tvmlab.testing.poison(tvmlab.nd.empty((33, 20), "float32"))
        f(tvmlab.nd.array(a), tvmlab.nd.array(b), c)
        outs.append(c.numpy())
    tvmlab.testing.assert_allclose(outs[0], mm_ref(a, b), rtol=1e-5, atol=1e-5)
    tvmlab.testing.assert_allclose(outs[1], outs[0], rtol=1e-6, atol=1e-6)


def test_trace_replay_lowers_identically():
    s, args = _scheduled_matmul()
    text = str(tvmlab.lower(s, list(args)))
    A, B, C = args
    s2 = Trace.from_json(s.trace.to_json()).replay([C.op])
    assert str(tvmlab.lower(s2, list(args))) == text


def test_trace_as_python_lowers_identically():
    s, args = _scheduled_matmul()
    A, B, C = args
    ns = {"te": te, "tvm": tvmlab, "A": A, "B": B, "C": C}
    exec(s.trace.as_python(), ns)
    assert str(tvmlab.lower(ns["s"], list(args))) == str(tvmlab.lower(s, list(args)))


def test_time_evaluator_and_sources():
    A, B, C = vadd(256)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    f = tvmlab.build(s, [A, B, C], "llvm", name="vadd")
    assert f.entry_name == "vadd"
    assert "vadd" in f.get_source("ll")
    assert f.get_source("asm")
    dev = tvmlab.cpu(0)
    a = tvmlab.nd.array(np.ones(256, "float32"), dev)
    b = tvmlab.nd.array(np.ones(256, "float32"), dev)
    c = tvmlab.nd.empty((256,), "float32", dev)
    res = f.time_evaluator("vadd", dev, number=3)(a, b, c)
    assert res.mean > 0
    tvmlab.testing.assert_allclose(c.numpy(), np.full(256, 3.0, "float32"))
    f["vadd"](a, b, c)
    f.get_function("vadd")(a, b, c)


def test_compute_at_after_cache_read_of_its_input(check_build):
    """cache_read replaces B's op; C still reads B, so B can be computed at C."""
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s.cache_read(A, "local", [B])
    s[B].compute_at(s[C], C.op.axis[0])
    check_build(s, [A, C], lambda a: (a + 1) * 2)


def test_trace_replay_with_cache_read():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    AL = s.cache_read(A, "local", [B])
    s[AL].compute_at(s[B], B.op.axis[0])
    s2 = Trace.from_json(s.trace.to_json()).replay([B.op])
    assert str(tvmlab.lower(s2, [A, B])) == str(tvmlab.lower(s, [A, B]))


def test_cache_read_readers_given_as_operations(check_build):
    A = te.placeholder((12,), name="A")
    B = te.compute((12,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s.cache_read(A, "local", [B.op])
    assert [st.primitive for st in s.trace] == ["cache_read"]
    check_build(s, [A, B], lambda a: a + 1)


def test_pragma_auto_unroll_covers_its_own_loop(check_build):
    """As in TVM, the pragma on an axis applies to that loop too (8 steps <= 16: unrolled)."""
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].pragma(B.op.axis[0], "auto_unroll_max_step", 16)
    text = str(tvmlab.lower(s, [A, B]))
    assert "for " not in text and "B[7] = A[7] + 1.0" in text
    check_build(s, [A, B], lambda a: a + 1)


def test_rfactor_after_nested_uneven_splits(check_build):
    """rfactor keeps the guard of every uneven split, not only the root's (k < 8, k.ii < 2)."""
    A = te.placeholder((31, 8), dtype="int32", name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((31,), lambda i: te.sum(A[i, k] * (i + k), axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=10)
    kio, kii = s[B].split(ki, factor=2)
    s[B].split(kii, factor=4)
    s.rfactor(B, kio)
    i = np.arange(31)[:, None]
    kk = np.arange(8)[None, :]
    check_build(s, [A, B], lambda a: (a * (i + kk)).sum(axis=1).astype("int32"))


def test_fuse_symbolic_consumer_of_a_stage(check_build):
    """Fusing a consumer's symbolic axes: the producer's bounds stay the tensor's shape."""
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    fo, fi = s[C].split(f, factor=4)
    s[C].vectorize(fi)
    text = str(tvmlab.lower(s, [A, C]))
    assert "inf" not in text
    for shape in [(5, 7), (1, 3), (8, 4)]:
        check_build(s, [A, C], lambda a: a * 2 + 1, env={"n": shape[0], "m": shape[1]})


def test_rfactor_guard_precedes_a_where_that_reads_memory(check_build):
    """The range guard of an uneven split is tested before a `where` that loads: a load
    past the end of a cached copy must never decide a branch."""
    A = te.placeholder((8, 12), dtype="int32", name="A")
    V = te.placeholder((11,), name="V")
    r = te.reduce_axis((0, 8), name="r")
    T = te.compute((8,), lambda i: te.sum(V[r + 3], axis=r, where=A[r, r + 3] >= i - 4), name="T")
    s = te.create_schedule(T.op)
    ro, ri = s[T].split(r, factor=13)
    Trf = s.rfactor(T, ri)
    s.cache_read(A, "global", [Trf])

    def ref(a, v):
        rr = np.arange(8)
        mask = a[rr, rr + 3][None, :] >= (np.arange(8)[:, None] - 4)
        return (v[rr + 3][None, :] * mask).sum(axis=1)
    check_build(s, [A, V, T], ref, ranges={"A": (-8, 8)}, rtol=1e-5, atol=1e-5)


def test_rfactor_guard_is_partitioned_away_from_the_main_loop(check_build):
    """rfactor's range guard of an uneven split is ``likely``, as ScheduleOps' own guards:
    loop partitioning gives the partial reduction a guard-free main part."""
    A = te.placeholder((3, 68), name="A")
    k = te.reduce_axis((0, 68), name="k")
    B = te.compute((3,), lambda b: te.sum(A[b, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(k, 16)
    s.rfactor(B, ko, 0)
    text = str(tvmlab.lower(s, [A, B]))
    assert "likely" not in text and text.count("if ") == 0
    check_build(s, [A, B], lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)
