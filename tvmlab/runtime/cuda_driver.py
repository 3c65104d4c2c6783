"""The CUDA device, through one of two Python bindings of the driver API, chosen on purpose.

cuda-python (``cuda.bindings``, wheels on every platform) is the default;
pycuda is used only when asked for, with ``use_binding("pycuda")`` or the
environment variable ``TVMLAB_CUDA_BINDING=pycuda``.  What else happens to be
installed never changes the choice, so a program behaves the same on every
machine.

Importing this module registers the "cuda" device type (``tvmlab.cuda(0).exist``
probes the driver) and an allocator, so ``tvmlab.nd.array(x, tvmlab.cuda(0))``
makes a ``CUDANDArray`` in device memory.  Without a driver or a GPU nothing
fails at import: ``exist`` is False and allocating or launching raises
DeviceError saying there is no CUDA device (or what is wrong with the binding
chosen).
"""
from __future__ import annotations

import ctypes
import importlib
import os

import numpy as np

from ..errors import DeviceError
from ..ir import dtype as dt
from .device import Device, register_device_type
from .ndarray import DeviceNDArray, _dtype_of, register_allocator

ENV_VAR = "TVMLAB_CUDA_BINDING"
DEFAULT_BINDING = "cuda-python"

# backend: the started binding; reason: why there is none; error: a bad choice of binding, raised on use;
# chosen: use_binding's name (None follows the environment variable)
_STATE = {"backend": None, "reason": None, "error": None, "chosen": None}


class _PyCUDA:
    name = "pycuda"
    module = "pycuda.driver"
    install = ("pip install 'tvmlab[cuda-pycuda]' (pycuda compiles against the CUDA toolkit: "
               "nvcc on PATH or CUDA_ROOT set)")

    def __init__(self):
        import pycuda.driver as drv
        drv.init()
        self.drv = drv
        self.ctx = {}

    def count(self):
        return self.drv.Device.count()

    def activate(self, dev_id):
        if dev_id not in self.ctx:
            ctx = self.drv.Device(dev_id).retain_primary_context()
            ctx.push()
            self.ctx[dev_id] = ctx

    def alloc(self, nbytes):
        return self.drv.mem_alloc(max(nbytes, 1))

    def free(self, mem):
        mem.free()

    def unload(self, module):
        pass                    # pycuda unloads a module when its object goes

    def ptr(self, mem):
        return int(mem)

    def htod(self, mem, arr):
        self.drv.memcpy_htod(mem, np.ascontiguousarray(arr))

    def dtoh(self, arr, mem):
        self.drv.memcpy_dtoh(arr, mem)

    def load(self, image):
        return self.drv.module_from_buffer(image)

    def function(self, module, name):
        return module.get_function(name)

    def launch(self, fn, grid, block, shared, args):
        self.launch_packed(fn, grid, block, shared, self.pack(args))

    def pack(self, args):
        """The kernel arguments ``[(value, ctypes type)]`` in the form a launch takes, made once for
        launches repeated with the same arguments."""
        return [ct(v) if ct is not ctypes.c_void_p else np.uintp(v) for v, ct in args]

    def launch_packed(self, fn, grid, block, shared, packed):
        fn(*packed, grid=grid, block=block, shared=shared)

    def sync(self):
        self.drv.Context.synchronize()

    def compute_capability(self, dev_id):
        return self.drv.Device(dev_id).compute_capability()

    def elapsed(self, fn, dev_id=0):
        start, stop = self.drv.Event(), self.drv.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return start.time_till(stop) / 1e3

    def capture(self, fn):
        raise DeviceError("CUDA graphs need the cuda-python binding (tvmlab.runtime.cuda_driver."
                          "use_binding('cuda-python')); pycuda is in use")


