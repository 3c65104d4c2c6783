"""storage_align, double_buffer, prefetch, scope tags, create_group, interleaved vthreads:
each checked against numpy on random data, recorded in the trace, refused clearly on misuse."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import LoweringError, ScheduleError
from tvmlab.schedule.trace import Trace

import gpu_programs


def _check(s, args, ref, target="llvm"):
    f = tvm.build(s, args, target=target)
    rng = np.random.default_rng(1)
    ins = [rng.uniform(-1, 1, size=[int(d) for d in t.shape]).astype(t.dtype) for t in args[:-1]]
    out = tvm.nd.array(np.full([int(d) for d in args[-1].shape], np.nan, args[-1].dtype))
    f(*[tvm.nd.array(x) for x in ins], out)
    np.testing.assert_allclose(out.numpy(), ref(*ins), rtol=1e-5, atol=1e-5)
    return f


def _replays(s, outputs, args):
    """The trace survives JSON and as_python, and lowers to the same AST3."""
    want = str(tvm.lower(s, args))
    s2 = Trace.from_json(s.trace.to_json()).replay(outputs)
    assert str(tvm.lower(s2, args)) == want
    ns = {"te": te, "tvmlab": tvm}
    for st in s.stages:
        ns[st.origin_op.name] = st.origin_op.output(0)
    exec(s.trace.as_python(), ns)
    assert str(tvm.lower(ns["s"], args)) == want


def _chain(n, m):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1, name="C")
    return A, B, C


# ------------------------------------------------------------------ storage_align


def test_storage_align_pads_the_row_stride():
    A, B, C = _chain(37, 29)
    s = te.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 16, 3)
    text = str(tvm.lower(s, [A, C]))
    assert "B[i * 35 + j]" in text            # 29 -> 35 = 2 * 16 + 3
    assert "T.allocate([1295]" in text        # 37 rows of 35
    _check(s, [A, C], lambda a: a * 2 + 1)
    _replays(s, [C.op], [A, C])


def test_storage_align_symbolic_shape():
    n, m = te.var("n"), te.var("m")
    A, B, C = _chain(n, m)
    s = te.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 8, 1)
    f = tvm.build(s, [A, C])
    for shape in [(5, 13), (3, 8), (4, 1)]:
        a = np.random.uniform(size=shape).astype("float32")
        c = tvm.nd.array(np.full(shape, np.nan, "float32"))
        f(tvm.nd.array(a), c)
        np.testing.assert_allclose(c.numpy(), a * 2 + 1)


def test_storage_align_of_a_shared_tile_compiles_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    A, B, C = _chain(64, 64)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [B])
    bx, tx = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[B], bx)
    s[AA].bind(AA.op.axis[0], te.thread_axis("threadIdx.x"))
    s[AA].storage_align(AA.op.axis[0], 32, 1)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    mod = tvm.build(s, [A, C], target="cuda")
    src = mod.imported_modules[0].get_source()
    assert "__shared__ __align__(16) float A_shared[1040]" in src.replace(".", "_")   # 16 rows of 65
    a = np.random.default_rng(4).standard_normal((64, 64)).astype("float32")
    c = np.full((64, 64), np.nan, "float32")
    tvm.testing.simulate(mod, a, c)                       # the padded tile, thread by thread
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_transform_layout_stores_a_tensor_transposed():
    """A permuted layout changes where elements live, not what is computed; the loops follow it, it
    combines with storage_align (padding the new rows) and it replays from the trace."""
    A = te.placeholder((5, 3, 7), name="A")
    B = te.compute((5, 3, 7), lambda i, j, k: A[i, j, k] * 2, name="B")
    C = te.compute((5, 3, 7), lambda i, j, k: B[i, j, k] + 1, name="C")
    s = te.create_schedule(C.op)
    i, j, k = B.op.axis
    assert s[B].transform_layout(lambda i, j, k: [k, i, j]) == [k, i, j]
    assert s[B].leaf_iter_vars == [k, i, j]
    s[B].storage_align(i, 8, 1)                     # i's rows (of 3) padded to 9: k's stride is 5 x 9
    text = str(tvm.lower(s, [A, C], simple_mode=True))
    assert "B = T.allocate([315]" in text and "B[k * 45 + i * 9 + j]" in text
    _check(s, [A, C], lambda a: a * 2 + 1)
    _replays(s, [C], [A, C])
    # a second permutation composes with the first; the identity in the end stores it row-major again
    s[B].transform_layout(lambda k, i, j: [i, j, k])
    assert s[B].layout_order is None
    _check(s, [A, C], lambda a: a * 2 + 1)


def test_transform_layout_of_a_double_buffered_shared_copy_runs_thread_by_thread():
    """The shared kernel tile of a GPU product stored column-major, padded, double buffered: fetched in
    the source's order (coalesced), read as one float4 per thread, correct on the simulator."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    n, k = 32, 64
    A = te.placeholder((n, k), name="A")
    W = te.placeholder((n, k), name="W")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, r] * W[j, r], axis=r), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    WW = s.cache_read(W, "shared", [CL])
    i, j = s[C].op.axis
    jo, ji = s[C].split(j, factor=4)
    s[C].bind(i, te.thread_axis("blockIdx.x"))
    s[C].bind(jo, te.thread_axis("threadIdx.x"))
    s[C].unroll(ji)
    s[CL].compute_at(s[C], jo)
    ro, ri = s[CL].split(s[CL].op.reduce_axis[0], factor=8)
    s[CL].reorder(ro, ri, *s[CL].op.axis)
    s[WW].compute_at(s[CL], ro)
    jw, rw = s[WW].op.axis
    s[WW].transform_layout(lambda j, r: [r, j])
    s[WW].reorder(jw, rw)
    s[WW].storage_align(rw, 32, 4)
    s[WW].double_buffer()
    fused = s[WW].fuse(jw, rw)
    _, t = s[WW].split(fused, factor=8)
    s[WW].bind(t, te.thread_axis("threadIdx.x"))
    mod = tvm.build(s, [A, W, C], target="cuda")
    assert "ld.shared.v4.f32" in mod.imported_modules[0].get_source("ptx")
    rng = np.random.default_rng(2)
    a, w = rng.standard_normal((n, k)).astype("float32"), rng.standard_normal((n, k)).astype("float32")
    c = np.full((n, n), np.nan, "float32")
    tvm.testing.simulate(mod, a, w, c)
    np.testing.assert_allclose(c, a @ w.T, rtol=1e-4, atol=1e-4)


