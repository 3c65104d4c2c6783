"""TVM's ``tvm.contrib.nvcc``: compile CUDA C to PTX or a cubin, and what a compute capability offers.

``compile_cuda`` uses the same compilers as the cuda target (NVRTC, else the
``nvcc`` command), so it works without a GPU.  A function registered as
``tvm_callback_cuda_compile`` (``@tvm.register_func("tvm_callback_cuda_compile")``)
replaces the cuda target's compiler: it gets the CUDA C and returns PTX.
"""
from __future__ import annotations

from ..errors import BuildError

_FORMATS = ("ptx", "cubin")


def _arch_number(arch):
    if arch is None:
        return None
    if isinstance(arch, (list, tuple)):
        if not arch:
            return None
        arch = arch[0]
    digits = "".join(c for c in str(arch) if c.isdigit())
    if not digits:
        raise BuildError(f"nvcc.compile_cuda: arch must look like 'sm_80', got {arch!r}")
    return int(digits)


def compile_cuda(code, target_format="ptx", arch=None, options=None, path_target=None):
    """Compile CUDA C ``code``; returns the PTX (bytes) or, with ``target_format="cubin"``, the cubin.

    ``arch`` is "sm_80" (default: the GPU's, else sm_75); ``options`` are accepted for TVM's
    signature and must be empty (tvmlab passes its own); ``path_target`` also writes the result there.
    """
    from ..codegen.cuda_build import DEFAULT_ARCH, compile_cuda as _compile
    if target_format not in _FORMATS:
        raise BuildError(f"nvcc.compile_cuda: target_format must be one of {_FORMATS}, got {target_format!r}")
    if options:
        raise BuildError(f"nvcc.compile_cuda: extra compiler options are not supported, got {options!r}")
    n = _arch_number(arch)
    if n is None:
        from ..runtime import cuda_driver
        b = cuda_driver.backend()
        n = (lambda cc: cc[0] * 10 + cc[1])(b.compute_capability(0)) if b is not None else DEFAULT_ARCH
    out = _compile(code, n, cubin=target_format == "cubin")
    if target_format == "cubin":
        if out.cubin is None:
            raise BuildError(f"nvcc.compile_cuda: no cubin for sm_{n}: {out.note}")
        data = out.cubin
    else:
        data = out.ptx.encode()
    if path_target:
        with open(path_target, "wb") as f:
            f.write(data)
    return bytearray(data)


def parse_compute_version(compute_version):
    """(major, minor) from "8.0"."""
    try:
        major, minor = str(compute_version).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        raise BuildError(f"compute version must look like '8.0', got {compute_version!r}") from None


def have_fp16(compute_version):
    """Half-precision arithmetic: compute capability 5.3 and later."""
    major, minor = parse_compute_version(compute_version)
    return (major, minor) >= (5, 3)


def have_int8(compute_version):
    """The dp4a instruction: compute capability 6.1 and later."""
    major, minor = parse_compute_version(compute_version)
    return (major, minor) >= (6, 1)


def have_tensorcore(compute_version=None, target=None):
    """Tensor cores: compute capability 7.0 and later."""
    if compute_version is None:
        return False
    major, _ = parse_compute_version(compute_version)
    return major >= 7


def have_bf16(compute_version):
    """bfloat16 arithmetic: compute capability 8.0 and later."""
    major, _ = parse_compute_version(compute_version)
    return major >= 8
