"""Run a graph built for a GPU (``relay.build(..., target="cuda")``) on the thread-level simulator.

    outs = tvm.testing.simulate_graph(lib, data=x)        # a list of numpy arrays

It follows the GPU graph executor: one array per entry, the parameters bound at build time
set first, then each kernel call in order, each simulated thread by thread
(``tvmlab.analysis.gpusim``), so a race, a divergent barrier or an out-of-bounds access in
any group fails the run with SimulationError naming the group's kernel.  Intermediate arrays
start as NaN (integers as a sentinel), so an element no kernel writes shows in the outputs.
"""
from __future__ import annotations

import numpy as np

from ..analysis.gpusim import simulate
from ..contrib.graph_executor import NOP, _parse_graph
from ..errors import RuntimeArgError
from . import poison


def simulate_graph(factory, check=True, **inputs):
    """Outputs (numpy arrays) of ``factory`` (what ``relay.build`` returns for a GPU target) on ``inputs``."""
    lib = factory.get_lib()
    if getattr(lib, "type_key", "llvm") in ("llvm", None):
        raise RuntimeArgError("simulate_graph needs a graph built for a GPU target (relay.build(..., "
                              "target='cuda')); this one was built for the CPU: run it with graph_executor")
    g = _parse_graph(factory.get_graph_json())
    nodes, row_ptr = g["nodes"], g["node_row_ptr"]
    shapes, dtypes = g["attrs"]["shape"][1], g["attrs"]["dltype"][1]
    entries = [poison(np.empty(tuple(sh), dt)) for sh, dt in zip(shapes, dtypes)]
    names = {nodes[i]["name"]: i for i in g["arg_nodes"]}

    def put(name, value):
        dst = entries[row_ptr[names[name]]]
        src = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        if src.dtype != dst.dtype or src.shape != dst.shape:
            raise RuntimeArgError(f"input {name!r}: expected {dst.dtype} {dst.shape}, got {src.dtype} {src.shape}")
        np.copyto(dst, src)
    for name, value in factory.get_params().items():
        if name in names:
            put(name, value)
    unknown = [k for k in inputs if k not in names]
    if unknown:
        raise RuntimeArgError(f"the graph has no input {unknown[0]!r}; inputs: {', '.join(names)}")
    for name, value in inputs.items():
        put(name, value)
    for nid, node in enumerate(nodes):
        if node["op"] != "tvm_op":
            continue
        args = [entries[row_ptr[i] + k] for i, k, *_ in node["inputs"]]
        outs = list(range(row_ptr[nid], row_ptr[nid] + int(node["attrs"]["num_outputs"])))
        if node["attrs"]["func_name"] == NOP:            # a reshape: the output views the input
            entries[outs[0]] = args[0].reshape(entries[outs[0]].shape)
            continue
        simulate(lib.get_function(node["attrs"]["func_name"]), *args, *[entries[e] for e in outs], check=check)
    return [entries[row_ptr[n] + k] for n, k, *_ in g["heads"]]
