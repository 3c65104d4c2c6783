"""``tvm.contrib.cuda_graph``: a graph executor whose kernel launches replay as one CUDA graph."""
from . import cuda_graph_executor  # noqa: F401
