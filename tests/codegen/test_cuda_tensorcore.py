"""Tensor cores (wmma): CUDA C and PTX, fragment inference, the simulator's warp-collective calls, and
topi.cuda.dense_tensorcore / batch_matmul_tensorcore against numpy."""
import importlib
import re

import numpy as np
import pytest

import tvmlab as tvm
import tvmlab.testing
from tvmlab import te, topi
from tvmlab.analysis import gpusim
from tvmlab.errors import BuildError, LoweringError, ScheduleError, SimulationError
from tvmlab.ir.expr import Var
from tvmlab.ir.function import Buffer, PrimFunc
from tvmlab.ir.op import call_intrin
from tvmlab.lower.tensor_core import infer_fragments
from tvmlab.testing.sim_cuda import SimCUDAArray, simulated_cuda
from tvmlab.tir import ir_builder


def _dense(m, n, k, out_dtype="float32", target="cuda"):
    X = te.placeholder((m, k), "float16", name="X")
    W = te.placeholder((n, k), "float16", name="W")
    C = topi.cuda.dense_tensorcore(X, W, out_dtype=out_dtype)
    s = topi.cuda.schedule_dense_tensorcore([C])
    return tvm.build(s, [X, W, C], target)


def _rand(rng, *shape):
    return rng.uniform(-1, 1, shape).astype("float16")


def test_cuda_c_declares_fragments_and_calls_wmma():
    f = _dense(64, 64, 64)
    k = f.imported_modules[0]
    src = k.get_source()
    assert "#include <mma.h>" in src
    assert ("nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major>" in src)
    assert ("nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, half, nvcuda::wmma::col_major>" in src)
    assert "nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>" in src
    for call in ("fill_fragment", "load_matrix_sync", "mma_sync", "store_matrix_sync"):
        assert f"nvcuda::wmma::{call}(" in src
    assert "__syncthreads()" in src
    ptx = k.get_source("ptx")
    assert "wmma.mma.sync" in ptx or "mma.sync" in ptx


@pytest.mark.parametrize("m,n,k,out_dtype", [(64, 64, 64, "float32"), (96, 40, 48, "float32"),
                                             (40, 96, 32, "float32"), (32, 32, 48, "float16")])
def test_dense_tensorcore_on_the_simulator(rng, m, n, k, out_dtype):
    f = _dense(m, n, k, out_dtype)
    x, w = _rand(rng, m, k), _rand(rng, n, k)
    c = np.full((m, n), np.nan, out_dtype)
    tvm.testing.simulate(f, x, w, c)
    want = x.astype("float32") @ w.astype("float32").T
    tol = 1e-4 if out_dtype == "float32" else 2e-2
    np.testing.assert_allclose(c.astype("float32"), want, rtol=tol, atol=tol)


def test_large_products_take_128_by_128_block_tiles(rng, monkeypatch):
    """Products with enough blocks take 4 x 4 fragments per warp (a 128 x 128 block tile, half the L2
    bytes per FLOP of 64 x 64): here forced at a small size, checked thread by thread; the registers
    hold it without spills."""
    tc = importlib.import_module("tvmlab.topi.cuda.tensorcore")
    m, n, k = 256, 128, 64

    def grid(f):
        (ln,) = f.get_function(f.entry_name).launches
        return ln.grid(), ln.block()
    assert grid(_dense(m, n, k, target="cuda -arch=sm_90")) == ((2, 4, 1), (32, 2, 2))     # 64 x 64 tiles
    monkeypatch.setattr(tc, "LARGE_BLOCKS", 2)
    f = _dense(m, n, k, target="cuda -arch=sm_90")
    assert grid(f) == ((1, 2, 1), (32, 2, 2))                                              # 128 x 128
    (res,) = f.imported_modules[0].resources().values()
    assert res.registers <= 255 and res.spill_stores in (0, None)     # None: no ptxas here, the cubin's count
    x, w = _rand(rng, m, k), _rand(rng, n, k)
    c = np.full((m, n), np.nan, "float32")
    tvm.testing.simulate(f, x, w, c)
    np.testing.assert_allclose(c, x.astype("float32") @ w.astype("float32").T, rtol=1e-4, atol=1e-4)


