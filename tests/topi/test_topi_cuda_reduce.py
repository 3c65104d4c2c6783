"""topi.cuda's reduction, softmax, layer-norm and injective schedules: a warp or a block per row combined
with shuffles, columns a thread each, totals in one or two kernels, the row operations in one kernel,
vectorized elementwise groups; checked thread by thread (and on a GPU where there is one)."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay, te, topi
from tvmlab.errors import ScheduleError


def _build(out_fn, shapes, schedule, dtype="float32"):
    ins = [te.placeholder(sh, dtype, name=f"A{k}") for k, sh in enumerate(shapes)]
    out = out_fn(*ins)
    s = schedule([out])
    f = tvm.build(s, ins + [out], target="cuda")
    return f, f.imported_modules[0].get_source(), out


def _run(cuda_run, f, out, *arrays):
    res = np.full(tuple(int(x) for x in out.shape), np.nan if "float" in out.dtype else -7, out.dtype)
    *_, got = cuda_run(f, *arrays, res)
    return got


def _kernels(src):
    return src.count("__global__")


# ---------------------------------------------------------------------- rows
ROWS = [((5, 45), -1, False), ((3, 700), 1, False), ((3, 5, 9), (1, 2), False), ((4, 3, 37), -1, True),
        ((2, 1000), -1, True)]


@pytest.mark.parametrize("op,ref", [(topi.sum, np.sum), (topi.max, np.max), (topi.min, np.min),
                                    (topi.prod, np.prod)])
@pytest.mark.parametrize("shape,axis,keepdims", ROWS)
def test_row_reduction_one_kernel_with_shuffles(cuda_run, rng, op, ref, shape, axis, keepdims):
    """Rows shorter and longer than 512 (a warp / a block per row), lengths no warp or block divides."""
    f, src, out = _build(lambda a: op(a, axis=axis, keepdims=keepdims), [shape], topi.cuda.schedule_reduce)
    assert _kernels(src) == 1 and "__shfl_down_sync" in src
    a = rng.uniform(0.9, 1.1, shape).astype("float32") if op is topi.prod else \
        rng.standard_normal(shape).astype("float32")
    got = _run(cuda_run, f, out, a)
    np.testing.assert_allclose(got, ref(a, axis=axis, keepdims=keepdims), rtol=1e-4, atol=1e-4)


def test_many_columns_keep_the_reduction_in_the_thread():
    _, src, _ = _build(lambda a: topi.sum(a, axis=0), [(64, 40000)], topi.cuda.schedule_reduce)
    assert "threadIdx.y" not in src and "__shared__" not in src


def test_long_rows_take_a_block_each():
    _, short, _ = _build(lambda a: topi.sum(a, axis=1), [(20, 500)], topi.cuda.schedule_reduce)
    _, few, _ = _build(lambda a: topi.sum(a, axis=1), [(3, 500)], topi.cuda.schedule_reduce)
    _, long, _ = _build(lambda a: topi.sum(a, axis=1), [(4, 5000)], topi.cuda.schedule_reduce)
    assert "__launch_bounds__(256)" in short and "threadIdx.y" in short      # 8 warps, a row each
    assert "__launch_bounds__(64)" in few                                    # no idle warps
    assert "__launch_bounds__(512)" in long and "__shared__" in long        # warps, then across warps


def test_mean_and_stages_before_and_after_in_one_kernel(cuda_run, rng):
    """Relay's mean (a sum, then a division) with an exponential inlined into the loads."""
    f, src, out = _build(lambda a: topi.mean(topi.exp(a), axis=-1, keepdims=True), [(6, 77)],
                         topi.cuda.schedule_reduce)
    assert _kernels(src) == 1
    a = rng.standard_normal((6, 77)).astype("float32")
    np.testing.assert_allclose(_run(cuda_run, f, out, a), np.exp(a).mean(-1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("op,ref", [(topi.argmax, np.argmax), (topi.argmin, np.argmin)])
@pytest.mark.parametrize("shape,axis", [((5, 45), 1), ((3, 700), -1), ((37, 6), 0)])
def test_arg_reductions(cuda_run, rng, op, ref, shape, axis):
    """Tuple reducers combine across threads too; small integers make ties (the first index wins)."""
    f, src, out = _build(lambda a: op(a, axis=axis), [shape], topi.cuda.schedule_reduce)
    a = rng.integers(0, 9, shape).astype("float32")
    np.testing.assert_array_equal(_run(cuda_run, f, out, a), ref(a, axis=axis))


@pytest.mark.parametrize("shape,axis,split", [((37, 45), 0, True), ((4, 6, 33), (0, 1), False),
                                              ((5, 9, 3), 1, False), ((3, 100, 33), 1, True)])
def test_column_reduction_a_thread_per_kept_element(cuda_run, rng, shape, axis, split):
    """Columns a thread each (coalesced); a long reduction with few columns is also split over threadIdx.y."""
    f, src, out = _build(lambda a: topi.sum(a, axis=axis), [shape], topi.cuda.schedule_reduce)
    assert _kernels(src) == 1 and "__shfl" not in src and ("threadIdx.y" in src) == split
    a = rng.standard_normal(shape).astype("float32")
    np.testing.assert_allclose(_run(cuda_run, f, out, a), a.sum(axis=axis), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,keepdims,kernels", [((300,), False, 1), ((300, 301), True, 2)])
def test_total_in_one_block_or_two_kernels(cuda_run, rng, shape, keepdims, kernels):
    """A short input is reduced by one block; a long one by a block per chunk, then one block."""
    f, src, out = _build(lambda a: topi.max(a, keepdims=keepdims), [shape], topi.cuda.schedule_reduce)
    assert _kernels(src) == kernels
    a = rng.standard_normal(shape).astype("float32")
    np.testing.assert_array_equal(_run(cuda_run, f, out, a), a.max(keepdims=keepdims))
    f, _, out = _build(lambda a: topi.sum(a, keepdims=keepdims), [shape], topi.cuda.schedule_reduce)
    np.testing.assert_allclose(_run(cuda_run, f, out, a), a.sum(keepdims=keepdims), rtol=1e-4, atol=1e-3)


def test_mean_of_everything_is_one_kernel(cuda_run, rng):
    """A scalar computed from a total (mean over every axis): one block, the division by its first thread."""
    f, src, out = _build(lambda a: topi.mean(a), [(30, 41)], topi.cuda.schedule_reduce)
    assert _kernels(src) == 1 and "__shfl_down_sync" in src
    a = rng.standard_normal((30, 41)).astype("float32")
    np.testing.assert_allclose(_run(cuda_run, f, out, a), a.mean(), rtol=1e-4, atol=1e-6)


def test_compiles_to_ptx():
    f, _, _ = _build(lambda a: topi.nn.softmax(a), [(4, 700)], topi.cuda.schedule_softmax)
    assert ".entry" in f.imported_modules[0].get_source("ptx")


# ---------------------------------------------------------------------- softmax, layer norm
def _softmax(a, axis=-1):
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(5, 45), (3, 700), (2, 3, 33)])
def test_softmax_one_kernel(cuda_run, rng, log, shape):
    op = topi.nn.log_softmax if log else topi.nn.softmax
    f, src, out = _build(lambda a: op(a, axis=-1), [shape], topi.cuda.schedule_softmax)
    assert _kernels(src) == 1 and src.count("__shfl_down_sync") >= 2     # the max and the sum
    a = (rng.standard_normal(shape) * 4).astype("float32")
    want = np.log(_softmax(a)) if log else _softmax(a)
    np.testing.assert_allclose(_run(cuda_run, f, out, a), want, rtol=1e-4, atol=1e-5)


def test_softmax_over_another_axis_keeps_a_thread_per_element(cuda_run, rng):
    f, src, out = _build(lambda a: topi.nn.softmax(a, axis=0), [(9, 9)], topi.cuda.schedule_softmax)
    assert "__shfl" not in src
    a = rng.standard_normal((9, 9)).astype("float32")
    np.testing.assert_allclose(_run(cuda_run, f, out, a), _softmax(a, 0), rtol=1e-5, atol=1e-6)


def _layer_norm(a, g, b, axes):
    m, v = a.mean(axes, keepdims=True), a.var(axes, keepdims=True)
    return (a - m) / np.sqrt(v + 1e-5) * g + b


@pytest.mark.parametrize("shape,axes", [((5, 45), [-1]), ((3, 700), [1]), ((2, 3, 4, 11), [2, 3])])
def test_layer_norm_one_kernel(cuda_run, rng, shape, axes):
    row = tuple(shape[a] for a in axes)
    f, src, out = _build(lambda a, g, b: topi.nn.layer_norm(a, g, b, axes), [shape, row, row],
                         topi.cuda.schedule_layer_norm)
    assert _kernels(src) == 1 and src.count("__shfl_down_sync") >= 2
    a = (rng.standard_normal(shape) * 3 + 5).astype("float32")
    g, b = (rng.standard_normal(row).astype("float32") for _ in range(2))
    want = _layer_norm(a, g, b, tuple(axes))
    np.testing.assert_allclose(_run(cuda_run, f, out, a, g, b), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(10, 512), (3, 768)])
