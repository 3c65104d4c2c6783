"""build_cuda: a GPU-lowered IRModule -> CUDA C -> PTX (NVRTC, nvcc as fallback) -> runtime Module.

The IRModule comes from ``lower(..., target="cuda")`` (host function plus
kernels).  Compilation needs no GPU, so every codegen error surfaces at build
time on any machine.  The returned host Module runs the host function: it
checks the arguments (CUDA NDArrays, dtypes, shapes binding the shape
variables), evaluates each launch's grid and block from them, and launches
the kernels in order.  ``mod.imported_modules[0].get_source()`` is the CUDA C,
``get_source("ptx")`` the PTX.

Target options: ``-arch=sm_80`` (default: the GPU's, else sm_75), the GPU
limits of ``tvmlab.lower.verify_gpu`` (``-max_threads_per_block=512``, ...).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..errors import BuildError, DeviceError, RuntimeArgError
from ..ir.function import IRModule
from ..lower.verify_gpu import DEFAULT_LIMITS
from ..runtime import cuda_driver
from ..runtime.module import Module
from .cuda_codegen import ctype, generate_cuda
from .device_host import DeviceHost
from .registry import Target, register_target

_OPTIONS = ("arch",) + tuple(DEFAULT_LIMITS)
_IGNORED = ("keys", "model", "tag")
DEFAULT_ARCH = 75


def _arch(target):
    a = target.options.get("arch")
    if a:
        digits = "".join(c for c in str(a) if c.isdigit())
        if not digits:
            raise BuildError(f"-arch must look like sm_80, got {a!r}")
        return int(digits)
    if cuda_driver.backend() is not None:
        major, minor = cuda_driver.backend().compute_capability(0)
        return major * 10 + minor
    return DEFAULT_ARCH


def compile_nvrtc(src, arch, name="tvmlab_kernels.cu"):
    """PTX (text) and, when possible, a cubin for sm_<arch> compiled from ``src`` by NVRTC."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise BuildError(f"NVRTC is not available ({e}); install cuda-python and nvidia-cuda-nvrtc") from None

    def check(res, what):
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise BuildError(f"NVRTC {what} failed: {err}")
        return res[1] if len(res) > 1 else None

    prog = check(nvrtc.nvrtcCreateProgram(src.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        supported = check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")
        virt = arch if arch in supported else max([a for a in supported if a <= arch] or [min(supported)])
        opts = [f"--gpu-architecture=compute_{virt}".encode(), b"-default-device", b"--std=c++14"]
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            size = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = b" " * size
            check(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            raise BuildError("NVRTC could not compile the generated CUDA C:\n"
                             f"{log.decode(errors='replace').strip()}\n--- source ---\n{src}")
        size = check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        ptx = b" " * size
        check(nvrtc.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return ptx.rstrip(b"\x00").decode()


def compile_nvcc(src, arch):
    """PTX from ``src`` with the nvcc command (the fallback when NVRTC is missing)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise BuildError("neither NVRTC (cuda-python + nvidia-cuda-nvrtc) nor nvcc is available to compile CUDA")
    with tempfile.TemporaryDirectory() as d:
        cu, out = os.path.join(d, "k.cu"), os.path.join(d, "k.ptx")
        with open(cu, "w") as f:
            f.write(src)
        r = subprocess.run([nvcc, "--ptx", f"-arch=compute_{arch}", cu, "-o", out],
                           capture_output=True, text=True, check=False)
        if r.returncode:
            raise BuildError(f"nvcc could not compile the generated CUDA C:\n{r.stderr}\n--- source ---\n{src}")
        with open(out) as f:
            return f.read()


def compile_cuda(src, arch):
    try:
        from cuda.bindings import nvrtc  # noqa: F401
    except ImportError:
        return compile_nvcc(src, arch)
    return compile_nvrtc(src, arch)


class CUDAFunction(DeviceHost):
    """The host function: checks arguments, computes launch dims, launches the kernels in order."""

    def __init__(self, host, launches, kernel_module):
        super().__init__(host, launches)
        self.kmod = kernel_module
        self._loaded = None

    def __repr__(self):
        return f"<CUDAFunction {self.name}({', '.join(p.name for p in self.host.params)})>"

    def _host_array(self, a, where):
        if not isinstance(a, cuda_driver.CUDANDArray):
            dev = getattr(getattr(a, "device", None), "device_type", type(a).__name__)
            raise RuntimeArgError(f"{where}: expected an NDArray on cuda, got {dev} (use "
                                  "tvmlab.nd.array(x, tvmlab.cuda(0)))")
        return a

    def _kernel_arg(self, value, dtype):
        if dtype == "handle":
            return (value._ptr, _ct("handle"))
        return (value, _ct(dtype))

    def __call__(self, *args):
        dev = next((a.device for a in args if isinstance(a, cuda_driver.CUDANDArray)), None)
        if cuda_driver.backend() is None:
            raise DeviceError(f"{self.name}: there is no CUDA device on this machine "
                              f"({cuda_driver.no_device_reason()})")
        env, values = self._bind(args)
        b = cuda_driver.require(dev)
        if self._loaded is None:
            image = self.kmod.get_source("ptx").encode() + b"\x00"
            module = b.load(image)
            self._loaded = (module, {ln.name: b.function(module, ln.name) for ln in self.launches})
        for var, dtype, count in self.temp_sizes(env):
            values[var] = cuda_driver.CUDANDArray((count,), dtype, dev)
        def launch(ln, grid, block, kargs):
            b.launch(self._loaded[1][ln.name], grid, block, 0, kargs)   # shared memory is static
        self.run_host(env, values, launch)

    def prepare(self, *args):
        return lambda: self(*args)


def _ct(dtype):
    import ctypes
    return {"handle": ctypes.c_void_p, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
            "float32": ctypes.c_float, "float64": ctypes.c_double, "uint32": ctypes.c_uint32,
            "int8": ctypes.c_int8, "int16": ctypes.c_int16, "uint8": ctypes.c_uint8,
            "bool": ctypes.c_bool}[dtype]


class CUDAModule(Module):
    """The device code: CUDA C and PTX (``get_source()`` / ``get_source("ptx")``)."""

    def __init__(self, kernels, cuda_src, ptx):
        super().__init__("cuda", {}, None, {"cu": cuda_src, "ptx": ptx}, aliases={"": "cu", "cuda": "cu"})
        self.kernels = kernels


def build_cuda(mod, target="cuda"):
    """Compile a GPU-lowered IRModule for CUDA; returns the host Module (device code imported)."""
    target = Target(target)
    unknown = [k for k in target.options if k not in _OPTIONS and k not in _IGNORED]
    if unknown:
        raise BuildError(f"unknown option(s) {', '.join('-' + k for k in unknown)} for target {str(target)!r}; "
                         f"the cuda target knows {', '.join('-' + k for k in _OPTIONS)}")
    split = getattr(mod, "device_split", None) if isinstance(mod, IRModule) else None
    if split is None:
        raise BuildError("build_cuda needs a module lowered for a GPU: tvm.lower(s, args, target='cuda') "
                         "or tvm.build(s, args, 'cuda')")
    for k in split.kernels:
        for p in k.params:
            ctype(p.dtype if p.dtype != "handle" else k.buffer_map[p].dtype, p.name)
    src = generate_cuda(split.kernels)
    ptx = compile_cuda(src, _arch(target))
    kmod = CUDAModule(split.kernels, src, ptx)
    fn = CUDAFunction(split.host, split.launches, kmod)
    host = Module("cuda_host", {fn.name: fn}, fn.name, {"host": split.host.script()},
                  aliases={"": "host"})
    host.imported_modules.append(kmod)
    return host


register_target("cuda", build_cuda, keys=("cuda", "gpu"))
