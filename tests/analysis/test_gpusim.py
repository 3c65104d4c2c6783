"""The thread-level GPU simulator: every GPU test program against numpy with no findings, and planted
bugs (races, divergent barriers and shuffles, out-of-bounds writes, uninitialized reads) found and named."""
import math
import re

import numpy as np
import pytest

import gpu_programs as gp
import tvmlab as tvm
from tvmlab import te
from tvmlab.analysis import gpusim
from tvmlab.errors import RuntimeArgError, SimulationError, TVMLabError
from tvmlab.ir.expr import LT, Broadcast, Call, FloatImm, IntImm, Load, Ramp, StringImm, Var
from tvmlab.ir.function import Buffer, PrimFunc
from tvmlab.ir.functor import IRMutator
from tvmlab.ir.stmt import Evaluate, Store
from tvmlab.lower.thread_sync import is_barrier
from tvmlab.testing import poison, random_data
from tvmlab.tir import ir_builder

# (program, keyword arguments, sizes of the symbolic dims); sizes chosen so split factors do not divide
PROGRAMS = [
    ("vector_add", {}, {"n": 100}),                       # symbolic n, factor 64
    ("vector_add", {"n": 37}, {}),
    ("tiled_matmul", {}, {}),
    ("tiled_matmul", {"N": 30, "M": 21, "K": 19}, {}),
    ("rfactor_sum", {}, {"n": 5, "m": 37}),               # symbolic n, m; 16 threads
    ("rfactor_max", {}, {}),
    ("serial_reduce", {}, {}),
    ("conv2d", {}, {}),
    ("conv2d", {"H": 9, "W": 11}, {}),
    ("vthread_add", {}, {}),
    ("opt_conv_hwcn", {}, {}),
]
# Kernels the simulator finds a genuine bug in (kept visible: the test fails if the bug goes away).

def _ids(p):
    return f"{p[0]}-{'-'.join(f'{k}{v}' for k, v in {**p[1], **p[2]}.items()) or 'default'}"


def _run(prog, kwargs, sizes, target="cuda"):
    s, args, ref = getattr(gp, prog)(**kwargs)
    f = tvm.build(s, args, target)
    rng = np.random.default_rng(7)
    shapes = [tuple(int(d) if isinstance(d, IntImm) else sizes[d.name] for d in a.shape) for a in args]
    ins = [random_data(sh, "float32", rng) for sh in shapes[:-1]]
    out = poison(np.empty(shapes[-1], "float32"))
    report = gpusim.simulate(f, *ins, out, check=False)
    return report, out, ref(*[a.astype("float64") for a in ins])


_RESULTS = {}


def _result(prog):
    key = _ids(prog)
    if key not in _RESULTS:
        _RESULTS[key] = _run(*prog)
    return _RESULTS[key]


@pytest.mark.parametrize("prog", PROGRAMS, ids=_ids)
def test_gpu_program_matches_numpy(prog):
    report, out, expected = _result(prog)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert report.launches and report.stopped is None


@pytest.mark.parametrize("prog", PROGRAMS, ids=_ids)
def test_gpu_program_has_no_findings(prog):
    report, _, _ = _result(prog)
    assert report.ok, report.summary()


def test_threads_writing_the_same_value_still_race():
    """Every thread stores one initial value into B[0]: benign on hardware only by luck, so it is
    reported, and the message says the values agreed."""
    def build(ib, A, B):
        B[0] = A[0] * 0.0
    k = _kernel(build, (4,), (1,))
    f = _expect(gpusim.RACE, k, 1, 16, np.ones(4, "float32"), np.zeros(1, "float32"))
    assert re.match(r"threadIdx=\(0,0,0\) blockIdx=\(0,0,0\) and threadIdx=\(\d+,0,0\) blockIdx=\(0,0,0\) both "
                    r"write global B\[0\] \(the same value\) in this statement with no barrier between$",
                    f.message), f.message
    with pytest.raises(SimulationError, match=r"1 race .*\n.*both write global B\[0\]") as e:
        gpusim.run_kernel(k, 1, 16, np.ones(4, "float32"), np.zeros(1, "float32"))
    assert e.value.report.counts == {"race": 1}


