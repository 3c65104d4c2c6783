"""GPU lowering bugs the random-schedule fuzzer found (``python -m tvmlab.testing.fuzz --target cuda``),
each reduced to a small schedule, built for CUDA and run on the thread-level simulator against numpy:
no race, no out-of-bounds access, no read of uninitialized memory."""
import numpy as np

import tvmlab as tvm
from tvmlab import te
from tvmlab.ir import stmt as S
from tvmlab.ir.functor import post_order_visit
from tvmlab.testing import poison, random_data

RNG = np.random.default_rng(11)


def run(s, args, inputs, out_dtype="float32"):
    """Build for CUDA, simulate (raising on any finding) and return the output."""
    f = tvm.build(s, args, "cuda")
    out = poison(np.empty([int(d) for d in args[-1].shape], out_dtype))
    tvm.testing.simulate(f, *inputs, out)
    return out


def allocations(s, args):
    found = {}
    for k in tvm.lower(s, args, target="cuda").device_split.kernels:
        post_order_visit(k.body, lambda n: found.__setitem__(n.buffer_var.name, int(n.extents[0]))
                         if isinstance(n, S.Allocate) else None)
    return found


def test_fused_producer_tile_stays_inside_the_tensor():
    """T0 computed per block of 4 rows (5 rows in all) with its axes fused: the last block's tile
    runs past the tensor, and every row of it must be guarded, not only the fused axis."""
    A = te.placeholder((5, 7), name="A")
    T0 = te.compute((5, 7), lambda i, j: A[i, j] * 2.0, name="T0")
    T1 = te.compute((5, 7), lambda i, j: T0[i, j] + 1.0, name="T1")
    s = te.create_schedule(T1.op)
    bo, bi = s[T1].split(T1.op.axis[0], factor=4)
    s[T1].bind(bo, te.thread_axis("blockIdx.x"))
    s[T1].bind(bi, te.thread_axis("threadIdx.x"))
    s[T0].compute_at(s[T1], bo)
    f = s[T0].fuse(*s[T0].op.axis)
    _, t = s[T0].split(f, factor=4)
    s[T0].bind(t, te.thread_axis("threadIdx.x"))
    a = random_data((5, 7), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, T1], [a]), a * 2 + 1, rtol=1e-6)


def test_shared_read_in_a_reduction_condition_waits_for_the_copy():
    """The ``where`` of a reduction reads the shared copy that the block fetched together: the
    condition's read needs the barrier after the copy as the body's reads do."""
    n, m = 12, 16
    A = te.placeholder((n, m), name="A")
    W = te.placeholder((m,), name="W")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=W[(k + i) % m] > 0.0), name="B")
    s = te.create_schedule(B.op)
    bo, bi = s[B].split(B.op.axis[0], factor=4)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.x"))
    WS = s.cache_read(W, "shared", [B])
    s[WS].compute_at(s[B], bo)
    _, t = s[WS].split(WS.op.axis[0], factor=4)
    s[WS].bind(t, te.thread_axis("threadIdx.x"))
    a, w = random_data((n, m), "float32", RNG), random_data((m,), "float32", RNG)
    mask = w[(np.arange(m)[None, :] + np.arange(n)[:, None]) % m] > 0
    np.testing.assert_allclose(run(s, [A, W, B], [a, w]), np.where(mask, a, 0).sum(1), rtol=1e-5, atol=1e-5)


