"""A CUDA device played by the thread-level simulator, for tests written against ``tvm.cuda(0)`` on a
machine without a GPU.

    with simulated_cuda():
        dev = tvm.cuda(0)                       # exists
        a = tvm.nd.array(a_np, dev)             # host memory standing for device memory
        f = tvm.build(s, [A, B], "cuda")        # compiled by NVRTC as usual
        f(a, b)                                 # runs on tvmlab.testing.simulate (races etc. fail the call)

Only inside the block, and only where no CUDA device exists: with a GPU present it changes nothing,
so the same test runs on the hardware.  The pytest plugin runs the tests that need tensor cores
(``tvm.testing.requires_tensorcore``) this way when the machine has no GPU.
"""
from __future__ import annotations

import contextlib

from ..runtime.device import _TYPES, device
from ..runtime import ndarray as _nd


class SimCUDAArray(_nd.NDArray):
    """An array "on" the simulated CUDA device: host memory the simulated kernels read and write."""
    __slots__ = ()


def _from_numpy(arr, dev):
    out = _nd._aligned_empty(arr.shape, arr.dtype)
    out[...] = arr
    return SimCUDAArray(out, dev)


def _empty(shape, dtype, dev):
    name = _nd._dtype_of(dtype)
    return SimCUDAArray(_nd._aligned_empty(_nd._shape_of(shape), _nd._numpy_dtype(name)), dev, name)


def _call(self, *args):
    """CUDAFunction.__call__ on simulated arrays: the kernels run on the simulator."""
    from ..analysis.gpusim import simulate
    plain = [a._arr if isinstance(a, SimCUDAArray) else a for a in args]
    simulate(self, *plain)


@contextlib.contextmanager
def simulated_cuda():
    """Within the block ``tvm.cuda(0)`` exists and CUDA builds run on the simulator (no-op where a CUDA
    device is present)."""
    from ..codegen.cuda_build import CUDAFunction
    if device("cuda", 0).exist:
        yield False
        return
    saved_type = dict(_TYPES["cuda"])
    saved_alloc = _nd._ALLOCATORS.get("cuda")
    saved_call, saved_prepare = CUDAFunction.__call__, CUDAFunction.prepare
    # timed by the host's clock: the simulator runs each kernel to its end within the call
    _TYPES["cuda"] = {"exist": lambda device_id: device_id == 0, "sync": None, "timer": None,
                      "why_not": saved_type.get("why_not")}
    _nd._ALLOCATORS["cuda"] = (_from_numpy, _empty)
    CUDAFunction.__call__ = _call
    CUDAFunction.prepare = lambda self, *args: (lambda: _call(self, *args))
    try:
        yield True
    finally:
        _TYPES["cuda"] = saved_type
        if saved_alloc is None:
            _nd._ALLOCATORS.pop("cuda", None)
        else:
            _nd._ALLOCATORS["cuda"] = saved_alloc
        CUDAFunction.__call__, CUDAFunction.prepare = saved_call, saved_prepare


__all__ = ["simulated_cuda", "SimCUDAArray"]
