"""TVM's ``tvm.ir.module``: where ``IRModule`` lives in TVM's package layout."""
from .function import IRModule  # noqa: F401
