"""relay.build: optimise a graph, lower each fused group to one TE function, compile them all, plan the graph.

    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))

Steps: bind ``params`` as constants; the pass pipeline (``optimize``); for
each fused group, TE tensors from the operators' computes, the schedule of
its anchor (``relay.schedules``), ``tvm.lower``; identical groups share one
function; all functions are compiled in one ``tvm.build``.  The graph JSON
(TVM's format: nodes, arg_nodes, heads, shapes, dtypes, storage ids from the
memory plan) and the parameters travel with the compiled library.
"""
from __future__ import annotations

import json

import numpy as np

from .. import te
from ..errors import TVMLabError
from ..ir.function import IRModule
from ..ir.transform import Sequential
from .base import RelayError
from .expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order
from .ty import TensorType, TupleType, tensor_types
from .visit import substitute


def _main(mod):
    if isinstance(mod, Function):
        return mod
    if not isinstance(mod, IRModule):
        raise RelayError(f"relay.build expects an IRModule or a relay.Function, got {type(mod).__name__}")
    if "main" not in mod or not isinstance(mod["main"], Function):
        raise RelayError(f"relay.build needs a module whose 'main' is a relay function; it has "
                         f"{list(mod.functions)}")
    return mod["main"]


def bind_params_by_name(func, params):
    """``func`` with the parameters named in ``params`` replaced by constants (shape and dtype checked)."""
    if not params:
        return func
    by_name = {p.name_hint: p for p in func.params}
    binds = {}
    for name, value in params.items():
        v = by_name.get(name)
        if v is None:
            continue        # TVM ignores params the function does not take
        arr = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
        t = v.type_annotation
        if isinstance(t, TensorType) and (tuple(arr.shape) != t.shape or str(arr.dtype) != t.dtype):
            raise RelayError(f"param {name!r}: expected {t.dtype}{list(t.shape)}, got {arr.dtype}{list(arr.shape)}")
        binds[v] = Constant(arr)
    return substitute(func, binds) if binds else func


def optimize(mod, target="llvm", params=None):
    """Bind ``params`` and run the graph passes under the current PassContext; returns (module, params)."""
    from . import transform as T
    func = bind_params_by_name(_main(mod), params)
    from ..codegen.registry import Target
    tgt = target if isinstance(target, Target) else Target(str(target))
    # NCHW[x]c for CPUs; Winograd's weight transform (folded) for CUDA
    layout = [T.AlterOpLayout(target), T.FoldConstant()] if tgt.kind in ("llvm", "cuda") else []
    seq = Sequential([T.InferType(), T.SimplifyInference(), T.FoldConstant(), T.SimplifyExpr(), *layout,
                      T.DeadCodeElimination(), T.FuseOps(), T.InferType()], opt_level=0, name="relay.optimize")
    out = seq(IRModule({"main": func}))
    if not _is_fused(out["main"]):       # FuseOps disabled: every operator on its own
        from .transform.fuse_ops import fuse_function
        out = IRModule({"main": fuse_function(out["main"], 0)})
    return out, {}


def _is_fused(func):
    return all(not isinstance(n, Call) or isinstance(n.op, Function) for n in post_order(func.body))


# ------------------------------------------------------------------ lowering groups
def _flat(v):
    if isinstance(v, list):
        out = []
        for x in v:
            out += _flat(x)
        return out
    return [v]


def group_tensors(fn):
    """TE placeholders for ``fn``'s parameters, its output tensors, and the anchor operator's output."""
    from .op.registry import OpPattern
    inputs = [te.placeholder(p._checked_type.te_shape, p._checked_type.dtype, name=f"p{k}")
              for k, p in enumerate(fn.params)]
    env = dict(zip(fn.params, inputs))
    anchor, best = None, -1
    for n in post_order(fn.body):
        if n in env:
            continue
        if isinstance(n, Constant):
            val, dtype = n.value.item(), str(n.value.dtype)
            env[n] = te.compute((), lambda: te.const(val, dtype), name="const")
        elif isinstance(n, Call):
            args = []
            for a in n.args:
                args += _flat(env[a])
            try:
                res = n.op.compute(n.attrs, args, n._checked_type)
            except TVMLabError as e:
                raise RelayError(f"{n.op.name}: its compute failed: {e}") from None
            env[n] = list(res) if isinstance(n._checked_type, TupleType) else res[0]
            p = n.op.pattern if n.op.pattern != OpPattern.TUPLE else -1
            if p >= best:
                anchor, best = res[0], p
                fn.anchor_call = n
        elif isinstance(n, Tuple):
            env[n] = [env[f] for f in n.fields]
        elif isinstance(n, TupleGetItem):
            env[n] = env[n.tuple_value][n.index]
    return inputs, _flat(env[fn.body]), anchor


