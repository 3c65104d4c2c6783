"""build_opencl: a GPU-lowered IRModule -> OpenCL C -> program (pyopencl) -> runtime Module.

Lowering is the GPU pipeline CUDA uses (thread bindings, "shared" memory as
``__local``, barriers).  The program is compiled when the module is built if an
OpenCL device exists (so a compile error surfaces at build time), else the
first call says there is no device.  The host function is the CUDA one: it
checks the arguments (OpenCL NDArrays, dtypes, shapes binding the shape
variables), evaluates each launch's work-group count and size, and enqueues
the kernels in order.  ``mod.imported_modules[0].get_source()`` is the OpenCL C.

Target options: the GPU limits of ``tvmlab.lower.verify_gpu``
(``-max_threads_per_block=256``, ...).
"""
from __future__ import annotations

from ..errors import DeviceError, RuntimeArgError
from ..ir import dtype as dt
from ..lower.verify_gpu import DEFAULT_LIMITS
from ..runtime import opencl_driver
from ..runtime.device import Device
from ..runtime.module import Module
from .cuda_build import device_split
from .device_host import DeviceHost
from .opencl_codegen import cl_type, generate_opencl
from .registry import Target, register_target

_OPTIONS = tuple(DEFAULT_LIMITS)
_IGNORED = ("keys", "model", "tag", "device")


class OpenCLFunction(DeviceHost):
    """The host function of an OpenCL build: binds OpenCL arrays, enqueues the kernels in order."""

    def __init__(self, host, launches, kernel_module):
        super().__init__(host, launches)
        self.kmod = kernel_module

    def __repr__(self):
        return f"<OpenCLFunction {self.name}({', '.join(p.name for p in self.host.params)})>"

    def _host_array(self, a, where):
        if not isinstance(a, opencl_driver.OpenCLNDArray):
            dev = getattr(getattr(a, "device", None), "device_type", type(a).__name__)
            raise RuntimeArgError(f"{where}: expected an NDArray on opencl, got {dev} (use "
                                  "tvmlab.nd.array(x, tvmlab.opencl(0)))")
        return a

    def _kernel_arg(self, value, dtype):
        if dtype == "handle":
            return value._buf                       # the cl.Buffer
        return dt.to_numpy(dtype).type(value)       # pyopencl takes sized numpy scalars

    def __call__(self, *args):
        dev = next((a.device for a in args if isinstance(a, opencl_driver.OpenCLNDArray)), Device("opencl", 0))
        if not opencl_driver.exist(dev.device_id):
            raise DeviceError(f"{self.name}: there is no OpenCL device on this machine "
                              f"({opencl_driver.no_device_reason()})")
        env, values = self._bind(args)
        program = self.kmod.program(dev)
        _, queue = opencl_driver.context(dev)
        for var, dtype, count in self.temp_sizes(env):
            values[var] = opencl_driver.OpenCLNDArray((count,), dtype, dev)

        def launch(ln, grid, block, kargs):
            glob = tuple(g * b for g, b in zip(grid, block))
            getattr(program, ln.name)(queue, glob, tuple(block), *kargs)
        self.run_host(env, values, launch)
        queue.finish()

    def prepare(self, *args):
        return lambda: self(*args)


class OpenCLModule(Module):
    """The device code: OpenCL C (``get_source()``), compiled once per device on first use."""

    def __init__(self, kernels, src):
        super().__init__("opencl", {}, None, {"cl": src}, aliases={"": "cl", "opencl": "cl"})
        self.kernels = kernels
        self.src = src
        self._programs = {}

    def program(self, device):
        prog = self._programs.get(device.device_id)
        if prog is None:
            prog = self._programs[device.device_id] = opencl_driver.build_program(device, self.src)
        return prog


def build_opencl(mod, target="opencl"):
    """Compile a GPU-lowered IRModule for OpenCL; returns the host Module (device code imported)."""
    target = Target(target)
    split = device_split(mod, target, _OPTIONS, _IGNORED, cl_type)
    src = generate_opencl(split.kernels)
    kmod = OpenCLModule(split.kernels, src)
    if opencl_driver.exist(0):
        kmod.program(Device("opencl", 0))       # compile errors show at build time
    fn = OpenCLFunction(split.host, split.launches, kmod)
    host = Module("opencl_host", {fn.name: fn}, fn.name, {"host": split.host.script()},
                  aliases={"": "host"})
    host.imported_modules.append(kmod)
    return host


register_target("opencl", build_opencl, keys=("opencl", "gpu"))
