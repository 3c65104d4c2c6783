"""TVM's ``autotvm.tophub``: pre-tuned schedule configs per target.  tvmlab ships no pre-tuned logs and
downloads nothing, so ``context(target)`` applies only the records given in ``extra_files`` (every other
query falls back, as TVM does with ``TOPHUB_LOCATION=NONE``).

    with autotvm.tophub.context("llvm"):
        out = topi.x86.conv2d_nchw(...)
"""
from __future__ import annotations

from .task import ApplyHistoryBest


def context(target, extra_files=None):
    """A dispatch context holding the best records of ``extra_files`` (log paths), usable in ``with``."""
    del target
    return ApplyHistoryBest(list(extra_files or []))
