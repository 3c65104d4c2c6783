"""TVM's ``autotvm.tophub``: tuned schedule configs that apply by default, per device, offline.

Logs named ``<device key>.log`` (``cuda_sm_90.log`` for an H100 or H200, ``llvm_znver5.log`` for a
CPU; ``device_key(target)`` gives the key) in the package's ``tophub_logs`` folder, or in the folder
``TOPHUB_LOCATION`` names, apply wherever no dispatch context of the user's answers: topi's tunable
schedules (``topi.x86`` matmul / conv2d, ``topi.cuda`` dense / batch_matmul / conv2d) and so
``relay.build`` use the best record of their workload for the target's device; a workload the log
lacks, and a device without a log, get the hand-written schedule.  A user's own log comes first::

    with autotvm.apply_history_best("my.log"):     # its records, then the shipped ones
        lib = relay.build(mod, target="cuda", params=params)

``TOPHUB_LOCATION=NONE`` turns the shipped configs off (as in TVM); nothing is ever downloaded.
``python -m tvmlab.autotvm.tophub tune`` makes the logs on the device they are for (``tophub/tune.py``).
``context(target, extra_files)`` is TVM's explicit form: the shipped records and ``extra_files``.
"""
from __future__ import annotations

import os

from ..task import ApplyHistoryBest

PACKAGE_LOGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tophub_logs")
_loaded = {}          # log path -> (mtime, ApplyHistoryBest)


def location():
    """The folder the shipped logs are read from, or None when ``TOPHUB_LOCATION=NONE``."""
    where = os.environ.get("TOPHUB_LOCATION", "")
    if where.upper() == "NONE":
        return None
    return where or PACKAGE_LOGS


def device_key(target):
    """The log name (without ``.log``) of ``target``'s device: ``cuda_sm_XY`` from ``-arch`` or the GPU
    present, ``llvm_<cpu>`` from ``-mcpu`` or this machine's CPU; None when it cannot be told."""
    from ...codegen.registry import Target
    t = target if isinstance(target, Target) else Target(str(target))
    if t.kind == "cuda":
        arch = t.options.get("arch")
        if not isinstance(arch, str):
            from ...runtime import cuda_driver
            b = cuda_driver.backend()
            if b is None:
                return None
            major, minor = b.compute_capability(0)
            arch = f"sm_{major}{minor}"
        return f"cuda_{arch}"
    if t.kind == "llvm":
        cpu = t.options.get("mcpu")
        if not isinstance(cpu, str) or cpu == "native":
            from ...runtime import llvm_jit
            cpu = llvm_jit.host_cpu()[0]
        return f"llvm_{cpu}"
    return None


def shipped_log(target):
    """The path of the shipped log for ``target``'s device, or None."""
    where = location()
    key = device_key(target) if where else None
    if key is None:
        return None
    path = os.path.join(where, f"{key}.log")
    return path if os.path.isfile(path) else None


def default_context(target):
    """The dispatch context of the shipped log for ``target`` (loaded once per file version), or None."""
    if target is None:
        return None
    path = shipped_log(target)
    if path is None:
        return None
    mtime = os.path.getmtime(path)
    hit = _loaded.get(path)
    if hit is None or hit[0] != mtime:
        hit = _loaded[path] = (mtime, ApplyHistoryBest(path))
    return hit[1]


def context(target, extra_files=None):
    """TVM's ``tophub.context``: a dispatch context (usable in ``with``) holding the shipped records for
    ``target``'s device and those of ``extra_files`` (log paths), the best of each workload winning."""
    files = [p for p in [shipped_log(target)] if p] + list(extra_files or [])
    return ApplyHistoryBest(files)

