"""The graph executor: runs a compiled graph (TVM's ``tvm.contrib.graph_executor``).

    lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()

Storage follows the plan in the graph JSON (``storage_id``): entries with one
id are views of one block, so intermediate tensors reuse memory.  Every
call's arguments are checked once, when the executor is created; ``run()`` then
makes only the native calls, on the CPU all in one (``native_runner``).  Only runtime imports here: a library loaded in
a fresh process runs without the compiler.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from ..errors import RuntimeArgError
from ..runtime import ndarray as nd
from ..runtime.device import Device


class GraphExecutorFactoryModule:
    """What ``relay.build`` returns: the graph, the compiled library and the parameters."""

    def __init__(self, graph_json, lib, params, mod_name="default"):
        self.graph_json = graph_json
        self.lib = lib
        self.params = {k: np.asarray(v) for k, v in params.items()}
        self.libmod_name = mod_name
        self.ir_mod = None

    def __getitem__(self, name):
        if name != self.libmod_name:
            raise RuntimeArgError(f"this factory holds the model {self.libmod_name!r}, not {name!r}")
        return lambda dev=None: GraphExecutor(self.graph_json, self.lib, dev, self.params)

    def get_graph_json(self):
        return self.graph_json

    def __iter__(self):
        """``graph_json, lib, params = relay.build(...)``: the older TVM spelling, still accepted."""
        return iter((self.graph_json, self.lib, self.get_params()))

    def get_params(self):
        return {k: nd.array(v) for k, v in self.params.items()}

    def get_lib(self):
        return self.lib

    def get_executor_config(self):
        return self.graph_json

    def export_library(self, file_name, fcompile=None, cc=None, options=None):
        """Write ``file_name`` (the compiled groups, a shared library) with the graph and the parameters
        beside it (``file_name + ".graph.json"``, ``+ ".params.npz"``); ``tvm.runtime.load_module`` loads all three.
        ``cc`` / ``fcompile`` / ``options`` as for ``Module.export_library``.  (One file with a C API:
        build with ``executor=relay.backend.Executor("aot")``.)"""
        file_name = os.fspath(file_name)
        if self.lib is None:
            raise RuntimeArgError("export_library: this model has no compiled function (its graph only copies "
                                  "inputs to outputs)")
        self.lib.export_library(file_name, fcompile=fcompile, cc=cc, options=options)
        with open(file_name + GRAPH_SUFFIX, "w") as f:
            f.write(self.graph_json)
        np.savez(file_name + PARAMS_SUFFIX, **self.params)

    def __repr__(self):
        g = json.loads(self.graph_json)
        ops = sum(1 for n in g["nodes"] if n["op"] == "tvm_op" and n["attrs"]["func_name"] != NOP)
        return f"GraphExecutorFactoryModule({self.libmod_name!r}, {ops} kernel calls, {len(self.params)} params)"


NOP = "__nop"       # a node that only reshapes: its output is a view of its input (relay.build plans it so)
GRAPH_SUFFIX = ".graph.json"
PARAMS_SUFFIX = ".params.npz"


def load_factory(lib, path):
    """The factory of a library exported by ``GraphExecutorFactoryModule.export_library`` (used by load_module)."""
    with open(path + GRAPH_SUFFIX) as f:
        graph_json = f.read()
    params = {}
    if os.path.isfile(path + PARAMS_SUFFIX):
        with np.load(path + PARAMS_SUFFIX) as z:
            params = {k: z[k] for k in z.files}
    else:
        g = _parse_graph(graph_json)
        bound = [g["nodes"][i]["name"] for i in g["arg_nodes"] if re.fullmatch(r"p\d+", g["nodes"][i]["name"])]
        if bound:
            raise RuntimeArgError(f"load_module: {path + PARAMS_SUFFIX} is missing; the model's parameters "
                                  f"({', '.join(bound[:4])}{', ...' if len(bound) > 4 else ''}) were exported there")
    return GraphExecutorFactoryModule(graph_json, lib, params)


class GroupLibrary:
    """The compiled groups of a graph built for a GPU target: one module per group, found by function name."""

    def __init__(self, type_key, modules):
        self.type_key = type_key
        self.modules = dict(modules)
        self.imported_modules = [m for mod in self.modules.values() for m in mod.imported_modules]

    def get_function(self, name, query_imports=False):
        mod = self.modules.get(name)
        if mod is None:
            raise RuntimeArgError(f"the library has no function {name!r}; functions: {', '.join(self.modules)}")
        return mod.get_function(name)

    __getitem__ = get_function

    @property
    def function_names(self):
        return list(self.modules)

    def get_source(self, fmt=""):
        """Every group's device code (``fmt`` as for one module: "" / "cuda" for CUDA C, "ptx")."""
        return "\n".join(m.get_source(fmt) for m in self.imported_modules)

    def export_library(self, file_name, fcompile=None, cc=None, options=None):
        raise RuntimeArgError(f"export_library: a model built for {self.type_key} cannot be written out "
                              "(only target 'llvm' builds can); run it in this process")

    def __repr__(self):
        return f"GroupLibrary({self.type_key}, functions=[{', '.join(self.modules)}])"


