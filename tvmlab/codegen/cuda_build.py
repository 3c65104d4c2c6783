"""build_cuda: a GPU-lowered IRModule -> CUDA C -> PTX + cubin (NVRTC, nvcc as fallback) -> runtime Module.

The IRModule comes from ``lower(..., target="cuda")`` (host function plus
kernels).  Compilation needs no GPU, so every codegen error surfaces at build
time on any machine.  The returned host Module runs the host function: it
checks the arguments (CUDA NDArrays, dtypes, shapes binding the shape
variables), evaluates each launch's grid and block from them, and launches
the kernels in order.  ``mod.imported_modules[0].get_source()`` is the CUDA C,
``get_source("ptx")`` the PTX, ``get_source("cubin")`` the cubin (bytes).

Target options: ``-arch=sm_80`` (default: the GPU's, else sm_75), the GPU
limits of ``tvmlab.lower.verify_gpu`` (``-max_threads_per_block=512``, ...).
With a known architecture (``-arch`` or the GPU's) NVRTC also makes a cubin,
which the runtime loads when it fits the GPU, so the first launch does not
wait for the driver to compile the PTX; otherwise it loads the PTX.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

from ..errors import BuildError, DeviceError, RuntimeArgError
from ..ir import expr as E
from ..ir.function import IRModule
from ..lower.verify_gpu import DEFAULT_LIMITS
from ..runtime import cuda_driver
from ..runtime.registry import get_global_func
from ..runtime.module import Module
from .common import refuse_vector_elements
from ..lower.tensor_core import uses_wmma
from .cuda_codegen import ctype, generate_cuda
from .cuda_wmma import HEADER as WMMA_HEADER
from .cuda_wmma import check_arch
from .device_host import DeviceHost
from .registry import Target, register_target

_OPTIONS = ("arch",) + tuple(DEFAULT_LIMITS)
_IGNORED = ("keys", "model", "tag")
DEFAULT_ARCH = 75
NO_CUBIN = "no cubin was asked for"


def _arch(target):
    """(arch, known): ``-arch=sm_80`` or the GPU's compute capability (known), else DEFAULT_ARCH."""
    a = target.options.get("arch")
    if a:
        digits = "".join(c for c in str(a) if c.isdigit())
        if not digits:
            raise BuildError(f"-arch must look like sm_80, got {a!r}")
        return int(digits), True
    if cuda_driver.backend() is not None:
        major, minor = cuda_driver.backend().compute_capability(0)
        return major * 10 + minor, True
    return DEFAULT_ARCH, False


class DeviceCode(NamedTuple):
    """What the CUDA compiler made: PTX text, and a cubin for sm_<arch> when it could make one
    (``note`` says why not)."""
    ptx: str
    cubin: bytes | None
    arch: int           # what the code is for: the cubin's sm_<arch>, the PTX's compute_<arch>
    note: str = ""


def cubin_runs_on(arch, cc):
    """Whether a cubin for sm_<arch> runs on a GPU of compute capability ``cc`` = (major, minor):
    the same major version and a minor one at least as high (NVIDIA's binary compatibility)."""
    return cc[0] == arch // 10 and cc[1] >= arch % 10


