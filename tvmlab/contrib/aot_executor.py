"""The ahead-of-time executor: the whole model is one native function over one workspace.

    lib = relay.build(mod, "llvm", params=params, executor=relay.backend.Executor("aot"))
    m = tvm.runtime.executor.AotModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x); m.run(); y = m.get_output(0).numpy()

``plan_aot`` lays the graph's storage out once, at build time: every tensor
the memory plan keeps (inputs, intermediates, outputs) at an offset in one
workspace, every parameter at an offset in one block of constants, and the
kernel calls in order, each argument a (region, offset) pair.  The plan is
plain data: ``native_runner.runner_ir`` turns it into the entry function
``i64 <prefix>_aot_run(ptr workspace, ptr constants)`` (kernels by address
here, by symbol in an exported library), ``aot_bundle`` writes it into the C
library's tables, and a loaded library carries it in its metadata.  Only
runtime imports at load time: a library loaded in a fresh process runs
without the compiler.
"""
from __future__ import annotations

import ctypes
import re

import numpy as np

from ..errors import DeviceError, RuntimeArgError
from ..runtime import ndarray as nd
from ..runtime.device import Device
from .graph_executor import NOP, _parse_graph
from .native_runner import runner_ir, small_calls

REGIONS = ("workspace", "constants")


