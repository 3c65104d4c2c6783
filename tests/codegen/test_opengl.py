"""The OpenGL backend, run for real on the headless EGL context (Mesa llvmpipe without a GPU).

Fragment mode (target "opengl", ``s[X].opengl()``) and compute mode (target
"opengl -compute", GPU-style schedules) are checked against numpy on random
data, with outputs poisoned with NaN (or a sentinel for int32) first.
"""
import os

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tvmlab as tvm  # noqa: E402
from tvmlab import te  # noqa: E402
from tvmlab.errors import BuildError, LoweringError, RuntimeArgError, ScheduleError  # noqa: E402
from tvmlab.runtime import opengl_context as glc  # noqa: E402
from tvmlab.runtime.opengl_ndarray import GLArray, set_texture_width  # noqa: E402

import gpu_programs as P  # noqa: E402

pytestmark = pytest.mark.skipif(not glc.available(), reason=f"no OpenGL context: {glc.reason()}")

RNG = np.random.default_rng(7)
dev = tvm.opengl(0)


@pytest.fixture
def narrow():
    """Textures at most 16 texels wide: many rows, and a last row that is not full."""
    old = set_texture_width(16)
    yield 16
    set_texture_width(old)


def gl(x):
    return tvm.nd.array(x, dev)


def poisoned(shape, dtype="float32"):
    fill = np.nan if dtype == "float32" else -123456789
    return gl(np.full(shape, fill, dtype=dtype))


def rand(*shape):
    return (RNG.random(shape, dtype=np.float32) - 0.5).astype("float32")


def opengl_all(s, *tensors):
    for t in tensors:
        s[t].opengl()
    return s


# ------------------------------------------------------------------ fragment mode
@pytest.mark.parametrize("size", [1, 7, 16, 17, 255, 1000])
def test_vector_add_any_size(narrow, size):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, B, C], "opengl")
    a, b = rand(size), rand(size)
    c = poisoned(size)
    f(gl(a), gl(b), c)
    assert c.layout == (min(size, 16), -(-size // 16))
    np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)


def test_elementwise_math():
    n = 300
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: te.exp(A[i]) + te.sqrt(te.abs(A[i])) * te.tanh(A[i] * 3)
                   + te.sigmoid(A[i]) - te.floor(A[i] * 4) + tvm.tir.max(A[i], 0.1), name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, C], "opengl")
    a = rand(n) * 4
    c = poisoned(n)
    f(gl(a), c)
    ref = np.exp(a) + np.sqrt(np.abs(a)) * np.tanh(a * 3) + 1 / (1 + np.exp(-a)) - np.floor(a * 4) \
        + np.maximum(a, 0.1)
    np.testing.assert_allclose(c.numpy(), ref, rtol=1e-5, atol=1e-5)


