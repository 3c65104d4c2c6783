"""A thread-level simulator of tvmlab's GPU kernels: run a CUDA (or OpenGL compute) build on the CPU,
thread by thread in lockstep, and report the bugs a GPU would hide or hang on.

    f = tvm.build(s, [A, B, C], "cuda")
    report = tvm.testing.simulate(f, a, b, c)        # numpy arrays; c is written in place

It finds divergent barriers (a ``__syncthreads()`` some threads of a block skip: a deadlock), races
(two threads on one shared or global element, one writing, with no barrier between), accesses outside
a buffer, reads of shared or local memory never written, and warp shuffles some lanes of their segment
do not join, and tensor-core (wmma) calls some lanes of a warp skip.  With ``traffic=True`` it also counts
how each access would move through the memory system (``traffic``): global sectors per warp request
(coalescing) and shared-memory wavefronts (bank conflicts).  ``run_kernel`` runs one kernel
PrimFunc on a given grid, for kernels written by hand.

Every value is an array over the simulated threads (numpy, vectorised); blocks run in chunks of at most
``MAX_THREADS`` threads, so large grids stay within memory.
"""
from __future__ import annotations

import numpy as np

from ...errors import RuntimeArgError, SimulationError
from ...ir.function import IRModule, PrimFunc
from ...lower.split_host_device import DeviceSplit
from .machine import MAX_THREADS, KernelSim
from .memory import garbage
from .report import (DIVERGENT_BARRIER, DIVERGENT_SHUFFLE, DIVERGENT_WARP, KINDS, OUT_OF_BOUNDS, RACE,
                     UNINITIALIZED, Finding, Launch, SimReport)


class _Stop(Exception):
    pass


def host_array(a, where):
    """The numpy array (written in place) behind argument ``a``: a numpy array or a CPU NDArray."""
    from ...runtime.ndarray import NDArray
    if isinstance(a, NDArray) and type(a) is NDArray:
        return a._arr
    if isinstance(a, np.ndarray):
        if not a.flags.c_contiguous:
            raise RuntimeArgError(f"{where}: the array must be C-contiguous (np.ascontiguousarray), so the "
                                  "simulated kernels can write it in place")
        return a
    dev = getattr(getattr(a, "device", None), "device_type", None)
    got = f"an array on {dev}" if dev else type(a).__name__
    raise RuntimeArgError(f"{where}: expected a numpy array or a CPU NDArray, got {got}")


def _host_class():
    from ...codegen.device_host import DeviceHost
    from ...runtime import cpu
    from ...runtime.ndarray import NDArray

    class SimHost(DeviceHost):
        """The host function with host arrays (CPU NDArrays, which extern host calls also receive)."""

        def _host_array(self, a, where):
            arr = host_array(a, where)
            return a if isinstance(a, NDArray) else NDArray(arr, cpu(0))

        def _kernel_arg(self, value, dtype):
            return value._arr if dtype == "handle" else value
    return SimHost, NDArray, cpu


def device_program(f):
    """(host PrimFunc, launches, {name: kernel PrimFunc}) of a GPU build or GPU-lowered module."""
    from ...codegen.cuda_build import CUDAFunction
    from ...runtime.module import Module
    split, kernels = None, None
    what = type(f).__name__
    if isinstance(f, DeviceSplit):
        split = f
    elif isinstance(f, IRModule):
        split = getattr(f, "device_split", None)
        what = "an IRModule lowered without a GPU target"
    elif isinstance(f, Module):
        fn = f._functions.get(f.entry_name)
        what = f"a module built for {f.type_key}"
        if isinstance(fn, CUDAFunction):
            f = fn
        else:
            split = getattr(fn, "device_split", None)
            if split is None and f.type_key.startswith("opengl"):
                what = "an OpenGL module built without -compute (fragment shaders have no kernels to simulate)"
    if isinstance(f, CUDAFunction):
        return f.host, f.launches, {k.name: k for k in f.kmod.kernels}
    if split is None:
        raise RuntimeArgError(f"simulate needs a module built or lowered for a GPU: tvm.build(s, args, 'cuda'), "
                              f"tvm.lower(s, args, target='cuda') or tvm.build(s, args, 'opengl -compute'); got {what}")
    kernels = {k.name: k for k in split.kernels}
    return split.host, split.launches, kernels