def _parse_graph(graph_json):
    """The graph as a dict, checked for the keys the executor reads."""
    try:
        g = json.loads(graph_json) if isinstance(graph_json, (str, bytes)) else dict(graph_json)
        keys = ("nodes", "arg_nodes", "heads", "node_row_ptr", "attrs")
        missing = [k for k in keys if k not in g] + [k for k in ("shape", "dltype", "storage_id")
                                                      if k not in g.get("attrs", {})]
    except (TypeError, ValueError) as e:
        raise RuntimeArgError(f"not a graph JSON (relay.build's lib.get_graph_json()): {e}") from None
    if missing:
        raise RuntimeArgError(f"not a graph JSON (relay.build's lib.get_graph_json()): it lacks {missing}")
    return g


def _aligned(nbytes):
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes]


class GraphExecutor:
    """One instance of a graph on a device: its storage, its inputs and the prepared kernel calls."""

    def __init__(self, graph_json, lib, dev=None, params=None):
        dev = dev if dev is not None else Device("cpu", 0)
        kind = getattr(lib, "type_key", "llvm")
        want = "cpu" if kind in ("llvm", None) else kind
        if not isinstance(dev, Device) or dev.device_type != want:
            raise RuntimeArgError(f"this model was built for {'the CPU' if want == 'cpu' else want}: create it on "
                                  f"tvm.{want}(0), got {dev!r}")
        self.device = dev
        g = _parse_graph(graph_json)
        self.graph = g
        self.nodes = g["nodes"]
        self.row_ptr = g["node_row_ptr"]
        shapes = g["attrs"]["shape"][1]
        dtypes = g["attrs"]["dltype"][1]
        sids = g["attrs"]["storage_id"][1]
        sizes = {}
        for e, sid in enumerate(sids):
            n = int(np.prod(shapes[e], dtype=np.int64)) * np.dtype(dtypes[e]).itemsize
            sizes[sid] = max(sizes.get(sid, 0), n, 1)
        self.entries = []
        if dev.device_type == "cpu":        # entries are views of the planned blocks
            self.storage = {sid: _aligned(n) for sid, n in sizes.items()}
            for e, sid in enumerate(sids):
                count = int(np.prod(shapes[e], dtype=np.int64))
                arr = self.storage[sid][:count * np.dtype(dtypes[e]).itemsize].view(dtypes[e]).reshape(shapes[e])
                self.entries.append(nd.NDArray(arr, dev))
        else:                               # device memory: one array per entry
            self.storage = {}
            self.entries = [nd.empty(tuple(shapes[e]), dtypes[e], dev) for e in range(len(sids))]
        self.input_index = {self.nodes[i]["name"]: i for i in g["arg_nodes"]}
        self.input_names = [self.nodes[i]["name"] for i in g["arg_nodes"]]
        self.heads = [self._eid(n, k) for n, k, *_ in g["heads"]]
        self.lib = lib
        self.calls, self.call_nodes, funcs, arg_lists = [], [], [], []
        for nid, node in enumerate(self.nodes):
            if node["op"] != "tvm_op" or node["attrs"]["func_name"] == NOP:    # a reshape: a view, no call
                continue
            if not hasattr(lib, "get_function"):
                raise RuntimeArgError(f"the graph calls {node['attrs']['func_name']!r} but no compiled library was "
                                      f"given (got {type(lib).__name__})")
            fn = lib.get_function(node["attrs"]["func_name"])
            args = [self.entries[self._eid(i, k)] for i, k, *_ in node["inputs"]]
            args += [self.entries[self._eid(nid, k)] for k in range(int(node["attrs"]["num_outputs"]))]
            self.calls.append(fn.prepare(*args))
            self.call_nodes.append(nid)
            funcs.append(fn)
            arg_lists.append(args)
        # on the CPU one native call runs every kernel (native_runner); else, or if one cannot, a Python loop
        self.runner = None
        if dev.device_type == "cpu" and self.calls:
            from .native_runner import make_runner
            self.runner = make_runner(funcs, arg_lists)
        self.bound_params = [name for name in (params or {}) if name in self.input_index]
        for name in self.bound_params:
            self.set_input(name, params[name])

    def _eid(self, nid, k):
        return self.row_ptr[nid] + k

    def _input_entry(self, key):
        if isinstance(key, int) and not isinstance(key, bool):
            if not 0 <= key < len(self.input_names):
                raise RuntimeArgError(f"input index {key} is out of range: the graph has {len(self.input_names)} "
                                      f"inputs ({', '.join(self.input_names)})")
            key = self.input_names[key]
        nid = self.input_index.get(key)
        if nid is None:
            raise RuntimeArgError(f"the graph has no input {key!r}; inputs: {', '.join(self.input_names)}")
        return key, self.entries[self._eid(nid, 0)]

    def set_input(self, key=None, value=None, **params):
        if key is not None:
            name, dst = self._input_entry(key)
            src = value.numpy() if isinstance(value, nd.NDArray) else np.asarray(value)
            if str(src.dtype) != dst.dtype:
                raise RuntimeArgError(f"input {name!r}: expected dtype {dst.dtype}, got {src.dtype}")
            if tuple(src.shape) != tuple(dst.shape):
                raise RuntimeArgError(f"input {name!r}: expected shape {tuple(dst.shape)}, got {tuple(src.shape)}")
            if self.device.device_type == "cpu":
                np.copyto(dst._arr, src)
            else:
                dst.copyfrom(np.ascontiguousarray(src))
        for k, v in params.items():     # as TVM: names the graph does not take (params bound at build) are skipped
            if k in self.input_index:
                self.set_input(k, v)

    def run(self):
        if self.runner is not None:
            self.runner()
            return
        for call in self.calls:
            call()

    def run_individual(self, number=10, repeat=3, min_repeat_ms=0):
        """Seconds per call of each kernel call, in graph order: the best of ``repeat`` means over ``number``
        back-to-back calls of that kernel alone (inputs as the last run left them)."""
        from ..runtime.timer import make_time_evaluator
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (number, repeat)):
            raise RuntimeArgError(f"run_individual: number and repeat must be ints >= 1, got {number!r}, {repeat!r}")
        self.run()
        return [min(make_time_evaluator(lambda c=call: c, self.device, number, repeat, min_repeat_ms,
                                        name=self.nodes[nid]["attrs"]["func_name"])().results)
                for call, nid in zip(self.calls, self.call_nodes)]

    def get_input(self, key):
        return self._input_entry(key)[1]

    def get_num_outputs(self):
        return len(self.heads)

    def get_num_inputs(self):
        return len(self.input_names)

    def get_output(self, index, out=None):
        if not isinstance(index, int) or not 0 <= index < len(self.heads):
            raise RuntimeArgError(f"output index {index!r} is out of range: the graph has {len(self.heads)} outputs")
        arr = self.entries[self.heads[index]]
        if out is not None:
            out.copyfrom(arr.numpy())
            return out
        return nd.array(arr.numpy().copy(), self.device)


