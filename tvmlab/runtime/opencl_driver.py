"""OpenCL devices through pyopencl: ``tvmlab.opencl(0)`` is the first device of the first platform.

On a machine without a GPU, Debian's ``pocl-opencl-icd`` gives an OpenCL device
that runs on the CPU, so GPU-style schedules (threads, ``__local`` memory,
barriers) run for real.  ``OPENCLNDArray`` holds a ``cl.Buffer``; ``numpy()``
copies it back.  With no pyopencl or no OpenCL platform, devices report
``exist == False`` and ``no_device_reason()`` says why.
"""
from __future__ import annotations

import numpy as np

from ..errors import BuildError, DeviceError
from ..ir import dtype as dt
from .device import Device, register_device_type
from .ndarray import DeviceNDArray, _dtype_of, register_allocator

_STATE = {"devices": None, "reason": None, "contexts": {}}


def _cl():
    import pyopencl as cl
    return cl


def devices():
    """The OpenCL devices found (first platform with any), or [] (``no_device_reason()`` says why)."""
    if _STATE["devices"] is None:
        try:
            cl = _cl()
            found = []
            for platform in cl.get_platforms():
                found = platform.get_devices()
                if found:
                    break
            if not found:
                raise DeviceError("no OpenCL platform has a device (install pocl-opencl-icd for a CPU one)")
            _STATE["devices"] = list(found)
        except Exception as e:  # a missing ICD loader or library raises many kinds of errors
            _STATE["devices"] = []
            _STATE["reason"] = f"{type(e).__name__}: {e}"
    return _STATE["devices"]


def no_device_reason():
    devices()
    return _STATE["reason"] or "no OpenCL device"


def exist(dev_id):
    return dev_id < len(devices())


def context(device):
    """``(cl.Context, cl.CommandQueue)`` of ``device`` (made once)."""
    if not exist(device.device_id):
        raise DeviceError(f"there is no OpenCL device {device!r} on this machine ({no_device_reason()})")
    ctx = _STATE["contexts"].get(device.device_id)
    if ctx is None:
        cl = _cl()
        c = cl.Context([devices()[device.device_id]])
        ctx = _STATE["contexts"][device.device_id] = (c, cl.CommandQueue(c))
    return ctx


def device_info(device):
    """The pyopencl Device of ``device`` (max work-group size, local memory size, ...)."""
    context(device)
    return devices()[device.device_id]


def build_program(device, source):
    """Compile OpenCL C ``source`` for ``device``; BuildError with the compiler's log on failure."""
    cl = _cl()
    ctx, _ = context(device)
    try:
        return cl.Program(ctx, source).build()
    except cl.RuntimeError as e:
        raise BuildError(f"the OpenCL compiler rejected the generated OpenCL C:\n{e}\n"
                         f"--- source ---\n{source}") from None


def _sync(dev_id):
    context(Device("opencl", dev_id))[1].finish()


class OpenCLNDArray(DeviceNDArray):
    """An array in an OpenCL buffer; ``numpy()`` copies it back to the host."""
    __slots__ = ("_buf",)

    def __init__(self, shape, dtype, device):
        cl = _cl()
        ctx, _ = context(device)
        self._shape, self._dtype, self._device = tuple(shape), dtype, device
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * dt.to_numpy(dtype).itemsize
        self._buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(nbytes, 1))

    def _read(self):
        out = np.empty(self._shape, dtype=dt.to_numpy(self._dtype))
        if out.size:
            _cl().enqueue_copy(context(self._device)[1], out, self._buf)
        return out

    def _write(self, src):
        if src.size:
            _cl().enqueue_copy(context(self._device)[1], self._buf, np.ascontiguousarray(src))


def _from_numpy(arr, device):
    return OpenCLNDArray(arr.shape, _dtype_of(arr.dtype), device).copyfrom(arr)


def _empty(shape, dtype, device):
    return OpenCLNDArray(shape, dtype, device)


register_device_type("opencl", aliases=("cl",), exist=exist, sync=_sync, override=True)
register_allocator("opencl", _from_numpy, _empty, override=True)
