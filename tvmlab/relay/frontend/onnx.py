"""ONNX importer: ``relay.frontend.from_onnx(model, shape=, dtype=)`` -> (IRModule, params).

The graph is read node by node in its (topological) order; each node's
converter (``onnx_ops``) emits Relay calls spelled as TVM spells them.
Initializers become parameters (``relay.var`` plus an entry of ``params``) or,
with ``freeze_params=True``, constants. Values known while importing (Constant
nodes, ``Shape`` of a static tensor, integer initializers, and small integer
arithmetic on them, as models exported from PyTorch compute reshape targets)
are folded in numpy, so shape inputs stay static. Every node is checked
before any is converted: an unknown operator fails the import with its type,
node name and the supported list, and nothing half-built is returned.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from ...runtime import ndarray as nd
from .common import FrontendError, MissingInputShape, OpNotImplemented, ShapeCache, relay_module
from . import onnx_ops

MIN_OPSET = 9


def _onnx():
    try:
        import onnx
    except ImportError as e:   # pragma: no cover - onnx is in the 'graph' extra
        raise FrontendError("from_onnx needs the onnx package (pip install 'tvmlab[graph]')") from e
    return onnx


class ModelCheckWarning(UserWarning):
    """What ``onnx.checker`` found wrong with a model being imported (the import goes on, as TVM's)."""


def load_model(path):
    """The ``ModelProto`` in the file at ``path`` (external tensor data beside it is read too);
    a file that is missing or is not an ONNX model is a FrontendError naming it."""
    onnx = _onnx()
    name = os.fsdecode(path)
    if not os.path.isfile(name):
        raise FrontendError(f"no ONNX model file at {name!r}")
    try:
        model = onnx.load(name)
    except Exception as e:      # protobuf's DecodeError for bytes that are not a model, and the like
        raise FrontendError(f"{name!r} is not an ONNX model: {type(e).__name__}: {e}") from None
    if not model.HasField("graph") and not model.ir_version:
        raise FrontendError(f"{name!r} is not an ONNX model: it holds no graph and no IR version"
                            + (" (the file is empty)" if os.path.getsize(name) == 0 else ""))
    return model


def check_model(model):
    """Run ``onnx.checker`` on ``model`` and turn what it finds into a ModelCheckWarning, as TVM's
    importer does: many exported models break a rule the importer does not need."""
    onnx = _onnx()
    try:
        onnx.checker.check_model(model)
    except Exception as e:      # onnx.checker.ValidationError, or a checker that cannot run
        warnings.warn(f"onnx.checker: {str(e).strip()}", ModelCheckWarning, stacklevel=3)


def np_dtype(elem_type):
    """The numpy dtype of an ONNX TensorProto element type."""
    onnx = _onnx()
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(elem_type)))
    except (KeyError, TypeError, ValueError) as e:
        raise FrontendError(f"unsupported ONNX element type {elem_type}") from e


def _attr_value(attr):
    onnx = _onnx()
    if attr.type == onnx.AttributeProto.GRAPH or attr.type == onnx.AttributeProto.GRAPHS:
        return "<subgraph>"       # control flow (If, Loop, Scan): no converter takes it
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode("utf-8") if isinstance(v, bytes) else v for v in value]
    return value


class Node:
    """One ONNX node with its attributes decoded to Python values."""

    def __init__(self, proto, index):
        self.op_type = proto.op_type
        self.domain = proto.domain or ""
        self.name = proto.name or f"{proto.op_type}_{index}"
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attrs = {a.name: _attr_value(a) for a in proto.attribute}

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def __repr__(self):
        return f"{self.op_type} node {self.name!r}"


