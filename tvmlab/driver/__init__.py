"""The driver: ``lower`` and ``build`` (TVM's ``tvm.driver``; the code is in ``build_module``)."""
from . import build_module  # noqa: F401
from .build_module import (build, config_from_context, lower, make_function,  # noqa: F401
                           schedule_to_module, uses_device_lowering)
