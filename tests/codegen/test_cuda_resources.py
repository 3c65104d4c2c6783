"""What a CUDA kernel costs the SM, without a GPU: registers, shared memory and spills from ptxas or
the cubin, and the theoretical occupancy they allow."""
import shutil

import pytest

import tvmlab as tvm
from tvmlab.codegen.cuda_resources import KernelResources, occupancy, parse_cubin, parse_ptxas
from tvmlab.errors import BuildError

import gpu_programs as P

PTXAS_TEXT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k0' for 'sm_80'
ptxas info    : Function properties for k0
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 96 registers, used 1 barriers, 4096 bytes smem, 376 bytes cmem[0]
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, 368 bytes cmem[0]
"""


def test_parse_ptxas():
    got = parse_ptxas(PTXAS_TEXT)
    assert got["k0"] == KernelResources("k0", 96, 4096, 16, 8, 12, "ptxas")
    assert got["k1"] == KernelResources("k1", 12, 0, 0, 0, 0, "ptxas")


@pytest.mark.parametrize("regs,shared,threads,arch,want", [
    (32, 512, 64, 80, (32, 1.0, "threads")),          # 64 warps of 64, 32 blocks
    (56, 2176, 64, 90, (18, 36 / 64, "registers")),    # 1792 registers a warp: 36 warps
    (16, 48 * 1024, 256, 80, (3, 24 / 64, "shared memory")),
    (16, 0, 32, 75, (16, 0.5, "blocks")),              # sm_75: 16 blocks of one warp, 32 warps
    (255, 0, 1024, 80, (0, 0.0, "registers")),         # 255 registers x 1024 threads does not fit
])
def test_occupancy(regs, shared, threads, arch, want):
    o = occupancy(KernelResources("k", regs, shared), threads, arch)
    assert (o.blocks, o.occupancy, o.limited_by) == want


def test_occupancy_of_an_unknown_arch_is_an_error():
    with pytest.raises(BuildError, match="no occupancy limits for sm_30"):
        occupancy(KernelResources("k", 10, 0), 64, 30)


def test_cubin_and_ptxas_agree_and_the_report_reads_them():
    s, args, _ = P.tiled_matmul()
    kmod = tvm.build(s, args, "cuda -arch=sm_80").imported_modules[0]
    from_cubin = parse_cubin(kmod.get_source("cubin"))["default_function_kernel0"]
    assert from_cubin.registers > 0 and from_cubin.shared_bytes == 512 and from_cubin.source == "cubin"
    if shutil.which("ptxas"):
        from_ptxas = kmod.resources()["default_function_kernel0"]
        assert (from_ptxas.registers, from_ptxas.shared_bytes) == (from_cubin.registers, from_cubin.shared_bytes)
        assert from_ptxas.spill_stores == 0
    report = kmod.get_source("resources")
    assert "default_function_kernel0: 64 threads/block" in report and "512 B shared/block" in report
    assert "occupancy" in report and "limited by" in report