def test_softmax_reads_its_row_once_into_registers(cuda_run, rng, shape):
    """Rows a multiple of 128 long: each thread takes 4 consecutive elements, loaded once (one float4)
    into registers for the max, the sum and the output, stored as one float4; several rows a block
    where the rows are short (10 rows of 512: 2 a block, the last block's second row guarded); the
    exponentials computed once (kept in registers for the sum and the output)."""
    f, src, out = _build(lambda a: topi.nn.softmax(a, axis=-1), [shape], topi.cuda.schedule_softmax)
    assert src.count("*(float4*)(A0 + ") == 1 and "A0[" not in src
    threads = shape[-1] // 4
    assert src.count("expf(") == 4 and f"__launch_bounds__({threads * max(1, 256 // threads)})" in src
    assert "*(float4*)(T_softmax_norm + " in src
    a = (rng.standard_normal(shape) * 4).astype("float32")
    np.testing.assert_allclose(_run(cuda_run, f, out, a), _softmax(a), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape", [(5, 384), (2, 3, 256)])
def test_layer_norm_under_a_gpu_target_reads_its_row_once(cuda_run, rng, shape):
    """Under a GPU target layer norm's statistics are the mean, then the squared deviations from it (no
    read of another element of the row), so each thread's 4 elements are read once, into registers,
    for both sums and the output.  A large mean against the spread keeps its accuracy."""
    row = shape[-1:]
    with tvm.target.Target("cuda"):
        f, src, out = _build(lambda a, g, b: topi.nn.layer_norm(a, g, b, [-1]), [shape, row, row],
                             topi.cuda.schedule_layer_norm)
    assert out.op.attrs.get("two_pass") and src.count("*(float4*)(A0 + ") == 1 and "A0[" not in src
    a = (rng.standard_normal(shape) * 3 + 1000).astype("float32")
    g, b = (rng.standard_normal(row).astype("float32") for _ in range(2))
    want = _layer_norm(a.astype("float64"), g, b, (-1,))
    np.testing.assert_allclose(_run(cuda_run, f, out, a, g, b), want, rtol=1e-3, atol=1e-3)


def test_long_rows_of_whole_vectors_take_a_thread_per_4_elements(cuda_run, rng):
    """A row sum of 1536: 384 threads (12 warps, combined across the warps padded to 16), a float4 each."""
    f, src, out = _build(lambda a: topi.sum(a, axis=1), [(3, 1536)], topi.cuda.schedule_reduce)
    assert "__launch_bounds__(384)" in src and src.count("*(float4*)(A0 + ") == 1
    a = rng.standard_normal((3, 1536)).astype("float32")
    np.testing.assert_allclose(_run(cuda_run, f, out, a), a.sum(1), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------- injective
@pytest.mark.parametrize("shape,bshape,wide", [((1001 * 4,), (1001 * 4,), "float4"), ((7, 36), (36,), "float4"),
                                               ((3, 10), (3, 10), "float2"), ((5, 7), (7,), None)])
def test_injective_vectorized_where_the_inner_axis_allows(cuda_run, rng, shape, bshape, wide):
    """Groups of 4 (or 2) elements a thread, blocks the groups do not fill guarded; else a thread each."""
    f, src, out = _build(lambda a, b: topi.add(a, b), [shape, bshape], topi.cuda.schedule_injective)
    assert (wide in src) if wide else ("float4" not in src and "float2" not in src)
    a, b = (rng.standard_normal(sh).astype("float32") for sh in (shape, bshape))
    np.testing.assert_array_equal(_run(cuda_run, f, out, a, b), a + b)


def test_large_outputs_take_4_vectors_a_thread(cuda_run, rng, monkeypatch):
    """From MANY_GROUPS vector groups on (forced small here), each thread takes 4 groups a block's width
    apart, unrolled: 4 float4 loads of each operand; the last block guarded where it is partial."""
    from tvmlab.topi.cuda import injective
    monkeypatch.setattr(injective, "MANY_GROUPS", 64)
    n = 4 * 256 * 4 * 2 + 36
    f, src, out = _build(lambda a, b: topi.add(a, b), [(n,), (n,)], topi.cuda.schedule_injective)
    assert src.count("*(float4*)(A0 + ") == 4 and src.count("*(float4*)(A1 + ") == 4
    a, b = (rng.standard_normal(n).astype("float32") for _ in range(2))
    np.testing.assert_allclose(_run(cuda_run, f, out, a, b), a + b, rtol=1e-6)


def test_injective_reshape_transpose_stays_wide(cuda_run, rng):
    """Splitting heads (reshape, transpose): the index of four consecutive elements is one ramp."""
    f, src, out = _build(lambda a: topi.transpose(topi.reshape(a, (2, 10, 4, 16)), (0, 2, 1, 3)),
                         [(2, 10, 64)], topi.cuda.schedule_injective)
    assert src.count("float4") >= 2
    a = rng.standard_normal((2, 10, 64)).astype("float32")
    np.testing.assert_array_equal(_run(cuda_run, f, out, a), a.reshape(2, 10, 4, 16).transpose(0, 2, 1, 3))


def test_cpu_target_is_refused():
    A = te.placeholder((4, 8), name="A")
    for sched, out in ((topi.cuda.schedule_reduce, topi.sum(A, axis=1)),
                       (topi.cuda.schedule_softmax, topi.nn.softmax(A)),
                       (topi.cuda.schedule_injective, topi.exp(A))):
        with pytest.raises(ScheduleError, match="target 'cuda'"):
            sched([out], target="llvm")


@pytest.mark.parametrize("cols", [40, None])
def test_symbolic_rows_and_row_length(cuda_run, rng, cols):
    """A symbolic number of rows (and row length): the row kernels still apply, guarded at run time."""
    m = te.var("m")
    A = te.placeholder((m, cols if cols else te.var("n")), name="A")
    a = rng.standard_normal((11, 40)).astype("float32")
    for out, sched, want in ((topi.sum(A, axis=1), topi.cuda.schedule_reduce, a.sum(1)),
                             (topi.nn.softmax(A), topi.cuda.schedule_softmax, _softmax(a)),
                             (topi.exp(A), topi.cuda.schedule_injective, np.exp(a))):
        f = tvm.build(sched([out]), [A, out], target="cuda")
        src = f.imported_modules[0].get_source()
        assert ("__shfl_down_sync" in src) == (sched is not topi.cuda.schedule_injective)
        res = np.full(want.shape, np.nan, "float32")
        *_, got = cuda_run(f, a, res)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- relay
def test_relay_groups_use_the_row_kernels(rng):
    """relay.build(target="cuda"): softmax, layer norm (with the residual add before it) and mean are one
    kernel each, the elementwise group vectorized, and the graph matches numpy on the simulator."""
    x = relay.var("x", shape=(6, 40), dtype="float32")
    y = relay.var("y", shape=(6, 40), dtype="float32")
    g = relay.var("g", shape=(40,), dtype="float32")
    b = relay.var("b", shape=(40,), dtype="float32")
    h = relay.nn.layer_norm(relay.add(x, y), g, b, axis=-1)
    p = relay.nn.softmax(relay.multiply(h, relay.const(2.0)))
    out = relay.Tuple([p, relay.mean(p, axis=-1, keepdims=True), relay.exp(x)])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, y, g, b], out)), target="cuda")
    src = lib.get_lib().get_source()
    names = lib.get_lib().function_names
    assert _kernels(src) == len(names) and src.count("__shfl_down_sync") >= 4 and "float4" in src
    xv, yv = (rng.standard_normal((6, 40)).astype("float32") for _ in range(2))
    gv, bv = (rng.standard_normal(40).astype("float32") for _ in range(2))
    got = tvm.testing.simulate_graph(lib, x=xv, y=yv, g=gv, b=bv)
    pw = _softmax(2 * _layer_norm(xv + yv, gv, bv, -1))
    np.testing.assert_allclose(got[0], pw, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[1], pw.mean(-1, keepdims=True), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[2], np.exp(xv), rtol=1e-6)


