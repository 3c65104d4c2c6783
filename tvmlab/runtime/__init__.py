"""The runtime: devices, NDArrays, compiled modules and timing.

``tvmlab.nd`` is ``tvmlab.runtime.ndarray``; the names below are the ones
user code reaches through ``tvmlab`` (``tvmlab.device``, ``tvmlab.cpu``, ...).
"""
from .device import (Device, cpu, cuda, device, enabled, gpu, metal, opencl, opengl,  # noqa: F401
                     register_device_type, rocm, vulkan)
from . import executor  # noqa: F401
from .library import load_module  # noqa: F401
from .module import FuncSpec, Function, Module, ParamSpec  # noqa: F401
from .ndarray import NDArray, array, empty  # noqa: F401
from .timer import BenchmarkResult  # noqa: F401
from .values import const, convert  # noqa: F401