def test_each_virtual_thread_reduces_across_threads_on_its_own():
    A = te.placeholder((4, 20), name="A")
    k = te.reduce_axis((0, 20), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(k, factor=4)
    BF = s.rfactor(B, ki)
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.y"))
    io, ii = s[B].split(s[B].op.axis[0], factor=2)
    s[B].bind(io, te.thread_axis("blockIdx.x"))
    s[B].bind(ii, te.thread_axis("vthread"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    a = random_data((4, 20), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, B], [a]), a.max(1))


def test_stage_at_the_thread_bound_reduce_axis_stays_inside_the_serial_one():
    """Leaves (i, k1, k2 on threadIdx.x): the local copy computed at k2 reads the shared tile
    computed at k1, so it runs inside k1's loop although k2's threads enclose the serial loop."""
    A = te.placeholder((6, 5, 8), name="A")
    k1, k2 = te.reduce_axis((0, 5), name="k1"), te.reduce_axis((0, 8), name="k2")
    B = te.compute((6,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(k2, te.thread_axis("threadIdx.x"))
    AS = s.cache_read(A, "shared", [B])
    AL = s.cache_read(AS, "local", [B])
    s[AS].compute_at(s[B], k1)
    s[AL].compute_at(s[B], k2)
    s[AS].bind(s[AS].op.axis[2], te.thread_axis("threadIdx.x"))
    a = random_data((6, 5, 8), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, B], [a]), a.sum((1, 2)), rtol=1e-5, atol=1e-5)


def test_shared_tile_inside_a_virtual_threads_loop_covers_every_virtual_thread():
    """C's local tile (3 columns per virtual thread) is computed at the vthread axis; the shared
    copy of A made inside its column loop must hold the columns of all four virtual threads."""
    A = te.placeholder((24, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    C = te.compute((8, 24), lambda i, j: te.sum(A[j, k] * (i + 1).astype("float32"), axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    jo, ji = s[C].split(C.op.axis[1], factor=12)
    jv, jt = s[C].split(ji, nparts=4)
    s[C].reorder(jo, C.op.axis[0], jv, jt)
    s[C].bind(jo, te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.y"))
    s[C].bind(jv, te.thread_axis("vthread"))
    s[CL].compute_at(s[C], jv)
    AS = s.cache_read(A, "shared", [CL])
    s[AS].compute_at(s[CL], CL.op.reduce_axis[0])
    # one tile with the rows of all four virtual threads (10, from this one's first), not four
    assert allocations(s, [A, C])["A.shared"] == 10
    a = random_data((24, 5), "float32", RNG)
    want = np.arange(1, 9, dtype="float32")[:, None] * a.sum(1)[None, :]
    np.testing.assert_allclose(run(s, [A, C], [a]), want, rtol=1e-5)


def test_clipped_shared_tile_is_never_longer_than_the_tensor():
    """Rows 24 per block over threadIdx.y, but the tensor has 6: the shared copy computed inside
    each thread's serial loop holds at most 6 elements, not the unclipped 22."""
    A = te.placeholder((6,), name="A")
    T = te.compute((6,), lambda i: A[i] * 3.0, name="T")
    s = te.create_schedule(T.op)
    bo, rest = s[T].split(T.op.axis[0], factor=24)
    ty, j = s[T].split(rest, nparts=8)
    s[T].bind(bo, te.thread_axis("blockIdx.x"))
    s[T].bind(ty, te.thread_axis("threadIdx.y"))
    AS = s.cache_read(A, "shared", [T])
    s[AS].compute_at(s[T], j)
    _, t = s[AS].split(AS.op.axis[0], factor=8)
    s[AS].bind(t, te.thread_axis("threadIdx.y"))
    assert allocations(s, [A, T])["A.shared"] <= 6
    a = random_data((6,), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, T], [a]), a * 3, rtol=1e-6)


def test_virtual_threads_keep_their_own_partial_sums_when_only_a_guard_tells_them_apart():
    """Rows (3, over 2 virtual threads) do not enter the summand, only the guard row < 3: each
    virtual thread still needs its own accumulator, or the second adds onto the first's."""
    A = te.placeholder((4, 5), name="A")
    r = te.reduce_axis((0, 5), name="r")
    B = te.compute((3, 4), lambda i, j: te.sum(A[j, r], axis=r), name="B")
    s = te.create_schedule(B.op)
    ro, _ = s[B].split(r, nparts=8)
    s[B].bind(ro, te.thread_axis("threadIdx.x"))
    vo, _ = s[B].split(B.op.axis[0], nparts=2)
    s[B].bind(vo, te.thread_axis("vthread"))
    a = random_data((4, 5), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, B], [a]), np.tile(a.sum(1), (3, 1)), rtol=1e-5, atol=1e-5)


def _reduce_inside_consumer(predicate):
    """B reduced across threadIdx.x (rfactor) inside each threadIdx.y of its elementwise reader C."""
    m, n = 10, 37
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    C = te.compute((m,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    bx, ty = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    _, ki = s[B].split(k, factor=8)
    BF = s.rfactor(B, ki)
    s[B].compute_at(s[C], ty)
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    if predicate:       # a thread axis of its own, as a replayed trace makes it
        s[C].set_store_predicate(te.thread_axis("threadIdx.x").var.equal(0))
    a = random_data((m, n), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, C], [a]), a.sum(1) * 2, rtol=1e-5, atol=1e-5)
    return s, [A, C]


def test_total_across_threads_is_in_every_thread_and_stored_once():
    """B is per-thread (local): every thread keeps the total (none reads an unwritten B), and C's
    stores, alike along threadIdx.x, get one writer."""
    s, args = _reduce_inside_consumer(predicate=False)
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "threadIdx.x) == 0" in src


def test_store_predicate_names_a_thread_bound_inside_by_its_tag():
    _reduce_inside_consumer(predicate=True)


def test_guard_is_evaluated_before_a_condition_that_reads_the_tile():
    """Element 25.. of the fused 5 x 5 axis in the last block is past the tensor: its part must
    test the bound before it reads W's shared tile (only elements inside were copied), so
    simplification keeps the order of ``bound && W.shared[...] ... >= 1``."""
    A = te.placeholder((8,), dtype="int32", name="A")
    W = te.placeholder((5, 5), dtype="int32", name="W")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((5, 5), lambda i, j: te.sum(A[k] * j, axis=k, where=(A[k] + W[i, j]) * 5 >= 1), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(k, te.thread_axis("threadIdx.y"))
    bo, rest = s[B].split(s[B].fuse(*B.op.axis), factor=16)
    s[B].split(rest, nparts=4)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    WS = s.cache_read(W, "shared", [B])
    s[WS].compute_at(s[B], bo)
    a, w = random_data((8,), "int32", RNG, -5, 5), random_data((5, 5), "int32", RNG, -5, 5)
    mask = (a[None, None, :] + w[:, :, None]) * 5 >= 1
    want = (np.where(mask, a[None, None, :], 0).sum(2) * np.arange(5)[None, :]).astype("int32")
    np.testing.assert_array_equal(run(s, [A, W, B], [a, w], "int32"), want)


def test_unrolled_double_buffered_loop_waits_between_its_iterations():
    """Unrolling the loop the shared copy is double-buffered at turns its next-tile writes into
    plain writes: the copy of tile 1 is read by other threads in the next (unrolled) iteration."""
    A = te.placeholder((32, 16), name="A")
    W = te.placeholder((16,), name="W")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((32,), lambda i: te.sum(A[i, k] * W[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    ko, _ = s[B].split(k, factor=8)
    WS = s.cache_read(W, "shared", [B])
    s[WS].compute_at(s[B], ko)
    _, t = s[WS].split(WS.op.axis[0], factor=32)
    s[WS].bind(t, te.thread_axis("threadIdx.x"))
    s[WS].double_buffer()
    s[B].pragma(ko, "auto_unroll_max_step", 64)
    a, w = random_data((32, 16), "float32", RNG), random_data((16,), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, W, B], [a, w]), a @ w, rtol=1e-5, atol=1e-5)


def test_reduction_across_threads_ignores_a_thread_axis_bound_only_inside_it():
    """C reduces across threadIdx.y; B, computed inside each of C's parts, reduces across
    threadIdx.x and keeps its total in threadIdx.x == 0.  C's shared tree is written by that
    thread alone (not by every threadIdx.x into the same slots)."""
    A = te.placeholder((6, 3, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((6, 3), lambda i, j: te.sum(A[i, j, k], axis=k), name="B")
    j = te.reduce_axis((0, 3), name="j")
    C = te.compute((6,), lambda i: te.max(B[i, j] - 1.0, axis=j), name="C")
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(s[C].op.reduce_axis[0], te.thread_axis("threadIdx.y"))
    _, ki = s[B].split(k, factor=4)
    BF = s.rfactor(B, ki)
    s[B].compute_at(s[C], s[C].op.reduce_axis[0])
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[B].set_store_predicate(te.thread_axis("threadIdx.x").var.equal(0))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    a = random_data((6, 3, 8), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, C], [a]), a.sum(2).max(1) - 1, rtol=1e-5, atol=1e-5)


def test_unrolled_loop_keeps_one_shared_tile():
    """Unrolling the loop a shared copy is computed in does not give each copy its own array."""
    A = te.placeholder((32, 16), name="A")
    W = te.placeholder((16,), name="W")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((32,), lambda i: te.sum(A[i, k] * W[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("threadIdx.x"))
    ko, _ = s[B].split(k, factor=4)
    WS = s.cache_read(W, "shared", [B])
    s[WS].compute_at(s[B], ko)
    _, t = s[WS].split(WS.op.axis[0], factor=32)
    s[WS].bind(t, te.thread_axis("threadIdx.x"))
    s[B].unroll(ko)
    (kernel,) = tvm.lower(s, [A, W, B], target="cuda").device_split.kernels
    assert [(v.name, n) for v, _, n in kernel.attrs["shared"]] == [("W.shared", 4)]
    a, w = random_data((32, 16), "float32", RNG), random_data((16,), "float32", RNG)
    np.testing.assert_allclose(run(s, [A, W, B], [a, w]), a @ w, rtol=1e-5, atol=1e-5)


def test_copy_inside_a_loop_that_starts_at_a_thread_dependent_row_gets_one_writer():
    """Every threadIdx.y computes its own rows of C's local tile in a loop starting at its row,
    and fetches the same shared element inside it: one thread stores it (the trip count is the
    same for all; only the start differs, and the store does not use the loop variable)."""
    A = te.placeholder((16,), name="A")
    W = te.placeholder((4, 16), name="W")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((8, 16), lambda i, j: te.sum(W[k, j] * A[15 - j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    ty, _ = s[C].split(C.op.axis[0], nparts=4)
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[CL].compute_at(s[C], ty)
    ko, _ = s[CL].split(CL.op.reduce_axis[0], factor=2)
    AS = s.cache_read(A, "shared", [CL])
    s[AS].compute_at(s[CL], ko)
    a, w = random_data((16,), "float32", RNG), random_data((4, 16), "float32", RNG)
    want = np.tile((w * a[::-1][None, :]).sum(0), (8, 1))
    np.testing.assert_allclose(run(s, [A, W, C], [a, w]), want, rtol=1e-5, atol=1e-5)


def test_shared_tile_read_through_a_per_thread_stage_covers_every_thread():
    """T1 (local, at threadIdx.y) is computed for this thread's threadIdx.x column of T2, so its
    bounds hold threadIdx.x; T0's shared tile, computed per block, serves every column."""
    A = te.placeholder((3,), dtype="int32", name="A")
    T0 = te.compute((30, 2, 3), lambda i, j, k: i * A[k] + j, name="T0")
    r = te.reduce_axis((0, 3), name="r")
    T1 = te.compute((30, 2), lambda i, j: te.sum(T0[3 - j, j, r] + T0[i, j, r], axis=r), name="T1")
    T2 = te.compute((30, 2), lambda i, j: T1[i, j], name="T2")
    s = te.create_schedule(T2.op)
    bo, rest = s[T2].split(T2.op.axis[0], nparts=2)
    _, rest = s[T2].split(rest, nparts=4)
    ty, _ = s[T2].split(rest, nparts=4)
    s[T2].bind(bo, te.thread_axis("blockIdx.y"))
    s[T2].bind(ty, te.thread_axis("threadIdx.y"))
    s[T2].bind(T2.op.axis[1], te.thread_axis("threadIdx.x"))
    s[T1].compute_at(s[T2], ty)
    s[T0].compute_at(s[T2], bo)
    _, t = s[T0].split(s[T0].fuse(*T0.op.axis), factor=2)
    s[T0].bind(t, te.thread_axis("threadIdx.x"))
    a = random_data((3,), "int32", RNG, -5, 5)
    t0 = np.arange(30)[:, None, None] * a[None, None, :] + np.arange(2)[None, :, None]
    want = (t0[3 - np.arange(2), np.arange(2)].sum(-1)[None, :] + t0.sum(-1)).astype("int32")
    np.testing.assert_array_equal(run(s, [A, T2], [a], "int32"), want)
