"""``tvm.runtime.executor.AotModule``: TVM's wrapper around an ahead-of-time model.

    lib = relay.build(mod, "llvm", params=params, executor=relay.backend.Executor("aot"))
    m = tvm.runtime.executor.AotModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()

The wrapper forwards to the executor that ``lib["default"](dev)`` made
(``tvmlab.contrib.aot_executor.AotExecutor``), so this module needs nothing
above the runtime.
"""
from __future__ import annotations

from ..errors import RuntimeArgError


class AotModule:
    """``set_input``, ``run``, ``get_output``, ``get_input``, ``get_input_index``, ``get_num_inputs``,
    ``get_num_outputs``, ``get_input_info``, ``benchmark`` of an ahead-of-time model instance."""

    def __init__(self, module):
        if type(module).__name__ != "AotExecutor":
            hint = (" (a graph-executor model: use graph_executor.GraphModule, or build with "
                    "executor=relay.backend.Executor('aot'))" if type(module).__name__ == "GraphExecutor" else "")
            raise RuntimeArgError(f"AotModule needs lib['default'](dev) of an ahead-of-time model, got "
                                  f"{type(module).__name__}{hint}")
        self.module = module

    def set_input(self, key=None, value=None, **params):
        """Copy ``value`` into input ``key`` (name or index), and each ``name=value`` the model takes."""
        self.module.set_input(key, value, **params)

    def run(self, **inputs):
        self.module.run(**inputs)

    def get_input(self, key, out=None):
        arr = self.module.get_input(key)
        if out is not None:
            out.copyfrom(arr.numpy())
            return out
        return arr

    def get_input_index(self, name):
        return self.module.get_input_index(name)

    def get_input_info(self):
        return self.module.get_input_info()

    def get_output(self, index, out=None):
        return self.module.get_output(index, out)

    def get_num_inputs(self):
        return self.module.get_num_inputs()

    def get_num_outputs(self):
        return self.module.get_num_outputs()

    def benchmark(self, device=None, func_name="run", repeat=5, number=5, min_repeat_ms=None, end_to_end=False):
        return self.module.benchmark(device, func_name, repeat, number, min_repeat_ms, end_to_end)

    def __getitem__(self, name):
        return getattr(self, name)
