"""te.extern, tir.ir_builder, tir.decl_buffer, tir.call_packed and contrib.cblas against numpy."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import DSLError, LoweringError, ScheduleError
from tvmlab.runtime.packed import PackedFuncError


def _nan(shape, dtype="float32"):
    return tvm.nd.array(np.full(shape, np.nan, dtype))


def _register(name, fn):
    tvm.register_func(name, fn, override=True)


# ------------------------------------------------------------ ir_builder bodies
def _clip_extern(n):
    A = te.placeholder((n,), name="A")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, ins[0].shape[0], name="i") as i:
            with ib.if_scope(a[i] > 0.5):
                b[i] = a[i] + 1.0
            with ib.else_scope():
                b[i] = a[i] * 2.0
        return ib.get()
    return A, te.extern(A.shape, [A], gen, name="C")


@pytest.mark.parametrize("size", [1, 17, 64])
def test_ir_builder_extern_then_a_scheduled_consumer(rng, size):
    n = te.var("n")
    A, C = _clip_extern(n)
    D = te.compute(C.shape, lambda i: C[i] * 3, name="D")
    s = te.create_schedule(D.op)
    xo, xi = s[D].split(D.op.axis[0], factor=8)
    s[D].vectorize(xi)
    s[D].parallel(xo)
    f = tvm.build(s, [A, D])
    a = rng.random(size).astype("float32")
    d = _nan(size)
    f(tvm.nd.array(a), d)
    np.testing.assert_allclose(d.numpy(), np.where(a > 0.5, a + 1, a * 2) * 3, rtol=1e-6)


def test_extern_reads_a_computed_tensor_and_is_computed_at_its_consumer(rng):
    A = te.placeholder((6, 10), name="A")
    A2 = te.compute(A.shape, lambda i, j: A[i, j] - 1, name="A2")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, 6, name="i", kind="parallel") as i:
            acc = ib.allocate("float32", (1,), name="acc", scope="local")
            acc[0] = 0.0
            with ib.for_range(0, 10, name="j") as j:
                acc[0] = acc[0] + a[i, j]
            with ib.for_range(0, 10, name="j") as j:
                b[i, j] = a[i, j] - acc[0] / 10.0
        return ib.get()
    C = te.extern(A.shape, [A2], gen, name="C")
    D = te.compute(A.shape, lambda i, j: C[i, j] * 2, name="D")
    s = te.create_schedule(D.op)
    xo, xi = s[A2].split(A2.op.axis[1], factor=4)
    s[C].compute_at(s[D], D.op.axis[0])
    f = tvm.build(s, [A, D])
    a = rng.random((6, 10)).astype("float32")
    d = _nan((6, 10))
    f(tvm.nd.array(a), d)
    x = a - 1
    np.testing.assert_allclose(d.numpy(), 2 * (x - x.mean(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6)


def test_vload_vstore_vectors_and_loop_kinds(rng):
    n = 32
    A = te.placeholder((n,), name="A")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        pairs = ib.buffer_ptr(outs[1], shape=(n // 2, 2))          # a 2-d view of a 1-d output
        with ib.for_range(0, n // 2, name="i", kind="unroll") as i:
            ib.emit(outs[0].vstore(i * 2, ins[0].vload(i * 2, "float32x2") + tvm.tir.const(1, "float32x2")))
        with ib.for_range(0, n // 2, name="p") as p:
            with ib.for_range(0, 2, name="q", kind="vectorize") as q:
                pairs[p, q] = ins[0].vload(p * 2 + q) * 2.0
        return ib.get()
    B, C = te.extern([(n,), (n,)], [A], gen, name="BC")
    s = te.create_schedule([B.op])
    f = tvm.build(s, [A, B, C])
    a = rng.random(n).astype("float32")
    b, c = _nan(n), _nan(n)
    f(tvm.nd.array(a), b, c)
    np.testing.assert_allclose(b.numpy(), a + 1, rtol=1e-6)
    np.testing.assert_allclose(c.numpy(), a * 2, rtol=1e-6)


def test_let_new_scope_scope_attr_and_strided_input_buffer(rng):
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    sa = te.var("sa")
    Ab = tvm.tir.decl_buffer(A.shape, A.dtype, name="Ab", strides=[sa, 1])

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        ib.scope_attr(te.var("note"), "pragma_note", 1)
        ib.scope_attr("note", "pragma_text", "hello")
        with ib.for_range(0, m, name="i", dtype="int64") as i:
            with ib.new_scope():
                last = ib.let("last", n - 1)
                with ib.for_range(0, n, name="j") as j:
                    b[i, j] = a[i, j] + a[i, last]
        return ib.get()
    B = te.extern(A.shape, [A], gen, in_buffers=[Ab], name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    a = rng.random((5, 7)).astype("float32")
    b = _nan((5, 7))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + a[:, -1:], rtol=1e-6)


# ------------------------------------------------------------ call_packed
def test_extern_op_tutorial_matmul_bias(rng):
    n, l, m = te.var("n"), te.var("l"), te.var("m")
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    C = te.extern((n, m), [A, B],
                  lambda ins, outs: tvm.tir.call_packed("tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0],
                                                        False, False), name="C")
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    assert "tvm_call_packed" in str(tvm.lower(s, [A, B, D, bias], simple_mode=True))
    f = tvm.build(s, [A, B, D, bias], "llvm")
    a = rng.random((13, 7)).astype("float32")
    b = rng.random((7, 11)).astype("float32")
    d = _nan((13, 11))
    f(tvm.nd.array(a), tvm.nd.array(b), d, 10.0)
    np.testing.assert_allclose(d.numpy(), a @ b + 10, rtol=1e-5)


@pytest.mark.parametrize("transa,transb", [(False, False), (True, False), (False, True), (True, True)])
def test_cblas_matmul(rng, transa, transb):
    from tvmlab.contrib import cblas
    A = te.placeholder((5, 7) if transa else (7, 5), name="A")
    B = te.placeholder((9, 5) if transb else (5, 9), name="B")
    C = cblas.matmul(A, B, transa, transb)
    D = te.compute(C.shape, lambda i, j: C[i, j] * 2, name="D")
    s = te.create_schedule(D.op)
    s[D].vectorize(s[D].split(D.op.axis[1], factor=4)[1])
    f = tvm.build(s, [A, B, D])
    x = rng.random((5, 7) if transa else (7, 5)).astype("float32")
    y = rng.random((9, 5) if transb else (5, 9)).astype("float32")
    d = _nan((7, 9))
    f(tvm.nd.array(x), tvm.nd.array(y), d)
    np.testing.assert_allclose(d.numpy(), 2 * ((x.T if transa else x) @ (y.T if transb else y)), rtol=1e-5)


def test_cblas_batch_matmul_float64(rng):
    from tvmlab.contrib import cblas
    A = te.placeholder((3, 4, 6), name="A", dtype="float64")
    B = te.placeholder((3, 6, 5), name="B", dtype="float64")
    C = cblas.batch_matmul(A, B)
    f = tvm.build(te.create_schedule(C.op), [A, B, C])
    x, y = rng.random((3, 4, 6)), rng.random((3, 6, 5))
    c = _nan((3, 4, 5), "float64")
    f(tvm.nd.array(x), tvm.nd.array(y), c)
    np.testing.assert_allclose(c.numpy(), x @ y, rtol=1e-12)


def test_packed_function_gets_ndarray_views_and_scalars(rng):
    seen = {}

    def addone(x, y, k, scale, tag, flag):
        seen.update(types=(type(x), type(y)), k=k, scale=scale, tag=tag, flag=flag)
        tvm.nd.array(x.numpy() * scale + k).copyto(y)
    _register("test.extern.addone", addone)
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    k = te.var("k")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("test.extern.addone", ins[0], outs[0], k,
                                                                      2.5, "hello", True), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B, k])
    a = rng.random(10).astype("float32")
    b = _nan(10)
    f(tvm.nd.array(a), b, 3)
    np.testing.assert_allclose(b.numpy(), a * 2.5 + 3, rtol=1e-6)
    assert seen["types"] == (tvm.nd.NDArray, tvm.nd.NDArray)
    assert (seen["k"], seen["scale"], seen["tag"], seen["flag"]) == (3, 2.5, "hello", True)


def test_packed_function_that_raises_is_a_clear_error_after_the_call(rng):
    calls = []

    def bad(x, y):
        calls.append(1)
        raise ValueError("boom in the packed function")
    _register("test.extern.bad", bad)
    A = te.placeholder((8,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("test.extern.bad", ins[0], outs[0]), name="B")
    C = te.compute(A.shape, lambda i: B[i] + 1, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C])
    a, c = tvm.nd.array(rng.random(8).astype("float32")), _nan(8)
    with pytest.raises(PackedFuncError, match="test.extern.bad.*ValueError: boom") as info:
        f(a, c)
    assert isinstance(info.value.__cause__, ValueError) and isinstance(info.value, RuntimeError)
    assert np.isnan(c.numpy()).all()        # the function returned before its consumer ran
    _register("test.extern.bad", lambda x, y: tvm.nd.array(x.numpy()).copyto(y))
    f(a, c)                                 # the same build works once the function does
    np.testing.assert_allclose(c.numpy(), a.numpy() + 1, rtol=1e-6)
    assert calls == [1]


def test_packed_function_in_parallel_loop_and_unregistered_name(rng):
    got = []
    _register("test.extern.row", lambda row, i: got.append(i) or None)
    A = te.placeholder((4, 3), name="A")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        b = ib.buffer_ptr(outs[0])
        with ib.for_range(0, 4, name="i", kind="parallel") as i:
            ib.emit(tvm.tir.call_packed("test.extern.row", ins[0], i))
            with ib.for_range(0, 3, name="j") as j:
                b[i, j] = 1.0
        return ib.get()
    B = te.extern(A.shape, [A], gen, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    b = _nan((4, 3))
    f(tvm.nd.array(rng.random((4, 3)).astype("float32")), b)
    assert sorted(got) == [0, 1, 2, 3] and (b.numpy() == 1).all()
    C = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("test.extern.nobody", ins[0]), name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C])
    with pytest.raises(PackedFuncError, match="'test.extern.nobody' is not registered"):
        f(tvm.nd.array(np.ones((4, 3), "float32")), _nan((4, 3)))


# ------------------------------------------------------------ misuse
def test_extern_argument_errors():
    A = te.placeholder((4,), name="A")
    B = te.placeholder((4,), name="B", dtype="int32")
    body = lambda ins, outs: tvm.tir.call_packed("x", ins[0], outs[0])  # noqa: E731
    with pytest.raises(DSLError, match="in_buffers has 2 buffers for 1 input"):
        te.extern(A.shape, [A], body, in_buffers=[tvm.tir.decl_buffer((4,)), tvm.tir.decl_buffer((4,))])
    with pytest.raises(DSLError, match=r"out_buffers\[0\] is float32\[5\] but the output is float32\[4\]"):
        te.extern(A.shape, [A], body, out_buffers=[tvm.tir.decl_buffer((5,))])
    with pytest.raises(DSLError, match="inputs have dtypes"):
        te.extern(A.shape, [A, B], body)
    with pytest.raises(DSLError, match="must return a statement"):
        te.extern(A.shape, [A], lambda ins, outs: 3)
    with pytest.raises(DSLError, match="argument 1 is tensor A"):
        tvm.tir.call_packed("x", A)
    with pytest.raises(DSLError, match="name"):
        tvm.tir.call_packed(A)
    ib = tvm.tir.ir_builder.create()
    with pytest.raises(DSLError, match="else_scope must directly follow"):
        ib.else_scope()
    with pytest.raises(DSLError, match="unknown kind"):
        ib.for_range(0, 4, kind="sideways")
    with pytest.raises(DSLError, match="has 1 dimensions, indexed with 2"):
        ib.buffer_ptr(tvm.tir.decl_buffer((4,)))[1, 2]


def test_extern_schedule_errors():
    A = te.placeholder((8,), name="A")
    A2 = te.compute(A.shape, lambda i: A[i] * 2, name="A2")
    B = te.extern(A.shape, [A2], lambda ins, outs: tvm.tir.call_packed("x", ins[0], outs[0]), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match="only compute_at and compute_root apply"):
        s[B].split(s[B].leaf_iter_vars[0] if s[B].leaf_iter_vars else None, factor=2)
    s[A2].compute_inline()
    with pytest.raises(LoweringError, match="extern stage B reads A2 through a buffer, but stage A2 is inlined"):
        tvm.lower(s, [A, B])


def test_module_with_call_packed_is_not_exported(tmp_path):
    from tvmlab.errors import BuildError
    A = te.placeholder((8,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("test.extern.copy", ins[0], outs[0]), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(BuildError, match="calls registered Python functions"):
        f.export_library(str(tmp_path / "f.so"))
    f.save(str(tmp_path / "f.ll"))                      # the IR can still be read
    assert "tvmlab_packed_call" in (tmp_path / "f.ll").read_text()


def test_gpu_extern_with_thread_extent_runs(cuda_run):
    nn, threads = 64, 4
    A = te.placeholder((nn,), name="A")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(bx, "thread_extent", (nn + threads - 1) // threads)
        ib.scope_attr(tx, "thread_extent", threads)
        idx = bx.var * threads + tx.var
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.if_scope(ib.likely(idx < nn)):
            c[idx] = a[idx] + 1.0
        return ib.get()
    C = te.extern(A.shape, [A], gen, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C], "cuda")         # compiled by NVRTC
    src = f.imported_modules[0].get_source()
    assert "__global__" in src and "threadIdx.x" in src
    a = np.random.default_rng(1).random(nn).astype("float32")
    _, c = cuda_run(f, a, np.full(nn, np.nan, "float32"))
    np.testing.assert_allclose(c, a + 1, rtol=1e-6)


# ------------------------------------------------------------ while loops
def _collatz_steps(x):
    steps = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def _collatz_ir(ib, k, c):
    """c[k] = the number of Collatz steps from k + 1 down to 1, with a while loop."""
    steps = ib.allocate("int32", (1,), name="steps", scope="local")
    a = ib.allocate("int32", (1,), name="a", scope="local")
    steps[0] = 0
    a[0] = k + 1
    with ib.while_loop(a[0] != 1):
        with ib.if_scope(tvm.tir.floormod(a[0], 2) == 0):
            a[0] = a[0] // 2
        with ib.else_scope():
            a[0] = 3 * a[0] + 1
        steps[0] += 1
    c[k] = steps[0]


def test_while_loop_collatz_in_a_parallel_loop():
    n = 40

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        c = ib.buffer_ptr(outs[0])
        with ib.for_range(0, n, name="k", kind="parallel") as k:
            _collatz_ir(ib, k, c)
        return ib.get()
    C = te.extern((n,), [], gen, name="collatz", dtype="int32")
    s = te.create_schedule(C.op)
    assert "while a[0] != 1" in str(tvm.lower(s, [C], simple_mode=True))
    f = tvm.build(s, [C])
    c = tvm.nd.array(np.full(n, -7, "int32"))
    f(c)
    np.testing.assert_array_equal(c.numpy(), [_collatz_steps(k + 1) for k in range(n)])


def test_while_loop_binary_search_and_vectorized_body(rng):
    n, m = 50, 33
    A = te.placeholder((n,), name="A")           # sorted keys
    B = te.placeholder((m,), name="B")           # queries

    def search(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(ins[1]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, m, name="q") as q:
            lo = ib.allocate("int32", (1,), name="lo", scope="local")
            hi = ib.allocate("int32", (1,), name="hi", scope="local")
            lo[0], hi[0] = 0, n
            with ib.while_loop(lo[0] < hi[0]):
                mid = lo[0] + ((hi[0] - lo[0]) >> 1)
                with ib.if_scope(a[mid] < b[q]):
                    lo[0] = mid + 1
                with ib.else_scope():
                    hi[0] = mid
            c[q] = lo[0]
        return ib.get()

    def repeat_add(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, c = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        it = ib.allocate("int32", (1,), name="it", scope="local")
        it[0] = 0
        with ib.for_range(0, n, name="j") as j:
            c[j] = 0.0
        with ib.while_loop(it[0] < 10):
            with ib.for_range(0, n, name="j", kind="vectorize") as j:
                c[j] += a[j] * 0.5
            it[0] += 1
        return ib.get()
    C = te.extern((m,), [A, B], search, name="C", dtype="int32")
    D = te.extern((n,), [A], repeat_add, name="D")
    s = te.create_schedule([C.op, D.op])
    f = tvm.build(s, [A, B, C, D])
    a = np.sort(rng.random(n)).astype("float32")
    b = rng.random(m).astype("float32")
    c, d = tvm.nd.array(np.full(m, -1, "int32")), _nan(n)
    f(tvm.nd.array(a), tvm.nd.array(b), c, d)
    np.testing.assert_array_equal(c.numpy(), np.searchsorted(a, b))
    np.testing.assert_allclose(d.numpy(), 5 * a, rtol=1e-5)
    with pytest.raises(DSLError, match="scalar bool"):
        tvm.tir.ir_builder.create().while_loop(tvm.tir.const(1))


def test_gpu_while_loop_runs(cuda_run):
    n = 64

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        bx, tx = te.thread_axis("blockIdx.x"), te.thread_axis("threadIdx.x")
        ib.scope_attr(bx, "thread_extent", n // 32)
        ib.scope_attr(tx, "thread_extent", 32)
        k = bx.var * 32 + tx.var
        _collatz_ir(ib, k, ib.buffer_ptr(outs[0]))
        return ib.get()
    C = te.extern((n,), [], gen, name="collatz", dtype="int32")
    f = tvm.build(te.create_schedule(C.op), [C], "cuda")
    assert "while (" in f.imported_modules[0].get_source()
    (c,) = cuda_run(f, np.full(n, -7, "int32"))
    np.testing.assert_array_equal(c, [_collatz_steps(k + 1) for k in range(n)])


def test_input_buffer_with_its_own_shape_vars_and_offset(rng):
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    Ab = tvm.tir.decl_buffer((te.var("mm"), te.var("nn")), A.dtype, name="Ab", offset_factor=1,
                             strides=[te.var("s1"), 1])

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, ins[0].shape[0], name="i") as i:        # the buffer's own mm, nn
            with ib.for_range(0, ins[0].shape[1], name="j") as j:
                b[i, j] = a[i, j] + 1.0
        return ib.get()
    B = te.extern(A.shape, [A], gen, in_buffers=[Ab], name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    x = rng.random((3, 5)).astype("float32")
    b = _nan((3, 5))
    f(tvm.nd.array(x), b)
    np.testing.assert_allclose(b.numpy(), x + 1, rtol=1e-6)
    with pytest.raises(DSLError, match="in_buffers"):
        te.extern(A.shape, [A], gen, in_buffers=[tvm.tir.decl_buffer((m, n + 1), A.dtype)])


def test_call_packed_gets_scratch_pointer_from_ir_builder():
    got = []
    _register("test.extern.ptr", lambda p, n: got.append((type(p).__name__, bool(p.value), n)))
    A = te.placeholder((4,), name="A")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        tmp = ib.allocate("float32", (4,), name="tmp")
        tmp[0] = 1.0
        ib.emit(tvm.tir.call_packed("test.extern.ptr", tmp, 4))
        b = ib.buffer_ptr(outs[0])
        with ib.for_range(0, 4, name="i") as i:
            b[i] = tmp[0]
        return ib.get()
    B = te.extern(A.shape, [A], gen, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    b = _nan(4)
    f(tvm.nd.array(np.zeros(4, "float32")), b)
    assert got == [("c_void_p", True, 4)] and (b.numpy() == 1).all()


def test_save_json_round_trip_of_an_extern_stage(rng):
    n = te.var("n")
    A, C = _clip_extern(n)
    loaded = tvm.ir.load_json(tvm.ir.save_json(C.op))
    assert isinstance(loaded, te.ExternOp) and len(loaded.input_placeholders) == 1
    A2, C2 = loaded.inputs[0], loaded.output(0)
    f = tvm.build(te.create_schedule(loaded), [A2, C2])
    a = rng.random(11).astype("float32")
    c = _nan(11)
    f(tvm.nd.array(a), c)
    np.testing.assert_allclose(c.numpy(), np.where(a > 0.5, a + 1, a * 2), rtol=1e-6)


def test_gpu_host_calls_the_packed_function_with_device_arrays():
    seen = []
    _register("test.extern.gpu_copy", lambda a, b, scale, k: seen.append((a, b, scale, k)))
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("test.extern.gpu_copy", ins[0], outs[0], 2.5,
                                                                      n), name="B")
    C = te.compute(A.shape, lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(xo, te.thread_axis("blockIdx.x"))
    s[C].bind(xi, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, C], "cuda")
    fn = f.get_function("default_function")
    class Fake:
        def __init__(self, name):
            self.name, self._ptr = name, 4096
    arrays = {v: Fake(f"array {v.name}") for v in fn.buffers}
    arrays.update({v: Fake(f"temp {v.name}") for v, _, _ in fn.temps})
    launches = []
    fn.run_host({"n": 100}, arrays, lambda ln, grid, block, kargs: launches.append(grid))
    assert [(a.name, b.name, x, k) for a, b, x, k in seen] == [("array A", "temp B", 2.5, 100)]   # before the kernel
    assert launches == [(2, 1, 1)]
    _register("test.extern.gpu_copy", lambda *args: 1 / 0)
    with pytest.raises(PackedFuncError, match="ZeroDivisionError"):
        fn.run_host({"n": 100}, arrays, lambda *a: None)


def test_packed_function_raising_on_one_parallel_task():
    def f(row, i):
        if i == 5:
            raise KeyError("row five")
    _register("test.extern.par_raise", f)
    A = te.placeholder((16, 3), name="A")

    def gen(ins, outs):
        ib = tvm.tir.ir_builder.create()
        b = ib.buffer_ptr(outs[0])
        with ib.for_range(0, 16, name="i", kind="parallel") as i:
            ib.emit(tvm.tir.call_packed("test.extern.par_raise", ins[0], i))
            with ib.for_range(0, 3, name="j") as j:
                b[i, j] = 1.0
        return ib.get()
    B = te.extern(A.shape, [A], gen, name="B")
    fn = tvm.build(te.create_schedule(B.op), [A, B])
    for _ in range(2):                                   # the error is reported once per call, every call
        with pytest.raises(PackedFuncError, match="KeyError: 'row five'"):
            fn(tvm.nd.array(np.ones((16, 3), "float32")), _nan((16, 3)))


def test_call_packed_value_in_a_compute():
    _register("test.extern.twice", lambda i, scale: int(i * scale))
    n = 10
    B = te.compute((n,), lambda i: tvm.tir.call_packed("test.extern.twice", i, 3), name="B")
    C = te.compute((n,), lambda i: B[i] + 1, name="C")
    f = tvm.build(te.create_schedule(C.op), [C])
    c = tvm.nd.array(np.full(n, -5, "int32"))
    f(c)
    np.testing.assert_array_equal(c.numpy(), np.arange(n) * 3 + 1)
    _register("test.extern.twice", lambda i, scale: "not a number")       # not an int: the call gives 0
    f(c)
    np.testing.assert_array_equal(c.numpy(), np.ones(n))
    _register("test.extern.twice", lambda i, scale: 2**70)
    with pytest.raises(PackedFuncError, match="does not fit in 64 bits"):
        f(c)


def test_cache_read_into_and_out_of_an_extern_stage(rng):
    _register("test.extern.copy2", lambda a, b: a.copyto(b))
    A = te.placeholder((16, 8), name="A")
    A2 = te.compute(A.shape, lambda i, j: A[i, j] + 1, name="A2")
    C = te.extern(A.shape, [A2], lambda ins, outs: tvm.tir.call_packed("test.extern.copy2", ins[0], outs[0]),
                  name="C")
    D = te.compute(A.shape, lambda i, j: C[i, j] * 2, name="D")
    s = te.create_schedule(D.op)
    CL = s.cache_read(C, "local", [D])                   # the extern's output, read through a local copy
    s[CL].compute_at(s[D], D.op.axis[0])
    s.cache_read(A2, "global", [C])                      # the extern reads a copy of its input
    f = tvm.build(s, [A, D])
    x = rng.random((16, 8)).astype("float32")
    d = _nan((16, 8))
    f(tvm.nd.array(x), d)
    np.testing.assert_allclose(d.numpy(), 2 * (x + 1), rtol=1e-6)
    with pytest.raises(ScheduleError, match="only computed tensors can be cached"):
        s.cache_write(C, "local")