def test_lowered_module_scan_and_ndarrays():
    s, args, _ = gp.tiled_matmul(N=16, M=24, K=8)
    mod = tvm.lower(s, args, target="cuda")                 # an IRModule lowered for the GPU
    rng = np.random.default_rng(1)
    a, b = random_data((16, 8), "float32", rng), random_data((8, 24), "float32", rng)
    c = tvm.nd.array(np.full((16, 24), np.nan, "float32"))  # a CPU NDArray is written in place
    report = tvm.testing.simulate(mod, tvm.nd.array(a), b, c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)
    assert [(ln.grid, ln.block) for ln in report.launches] == [((3, 2, 1), (8, 8, 1))]
    # a scan: the host loops over time steps, one launch per step
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i])
    scan = te.scan(init, update, state, inputs=[X])
    s = te.create_schedule(scan.op)
    for st in (init, update):
        xo, xi = s[st].split(st.op.axis[1], factor=32)
        s[st].bind(xo, te.thread_axis("blockIdx.x"))
        s[st].bind(xi, te.thread_axis("threadIdx.x"))
    x = random_data((5, 70), "float32", rng)
    y = poison(np.empty_like(x))
    report = gpusim.simulate(tvm.build(s, [X, scan], "cuda"), x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-5)
    assert len(report.launches) == 5


@tvm.testing.requires_opengl
def test_opengl_compute_module():
    s, args, ref = gp.tiled_matmul(N=20, M=12, K=9)
    f = tvm.build(s, args, "opengl -compute")
    rng = np.random.default_rng(2)
    a, b = random_data((20, 9), "float32", rng), random_data((9, 12), "float32", rng)
    c = poison(np.empty((20, 12), "float32"))
    assert gpusim.simulate(f, a, b, c).ok
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_math_intrinsics_bitwise_ops_and_casts():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    V = te.placeholder((n,), "int32", name="V")

    def fx(i):
        x = A[i]
        return (te.exp(x) * 0.5 + te.log(te.abs(x) + 1.0) + te.sqrt(te.abs(x)) + te.tanh(x) + te.sigmoid(x)
                + te.erf(x) + te.floor(x * 3.0) + te.round(x * 3.0) + te.trunc(x * 3.0) + te.power(te.abs(x), 1.5)
                + te.fmod(x * 5.0, 2.0) + te.rsqrt(te.abs(x) + 1.0)
                + te.if_then_else(te.isnan(x), 0.0, te.sin(x) * te.cos(x))
                + (x * 8.0).astype("int32").astype("float32"))

    def fi(i):
        v = V[i]
        return (((v & 7) | (v >> 1)) ^ (v << 2)) + tvm.tir.truncdiv(v, 3) + tvm.tir.truncmod(v, 3) \
            + te.floordiv(v, 4) + te.floormod(v, 4) + te.max(v, 3) - te.min(v, -2) + te.abs(v)
    C = te.compute((n,), fx, name="C")
    D = te.compute((n,), fi, name="D")
    s = te.create_schedule([C.op, D.op])
    for T in (C, D):
        bx, tx = s[T].split(T.op.axis[0], factor=32)
        s[T].bind(bx, te.thread_axis("blockIdx.x"))
        s[T].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, V, C, D], "cuda")
    rng = np.random.default_rng(5)
    a, v = random_data((77,), "float32", rng, -2, 2), random_data((77,), "int32", rng)
    c, d = poison(np.empty(77, "float32")), poison(np.empty(77, "int32"))
    assert gpusim.simulate(f, a, v, c, d).ok
    x, w = a.astype("float64"), v.astype("int64")
    erf = np.vectorize(math.erf)
    half_away = np.sign(x * 3) * np.floor(np.abs(x * 3) + 0.5)       # C's round()
    expected = (np.exp(x) * 0.5 + np.log(np.abs(x) + 1) + np.sqrt(np.abs(x)) + np.tanh(x) + 1 / (1 + np.exp(-x))
                + erf(x) + np.floor(x * 3) + half_away + np.trunc(x * 3) + np.abs(x) ** 1.5 + np.fmod(x * 5, 2)
                + 1 / np.sqrt(np.abs(x) + 1) + np.sin(x) * np.cos(x) + np.trunc(x * 8))
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)
    q = np.trunc(w / 3).astype("int64")
    np.testing.assert_array_equal(d, (((w & 7) | (w >> 1)) ^ (w << 2)) + q + (w - 3 * q) + w // 4 + w % 4
                                  + np.maximum(w, 3) - np.minimum(w, -2) + np.abs(w))