def lower_group(fn, name, target):
    """One fused group compiled for ``target``: for the CPU its AST3 (PrimFunc; all groups are built together),
    for CUDA a built module.  The anchor's schedule is tried first, then simpler ones."""
    from ..driver import build, lower
    from .schedules import schedule_default, schedule_group
    gpu = target.kind == "cuda"

    def tensors():
        if gpu:
            with target:            # the computes take the GPU's layouts (no CPU panel packing)
                return group_tensors(fn)
        return group_tensors(fn)
    inputs, outs, anchor = tensors()
    if gpu:
        from ..topi.cuda import schedule_anchor, schedule_simple
        attempts = [lambda: schedule_anchor(outs, anchor, target, name), lambda: schedule_simple(outs, target, name)]
    else:
        attempts = [lambda: schedule_group(outs, anchor, target), lambda: schedule_default(outs, target, False)]
    call = getattr(fn, "anchor_call", None)
    custom = call.op.schedules.get(target.kind) if call is not None else None
    if custom is not None:      # relay.op.register_schedule(name, fn(attrs, outs, target))
        attempts.insert(0, lambda: custom(call.attrs, outs, target))
    err = None
    for attempt in attempts:
        try:
            s = attempt()
            if target.kind != "llvm":
                return build(s, inputs + outs, target=target, name=name)
            return lower(s, inputs + outs, name=name)[name]
        except TVMLabError as e:
            err = e
            inputs, outs, anchor = tensors()
    raise RelayError(f"cannot compile fused group {name} for {target}: {err}") from err


# ------------------------------------------------------------------ graph codegen
RESHAPES = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten"})


def reshape_only(fn):
    """Whether fused group ``fn`` only changes its one input's shape (same elements, same order, same dtype)."""
    if len(fn.params) != 1 or not isinstance(fn.body, Call):
        return False
    tin, tout = fn.params[0]._checked_type, fn.body._checked_type
    if not isinstance(tin, TensorType) or not isinstance(tout, TensorType) or tin.dtype != tout.dtype:
        return False
    return all(not isinstance(n, (Call, Tuple, TupleGetItem, Constant)) or
               (isinstance(n, Call) and getattr(n.op, "name", None) in RESHAPES)
               for n in post_order(fn.body) if n is not fn.params[0])