def _round_up(n, align):
    return -(-n // align) * align


def _nbytes(shape, dtype):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def output_names(count):
    """TVM's AOT names: "output" for one output, "output0", "output1", ... for several."""
    return ["output"] if count == 1 else [f"output{i}" for i in range(count)]


def plan_aot(graph_json, params, lib, mod_name="default", alignment=64, openmp=True):
    """The AOT plan of a graph built by ``relay.build``: regions, inputs, outputs, parameters and calls.

    ``params``: {name: array} of the graph's bound parameters (they go into the constants); ``lib``: the
    compiled kernels (each call's arguments are checked against its function's parameters)."""
    if not isinstance(mod_name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", mod_name):
        raise RuntimeArgError(f"mod_name {mod_name!r} names the model's C API (tvmlab_<mod_name>_run, ...): it "
                              "must be a C identifier (letters, digits and '_', not starting with a digit)")
    g = _parse_graph(graph_json)
    nodes, row_ptr = g["nodes"], g["node_row_ptr"]
    shapes, dtypes, sids = g["attrs"]["shape"][1], g["attrs"]["dltype"][1], g["attrs"]["storage_id"][1]
    eid = lambda nid, k: row_ptr[nid] + k  # noqa: E731
    sizes = {}
    for e, sid in enumerate(sids):
        sizes[sid] = max(sizes.get(sid, 0), _nbytes(shapes[e], dtypes[e]), 1)
    place, cursor = {}, {"workspace": 0, "constants": 0}
    param_rows, input_rows = [], []
    for nid in g["arg_nodes"]:                      # inputs and parameters: each its own storage
        name, e = nodes[nid]["name"], eid(nid, 0)
        region = "constants" if name in params else "workspace"
        place[sids[e]] = (region, cursor[region])
        row = {"name": name, "dtype": dtypes[e], "shape": list(shapes[e]), "offset": cursor[region]}
        (param_rows if region == "constants" else input_rows).append(row)
        cursor[region] += _round_up(sizes[sids[e]], alignment)
    for sid in sorted(sizes):                       # everything else lives in the workspace
        if sid not in place:
            place[sid] = ("workspace", cursor["workspace"])
            cursor["workspace"] += _round_up(sizes[sid], alignment)
    calls, arg_bytes = [], []
    for nid, node in enumerate(nodes):
        if node["op"] != "tvm_op" or node["attrs"]["func_name"] == NOP:
            continue
        name = node["attrs"]["func_name"]
        entries = [eid(i, k) for i, k, *_ in node["inputs"]]
        entries += [eid(nid, k) for k in range(int(node["attrs"]["num_outputs"]))]
        spec = lib.get_function(name).spec
        if len(spec.params) != len(entries) or any(p.kind != "buffer" for p in spec.params):
            raise RuntimeArgError(f"{name}: the ahead-of-time executor calls kernels whose parameters are the "
                                  f"node's {len(entries)} tensors; it takes {spec.signature()}")
        calls.append({"kernel": name, "args": [list(place[sids[e]]) for e in entries],
                      "errors": [[code, msg] for code, (_, msg) in sorted(spec.errors.items())]})
        arg_bytes.append([_nbytes(shapes[e], dtypes[e]) for e in entries])
    heads = [eid(n, k) for n, k, *_ in g["heads"]]
    outputs = [{"name": out, "dtype": dtypes[e], "shape": list(shapes[e]), "region": place[sids[e]][0],
                "offset": place[sids[e]][1]} for out, e in zip(output_names(len(heads)), heads)]
    return {"prefix": f"tvmlab_{mod_name}", "mod_name": mod_name, "alignment": alignment,
            "workspace_bytes": max(cursor["workspace"], alignment),
            "constants_bytes": max(cursor["constants"], alignment),
            "inputs": input_rows, "outputs": outputs, "params": param_rows, "calls": calls,
            "serial": small_calls(arg_bytes) if openmp else [], "openmp": bool(openmp)}


def entry_ir(plan, kernels=None):
    """LLVM IR of the plan's entry ``i64 <prefix>_aot_run(ptr workspace, ptr constants)``: the kernels by
    symbol (an exported library), or by address when ``kernels`` maps their names to addresses."""
    calls = [((kernels or {}).get(c["kernel"], c["kernel"]), [("ptr", tuple(a)) for a in c["args"]])
             for c in plan["calls"]]
    return runner_ir(calls, set(plan["serial"]), name=plan["prefix"] + "_aot_run", bases=REGIONS)


def constants_blob(plan, params):
    """The parameters laid out as the plan's constants: a 64-byte-aligned uint8 array."""
    raw = np.zeros(plan["constants_bytes"] + 64, dtype=np.uint8)
    blob = raw[(-raw.ctypes.data) % 64:][:plan["constants_bytes"]]
    for row in plan["params"]:
        value = np.ascontiguousarray(params[row["name"]], dtype=row["dtype"])
        blob[row["offset"]:row["offset"] + value.nbytes] = value.reshape(-1).view(np.uint8)
    return blob


def _view(base, row):
    """The numpy view of ``row`` (name, dtype, shape, offset) inside the uint8 region ``base``."""
    n = _nbytes(row["shape"], row["dtype"])
    return base[row["offset"]:row["offset"] + n].view(row["dtype"]).reshape(row["shape"])


class AotExecutor:
    """One instance of an AOT model on the CPU: its workspace, and ``run()`` as one native call."""

    def __init__(self, plan, lib, constants, entry, dev=None, keep=None):
        dev = dev if dev is not None else Device("cpu", 0)
        if not isinstance(dev, Device) or dev.device_type != "cpu":
            raise RuntimeArgError(f"an ahead-of-time model runs on the CPU: create it on tvm.cpu(0), got {dev!r}")
        self.device, self.plan, self.lib = dev, plan, lib
        raw = np.zeros(plan["workspace_bytes"] + 64, dtype=np.uint8)
        self.workspace = raw[(-raw.ctypes.data) % 64:][:plan["workspace_bytes"]]
        self.constants = constants                      # uint8 numpy view of the parameters' block
        self.inputs = {r["name"]: nd.NDArray(_view(self.workspace, r), dev) for r in plan["inputs"]}
        self.input_names = [r["name"] for r in plan["inputs"]]
        self.outputs = [nd.NDArray(_view(self.workspace if r["region"] == "workspace" else constants, r), dev)
                        for r in plan["outputs"]]
        self._entry, self._keep = entry, keep           # keep: what holds the entry's code alive
        self._ws_ptr, self._const_ptr = self.workspace.ctypes.data, constants.ctypes.data

    def set_input(self, key=None, value=None, **params):
        if key is not None:
            name = self.get_input_name(key) if isinstance(key, int) and not isinstance(key, bool) else key
            dst = self.get_input(name)
            src = value.numpy() if isinstance(value, nd.NDArray) else np.asarray(value)
            if str(src.dtype) != dst.dtype:
                raise RuntimeArgError(f"input {name!r}: expected dtype {dst.dtype}, got {src.dtype}")
            if tuple(src.shape) != tuple(dst.shape):
                raise RuntimeArgError(f"input {name!r}: expected shape {tuple(dst.shape)}, got {tuple(src.shape)}")
            np.copyto(dst._arr, src)
        for k, v in params.items():     # as TVM: names the model does not take (bound parameters) are skipped
            if k in self.inputs:
                self.set_input(k, v)

    def run(self, **inputs):
        if inputs:
            self.set_input(**inputs)
        rc = self._entry(self._ws_ptr, self._const_ptr)
        if rc:
            call = self.plan["calls"][(rc >> 32) - 1]
            code = rc & 0xFFFFFFFF
            self.lib.get_function(call["kernel"])._raise(code - (1 << 32) if code >= 1 << 31 else code)

    def get_input_name(self, index):
        if not isinstance(index, int) or not 0 <= index < len(self.input_names):
            raise RuntimeArgError(f"input index {index!r} is out of range: the model has {len(self.input_names)} "
                                  f"inputs ({', '.join(self.input_names)})")
        return self.input_names[index]

    def get_input_index(self, name):
        if name not in self.inputs:
            raise RuntimeArgError(f"the model has no input {name!r}; inputs: {', '.join(self.input_names)}")
        return self.input_names.index(name)

    def get_input(self, key):
        name = self.get_input_name(key) if isinstance(key, int) and not isinstance(key, bool) else key
        self.get_input_index(name)
        return self.inputs[name]

    def get_num_inputs(self):
        return len(self.input_names)

    def get_num_outputs(self):
        return len(self.outputs)

    def get_output(self, index, out=None):
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.outputs):
            raise RuntimeArgError(f"output index {index!r} is out of range: the model has {len(self.outputs)} "
                                  "outputs")
        arr = self.outputs[index].numpy()
        if out is not None:
            out.copyfrom(arr)
            return out
        return nd.array(arr.copy(), self.device)

    def get_input_info(self):
        """``(shape_dict, dtype_dict)`` of the inputs to set."""
        return ({r["name"]: tuple(r["shape"]) for r in self.plan["inputs"]},
                {r["name"]: r["dtype"] for r in self.plan["inputs"]})

    def benchmark(self, device=None, func_name="run", repeat=5, number=5, min_repeat_ms=None, end_to_end=False):
        """Time ``run()``: ``repeat`` measurements of the mean over ``number`` runs (seconds)."""
        from ..runtime.timer import make_time_evaluator
        if not isinstance(number, int) or number < 1 or not isinstance(repeat, int) or repeat < 1:
            raise RuntimeArgError(f"benchmark: number and repeat must be ints >= 1, got {number!r}, {repeat!r}")
        return make_time_evaluator(lambda: self.run, device or self.device, number, repeat, min_repeat_ms or 0,
                                   name="run")()

    def __repr__(self):
        return (f"AotExecutor({self.plan['mod_name']!r}, {len(self.plan['calls'])} kernel calls, workspace "
                f"{self.plan['workspace_bytes']} bytes)")


_ENTRY = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p)