def test_matmul_reduction_in_each_pixel(narrow):
    N, K, M = 37, 23, 29
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, B, C], "opengl")
    src = f.get_source()
    assert "for (int k = 0; k < 23; ++k)" in src and "texelFetch" in src
    a, b = rand(N, K), rand(K, M)
    c = poisoned((N, M))
    f(gl(a), gl(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_multi_stage_pipeline_one_pass_per_stage(narrow):
    n, m = 19, 13
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    I = te.compute((n, m), lambda i, j: B[i, j] - 0.5, name="I")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((n,), lambda i: te.max(I[i, k], axis=k), name="R")
    D = te.compute((n, m), lambda i, j: I[i, j] / R[i], name="D")
    s = te.create_schedule(D.op)
    s[I].compute_inline()
    opengl_all(s, B, R, D)
    f = tvm.build(s, [A, D], "opengl")
    assert f.get_source().count("#version 330 core") == 3
    assert "pass 2: draw D from B, R" in f.get_source("host")
    a = rand(n, m)
    d = poisoned((n, m))
    f(gl(a), d)
    i = a * 2 + 0.5
    np.testing.assert_allclose(d.numpy(), i / i.max(axis=1, keepdims=True), rtol=1e-5)


def test_int32_textures_and_floor_division():
    n = 500
    A = te.placeholder((n,), name="A", dtype="int32")
    B = te.placeholder((n,), name="B", dtype="int32")
    C = te.compute((n,), lambda i: te.if_then_else(A[i] > B[i], A[i] // 7, B[i] % 5) * 3 + (A[i] ^ B[i]),
                   name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, B, C], "opengl")
    assert "isampler2D" in f.get_source() and "out int" in f.get_source()
    a = RNG.integers(-1000, 1000, n).astype("int32")
    b = RNG.integers(-1000, 1000, n).astype("int32")
    c = poisoned(n, "int32")
    f(gl(a), gl(b), c)
    ref = np.where(a > b, np.floor_divide(a, 7), np.mod(b, 5)) * 3 + (a ^ b)
    np.testing.assert_array_equal(c.numpy(), ref)


def test_int32_reduction_and_cast():
    A = te.placeholder((40, 33), name="A", dtype="int32")
    k = te.reduce_axis((0, 33), name="k")
    S = te.compute((40,), lambda i: te.sum(A[i, k], axis=k), name="S")
    F = te.compute((40,), lambda i: S[i].astype("float32") * 0.5, name="F")
    s = te.create_schedule(F.op)
    opengl_all(s, S, F)
    f = tvm.build(s, [A, S, F], "opengl")
    a = RNG.integers(-100, 100, (40, 33)).astype("int32")
    out_s, out_f = poisoned(40, "int32"), poisoned(40)
    f(gl(a), out_s, out_f)
    np.testing.assert_array_equal(out_s.numpy(), a.sum(1))
    np.testing.assert_allclose(out_f.numpy(), a.sum(1) * 0.5)


def test_symbolic_2d_shape_one_build_many_sizes(narrow):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((m,), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] * B[j], name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, B, C], "opengl")
    assert "uniform int m;" in f.get_source()
    for shape in [(3, 5), (17, 9), (1, 40)]:
        a, b = rand(*shape), rand(shape[1])
        c = poisoned(shape)
        f(gl(a), gl(b), c)
        np.testing.assert_allclose(c.numpy(), a * b, rtol=1e-6)


def test_symbolic_multi_stage_intermediate_texture(narrow):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n,), lambda i: B[i] + B[n - 1 - i], name="C")
    s = te.create_schedule(C.op)
    opengl_all(s, B, C)
    f = tvm.build(s, [A, C], "opengl")
    assert "intermediate texture B" in f.get_source("host")
    for size in (5, 100, 37):
        a = rand(size)
        c = poisoned(size)
        f(gl(a), c)
        np.testing.assert_allclose(c.numpy(), 2 * a + 2 * a[::-1], rtol=1e-6)


def test_multi_output_stage_renders_to_several_targets():
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return tvm.tir.Select(keep, x[0], y[0]), tvm.tir.Select(keep, x[1], y[1])

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), te.min_value(t1)
    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m, n = 20, 30
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    s[T0].opengl()
    f = tvm.build(s, [idx, val, T0, T1], "opengl")
    assert "layout(location = 1) out float" in f.get_source()
    iv = np.tile(np.arange(n, dtype="int32"), (m, 1))
    vv = rand(m, n)
    o0, o1 = poisoned(m, "int32"), poisoned(m)
    f(gl(iv), gl(vv), o0, o1)
    np.testing.assert_array_equal(o0.numpy(), vv.argmax(1))
    np.testing.assert_allclose(o1.numpy(), vv.max(1))


def test_scalar_parameters_are_uniforms():
    n = 100
    alpha = te.var("alpha", "float32")
    shift = te.var("shift", "int32")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * alpha + shift.astype("float32"), name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, alpha, shift, C], "opengl")
    assert "uniform float alpha;" in f.get_source()
    a = rand(n)
    c = poisoned(n)
    f(gl(a), 2.5, 3, c)
    np.testing.assert_allclose(c.numpy(), a * 2.5 + 3, rtol=1e-6)