def test_fragment_shapes_follow_the_problem():
    assert topi.cuda.tensorcore.fragment_shape(64, 64, 64) == (16, 16, 16)
    assert topi.cuda.tensorcore.fragment_shape(96, 40, 48) == (32, 8, 16)
    assert topi.cuda.tensorcore.fragment_shape(40, 96, 32) == (8, 32, 16)
    assert "32, 8, 16, float>" in _dense(96, 40, 48).imported_modules[0].get_source()


def test_batch_matmul_tensorcore_on_the_simulator(rng):
    X = te.placeholder((2, 32, 48), "float16", name="X")
    Y = te.placeholder((2, 64, 48), "float16", name="Y")
    C = topi.cuda.batch_matmul_tensorcore(X, Y)
    s = topi.cuda.schedule_batch_matmul_tensorcore([C])
    f = tvm.build(s, [X, Y, C], "cuda")
    x, y = _rand(rng, 2, 32, 48), _rand(rng, 2, 64, 48)
    c = np.full((2, 32, 64), np.nan, "float32")
    tvm.testing.simulate(f, x, y, c)
    want = np.matmul(x.astype("float32"), y.astype("float32").transpose(0, 2, 1))
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_bad_shapes_and_dtypes_are_refused():
    with pytest.raises(ScheduleError, match=r"\(M, N, K\) = \(20, 64, 64\)"):
        topi.cuda.dense_tensorcore(te.placeholder((20, 64), "float16"), te.placeholder((64, 64), "float16"))
    with pytest.raises(ScheduleError, match="float16 inputs"):
        topi.cuda.dense_tensorcore(te.placeholder((64, 64)), te.placeholder((64, 64)))
    with pytest.raises(ScheduleError, match="differ in in_dim"):
        topi.cuda.dense_tensorcore(te.placeholder((64, 64), "float16"), te.placeholder((64, 32), "float16"))
    with pytest.raises(ScheduleError, match="batch and K"):
        topi.cuda.batch_matmul_tensorcore(te.placeholder((2, 32, 32), "float16"),
                                          te.placeholder((3, 32, 32), "float16"))
    X = te.placeholder((32, 32), "float16", name="X")
    with pytest.raises(ScheduleError, match="one tensor as both operands"):
        topi.cuda.schedule_dense_tensorcore([topi.cuda.dense_tensorcore(X, X)])
    with pytest.raises(ScheduleError, match="out_dtype"):
        topi.cuda.dense_tensorcore(te.placeholder((64, 64), "float16"), te.placeholder((64, 64), "float16"),
                                   out_dtype="int32")


def test_old_architecture_is_refused():
    with pytest.raises(BuildError, match="sm_70 or newer"):
        _dense(32, 32, 32, target="cuda -arch=sm_60")


