"""Which targets a test runs on, as in ``tvm.testing``: the test targets, ``device_enabled``,
``enabled_targets`` and the ``requires_*`` features (decorators adding pytest marks).

A test taking a ``target`` argument runs once per test target (``TVMLAB_TEST_TARGETS`` or
``TVM_TEST_TARGETS``, ';'-separated, else ``DEFAULT_TEST_TARGETS``); a target whose device is absent
here (CUDA without a GPU) or that tvmlab has no backend for is skipped, with the reason.
"""
from __future__ import annotations

import os

# tvmlab's targets that run the operator tests ("opengl" computes only what a fragment shader can).
DEFAULT_TEST_TARGETS = ["llvm", "cuda"]


def target_kind(target):
    """The kind of a target string or Target ("cuda -arch=sm_80" -> "cuda")."""
    kind = getattr(target, "kind", None)
    if kind is not None:
        return str(kind)
    return str(target).split()[0] if str(target).strip() else ""


def test_targets():
    """The target strings tests run on (the environment's list, else DEFAULT_TEST_TARGETS)."""
    env = os.environ.get("TVMLAB_TEST_TARGETS") or os.environ.get("TVM_TEST_TARGETS") or ""
    names = [t.strip() for t in env.split(";") if t.strip()]
    return names or list(DEFAULT_TEST_TARGETS)


def _has_backend(kind):
    from ..codegen.registry import list_targets
    return kind in list_targets()


def _device_exists(kind):
    from ..runtime.device import enabled
    return enabled(kind)


def why_not_runnable(target, listed=True):
    """None when code for ``target`` can be built and run here (and, with ``listed``, it is a test
    target), else the reason (a sentence)."""
    kind = target_kind(target)
    if not _has_backend(kind):
        return f"tvmlab has no {kind!r} target"
    if listed and kind not in [target_kind(t) for t in test_targets()]:
        return f"{kind!r} is not among the test targets (TVMLAB_TEST_TARGETS / TVM_TEST_TARGETS)"
    if not _device_exists(kind):
        return f"no {kind} device on this machine (tvmlab.device({kind!r}, 0).exist is False)"
    return None


def device_enabled(target):
    """Whether code for ``target`` ("llvm", "cuda -arch=...", a Target) can be built and run here: a code
    generator is registered for its kind and ``tvm.runtime.enabled`` says its runtime works."""
    return why_not_runnable(target, listed=False) is None


def enabled_targets():
    """[(target, device)] for every test target that can run here (TVM's helper)."""
    from ..runtime.device import device
    return [(t, device(target_kind(t), 0)) for t in test_targets() if why_not_runnable(t) is None]


class Feature:
    """Something a test needs (a backend, a device); calling it on a test function adds its marks:
    the feature's name as a pytest marker, and a skip with the reason when it is absent.

    ``support_required="optional"`` only adds the marker (TVM's ``uses_gpu``).
    """
    all_features = {}

    def __init__(self, name, long_name=None, check=None, parents=()):
        self.name, self.long_name, self.check, self.parents = name, long_name or name, check, tuple(parents)
        Feature.all_features[name] = self

    def missing(self):
        """None when present, else why not (the feature's own reason before its parents')."""
        why = self.check() if self.check is not None else None
        for p in self.parents:
            why = why or Feature.all_features[p].missing()
        return why

    def marks(self, support_required="compile-and-run"):
        import pytest
        if support_required not in ("compile-and-run", "compile-only", "optional"):
            raise ValueError(f"support_required must be 'compile-and-run', 'compile-only' or 'optional', "
                             f"got {support_required!r}")
        marks = [getattr(pytest.mark, p) for p in self.parents] + [getattr(pytest.mark, self.name)]
        if support_required != "optional":
            why = self.missing()
            marks.insert(0, pytest.mark.skipif(why is not None, reason=f"needs {self.long_name}: {why}"))
        return marks

    def __call__(self, func=None, *, support_required="compile-and-run"):
        def wrap(f):
            for m in self.marks(support_required):
                f = m(f)
            return f
        return wrap if func is None else wrap(func)


def _target_check(kind, listed=True):
    return lambda: why_not_runnable(kind, listed)


