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

import numpy as np

from ..errors import BuildError, DeviceError, RuntimeArgError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.function import IRModule
from ..ir.functor import IRVisitor
from ..ir.printer import astext
from ..lower.verify_gpu import DEFAULT_LIMITS
from ..runtime import cuda_driver
from ..runtime.module import Module
from .cuda_codegen import ctype, generate_cuda
from .llvm_build import _py_fn
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
        if "#include <cuda_" in src:
            opts.append(f"--include-path={cuda_include_dir()}".encode())
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


def cuda_include_dir():
    """Where cuda_fp16.h / cuda_bf16.h are: the nvidia-cuda-runtime wheel, $CUDA_HOME, /usr/local/cuda."""
    import glob
    import importlib.util
    places = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations if spec is not None else []) or []:
        places += sorted(glob.glob(os.path.join(root, "*", "include")))
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            places.append(os.path.join(os.environ[env], "include"))
    places += ["/usr/local/cuda/include"] + sorted(glob.glob("/usr/local/cuda-*/include"), reverse=True)
    for d in places:
        if os.path.isfile(os.path.join(d, "cuda_fp16.h")):
            return d
    raise BuildError("float16 / bfloat16 in CUDA C need cuda_fp16.h and cuda_bf16.h: install the "
                     "nvidia-cuda-runtime wheel (pip install 'tvmlab[cuda]') or set CUDA_HOME")


def with_type_headers(src):
    """``src`` with the CUDA headers that define ``half`` and ``__nv_bfloat16`` where it uses them."""
    heads = [h for t, h in (("half", "cuda_fp16.h"), ("__nv_bfloat16", "cuda_bf16.h")) if t in src]
    return "".join(f"#include <{h}>\n" for h in heads) + src


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


class _Temps(IRVisitor):
    def __init__(self):
        super().__init__()
        self.temps = []

    def visit_Allocate(self, s):
        self.temps.append((s.buffer_var, s.dtype, s.extents[0]))
        self.generic_visit(s)