# ---------------------------------------------------------------- fragment inference and the simulator
def _acc_kernel(cond=None, shape=(16, 16, 16), store_shape=None, value=2.0, fill=True, ldm=16, at=0):
    """A kernel filling one 16x16 accumulator with ``value`` (under ``cond``; not at all without ``fill``)
    and storing it to C (rows ``ldm`` apart, from element ``at``)."""
    C = Buffer("C", (16 + at // ldm + 1, ldm), "float32")
    ib = ir_builder.create()
    frag = ib.allocate("float32", 256, name="acc", scope="wmma.accumulator")
    filler = call_intrin("handle", "tir.tvm_fill_fragment", frag.asobject(), *shape, 0, value)
    store = call_intrin("handle", "tir.tvm_store_matrix_sync", frag.asobject(), *(store_shape or shape), 0,
                        C.access_ptr("w", offset=at), ldm, "row_major")
    if fill and cond is None:
        ib.emit(filler)
    elif fill:
        with ib.if_scope(cond):
            ib.emit(filler)
    ib.emit(store)
    return PrimFunc("planted", [C.data], {C.data: C}, ib.get())


def test_simulator_runs_a_warp_collective_fill_and_store():
    c = np.full((16, 16), np.nan, "float32")
    gpusim.run_kernel(_acc_kernel(), 1, 32, c)
    assert (c == 2).all()


def test_simulator_holds_tile_pointers_to_the_tensor_cores_alignment():
    # the pointer 32-byte aligned, the row stride (ldm) whole 16 bytes: else undefined on a GPU
    for ldm, at, ok in ((16, 8, True), (20, 0, True), (18, 0, False), (16, 4, False)):
        c = np.full((17 + at // ldm, ldm), np.nan, "float32")
        if ok:
            gpusim.run_kernel(_acc_kernel(ldm=ldm, at=at), 1, 32, c)
            assert (c.reshape(-1)[at:at + 16 * ldm].reshape(16, ldm)[:, :16] == 2).all()
        else:
            with pytest.raises(SimulationError, match="not a multiple of 16 bytes|not 32-byte aligned"):
                gpusim.run_kernel(_acc_kernel(ldm=ldm, at=at), 1, 32, c)


def test_simulator_reports_a_call_part_of_a_warp_skips():
    c = np.full((16, 16), np.nan, "float32")
    with pytest.raises(SimulationError) as e:
        gpusim.run_kernel(_acc_kernel(cond=Var("threadIdx.x") < 16), 1, 32, c)
    found = e.value.report.of_kind(gpusim.DIVERGENT_WARP)
    assert found and "tvm_fill_fragment" in found[0].message and "the same warp do not" in found[0].message


def test_simulator_checks_values_are_one_per_warp_and_fragments_are_written():
    c = np.full((16, 16), np.nan, "float32")
    value = Var("threadIdx.x").astype("float32")
    with pytest.raises(SimulationError, match="fill value of tvm_fill_fragment differs between the lanes"):
        gpusim.run_kernel(_acc_kernel(value=value), 1, 32, c)
    with pytest.raises(SimulationError) as e:
        gpusim.run_kernel(_acc_kernel(fill=False), 1, 32, c)
    assert e.value.report.of_kind(gpusim.UNINITIALIZED)


def test_fragment_shape_mismatch_is_a_lowering_error():
    with pytest.raises(LoweringError, match="used with shape"):
        infer_fragments(_acc_kernel(store_shape=(32, 8, 16)).body)
    with pytest.raises(LoweringError, match="tensor cores take"):
        infer_fragments(_acc_kernel(shape=(16, 16, 8)).body)


def test_simulated_cuda_device_runs_a_build_as_tvm_cuda(rng):
    f = _dense(32, 32, 32)
    x, w = _rand(rng, 32, 32), _rand(rng, 32, 32)
    with simulated_cuda() as simulated:
        dev = tvm.cuda(0)
        a, b = tvm.nd.array(x, dev), tvm.nd.array(w, dev)
        c = tvm.nd.array(np.full((32, 32), np.nan, "float32"), dev)
        f(a, b, c)
        got = c.numpy()
        if simulated:
            assert isinstance(c, SimCUDAArray)
        # timing works on it too (the host's clock around the simulated calls, the GPU's events on a GPU)
        res = f.time_evaluator(f.entry_name, dev, number=1, repeat=2)(a, b, c)
        assert len(res.results) == 2 and all(t > 0 for t in res.results)
    np.testing.assert_allclose(got, x.astype("float32") @ w.astype("float32").T, rtol=1e-4, atol=1e-4)
    if simulated:
        assert not tvm.cuda(0).exist


def test_relay_float16_products_for_cuda_run_on_tensor_cores(rng):
    # relay.build(target="cuda") computes float16 dense / batch_matmul on tensor cores; the bias and relu
    # fused after the dense run in its kernel, from the block's results in shared memory
    from tvmlab import relay
    x = relay.var("x", shape=(32, 64), dtype="float16")
    w = relay.var("w", shape=(48, 64), dtype="float16")
    b = relay.var("b", shape=(48,), dtype="float16")
    p = relay.var("p", shape=(2, 16, 32), dtype="float16")
    q = relay.var("q", shape=(2, 16, 32), dtype="float16")
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w), b))
    z = relay.nn.batch_matmul(p, q)
    mod = tvm.IRModule.from_expr(relay.Function([x, w, b, p, q], relay.Tuple([y, z])))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="cuda")
    src = "".join(m.get_source() for m in lib.get_lib().imported_modules)
    # the two products on tensor cores, one kernel each; the dense's fragments go to shared memory
    assert src.count("nvcuda::wmma::mma_sync") == 2 and src.count("__global__") == 2
    stores = sorted(re.findall(r"store_matrix_sync\(\(*&?(?:\w+\*\))?(\w+)", src))
    assert len(stores) == 2 and stores[0] == "T_batch_matmul" and stores[1].endswith("_shared"), stores
    xv, wv, pv, qv = (_rand(rng, *s) for s in ((32, 64), (48, 64), (2, 16, 32), (2, 16, 32)))
    bv = _rand(rng, 48)
    gy, gz = tvm.testing.simulate_graph(lib, x=xv, w=wv, b=bv, p=pv, q=qv)
    f32 = np.float32
    want_y = np.maximum(xv.astype(f32) @ wv.astype(f32).T + bv.astype(f32), 0)
    np.testing.assert_allclose(gy.astype(f32), want_y, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(gz.astype(f32), pv.astype(f32) @ qv.astype(f32).transpose(0, 2, 1),
                               rtol=2e-2, atol=2e-2)
    # shapes no fragment fits, float32, or the switch off: the CUDA C has no wmma
    for shape, dtype, config in (((30, 64), "float16", {}), ((32, 64), "float32", {}),
                                 ((32, 64), "float16", {"relay.cuda_tensorcore": False})):
        x = relay.var("x", shape=shape, dtype=dtype)
        w = relay.var("w", shape=(48, 64), dtype=dtype)
        with tvm.transform.PassContext(opt_level=3, config=config):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.dense(x, w))), target="cuda")
        assert "wmma" not in "".join(m.get_source() for m in lib.get_lib().imported_modules)