def test_transform_layout_misuse_is_refused_unchanged():
    A, B, C = _chain(8, 8)
    s = te.create_schedule(C.op)
    n = len(s.trace)
    with pytest.raises(ScheduleError, match="in a new order, each once"):
        s[B].transform_layout(lambda i, j: [i, i])
    with pytest.raises(ScheduleError, match="permuting dimensions only"):
        s[B].transform_layout(lambda i, j: [j // 4, i, j % 4])
    with pytest.raises(ScheduleError, match="must take its 2 axes"):
        s[B].transform_layout(lambda i: [i])
    with pytest.raises(ScheduleError, match="expected a function"):
        s[B].transform_layout([1, 0])
    s[B].split(B.op.axis[0], factor=2)
    m = len(s.trace)
    with pytest.raises(ScheduleError, match="before splitting or fusing"):
        s[B].transform_layout(lambda i, j: [j, i])
    assert len(s.trace) == m == n + 1 and s[B].layout_order is None


def test_storage_align_misuse_is_refused_unchanged():
    A, B, C = _chain(8, 8)
    s = te.create_schedule(C.op)
    io, ii = s[B].split(B.op.axis[0], factor=2)
    n = len(s.trace)
    with pytest.raises(ScheduleError, match="not one of its tensor's dimensions"):
        s[B].storage_align(io, 8, 1)
    with pytest.raises(ScheduleError, match="offset 9 must be below factor 8"):
        s[B].storage_align(B.op.axis[1], 8, 9)
    with pytest.raises(ScheduleError, match="positive integer"):
        s[B].storage_align(B.op.axis[1], 0, 0)
    with pytest.raises(ScheduleError, match="placeholder"):
        s[A].storage_align(0, 8, 1)
    assert len(s.trace) == n and not s[B].attr(B.op.axis[1]).dim_align


# ------------------------------------------------------------------ scope tags


def test_scope_tags_behave_as_their_base_scope():
    A, B, C = _chain(13, 7)
    s = te.create_schedule(C.op)
    s[B].set_scope("global:mytag")
    AL = s.cache_read(A, "local.acc", [B])
    s[AL].compute_at(s[B], B.op.axis[0])
    mod = tvm.lower(s, [A, C])
    assert '"global:mytag"' in str(mod.history["AST2"]) and '"local.acc"' in str(mod.history["AST2"])
    _check(s, [A, C], lambda a: a * 2 + 1)
    _replays(s, [C.op], [A, C])
    with pytest.raises(ScheduleError, match="unknown storage scope 'texture'"):
        s[B].set_scope("texture")
    with pytest.raises(ScheduleError, match="unknown storage scope 'shared:'"):
        s.cache_read(A, "shared:", [s[B].op])


def test_shared_tag_on_the_gpu_is_shared_memory():
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    A, B, C = _chain(64, 32)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared:tile", [B])
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(B.op.axis[1], te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[B], B.op.axis[0])
    s[AA].bind(AA.op.axis[1], te.thread_axis("threadIdx.x"))
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    src = tvm.build(s, [A, C], target="cuda").imported_modules[0].get_source()
    assert "__shared__ __align__(16) float" in src and "__syncthreads()" in src


# ------------------------------------------------------------------ double_buffer


def _row_sums(N, K, factor):
    A = te.placeholder((N, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    AA = te.compute((N, K), lambda i, j: A[i, j] * 3, name="AA")
    C = te.compute((N,), lambda i: te.sum(AA[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=factor)
    s[AA].compute_at(s[C], ko)
    return A, AA, C, s


def test_double_buffer_computes_the_next_tile_ahead():
    A, AA, C, s = _row_sums(20, 45, 8)      # 45 = 5 * 8 + 5: a partial last tile
    s[AA].double_buffer()
    text = str(tvm.lower(s, [A, C], simple_mode=True))
    assert "T.allocate([16]" in text                  # two tiles of 8
    assert "(k.outer + 1) % 2 * 8" in text and "k.outer % 2 * 8" in text
    _check(s, [A, C], lambda a: (a * 3).sum(1))
    _replays(s, [C.op], [A, C])


def test_double_buffer_symbolic_and_partitioned():
    n, k = te.var("n"), te.var("k")
    A, AA, C, s = _row_sums(n, k, 4)
    s[AA].double_buffer()
    f = tvm.build(s, [A, C])
    for shape in [(3, 17), (2, 4), (5, 1)]:
        a = np.random.uniform(size=shape).astype("float32")
        c = tvm.nd.array(np.full(shape[:1], np.nan, "float32"))
        f(tvm.nd.array(a), c)
        np.testing.assert_allclose(c.numpy(), (a * 3).sum(1), rtol=1e-5)


def test_double_buffer_misuse():
    A, AA, C, s = _row_sums(8, 8, 4)
    with pytest.raises(ScheduleError, match="output"):
        s[C].double_buffer()
    s2 = te.create_schedule(C.op)
    s2[AA].compute_at(s2[C], C.op.axis[0])
    s2[C].parallel(C.op.axis[0])
    s2[AA].double_buffer()
    with pytest.raises(LoweringError, match="parallel"):
        tvm.lower(s2, [A, C])


# ------------------------------------------------------------------ prefetch


def test_prefetch_emits_llvm_prefetch_of_the_rows_ahead():
    A = te.placeholder((37, 100), name="A")
    C = te.compute((37, 100), lambda i, j: A[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].prefetch(A, C.op.axis[0], 2)
    text = str(tvm.lower(s, [A, C]))
    assert "T.prefetch(T.address_of(A[i * 100 + A.pf1 * 16 + 200])" in text
    f = _check(s, [A, C], lambda a: a * 2)
    assert "@llvm.prefetch" in f.get_source("ll")
    _replays(s, [C.op], [A, C])


def test_prefetch_misuse_is_refused():
    A = te.placeholder((8,), name="A")
    B = te.placeholder((8,), name="B")
    C = te.compute((8,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="does not read B"):
        s[C].prefetch(B, C.op.axis[0], 1)
    with pytest.raises(ScheduleError, match="non-negative integer"):
        s[C].prefetch(A, C.op.axis[0], -1)
    assert len(s.trace) == 0


# ------------------------------------------------------------------ interleaved virtual threads


def _vthread_matmul(n, m, K, gpu):
    A = te.placeholder((n, K), name="A")
    B = te.placeholder((K, m), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    by, yi = s[C].split(C.op.axis[0], factor=16)
    bx, xi = s[C].split(C.op.axis[1], factor=16)
    vy, ty = s[C].split(yi, nparts=2)
    vx, tx = s[C].split(xi, nparts=2)
    s[C].reorder(by, bx, vy, vx, ty, tx)
    s[C].bind(vy, te.thread_axis("vthread"))
    s[C].bind(vx, te.thread_axis("vthread"))
    if gpu:
        s[C].bind(by, te.thread_axis("blockIdx.y"))
        s[C].bind(bx, te.thread_axis("blockIdx.x"))
        s[C].bind(ty, te.thread_axis("threadIdx.y"))
        s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tx)
    return A, B, C, s


def _vthread_loops_inside(stmt, loop_name):
    """Names of the loops directly or indirectly inside the loop ``loop_name``."""
    from tvmlab.ir.functor import post_order_visit
    from tvmlab.ir.stmt import For
    found = []

    def visit(x):
        if isinstance(x, For) and x.loop_var.name == loop_name:
            post_order_visit(x.body, lambda y: found.append(y.loop_var.name) if isinstance(y, For) else None)
    post_order_visit(stmt, visit)
    return found


def test_vthreads_interleave_inside_the_reduction_loop_on_the_cpu():
    A, B, C, s = _vthread_matmul(32, 32, 24, gpu=False)
    mod = tvm.lower(s, [A, B, C])
    inner = _vthread_loops_inside(mod.history["inject_virtual_thread"].body, "k")
    assert sorted(n for n in inner if n.startswith("vthread")) == ["vthread", "vthread"]
    assert 'T.allocate([4], "float32", "local")' in str(mod.history["inject_virtual_thread"])
    _check(s, [A, B, C], lambda a, b: a @ b)


def test_vthreads_on_uneven_shapes_compute_the_right_answer_on_the_cpu():
    A, B, C, s = _vthread_matmul(37, 21, 5, gpu=False)
    _check(s, [A, B, C], lambda a, b: a @ b)


def test_vthreads_interleave_in_cuda_code():
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    A, B, C, s = _vthread_matmul(64, 64, 64, gpu=True)
    mod = tvm.build(s, [A, B, C], target="cuda")
    src = mod.imported_modules[0].get_source()
    assert "float C_local[4];" in src
    assert src.count("for (int k") == 1                 # one reduction loop ...
    body = src[src.index("for (int k"):]
    body = body[:body.index("}")]
    assert all(f"C_local[{v}] = C_local[{v}] +" in body for v in range(4))   # ... four accumulators in it
    assert mod.imported_modules[0].get_source("ptx")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((64, 64)).astype("float32"), rng.standard_normal((64, 64)).astype("float32")
    c = np.full((64, 64), np.nan, "float32")
    tvm.testing.simulate(mod, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ create_group


def _three(m, n):
    A = te.placeholder((m, n), name="A")
    x = te.compute((m, n), lambda i, j: A[i, j] * 2, name="x")
    x1 = te.compute(x.shape, lambda i, j: x[i, j] + 1, name="x1")
    x2 = te.compute(x.shape, lambda i, j: x1[i, j] * 3, name="x2")
    return A, x, x1, x2


def test_group_is_computed_at_the_consumer_loop():
    A, x, x1, x2 = _three(te.var("m"), te.var("n"))
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x1].group is g and s[x].group is g and g.num_child_stages == 2 and s[x2].group is None
    g.compute_at(s[x2], x2.op.axis[0])
    assert g.attach_stage is s[x2] and s[x].attach_stage is s[x2]
    bounds = tvm.schedule.bound.infer_bound(s)
    assert bounds[x.op.axis[0]].extent.value == 1 and bounds[x1.op.axis[0]].extent.value == 1
    f = tvm.build(s, [A, x2])
    for shape in [(5, 7), (1, 3)]:
        a = np.random.uniform(size=shape).astype("float32")
        c = tvm.nd.array(np.full(shape, np.nan, "float32"))
        f(tvm.nd.array(a), c)
        np.testing.assert_allclose(c.numpy(), (a * 2 + 1) * 3, rtol=1e-6)
    _replays(s, [x2.op], [A, x2])
    g.compute_root()
    assert s[x].attach_type == "root" and s[x1].attach_type == "root"
    a = np.random.uniform(size=(3, 4)).astype("float32")
    c = tvm.nd.array(np.full((3, 4), np.nan, "float32"))
    tvm.build(s, [A, x2])(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), (a * 2 + 1) * 3, rtol=1e-6)


def test_group_member_attached_inside_another_stays_there():
    A, x, x1, x2 = _three(12, 10)
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    s[x].compute_at(s[x1], x1.op.axis[1])
    yo, yi = s[x2].split(x2.op.axis[0], factor=5)      # 12 rows: an uneven split
    g.compute_at(s[x2], yo)
    assert s[x].attach_stage is s[x1] and s[x1].attach_stage is s[x2]
    _check(s, [A, x2], lambda a: (a * 2 + 1) * 3)
    _replays(s, [x2.op], [A, x2])


def test_nested_groups_and_group_errors():
    A, x, x1, x2 = _three(4, 4)
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    g2 = s.create_group(outputs=x1, inputs=x)
    assert g2.group is g1 and s[x1].group is g2 and s[x].group is g1
    n = len(s.trace)
    with pytest.raises(ScheduleError, match="reads nothing the group computes"):
        g2.compute_at(s[x], x.op.axis[0])
    with pytest.raises(ScheduleError, match="is in the group"):
        g1.compute_at(s[x1], x1.op.axis[0])
    s2 = te.create_schedule(x2.op)
    with pytest.raises(ScheduleError, match="output of the schedule"):
        s2.create_group(outputs=x2, inputs=x1, include_inputs=True).compute_at(s2[x1], x1.op.axis[0])
    with pytest.raises(ScheduleError, match="not among the group's inputs"):
        s2.create_group(outputs=x1, inputs=[])
    assert len(s.trace) == n and s[x].attach_type == "root"


# ------------------------------------------------------------------ TVM's looser rules


def test_compute_at_into_a_stage_that_reads_through_a_cache():
    A = te.placeholder((20, 30), name="A")
    X = te.compute((20, 30), lambda i, j: A[i, j] * 2, name="X")
    B = te.compute((20, 30), lambda i, j: X[i, j] + 1, name="B")
    s = te.create_schedule(B.op)
    XX = s.cache_read(X, "local", [B])
    s[XX].compute_at(s[B], B.op.axis[0])
    s[X].compute_at(s[B], B.op.axis[0])          # B reads X only through X.local
    assert "T.allocate([30]" in str(tvm.lower(s, [A, B]))
    _check(s, [A, B], lambda a: a * 2 + 1)
    _replays(s, [B.op], [A, B])


def _gpu_row_sums(N, K, scope):
    """Row sums, 16 rows per block, one row per thread, A staged through a double-buffered tile."""
    A = te.placeholder((N, K), name="A")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, scope, [C])
    bx, tx = s[C].split(C.op.axis[0], factor=16)
    ko, ki = s[C].split(k, factor=16)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[C], ko)
    s[AA].bind(s[AA].op.axis[0], te.thread_axis("threadIdx.x"))
    s[AA].double_buffer()
    return A, AA, C, s


def test_double_buffer_of_a_shared_tile_compiles_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (the cuda extra) is not installed")
    A, AA, C, s = _gpu_row_sums(64, 256, "shared")
    src = tvm.build(s, [A, C], target="cuda").imported_modules[0].get_source()
    assert "__shared__ __align__(16) float A_shared[512];" in src          # two tiles of 16 x 16
    assert "tvmlab_floormod((k_outer + 1), 2) * 256" in src and "tvmlab_floormod(k_outer, 2) * 256" in src
    assert src.count("__syncthreads()") >= 2


# ------------------------------------------------------------------ run on a GPU-style target (OpenGL compute)


def _gl_or_skip():
    from tvmlab.runtime import opengl_context as glc
    if not glc.available():
        pytest.skip(f"no OpenGL context: {glc.reason()}")
    return tvm.opengl(0)


def test_double_buffered_aligned_shared_tile_runs_on_opengl_compute():
    dev = _gl_or_skip()
    N, K = 64, 80                       # 80 = 5 tiles of 16
    A, AA, C, s = _gpu_row_sums(N, K, "shared:tile")
    s[AA].storage_align(AA.op.axis[0], 16, 1)
    text = str(tvm.lower(s, [A, C], simple_mode=True))
    assert 'T.allocate([544], "float32", "shared")' in text          # 2 tiles of 16 rows of 17
    assert "(k.outer + 1) % 2 * 272 + threadIdx.x_1 * 17" in text
    f = tvm.build(s, [A, C], target="opengl -compute")
    a = np.random.default_rng(5).uniform(-1, 1, (N, K)).astype("float32")
    c = tvm.nd.array(np.full((N,), np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), c)
    np.testing.assert_allclose(c.numpy(), a.sum(1), rtol=1e-5, atol=1e-5)


def test_interleaved_vthreads_run_on_opengl_compute():
    dev = _gl_or_skip()
    A, B, C, s = _vthread_matmul(40, 32, 20, gpu=True)     # 40 rows: a partial block of 16 x 16
    f = tvm.build(s, [A, B, C], target="opengl -compute")
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, (40, 20)).astype("float32")
    b = rng.uniform(-1, 1, (20, 32)).astype("float32")
    c = tvm.nd.array(np.full((40, 32), np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_a_failing_transaction_leaves_no_group_behind():
    A, x, x1, x2 = _three(4, 4)
    s = te.create_schedule(x2.op)
    steps = [{"primitive": "create_group", "outputs": ["x1"], "inputs": ["x"], "include_inputs": True},
             {"primitive": "group_compute_at", "group": 0, "parent": "x2", "scope": "nope"}]
    with pytest.raises(ScheduleError, match="nope"):
        with s._transaction():
            for st in steps:
                tvm.schedule.trace.apply_step(s, tvm.schedule.trace.Step(st))
    assert s.groups == [] and s[x].group is None and s[x].attach_type == "root" and len(s.trace) == 0


def test_storage_align_through_the_storage_flatten_pass():
    """As TVM's test_flatten_storage_align: rows of 16 padded to 17 (factor 2, offset 1)."""
    from tvmlab.driver.build_module import schedule_to_module
    A = te.placeholder((8, 16), name="A")
    A1 = te.compute((8, 16), lambda i, j: A[i, j], name="A1")
    A2 = te.compute((8, 16), lambda i, j: A1[i, j] + 3, name="A2")
    s = te.create_schedule(A2.op)
    s[A1].storage_align(A1.op.axis[0], 2, 1)
    mod = tvm.tir.transform.StorageFlatten(64)(schedule_to_module(s, [A, A2]))
    assert isinstance(mod["main"].body, tvm.tir.Allocate) and mod["main"].body.extents[0].value == 17 * 8
    _check(s, [A, A2], lambda a: a + 3)


def test_conv_tutorial_with_virtual_threads_runs_on_opengl_compute_and_compiles_for_cuda():
    s, (A, W, B), ref = gpu_programs.opt_conv_hwcn(4, 16, 64, 7)
    try:
        import cuda.bindings.nvrtc  # noqa: F401
        src = tvm.build(s, [A, W, B], "cuda").imported_modules[0].get_source()
        assert "float B_local[64];" in src        # 2 x 2 virtual threads, one accumulator tile each
    except ImportError:
        pass
    dev = _gl_or_skip()
    f = tvm.build(s, [A, W, B], "opengl -compute")
    rng = np.random.default_rng(8)
    a_np = rng.uniform(size=(7, 7, 16, 4)).astype("float32")
    w_np = rng.uniform(size=(3, 3, 16, 64)).astype("float32")
    b = tvm.nd.array(np.full((7, 7, 64, 4), np.nan, "float32"), dev)
    f(tvm.nd.array(a_np, dev), tvm.nd.array(w_np, dev), b)
    np.testing.assert_allclose(b.numpy(), ref(a_np, w_np), rtol=1e-4)


def test_prefetch_at_a_thread_bound_axis_is_a_lowering_error():
    A = te.placeholder((64, 64), name="A")
    C = te.compute((64, 64), lambda i, j: A[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].prefetch(A, C.op.axis[1], 1)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(C.op.axis[1], te.thread_axis("threadIdx.x"))
    with pytest.raises(LoweringError, match="prefetch is for CPU loops"):
        tvm.lower(s, [A, C])


# ------------------------------------------------------------------ tir.Prefetch statements
def _prefetch_loops(stmt):
    loops = []
    while isinstance(stmt, tvm.tir.For):
        loops.append(int(stmt.extent))
        stmt = stmt.body
    return loops, stmt


def test_prefetch_statement_flattens_to_one_hint_per_cache_line():
    A = te.placeholder((25, 100, 4), name="A")
    Ab = tvm.tir.decl_buffer(A.shape, A.dtype, name="A")
    i, j = te.size_var("i"), te.size_var("j")
    region = [tvm.ir.Range.from_min_extent(lo, ext) for lo, ext in [(i, 2), (j, 8), (0, 4)]]
    func = tvm.te.schedule.SchedulePostProcToPrimFunc([Ab], tvm.tir.Prefetch(Ab, region), {A: Ab})
    assert "T.prefetch(A[i:i + 2, j:j + 8, 0:4])" in str(func)
    mod = tvm.transform.Sequential([tvm.tir.transform.StorageFlatten(64),
                                    tvm.tir.transform.Simplify()])(tvm.IRModule.from_expr(func))
    # rows of 4 floats: 4 rows per 64-byte line, so 8 rows are 2 hints, for each of the 2 planes
    loops, hint = _prefetch_loops(mod["main"].body)
    assert loops == [2, 2]
    assert hint.value.op == "prefetch" and isinstance(hint.value.args[0].args[0], tvm.tir.Load)


def test_prefetch_statement_runs_in_an_ir_builder_function():
    n = te.size_var("n")
    Ab = tvm.tir.decl_buffer((n, 37), "float32", name="A")
    Bb = tvm.tir.decl_buffer((n, 37), "float32", name="B")
    ib = tvm.tir.ir_builder.create()
    A, B = ib.buffer_ptr(Ab), ib.buffer_ptr(Bb)
    with ib.for_range(0, n, name="i") as i:
        ib.emit(tvm.tir.Prefetch(Ab, [tvm.ir.Range.from_min_extent(i + 1, 1),
                                      tvm.ir.Range.from_min_extent(0, 37)]))
        with ib.for_range(0, 37, name="j") as j:
            B[i * 37 + j] = A[i * 37 + j] * 2.0
    f = tvm.build(tvm.tir.PrimFunc([Ab, Bb], ib.get()), target="llvm")
    assert "@llvm.prefetch" in f.get_source("ll")
    a = np.random.default_rng(2).uniform(-1, 1, (5, 37)).astype("float32")
    b = tvm.nd.array(np.full((5, 37), np.nan, "float32"))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 2)
    with pytest.raises(tvm.TVMLabError, match="2 ranges for 1 dimensions"):
        tvm.tir.Prefetch(tvm.tir.decl_buffer((4,), name="X"), [tvm.ir.Range.from_min_extent(0, 1)] * 2)


# ------------------------------------------------------------------ the FPGA "pipeline" tag
def test_pipeline_bound_axis_is_a_scope_and_runs_on_the_cpu():
    n = 1000
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    D = te.compute(A.shape, lambda i: A[i] * C[i], name="D")
    s = te.create_schedule(D.op)
    for t in (C, D):
        px, _ = s[t].split(t.op.axis[0], nparts=1)
        s[t].bind(px, te.thread_axis("pipeline"))
    assert str(tvm.lower(s, [A, B, C, D])).count('"pipeline_exec_scope", 1') == 2
    f = tvm.build(s, [A, B, C, D], "llvm")
    rng = np.random.default_rng(3)
    a, b = (rng.uniform(-1, 1, n).astype("float32") for _ in range(2))
    c, d = (tvm.nd.array(np.full(n, np.nan, "float32")) for _ in range(2))
    f(tvm.nd.array(a), tvm.nd.array(b), c, d)
    np.testing.assert_allclose(d.numpy(), a * (a + b), rtol=1e-6)


def test_pipeline_axis_of_extent_above_one_is_a_lowering_error():
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
    px, _ = s[C].split(C.op.axis[0], nparts=4)
    s[C].bind(px, te.thread_axis("pipeline"))
    with pytest.raises(LoweringError, match="pipeline axis must have extent 1"):
        tvm.lower(s, [A, C])
