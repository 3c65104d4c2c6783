"""Tensorize: te.decl_tensor_intrin and s[C].tensorize, checked against numpy on random data."""
import shutil
import subprocess

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import DSLError, LoweringError, ScheduleError
from tvmlab.ir.function import Buffer

GEMV_C = r"""
int gemv_update(float *cc, float *aa, float *bb, int m, int l, int stride) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < l; ++j) cc[i] += aa[j] * bb[i * stride + j];
  return 0;
}
int gemv_full(float *cc, float *aa, float *bb, int m, int l, int stride) {
  for (int i = 0; i < m; ++i) {
    float acc = 0.0f;
    for (int j = 0; j < l; ++j) acc += aa[j] * bb[i * stride + j];
    cc[i] = acc;
  }
  return 0;
}
int gemv_reset(float *cc, int m) {
  for (int i = 0; i < m; ++i) cc[i] = 0.0f;
  return 0;
}
"""


@pytest.fixture(scope="module")
def gemv_lib(tmp_path_factory):
    """The tutorial's C kernels, compiled with the system's cc and loaded into the process."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) on this machine to build the gemv kernel")
    d = tmp_path_factory.mktemp("gemv")
    src, lib = d / "gemv.c", d / "libgemv.so"
    src.write_text(GEMV_C)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    import llvmlite.binding as llvm
    llvm.load_library_permanently(str(lib))
    return str(lib)


def _gemm(N, M, L):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return A, B, C


def intrin_gemv(m, l, with_reset=False):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Ab = Buffer("A", a.shape, a.dtype, offset_factor=1, strides=[1], elem_offset=te.var("a_off"))
    Bb = Buffer("B", b.shape, b.dtype, offset_factor=1, strides=[te.var("s1"), 1],
                elem_offset=te.var("b_off"))
    Cb = Buffer("C", c.shape, c.dtype, offset_factor=1, strides=[1], elem_offset=te.var("c_off"))

    def intrin_func(ins, outs):
        aa, bb = ins
        cc = outs[0]
        # A whole reduction in one call must write its result (gemv_full); split
        # over several calls it resets once, then accumulates (gemv_update).
        fn = "gemv_update" if with_reset else "gemv_full"
        body = tvm.tir.call_extern("int32", fn, cc.access_ptr("w"), aa.access_ptr("r"),
                                   bb.access_ptr("r"), m, l, bb.strides[0])
        if not with_reset:
            return body
        return body, tvm.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m), body

    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb},
                                 name="gemv_reset" if with_reset else "gemv")


def _run(s, args, shapes, ref):
    f = tvm.build(s, args, target="llvm")
    rng = np.random.default_rng(0)
    arrs = [rng.uniform(-1, 1, size=sh).astype("float32") for sh in shapes[:-1]]
    out = tvm.nd.array(np.full(shapes[-1], np.nan, "float32"))
    f(*[tvm.nd.array(a) for a in arrs], out)
    np.testing.assert_allclose(out.numpy(), ref(*arrs), rtol=1e-4, atol=1e-4)


def test_gemv_tutorial_whole_reduction(gemv_lib):
    N, M, L = 37, 48, 24            # 37 rows: the outer loop needs no tile
    A, B, C = _gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=16)
    s[C].reorder(x, yo, yi, z)
    s[C].tensorize(yi, intrin_gemv(16, L))
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "gemv_full" in text and "j.inner" not in text
    _run(s, [A, B, C], [(N, L), (M, L), (N, M)], lambda a, b: a @ b.T)


def test_gemv_tutorial_reduce_reset_update(gemv_lib):
    N, M, L = 21, 32, 48
    A, B, C = _gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=16)
    zo, zi = s[C].split(z, factor=16)
    s[C].reorder(x, yo, zo, yi, zi)
    s[C].tensorize(yi, intrin_gemv(16, 16, with_reset=True))
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert text.index("gemv_reset") < text.index("k.outer") < text.index("gemv_update")
    _run(s, [A, B, C], [(N, L), (M, L), (N, M)], lambda a, b: a @ b.T)


def test_trace_records_replays_and_renders(gemv_lib):
    N, M, L = 8, 32, 16
    A, B, C = _gemm(N, M, L)
    s = te.create_schedule(C.op)
    yo, yi = s[C].split(C.op.axis[1], factor=16)
    s[C].reorder(C.op.axis[0], yo, yi, C.op.reduce_axis[0])
    s[C].tensorize(yi, intrin_gemv(16, L))
    assert s.trace[-1] == {"primitive": "tensorize", "stage": "C", "axis": "j.inner", "intrin": "gemv"}
    trace = tvm.schedule.trace.Trace.from_json(s.trace.to_json())
    s2 = trace.replay([C.op])
    assert str(tvm.lower(s2, [A, B, C])) == str(tvm.lower(s, [A, B, C]))
    code = s.trace.as_python()
    ns = {"te": te, "tvmlab": tvm, "C": C}
    exec(code, ns)
    assert str(tvm.lower(ns["s"], [A, B, C])) == str(tvm.lower(s, [A, B, C]))
    _run(s2, [A, B, C], [(N, L), (M, L), (N, M)], lambda a, b: a @ b.T)


def intrin_vadd(n):
    """A vector-add kernel written in tvmlab IR: one n-lane load, add and store."""
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute((n,), lambda i: x[i] + y[i], name="z")

    def intrin_func(ins, outs):
        vt = f"float32x{n}"
        return outs[0].vstore(0, ins[0].vload(0, vt) + ins[1].vload(0, vt))

    return te.decl_tensor_intrin(z.op, intrin_func, name="vadd",
                                 default_buffer_params={"offset_factor": 1})


def test_vector_intrinsic_in_ir_on_2d_tiles():
    n, m = 5, 24
    A = te.placeholder((n, m), name="A")
    B = te.placeholder((n, m), name="B")
    C = te.compute((n, m), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, intrin_vadd(8))
    text = str(tvm.lower(s, [A, B, C]))
    assert "T.Ramp(i * 24 + j.outer * 8, 1, 8)" in text
    _run(s, [A, B, C], [(n, m), (n, m), (n, m)], lambda a, b: a + b)


def _vadd_schedule(factor):
    A = te.placeholder((4, 32), name="A")
    B = te.placeholder((4, 32), name="B")
    C = te.compute((4, 32), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=factor)
    return A, B, C, s, ji


def test_tensorize_region_and_matched_body_as_tvm_shows_them():
    """TVM's test hooks: the tile's ranges (root axes and inputs) and the stage's body in the intrinsic's terms."""
    A, B, C, s, ji = _vadd_schedule(8)
    jo = s[C].leaf_iter_vars[1]
    intrin = intrin_vadd(8)
    s[C].tensorize(ji, intrin)
    dom_map = tvm.te.schedule.InferBound(s)
    out_dom, in_dom = tvm.get_global_func("test.op.InferTensorizeRegion")(s[C], dom_map)
    i, j = C.op.axis
    assert tvm.ir.structural_equal(out_dom[i].extent, 1) and tvm.ir.structural_equal(out_dom[j].extent, 8)
    assert tvm.ir.structural_equal(out_dom[j].min, jo.var * 8)
    assert [t.name for t, _ in in_dom.items()] == ["A", "B"]
    assert tvm.ir.structural_equal(in_dom.items()[0][1][1].extent, 8)
    body = tvm.get_global_func("test.op.MatchTensorizeBody")(s[C], out_dom, in_dom, intrin)
    ana = tvm.arith.Analyzer()
    assert tvm.ir.structural_equal(ana.simplify(body[0]), ana.simplify(intrin.op.body[0]))
    assert not tvm.ir.structural_equal(tvm.tir.IntImm("int32", 7), 8)


def test_tile_of_the_wrong_size_is_refused_unchanged():
    A, B, C, s, ji = _vadd_schedule(4)
    before = (list(s.trace.steps), dict(s[C].iter_var_attrs))
    with pytest.raises(ScheduleError, match="spans 4 inside the tile.*16"):
        s[C].tensorize(ji, intrin_vadd(16))
    assert (list(s.trace.steps), dict(s[C].iter_var_attrs)) == before


def test_body_that_differs_is_refused():
    A = te.placeholder((4, 32), name="A")
    B = te.placeholder((4, 32), name="B")
    C = te.compute((4, 32), lambda i, j: A[i, j] * B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    with pytest.raises(ScheduleError, match="computes"):
        s[C].tensorize(ji, intrin_vadd(8))


def test_split_that_does_not_divide_inside_the_tile_is_refused():
    A = te.placeholder((4, 30), name="A")
    B = te.placeholder((4, 30), name="B")
    C = te.compute((4, 30), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    with pytest.raises(ScheduleError, match="does not divide"):
        s[C].tensorize(ji, intrin_vadd(8))


def test_compact_buffer_on_strided_tile_is_a_lowering_error():
    """The intrinsic's buffer is 2-d and compact, the tile's rows are 32 apart."""
    x = te.placeholder((2, 8), name="x")
    y = te.placeholder((2, 8), name="y")
    z = te.compute((2, 8), lambda i, j: x[i, j] + y[i, j], name="z")
    intrin = te.decl_tensor_intrin(
        z.op, lambda ins, outs: tvm.tir.call_extern("int32", "nothing", outs[0].access_ptr("w")),
        default_buffer_params={"offset_factor": 1})
    A = te.placeholder((4, 32), name="A")
    B = te.placeholder((4, 32), name="B")
    C = te.compute((4, 32), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=2)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(io, jo, ii, ji)
    s[C].tensorize(ii, intrin)
    with pytest.raises(LoweringError, match="not contiguous"):
        tvm.lower(s, [A, B, C])


def test_misuse_is_refused():
    A, B, C, s, ji = _vadd_schedule(8)
    with pytest.raises(ScheduleError, match="expected an intrinsic"):
        s[C].tensorize(ji, "vadd")
    s[C].vectorize(ji)
    with pytest.raises(ScheduleError, match="vectorized"):
        s[C].tensorize(ji, intrin_vadd(8))
    x = te.placeholder((4,), name="x")
    with pytest.raises(DSLError, match="te.compute"):
        te.decl_tensor_intrin(x.op, lambda i, o: None)
    y = te.compute((4,), lambda i: x[i] * 2, name="y")
    z = te.compute((4,), lambda i: y[i] + 1, name="z")
    with pytest.raises(DSLError, match="placeholders"):
        te.decl_tensor_intrin(z.op, lambda i, o: None)
    with pytest.raises(DSLError, match="returned 2 values"):
        te.decl_tensor_intrin(y.op, lambda i, o: (None, None))


# ------------------------------------------------------------------ import_llvm and the matmul micro-kernel

GEMV_LL = """
define i32 @gemv_ll(ptr %cc, ptr %aa, ptr %bb, i32 %m, i32 %l, i32 %stride) {
entry:
  br label %rows
rows:
  %i = phi i32 [ 0, %entry ], [ %i1, %rows_end ]
  %irow = mul i32 %i, %stride
  br label %cols
cols:
  %j = phi i32 [ 0, %rows ], [ %j1, %cols ]
  %acc = phi float [ 0.0, %rows ], [ %acc1, %cols ]
  %pa = getelementptr float, ptr %aa, i32 %j
  %va = load float, ptr %pa
  %bj = add i32 %irow, %j
  %pb = getelementptr float, ptr %bb, i32 %bj
  %vb = load float, ptr %pb
  %p = fmul float %va, %vb
  %acc1 = fadd float %acc, %p
  %j1 = add i32 %j, 1
  %jm = icmp slt i32 %j1, %l
  br i1 %jm, label %cols, label %rows_end
rows_end:
  %pc = getelementptr float, ptr %cc, i32 %i
  store float %acc1, ptr %pc
  %i1 = add i32 %i, 1
  %im = icmp slt i32 %i1, %m
  br i1 %im, label %rows, label %done
done:
  ret i32 0
}
"""


def test_pragma_import_llvm_links_the_kernel_as_in_the_tutorial():
    N, M, L = 9, 32, 20
    A, B, C = _gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=16)
    s[C].reorder(x, yo, yi, C.op.reduce_axis[0])
    a = te.placeholder((L,), name="a")
    b = te.placeholder((16, L), name="b")
    k = te.reduce_axis((0, L), name="k")
    c = te.compute((16,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Bb = Buffer("B", b.shape, b.dtype, offset_factor=1, strides=[te.var("s1"), 1], elem_offset=te.var("bo"))
    intrin = te.decl_tensor_intrin(
        c.op, lambda ins, outs: tvm.tir.call_extern(
            "int32", "gemv_ll", outs[0].access_ptr("w"), ins[0].access_ptr("r"), ins[1].access_ptr("r"),
            16, L, ins[1].strides[0]),
        binds={b: Bb}, default_buffer_params={"offset_factor": 1}, name="gemv_ll")
    s[C].tensorize(yi, intrin)
    s[C].pragma(x, "import_llvm", GEMV_LL)
    _run(s, [A, B, C], [(N, L), (M, L), (N, M)], lambda a, b: a @ b.T)
    # the tutorial's second part: the same axis tensorized again (the new intrinsic wins), and the
    # helper imported once more at another axis (one definition is kept, as TVM's linker does)
    s[C].tensorize(yi, intrin)
    s[C].pragma(yo, "import_llvm", GEMV_LL)
    _run(s, [A, B, C], [(N, L), (M, L), (N, M)], lambda a, b: a @ b.T)
    with pytest.raises(tvm.errors.ScheduleError, match="already tensorized at"):
        s[C].tensorize(x, intrin)
    s2 = te.create_schedule(C.op)
    s2[C].pragma(C.op.axis[0], "import_llvm", "this is not LLVM")
    with pytest.raises(tvm.errors.BuildError, match="imported LLVM IR"):
        tvm.build(s2, [A, B, C])


@pytest.mark.parametrize("shape", [(37, 29, 45), (12, 1, 32)])
def test_matmul_with_the_micro_kernel_intrinsic(shape):
    from tvmlab import topi
    from tvmlab.topi.x86.dense import tile_rows
    from tvmlab.topi.utils import vector_block
    M, K, N = shape
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    block = vector_block("float32")
    rows = tile_rows(block, "float32")
    C = topi.matmul(A, B, rows=rows)
    s = topi.schedule_matmul(C, tensorize=True)
    text = str(tvm.lower(s, [A, B, C]))
    lanes = tvm.codegen.llvm_vector.vector_registers("llvm").lanes("float32")
    assert f"tvmlab_matmul_tile_{rows}x{block // lanes}x{lanes}_float32" in text
    _run(s, [A, B, C], [(M, K), (K, N), (M, N)], lambda a, b: a @ b)


def test_matmul_micro_kernel_symbolic_shapes_and_avx2():
    from tvmlab import topi
    from tvmlab.topi.x86.dense import tile_rows
    from tvmlab.topi.utils import vector_block
    M, K, N = te.var("M"), te.var("K"), te.var("N")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = topi.matmul(A, B, rows=tile_rows(vector_block("float32"), "float32"))
    f = tvm.build(topi.schedule_matmul(C, tensorize=True), [A, B, C])
    rng = np.random.default_rng(3)
    for m, k, n in [(37, 29, 45), (5, 1, 3), (13, 64, 70)]:
        a = rng.uniform(-1, 1, (m, k)).astype("float32")
        b = rng.uniform(-1, 1, (k, n)).astype("float32")
        c = tvm.nd.array(np.full((m, n), np.nan, "float32"))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
    # AVX2 (pinned): 16 registers of 8 lanes -> a 6 x 16 tile, compiled (run only where the CPU has it)
    target = "llvm -mcpu=haswell"
    C2 = topi.matmul(A, B, rows=tile_rows(vector_block("float32", target), "float32", target), target=target)
    s2 = topi.schedule_matmul(C2, target=target, tensorize=True)
    assert "tvmlab_matmul_tile_6x2x8_float32" in str(tvm.lower(s2, [A, B, C2]))
    ll = tvm.build(s2, [A, B, C2], target=target).get_source("ll")
    assert "llvm.fma.v8f32" in ll and "llvm.fma.v16f32" not in ll


@pytest.mark.parametrize("shape", [(50, 17, 33)])
def test_matmul_micro_kernel_reads_a_in_place_when_a_tile_height_divides_m(shape):
    from tvmlab import topi
    from tvmlab.topi.x86.dense import tile_rows
    from tvmlab.topi.utils import vector_block
    M, K, N = shape
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = topi.matmul(A, B)
    s = topi.schedule_matmul(C, tensorize=True)
    text = str(tvm.lower(s, [A, B, C]))
    rows = int(text.split("tvmlab_matmul_tile_")[1].split("x")[0])
    assert text.count("_arows") and "C_packA" not in text and M % rows == 0
    assert tile_rows(vector_block("float32"), "float32") // 2 <= rows <= tile_rows(vector_block("float32"), "float32")
    _run(s, [A, B, C], [(M, K), (K, N), (M, N)], lambda a, b: a @ b)


def test_matmul_micro_kernel_needs_packed_inputs():
    from tvmlab import topi
    A = te.placeholder((8, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    with pytest.raises(ScheduleError, match="rows=R"):
        topi.schedule_matmul(topi.matmul(A, B), tensorize=True)


def test_tvm_tensorize_tutorial_with_only_imports_changed(gemv_lib):
    """TVM's tensorize tutorial (gemv as an external C function), decl_buffer and ir_builder as written."""
    N, M, L = 64, 32, 48
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    factor = 16
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=factor)
    zo, zi = s[C].split(z, factor=factor)
    s[C].reorder(x, yo, zo, yi, zi)

    def intrin_gemv(m, l):
        a = te.placeholder((l,), name="a")
        b = te.placeholder((m, l), name="b")
        k = te.reduce_axis((0, l), name="k")
        c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
        Ab = tvm.tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
        Bb = tvm.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1, strides=[te.var("s1"), 1])
        Cb = tvm.tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

        def intrin_func(ins, outs):
            aa, bb = ins
            cc = outs[0]

            def _body():
                ib = tvm.tir.ir_builder.create()
                ib.emit(tvm.tir.call_extern("int32", "gemv_update", cc.access_ptr("w"), aa.access_ptr("r"),
                                            bb.access_ptr("r"), m, l, bb.strides[0]))
                return ib.get()

            def _reduce_reset():
                ib = tvm.tir.ir_builder.create()
                ib.emit(tvm.tir.call_extern("int32", "gemv_reset", cc.access_ptr("w"), m))
                return ib.get()

            def _reduce_update():
                return _body()

            return _body(), _reduce_reset(), _reduce_update()

        return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb})

    gemv = intrin_gemv(factor, factor)
    s[C].tensorize(yi, gemv)
    dev = tvm.cpu(0)
    func = tvm.build(s, [A, B, C], target="llvm", name="gemv")
    a = np.random.uniform(size=(N, L)).astype(A.dtype)
    b = np.random.uniform(size=(M, L)).astype(B.dtype)
    c = tvm.nd.array(np.full((N, M), np.nan, dtype=C.dtype), dev)
    func(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    tvm.testing.assert_allclose(c.numpy(), np.dot(a, b.T), rtol=1e-3)


def test_reduction_split_outside_the_tile_without_a_reset(gemv_lib):
    """(body, None, update): the first step of the outer reduction runs the body, as in TVM."""
    N, M, L = 10, 32, 64
    A, B, C = _gemm(N, M, L)
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    yo, yi = s[C].split(y, factor=16)
    zo, zi = s[C].split(C.op.reduce_axis[0], factor=16)
    s[C].reorder(x, yo, zo, yi, zi)
    a = te.placeholder((16,), name="a")
    b = te.placeholder((16, 16), name="b")
    k = te.reduce_axis((0, 16), name="k")
    c = te.compute((16,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Bb = Buffer("B", b.shape, b.dtype, offset_factor=1, strides=[te.var("s1"), 1], elem_offset=te.var("bo"))

    def intrin_func(ins, outs):
        args = (outs[0].access_ptr("w"), ins[0].access_ptr("r"), ins[1].access_ptr("r"), 16, 16,
                ins[1].strides[0])
        return (tvm.tir.call_extern("int32", "gemv_full", *args), None,
                tvm.tir.call_extern("int32", "gemv_update", *args))

    s[C].tensorize(yi, te.decl_tensor_intrin(c.op, intrin_func, binds={b: Bb}, name="gemv_noreset",
                                             default_buffer_params={"offset_factor": 1,
                                                                    "data_alignment": 16}))
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "if k.outer == 0" in text and "gemv_reset" not in text
    _run(s, [A, B, C], [(N, L), (M, L), (N, M)], lambda a, b: a @ b.T)


def test_intrinsic_in_ir_builder_code_on_gpu_targets():
    """An intrinsic whose body is ir_builder code: compiled for CUDA, run on OpenGL compute."""
    def intrin_vadd(n):
        x = te.placeholder((n,), name="x")
        y = te.placeholder((n,), name="y")
        z = te.compute((n,), lambda i: x[i] + y[i], name="z")

        def intrin_func(ins, outs):
            ib = tvm.tir.ir_builder.create()
            with ib.for_range(0, n, name="l") as l:
                ib.emit(outs[0].vstore(l, ins[0].vload(l) + ins[1].vload(l)))
            return ib.get()
        return te.decl_tensor_intrin(z.op, intrin_func, name="vadd_ib",
                                     default_buffer_params={"offset_factor": 1})

    A = te.placeholder((40, 32), name="A")
    B = te.placeholder((40, 32), name="B")
    C = te.compute((40, 32), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=4)
    s[C].bind(C.op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(jo, te.thread_axis("threadIdx.x"))
    s[C].tensorize(ji, intrin_vadd(4))
    try:
        import cuda.bindings.nvrtc  # noqa: F401
        src = tvm.build(s, [A, B, C], target="cuda").imported_modules[0].get_source()
        assert "for (int l = 0; l < 4; ++l)" in src
    except ImportError:
        pass    # NVRTC (the cuda extra) missing: only the OpenGL run below
    from tvmlab.runtime import opengl_context as glc
    if not glc.available():
        pytest.skip(f"no OpenGL context: {glc.reason()}")
    dev = tvm.opengl(0)
    f = tvm.build(s, [A, B, C], target="opengl -compute")
    rng = np.random.default_rng(7)
    a, b = (rng.uniform(-1, 1, (40, 32)).astype("float32") for _ in range(2))
    c = tvm.nd.array(np.full((40, 32), np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a + b)


def test_intrinsics_with_the_default_name_stay_apart_in_traces():
    a, b = intrin_vadd(4), intrin_vadd(8)
    x = te.placeholder((4,), name="x")
    y = te.compute((4,), lambda i: x[i] * 2, name="y")
    c1 = te.decl_tensor_intrin(y.op, lambda i, o: o[0].vstore(0, i[0].vload(0) * 2))
    c2 = te.decl_tensor_intrin(y.op, lambda i, o: o[0].vstore(0, i[0].vload(0) * 2))
    assert a.name == b.name == "vadd" and c1.name != c2.name
    assert tvm.schedule.tensorize.lookup(c2.name) is c2 and tvm.schedule.tensorize.lookup("vadd") is b
    with pytest.raises(ScheduleError, match="no tensor intrinsic named 'nope'"):
        tvm.schedule.tensorize.lookup("nope")


def test_intrinsic_object_and_a_packed_call_body():
    """As TVM's test_tensor_intrin: the intrinsic's fields, buffers' data bound to the arguments."""
    n = 16
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    z = te.compute(x.shape, lambda i: x[i] + y[i], name="z")

    def intrin_func(ins, outs):
        assert isinstance(ins[0], tvm.te.schedule.Buffer) and ins[0].shape[0].value == n
        return tvm.tir.call_packed("vadd", ins[0].data, outs[0].data, ins[0].shape[0])

    intrin = te.decl_tensor_intrin(z.op, intrin_func,
                                   default_buffer_params={"data_alignment": 128, "offset_factor": 128})
    assert intrin.op is z.op and intrin.reduce_init is None and intrin.reduce_update is None
    assert tuple(intrin.inputs) == tuple(z.op.input_tensors) and intrin.buffers[0].shape[0].value == n
    X = te.placeholder((32,), name="X")
    Y = te.placeholder((32,), name="Y")
    Z = te.compute(X.shape, lambda i: X[i] + Y[i], name="Z")
    s = te.create_schedule(Z.op)
    xo, xi = s[Z].split(Z.op.axis[0], n)
    s[Z].tensorize(xi, intrin)
    stmt = tvm.lower(s, [X, Y, Z])["main"].body
    assert isinstance(stmt.body, tvm.tir.Evaluate)
    assert [str(a) for a in stmt.body.value.args[:3]] == ['"vadd"', "X", "Z"]


def test_tensorize_with_a_store_predicate_is_refused():
    A, B, C, s, ji = _vadd_schedule(8)
    s[C].set_store_predicate(C.op.axis[0] < 2)
    with pytest.raises(ScheduleError, match="store predicate"):
        s[C].tensorize(ji, intrin_vadd(8))
    A, B, C, s, ji = _vadd_schedule(8)
    s[C].tensorize(ji, intrin_vadd(8))
    s[C].set_store_predicate(C.op.axis[0] < 2)
    with pytest.raises(LoweringError, match="store predicate"):
        tvm.lower(s, [A, B, C])


def test_marking_a_loop_inside_the_tile_after_tensorize_is_a_lowering_error():
    A = te.placeholder((4, 32), name="A")
    B = te.placeholder((4, 32), name="B")
    C = te.compute((4, 32), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].reorder(jo, C.op.axis[0], ji)
    s[C].tensorize(C.op.axis[0], intrin_vadd_2d(4, 8))
    s[C].unroll(ji)
    with pytest.raises(LoweringError, match="inside the tile is unrolled"):
        tvm.lower(s, [A, B, C])


def intrin_vadd_2d(rows, n):
    x = te.placeholder((rows, n), name="x")
    y = te.placeholder((rows, n), name="y")
    z = te.compute((rows, n), lambda i, j: x[i, j] + y[i, j], name="z")
    return te.decl_tensor_intrin(
        z.op, lambda ins, outs: tvm.tir.call_extern("int32", "nothing", outs[0].access_ptr("w")),
        name="vadd2d", default_buffer_params={"offset_factor": 1, "strides": [te.var("zs"), 1]})


# ------------------------------------------------------------------ scalar_params


def intrin_scale_shift(n):
    """z[k] = x[k] * v + w over an n-wide tile; v (int32) and w (float32) are values of each call."""
    x = te.placeholder((n,), name="x")
    v, w = te.var("v"), te.var("w", "float32")
    z = te.compute((n,), lambda k: x[k] * v.astype("float32") + w, name="z")

    def intrin_func(ins, outs, sp):
        assert [p.name for p in sp] == ["v", "w"]
        vt = f"float32x{n}"
        scale = tvm.tir.Broadcast(sp[0].astype("float32"), n)
        return outs[0].vstore(0, ins[0].vload(0, vt) * scale + tvm.tir.Broadcast(sp[1], n))

    return te.decl_tensor_intrin(z.op, intrin_func, scalar_params=[v, w], name="scale_shift",
                                 default_buffer_params={"offset_factor": 1})


def test_scalar_params_take_their_values_from_the_stage():
    """v is i + 1 (a loop index of the stage), w the kernel's argument s; symbolic row count."""
    rows = te.var("rows")
    A = te.placeholder((rows, 24), name="A")
    sc = te.var("s", "float32")
    C = te.compute((rows, 24), lambda i, j: A[i, j] * (i + 1).astype("float32") + sc, name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    intrin = intrin_scale_shift(8)
    assert [p.name for p in intrin.scalar_params] == ["v", "w"]
    s[C].tensorize(ji, intrin)
    text = str(tvm.lower(s, [A, sc, C]))
    assert "T.Broadcast(T.Cast(\"float32\", i + 1), 8)" in text and "T.Broadcast(s, 8)" in text
    f = tvm.build(s, [A, sc, C], "llvm")
    for n in (5, 1):
        a = np.random.default_rng(n).uniform(-1, 1, (n, 24)).astype("float32")
        out = tvm.nd.array(np.full((n, 24), np.nan, "float32"))
        f(tvm.nd.array(a), 0.75, out)
        np.testing.assert_allclose(out.numpy(), a * (np.arange(n)[:, None] + 1) + 0.75, rtol=1e-5)


def test_scalar_params_in_the_reset_and_update_of_a_reduction():
    """c = sum_k x[k] * v, split so that the reduction runs over several calls (reset, update)."""
    x = te.placeholder((8,), name="x")
    v = te.var("v")
    kk = te.reduce_axis((0, 8), name="kk")
    z = te.compute((1,), lambda r: te.sum(x[kk] * v.astype("float32"), axis=kk), name="z")

    def intrin_func(ins, outs, sp):
        def code(reset, update):
            ib = tvm.tir.ir_builder.create()
            xp, cp = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
            if reset:
                cp[0] = tvm.tir.const(0.0, "float32")
            if update:
                with ib.for_range(0, 8, name="t") as t:
                    cp[0] = cp[0] + xp[t] * sp[0].astype("float32")
            return ib.get()
        return code(True, True), code(True, False), code(False, True)

    intrin = te.decl_tensor_intrin(z.op, intrin_func, scalar_params=[v], name="dot_scaled",
                                   default_buffer_params={"offset_factor": 1})
    A = te.placeholder((7, 40), name="A")
    k = te.reduce_axis((0, 40), name="k")
    C = te.compute((7,), lambda i: te.sum(A[i, k] * (i % 3 + 1).astype("float32"), axis=k), name="C")
    s = te.create_schedule(C.op)
    ko, ki = s[C].split(k, factor=8)
    s[C].tensorize(ki, intrin)
    a = np.random.default_rng(3).uniform(-1, 1, (7, 40)).astype("float32")
    out = tvm.nd.array(np.full(7, np.nan, "float32"))
    tvm.build(s, [A, C], "llvm")(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.sum(1) * (np.arange(7) % 3 + 1), rtol=1e-4)


def test_scalar_params_misuse_is_refused():
    x = te.placeholder((8,), name="x")
    z = te.compute((8,), lambda k: x[k] * 2.0, name="z")
    with pytest.raises(DSLError, match="scalar_params are variables"):
        te.decl_tensor_intrin(z.op, lambda i, o, sp: None, scalar_params=[2])
    A = te.placeholder((4, 32), name="A")
    # the value varies inside the tile (with the intrinsic's own axis)
    C = te.compute((4, 32), lambda i, j: A[i, j] * j.astype("float32") + 1.0, name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    with pytest.raises(ScheduleError, match="scalar parameter v would be .* varies inside the tile"):
        s[C].tensorize(ji, intrin_scale_shift(8))
    assert s[C].attr(ji).kind == "serial"
    # a parameter the compute does not use has no value to find
    v = te.var("v")
    unused = te.decl_tensor_intrin(z.op, lambda i, o, sp: o[0].vstore(0, i[0].vload(0, "float32x8") * 2.0),
                                   scalar_params=[v], default_buffer_params={"offset_factor": 1})
    D = te.compute((4, 32), lambda i, j: A[i, j] * 2.0, name="D")
    s = te.create_schedule(D.op)
    jo, ji = s[D].split(D.op.axis[1], factor=8)
    with pytest.raises(ScheduleError, match="cannot find the value of scalar parameter v"):
        s[D].tensorize(ji, unused)