def _any_gpu():
    """A GPU-style device runs here: a test target with the "gpu" key, or OpenCL (pocl runs on the CPU)."""
    gpus = [t for t in test_targets() if "gpu" in _keys(t)] + ["opencl"]
    return None if any(device_enabled(t) for t in gpus) else "no GPU-style device (CUDA, OpenCL) runs here"


def _keys(target):
    from ..codegen.registry import Target
    from ..errors import TVMLabError
    try:
        return Target(str(target)).keys
    except TVMLabError:
        return ()


def _tensorcore():
    """None where tensor-core tests run: on a GPU of compute capability 7.0 or newer, or, without a CUDA
    device, on the simulator (``sim_cuda.simulated_cuda``; the plugin runs such tests in it)."""
    if not _device_exists("cuda"):
        return None if _has_backend("cuda") else "tvmlab has no 'cuda' target"
    why = why_not_runnable("cuda")
    if why:
        return why
    from ..runtime.device import cuda
    version = getattr(cuda(0), "compute_version", None)
    if version is None or float(version) < 7.0:
        return "tensor cores need a CUDA device of compute capability 7.0 or newer"
    return None


def _absent(what):
    return lambda: f"tvmlab has no {what}"


requires_llvm = Feature("llvm", "LLVM", _target_check("llvm"))
requires_x86 = Feature("x86", "an x86 CPU", lambda: None if os.uname().machine in ("x86_64", "i686") else
                       f"the machine is {os.uname().machine}", parents=["llvm"])
requires_gpu = Feature("gpu", "a GPU", _any_gpu)
uses_gpu = requires_gpu(support_required="optional")
requires_cuda = Feature("cuda", "CUDA", _target_check("cuda"), parents=["gpu"])
requires_opengl = Feature("opengl", "an OpenGL (EGL) context", _target_check("opengl", listed=False), parents=["gpu"])
class _SimulatedFeature(Feature):
    """A feature whose tests run on the GPU simulator where there is no GPU: its parents only name
    markers, they do not skip it."""

    def missing(self):
        return self.check()


requires_tensorcore = _SimulatedFeature("tensorcore", "tensor cores", _tensorcore, parents=["cuda"])
requires_cudnn = Feature("cudnn", "cuDNN", _absent("cuDNN binding"), parents=["cuda"])
requires_cublas = Feature("cublas", "cuBLAS", _absent("cuBLAS binding"), parents=["cuda"])
requires_nvptx = Feature("nvptx", "NVPTX", _target_check("nvptx"), parents=["gpu"])
requires_rocm = Feature("rocm", "ROCm", _target_check("rocm"), parents=["gpu"])
requires_opencl = Feature("opencl", "OpenCL", _target_check("opencl"), parents=["gpu"])
requires_vulkan = Feature("vulkan", "Vulkan", _target_check("vulkan"), parents=["gpu"])
requires_metal = Feature("metal", "Metal", _target_check("metal"), parents=["gpu"])
requires_hexagon = Feature("hexagon", "Hexagon", _target_check("hexagon"))
requires_corstone300 = Feature("corstone300", "the Arm Corstone-300 FVP",
                               lambda: "tvmlab runs AOT tests on this machine only (AOT_DEFAULT_RUNNER); it does not "
                                       "drive the Corstone-300 FVP (FVP_Corstone_SSE-300, arm-none-eabi-gcc)")

# the feature a target's tests need, by target kind
_BY_KIND = {"llvm": requires_llvm, "cuda": requires_cuda, "opengl": requires_opengl, "nvptx": requires_nvptx,
            "rocm": requires_rocm, "opencl": requires_opencl, "vulkan": requires_vulkan, "metal": requires_metal,
            "hexagon": requires_hexagon}


def target_marks(target):
    """The pytest marks of a test instance running on ``target`` (a skip where it cannot run)."""
    import pytest
    kind = target_kind(target)
    if kind == "cuda" and "cudnn" in str(target):
        return requires_cudnn.marks()
    if kind == "cuda" and "cublas" in str(target):
        return requires_cublas.marks()
    feature = _BY_KIND.get(kind)
    if feature is not None:
        return feature.marks()
    return [pytest.mark.skipif(True, reason=f"tvmlab has no {kind!r} target")]
