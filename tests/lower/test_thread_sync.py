"""Barrier placement for shared memory: uniform barriers only, one per hand-off, checked at build time.

The GEMM schedule is Apache TVM's integration test (a local cache_write stage, shared copies
computed at the reduction loop, each copy bound to threadIdx.y/x with ``nparts`` splits, double
buffering).  Kernels run for real as OpenGL compute shaders (Mesa's llvmpipe here), where
barriers and shared memory are the same as CUDA's.
"""
import contextlib

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import BuildError, DivergentBarrierError, LoweringError
from tvmlab.ir import stmt as S
from tvmlab.ir.functor import post_order_visit
from tvmlab.lower.thread_sync import check_uniform_barriers, is_barrier


def gemm(n, transposed_a=False, double_buffer=True):
    """TVM's test_gemm schedule; with ``transposed_a`` A is read as A[k, i], so each shared tile of
    A is one row that only one thread of the 8x8 block copies (a loop under a thread guard)."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    if transposed_a:
        C = te.compute((n, n), lambda ii, jj: te.sum(A[k, ii] * B[jj, k], axis=k), name="CC")
    else:
        C = te.compute((n, n), lambda ii, jj: te.sum(A[ii, k] * B[jj, k], axis=k), name="CC")
    s = te.create_schedule(C.op)
    num_thread, block_factor = 8, 64
    CC = s.cache_write(C, "local")
    AA = s.cache_read(A, "shared", [CC])
    BB = s.cache_read(B, "shared", [CC])
    by, yi = s[C].split(C.op.axis[0], factor=block_factor)
    bx, xi = s[C].split(C.op.axis[1], factor=block_factor)
    s[C].reorder(by, bx, yi, xi)
    s[C].bind(by, te.thread_axis("blockIdx.y"))
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    ty, yi = s[C].split(yi, nparts=num_thread)
    tx, xi = s[C].split(xi, nparts=num_thread)
    s[C].reorder(ty, tx, yi, xi)
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    yo, xo = CC.op.axis
    s[CC].reorder(k, yo, xo)
    s[CC].compute_at(s[C], tx)
    s[AA].compute_at(s[CC], k)
    s[BB].compute_at(s[CC], k)
    for T in (AA, BB):
        if double_buffer:
            s[T].double_buffer()
        ty, xi = s[T].split(s[T].op.axis[0], nparts=num_thread)
        tx, xi = s[T].split(xi, nparts=num_thread)
        s[T].bind(ty, te.thread_axis("threadIdx.y"))
        s[T].bind(tx, te.thread_axis("threadIdx.x"))
    ref = (lambda a, b: a.T @ b.T) if transposed_a else (lambda a, b: a @ b.T)
    return s.normalize(), [A, B, C], ref


def kernel_of(s, args):
    (k,) = tvm.lower(s, args, target="cuda").device_split.kernels
    return k


def divergent_barriers(kernel):
    """Barriers under an `if` or in a loop whose condition/trip count mentions threadIdx."""
    bad = []

    def thread_dependent(e):
        return any(getattr(v, "name", "").startswith("threadIdx") for v in _vars(e))

    def visit(n):
        if isinstance(n, S.IfThenElse) and thread_dependent(n.condition):
            post_order_visit(n, lambda x: bad.append(x) if is_barrier(x) else None)
        if isinstance(n, S.For) and thread_dependent(n.extent):
            post_order_visit(n, lambda x: bad.append(x) if is_barrier(x) else None)
    post_order_visit(kernel.body, visit)
    return bad


def _vars(e):
    from tvmlab.ir.functor import collect_vars
    return collect_vars(e)


def barriers_in_loop(kernel, name):
    loops = []
    post_order_visit(kernel.body, lambda n: loops.append(n) if isinstance(n, S.For)
                     and n.loop_var.name == name else None)
    (loop,) = loops
    found = []
    post_order_visit(loop.body, lambda x: found.append(x) if is_barrier(x) else None)
    return found


@pytest.mark.parametrize("transposed_a", [False, True])
@pytest.mark.parametrize("n", [64, 100])
def test_gemm_barriers_are_uniform_and_one_per_iteration(n, transposed_a):
    s, args, _ = gemm(n, transposed_a)
    k = kernel_of(s, args)
    check_uniform_barriers(k)
    assert divergent_barriers(k) == []
    # double buffering: the next tile is written while this one is read, so one barrier per iteration
    assert len(barriers_in_loop(k, "k")) == 1
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()     # NVRTC compiles it
    assert src.count("__syncthreads()") == 2                                 # before the loop, in it


def test_cooperative_copy_loops_need_no_barrier_inside():
    """A fused copy loop writes element ``outer * threads + thread`` (its tensor's digits put back together):
    no two threads or iterations write one element, so the copies need one barrier after them, not one
    per iteration."""
    from tvmlab import topi
    with tvm.target.Target("cuda"):
        X, W = te.placeholder((16, 64, 56, 56), name="X"), te.placeholder((64, 64, 3, 3), name="W")
        out = topi.nn.conv2d_nchw(X, W, 1, 1, 1)
        s = topi.cuda.schedule_conv2d_nchw([out])
    k = kernel_of(s, [X, W, out])
    assert divergent_barriers(k) == []
    src = tvm.build(s, [X, W, out], "cuda").imported_modules[0].get_source()
    assert src.count("__syncthreads()") == 2       # copies -> reads, reads -> next copies


def test_gemm_without_double_buffer_syncs_each_hand_off():
    s, args, _ = gemm(64, double_buffer=False)
    k = kernel_of(s, args)
    assert divergent_barriers(k) == []
    assert len(barriers_in_loop(k, "k")) == 2      # tiles written -> read, read -> overwritten


@pytest.mark.parametrize("transposed_a", [False, True])
@pytest.mark.parametrize("n", [64, 100])
def test_gemm_runs_on_opengl_compute(n, transposed_a):
    if not tvm.opengl(0).exist:
        pytest.skip("no OpenGL device (EGL) here")
    s, args, ref = gemm(n, transposed_a)
    f = tvm.build(s, args, "opengl -compute")
    rng = np.random.default_rng(n)
    a, b = (rng.uniform(-1, 1, (n, n)).astype("float32") for _ in range(2))
    dev = tvm.opengl(0)
    c = tvm.nd.array(np.full((n, n), np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), ref(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("transposed_a", [False, True])
@pytest.mark.parametrize("n", [64, 100])
def test_gemm_simulated_has_no_race_and_matches_numpy(n, transposed_a):
    s, args, ref = gemm(n, transposed_a)
    f = tvm.build(s, args, "cuda")
    rng = np.random.default_rng(n + transposed_a)
    a, b = (rng.uniform(-1, 1, (n, n)).astype("float32") for _ in range(2))
    c = np.full((n, n), np.nan, "float32")
    report = tvm.testing.simulate(f, a, b, c)            # raises on a race or a divergent barrier
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-4, atol=1e-4)
    launch = report.launches[0]            # barriers counted per block: before the k loop, one per iteration
    assert launch.barriers == int(np.prod(launch.grid)) * (1 + n)


def _extern(gen, n=64, threads=64):
    A = te.placeholder((n,), name="A")
    C = te.extern((n,), [A], lambda ins, outs: gen(ins, outs, threads), name="C")
    return te.create_schedule(C.op), [A, C]


def _block(ib, threads):
    tx = te.thread_axis("threadIdx.x")
    ib.scope_attr(te.thread_axis("blockIdx.x"), "thread_extent", 1)
    ib.scope_attr(tx, "thread_extent", threads)
    return tx.var


def test_guarded_hand_off_gets_its_barrier_outside_the_guard():
    """`if (tx < 50) { sh[tx] = a[tx]; c[tx] = sh[49 - tx]; }` needs a barrier between the two
    statements; it goes between two copies of the guard, never inside one."""
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (threads,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.if_scope(tx < 50):
            sh[tx] = a[tx] * 2.0
            c[tx] = sh[49 - tx]
        return ib.get()
    s, args = _extern(gen)
    k = kernel_of(s, args)
    assert divergent_barriers(k) == []
    body = []
    post_order_visit(k.body, lambda n: body.append(n) if isinstance(n, S.SeqStmt) and any(
        is_barrier(x) for x in n.seq) else None)
    kinds = ["sync" if is_barrier(x) else type(x).__name__ for x in body[0].seq]
    assert kinds == ["IfThenElse", "sync", "IfThenElse"]
    f = tvm.build(s, args, "cuda")
    a = np.random.default_rng(0).standard_normal(64).astype("float32")
    c = np.full(64, np.nan, "float32")
    tvm.testing.simulate(f, a, c)
    np.testing.assert_allclose(c[:50], 2 * a[:50][::-1], rtol=1e-6)
    assert np.isnan(c[50:]).all()


def test_same_thread_element_needs_no_barrier():
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (threads,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        sh[tx] = a[tx] + 1.0
        c[tx] = sh[tx] * 3.0
        return ib.get()
    s, args = _extern(gen)
    f = tvm.build(s, args, "cuda")
    assert "__syncthreads" not in f.imported_modules[0].get_source()
    a, c = np.arange(64, dtype="float32"), np.full(64, np.nan, "float32")
    tvm.testing.simulate(f, a, c)                        # no race: each thread its own element
    np.testing.assert_array_equal(c, (a + 1) * 3)


def test_hand_off_inside_a_thread_dependent_loop_is_refused():
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (threads,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, tx, name="i") as i:
            sh[tx] = a[i]
            c[tx] = sh[(tx + 1) % threads]
        return ib.get()
    s, args = _extern(gen)
    with pytest.raises(LoweringError, match=r"trip count .*differs between threads"):
        tvm.lower(s, args, target="cuda")


@pytest.mark.parametrize("where", ["if", "loop"])
def test_hand_written_divergent_barrier_is_refused_at_build(where):
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        sync = tvm.tir.call_intrin("void", "tvm_storage_sync", "shared")
        if where == "if":
            with ib.if_scope(tx < 4):
                c[tx] = a[tx]
                ib.emit(sync)
        else:
            with ib.for_range(0, tx, name="i") as i:
                c[tx] = a[i]
                ib.emit(sync)
        return ib.get()
    s, args = _extern(gen)
    with pytest.raises(DivergentBarrierError, match="threadIdx") as e:
        tvm.build(s, args, "cuda")
    assert isinstance(e.value, BuildError)
    assert ("threadIdx.x < 4" if where == "if" else "trip count") in str(e.value)


def test_writes_of_one_element_by_two_threads_are_ordered():
    """Iteration j of the loop writes sh[(tx + j) % 64]: the element thread tx writes at j = 0
    is thread tx - 1's at j = 1, and without a barrier between the iterations the older value could
    land last.  Within one iteration each element still has one writer, so no barrier is needed
    between the statements of the body."""
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (threads,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, 2, name="j") as j:
            sh[(tx + j) % threads] = a[tx] + tvm.tir.Cast("float32", j)
        c[tx] = sh[tx]
        return ib.get()
    s, args = _extern(gen)
    k = kernel_of(s, args)
    assert len(barriers_in_loop(k, "j")) == 1
    f = tvm.build(s, args, "cuda")
    a, c = np.arange(64, dtype="float32"), np.full(64, np.nan, "float32")
    tvm.testing.simulate(f, a, c)                        # no race
    np.testing.assert_array_equal(c, np.roll(a, 1) + 1)


@pytest.mark.parametrize("pitch,one_to_one", [(17, True), (16, True), (8, False)])
def test_copies_stored_transposed_or_padded_need_no_barrier_inside(monkeypatch, pitch, one_to_one):
    """A copy loop over ``f = j * 40 + tx`` (160 elements) storing element ``f`` transposed into rows of
    ``pitch`` words, ``sh[f % 16 * pitch + f // 16]`` (as ``transform_layout`` and ``storage_align``
    leave a cooperative copy): with rows of 16 words or more each element has one writer in the whole
    loop, so the copy needs no barrier between its iterations; rows of 8 words let ``f = 1`` and
    ``f = 128`` (other iterations, other threads) write one element, and the loop keeps its barrier."""
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (16 * pitch + 16,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, 4, name="j") as j:
            f = j * threads + tx
            sh[f % 16 * pitch + f // 16] = a[f]
        with ib.for_range(0, 4, name="r") as r:
            f = r * threads + tx
            c[f] = sh[f % 16 * pitch + f // 16]
        return ib.get()
    s, args = _extern(gen, n=160, threads=40)
    k = kernel_of(s, args)
    assert len(barriers_in_loop(k, "j")) == (0 if one_to_one else 1)
    from tvmlab.lower import thread_sync
    monkeypatch.setattr(thread_sync, "PROVE_ONE_TO_ONE", False)     # the rule before: a barrier per iteration
    assert len(barriers_in_loop(kernel_of(*_extern(gen, n=160, threads=40)), "j")) == 1
    monkeypatch.setattr(thread_sync, "PROVE_ONE_TO_ONE", True)
    f = tvm.build(s, args, "cuda")
    a, c = np.arange(160, dtype="float32") + 1, np.full(160, np.nan, "float32")
    tvm.testing.simulate(f, a, c)                        # no race
    if one_to_one:
        np.testing.assert_array_equal(c, a)


def test_an_offset_in_the_copied_number_widens_its_top_digit():
    """``f = j + 2`` runs over [2, 6], so ``f // 3`` reaches 2: in ``sh[tx * 8 + f // 3 * 5 + f % 3]``
    thread 0 at j = 4 and thread 1 at j = 0 both write sh[10].  The offset counts in the digit's range,
    and the loop keeps its barrier."""
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (32,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, 5, name="j") as j:
            f = j + 2
            sh[tx * 8 + f // 3 * 5 + f % 3] = a[tx * 5 + j]
        with ib.for_range(0, 5, name="r") as r:
            f = r + 2
            c[tx * 5 + r] = sh[tx * 8 + f // 3 * 5 + f % 3]
        return ib.get()
    s, args = _extern(gen, n=10, threads=2)
    assert len(barriers_in_loop(kernel_of(s, args), "j")) == 1
    f = tvm.build(s, args, "cuda")
    tvm.testing.simulate(f, np.arange(10, dtype="float32") + 1, np.full(10, np.nan, "float32"))   # no race


def _shifted(pitch, lanes, threads, iters=4):
    """A loop whose iteration j copies into ``sh[j * pitch + g]`` and back out, each thread its own element:
    ``g = (tx + 2) // 3 * 5 + (tx + 2) % 3`` (2, 5, 6, 7 and 10 for 5 threads) for scalars, or the lanes
    ``tx * lanes + 0 .. lanes - 1`` of a vector access."""
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (iters * pitch + 16,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, iters, name="j") as j:
            if lanes == 1:
                at = j * pitch + (tx + 2) // 3 * 5 + (tx + 2) % 3
                sh[at] = a[j * threads + tx]
                c[j * threads + tx] = sh[at]
            else:
                f = (j * threads + tx) * lanes
                at = tvm.tir.Ramp(j * pitch + tx * lanes, tvm.tir.const(1, "int32"), lanes)
                ib.emit(S.Store(sh.asobject(), a.vload(f, lanes), at))
                ib.emit(S.Store(c.asobject(), tvm.tir.Load(f"float32x{lanes}", sh.asobject(), at),
                                tvm.tir.Ramp(f, tvm.tir.const(1, "int32"), lanes)))
        return ib.get()
    n = iters * threads * lanes
    return _extern(gen, n=n, threads=threads), n


@pytest.mark.parametrize("pitch,lanes,threads,synced", [(8, 1, 5, True), (13, 1, 5, False),
                                                        (7, 2, 4, True), (8, 2, 4, False)])
def test_a_shifted_index_is_each_threads_own_only_where_the_threads_fit_in_the_shift(pitch, lanes, threads,
                                                                                      synced):
    """``sh[j * pitch + g]`` with ``g`` spanning ``pitch`` or more (8 for the scalar ``g``, 7 for 4 threads
    of 2 lanes) lets another thread at iteration j + 1 overwrite an element this thread read at j: with
    pitch 8, thread 0 writes sh[10] at j = 1 that thread 4 read at j = 0, so the iterations need a
    barrier between them.  A shift beyond the span keeps each iteration's elements apart and needs none
    (for the scalar ``g``, beyond 12: its terms bounded one by one)."""
    (s, args), n = _shifted(pitch, lanes, threads)
    assert len(barriers_in_loop(kernel_of(s, args), "j")) == int(synced)
    f = tvm.build(s, args, "cuda")
    a, c = np.arange(n, dtype="float32"), np.full(n, np.nan, "float32")
    tvm.testing.simulate(f, a, c)                        # raises on a race
    np.testing.assert_array_equal(c, a)


@pytest.mark.parametrize("n,synced", [(1024, False), (1100, True), (None, True)])
def test_a_copy_guard_bounds_how_far_the_shifted_part_reaches(n, synced):
    """A copy of element ``F = o * 112 + tx`` stored transposed into rows of 68 words,
    ``sh[tx % 16 * 68 + o * 7 + tx // 16]`` (``o * 7 + tx // 16`` is ``F // 16``), as a conv's
    weight copy leaves it: over the whole loop ``F // 16`` reaches 69, so ``F = 1`` (o = 0) and
    ``F = 1088`` (o = 9) meet at sh[68] and the iterations need a barrier between them (the later write
    wins); the copy's guard ``F < 1024`` keeps ``F // 16`` below 64 and each element one thread's."""
    def gen(ins, outs, threads):
        ib = tvm.tir.ir_builder.create()
        tx = _block(ib, threads)
        sh = ib.allocate("float32", (16 * 68 + 8,), name="sh", scope="shared")
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        for name in ("o", "r"):
            with ib.for_range(0, 10, name=name) as o:
                at = tx % 16 * 68 + o * 7 + tx // 16
                with ib.if_scope(o * threads + tx < n) if n else contextlib.nullcontext():
                    if name == "o":
                        sh[at] = a[o * threads + tx]
                    else:
                        c[o * threads + tx] = sh[at]
        return ib.get()
    s, args = _extern(gen, n=1120, threads=112)
    assert len(barriers_in_loop(kernel_of(s, args), "o")) == int(synced)
    f = tvm.build(s, args, "cuda")
    a, c = np.arange(1120, dtype="float32"), np.full(1120, np.nan, "float32")
    tvm.testing.simulate(f, a, c)                        # raises on a race
    if not synced:
        np.testing.assert_array_equal(c[:n], a[:n])
