"""Ready-made workloads, as TVM's ``relay.testing``: ``resnet.get_workload(num_layers=50)`` -> (mod, params)."""
from . import resnet  # noqa: F401
from .init import create_workload  # noqa: F401


def run_infer_type(expr):
    """``expr`` (or a function) with its types inferred, as TVM's ``relay.testing.run_infer_type``."""
    from ...ir.function import IRModule
    from ..expr import Function
    from ..transform import InferType
    mod = InferType()(IRModule.from_expr(expr))
    return mod["main"] if isinstance(expr, Function) else mod["main"].body
