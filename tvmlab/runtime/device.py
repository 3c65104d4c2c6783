"""Devices: where an NDArray lives and where a compiled function runs.

A ``Device`` is a (type, id) value such as ``cpu(0)``.  Device types are kept
in a small registry so that a backend can add one (or make an existing one
real) without touching this file: ``register_device_type("cuda", exist=...)``.
Only the CPU is built in; "cuda" and "opengl" are known names whose devices
report ``exist == False`` until their backend registers a probe.
"""
from __future__ import annotations

import time

from ..errors import DeviceError

# canonical type -> {"exist": callable(device_id) -> bool, "sync": callable(device_id) | None,
#                    "timer": callable(device_id, fn) -> seconds | None, "why_not": callable() -> str | None}
_TYPES = {}
# every accepted spelling (target kind or device name) -> canonical type
_ALIASES = {}


def register_device_type(name, *, aliases=(), exist=None, sync=None, override=False, why_not=None, timer=None):
    """Add (or with ``override`` replace) a device type.

    ``exist(device_id) -> bool`` tells whether the device is present;
    ``sync(device_id)`` waits for work queued on it; ``timer(device_id, fn) -> seconds``
    runs ``fn()`` (which queues work) and returns how long the device took for it, measured on
    the device (a GPU's events), so ``time_evaluator`` does not count the host's wait for the
    device.  Without ``timer`` the host's clock around ``fn()`` and ``sync`` is used.  ``aliases`` are other
    names ``tvmlab.device`` accepts for it (target kinds such as "llvm").
    ``why_not() -> str | None`` says why there is no such device, for messages.
    """
    if name in _TYPES and not override:
        raise DeviceError(f"device type {name!r} is already registered; pass override=True to replace it")
    _TYPES[name] = {"exist": exist or (lambda device_id: False), "sync": sync, "why_not": why_not, "timer": timer}
    for a in (name, *aliases):
        _ALIASES[a] = name


def device_types():
    """The canonical device type names, in registration order."""
    return list(_TYPES)


class Device:
    """A device: ``device_type`` ("cpu", "cuda", "opengl") and ``device_id``."""
    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type, device_id=0):
        if device_type not in _TYPES:
            raise DeviceError(f"unknown device type {device_type!r}; known: {', '.join(_TYPES)}")
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise DeviceError(f"device id must be a non-negative int, got {device_id!r}")
        self.device_type = device_type
        self.device_id = device_id

    @property
    def exist(self):
        """True when this device is present on the machine."""
        return bool(_TYPES[self.device_type]["exist"](self.device_id))

    @property
    def compute_version(self):
        """A CUDA device's compute capability as "major.minor" (TVM's attribute); None elsewhere or
        when the device is absent."""
        if self.device_type != "cuda" or not self.exist:
            return None
        from . import cuda_driver
        major, minor = cuda_driver.require(self).compute_capability(self.device_id)
        return f"{major}.{minor}"

    def sync(self):
        """Wait until all work queued on the device is done (no-op on the CPU)."""
        fn = _TYPES[self.device_type]["sync"]
        if fn is not None:
            fn(self.device_id)

    def time(self, fn):
        """Seconds the work that ``fn()`` queues takes on this device, after it is done.

        Measured by the device where its backend can (CUDA events: the host's launch and
        wait costs after the first launch are not counted), else by the host's clock
        around ``fn()`` and ``sync()``."""
        timer = _TYPES[self.device_type].get("timer")
        if timer is not None:
            return timer(self.device_id, fn)
        t0 = time.perf_counter()
        fn()
        self.sync()
        return time.perf_counter() - t0

    def require(self):
        """Raise DeviceError unless the device exists."""
        if not self.exist:
            why = _TYPES[self.device_type]["why_not"]
            why = why() if why is not None else None
            raise DeviceError(f"no such device: {self!r} does not exist on this machine"
                              + (f" ({why})" if why else ""))
        return self

    def __eq__(self, other):
        return (isinstance(other, Device) and other.device_type == self.device_type
                and other.device_id == self.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"


def device(name, device_id=0):
    """The device for a target or device name: "llvm"/"cpu" -> cpu, "cuda"/"gpu" -> cuda, ...

    A full target string ("llvm -mcpu=skylake") or a Target object is accepted
    too; only its kind matters.
    """
    if isinstance(name, Device):
        return name if device_id in (0, name.device_id) else Device(name.device_type, device_id)
    kind = getattr(name, "kind", name)
    if not isinstance(kind, str):
        raise DeviceError(f"device name must be a string such as 'cpu' or 'llvm', got {name!r}")
    key = kind.split()[0] if kind.strip() else kind
    canon = _ALIASES.get(key)
    if canon is None:
        raise DeviceError(f"unknown device {kind!r}; valid names: {', '.join(sorted(_ALIASES))}")
    return Device(canon, device_id)


def enabled(target):
    """Whether the runtime for ``target``'s kind works here (TVM's ``tvm.runtime.enabled``).

    "llvm"/"cpu": always; "cuda": a CUDA binding loads and finds a GPU; "opengl": an EGL
    context opens; kinds tvmlab has no runtime for (or does not know): False.  A target
    string with options ("cuda -arch=sm_80") or a Target object is accepted.
    """
    kind = str(getattr(target, "kind", target)).strip()
    canon = _ALIASES.get(kind.split()[0] if kind else kind)
    return canon is not None and bool(_TYPES[canon]["exist"](0))


def cpu(device_id=0):
    return Device("cpu", device_id)


def cuda(device_id=0):
    return Device("cuda", device_id)


gpu = cuda


def opengl(device_id=0):
    return Device("opengl", device_id)


register_device_type("cpu", aliases=("llvm",), exist=lambda device_id: True)
register_device_type("cuda", aliases=("gpu", "nvptx"))
register_device_type("opengl", aliases=("gl", "glsl"))
# Devices of TVM's other backends: known names whose devices never exist here
# (tvmlab has no codegen for them), so ``tvm.device("vulkan", 0).exist`` is False.
# "opencl" becomes real when runtime.opencl_driver registers its probe.
register_device_type("opencl", aliases=("cl", "sdaccel", "aocl", "aocl_sw_emu"))
register_device_type("vulkan")
register_device_type("metal")
register_device_type("rocm")


def opencl(device_id=0):
    return Device("opencl", device_id)


def vulkan(device_id=0):
    return Device("vulkan", device_id)


def metal(device_id=0):
    return Device("metal", device_id)


def rocm(device_id=0):
    return Device("rocm", device_id)