def jit_entry(plan, lib):
    """The plan's entry compiled in this process, calling ``lib``'s kernels at their addresses."""
    import llvmlite.binding as llvm

    from ..runtime import llvm_jit
    kernels = {}
    for c in plan["calls"]:
        fn = lib.get_function(c["kernel"])
        if fn._not_runnable:
            raise DeviceError(f"this model cannot run in this process: {fn._not_runnable}")
        kernels[c["kernel"]] = ctypes.cast(fn._cfunc, ctypes.c_void_p).value
    ref = llvm.parse_assembly(entry_ir(plan, kernels))
    ref.verify()
    cpu, features = llvm_jit.host_cpu()
    engine = llvm_jit.JitEngine(ref, cpu, features, opt=0)
    return _ENTRY(engine.address(plan["prefix"] + "_aot_run")), engine


class AOTExecutorFactoryModule:
    """What ``relay.build(..., executor=Executor("aot"))`` returns: the plan, the kernels, the parameters.

    ``lib["default"](dev)`` makes an executor (wrap it in ``tvm.runtime.executor.AotModule``);
    ``export_library("m.so")`` writes one library with a C API and ``m.h`` beside it (``"m.tar"``: an object
    and the header, for static linking)."""

    def __init__(self, plan, lib, params, graph_json=None, constants=None, entry=None):
        self.plan, self.lib, self.graph_json = plan, lib, graph_json
        self.libmod_name = plan["mod_name"]
        self.params = {k: np.asarray(v) for k, v in params.items()}
        self.constants = constants if constants is not None else constants_blob(plan, self.params)
        self._entry = entry             # (entry function, what keeps it alive) of a loaded library
        self.ir_mod = self.lowered = self.memory_plan = None

    def __getitem__(self, name):
        if name != self.libmod_name:
            raise RuntimeArgError(f"this factory holds the model {self.libmod_name!r}, not {name!r}")
        return self._create

    def _create(self, dev=None):
        if self._entry is None:
            self._entry = jit_entry(self.plan, self.lib) if self.plan["calls"] else (lambda ws, consts: 0, None)
        return AotExecutor(self.plan, self.lib, self.constants, self._entry[0], dev, keep=self._entry[1])

    def get_params(self):
        return {k: nd.array(v) for k, v in self.params.items()}

    def get_lib(self):
        return self.lib

    def get_graph_json(self):
        if self.graph_json is None:
            raise RuntimeArgError("this ahead-of-time model was loaded from a library, which carries its plan "
                                  "(get_executor_config()) and no graph JSON")
        return self.graph_json

    def get_executor_config(self):
        """The AOT plan: workspace and constants sizes, inputs, outputs, parameters and kernel calls."""
        return self.plan

    def export_library(self, file_name, fcompile=None, cc=None, options=None):
        """Write ``file_name``: a shared library (``.so``) holding code, parameters and metadata, with a C API
        declared in the header written beside it (same name, ``.h``); or a ``.tar`` of one object file and
        that header, for static linking.  ``cc`` (or ``fcompile``) names the C compiler (for ``-mtriple``
        builds that architecture's: ``aarch64-linux-gnu-gcc``), ``options`` extra arguments for it."""
        from ..runtime.module import compiler_choice
        from .aot_bundle import write_bundle
        if self.lib is None:
            raise RuntimeArgError("export_library: this model has no compiled function (its graph only copies "
                                  "inputs to outputs)")
        cc, options = compiler_choice(fcompile, cc, options)
        return write_bundle(self, file_name, cc=cc, options=options)

    def __repr__(self):
        return (f"AOTExecutorFactoryModule({self.libmod_name!r}, {len(self.plan['calls'])} kernel calls, "
                f"{len(self.params)} params)")


def load_aot(module, plan, handle):
    """The factory of a library written by ``AOTExecutorFactoryModule.export_library`` (for load_module):
    its entry and its constants are the library's own symbols."""
    prefix = plan["prefix"]
    try:
        entry = _ENTRY((prefix + "_aot_run", handle))
        base = ctypes.addressof(ctypes.c_uint8.in_dll(handle, prefix + "_constants"))
    except (AttributeError, ValueError) as e:
        raise RuntimeArgError(f"load_module: {module.path!r} lacks a symbol of its ahead-of-time model: {e}") from None
    constants = np.ctypeslib.as_array((ctypes.c_uint8 * plan["constants_bytes"]).from_address(base))
    constants.flags.writeable = False               # the library's read-only data
    params = {r["name"]: _view(constants, r).copy() for r in plan["params"]}
    return AOTExecutorFactoryModule(plan, module, params, constants=constants, entry=(entry, handle))
