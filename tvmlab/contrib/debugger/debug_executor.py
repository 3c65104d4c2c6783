"""The debug graph executor (TVM's ``tvm.contrib.debugger.debug_executor``).

    m = debug_executor.create(lib.get_graph_json(), lib.get_lib(), tvm.cpu(0))
    m.set_input("data", x); m.run()          # runs node by node, timing each
    print(m.profile())                         # each kernel alone, slowest first
    y3 = m.debug_get_output(3)                 # what node 3 computed in this run

It runs the same compiled kernels on the same planned storage as
``graph_executor``; ``run()`` calls them one at a time from Python so each can
be timed (``last_node_times()``), and ``debug_get_output`` re-runs the graph up
to the node asked for, since later nodes may reuse its storage.
"""
from __future__ import annotations

import time

from ...errors import RuntimeArgError
from ..graph_executor import GraphExecutor, GraphModule


class GraphModuleDebug(GraphModule):
    """A ``GraphModule`` that runs node by node and can give back any node's output."""

    def __init__(self, module, dump_root=None):
        super().__init__(module)
        self.dump_root = dump_root      # accepted for TVM's signature; nothing is written to disk
        self._times = None

    def run(self, **inputs):
        """Run every kernel in order from Python, timing each (``last_node_times()``)."""
        if inputs:
            self.set_input(**inputs)
        ex = self.module
        times = []
        for call in ex.calls:
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        self._times = times

    def last_node_times(self):
        """``[(node id, kernel name, seconds)]`` of the last ``run()``, in graph order."""
        if self._times is None:
            raise RuntimeArgError("last_node_times: run() the graph first")
        ex = self.module
        return [(nid, ex.nodes[nid]["attrs"]["func_name"], t) for nid, t in zip(ex.call_nodes, self._times)]

    def _node_id(self, node):
        ex = self.module
        if isinstance(node, int) and not isinstance(node, bool):
            if not 0 <= node < len(ex.nodes):
                raise RuntimeArgError(f"debug_get_output: node {node} is out of range: the graph has "
                                      f"{len(ex.nodes)} nodes")
            return node
        if isinstance(node, str):
            for nid, n in enumerate(ex.nodes):
                if n["name"] == node:
                    return nid
            names = [n["name"] for n in ex.nodes]
            raise RuntimeArgError(f"debug_get_output: no node named {node!r}; nodes: {', '.join(names)}")
        raise RuntimeArgError(f"debug_get_output: node must be an index or a name, got {type(node).__name__}")

    def debug_get_output(self, node, out=None):
        """Output 0 of ``node`` (index or name) for the current inputs: the graph is run up to that node."""
        ex = self.module
        nid = self._node_id(node)
        for call, cid in zip(ex.calls, ex.call_nodes):     # up to the node (a view's input, for a __nop)
            if cid > nid:
                break
            call()
        arr = ex.entries[ex.row_ptr[nid]]
        if out is not None:
            out.copyfrom(arr.numpy())
            return out
        from ...runtime import ndarray as nd
        return nd.array(arr.numpy().copy(), ex.device)


def create(graph_json_str, libmod, device, dump_root=None):
    """``debug_executor.create(graph_json, lib, dev)`` -> GraphModuleDebug (``lib``: ``relay.build(...).get_lib()``
    or the factory itself, whose parameters are then set too)."""
    if isinstance(device, (list, tuple)):
        device = device[0]
    params = None
    if hasattr(libmod, "get_lib") and hasattr(libmod, "params"):
        params, libmod = libmod.params, libmod.get_lib()
    return GraphModuleDebug(GraphExecutor(graph_json_str, libmod, device, params), dump_root)