class GraphCodegen:
    """The graph JSON, the lowered functions (shared by identical groups) and the parameters of a fused main."""

    def __init__(self, target):
        self.target = target
        self.nodes, self.entries_type = [], []
        self.funcs, self.cache, self.params = {}, {}, {}
        self.groups = {}        # function name -> its fused group
        self.group_of_node = {}

    def _add_node(self, node, types):
        self.nodes.append(node)
        self.entries_type.append(types)
        return len(self.nodes) - 1

    def run(self, func):
        entries = {}
        arg_nodes = []
        names = [p.name_hint for p in func.params]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise RelayError(f"the graph's inputs must have distinct names; {dup} appear more than once")
        for p in func.params:
            nid = self._add_node({"op": "null", "name": p.name_hint, "inputs": []}, tensor_types(p._checked_type))
            arg_nodes.append(nid)
            entries[p] = [(nid, 0)]
        for n in post_order(func.body):
            if n in entries:
                continue
            if isinstance(n, Var):
                raise RelayError(f"free variable %{n.name_hint} in the graph; make it a parameter of main")
            if isinstance(n, Constant):
                name = f"p{len(self.params)}"
                self.params[name] = n.value
                nid = self._add_node({"op": "null", "name": name, "inputs": []}, tensor_types(n._checked_type))
                arg_nodes.append(nid)
                entries[n] = [(nid, 0)]
            elif isinstance(n, Tuple):
                entries[n] = [e for f in n.fields for e in entries[f]]
            elif isinstance(n, TupleGetItem):
                t = n.tuple_value._checked_type
                start = sum(len(tensor_types(f)) for f in t.fields[:n.index])
                entries[n] = entries[n.tuple_value][start:start + len(tensor_types(t.fields[n.index]))]
            elif isinstance(n, Call) and isinstance(n.op, Function):
                ins = [e for a in n.args for e in entries[a]]
                outs = tensor_types(n._checked_type)
                # a group that only reshapes is a view of its input: no kernel, shared storage (TVM's __nop)
                fname = "__nop" if self.target.kind == "llvm" and reshape_only(n.op) else self._function(n.op)
                nid = self._add_node({"op": "tvm_op", "name": fname,
                                      "attrs": {"func_name": fname, "num_inputs": str(len(ins)),
                                                "num_outputs": str(len(outs)), "flatten_data": "0"},
                                      "inputs": [[i, k, 0] for i, k in ins]}, outs)
                entries[n] = [(nid, k) for k in range(len(outs))]
            else:
                raise RelayError(f"cannot compile a {type(n).__name__} at graph level; run FuseOps first")
        heads = entries[func.body]
        return self._json(arg_nodes, heads)

    def _function(self, fn):
        from .printer import astext
        key = astext(fn)
        name = self.cache.get(key)
        if name is None:
            base = getattr(fn, "name_hint", "fused_op")
            name, k = base, 1
            while name in self.funcs:
                name, k = f"{base}_{k}", k + 1
            self.funcs[name] = lower_group(fn, name, self.target)
            self.cache[key] = name
            self.groups[name] = fn
        return name

    def run_compiling_in_parallel(self, func):
        """``run`` with each group's NVRTC compile on a pool of threads while the next group lowers; a group
        whose compile failed is built again alone, so it falls back to a simpler schedule as ``run`` would."""
        from ..codegen.cuda_build import compile_in_parallel
        with compile_in_parallel() as compiles:
            graph_json = self.run(func)
        failed = {id(kmod) for kmod, fut, _ in compiles if fut.exception() is not None}
        for name, mod in list(self.funcs.items()):
            if any(id(k) in failed for k in getattr(mod, "imported_modules", ())):
                self.funcs[name] = lower_group(self.groups[name], name, self.target)
        return graph_json

    def _json(self, arg_nodes, heads):
        from .memory_plan import plan_memory
        row_ptr, shapes, dtypes = [0], [], []
        for types in self.entries_type:
            row_ptr.append(row_ptr[-1] + len(types))
            shapes += [list(t.shape) for t in types]
            dtypes += [t.dtype for t in types]
        storage, self.plan_stats = plan_memory(self.nodes, row_ptr, shapes, dtypes, heads)
        graph = {"nodes": self.nodes, "arg_nodes": arg_nodes, "node_row_ptr": row_ptr,
                 "heads": [[n, k, 0] for n, k in heads],
                 "attrs": {"shape": ["list_shape", shapes], "dltype": ["list_str", dtypes],
                           "storage_id": ["list_int", storage]}}
        return json.dumps(graph, indent=1)