def test_bad_arguments():
    s, args, _ = gp.vector_add()
    f = tvm.build(s, args, "cuda")
    a = np.ones(10, "float32")
    with pytest.raises(RuntimeArgError, match="argument 'A': expected dtype float32, got float64"):
        gpusim.simulate(f, a.astype("float64"), a, a)
    with pytest.raises(RuntimeArgError, match=r"argument 'B': shape\[0\] is 9 but n = 10"):
        gpusim.simulate(f, a, a[:9], a)
    with pytest.raises(RuntimeArgError, match="expected 3 arrays"):
        gpusim.simulate(f, a, a)
    c = poison(np.empty(10, "float32"))
    assert gpusim.simulate(f, a, a, c, 10).ok                  # all arguments, the shape variable too
    np.testing.assert_array_equal(c, 2 * a)
    with pytest.raises(RuntimeArgError, match="n = 5 but the shapes give 10"):
        gpusim.simulate(f, a, a, c, 5)
    with pytest.raises(RuntimeArgError, match="argument 'A': expected a numpy array or a CPU NDArray, got list"):
        gpusim.simulate(f, [1.0] * 10, a, a)
    with pytest.raises(RuntimeArgError, match="C-contiguous"):
        gpusim.simulate(f, np.ones(20, "float32")[::2], a, a)
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1, name="B")
    cpu = tvm.build(te.create_schedule(B.op), [A, B], "llvm")
    with pytest.raises(RuntimeArgError, match="simulate needs a module built or lowered for a GPU.*llvm"):
        gpusim.simulate(cpu, a, a)
    with pytest.raises(RuntimeArgError, match="lowered without a GPU target"):
        gpusim.simulate(tvm.lower(te.create_schedule(B.op), [A, B]), a, a)
    with pytest.raises(TVMLabError, match="run_kernel expects a kernel PrimFunc"):
        gpusim.run_kernel(f, 1, 1, a)


# ---------------------------------------------------------------- planted bugs, written as AST3
TX, TY, BX = Var("threadIdx.x"), Var("threadIdx.y"), Var("blockIdx.x")


def _sync():
    return Call("void", "tvm_storage_sync", (StringImm("shared"),))


def _kernel(build, *shapes, dtype="float32"):
    bufs = [Buffer(name, shape, dtype) for name, shape in zip("ABCD", shapes)]
    ib = ir_builder.create()
    build(ib, *[ib.buffer_ptr(b) for b in bufs])
    return PrimFunc("planted", [b.data for b in bufs], {b.data: b for b in bufs}, ib.get())


def _expect(kind, kernel, grid, block, *arrays, match=None):
    with pytest.raises(SimulationError) as e:
        gpusim.run_kernel(kernel, grid, block, *arrays)
    found = e.value.report.of_kind(kind)
    assert found, e.value.report.summary()
    text = str(e.value)
    assert f"{kind} in planted" in text
    if match:
        assert match in text, text
    return found[0]


