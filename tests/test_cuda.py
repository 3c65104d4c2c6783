"""CUDA backend: every test kernel compiles with NVRTC here; runs against numpy where a GPU exists."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab.errors import BuildError, DeviceError

import gpu_programs as P

HAS_GPU = tvm.cuda(0).exist
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA device on this machine (tvmlab.cuda(0).exist is "
                                                    "False); the kernels are still compiled by NVRTC")

PROGRAMS = {
    "vector_add": (P.vector_add, lambda: [(1000,), (1000,)]),
    "tiled_matmul": (P.tiled_matmul, lambda: [(64, 40), (40, 48)]),
    "rfactor_sum": (P.rfactor_sum, lambda: [(37, 100)]),
    "rfactor_max": (P.rfactor_max, lambda: [(20, 100)]),
    "serial_reduce": (P.serial_reduce, lambda: [(100, 37)]),
    "conv2d": (P.conv2d, lambda: [(1, 4, 10, 10), (8, 4, 3, 3)]),
    "vthread_add": (P.vthread_add, lambda: [(256,)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiles_with_nvrtc(name):
    s, args, _ = PROGRAMS[name][0]()
    f = tvm.build(s, args, "cuda")
    dev = f.imported_modules[0]
    src = dev.get_source()
    assert '__global__ void' in src and "default_function_kernel0(" in src
    for t in args:                               # kernel parameters are named after the tensors
        assert f"* __restrict__ {t.name}" in src
    ptx = dev.get_source("ptx")
    assert ".entry default_function_kernel0" in ptx


def test_source_shapes():
    s, args, _ = P.tiled_matmul()
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "__shared__ float A_shared[" in src and "__shared__ float B_shared[" in src
    assert "float C_local[1];" in src
    assert src.count("__syncthreads();") >= 2
    s, args, _ = P.rfactor_sum()
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "__shfl_down_sync(0xffffu, B_red[0], 8, 16)" in src and "__syncthreads();" not in src


def test_nvrtc_reports_errors():
    from tvmlab.codegen.cuda_build import compile_nvrtc
    with pytest.raises(BuildError, match="NVRTC could not compile"):
        compile_nvrtc('extern "C" __global__ void f() { undefined_thing(); }', 75)


def test_unknown_option():
    s, args, _ = P.vector_add()
    with pytest.raises(BuildError, match="unknown option"):
        tvm.build(s, args, "cuda -bogus=1")


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_no_device_errors():
    assert tvm.cuda(0).exist is False
    with pytest.raises(DeviceError, match="cuda"):
        tvm.nd.array(np.ones(4, "float32"), tvm.cuda(0))
    with pytest.raises(DeviceError, match="cuda"):
        tvm.nd.empty((4,), "float32", tvm.cuda(0))
    s, args, _ = P.vector_add()
    f = tvm.build(s, args, "cuda")
    with pytest.raises(DeviceError, match="no CUDA device"):
        f()


@needs_gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_against_numpy(name):
    rng = np.random.default_rng(0)
    make, shapes = PROGRAMS[name]
    s, args, ref = make()
    f = tvm.build(s, args, "cuda")
    dev = tvm.cuda(0)
    ins = [rng.uniform(-1, 1, sh).astype("float32") for sh in shapes()]
    want = ref(*ins)
    out = tvm.nd.array(np.full(want.shape, np.nan, "float32"), dev)
    f(*[tvm.nd.array(x, dev) for x in ins], out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)


@needs_gpu
def test_symbolic_sizes_run():
    rng = np.random.default_rng(1)
    s, args, ref = P.vector_add()
    f = tvm.build(s, args, "cuda")
    dev = tvm.cuda(0)
    for n in (1, 63, 64, 1000):
        a, b = rng.random(n).astype("float32"), rng.random(n).astype("float32")
        c = tvm.nd.array(np.full(n, np.nan, "float32"), dev)
        f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
        np.testing.assert_allclose(c.numpy(), a + b, rtol=1e-6)
