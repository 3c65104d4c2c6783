"""TVM's ``tvm.contrib.cudnn``: tvmlab has no cuDNN binding, so ``exists()`` is False and a test
target "cuda -libs=cudnn" is skipped (``tvm.testing.requires_cudnn``)."""
from __future__ import annotations


def exists():
    """Whether cuDNN can be called from tvmlab: never (tvmlab generates its own CUDA kernels)."""
    return False