class Importer:
    """The state of one import: expressions and known values by ONNX name, params, opset."""

    def __init__(self, graph, opset, freeze_params):
        self.graph = graph
        self.opset = opset
        self.freeze_params = freeze_params
        self.relay = relay_module()
        self.exprs = {}          # ONNX value name -> relay expression
        self.known = {}          # ONNX value name -> numpy value known at import time
        self.static = set()      # names whose known value may be folded (not a float weight)
        self.param_vars = {}     # initializer name -> relay.var
        self.params = {}         # initializer name -> NDArray
        self.used_params = []
        self.shapes = ShapeCache()
        self._consts = {}

    # -- reading values -------------------------------------------------
    def expr_of(self, name):
        if name in self.param_vars:
            if name not in self.used_params:
                self.used_params.append(name)
            return self.param_vars[name]
        if name in self.exprs:
            return self.exprs[name]
        if name in self.known:
            if name not in self._consts:
                self._consts[name] = self.relay.const(self.known[name])
            return self._consts[name]
        raise FrontendError(f"value {name!r} is used before it is produced (is the graph sorted?)")

    def shape_of(self, expr):
        return self.shapes.shape(expr)

    def dtype_of(self, expr):
        return self.shapes.dtype(expr)

    # -- conversion -------------------------------------------------------
    def add_initializers(self):
        onnx = _onnx()
        for init in self.graph.initializer:
            arr = onnx.numpy_helper.to_array(init)
            self.known[init.name] = arr
            if arr.dtype.kind in "iub":
                self.static.add(init.name)
            if not self.freeze_params:
                self.param_vars[init.name] = self.relay.var(
                    init.name, shape=arr.shape, dtype=str(arr.dtype))
                self.params[init.name] = arr

    def add_inputs(self, shape, dtype):
        initializers = {i.name for i in self.graph.initializer}
        inputs = [i for i in self.graph.input if i.name not in initializers]
        names = [i.name for i in inputs]
        for given in shape:
            if given not in names:
                raise FrontendError(f"shape= names {given!r}, which is not a graph input "
                                    f"(the inputs are {names})")
        if isinstance(dtype, dict):
            for given in dtype:
                if given not in names:
                    raise FrontendError(f"dtype= names {given!r}, which is not a graph input "
                                        f"(the inputs are {names})")
        input_vars = []
        for info in inputs:
            ttype = info.type.tensor_type
            declared_dtype = np_dtype(ttype.elem_type) if ttype.elem_type else None
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                    for d in ttype.shape.dim] if ttype.HasField("shape") else None
            if info.name in shape:
                s = tuple(shape[info.name])
                if not all(isinstance(v, (int, np.integer)) and v > 0 for v in s):
                    raise FrontendError(f"shape of input {info.name!r} must be positive ints, got {s}")
                if dims is not None and len(dims) != len(s):
                    raise FrontendError(f"input {info.name!r} has rank {len(dims)} in the model, "
                                        f"but shape= gives {s} (rank {len(s)})")
                if dims is not None:
                    for k, (d, g) in enumerate(zip(dims, s)):
                        if d is not None and d != g:
                            raise FrontendError(f"input {info.name!r} dimension {k} is {d} in the "
                                                f"model, but shape= gives {g}")
            elif dims is None or any(d is None for d in dims):
                shown = "unknown rank" if dims is None else \
                    "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"
                raise MissingInputShape(
                    f"input {info.name!r} has no static shape in the model ({shown}); give it, "
                    f"e.g. from_onnx(model, shape={{{info.name!r}: (...)}})")
            else:
                s = tuple(dims)
            if isinstance(dtype, dict) and info.name in dtype:
                d = _dtype_name(dtype[info.name], f"dtype of input {info.name!r}")
            elif isinstance(dtype, str) and (declared_dtype is None or declared_dtype.kind == "f"):
                d = _dtype_name(dtype, "dtype")
            else:
                d = str(declared_dtype if declared_dtype is not None else np.dtype("float32"))
            var = self.relay.var(info.name, shape=s, dtype=d)
            self.exprs[info.name] = var
            input_vars.append(var)
        return input_vars

    def check_supported(self, nodes):
        missing = [n for n in nodes
                   if n.domain not in ("", "ai.onnx") or n.op_type not in onnx_ops.CONVERTERS]
        if missing:
            shown = ", ".join(f"{n.op_type}" + (f" (domain {n.domain})" if n.domain not in ("", "ai.onnx") else "")
                              + f" in node {n.name!r}" for n in missing)
            raise OpNotImplemented(
                f"the ONNX frontend does not support: {shown}. "
                f"Supported operators: {', '.join(sorted(onnx_ops.CONVERTERS))}")

    def convert_node(self, node):
        if self._fold(node):
            return
        try:
            result = onnx_ops.CONVERTERS[node.op_type](self, node)
        except FrontendError as e:
            raise type(e)(f"{node}: {e}") from e
        except Exception as e:   # a relay type error, or a converter's own bug
            raise FrontendError(f"{node}: {type(e).__name__}: {e}") from e
        outs = list(result) if isinstance(result, (list, tuple)) else [result]
        for k, name in enumerate(node.outputs):
            if not name:
                continue
            if k >= len(outs) or outs[k] is None:
                if self._is_consumed(name):
                    raise FrontendError(f"{node}: output {k} ({name!r}) is not supported")
                continue
            value = outs[k]
            if isinstance(value, np.ndarray):
                self.known[name] = value
                self.static.add(name)
            else:
                self.exprs[name] = value

    def _fold(self, node):
        """Compute ``node`` in numpy when its inputs are all static known values."""
        fold = onnx_ops.FOLDERS.get(node.op_type)
        present = [i for i in node.inputs if i]
        if fold is None or not present or not all(i in self.static and i in self.known for i in present):
            return False
        try:
            values = fold(node, [self.known[i] if i else None for i in node.inputs], self.opset)
        except FrontendError as e:
            raise type(e)(f"{node}: {e}") from e
        except Exception as e:        # numpy refusing the values (bad shapes, axes)
            raise FrontendError(f"{node}: {type(e).__name__}: {e}") from e
        if values is None:
            return False
        for name, v in zip(node.outputs, values if isinstance(values, list) else [values]):
            self.known[name] = np.asarray(v)
            self.static.add(name)
        return True

    def _is_consumed(self, name):
        return any(name in n.input for n in self.graph.node) or any(o.name == name for o in self.graph.output)