class GraphProfile:
    """Where one run's time goes: a row per kernel call (what TVM's debug executor reports), slowest first.

    ``rows``: dicts with ``node`` (graph node id), ``name`` (the kernel), ``ms``, ``percent`` (of the sum of the
    kernels), ``shape`` and ``dtype`` of its first output.  ``run_ms`` is one whole ``run()`` timed the same way,
    so ``run_ms - total_ms`` is what the calls cost together beyond each alone (executor, thread wake-ups, caches).
    """

    def __init__(self, rows, run_ms):
        total = sum(r["ms"] for r in rows) or 1.0
        for r in rows:
            r["percent"] = 100.0 * r["ms"] / total
        self.rows = sorted(rows, key=lambda r: -r["ms"])
        self.total_ms = sum(r["ms"] for r in rows)
        self.run_ms = run_ms

    def by_kernel(self):
        """``{kernel name: (calls, ms)}``: calls of one compiled function (identical groups share one) summed."""
        out = {}
        for r in self.rows:
            c, ms = out.get(r["name"], (0, 0.0))
            out[r["name"]] = (c + 1, ms + r["ms"])
        return out

    def table(self, top=None):
        head = f"{'node':>5}  {'kernel':<60}{'ms':>9}{'share':>8}  output"
        out = [head, "-" * (len(head) + 24)]
        for r in self.rows[:top]:
            out.append(f"{r['node']:>5}  {r['name'][:59]:<60}{r['ms']:>9.4f}{r['percent']:>7.1f}%  "
                       f"{r['dtype']}{list(r['shape'])}")
        if top is not None and len(self.rows) > top:
            out.append(f"... {len(self.rows) - top} more")
        out.append(f"{len(self.rows)} kernel calls: {self.total_ms:.3f} ms each alone, summed; one run(): "
                   f"{self.run_ms:.3f} ms")
        return "\n".join(out)

    def csv(self):
        lines = ["node,name,ms,percent,shape,dtype"]
        lines += [f"{r['node']},{r['name']},{r['ms']:.6f},{r['percent']:.3f},{'x'.join(map(str, r['shape']))},"
                  f"{r['dtype']}" for r in self.rows]
        return "\n".join(lines)

    __str__ = table

    def __repr__(self):
        return f"GraphProfile({len(self.rows)} kernel calls, {self.total_ms:.3f} ms summed, run {self.run_ms:.3f} ms)"