def build(ir_mod, target="llvm", target_host=None, params=None, mod_name="default", executor=None, runtime=None):
    """Compile a relay module for ``target``; returns a factory: ``lib["default"](dev)``, ``get_params()``,
    ``export_library(path)``, and ``get_graph_json()`` for the graph executor.  ``executor=
    relay.backend.Executor("aot")``: one entry function runs the whole model (``contrib.aot_executor``)."""
    from ..codegen.registry import Target
    from ..contrib.graph_executor import GraphExecutorFactoryModule
    from ..driver import build as tir_build
    from .backend import executor_of, runtime_of
    ex = executor_of(executor)
    runtime_of(runtime)
    if isinstance(target, dict):
        if len(target) != 1:
            raise RelayError(f"relay.build compiles for one target, got {list(target)}")
        target = next(iter(target.values()))
    from ..contrib.graph_executor import GroupLibrary
    tgt = target if isinstance(target, Target) else Target(str(target))
    if tgt.kind not in ("llvm", "cuda"):
        raise RelayError(f"relay.build compiles graphs for targets 'llvm' (the CPU) and 'cuda'; got {str(tgt)!r}")
    if ex.name == "aot" and tgt.kind != "llvm":
        raise RelayError(f"the ahead-of-time executor compiles for CPU targets ('llvm ...'), got {str(tgt)!r}; "
                         "use the graph executor for it")
    opt_mod, _ = optimize(ir_mod, tgt, params)
    cg = GraphCodegen(tgt)
    if tgt.kind == "cuda":
        graph_json = cg.run_compiling_in_parallel(opt_mod["main"])
    else:
        graph_json = cg.run(opt_mod["main"])
    if tgt.kind == "llvm":
        lib = tir_build(IRModule(cg.funcs), target=tgt) if cg.funcs else None
    else:       # one module per group (a CUDA module holds one host function)
        lib = GroupLibrary(tgt.kind, cg.funcs)
        cg.funcs = {}
    if ex.name == "aot":
        from ..contrib.aot_executor import AOTExecutorFactoryModule, plan_aot
        from ..runtime import llvm_jit
        plan = plan_aot(graph_json, cg.params, lib, mod_name, ex.options.get("workspace-byte-alignment", 64),
                        openmp=llvm_jit.has_openmp())
        factory = AOTExecutorFactoryModule(plan, lib, cg.params, graph_json=graph_json)
    else:
        factory = GraphExecutorFactoryModule(graph_json, lib, cg.params, mod_name=mod_name)
    factory.ir_mod = opt_mod
    factory.lowered = IRModule(dict(cg.funcs))
    factory.memory_plan = cg.plan_stats
    return factory


class GraphExecutor:
    """What ``relay.create_executor("graph", mod, dev, target)`` returns: ``evaluate()`` gives a function that
    builds ``mod`` once and runs it on positional (or named) inputs (``kind="aot"``: with the AOT executor)."""

    def __init__(self, mod, device, target, params=None, kind="graph"):
        self.mod, self.device, self.target, self.params, self.kind = mod, device, target, params, kind

    def evaluate(self, expr=None, binds=None):
        from ..contrib.graph_executor import GraphModule
        from ..runtime import ndarray as nd
        from ..runtime.executor import AotModule
        mod = self.mod if expr is None else IRModule.from_expr(expr)
        if mod is None:
            raise RelayError("create_executor(...).evaluate() needs a module or an expression")
        aot = self.kind == "aot"
        lib = build(mod, self.target, params=self.params, executor="aot" if aot else None)
        m = (AotModule if aot else GraphModule)(lib["default"](self.device))
        names = [p.name_hint for p in _main(mod).params if not self.params or p.name_hint not in self.params]

        def run(*args, **kwargs):
            if len(args) > len(names):
                raise RelayError(f"the function takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
            for name, value in zip(names, args):
                m.set_input(name, value.numpy() if isinstance(value, nd.NDArray) else value)
            for name, value in kwargs.items():
                m.set_input(name, value.numpy() if isinstance(value, nd.NDArray) else value)
            m.run()
            outs = [m.get_output(i) for i in range(m.get_num_outputs())]
            return outs[0] if len(outs) == 1 else outs
        return run


def create_executor(kind="graph", mod=None, device=None, target="llvm", params=None):
    """``relay.create_executor("graph", mod, tvm.cpu(0), "llvm").evaluate()(x, y)`` -> the output(s).
    "aot" runs the ahead-of-time executor; "debug" and "vm" use the graph executor too (the answers are the
    same; there is no VM)."""
    from ..runtime import cpu
    if kind not in ("graph", "debug", "vm", "aot"):
        raise RelayError(f"create_executor: kind must be 'graph', 'aot', 'debug' or 'vm', got {kind!r}")
    return GraphExecutor(mod, device if device is not None else cpu(0), target, params, kind)
