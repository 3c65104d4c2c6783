"""The CUDA device: pycuda when importable, else NVIDIA's cuda-python driver API.

Importing this module registers the "cuda" device type (``tvmlab.cuda(0).exist``
probes the driver) and an allocator, so ``tvmlab.nd.array(x, tvmlab.cuda(0))``
makes a ``CUDANDArray`` in device memory.  Without a driver or a GPU nothing
fails at import: ``exist`` is False and allocating or launching raises
DeviceError saying there is no CUDA device.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..errors import DeviceError
from ..ir import dtype as dt
from .device import Device, register_device_type
from .ndarray import DeviceNDArray, _dtype_of, register_allocator

_STATE = {"backend": None, "reason": None}


class _PyCUDA:
    name = "pycuda"

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
        fn(*[ct(v) if ct is not ctypes.c_void_p else np.uintp(v) for v, ct in args],
           grid=grid, block=block, shared=shared)

    def sync(self):
        self.drv.Context.synchronize()

    def compute_capability(self, dev_id):
        return self.drv.Device(dev_id).compute_capability()


class _CudaPython:
    name = "cuda-python"

    def __init__(self):
        from cuda.bindings import driver
        self.d = driver
        self._check(driver.cuInit(0), "cuInit")
        self.ctx = {}

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
        vals = [ct(v) for v, ct in args]
        ptrs = (ctypes.c_void_p * max(len(vals), 1))(*[ctypes.addressof(v) for v in vals])
        self._check(self.d.cuLaunchKernel(fn, *grid, *block, shared, 0, ctypes.addressof(ptrs), 0),
                    "cuLaunchKernel")

    def sync(self):
        self._check(self.d.cuCtxSynchronize(), "cuCtxSynchronize")

    def compute_capability(self, dev_id):
        attr = self.d.CUdevice_attribute
        dev = self._check(self.d.cuDeviceGet(dev_id), "cuDeviceGet")
        major = self._check(self.d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
        minor = self._check(self.d.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
        return major, minor


def backend():
    """The driver backend, or None (``no_device_reason()`` says why)."""
    if _STATE["backend"] is None and _STATE["reason"] is None:
        errors = []
        for cls in (_PyCUDA, _CudaPython):
            try:
                b = cls()
                if b.count() < 1:
                    raise DeviceError("the driver reports no CUDA device")
                _STATE["backend"] = b
                break
            except Exception as e:  # a missing driver library raises many kinds of errors
                errors.append(f"{cls.name}: {type(e).__name__}: {e}")
        if _STATE["backend"] is None:
            _STATE["reason"] = "; ".join(errors)
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
    if b is None or device.device_id >= b.count():
        raise DeviceError(f"there is no CUDA device {device!r} on this machine "
                          f"({no_device_reason() or 'device id out of range'})")
    b.activate(device.device_id)
    return b


def _sync(dev_id):
    require(Device("cuda", dev_id)).sync()


class CUDANDArray(DeviceNDArray):
    """An array in CUDA device memory; ``numpy()`` copies it back to the host."""
    __slots__ = ("_mem",)

    def __init__(self, shape, dtype, device):
        b = require(device)
        self._shape, self._dtype, self._device = tuple(shape), dtype, device
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * dt.to_numpy(dtype).itemsize
        self._mem = b.alloc(nbytes)
        self._ptr = b.ptr(self._mem)

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


register_device_type("cuda", aliases=("gpu", "nvptx"), exist=exist, sync=_sync, override=True)
register_allocator("cuda", _from_numpy, _empty, override=True)