@pytest.mark.parametrize("batched", [False, True])
def test_elementwise_tail_runs_in_the_product_kernel(rng, batched):
    # bias + relu after the product: one kernel; the fragments go through a padded shared tile (no
    # bank conflicts) and the tail writes global memory coalesced; shapes with several blocks each way
    if batched:
        P = te.placeholder((2, 64, 64), "float16", name="P")
        Q = te.placeholder((2, 96, 64), "float16", name="Q")
        C = topi.cuda.batch_matmul_tensorcore(P, Q)
        B = te.placeholder((96,), "float32", name="B")
        R = te.compute(C.shape, lambda b, i, j: te.max(C[b, i, j] + B[j], 0.0), name="R")
        sched = topi.cuda.schedule_batch_matmul_tensorcore
        shapes = ((2, 64, 64), (2, 96, 64))
    else:
        P = te.placeholder((128, 64), "float16", name="P")
        Q = te.placeholder((96, 64), "float16", name="Q")
        B = te.placeholder((96,), "float32", name="B")
        R = topi.nn.relu(topi.cuda.dense_tensorcore(P, Q, B, out_dtype="float32"))
        sched = topi.cuda.schedule_dense_tensorcore
        shapes = ((128, 64), (96, 64))
    f = tvm.build(sched([R]), [P, Q, B, R], "cuda -arch=sm_80")
    p, q = _rand(rng, *shapes[0]), _rand(rng, *shapes[1])
    b = rng.standard_normal(96).astype("float32")
    r = np.full(tuple(int(d) for d in R.shape), np.nan, "float32")
    report = tvm.testing.simulate(f, p, q, b, r, traffic=True)
    f32 = np.float32
    prod = p.astype(f32) @ np.swapaxes(q.astype(f32), -1, -2)
    np.testing.assert_allclose(r, np.maximum(prod + b, 0), rtol=2e-2, atol=2e-2)
    assert len(report.launches) == 1
    for row in report.traffic():
        assert row.efficiency == 1.0, row.text()


def test_dense_tensorcore_takes_tvms_bias_argument(rng):
    X = te.placeholder((32, 32), "float16", name="X")
    W = te.placeholder((16, 32), "float16", name="W")
    B = te.placeholder((16,), "float16", name="B")
    C = topi.cuda.dense_tensorcore(X, W, B, out_dtype="float32")
    f = tvm.build(topi.cuda.schedule_dense_tensorcore([C]), [X, W, B, C], "cuda")
    x, w, b = _rand(rng, 32, 32), _rand(rng, 16, 32), _rand(rng, 16)
    c = np.full((32, 16), np.nan, "float32")
    tvm.testing.simulate(f, x, w, b, c)
    want = x.astype("float32") @ w.astype("float32").T + b.astype("float32")
    np.testing.assert_allclose(c, want, rtol=1e-2, atol=1e-2)
    with pytest.raises(ScheduleError, match="bias must be a tensor of shape"):
        topi.cuda.dense_tensorcore(X, W, te.placeholder((8,), "float16", name="b8"))
