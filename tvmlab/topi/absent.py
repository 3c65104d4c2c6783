"""Namespaces for TVM's targets that tvmlab has no backend for (``topi.arm_cpu``, ``topi.mali``, ...).

TVM's tests build per-target dispatch tables at import time (``{"cpu": topi.x86.schedule_pool,
"hls": topi.hls.schedule_pool}``); such a table must load, and its entries for absent targets must fail
only when used.  Every name in these namespaces is a function that raises ``AbsentTargetError`` naming
the target and the operator.
"""
from __future__ import annotations

import sys
import types

from ..errors import BuildError


class AbsentTargetError(BuildError):
    """An operator or schedule of a target tvmlab has no backend for was called."""


class AbsentTarget(types.ModuleType):
    """``topi.<target>``: any attribute is an operator that raises AbsentTargetError when called."""

    def __init__(self, name, target):
        super().__init__(name, f"TVM's topi.{target}: tvmlab has no {target} backend; every operator here "
                               f"raises AbsentTargetError when called.")
        self.target_name = target

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        target = self.target_name

        def absent(*args, **kwargs):
            raise AbsentTargetError(f"topi.{target}.{attr}: tvmlab has no {target} target; use topi.x86, "
                                    f"topi.cuda or topi.generic")
        absent.__name__ = absent.__qualname__ = attr
        absent.__doc__ = f"TVM's topi.{target}.{attr}, unavailable: tvmlab has no {target} target."
        return absent

    def __dir__(self):
        return []


def absent_target(package, target):
    """The namespace ``<package>.<target>`` for an absent target, also importable by that name."""
    name = f"{package}.{target}"
    mod = sys.modules.get(name)
    if not isinstance(mod, AbsentTarget):
        mod = sys.modules[name] = AbsentTarget(name, target)
    return mod


# TVM's topi packages for targets tvmlab does not have
ABSENT_TARGETS = ("arm_cpu", "mali", "bifrost", "intel_graphics", "hls", "rocm", "vulkan", "adreno", "hexagon")