class GraphModule:
    """TVM's wrapper around an executor: ``GraphModule(lib["default"](dev))``."""

    def __init__(self, module):
        if not isinstance(module, GraphExecutor):
            hint = (" (an ahead-of-time model: use tvm.runtime.executor.AotModule(lib['default'](dev)))"
                    if type(module).__name__ == "AotExecutor" else "")
            raise RuntimeArgError(f"GraphModule needs lib['default'](dev) (a graph executor), got "
                                  f"{type(module).__name__}{hint}")
        self.module = module

    def set_input(self, key=None, value=None, **params):
        """Copy ``value`` into input ``key`` (name or index; an unknown one is an error), and each ``name=value``
        of ``params`` the graph takes (others, such as weights bound as constants by relay.build, are skipped)."""
        self.module.set_input(key, value, **params)

    def run(self, **inputs):
        if inputs:
            self.set_input(**inputs)
        self.module.run()

    def get_input(self, index, out=None):
        arr = self.module.get_input(index)
        if out is not None:
            out.copyfrom(arr.numpy())
            return out
        return arr

    def get_output(self, index, out=None):
        return self.module.get_output(index, out)

    def get_num_outputs(self):
        return self.module.get_num_outputs()

    def get_num_inputs(self):
        return self.module.get_num_inputs()

    def get_input_info(self):
        """``(shape_dict, dtype_dict)`` of the inputs still to be set (weights bound at build are not listed)."""
        ex = self.module
        bound = set(getattr(ex, "bound_params", ()))
        names = [n for n in ex.input_names if n not in bound]
        entries = [ex.get_input(n) for n in names]
        return ({n: tuple(e.shape) for n, e in zip(names, entries)}, {n: e.dtype for n, e in zip(names, entries)})

    def benchmark(self, device=None, func_name="run", repeat=5, number=5, min_repeat_ms=None, end_to_end=False):
        """Time ``run()``: ``repeat`` measurements of the mean over ``number`` runs (seconds), as TVM's result."""
        from ..runtime.module import make_time_evaluator
        if not isinstance(number, int) or number < 1 or not isinstance(repeat, int) or repeat < 1:
            raise RuntimeArgError(f"benchmark: number and repeat must be ints >= 1, got {number!r}, {repeat!r}")
        return make_time_evaluator(lambda: self.module.run, device or self.module.device, number, repeat,
                                   min_repeat_ms or 0, name="run")()

    @property
    def adaptive_threads(self):
        """Whether each ``run()`` picks all threads or one by recent timings (native_runner.ThreadChoice; on by
        default on the CPU). ``False``: every run on all threads."""
        r = self.module.runner
        return r is not None and r.choice is not None

    @adaptive_threads.setter
    def adaptive_threads(self, on):
        r = self.module.runner
        if r is not None:
            r.set_adaptive(bool(on))

    def run_individual(self, number=10, repeat=3, min_repeat_ms=0):
        """Seconds per call of each kernel call alone, in graph order (TVM's debug executor ``run_individual``)."""
        return self.module.run_individual(number, repeat, min_repeat_ms)

    def profile(self, number=10, repeat=3, min_repeat_ms=0, **inputs):
        """A ``GraphProfile``: each kernel call timed alone, and one whole ``run()`` timed the same way."""
        if inputs:
            self.set_input(**inputs)
        ex = self.module
        per = ex.run_individual(number, repeat, min_repeat_ms)
        run_s = min(self.benchmark(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms).results)
        shapes, dtypes = ex.graph["attrs"]["shape"][1], ex.graph["attrs"]["dltype"][1]
        rows = []
        for nid, s in zip(ex.call_nodes, per):
            e = ex.row_ptr[nid]
            rows.append({"node": nid, "name": ex.nodes[nid]["attrs"]["func_name"], "ms": s * 1e3,
                         "shape": tuple(shapes[e]), "dtype": dtypes[e]})
        return GraphProfile(rows, run_s * 1e3)

    def __getitem__(self, name):
        return getattr(self, name)


def create(graph_json_str, libmod, device):
    """``graph_executor.create(graph_json, lib, dev)`` -> GraphModule."""
    if isinstance(device, (list, tuple)):
        device = device[0]
    return GraphModule(GraphExecutor(graph_json_str, libmod, device))
