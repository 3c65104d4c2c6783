"""Helpers for checking compiled code against numpy, as in ``tvm.testing``.

    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

``random_data`` draws inputs that are never all zero, ``poison`` fills
outputs with NaN (floats) or a sentinel (integers) so an element the code
forgets to write shows up, and ``tolerance`` gives the rtol/atol a dtype
deserves.  ``tvmlab.testing.fuzz`` is the random-program fuzzer.
"""
from __future__ import annotations

import numpy as np

from ..ir import dtype as dt

# Integer outputs are pre-filled with this value (the dtype's max for narrow types).
SENTINEL = 0x5A5A5A5A


def assert_allclose(actual, desired, rtol=1e-7, atol=1e-7):
    """numpy's assert_allclose on arrays or NDArrays; shapes must match exactly."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    if actual.shape != desired.shape:
        raise AssertionError(f"shape mismatch: actual {actual.shape}, desired {desired.shape}")
    if actual.dtype == np.bool_ or desired.dtype == np.bool_:
        actual, desired = actual.astype(np.int8), desired.astype(np.int8)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=True)


def assert_prim_expr_equal(lhs, rhs):
    """Raise ValueError unless the index expressions ``lhs`` and ``rhs`` are provably equal (TVM's helper)."""
    from ..ir.arith import Analyzer
    if not Analyzer().can_prove_equal(lhs, rhs):
        raise ValueError(f"{lhs} and {rhs} are not equal")


def device_enabled(target):
    """Whether code for ``target`` ("llvm", "cuda -arch=...", ...) can be built and run on this machine:
    a code generator is registered for its kind and ``tvm.runtime.enabled(target)``."""
    from ..codegen.registry import list_targets
    from ..runtime.device import enabled
    kind = str(getattr(target, "kind", target)).split()[0] if str(target).strip() else ""
    return kind in list_targets() and enabled(kind)


def uses_gpu(fn):
    """Marks a test that also runs on GPUs when present (each target is checked with device_enabled)."""
    return fn


def enabled_targets():
    """[(target, device)] for every registered target that can run here (TVM's helper)."""
    from ..codegen.registry import list_targets
    from ..runtime.device import device
    return [(t, device(t, 0)) for t in list_targets() if device_enabled(t)]


def _requires(target, what):
    def mark(fn):
        import pytest
        return pytest.mark.skipif(not device_enabled(target),
                                  reason=f"needs {what}: tvmlab.device({target!r}, 0).exist is False "
                                         "on this machine")(fn)
    return mark


requires_cuda = _requires("cuda", "a CUDA GPU")
requires_opengl = _requires("opengl", "an OpenGL (EGL) context")
requires_opencl = _requires("opencl", "an OpenCL device")

GPU_TARGETS = ("cuda", "opencl")


def requires_gpu(fn):
    """Skip unless some GPU-style target (CUDA, or OpenCL, e.g. pocl on the CPU) runs here."""
    import pytest
    return pytest.mark.skipif(not any(device_enabled(t) for t in GPU_TARGETS),
                              reason="needs a GPU-style device: neither tvmlab.device('cuda', 0) "
                                     "nor tvmlab.device('opencl', 0) exists on this machine")(fn)


def requires_tensorcore(fn):
    """Skip unless a CUDA GPU with tensor cores (compute capability 7.0 or newer) is present."""
    import pytest
    from ..runtime.device import device
    ok = device_enabled("cuda") and int(str(device("cuda", 0).compute_version).split(".")[0]) >= 7
    return pytest.mark.skipif(not ok, reason="needs a CUDA GPU with tensor cores")(fn)


def skip_if_wheel_test(fn):
    """TVM skips some tests in its wheel builds; tvmlab has none, so this marks nothing."""
    return fn


def parametrize_targets(*targets):
    """Run a ``test(target, dev)`` once per target (skipped where the target cannot run here)."""
    import pytest

    def mark(fn):
        from ..runtime.device import device
        params = [pytest.param(t, device(t.split()[0], 0), id=t,
                               marks=pytest.mark.skipif(not device_enabled(t),
                                                        reason=f"{t} cannot run here"))
                  for t in targets]
        return pytest.mark.parametrize("target,dev", params)(fn)
    if len(targets) == 1 and callable(targets[0]):
        fn, targets = targets[0], ("llvm",) + GPU_TARGETS
        return mark(fn)
    return mark


def main():
    """Run the calling test file under pytest (TVM's ``tvm.testing.main()``)."""
    import sys
    import pytest
    sys.exit(pytest.main([sys.argv[0]] + sys.argv[1:]))


def requires_llvm(fn):
    """The llvm target is always there."""
    return fn


def tolerance(dtype):
    """(rtol, atol) for comparing results of ``dtype`` computed in a different order."""
    dtype = str(np.dtype(dt.to_numpy(dt.canonical(str(dtype)))))
    return {"float16": (1e-2, 1e-2), "float32": (1e-5, 1e-5),
            "float64": (1e-10, 1e-10)}.get(dtype, (0, 0))


def sentinel(dtype):
    """The value ``poison`` writes into an integer or bool array."""
    d = np.dtype(dtype)
    if d == np.bool_:
        return True
    info = np.iinfo(d)
    return min(SENTINEL, int(info.max))


def poison(arr):
    """Fill ``arr`` (numpy array or NDArray) with NaN or the integer sentinel; return it."""
    if hasattr(arr, "copyfrom") and hasattr(arr, "numpy"):
        host = arr.numpy()
        _fill(host)
        arr.copyfrom(host)
        return arr
    _fill(arr)
    return arr


def _fill(a):
    if np.issubdtype(a.dtype, np.floating):
        a[...] = np.nan
    else:
        a[...] = sentinel(a.dtype)


def random_data(shape, dtype, rng, low=None, high=None):
    """Random values of ``dtype`` in [low, high) (floats) / [low, high] (ints), never all zero.

    Defaults: floats in [-1, 1), signed ints in [-50, 50], unsigned in [0, 100],
    bools half true.
    """
    dtype = np.dtype(dt.to_numpy(dt.canonical(str(dtype))))
    shape = tuple(int(s) for s in shape)
    if dtype == np.bool_:
        out = rng.random(shape) < 0.5
        if out.size and not out.any():
            out.flat[0] = True
        return out
    if np.issubdtype(dtype, np.floating):
        lo = -1.0 if low is None else low
        hi = 1.0 if high is None else high
        out = rng.uniform(lo, hi, size=shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        lo = (0 if info.min == 0 else -50) if low is None else low
        hi = (100 if info.min == 0 else 50) if high is None else high
        lo, hi = max(int(lo), int(info.min)), min(int(hi), int(info.max))
        out = rng.integers(lo, hi + 1, size=shape, dtype=np.int64).astype(dtype)
    if out.size and not out.any():
        out.flat[0] = dtype.type(hi if hi else lo)
    return out


def simulate(f, *arrays, check=True, **options):
    """Run GPU build ``f`` (``tvm.build(..., "cuda")``, ``tvm.lower(..., target="cuda")`` or an
    ``"opengl -compute"`` build) thread by thread on the CPU, writing outputs in place; returns a
    SimReport and, with ``check``, raises SimulationError on a race, divergent barrier or shuffle,
    out-of-bounds access or read of uninitialized memory (``tvmlab.analysis.gpusim``)."""
    from ..analysis.gpusim import simulate as _simulate
    return _simulate(f, *arrays, check=check, **options)


def simulate_graph(factory, check=True, **inputs):
    """Run a graph ``relay.build(..., target="cuda")`` made on the thread-level GPU simulator; returns
    its outputs as numpy arrays (``tvmlab.testing.gpu_graph``)."""
    from .gpu_graph import simulate_graph as _simulate_graph
    return _simulate_graph(factory, check=check, **inputs)


__all__ = ["assert_allclose", "tolerance", "poison", "sentinel", "random_data", "simulate", "simulate_graph",
           "SENTINEL"]
