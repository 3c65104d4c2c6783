"""Model importers: ``relay.frontend.from_onnx`` and ``relay.frontend.from_pytorch``.

Each returns ``(mod, params)``: an IRModule whose ``main`` takes the model's
inputs then its weights, and a dict of weight NDArrays by name.
"""
from .common import FrontendError, MissingInputShape, OpNotImplemented  # noqa: F401
from .onnx import from_onnx  # noqa: F401
from .pytorch import from_pytorch  # noqa: F401