class _CudaPython:
    name = "cuda-python"
    module = "cuda.bindings.driver"
    install = "pip install 'tvmlab[cuda]' (cuda-python wheels; no CUDA toolkit needed)"

    def __init__(self):
        from cuda.bindings import driver
        self.d = driver
        self._check(driver.cuInit(0), "cuInit")
        self.ctx = {}
        self.stream = 0         # launches go here: the default stream, or a stream being captured
        self._events = {}       # dev_id -> (start, stop) of elapsed(), made in that device's context

    def _check(self, res, what):
        err = res[0] if isinstance(res, tuple) else res
        if int(err) != 0:
            _, text = self.d.cuGetErrorString(err)
            raise DeviceError(f"CUDA driver: {what} failed: {text.decode() if text else err}")
        return res[1] if isinstance(res, tuple) and len(res) == 2 else res[1:] if isinstance(res, tuple) else None

    def count(self):
        return self._check(self.d.cuDeviceGetCount(), "cuDeviceGetCount")

    def activate(self, dev_id):
        if dev_id not in self.ctx:
            dev = self._check(self.d.cuDeviceGet(dev_id), "cuDeviceGet")
            ctx = self._check(self.d.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            self.ctx[dev_id] = ctx
        self._check(self.d.cuCtxSetCurrent(self.ctx[dev_id]), "cuCtxSetCurrent")

    def alloc(self, nbytes):
        return self._check(self.d.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")

    def free(self, mem):
        self._check(self.d.cuMemFree(mem), "cuMemFree")

    def unload(self, module):
        self._check(self.d.cuModuleUnload(module), "cuModuleUnload")

    def ptr(self, mem):
        return int(mem)

    def htod(self, mem, arr):
        arr = np.ascontiguousarray(arr)
        self._check(self.d.cuMemcpyHtoD(mem, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")

    def dtoh(self, arr, mem):
        self._check(self.d.cuMemcpyDtoH(arr.ctypes.data, mem, arr.nbytes), "cuMemcpyDtoH")

    def load(self, image):
        return self._check(self.d.cuModuleLoadData(image), "cuModuleLoadData")

    def function(self, module, name):
        return self._check(self.d.cuModuleGetFunction(module, name.encode()), "cuModuleGetFunction")

    def launch(self, fn, grid, block, shared, args):
        self.launch_packed(fn, grid, block, shared, self.pack(args))

    def pack(self, args):
        """The kernel arguments ``[(value, ctypes type)]`` as the array of pointers cuLaunchKernel takes
        (the values kept alive beside it), made once for launches repeated with the same arguments."""
        vals = [ct(v) for v, ct in args]
        ptrs = (ctypes.c_void_p * max(len(vals), 1))(*[ctypes.addressof(v) for v in vals])
        return vals, ptrs

    def launch_packed(self, fn, grid, block, shared, packed):
        self._check(self.d.cuLaunchKernel(fn, *grid, *block, shared, self.stream, ctypes.addressof(packed[1]), 0),
                    "cuLaunchKernel")

    def capture(self, fn):
        """The kernel launches ``fn()`` makes, captured into a CUDA graph and instantiated: a ``CUDAGraph``.

        The launches go to a stream of their own that orders itself with the default stream (so copies in
        and out stay in order around each replay); ``fn`` may launch kernels and allocate, nothing else."""
        d = self.d
        stream = self._check(d.cuStreamCreate(0), "cuStreamCreate")
        self._check(d.cuStreamBeginCapture(stream, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED),
                    "cuStreamBeginCapture")
        self.stream = stream
        try:
            fn()
        except BaseException:
            self.stream = 0
            d.cuStreamEndCapture(stream)
            d.cuStreamDestroy(stream)
            raise
        self.stream = 0
        graph = self._check(d.cuStreamEndCapture(stream), "cuStreamEndCapture")
        exe = self._check(d.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        nodes = self._check(d.cuGraphGetNodes(graph, 0), "cuGraphGetNodes")
        count = nodes[-1] if isinstance(nodes, (tuple, list)) else nodes
        return CUDAGraph(self, graph, exe, stream, int(count))

    def sync(self):
        self._check(self.d.cuCtxSynchronize(), "cuCtxSynchronize")

    def elapsed(self, fn, dev_id=0):
        """Seconds from an event recorded before ``fn()``'s launches to one recorded after them (device
        ``dev_id``, whose context is current)."""
        d = self.d
        if dev_id not in self._events:
            self._events[dev_id] = tuple(self._check(d.cuEventCreate(d.CUevent_flags.CU_EVENT_DEFAULT),
                                                     "cuEventCreate") for _ in range(2))
        start, stop = self._events[dev_id]
        self._check(d.cuEventRecord(start, 0), "cuEventRecord")
        fn()
        self._check(d.cuEventRecord(stop, 0), "cuEventRecord")
        self._check(d.cuEventSynchronize(stop), "cuEventSynchronize")
        return self._check(d.cuEventElapsedTime(start, stop), "cuEventElapsedTime") / 1e3

    def compute_capability(self, dev_id):
        attr = self.d.CUdevice_attribute
        dev = self._check(self.d.cuDeviceGet(dev_id), "cuDeviceGet")
        major = self._check(self.d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = self._check(self.d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        return major, minor


class CUDAGraph:
    """An instantiated CUDA graph: ``launch()`` replays every captured kernel with one driver call and
    waits for it; ``kernels`` is how many launches it holds."""

    def __init__(self, backend, graph, exe, stream, kernels):
        self.b, self.graph, self.exe, self.stream, self.kernels = backend, graph, exe, stream, kernels

    def launch(self, sync=True):
        self.b._check(self.b.d.cuGraphLaunch(self.exe, self.stream), "cuGraphLaunch")
        if sync:
            self.b._check(self.b.d.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def __repr__(self):
        return f"<CUDAGraph of {self.kernels} kernel launches>"


def capture(device, fn):
    """``fn()``'s kernel launches on ``device`` (a cuda Device) as a replayable ``CUDAGraph``."""
    return require(device).capture(fn)


BINDINGS = {c.name: c for c in (_CudaPython, _PyCUDA)}


def _binding_class(name, where):
    """The binding class called ``name``, after importing its module; DeviceError saying why not."""
    cls = BINDINGS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise DeviceError(f"{where}: unknown CUDA binding {name!r}; choose one of "
                          f"{', '.join(repr(n) for n in BINDINGS)}")
    try:
        importlib.import_module(cls.module)
    except ModuleNotFoundError as e:
        if e.name and cls.module.startswith(e.name):
            raise DeviceError(f"{where}: the CUDA binding {name!r} is not installed ({cls.module} does not "
                              f"import); install it with {cls.install}") from None
        raise DeviceError(f"{where}: the CUDA binding {name!r} does not import ({e})") from None
    except Exception as e:   # installed but broken, e.g. pycuda linked against a missing libcuda
        raise DeviceError(f"{where}: the CUDA binding {name!r} is installed but does not import "
                          f"({type(e).__name__}: {e}); it needs the NVIDIA driver, and is installed with "
                          f"{cls.install}") from None
    return cls


def binding():
    """The name of the CUDA binding in use: ``use_binding``'s choice, else ``$TVMLAB_CUDA_BINDING``,
    else "cuda-python".  DeviceError when the choice is unknown or its module does not import."""
    if _STATE["chosen"] is not None:
        return _binding_class(_STATE["chosen"], "use_binding").name
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return _binding_class(env, f"environment variable {ENV_VAR}={env!r}").name
    return DEFAULT_BINDING


def use_binding(name):
    """Run CUDA through ``name`` ("cuda-python", the default, or "pycuda") from now on.

    ``None`` goes back to ``$TVMLAB_CUDA_BINDING`` (else cuda-python).  Call it before the
    first CUDA array or launch: arrays and loaded kernels belong to the binding that made
    them, so switching once one is running raises DeviceError.  Returns the binding's name.
    """
    if name is not None:
        _binding_class(name, f"use_binding({name!r})")
    previous = _STATE["chosen"]
    _STATE["chosen"] = name
    try:
        wanted = binding()
    except DeviceError:
        _STATE["chosen"] = previous
        raise
    live = _STATE["backend"]
    if live is not None and live.name != wanted:
        _STATE["chosen"] = previous
        raise DeviceError(f"use_binding({name!r}): CUDA already runs through {live.name!r} in this process "
                          f"(its arrays and kernels belong to it); choose the binding before the first CUDA "
                          f"array or launch, or set {ENV_VAR} before starting Python")
    if live is None:
        _STATE.update(reason=None, error=None)   # probe again with the new choice
    return wanted


def backend():
    """The driver backend, or None (``no_device_reason()`` says why)."""
    if _STATE["backend"] is None and _STATE["reason"] is None:
        try:
            cls = BINDINGS[binding()]
        except DeviceError as e:
            _STATE.update(reason=str(e), error=e)
            return None
        try:
            b = cls()
            if b.count() < 1:
                raise DeviceError("the driver reports no CUDA device")
            _STATE["backend"] = b
        except Exception as e:  # a missing driver library raises many kinds of errors
            _STATE["reason"] = f"{cls.name}: {type(e).__name__}: {e}"
    return _STATE["backend"]


def no_device_reason():
    backend()
    return _STATE["reason"]


def exist(dev_id):
    b = backend()
    return b is not None and dev_id < b.count()


def require(device):
    """The backend with ``device`` active; DeviceError when there is no CUDA device."""
    b = backend()
    if _STATE["error"] is not None:
        raise DeviceError(str(_STATE["error"]))
    if b is None or device.device_id >= b.count():
        raise DeviceError(f"there is no CUDA device {device!r} on this machine "
                          f"({no_device_reason() or 'device id out of range'})")
    b.activate(device.device_id)
    return b


def release(device, what, handle):
    """Give ``handle`` back to the driver (``what``: "free" for memory, "unload" for a module) on
    ``device``'s context, from a ``__del__``: never raises (at interpreter exit the driver may be gone;
    inside a CUDA graph capture a free is not allowed and the memory stays)."""
    b = _STATE.get("backend")
    if handle is None or b is None:
        return
    try:
        b.activate(device.device_id)
        getattr(b, what)(handle)
    except Exception:  # noqa: BLE001 - see the docstring
        pass


def _sync(dev_id):
    require(Device("cuda", dev_id)).sync()


def _time(dev_id, fn):
    return require(Device("cuda", dev_id)).elapsed(fn, dev_id)


class CUDANDArray(DeviceNDArray):
    """An array in CUDA device memory; ``numpy()`` copies it back to the host.  Its memory is freed
    when the array goes (a process that makes arrays in a loop, such as a tuning runner, keeps its GPU
    memory)."""
    __slots__ = ("_mem",)

    def __init__(self, shape, dtype, device):
        self._mem = None
        b = require(device)
        self._shape, self._dtype, self._device = tuple(shape), dtype, device
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * dt.to_numpy(dtype).itemsize
        self._mem = b.alloc(nbytes)
        self._ptr = b.ptr(self._mem)

    def __del__(self):
        release(self._device, "free", getattr(self, "_mem", None))

    def _read(self):
        out = np.empty(self._shape, dtype=dt.to_numpy(self._dtype))
        if out.size:
            require(self._device).dtoh(out, self._mem)
        return out

    def _write(self, src):
        if src.size:
            require(self._device).htod(self._mem, np.ascontiguousarray(src))



def _from_numpy(arr, device):
    out = CUDANDArray(arr.shape, _dtype_of(arr.dtype), device)
    return out.copyfrom(arr)


def _empty(shape, dtype, device):
    return CUDANDArray(shape, dtype, device)


register_device_type("cuda", aliases=("gpu", "nvptx"), exist=exist, sync=_sync, override=True,
                     why_not=no_device_reason, timer=_time)
register_allocator("cuda", _from_numpy, _empty, override=True)