def test_relay_reduction_groups(rng):
    """A mean over everything (a scalar), argmax, a column sum and a max between elementwise stages."""
    x = relay.var("x", shape=(30, 41), dtype="float32")
    out = relay.Tuple([relay.mean(x), relay.argmax(x, axis=1), relay.sum(x, axis=0),
                       relay.max(relay.exp(x), axis=1, keepdims=True) * relay.const(2.0)])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], out)), target="cuda")
    assert _kernels(lib.get_lib().get_source()) == len(lib.get_lib().function_names) == 4
    xv = rng.standard_normal((30, 41)).astype("float32")
    got = tvm.testing.simulate_graph(lib, x=xv)
    np.testing.assert_allclose(got[0], xv.mean(), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(got[1], xv.argmax(1))
    np.testing.assert_allclose(got[2], xv.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[3], np.exp(xv).max(1, keepdims=True) * 2, rtol=1e-5)


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_transformer_block_on_the_simulator(rng, model):
    ort = pytest.importorskip("onnxruntime")
    from tvmlab.bench import models
    seq = 6
    ids = rng.integers(0, 40, (1, seq)).astype(np.int64)
    if model == "bert":
        m = models.bert(layers=1, hidden=32, heads=2, seq=seq, vocab=40, max_pos=16)
        inputs = {"input_ids": ids, "attention_mask": np.ones((1, seq), np.int64)}
    else:
        m = models.gpt2(layers=1, hidden=32, heads=2, seq=seq, vocab=40, max_pos=16)
        inputs = {"input_ids": ids}
    mod, params = relay.frontend.from_onnx(m, {k: v.shape for k, v in inputs.items()})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="cuda", params=params)
    src = lib.get_lib().get_source()
    assert "__shfl_down_sync" in src and "float4" in src
    (got,) = tvm.testing.simulate_graph(lib, **inputs)
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
