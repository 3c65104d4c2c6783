"""CUDA backend: every test kernel compiles with NVRTC here; runs against numpy where a GPU exists."""
import os

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab.errors import BuildError, DeviceError, RuntimeArgError

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
    assert "__shared__ __align__(16) float A_shared[" in src and "__shared__ __align__(16) float B_shared[" in src
    assert "float C_local[1];" in src
    assert src.count("__syncthreads();") >= 2
    s, args, _ = P.rfactor_sum()
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    assert "__shfl_down_sync(0xffffu, B_red_lane[0], 8, 16)" in src and "__syncthreads();" not in src


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


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_runs_against_numpy(name, cuda_run):
    rng = np.random.default_rng(0)
    make, shapes = PROGRAMS[name]
    s, args, ref = make()
    f = tvm.build(s, args, "cuda")
    ins = [rng.uniform(-1, 1, sh).astype("float32") for sh in shapes()]
    want = ref(*ins)
    *_, out = cuda_run(f, *ins, np.full(want.shape, np.nan, "float32"))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_symbolic_sizes_run(cuda_run):
    rng = np.random.default_rng(1)
    s, args, ref = P.vector_add()
    f = tvm.build(s, args, "cuda")
    for n in (1, 63, 64, 1000):
        a, b = rng.random(n).astype("float32"), rng.random(n).astype("float32")
        *_, c = cuda_run(f, a, b, np.full(n, np.nan, "float32"))
        np.testing.assert_allclose(c, a + b, rtol=1e-6)


def _is_cubin(image):
    """An ELF file for NVIDIA GPUs (e_machine EM_CUDA = 190)."""
    return image[:4] == b"\x7fELF" and int.from_bytes(image[18:20], "little") == 190


def test_cubin_for_a_known_arch():
    s, args, _ = P.vector_add()
    kmod = tvm.build(s, args, "cuda -arch=sm_80").imported_modules[0]
    cubin = kmod.get_source("cubin")
    assert isinstance(cubin, bytes) and _is_cubin(cubin)
    ptx = kmod.get_source("ptx")
    assert ".target sm_80" in ptx and ".entry default_function_kernel0" in ptx
    assert kmod.arch == 80
    assert kmod.image_for((8, 0)) == ("cubin", cubin) and kmod.image_for((8, 9))[0] == "cubin"
    assert kmod.image_for((9, 0)) == ("ptx", ptx.encode() + b"\x00")


def test_compile_nvrtc_makes_ptx_and_cubin():
    from tvmlab.codegen.cuda_build import compile_nvrtc
    src = 'extern "C" __global__ void f(unsigned int* a) { a[threadIdx.x] = __popc(a[threadIdx.x]); }'
    code = compile_nvrtc(src, 86)
    assert _is_cubin(code.cubin) and ".entry f" in code.ptx and code.arch == 86 and code.note == ""
    code = compile_nvrtc(src, 86, cubin=False)
    assert code.cubin is None and ".entry f" in code.ptx and "no cubin" in code.note


@pytest.mark.skipif(HAS_GPU, reason="without -arch the GPU's architecture is used")
def test_no_arch_without_gpu_gives_ptx_only():
    s, args, _ = P.vector_add()
    kmod = tvm.build(s, args, "cuda").imported_modules[0]
    with pytest.raises(RuntimeArgError, match=r"no cubin \(sm_75 is a guess.*-arch=sm_80"):
        kmod.get_source("cubin")
    assert kmod.image_for((7, 5))[0] == "ptx" and ".target sm_75" in kmod.get_source("ptx")


def test_unknown_arch_falls_back_with_a_warning():
    s, args, _ = P.vector_add()
    with pytest.warns(UserWarning, match=r"does not know sm_81 .*a cubin for sm_80, which runs on sm_81"):
        kmod = tvm.build(s, args, "cuda -arch=sm_81").imported_modules[0]
    assert kmod.arch == 80 and _is_cubin(kmod.get_source("cubin"))
    assert kmod.image_for((8, 1))[0] == "cubin"
    with pytest.warns(UserWarning, match=r"does not know sm_990 .*PTX for compute_\d+ only"):
        kmod = tvm.build(s, args, "cuda -arch=sm_990").imported_modules[0]
    with pytest.raises(RuntimeArgError, match="does not know sm_990"):
        kmod.get_source("cubin")
    assert ".entry default_function_kernel0" in kmod.get_source("ptx")
    assert kmod.image_for((99, 0))[0] == "ptx"
    with pytest.raises(BuildError, match=r"sm_10 is older than all of them"):
        tvm.build(s, args, "cuda -arch=sm_10")


