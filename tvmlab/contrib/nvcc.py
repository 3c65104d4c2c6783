"""CUDA capability checks spelled as TVM's ``tvm.contrib.nvcc`` (tvmlab compiles CUDA C with NVRTC, not
nvcc: see ``tvmlab.codegen.cuda_build``)."""
from __future__ import annotations

from ..errors import BuildError


def parse_compute_version(compute_version):
    """"8.6" -> (8, 6); BuildError for anything else."""
    parts = str(compute_version).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise BuildError(f"compute version must look like '8.6', got {compute_version!r}") from None


def have_fp16(compute_version):
    """Whether a GPU of this compute capability has float16 arithmetic (5.3, and 6.0 on)."""
    major, minor = parse_compute_version(compute_version)
    return (major, minor) == (5, 3) or major >= 6


def have_int8(compute_version):
    """Whether a GPU of this compute capability has int8 dot products (6.1 on)."""
    return parse_compute_version(compute_version) >= (6, 1)


def have_tensorcore(compute_version=None, target=None):
    """Whether a GPU of this compute capability has tensor cores (7.0 on)."""
    if compute_version is None:
        arch = str(getattr(target, "options", {}).get("arch", "")) if target is not None else ""
        if not arch.startswith("sm_"):
            return False
        digits = arch[3:]
        compute_version = f"{digits[:-1]}.{digits[-1:]}"
    return parse_compute_version(compute_version)[0] >= 7
