"""TVM's ``tvm.contrib.nnpack``: tvmlab has no NNPACK binding, so ``is_available()`` is False (as in a
TVM built without NNPACK) and code that checks it takes its own path; tvmlab's x86 convolutions,
Winograd included, are generated instead."""
from __future__ import annotations

from ..errors import BuildError


def is_available():
    """Whether NNPACK can be called from tvmlab: never."""
    return False


def _missing(name):
    def call(*args, **kwargs):
        raise BuildError(f"tvm.contrib.nnpack.{name}: tvmlab has no NNPACK binding (is_available() is False); "
                         "use topi.nn.conv2d_nchw / conv2d_winograd_NCHWc or topi.nn.dense instead")
    call.__name__ = name
    return call


fully_connected_inference = _missing("fully_connected_inference")
convolution_inference = _missing("convolution_inference")
convolution_inference_without_weight_transform = _missing("convolution_inference_without_weight_transform")
convolution_inference_weight_transform = _missing("convolution_inference_weight_transform")