class CUDAFunction:
    """The host function: checks arguments, computes launch dims, launches the kernels in order."""
    ARRAY = cuda_driver.CUDANDArray      # the device array type arguments must be
    DEVICE = "cuda"

    def __init__(self, host, launches, kernel_module):
        self.name = host.name
        self.host = host
        self.launches = launches
        self.kmod = kernel_module
        self._loaded = None
        t = _Temps()
        t.visit(host.body)
        self.temps = t.temps
        self.keys = {}
        for p in host.params:
            self.keys.setdefault(p, p.name)
        for buf in host.buffer_map.values():
            for d in buf.shape:
                if isinstance(d, E.Var):
                    self.keys.setdefault(d, d.name)
        self.buffers = [p for p in host.params if p in host.buffer_map]
        self.scalars = [p for p in host.params if p not in host.buffer_map]

    def __repr__(self):
        return f"<CUDAFunction {self.name}({', '.join(p.name for p in self.host.params)})>"

    def _eval(self, e, env):
        fn = _py_fn(e, lambda v: self.keys.get(v, v.name))
        if fn is None:
            raise RuntimeArgError(f"{self.name}: cannot evaluate {astext(e)} on the host")
        try:
            return int(fn(env))
        except KeyError as k:
            raise RuntimeArgError(f"{self.name}: {astext(e)} uses {k.args[0]}, which no argument determines") from None

    def _bind(self, args):
        params = self.host.params
        nb = len(self.buffers)
        if len(args) not in (len(params), nb):
            raise RuntimeArgError(f"{self.name}: expected {nb} arrays ({', '.join(p.name for p in self.buffers)})"
                                  f" or all {len(params)} arguments, got {len(args)}")
        env, values = {}, {}
        it = iter(args)
        for p in params:
            if p in self.host.buffer_map:
                a = next(it)
                buf = self.host.buffer_map[p]
                where = f"{self.name}: argument '{buf.name}'"
                if not isinstance(a, self.ARRAY):
                    dev = getattr(getattr(a, "device", None), "device_type", type(a).__name__)
                    raise RuntimeArgError(f"{where}: expected an NDArray on {self.DEVICE}, got {dev} (use "
                                          f"tvmlab.nd.array(x, tvmlab.{self.DEVICE}(0)))")
                if a.dtype != buf.dtype:
                    raise RuntimeArgError(f"{where}: expected dtype {buf.dtype}, got {a.dtype}")
                if a.ndim != len(buf.shape):
                    raise RuntimeArgError(f"{where}: expected {len(buf.shape)} dims, got shape {a.shape}")
                for k, (d, g) in enumerate(zip(buf.shape, a.shape)):
                    if isinstance(d, E.IntImm) and d.value != g:
                        raise RuntimeArgError(f"{where}: expected shape[{k}] = {d.value}, got {g}")
                    if isinstance(d, E.Var):
                        key = self.keys[d]
                        if env.setdefault(key, g) != g:
                            raise RuntimeArgError(f"{where}: shape[{k}] is {g} but {key} = {env[key]}")
                values[p] = a
            elif len(args) == len(params):
                values[p] = next(it)
        for p in self.scalars:
            key = self.keys[p]
            if p in values:
                v = float(values[p]) if p.dtype.startswith("float") else int(values[p])
                if env.setdefault(key, v) != v:
                    raise RuntimeArgError(f"{self.name}: {p.name} = {v} but the shapes give {env[key]}")
            if key not in env:
                raise RuntimeArgError(f"{self.name}: no argument determines {p.name}; pass all arguments")
            values[p] = env[key]
        for p, a in values.items():
            if p in self.host.buffer_map:
                for k, d in enumerate(self.host.buffer_map[p].shape):
                    if not isinstance(d, (E.IntImm, E.Var)) and self._eval(d, env) != a.shape[k]:
                        raise RuntimeArgError(f"{self.name}: argument '{p.name}' shape[{k}] is {a.shape[k]}, "
                                              f"expected {astext(d)} = {self._eval(d, env)}")
        return env, values

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
        for var, dtype, count in self.temps:
            values[var] = cuda_driver.CUDANDArray((self._eval(count, env),), dtype, dev)
        def launch(ln, grid, block, kargs):
            b.launch(self._loaded[1][ln.name], grid, block, 0, kargs)   # shared memory is static
        self.run_host(env, values, launch)

    def run_host(self, env, values, launch):
        """Make the launches of the host body in order, host loops (a scan's time loop) included:
        ``launch(KernelLaunch, grid, block, [(value, ctype)])`` for each."""
        by_name = {ln.name: ln for ln in self.launches}

        def walk(s):
            if isinstance(s, S.SeqStmt):
                for x in s.seq:
                    walk(x)
            elif isinstance(s, S.For):
                key = self.keys.setdefault(s.loop_var, f"{s.loop_var.name}#loop{len(self.keys)}")
                lo, ext = self._eval(s.min, env), self._eval(s.extent, env)
                for i in range(lo, lo + ext):
                    env[key] = i
                    walk(s.body)
                env.pop(key, None)
            elif isinstance(s, (S.AttrStmt, S.Allocate, S.LetStmt)):
                if isinstance(s, S.LetStmt):
                    env[self.keys.setdefault(s.var, f"{s.var.name}#let{len(self.keys)}")] = self._eval(s.value, env)
                walk(s.body)
            elif isinstance(s, S.IfThenElse):
                cond = _py_fn(s.condition, lambda v: self.keys.get(v, v.name))
                if cond is None:
                    raise RuntimeArgError(f"{self.name}: cannot evaluate {astext(s.condition)} on the host")
                if cond(env):
                    walk(s.then_case)
                elif s.else_case is not None:
                    walk(s.else_case)
            elif isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "launch_kernel":
                self._launch(by_name[s.value.args[0].value], env, values, launch)
            elif isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "tvm_call_packed":
                from ..runtime.packed import host_call      # an extern stage's call, with the device arrays
                host_call(s.value, lambda v: values[v], lambda e: self._scalar(e, env), self.name)

        walk(self.host.body)

    def _scalar(self, e, env):
        if isinstance(e, (E.IntImm, E.FloatImm)):
            return bool(e.value) if e.dtype == "bool" else e.value
        if isinstance(e, E.Var) and e.dtype.startswith("float"):
            return env[self.keys.get(e, e.name)]
        return self._eval(e, env)

    def _launch(self, ln, env, values, launch):
        grid = tuple(self._eval(x, env) for x in ln.grid())
        block = tuple(self._eval(x, env) for x in ln.block())
        if any(g <= 0 for g in grid):
            return                # an empty launch: nothing to compute
        if np.prod(block) > DEFAULT_LIMITS["max_threads_per_block"]:
            raise RuntimeArgError(f"{self.name}: {ln.name} needs {np.prod(block)} threads per block, more "
                                  f"than {DEFAULT_LIMITS['max_threads_per_block']}")
        kargs = []
        for a in ln.args:
            if a.dtype == "handle":
                kargs.append((self.array_arg(values[a]), _ct("handle")))
            else:
                kargs.append((values[a] if a in values else env[self.keys[a]], _ct(a.dtype)))
        launch(ln, grid, block, kargs)

    @staticmethod
    def array_arg(array):
        """What a kernel receives for an array argument (a device pointer)."""
        return array._ptr

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


def device_split(mod, target, options, ignored, ctype_of):
    """``(Target, SplitResult)`` of a GPU-lowered module for a target of kind ``target.kind``, with
    its options checked against ``options`` and every kernel parameter's type against ``ctype_of``."""
    kind = target.kind
    unknown = [k for k in target.options if k not in options and k not in ignored]
    if unknown:
        raise BuildError(f"unknown option(s) {', '.join('-' + k for k in unknown)} for target {str(target)!r}; "
                         f"the {kind} target knows {', '.join('-' + k for k in options)}")
    split = getattr(mod, "device_split", None) if isinstance(mod, IRModule) else None
    if split is None:
        raise BuildError(f"build_{kind} needs a module lowered for a GPU: tvm.lower(s, args, target='{kind}') "
                         f"or tvm.build(s, args, '{kind}')")
    for k in split.kernels:
        for p in k.params:
            ctype_of(p.dtype if p.dtype != "handle" else k.buffer_map[p].dtype, p.name)
    return split


def build_cuda(mod, target="cuda"):
    """Compile a GPU-lowered IRModule for CUDA; returns the host Module (device code imported)."""
    target = Target(target)
    split = device_split(mod, target, _OPTIONS, _IGNORED, ctype)
    src = with_type_headers(generate_cuda(split.kernels))
    ptx = compile_cuda(src, _arch(target))
    kmod = CUDAModule(split.kernels, src, ptx)
    fn = CUDAFunction(split.host, split.launches, kmod)
    host = Module("cuda_host", {fn.name: fn}, fn.name, {"host": split.host.script()},
                  aliases={"": "host"})
    host.imported_modules.append(kmod)
    return host


register_target("cuda", build_cuda, keys=("cuda", "gpu"))
