"""TVM's ``tvm.contrib.debugger``: the graph executor with per-node timing and intermediate outputs."""
from . import debug_executor  # noqa: F401
