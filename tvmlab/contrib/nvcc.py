"""TVM's ``tvm.contrib.nvcc``: compile CUDA C to PTX (NVRTC, or the nvcc command) and the
compute-capability checks TVM's tests ask before using float16 / int8 / tensor cores."""
from __future__ import annotations

from ..codegen.cuda_build import DEFAULT_ARCH, compile_cuda as _compile
from ..errors import BuildError


def _arch_number(arch):
    if arch is None:
        return DEFAULT_ARCH
    digits = "".join(c for c in str(arch) if c.isdigit())
    if not digits:
        raise BuildError(f"compile_cuda: arch must look like sm_80, got {arch!r}")
    return int(digits)


def compile_cuda(code, target_format="ptx", arch=None, options=None, path_target=None):
    """PTX text for ``code`` (``target_format`` "ptx" only: cubins come from the driver at load)."""
    if target_format != "ptx":
        raise BuildError(f"compile_cuda: tvmlab produces PTX only, got target_format={target_format!r}")
    return _compile(code, _arch_number(arch))


def _version(compute_version):
    major, _, minor = str(compute_version).partition(".")
    try:
        return int(major), int(minor or 0)
    except ValueError:
        raise BuildError(f"compute version must look like '7.5', got {compute_version!r}") from None


def have_fp16(compute_version):
    """Whether a GPU of this compute capability has fast float16 arithmetic (5.3, or 6.0 and up)."""
    major, minor = _version(compute_version)
    return (major, minor) == (5, 3) or major >= 6


def have_int8(compute_version):
    """Whether a GPU of this compute capability has dp4a int8 dot products (6.1 and up)."""
    major, minor = _version(compute_version)
    return (major, minor) >= (6, 1)


def have_tensorcore(compute_version=None, target=None):
    """Whether a GPU of this compute capability has tensor cores (7.0 and up)."""
    if compute_version is None:
        return False
    return _version(compute_version)[0] >= 7


def have_bf16(compute_version):
    """Whether a GPU of this compute capability has bfloat16 arithmetic (8.0 and up)."""
    return _version(compute_version)[0] >= 8
