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


from .params import (exclude_targets, fixture, known_failing_targets, main, parameter,  # noqa: E402,F401
                     parameters, parametrize_targets)
from .targets import (DEFAULT_TEST_TARGETS, Feature, device_enabled, enabled_targets,  # noqa: E402,F401
                      requires_corstone300, requires_cublas, requires_cuda, requires_cudnn, requires_gpu,
                      requires_hexagon, requires_llvm, requires_metal, requires_nvptx, requires_opencl, requires_opengl,
                      requires_rocm, requires_tensorcore, requires_vulkan, requires_x86, uses_gpu)


def skip_if_wheel_test(fn):
    """TVM skips some tests in its wheel builds; tvmlab has none, so this marks nothing."""
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
