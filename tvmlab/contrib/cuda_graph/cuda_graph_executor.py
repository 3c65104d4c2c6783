"""A graph executor that runs a model's kernels as one CUDA graph (TVM's ``contrib.cuda_graph``).

At batch 1 a model's kernels are short and a run is bound by launching them one by one from Python.
The first ``run()`` captures every launch of the graph into a CUDA graph; each later ``run()`` replays it
with one driver call.  Inputs are copied into the executor's fixed buffers before a replay and outputs
read from them after, so ``set_input`` / ``get_output`` work as with the plain graph executor.

    from tvmlab.contrib.cuda_graph import cuda_graph_executor
    m = cuda_graph_executor.create(lib.get_graph_json(), lib, tvm.cuda(0))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()
"""
from __future__ import annotations

from ...errors import RuntimeArgError
from ...runtime import cuda_driver
from ..graph_executor import GraphExecutor, GraphModule


class GraphModuleCudaGraph(GraphModule):
    """``GraphModule`` whose ``run`` replays the captured CUDA graph (captured on the first run)."""

    def __init__(self, module):
        super().__init__(module)
        if module.device.device_type != "cuda":
            raise RuntimeArgError(f"cuda_graph_executor: CUDA graphs run on a CUDA device, got {module.device!r}")
        self.cuda_graph = None

    def capture_cuda_graph(self):
        """Capture the kernel launches of one run (they do not execute while captured).  One plain run comes
        first, so every kernel's code is loaded before the capture starts."""
        self.module.run()
        self.cuda_graph = cuda_driver.capture(self.module.device, self.module.run)
        return self.cuda_graph

    def run_cuda_graph(self):
        """Replay the captured graph and wait for it."""
        if self.cuda_graph is None:
            raise RuntimeArgError("run_cuda_graph: no CUDA graph captured yet (call capture_cuda_graph() or run())")
        self.cuda_graph.launch()

    def run(self, **inputs):
        if inputs:
            self.set_input(**inputs)
        if self.cuda_graph is None:
            self.capture_cuda_graph()
        self.run_cuda_graph()


def create(graph_json_str, libmod, device):
    """``cuda_graph_executor.create(graph_json, lib, dev)`` -> GraphModuleCudaGraph (``dev`` a CUDA device).

    ``lib`` is ``relay.build``'s result (its params are set, as ``lib["default"](dev)`` does) or its
    ``get_lib()`` (then set the params yourself: ``m.set_input(**lib.get_params())``, as in TVM)."""
    if isinstance(device, (list, tuple)):
        device = device[0]
    if getattr(device, "device_type", None) != "cuda":
        raise RuntimeArgError(f"cuda_graph_executor.create: CUDA graphs run on a CUDA device (tvm.cuda(0)), "
                              f"got {device!r}")
    params = None
    if hasattr(libmod, "get_graph_json") and hasattr(libmod, "get_params"):    # what relay.build returns
        params = libmod.get_params()
        libmod = libmod.get_lib()
    return GraphModuleCudaGraph(GraphExecutor(graph_json_str, libmod, device, params))