def simulate(f, *args, check=True, max_threads=MAX_THREADS, traffic=False):
    """Run GPU build ``f`` on ``args`` (numpy arrays or CPU NDArrays, written in place as calling ``f``
    writes them; scalars where ``f`` takes them) thread by thread; returns a SimReport.

    ``f``: ``tvm.build(..., "cuda")``, ``tvm.lower(..., target="cuda")`` or an ``"opengl -compute"``
    build.  Arguments are checked as the CUDA module checks them (dtype, shape, symbolic dims).  With
    ``check`` a report with findings raises SimulationError (its ``report`` holds them).  With ``traffic``
    each launch also counts its memory traffic: ``report.traffic()`` / ``report.traffic_table()`` give
    the coalescing of every global access and the bank conflicts of every shared one.
    """
    host, launches, kernels = device_program(f)
    SimHost, NDArray, cpu = _host_class()
    runner = SimHost(host, launches)
    env, values = runner._bind(args)
    for var, dtype, count in runner.temp_sizes(env):
        values[var] = NDArray(garbage(dtype, count), cpu(0))
    report = SimReport(host.name)
    sims = {}

    def launch(ln, grid, block, kargs):
        sim = sims.get(ln.name)
        if sim is None:
            sim = sims[ln.name] = KernelSim(kernels[ln.name])
        if not sim.launch(grid, block, kargs, report, max_threads, traffic):
            raise _Stop()
    try:
        runner.run_host(env, values, launch)
    except _Stop:
        pass
    return report.raise_if_findings() if check else report


def run_kernel(kernel, grid, block, *args, check=True, max_threads=MAX_THREADS, traffic=False):
    """Simulate one kernel PrimFunc on ``grid`` x ``block`` (ints or (x, y, z) tuples).

    ``args`` follow ``kernel.params``: arrays (numpy or CPU NDArray, written in place) for buffer
    handles, numbers for scalars.  Thread indices are the kernel's ``thread_vars`` attr (as
    ``split_host_device`` makes them), Vars named "threadIdx.x", "blockIdx.y", ..., or ``thread_extent``
    attrs in the body.  Returns a SimReport (raises SimulationError on findings with ``check``).
    """
    if not isinstance(kernel, PrimFunc):
        raise RuntimeArgError(f"run_kernel expects a kernel PrimFunc, got {type(kernel).__name__}")
    if len(args) != len(kernel.params):
        raise RuntimeArgError(f"{kernel.name}: expected {len(kernel.params)} arguments "
                              f"({', '.join(p.name for p in kernel.params)}), got {len(args)}")
    flat = []
    for p, a in zip(kernel.params, args):
        where = f"{kernel.name}: argument '{p.name}'"
        if p.dtype == "handle":
            arr = host_array(a, where)
            buf = kernel.buffer_map.get(p)
            if buf is not None and str(arr.dtype) != buf.dtype:
                raise RuntimeArgError(f"{where}: expected dtype {buf.dtype}, got {arr.dtype}")
            flat.append(arr.reshape(-1))
        else:
            if not isinstance(a, (int, float, np.integer, np.floating)) or isinstance(a, bool):
                raise RuntimeArgError(f"{where}: expected a number ({p.dtype}), got {type(a).__name__}")
            flat.append(float(a) if p.dtype.startswith("float") else int(a))
    report = SimReport(kernel.name)
    KernelSim(kernel).launch(grid, block, flat, report, max_threads, traffic)
    return report.raise_if_findings() if check else report


from .schedule_check import ScheduleCheck, binds_gpu_threads, check_schedule  # noqa: E402

__all__ = ["simulate", "run_kernel", "check_schedule", "binds_gpu_threads", "ScheduleCheck", "SimReport", "Finding",
           "Launch", "SimulationError", "KINDS", "RACE",
           "DIVERGENT_BARRIER", "DIVERGENT_SHUFFLE", "DIVERGENT_WARP", "OUT_OF_BOUNDS", "UNINITIALIZED",
           "device_program"]
