"""Build-time checks of GPU kernels against the device's limits.

Run on the kernels of ``split_host_device``: barriers must be uniform (see
``thread_sync.check_uniform_barriers``), and the launch must fit the device.  A limit that depends on a
symbolic shape cannot be checked here; the runtime checks it at launch.
Limits (override through ``lower_for_device(..., config={"gpu_limits": {...}})``
or target options such as ``cuda -max_threads_per_block=512``):
``max_threads_per_block`` (1024), ``max_shared_memory_per_block`` (48 KiB),
``max_thread_x/y/z`` (1024, 1024, 64), ``max_grid_y/z`` (65535).
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir.expr import IntImm
from .thread_sync import check_uniform_barriers

DEFAULT_LIMITS = {
    "max_threads_per_block": 1024,
    "max_shared_memory_per_block": 48 * 1024,
    "max_thread_x": 1024, "max_thread_y": 1024, "max_thread_z": 64,
    "max_grid_y": 65535, "max_grid_z": 65535,
}


def gpu_limits(overrides=None):
    """DEFAULT_LIMITS updated with ``overrides`` (ints; unknown keys are an error)."""
    out = dict(DEFAULT_LIMITS)
    for k, v in (overrides or {}).items():
        if k not in DEFAULT_LIMITS:
            raise LoweringError(f"unknown GPU limit {k!r}; known: {', '.join(DEFAULT_LIMITS)}")
        try:
            out[k] = int(v)
        except (TypeError, ValueError):
            raise LoweringError(f"GPU limit {k} must be an integer, got {v!r}") from None
    return out


def verify_gpu(kernels, limits=None):
    """Raise LoweringError naming the kernel and the limit when a kernel exceeds ``limits``, and
    DivergentBarrierError when one of its barriers is not reached by every thread of a block."""
    lim = gpu_limits(limits)
    for k in kernels:
        check_uniform_barriers(k)
        launch = k.attrs["launch"]
        threads = 1
        for axis in "xyz":
            ext = launch.get(f"threadIdx.{axis}")
            if isinstance(ext, IntImm):
                if ext.value < 1:
                    raise LoweringError(f"{k.name}: threadIdx.{axis} has extent {ext.value}; it must be >= 1")
                if ext.value > lim[f"max_thread_{axis}"]:
                    raise LoweringError(f"{k.name}: threadIdx.{axis} has extent {ext.value}, more than the "
                                        f"device's {lim[f'max_thread_{axis}']} for that axis")
                threads *= ext.value
        if threads > lim["max_threads_per_block"]:
            dims = " x ".join(f"{t}={launch[t]}" for t in launch if t.startswith("threadIdx"))
            raise LoweringError(f"{k.name}: {threads} threads per block ({dims}) is more than the device's "
                                f"maximum of {lim['max_threads_per_block']}; split the bound axes by "
                                "smaller factors")
        for axis in "yz":
            ext = launch.get(f"blockIdx.{axis}")
            if isinstance(ext, IntImm) and ext.value > lim[f"max_grid_{axis}"]:
                raise LoweringError(f"{k.name}: blockIdx.{axis} has extent {ext.value}, more than the "
                                    f"device's {lim[f'max_grid_{axis}']}; bind the larger axis to blockIdx.x")
        shared = k.attrs["shared_bytes"]
        if shared > lim["max_shared_memory_per_block"]:
            parts = ", ".join(f"{v.name} {c} x {d}" for v, d, c in k.attrs["shared"])
            raise LoweringError(f"{k.name}: uses {shared} bytes of shared memory ({parts}), more than the "
                                f"limit of {lim['max_shared_memory_per_block']} bytes per block; use "
                                "smaller tiles")
    return kernels