def test_scalar_output_and_whole_tensor_reduction():
    A = te.placeholder((50,), name="A")
    k = te.reduce_axis((0, 50), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="S")
    s = te.create_schedule(S.op)
    s[S].opengl()
    f = tvm.build(s, [A, S], "opengl")
    a = rand(50)
    out = poisoned(1)
    f(gl(a), out)
    np.testing.assert_allclose(out.numpy(), [a.sum()], rtol=1e-5)


def test_source_like_cuda_and_trace():
    A = te.placeholder((8,), name="A")
    C = te.compute((8,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    fused = s[C].opengl()
    assert s[C].leaf_iter_vars == [fused]
    f = tvm.build(s, [A, C], "opengl")
    src = f.imported_modules[0].get_source()
    assert src == f.get_source() == f.get_source("glsl")
    assert src.startswith("#version 330 core") and "uniform sampler2D A;" in src
    assert "layout(location = 0) out float C_out;" in src
    assert [st.primitive for st in s.trace] == ["opengl"]
    assert "s[C].opengl()" in s.trace.as_python()
    s2 = s.trace.replay([C.op])
    assert str(tvm.lower(s2, [A, C])) == str(tvm.lower(s, [A, C]))


def test_opengl_schedule_still_builds_for_llvm():
    A = te.placeholder((6, 5), name="A")
    C = te.compute((6, 5), lambda i, j: A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, C], "llvm")
    a = rand(6, 5)
    c = tvm.nd.empty((6, 5))
    f(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), a * 3)


def test_time_evaluator_and_sync():
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    f = tvm.build(s, [A, C], "opengl")
    a, c = gl(rand(64)), poisoned(64)
    r = f.time_evaluator(f.entry_name, dev, number=2, repeat=2)(a, c)
    assert len(r.results) == 2 and r.mean > 0
    np.testing.assert_allclose(c.numpy(), a.numpy() * 2)


def test_call_from_another_thread():
    import threading
    A, C, s = _add_schedule()
    s[C].opengl()
    f = tvm.build(s, [A, C], "opengl")
    a, c = gl(rand(10)), poisoned(10)
    errors = []

    def work():
        try:
            f(a, c)
        except Exception as e:  # reported below
            errors.append(e)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors
    np.testing.assert_allclose(c.numpy(), a.numpy() + 1)


# ------------------------------------------------------------------ arrays on the device
def test_device_arrays_round_trip(narrow):
    x = rand(5, 7)
    a = gl(x)
    assert isinstance(a, GLArray) and a.device == dev and a.shape == (5, 7) and a.dtype == "float32"
    assert a.layout == (16, 3)
    np.testing.assert_array_equal(a.numpy(), x)
    np.testing.assert_array_equal(a.copyto(tvm.cpu(0)).numpy(), x)
    y = rand(5, 7)
    a.copyfrom(y)
    np.testing.assert_array_equal(np.asarray(a), y)
    e = tvm.nd.empty((3,), "int32", dev)
    e.copyfrom(np.array([1, -2, 3], dtype="int32"))
    assert e.numpy().tolist() == [1, -2, 3]
    assert tvm.device("opengl") == tvm.device("gl") == dev and dev.exist
    dev.sync()


def test_device_array_errors():
    with pytest.raises(RuntimeArgError, match="float64"):
        tvm.nd.array(np.zeros(3), dev)
    a = gl(rand(4))
    with pytest.raises(RuntimeArgError, match="shape mismatch"):
        a.copyfrom(rand(5))
    with pytest.raises(RuntimeArgError, match="positive int"):
        set_texture_width(0)


# ------------------------------------------------------------------ errors
def _add_schedule():
    A = te.placeholder((10,), name="A")
    C = te.compute((10,), lambda i: A[i] + 1.0, name="C")
    return A, C, te.create_schedule(C.op)


