"""Helpers spelled as in TVM's ``tvm.contrib``: temporary directories and linking shared libraries."""
from . import cblas, cc, clang, cudnn, nnpack, nvcc, pickle_memoize, utils  # noqa: F401
