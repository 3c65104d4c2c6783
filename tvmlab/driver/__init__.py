"""The driver: ``lower`` and ``build`` (TVM's ``tvm.driver``; the code is in ``build_module``)."""
from . import build_module  # noqa: F401
from .build_module import (build, config_from_context, lower, make_function,  # noqa: F401
                           schedule_to_module, uses_device_lowering)


def _register_test_hooks():
    # TVM exposes these for its tensorize tests; they show what tensorize matches
    from ..runtime.registry import register_func
    from ..schedule.tensorize import infer_region, match_body
    register_func("test.op.InferTensorizeRegion", infer_region, override=True)
    register_func("test.op.MatchTensorizeBody", match_body, override=True)


_register_test_hooks()