@needs_gpu
def test_runs_from_the_cubin_of_the_gpus_arch():
    from tvmlab.runtime import cuda_driver
    s, args, ref = P.vector_add()
    f = tvm.build(s, args, "cuda")
    cc = cuda_driver.backend().compute_capability(0)
    assert f.imported_modules[0].image_for(cc)[0] == "cubin"
    rng = np.random.default_rng(2)
    a, b = rng.random(300).astype("float32"), rng.random(300).astype("float32")
    dev = tvm.cuda(0)
    c = tvm.nd.array(np.full(300, np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), tvm.nd.array(b, dev), c)
    np.testing.assert_allclose(c.numpy(), ref(a, b), rtol=1e-6)


def test_nvcc_fallback_makes_ptx_and_cubin(monkeypatch, tmp_path):
    """Without NVRTC, compile_cuda runs nvcc twice: --ptx for compute_XX and --cubin for sm_XX (a stand-in
    nvcc script records how it was called)."""
    import sys
    from tvmlab.codegen.cuda_build import compile_cuda
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\n"
                    'echo "$@" >> "$(dirname "$0")/calls"\n'
                    'for out; do :; done\n'                      # the last argument: the output file
                    'case "$1" in --ptx) echo "// ptx $2" > "$out";; --cubin) printf "\\177ELF$2" > "$out";; esac\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)   # NVRTC is not installed
    if "cuda.bindings" in sys.modules:
        monkeypatch.delattr(sys.modules["cuda.bindings"], "nvrtc", raising=False)
    code = compile_cuda("__global__ void f() {}", 86)
    assert code.ptx.strip() == "// ptx -arch=compute_86" and code.cubin == b"\x7fELF-arch=sm_86"
    code = compile_cuda("__global__ void f() {}", 75, cubin=False)
    assert code.cubin is None and "no cubin" in code.note
    calls = (tmp_path / "calls").read_text().split("\n")
    assert [c.split()[:2] for c in calls if c] == [["--ptx", "-arch=compute_86"], ["--cubin", "-arch=sm_86"],
                                                   ["--ptx", "-arch=compute_75"]]


def test_compiles_in_parallel_give_the_code_of_a_compile_in_turn():
    """Inside ``compile_in_parallel`` a build returns before NVRTC has finished; its module waits for the
    compile on first use, and has the same PTX and cubin as a build outside the block."""
    from tvmlab.codegen.cuda_build import compile_in_parallel
    names = ["vector_add", "tiled_matmul", "conv2d"]
    builds = {n: PROGRAMS[n][0]() for n in names}
    with compile_in_parallel(workers=2) as compiles:
        inside = {n: tvm.build(s, args, "cuda -arch=sm_80") for n, (s, args, _) in builds.items()}
        assert len(compiles) == 3
        first = inside["vector_add"].imported_modules[0]
        assert ".entry default_function_kernel0" in first.get_source("ptx")     # waits for it
    for n, (s, args, _) in builds.items():
        alone = tvm.build(s, args, "cuda -arch=sm_80").imported_modules[0]
        kmod = inside[n].imported_modules[0]
        assert kmod.get_source("ptx") == alone.get_source("ptx") and kmod.arch == alone.arch == 80
        assert kmod.get_source("cubin") == alone.get_source("cubin")


def test_a_compile_in_parallel_that_fails_raises_where_its_module_is_used(monkeypatch):
    from tvmlab.codegen import cuda_build
    real = cuda_build.compile_cuda

    def fails_on_matmuls(src, arch, cubin=True):
        if "shared" in src:
            raise BuildError("NVRTC could not compile the generated CUDA C: (made to fail)")
        return real(src, arch, cubin)
    monkeypatch.setattr(cuda_build, "compile_cuda", fails_on_matmuls)
    (s1, a1, _), (s2, a2, _) = P.vector_add(), P.tiled_matmul()
    with cuda_build.compile_in_parallel() as compiles:
        good, bad = tvm.build(s1, a1, "cuda -arch=sm_80"), tvm.build(s2, a2, "cuda -arch=sm_80")
    assert [fut.exception() is None for _, fut, _ in compiles] == [True, False]
    assert ".entry" in good.imported_modules[0].get_source("ptx")
    for _ in range(2):              # at every use, not only the first
        with pytest.raises(BuildError, match="made to fail"):
            bad.imported_modules[0].get_source("ptx")
    with pytest.raises(BuildError, match="made to fail"):
        bad.imported_modules[0].arch      # noqa: B018


def test_warnings_of_compiles_in_parallel_reach_the_caller():
    from tvmlab.codegen.cuda_build import compile_in_parallel
    s, args, _ = P.vector_add()
    with pytest.warns(UserWarning, match=r"does not know sm_81 .*a cubin for sm_80, which runs on sm_81"):
        with compile_in_parallel():
            kmod = tvm.build(s, args, "cuda -arch=sm_81").imported_modules[0]
    assert kmod.arch == 80