def compile_nvrtc(src, arch, name="tvmlab_kernels.cu", cubin=True):
    """PTX (text) and, when ``cubin``, a cubin for sm_<arch> compiled from ``src`` by NVRTC.

    A cubin loads without the driver's JIT compile on the first launch.  For an architecture
    NVRTC does not know, the code is made for the newest one below it: a cubin too when that
    one has the same major version (the cubin runs on sm_<arch>), else PTX only, which the
    driver compiles for the GPU when loading it; ``note`` says which.  An architecture older
    than all NVRTC knows is an error when a cubin is asked for.
    """
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise BuildError(f"NVRTC is not available ({e}); install cuda-python and nvidia-cuda-nvrtc") from None

    def check(res, what):
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise BuildError(f"NVRTC {what} failed: {err}")
        return res[1] if len(res) > 1 else None

    supported = sorted(check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))
    known = ", ".join(f"sm_{a}" for a in supported)
    lower = [a for a in supported if a <= arch]
    if not lower and cubin:
        raise BuildError(f"NVRTC {_nvrtc_version(nvrtc)} compiles for {known}; sm_{arch} is older than all "
                         "of them (install an NVRTC that still supports it, or compile with nvcc)")
    virt = lower[-1] if lower else supported[0]
    real = cubin and virt // 10 == arch // 10
    note = "" if cubin else NO_CUBIN
    if virt != arch:
        note = (f"NVRTC {_nvrtc_version(nvrtc)} does not know sm_{arch} (it knows {known}): "
                + (f"a cubin for sm_{virt}, which runs on sm_{arch}, and PTX for compute_{virt}" if real else
                   f"PTX for compute_{virt} only, which the driver compiles for the GPU when it loads it"))
    opts = [f"--gpu-architecture={'sm' if real else 'compute'}_{virt}".encode(), b"-default-device",
            b"--std=c++14"]
    if "#include <cuda_" in src:
        opts.append(f"--include-path={cuda_include_dir()}".encode())
    if "#include <mma.h>" in src:
        opts.append(f"--include-path={cuda_include_dir('crt/mma.h')}".encode())
    prog = check(nvrtc.nvrtcCreateProgram(src.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
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
        image = None
        if real:
            size = check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            image = b" " * size
            check(nvrtc.nvrtcGetCUBIN(prog, image), "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return DeviceCode(ptx.rstrip(b"\x00").decode(), image, virt, note)


def cuda_include_dir(header="cuda_fp16.h"):
    """Where cuda_fp16.h / cuda_bf16.h are (or ``header``: "crt/mma.h", which tensor cores' mma.h
    includes): the nvidia wheels (nvidia-cuda-runtime, nvidia-cuda-crt), $CUDA_HOME, /usr/local/cuda."""
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
        if os.path.isfile(os.path.join(d, header)):
            return d
    if header != "cuda_fp16.h":
        raise BuildError(f"tensor cores in CUDA C need the CUDA header {header} (mma.h includes it): install "
                         "the nvidia-cuda-crt wheel or a CUDA toolkit (set CUDA_HOME)")
    raise BuildError("float16 / bfloat16 in CUDA C need cuda_fp16.h and cuda_bf16.h: install the "
                     "nvidia-cuda-runtime wheel (pip install 'tvmlab[cuda]') or set CUDA_HOME")


def with_type_headers(src):
    """``src`` with the CUDA headers that define ``half`` and ``__nv_bfloat16`` where it uses them."""
    heads = [h for t, h in (("half", "cuda_fp16.h"), ("__nv_bfloat16", "cuda_bf16.h")) if t in src]
    return "".join(f"#include <{h}>\n" for h in heads) + src


def _nvrtc_version(nvrtc):
    res = nvrtc.nvrtcVersion()
    return f"{res[1]}.{res[2]}" if res[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS else "(unknown version)"


def compile_nvcc(src, arch, cubin=True):
    """PTX (and with ``cubin`` a cubin for sm_<arch>) from ``src`` with the nvcc command, the
    fallback when NVRTC is missing."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise BuildError("neither NVRTC (cuda-python + nvidia-cuda-nvrtc) nor nvcc is available to compile CUDA")
    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, "k.cu")
        with open(cu, "w") as f:
            f.write(src)

        def run(flag, arch_flag, out):
            r = subprocess.run([nvcc, flag, arch_flag, cu, "-o", out], capture_output=True, text=True, check=False)
            if r.returncode:
                raise BuildError(f"nvcc could not compile the generated CUDA C:\n{r.stderr}\n--- source ---\n{src}")
            with open(out, "rb") as f:
                return f.read()

        ptx = run("--ptx", f"-arch=compute_{arch}", os.path.join(d, "k.ptx")).decode()
        image = run("--cubin", f"-arch=sm_{arch}", os.path.join(d, "k.cubin")) if cubin else None
    return DeviceCode(ptx, image, arch, "" if cubin else NO_CUBIN)


def compile_cuda(src, arch, cubin=True):
    """DeviceCode for ``src``: NVRTC, or nvcc when NVRTC is not installed."""
    try:
        from cuda.bindings import nvrtc  # noqa: F401
    except ImportError:
        return compile_nvcc(src, arch, cubin)
    return compile_nvrtc(src, arch, cubin=cubin)


class CUDAFunction(DeviceHost):
    """The host function: checks arguments, computes launch dims, launches the kernels in order."""

    def __init__(self, host, launches, kernel_module):
        super().__init__(host, launches)
        self.kmod = kernel_module
        self._loaded = None     # (device, loaded module, {kernel name: function}) after the first call
        self._temps = {}        # (device id, k, dtype, count) -> the k-th intermediate buffer, kept between calls

    def __del__(self):
        loaded = getattr(self, "_loaded", None)
        if loaded is not None:
            cuda_driver.release(loaded[0], "unload", loaded[1])

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
        b, dev, env, values = self._setup(args)
        def launch(ln, grid, block, kargs):
            b.launch(self._loaded[2][ln.name], grid, block, 0, kargs)   # shared memory is static
        self.run_host(env, values, launch)

    def prepare(self, *args):
        """A call with these arguments, checked and planned now: each call then only launches the
        kernels (the graph executor's calls, whose arrays never change).  The plan holds the arrays."""
        b, dev, env, values = self._setup(args)
        if _calls_packed(self.host.body):
            return lambda: self(*args)          # a host call in between: run it as a whole each time
        plan = []
        self.run_host(env, values, lambda ln, grid, block, kargs: plan.append(
            (self._loaded[2][ln.name], grid, block, b.pack(kargs))))

        def call(_keep=(args, values)):          # the arrays the plan's pointers point into live as long
            bb = cuda_driver.require(dev)
            for fn, grid, block, packed in plan:
                bb.launch_packed(fn, grid, block, 0, packed)
        return call

    def _setup(self, args):
        dev = next((a.device for a in args if isinstance(a, cuda_driver.CUDANDArray)), None)
        if cuda_driver.backend() is None:
            raise DeviceError(f"{self.name}: there is no CUDA device on this machine "
                              f"({cuda_driver.no_device_reason()})")
        env, values = self._bind(args)
        b = cuda_driver.require(dev)
        if self._loaded is None:
            module = b.load(self.kmod.image_for(b.compute_capability(dev.device_id))[1])
            self._loaded = (dev, module, {ln.name: b.function(module, ln.name) for ln in self.launches})
        for k, (var, dtype, count) in enumerate(self.temp_sizes(env)):
            # the kernels of one function run in order on one stream: a call's intermediates may reuse the
            # last call's buffers (allocating them each call took driver time between the launches)
            key = (dev.device_id, k, dtype, count)
            if key not in self._temps:
                self._temps = {x: v for x, v in self._temps.items() if x[:2] != key[:2]}
                self._temps[key] = cuda_driver.CUDANDArray((count,), dtype, dev)
            values[var] = self._temps[key]
        return b, dev, env, values


def _calls_packed(stmt):
    """Whether the host body ``stmt`` calls a packed function (an extern stage) between its launches."""
    from ..ir.functor import contains
    return contains(stmt, lambda n: isinstance(n, E.Call) and n.op == "tvm_call_packed")


def _ct(dtype):
    import ctypes
    return {"handle": ctypes.c_void_p, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
            "float32": ctypes.c_float, "float64": ctypes.c_double, "uint32": ctypes.c_uint32,
            "int8": ctypes.c_int8, "int16": ctypes.c_int16, "uint8": ctypes.c_uint8,
            "bool": ctypes.c_bool}[dtype]


class CUDAModule(Module):
    """The device code: CUDA C, PTX and the cubin (``get_source()``, ``get_source("ptx")``,
    ``get_source("cubin")``: bytes, when the architecture was known); ``get_source("resources")``
    is ``resource_report()``: registers, shared memory, spills and occupancy per kernel.

    ``code`` may be a Future of the compile (``compile_in_parallel``): the first use of the PTX,
    the cubin, ``arch`` or ``note`` waits for it."""

    def __init__(self, kernels, cuda_src, code):
        super().__init__("cuda", {}, None, {"cu": cuda_src}, aliases={"": "cu", "cuda": "cu"})
        self.kernels = kernels
        self._pending = None
        if isinstance(code, Future):
            self._pending = code
        else:
            self._set_code(code)

    def _set_code(self, code):
        sources = self.__dict__["_sources"]
        sources.update({"ptx": code.ptx, "resources": lambda: self.resource_report()})
        if code.cubin is not None:
            sources["cubin"] = code.cubin
        self.__dict__["arch"] = code.arch       # the cubin's sm_<arch>
        self.__dict__["note"] = code.note       # why there is no cubin

    def _wait(self):
        pending = self._pending
        if pending is not None:
            code = pending.result()         # a failed compile raises its error at every use
            self._pending = None
            self._set_code(code)

    @property
    def _sources(self):
        if self.__dict__.get("_pending") is not None:
            self._wait()
        return self.__dict__["_sources"]

    @_sources.setter
    def _sources(self, value):
        self.__dict__["_sources"] = value

    @property
    def arch(self):
        self._sources  # noqa: B018 - waits for a compile in flight
        return self.__dict__["arch"]

    @property
    def note(self):
        self._sources  # noqa: B018
        return self.__dict__["note"]

    def get_source(self, fmt=""):
        if fmt == "cubin" and "cubin" not in self._sources:
            raise RuntimeArgError(f"get_source('cubin'): this CUDA module has no cubin ({self.note}); "
                                  "its PTX is in get_source('ptx')")
        return super().get_source(fmt)

    def resources(self, arch=None):
        """{kernel: KernelResources} (registers, shared memory, spills) for sm_<arch> (default: the
        module's), from ptxas or the cubin (``tvmlab.codegen.cuda_resources``)."""
        from .cuda_resources import resource_usage
        arch = arch or self.arch
        cubin = self._sources.get("cubin") if arch == self.arch else None
        return resource_usage(self._sources["ptx"], arch, cubin)

    def resource_report(self, arch=None):
        """A text table per kernel: threads per block, registers, shared memory, spills, occupancy."""
        from ..ir.expr import IntImm
        from .cuda_resources import occupancy
        arch = arch or self.arch
        res = self.resources(arch)
        lines = [f"resources for sm_{arch} (from {next(iter(res.values())).source if res else 'ptxas'})"]
        for k in self.kernels:
            r = res.get(k.name)
            if r is None:
                continue
            threads = 1
            for tag, ext in k.attrs.get("launch", {}).items():
                if tag.startswith("threadIdx"):
                    threads = threads * ext.value if isinstance(ext, IntImm) and threads else 0
            spill = "?" if r.spill_stores is None else f"{r.spill_stores} B stores, {r.spill_loads} B loads"
            lines.append(f"{k.name}: {threads or 'symbolic'} threads/block, {r.registers} registers/thread, "
                         f"{r.shared_bytes} B shared/block, spills: {spill}")
            if threads:
                o = occupancy(r, threads, arch)
                lines.append(f"  occupancy {o.occupancy:.0%}: {o.blocks} blocks ({o.warps} of {o.max_warps} "
                             f"warps) per SM, limited by {o.limited_by}")
        return "\n".join(lines)

    def image_for(self, cc):
        """("cubin", bytes) when the cubin runs on a GPU of compute capability ``cc``, else
        ("ptx", bytes) for the driver to compile: what the runtime loads."""
        if "cubin" in self._sources and cubin_runs_on(self.arch, tuple(cc)):
            return "cubin", self._sources["cubin"]
        return "ptx", self._sources["ptx"].encode() + b"\x00"


def device_split(mod, target, options, ignored, ctype_of):
    """The SplitResult of a GPU-lowered module for a target of kind ``target.kind``, with its
    options checked against ``options`` and every kernel parameter's type against ``ctype_of``."""
    kind = target.kind
    unknown = [k for k in target.options if k not in options and k not in ignored]
    if unknown:
        raise BuildError(f"unknown option(s) {', '.join('-' + k for k in unknown)} for target {str(target)!r}; "
                         f"the {kind} target knows {', '.join('-' + k for k in options)}")
    split = getattr(mod, "device_split", None) if isinstance(mod, IRModule) else None
    if split is None:
        raise BuildError(f"build_{kind} needs a module lowered for a GPU: tvm.lower(s, args, target='{kind}') "
                         f"or tvm.build(s, args, '{kind}')")
    refuse_vector_elements([split.host, *split.kernels], kind)
    for k in split.kernels:
        for p in k.params:
            ctype_of(p.dtype if p.dtype != "handle" else k.buffer_map[p].dtype, p.name)
    return split


class _ParallelCompiles(threading.local):
    pool = None         # a ThreadPoolExecutor while compile_in_parallel is active in this thread
    futures = None


_parallel = _ParallelCompiles()


@contextlib.contextmanager
def compile_in_parallel(workers=None):
    """Inside the block, ``build_cuda`` hands each NVRTC compile to a pool of threads and returns at
    once (NVRTC releases the GIL, so the compiles run beside the Python that lowers the next kernel and
    beside each other); leaving the block waits for them all.  ``relay.build(target="cuda")`` compiles
    a model's kernels so.  A compile that fails raises where its module is first used; the block
    yields the list of ``(module, future, target)`` to check."""
    if _parallel.pool is not None:          # nested: the outer block waits
        yield _parallel.futures
        return
    workers = workers or min(16, os.cpu_count() or 1)
    futures = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tvmlab-nvrtc") as pool:
        _parallel.pool, _parallel.futures = pool, futures
        try:
            yield futures
        finally:
            _parallel.pool, _parallel.futures = None, None
    # the pool has finished every compile: modules nobody touched get their code (or keep the error),
    # and a note that NVRTC made code for another architecture is warned of from this thread
    for kmod, fut, target in futures:
        if fut.exception() is None:
            kmod._wait()
            _warn_of_note(fut.result(), target)


def _device_code(src, arch, known):
    """The compile's DeviceCode, its note made plain for the user."""
    code = compile_cuda(src, arch, cubin=known)
    if code.note == NO_CUBIN:
        return code._replace(note=f"sm_{code.arch} is a guess: the target names no -arch and there is no GPU "
                                  "to read it from; build for 'cuda -arch=sm_80' to get one")
    return code


def _warn_of_note(code, target):
    if code.note and "is a guess" not in code.note:
        warnings.warn(f"cuda target {str(target)!r}: {code.note}", stacklevel=3)


def build_cuda(mod, target="cuda"):
    """Compile a GPU-lowered IRModule for CUDA; returns the host Module (device code imported)."""
    target = Target(target)
    split = device_split(mod, target, _OPTIONS, _IGNORED, ctype)
    src = with_type_headers(generate_cuda(split.kernels))
    arch, known = _arch(target)
    if uses_wmma(split.kernels):
        check_arch(arch)
        src = WMMA_HEADER + src
    user = get_global_func("tvm_callback_cuda_compile", allow_missing=True)
    if user is not None:            # TVM's hook: the user's compiler, CUDA C -> PTX
        ptx = user(src)
        code = DeviceCode(ptx.decode() if isinstance(ptx, (bytes, bytearray)) else str(ptx), None, arch,
                          "compiled by the registered tvm_callback_cuda_compile (PTX only)")
    elif _parallel.pool is not None:
        code = _parallel.pool.submit(_device_code, src, arch, known)
    else:
        code = _device_code(src, arch, known)
        _warn_of_note(code, target)
    kmod = CUDAModule(split.kernels, src, code)
    if isinstance(code, Future):
        _parallel.futures.append((kmod, code, target))
    return _host_module(split.host, split.launches, kmod)


def _host_module(host_func, launches, kmod):
    fn = CUDAFunction(host_func, launches, kmod)
    host = Module("cuda_host", {fn.name: fn}, fn.name, {"host": lambda: host_func.script()},
                  aliases={"": "host"})
    host.imported_modules.append(kmod)
    return host


def module_state(mod):
    """A CUDA build (``build_cuda``'s host Module) as plain picklable data: its host function, launches,
    kernels, CUDA C and compiled code.  Tuning sends it from the process that built it to the one that
    times it; ``module_from_state`` makes the Module again (loading the code on the GPU at its first call)."""
    if getattr(mod, "type_key", None) != "cuda_host":
        raise RuntimeArgError(f"module_state needs a module built for target 'cuda', got "
                              f"{getattr(mod, 'type_key', type(mod).__name__)!r}")
    fn = mod.get_function(mod.entry_name)
    k = mod.imported_modules[0]
    code = DeviceCode(k._sources["ptx"], k._sources.get("cubin"), k.arch, k.note)
    return {"format": "tvmlab-cuda-1", "host": fn.host, "launches": fn.launches, "kernels": k.kernels,
            "cuda": k._sources["cu"], "code": tuple(code)}


def module_from_state(state):
    """The Module of ``module_state(mod)``'s data."""
    if not isinstance(state, dict) or state.get("format") != "tvmlab-cuda-1":
        raise RuntimeArgError("module_from_state: not the data of module_state (a CUDA build)")
    kmod = CUDAModule(state["kernels"], state["cuda"], DeviceCode(*state["code"]))
    return _host_module(state["host"], state["launches"], kmod)


register_target("cuda", build_cuda, keys=("cuda", "gpu"))