def test_float64_is_a_clear_build_error():
    A = te.placeholder((10,), name="A", dtype="float64")
    C = te.compute((10,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    with pytest.raises(BuildError, match=r"tensor A has dtype float64.*float32"):
        tvm.build(s, [A, C], "opengl")


def test_unscheduled_stage_is_a_clear_error():
    A, C, s = _add_schedule()
    with pytest.raises(BuildError, match=r"s\[C\]\.opengl\(\)"):
        tvm.build(s, [A, C], "opengl")
    n = 10
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    D = te.compute((n,), lambda i: B[i] + 1, name="D")
    s = te.create_schedule(D.op)
    s[D].opengl()
    with pytest.raises(BuildError, match="stage B"):
        tvm.build(s, [A, D], "opengl")


def test_opengl_primitive_checks_leave_schedule_unchanged():
    A, C, s = _add_schedule()
    s[C].split(C.op.axis[0], factor=4)
    before = list(s[C].leaf_iter_vars)
    with pytest.raises(ScheduleError, match="must come before"):
        s[C].opengl()
    assert s[C].leaf_iter_vars == before and len(s.trace) == 1
    A, C, s = _add_schedule()
    s[C].opengl()
    with pytest.raises(ScheduleError, match="already scheduled for OpenGL"):
        s[C].opengl()
    with pytest.raises(ScheduleError, match="placeholder"):
        s[A].opengl()
    B = te.compute((10,), lambda i: A[i] * 2, name="B")
    D = te.compute((10,), lambda i: B[i] + 1, name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[D], D.op.axis[0])
    with pytest.raises(ScheduleError, match="compute_root"):
        s[B].opengl()


def test_vectorize_and_bind_are_rejected_in_fragment_mode():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].opengl()
    ko, ki = s[C].split(k, factor=4)
    s[C].unroll(ki)
    f = tvm.build(s, [A, C], "opengl")       # unrolled reduction inside the pixel is fine
    a, c = rand(4, 8), poisoned(4)
    f(gl(a), c)
    np.testing.assert_allclose(c.numpy(), a.sum(1), rtol=1e-5)
    with pytest.raises(BuildError, match="unknown option"):
        tvm.build(s, [A, C], "opengl -fast")


def test_call_argument_errors():
    A, C, s = _add_schedule()
    s[C].opengl()
    f = tvm.build(s, [A, C], "opengl")
    a, c = gl(rand(10)), poisoned(10)
    with pytest.raises(RuntimeArgError, match="expected an array on opengl"):
        f(tvm.nd.array(rand(10)), c)
    with pytest.raises(RuntimeArgError, match="expected an NDArray"):
        f(rand(10), c)
    with pytest.raises(RuntimeArgError, match="shape"):
        f(gl(rand(11)), c)
    with pytest.raises(RuntimeArgError, match="dtype float32"):
        f(gl(np.zeros(10, "int32")), c)
    with pytest.raises(RuntimeArgError, match="same array"):
        f(a, a)
    with pytest.raises(RuntimeArgError, match="expected 2 arguments"):
        f(a)
    f(a, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() + 1)


# ------------------------------------------------------------------ compute-shader mode
@pytest.mark.parametrize("N", [64, 40, 50, 13])
def test_compute_shared_memory_tiled_matmul(N):
    """Tiles of 8 that need not divide N: every thread still loads its part of the shared tiles."""
    s, args, _ = P.tiled_matmul(N=N, M=N, K=N, tile=8, kt=8)
    f = tvm.build(s, args, "opengl -compute")
    src = f.get_source()
    assert src.startswith("#version 430") and "local_size_x = 8, local_size_y = 8" in src
    assert "shared float A_shared[64];" in src and "barrier();" in src
    assert "gl_WorkGroupID" in src and "gl_LocalInvocationID" in src and "buffer" in src
    assert f.imported_modules[0].get_source() == src
    a, b = rand(N, N), rand(N, N)
    c = poisoned((N, N))
    f(gl(a), gl(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-5)


def test_compute_rfactor_cross_thread_reduction_symbolic_rows():
    n = te.var("n")
    A = te.placeholder((n, 77), name="A")
    k = te.reduce_axis((0, 77), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    s[B].bind(s[B].op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    direct = tvm.build(s, [A, B], "opengl -compute")
    # lowered by the CPU pipeline first: simplify drops the thread index from the local partial's
    # address, and the reduction is still found (the partial is private to each thread)
    prelowered = tvm.build(tvm.lower(s, [A, B]), target="opengl -compute")
    for f in (direct, prelowered):
        assert "shared float" in f.get_source()
        for rows in (13, 3):
            a = rand(rows, 77)
            b = poisoned(rows)
            f(gl(a), b)
            np.testing.assert_allclose(b.numpy(), a.sum(1), rtol=1e-5, atol=1e-5)


def test_compute_two_kernels_int32_symbolic_non_dividing_split():
    m = te.var("m")
    X = te.placeholder((m,), name="X", dtype="int32")
    Y = te.compute((m,), lambda i: X[i] * 3 - 7, name="Y")
    Z = te.compute((m,), lambda i: Y[i] % 5 + Y[i] // 4, name="Z")
    s = te.create_schedule(Z.op)
    for T in (Y, Z):
        bx, tx = s[T].split(T.op.axis[0], factor=64)
        s[T].bind(bx, te.thread_axis("blockIdx.x"))
        s[T].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [X, Z], "opengl -compute")
    assert f.get_source("host").count("dispatch") == 2
    for size in (1000, 64, 5):
        x = RNG.integers(-1000, 1000, size).astype("int32")
        z = poisoned(size, "int32")
        f(gl(x), z)
        y = x * 3 - 7
        np.testing.assert_array_equal(z.numpy(), np.mod(y, 5) + np.floor_divide(y, 4))


def test_compute_virtual_threads():
    N = 256
    A = te.placeholder((N,), name="A")
    C = te.compute((N,), lambda i: A[i] * 2.0 + 1.0, name="C")
    s = te.create_schedule(C.op)
    bx, r = s[C].split(C.op.axis[0], factor=64)
    vx, tx = s[C].split(r, nparts=2)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(vx, te.thread_axis("vthread"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, C], "opengl -compute")
    assert "local_size_x = 32," in f.get_source()
    a = rand(N)
    c = poisoned(N)
    f(gl(a), c)
    np.testing.assert_allclose(c.numpy(), a * 2 + 1)


def test_fragment_and_compute_share_arrays():
    n = 300
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    s1 = te.create_schedule(C.op)
    s1[C].opengl()
    frag = tvm.build(s1, [A, C], "opengl")
    s2 = te.create_schedule(C.op)
    bx, tx = s2[C].split(C.op.axis[0], factor=32)
    s2[C].bind(bx, te.thread_axis("blockIdx.x"))
    s2[C].bind(tx, te.thread_axis("threadIdx.x"))
    comp = tvm.build(s2, [A, C], "opengl -compute")
    a = rand(n)
    b, c = poisoned(n), poisoned(n)
    comp(gl(a), b)          # written as a storage buffer ...
    frag(b, c)              # ... read as a texture
    np.testing.assert_allclose(c.numpy(), a * 4)
    comp(c, b)              # and back
    np.testing.assert_allclose(b.numpy(), a * 8)


def test_compute_mode_errors():
    A, C, s = _add_schedule()
    with pytest.raises(LoweringError, match="not bound to GPU threads"):
        tvm.build(s, [A, C], "opengl -compute")
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], nparts=4)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(BuildError, match="work-group size must be a constant"):
        tvm.build(s, [A, C], "opengl -compute")
    A = te.placeholder((4096,), name="A")
    C = te.compute((4096,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=2048)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises((BuildError, LoweringError), match="2048"):
        tvm.build(s, [A, C], "opengl -compute")