def _dtype_name(value, what):
    try:
        return str(np.dtype(value))
    except TypeError:
        raise FrontendError(f"{what} must be a dtype such as 'float32', got {value!r}") from None


class OpsetConversionWarning(UserWarning):
    """An ONNX model older than the importer reads was upgraded with ``onnx.version_converter``."""


def upgrade(model, opset):
    """``model`` (default-domain opset ``opset`` < MIN_OPSET) converted to MIN_OPSET by
    ``onnx.version_converter``, with an OpsetConversionWarning saying so; (model, MIN_OPSET)."""
    from onnx import version_converter
    if not any(imp.domain in ("", "ai.onnx") for imp in model.opset_import):
        model = _copy_with_opset(model, opset)      # opset= given for a model that imports none
    try:
        new = version_converter.convert_version(model, MIN_OPSET)
    except Exception as e:          # the converter's own errors: an operator it has no adapter for
        raise FrontendError(f"ONNX opset {opset} is not supported (expected {MIN_OPSET} or later), and "
                            f"onnx.version_converter could not upgrade the model: "
                            f"{str(e).strip().splitlines()[0]}") from None
    import warnings
    warnings.warn(f"the model's ONNX opset {opset} was converted to opset {MIN_OPSET} with "
                  f"onnx.version_converter before importing", OpsetConversionWarning, stacklevel=3)
    return new, MIN_OPSET


def _copy_with_opset(model, opset):
    onnx = _onnx()
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out.opset_import.append(onnx.helper.make_opsetid("", opset))
    return out


def _default_opset(model):
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return None


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=False):
    """Import an ONNX ``ModelProto`` (or a path to one) as a Relay module and its params.

    ``shape`` maps input names to static shapes (needed where the model has
    none); ``dtype`` is a dtype for the floating inputs or a dict by input
    name; ``opset`` overrides the model's default-domain opset;
    ``freeze_params`` turns initializers into constants (``params`` is then
    empty). Returns ``(mod, params)`` with ``params`` mapping initializer
    names to NDArrays, ready for ``relay.build(mod, target, params=params)``.
    """
    onnx = _onnx()
    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        model = load_model(model)
    if not isinstance(model, onnx.ModelProto):
        raise FrontendError(f"from_onnx expects an onnx.ModelProto or a path, got {type(model).__name__}")
    check_model(model)
    if not isinstance(shape or {}, dict):
        raise FrontendError(f"shape= must map input names to shapes, got {type(shape).__name__}")
    if not isinstance(dtype, (str, dict)):
        raise FrontendError(f"dtype= must be a dtype name or a dict by input name, got {dtype!r}")
    shape = dict(shape or {})
    if opset is None:
        opset = _default_opset(model)
        if opset is None:
            raise FrontendError("the model imports no default-domain opset; pass opset=")
    opset = int(opset)
    if opset < MIN_OPSET:
        model, opset = upgrade(model, opset)
    graph = model.graph
    nodes = [Node(p, k) for k, p in enumerate(graph.node)]
    imp = Importer(graph, opset, freeze_params)
    imp.check_supported(nodes)
    imp.add_initializers()
    input_vars = imp.add_inputs(shape, dtype)
    for node in nodes:
        imp.convert_node(node)
    relay = imp.relay
    outputs = []
    for out in graph.output:
        if out.name not in imp.exprs and out.name not in imp.known and out.name not in imp.param_vars:
            raise FrontendError(f"graph output {out.name!r} is produced by no node")
        outputs.append(imp.expr_of(out.name))
    if not outputs:
        raise FrontendError("the graph has no outputs")
    body = outputs[0] if len(outputs) == 1 else relay.Tuple(outputs)
    func_params = input_vars + [imp.param_vars[n] for n in imp.used_params]
    func = relay.Function(func_params, body)
    from ...ir.function import IRModule
    mod = IRModule.from_expr(func)
    mod = relay.transform.InferType()(mod)
    params = {n: nd.array(imp.params[n]) for n in imp.used_params}
    return mod, params
