"""GPU schedules of the kinds TVM's integration tests use (elementwise, reductions with rfactor and
across threads, scans), built for CUDA and run on the thread-level simulator against numpy: no race,
no divergent barrier or shuffle, no out-of-bounds access, every output element written."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.ir.expr import Call
from tvmlab.ir.functor import post_order_visit
from tvmlab.ir.stmt import IfThenElse
from tvmlab.testing import poison, random_data
from tvmlab.testing.gpu_schedules import row_sum_rfactor

RNG = np.random.default_rng(23)


def bind_1d(s, stage, axis, threads):
    bx, tx = s[stage].split(axis, factor=threads)
    s[stage].bind(bx, te.thread_axis("blockIdx.x"))
    s[stage].bind(tx, te.thread_axis("threadIdx.x"))
    return bx, tx


def simulate(s, args, inputs, out_shapes, out_dtypes=None, scalars=()):
    f = tvm.build(s, args, "cuda")
    outs = [poison(np.empty(sh, dt)) for sh, dt in zip(out_shapes, out_dtypes or ["float32"] * len(out_shapes))]
    report = tvm.testing.simulate(f, *inputs, *outs, *scalars)
    assert report.ok
    return outs[0] if len(outs) == 1 else outs


@pytest.mark.parametrize("n", [1024, 77])
def test_elementwise_exp_and_fmod(n):
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    B = te.placeholder((m,), name="B")
    E = te.compute(A.shape, lambda i: te.exp(A[i]), name="E")
    F = te.compute(A.shape, lambda i: te.fmod(A[i], B[i]), name="F")
    s = te.create_schedule([E.op, F.op])
    for T in (E, F):
        bind_1d(s, T, T.op.axis[0], 8)
    a = RNG.uniform(1, 80, n).astype("float32")          # exp stays finite in float32
    b = RNG.uniform(2, 30, n).astype("float32")
    e, f = simulate(s, [A, B, E, F], [a, b], [(n,), (n,)])
    np.testing.assert_allclose(e, np.exp(a.astype("float64")), rtol=1e-5)
    np.testing.assert_allclose(f, np.fmod(a, b), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "uint64"])
def test_add_with_vectorized_inner_loop(dtype):
    n = te.size_var("n")
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, x = s[C].split(C.op.axis[0], factor=64)
    tx, x = s[C].split(x, nparts=16)
    _, x = s[C].split(x, factor=4)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[C].vectorize(x)
    a, b = (random_data((300,), dtype, RNG) for _ in range(2))
    (c,) = [simulate(s, [A, B, C], [a, b], [(300,)], [dtype])]
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_popcount(dtype):
    A = te.placeholder((100,), name="A", dtype=dtype)
    B = te.compute(A.shape, lambda i: tvm.tir.popcount(A[i]), name="B")
    s = te.create_schedule(B.op)
    bind_1d(s, B, B.op.axis[0], 8)
    a = RNG.integers(0, 2**31, 100).astype(dtype) * 3
    b = simulate(s, [A, B], [a], [(100,)], [dtype])
    np.testing.assert_array_equal(b, [bin(int(x)).count("1") for x in a])


def test_multiple_cache_write_at_block_level_has_one_writer():
    """B (two outputs) and its local cache are computed at blockIdx.x without thread bindings of
    their own: every thread of the block runs them, and only thread 0 stores the shared tile."""
    n = 128
    A0 = te.placeholder((n,), name="A0")
    A1 = te.placeholder((n,), name="A1")
    B0, B1 = te.compute((n,), lambda i: (A0[i] + A1[i], A0[i] * A1[i]), name="B")
    C = te.compute((n,), lambda i: B0[i] + B1[i], name="C")
    s = te.create_schedule(C.op)
    B0_cache, _ = s.cache_write([B0, B1], "local")
    bx, _ = bind_1d(s, C, C.op.axis[0], 8)
    s[B0].compute_at(s[C], bx)
    s[B0_cache].compute_at(s[C], bx)
    a0, a1 = (random_data((n,), "float32", RNG) for _ in range(2))
    c = simulate(s, [A0, A1, C], [a0, a1], [(n,)])
    np.testing.assert_allclose(c, a0 + a1 + a0 * a1, rtol=1e-6)
    (kernel,) = tvm.lower(s, [A0, A1, C], target="cuda").device_split.kernels
    guards = []
    post_order_visit(kernel.body, lambda x: guards.append(x) if isinstance(x, IfThenElse)
                     and "threadIdx.x == 0" in str(x.condition) else None)
    assert len(guards) == 2                          # the stores of B's two outputs


@pytest.mark.parametrize("reducer,np_reducer", [(te.sum, np.sum), (te.min, np.min), (te.max, np.max)])
def test_reduction_with_a_where_condition_one_thread_per_row(reducer, np_reducer):
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    R = te.compute((n,), lambda i: tvm.tir.Select(i > 1, 1, 0), name="R")
    k = te.reduce_axis((0, m))
    B = te.compute((n,), lambda i: reducer(A[i, k], axis=k, where=R[i] == 1), name="B")
    s = te.create_schedule(B.op)
    bind_1d(s, B, B.op.axis[0], 1)
    s[R].compute_inline()
    a = random_data((37, 29), "float32", RNG)
    b = simulate(s, [A, B], [a], [(37,)])
    want = np_reducer(a, axis=1)
    np.testing.assert_allclose(b[2:], want[2:], rtol=1e-5)


def test_rfactor_across_threads_with_where():
    s, args, ref = row_sum_rfactor(10, 1027, 16, rows=16, where=lambda i: i > 1)
    a = random_data((10, 1027), "float32", RNG)
    b = simulate(s, args, [a], [(10,)])
    np.testing.assert_allclose(b, ref(a), rtol=1e-4, atol=1e-4)
    assert (b[:2] == 0).all()


@pytest.mark.parametrize("m", [40, 10])           # 10: one block with more threads than rows
def test_rfactor_elementwise_consumer_picks_its_writer_by_an_inner_thread(m):
    """C's store predicate names threadIdx.x, bound only in B, computed inside C (TVM accepts it)."""
    n, nthread = 300, 16
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    BB = te.compute((m,), lambda i: B[i] + 1, name="BB")
    C = te.compute((m,), lambda i: BB[i] + 1, name="C")
    s = te.create_schedule(C.op)
    s[BB].compute_inline()
    bx, ty = s[C].split(s[C].op.axis[0], factor=nthread)
    _, kf = s[B].split(k, factor=nthread)
    BF = s.rfactor(B, kf)
    s[B].compute_at(s[C], ty)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    thread_x = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], thread_x)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(thread_x.var.equal(0))
    s[C].set_store_predicate(thread_x.var.equal(0))
    a = random_data((m, n), "float32", RNG)
    c = simulate(s, [A, C], [a], [(m,)])
    np.testing.assert_allclose(c, a.sum(1) + 2, rtol=1e-4, atol=1e-4)
    # as TVM's test does it: lowered without a target (the CPU passes: no loop is cut at points that
    # differ between threads around the reduction), then built for a GPU; without warp shuffles
    # (OpenGL compute, OpenCL) the reduction is a shared-memory tree with barriers
    for target in ("cuda", "opengl -compute"):
        f = tvm.build(tvm.lower(s, [A, C]), target=target)
        c = poison(np.empty(m, "float32"))
        tvm.testing.simulate(f, a, c)
        np.testing.assert_allclose(c, a.sum(1) + 2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n", [(32, 256), (10, 20), (10, 37)])
def test_warp_reduction_without_rfactor(m, n):
    """Each of 32 threads reduces its share of a row, then they combine (warp shuffles)."""
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n))
    B = te.compute((m,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, _ = s[B].split(s[B].op.reduce_axis[0], nparts=32)
    s[B].bind(ko, te.thread_axis((0, 32), "threadIdx.x"))
    xo, xi = s[B].split(s[B].op.axis[0], factor=4)
    s[B].bind(xi, te.thread_axis((0, 4), "threadIdx.y"))
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    a = random_data((m, n), "float32", RNG)
    b = simulate(s, [A, B], [a], [(m,)])
    np.testing.assert_allclose(b, a.max(1), rtol=1e-6)
    shuffles = []
    for kern in tvm.lower(s, [A, B], target="cuda").device_split.kernels:
        post_order_visit(kern.body, lambda x: shuffles.append(x) if isinstance(x, Call)
                         and x.op == "tvm_warp_shuffle_down" else None)
    assert shuffles


def test_warp_reduction_of_a_tuple_reducer():
    add_mul = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] * y[1]),
                              lambda t0, t1: (tvm.tir.const(0, t0), tvm.tir.const(1, t1)), name="add_mul")
    m, n = 16, 256
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: add_mul((A0[i, k], A1[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    ko, _ = s[T0].split(k, nparts=32)
    xo, xi = s[T0].split(s[T0].op.axis[0], factor=2)
    s[T0].bind(ko, te.thread_axis((0, 32), "threadIdx.x"))
    s[T0].bind(xi, te.thread_axis((0, 2), "threadIdx.y"))
    s[T0].bind(xo, te.thread_axis("blockIdx.x"))
    a0 = random_data((m, n), "float32", RNG)
    a1 = RNG.uniform(0.99, 1.01, (m, n)).astype("float32")
    t0, t1 = simulate(s, [A0, A1, T0, T1], [a0, a1], [(m,), (m,)])
    np.testing.assert_allclose(t0, a0.sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(t1, np.prod(a1.astype("float64"), axis=1), rtol=1e-4)


def test_scan_then_a_compute_over_its_result():
    m, n = te.size_var("m"), te.size_var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i])
    scan = tvm.te.scan(init, update, state)
    res = te.compute((m, n), lambda i, j: scan[i, j])
    s = te.create_schedule(res.op)
    for T, axis in ((init, init.op.axis[1]), (update, update.op.axis[1]), (res, res.op.axis[1])):
        bind_1d(s, T, axis, 64)
    x = random_data((6, 150), "float32", RNG)
    y = simulate(s, [X, res], [x], [(6, 150)])
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-5)