def test_race_two_threads_write_one_shared_element():
    def build(ib, A, B):
        S = ib.allocate("float32", 16, name="S", scope="shared")
        S[TX // 2] = A[TX]                                  # threads 2k and 2k+1 write S[k]
        ib.emit(_sync())
        with ib.if_scope(TX < 8):
            B[TX] = S[TX]
    k = _kernel(build, (16,), (8,))
    f = _expect(gpusim.RACE, k, 1, 16, np.arange(16, dtype="float32"), np.zeros(8, "float32"),
                match="threadIdx=(0,0,0) blockIdx=(0,0,0) and threadIdx=(1,0,0) blockIdx=(0,0,0) both write "
                      "shared memory S[0] in this statement")
    assert f.buffer == "S" and f.element == 0 and f.stmt.startswith("S[threadIdx.x // 2] = A[threadIdx.x]")
    assert f.threads == (((0, 0, 0), (0, 0, 0)), ((1, 0, 0), (0, 0, 0))) and f.block == (16, 1, 1)


def test_race_read_without_barrier_and_the_barrier_fixes_it():
    def build(ib, A, B, barrier):
        S = ib.allocate("float32", 32, name="S", scope="shared")
        S[TX] = A[TX]
        if barrier:
            ib.emit(_sync())
        B[TX] = S[31 - TX]                                   # reverse: another thread's element
    a, b = random_data((32,), "float32", np.random.default_rng(3)), np.zeros(32, "float32")
    racy = _kernel(lambda ib, A, B: build(ib, A, B, False), (32,), (32,))
    f = _expect(gpusim.RACE, racy, 1, 32, a, b)
    assert "threadIdx=(0,0,0) blockIdx=(0,0,0) reads shared memory S[31], which threadIdx=(31,0,0) " \
           "blockIdx=(0,0,0) wrote at `S[threadIdx.x] = A[threadIdx.x]` with no barrier between" in f.message
    fixed = _kernel(lambda ib, A, B: build(ib, A, B, True), (32,), (32,))
    report = gpusim.run_kernel(fixed, 1, 32, a, b)
    assert report.ok and report.barriers == 1
    np.testing.assert_array_equal(b, a[::-1])


def test_race_write_after_other_threads_read():
    def build(ib, A, B):
        S = ib.allocate("float32", 8, name="S", scope="shared")
        S[TX] = A[TX]
        ib.emit(_sync())
        B[TX] = S[0]                                          # everyone reads S[0] ...
        with ib.if_scope(TX == 0):
            S[0] = 1.0                                        # ... and thread 0 overwrites it, no barrier
    f = _expect(gpusim.RACE, _kernel(build, (8,), (8,)), 1, 8, np.ones(8, "float32"), np.zeros(8, "float32"))
    assert "threadIdx=(0,0,0) blockIdx=(0,0,0) writes shared memory S[0], which several threads" in f.message


def test_race_removing_a_barrier_from_a_lowered_kernel():
    class DropBarriers(IRMutator):
        def visit_Evaluate(self, s):
            return Evaluate(IntImm("int32", 0)) if is_barrier(s) else s
    s, args, _ = gp.tiled_matmul(N=16, M=16, K=16)
    (kernel,) = tvm.lower(s, args, target="cuda").device_split.kernels
    a, b, c = np.ones((16, 16), "float32"), np.ones((16, 16), "float32"), np.zeros((16, 16), "float32")
    assert gpusim.run_kernel(kernel, (2, 2), (8, 8), a, b, c).ok
    broken = kernel.with_body(DropBarriers().visit(kernel.body))
    f = _expect(gpusim.RACE, broken.with_attr("global_symbol", "planted"), (2, 2), (8, 8), a, b, c,
                match="with no barrier between")
    assert f.buffer in ("A.shared", "B.shared")


def test_race_between_blocks_on_global_memory_across_chunks():
    def build(ib, A, B):
        with ib.if_scope(TX == 0):
            B[0] = A[BX]                                      # every block's thread 0 writes B[0]
    k = _kernel(build, (4,), (1,))
    a, b = np.arange(4, dtype="float32"), np.zeros(1, "float32")
    _expect(gpusim.RACE, k, 4, 8, a, b, match="both write global B[0] in this statement (threads of different "
            "blocks are never ordered within a launch)")
    with pytest.raises(SimulationError) as e:                # one block per chunk: found across chunks
        gpusim.run_kernel(k, 4, 8, a, b, max_threads=8)
    assert "threadIdx=(0,0,0) blockIdx=(1,0,0) writes global B[0], which threadIdx=(0,0,0) blockIdx=(0,0,0) " \
        "wrote in the same statement (threads of different blocks" in str(e.value)


def test_divergent_barrier_under_a_thread_condition():
    def build(ib, A, B):
        S = ib.allocate("float32", 16, name="S", scope="shared")
        S[TX] = A[TX]
        with ib.if_scope(TX < 4):
            ib.emit(_sync())
            B[TX] = S[TX + 4]
    k = _kernel(build, (16,), (16,))
    f = _expect(gpusim.DIVERGENT_BARRIER, k, 2, 16, np.ones(16, "float32"), np.zeros(16, "float32"),
                match="in blockIdx=(0,0,0) (and 1 more block(s)), 4 of 16 threads arrive "
                      "(threadIdx=(0,0,0), (1,0,0), (2,0,0), (3,0,0)) and 12 do not (threadIdx=(4,0,0), (5,0,0), "
                      "(6,0,0), (7,0,0) and 8 more)")
    assert "enclosing: `if threadIdx.x < 4:` (then)" in f.message
    assert f.arrived == tuple((x, 0, 0) for x in range(4)) and f.missing == tuple((x, 0, 0) for x in range(4, 16))
    assert f.threads == (((0, 0, 0), (0, 0, 0)),)             # the block it happened in
    report = gpusim.run_kernel(k, 2, 16, np.ones(16, "float32"), np.zeros(16, "float32"), check=False)
    assert report.stopped and report.counts == {gpusim.DIVERGENT_BARRIER: 1}


def test_divergent_barrier_in_a_loop_whose_trip_count_depends_on_the_thread():
    def build(ib, A, B):
        with ib.for_range(0, TX + 1, name="i") as i:
            B[TX] = A[i]
            ib.emit(_sync())
    f = _expect(gpusim.DIVERGENT_BARRIER, _kernel(build, (8,), (8,)), 1, 8, np.ones(8, "float32"),
                np.zeros(8, "float32"), match="7 of 8 threads arrive")
    assert "a loop whose trip count differs between threads" in f.message
    assert "do not (threadIdx=(0,0,0))" in f.message


def test_barrier_under_a_block_uniform_condition_is_fine():
    def build(ib, A, B):
        S = ib.allocate("float32", 8, name="S", scope="shared")
        with ib.if_scope(BX < 1):                            # whole blocks skip it: allowed
            S[TX] = A[TX]
            ib.emit(_sync())
            B[TX] = S[7 - TX]
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    report = gpusim.run_kernel(_kernel(build, (8,), (8,)), 3, 8, a, b)
    assert report.ok and report.barriers == 1
    np.testing.assert_array_equal(b, a[::-1])


def test_out_of_bounds_write():
    def build(ib, A, B):
        B[TX + 1] = A[TX]
    f = _expect(gpusim.OUT_OF_BOUNDS, _kernel(build, (8,), (8,)), 1, 8, np.ones(8, "float32"),
                np.zeros(8, "float32"))
    assert f.message == "threadIdx=(7,0,0) blockIdx=(0,0,0) accesses global B[8], outside B (8 elements)"
    assert f.buffer == "B" and f.element == 8


def test_out_of_bounds_in_shared_memory_and_guarded_loads_are_fine():
    def build(ib, A, B):
        S = ib.allocate("float32", 4, name="S", scope="shared")
        with ib.if_scope(TX < 4):
            S[TX] = A[TX]
        ib.emit(_sync())
        B[TX] = tvm.tir.if_then_else(TX < 4, S[TX], 0.0)     # the load only runs where TX < 4
        B[TX] = B[TX] + S[TX]
    f = _expect(gpusim.OUT_OF_BOUNDS, _kernel(build, (8,), (8,)), 1, 8, np.ones(8, "float32"),
                np.zeros(8, "float32"))
    assert "accesses shared memory S[4], outside S (4 elements per block)" in f.message
    assert f.stmt.startswith("B[threadIdx.x] = B[threadIdx.x] + S[threadIdx.x]")


def test_read_of_shared_memory_never_written():
    def build(ib, A, B):
        S = ib.allocate("float32", 16, name="S", scope="shared")
        with ib.if_scope(TX < 8):
            S[TX] = A[TX]
        ib.emit(_sync())
        B[TX] = S[TX]
    f = _expect(gpusim.UNINITIALIZED, _kernel(build, (16,), (16,)), 1, 16, np.ones(16, "float32"),
                np.zeros(16, "float32"))
    assert f.message == ("threadIdx=(8,0,0) blockIdx=(0,0,0) reads shared memory S[8], which no thread of its "
                         "block has written in this launch")


def test_read_of_local_memory_never_written():
    def build(ib, A, B):
        r = ib.allocate("float32", 2, name="r", scope="local")
        r[0] = A[TX]
        B[TX] = r[0] + r[1]
    f = _expect(gpusim.UNINITIALIZED, _kernel(build, (4,), (4,)), 1, 4, np.ones(4, "float32"),
                np.zeros(4, "float32"))
    assert "reads local memory r[1], which it has not written" in f.message


# ---------------------------------------------------------------- warp shuffles
def _shuffle(op, value, arg, width):
    return Call("float32", op, (value, IntImm("int32", arg), IntImm("int32", width)))


def _warp_sum(threads, width, guard=None):
    def build(ib, A, B):
        r = ib.allocate("float32", 1, name="r", scope="local")
        r[0] = A[BX * threads + TX]

        def tree():
            d = width // 2
            while d:
                r[0] = r[0] + _shuffle("tvm_warp_shuffle_down", r[0], d, width)
                d //= 2
        if guard is None:
            tree()
        else:
            with ib.if_scope(guard):
                tree()
        with ib.if_scope(TX % width == 0):
            B[(BX * threads + TX) // width] = r[0]
    return build


@pytest.mark.parametrize("threads,width", [(64, 32), (16, 16), (32, 8)])
def test_warp_shuffle_reduction_sums(threads, width):
    blocks = 3
    rng = np.random.default_rng(4)
    a = random_data((blocks * threads,), "float32", rng)
    b = poison(np.empty(blocks * threads // width, "float32"))
    k = _kernel(_warp_sum(threads, width), (blocks * threads,), (b.size,))
    report = gpusim.run_kernel(k, blocks, threads, a, b)
    assert report.ok
    np.testing.assert_allclose(b, a.reshape(-1, width).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_warp_shuffle_broadcasts_a_lane():
    def build(ib, A, B):
        B[TX] = Call("float32", "tvm_warp_shuffle", (A[TX], IntImm("int32", 3), IntImm("int32", 8)))
    a, b = np.arange(32, dtype="float32"), np.zeros(32, "float32")
    assert gpusim.run_kernel(_kernel(build, (32,), (32,)), 1, 32, a, b).ok
    np.testing.assert_array_equal(b, np.repeat(a[3::8], 8))


def test_divergent_warp_shuffle():
    k = _kernel(_warp_sum(32, 32, guard=TX < 16), (32,), (1,))
    f = _expect(gpusim.DIVERGENT_SHUFFLE, k, 1, 32, np.ones(32, "float32"), np.zeros(1, "float32"),
                match="threadIdx=(0,0,0), (1,0,0), (2,0,0), (3,0,0) and 12 more run tvm_warp_shuffle_down "
                      "(width 32) but threadIdx=(16,0,0), (17,0,0), (18,0,0), (19,0,0) and 12 more of the same "
                      "width-32 segment do not")
    assert "enclosing: `if threadIdx.x < 16:` (then)" in f.message


def test_two_dimensional_blocks_number_lanes_x_first():
    def build(ib, A, B):          # lane = tx + ty * 4: a width-8 shuffle spans two rows of 4
        B[TY * 4 + TX] = _shuffle("tvm_warp_shuffle_down", A[TY * 4 + TX], 4, 8)
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    assert gpusim.run_kernel(_kernel(build, (16,), (16,)), 1, (4, 4), a, b).ok
    np.testing.assert_array_equal(b, [4, 5, 6, 7, 4, 5, 6, 7, 12, 13, 14, 15, 12, 13, 14, 15])


# ---------------------------------------------------------------- vectors and while loops
def _vector_copy(stride, predicate):
    def build(ib, A, B):
        idx = Ramp(TX * stride, IntImm("int32", 1), 4)
        keep = LT(idx, Broadcast(IntImm("int32", 10), 4)) if predicate else None
        value = Load("float32x4", A.asobject(), idx, keep) * Broadcast(FloatImm("float32", 2.0), 4)
        ib.emit(Store(B.asobject(), value, idx, keep))
    return _kernel(build, (10,), (10,))


def test_vector_lanes_with_predicates():
    a, b = np.arange(10, dtype="float32"), poison(np.empty(10, "float32"))
    assert gpusim.run_kernel(_vector_copy(4, True), 1, 3, a, b).ok          # lanes 10, 11 masked off
    np.testing.assert_array_equal(b, 2 * a)
    f = _expect(gpusim.OUT_OF_BOUNDS, _vector_copy(4, False), 1, 3, a, b)
    assert "threadIdx=(2,0,0) blockIdx=(0,0,0) accesses global A[10], outside A (10 elements)" in f.message
    f = _expect(gpusim.RACE, _vector_copy(2, True), 1, 3, a, b)              # threads overlap by 2 lanes
    assert "threadIdx=(0,0,0) blockIdx=(0,0,0) and threadIdx=(1,0,0) blockIdx=(0,0,0) both write global B[2]" \
        in f.message


def _countdown(barrier_inside):
    def build(ib, A, B):
        S = ib.allocate("int32", 8, name="S", scope="shared")
        k = ib.allocate("int32", 1, name="k", scope="local")
        k[0] = A[TX]
        S[TX] = 0
        with ib.while_loop(k[0] > 0):                   # each thread loops A[tx] times
            S[TX] = S[TX] + k[0]
            k[0] = k[0] - 1
            if barrier_inside:
                ib.emit(_sync())
        ib.emit(_sync())
        B[TX] = S[7 - TX]
    return _kernel(build, (8,), (8,), dtype="int32")


def test_while_loop_with_per_thread_trip_counts():
    a, b = np.array([0, 3, 1, 5, 2, 0, 4, 6], "int32"), poison(np.empty(8, "int32"))
    report = gpusim.run_kernel(_countdown(False), 1, 8, a, b)
    assert report.ok and report.barriers == 1
    np.testing.assert_array_equal(b, (a * (a + 1) // 2)[::-1])
    f = _expect(gpusim.DIVERGENT_BARRIER, _countdown(True), 1, 8, a, b, match="6 of 8 threads arrive")
    assert "(a while loop)" in f.message


def test_kernel_with_thread_extent_attrs():
    tx = te.thread_axis("threadIdx.x")
    bx = te.thread_axis("blockIdx.x")

    def build(ib, A, B):
        ib.scope_attr(bx, "thread_extent", 2)
        ib.scope_attr(tx, "thread_extent", 4)
        S = ib.allocate("float32", 4, name="S", scope="shared")
        S[tx.var] = A[bx.var * 4 + tx.var]
        ib.emit(_sync())
        B[bx.var * 4 + tx.var] = S[3 - tx.var]
    a, b = np.arange(8, dtype="float32"), poison(np.empty(8, "float32"))
    assert gpusim.run_kernel(_kernel(build, (8,), (8,)), 2, 4, a, b).ok
    np.testing.assert_array_equal(b, [3, 2, 1, 0, 7, 6, 5, 4])
