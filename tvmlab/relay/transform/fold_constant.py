"""FoldConstant: every call whose operands are all constants is computed at compile time.

The constant sub-graphs are collected, compiled together once (as a small
graph, through the same build as any model) and run; each is replaced by a
Constant.  Shape-only operators on one constant (reshape, expand_dims,
squeeze, transpose) are folded with numpy directly.
"""
from __future__ import annotations

import numpy as np

from ..expr import Call, Constant, Function, Tuple, TupleGetItem, post_order
from ..op.registry import Op
from ..visit import rewrite

_SHAPE_ONLY = {"reshape", "expand_dims", "squeeze", "nn.batch_flatten"}


def fold(func):
    """``func`` with its constant sub-expressions computed."""
    from .infer_type import infer_function
    infer_function(func)
    nodes = post_order(func.body)
    const_nodes = set()
    for n in nodes:
        if isinstance(n, Constant):
            const_nodes.add(n)
        elif isinstance(n, Call) and isinstance(n.op, Op) and n.args and all(a in const_nodes for a in n.args) \
                and n.op.name not in ("nn.dropout",):
            const_nodes.add(n)
        elif isinstance(n, Tuple) and n.fields and all(f in const_nodes for f in n.fields):
            const_nodes.add(n)
        elif isinstance(n, TupleGetItem) and n.tuple_value in const_nodes:
            const_nodes.add(n)
    users = {}
    for n in nodes:
        for c in n.children():
            users.setdefault(c, []).append(n)
    # roots: constant calls read by a non-constant node (or the function's result)
    roots = [n for n in nodes if n in const_nodes and not isinstance(n, Constant)
             and (n is func.body or any(u not in const_nodes for u in users.get(n, [])))]
    values = {}
    rest = []
    for r in roots:
        v = _numpy_fold(r)
        if v is not None:
            values[r] = v
        else:
            rest.append(r)
    tensor_roots = [r for r in rest if not isinstance(r, Tuple) and hasattr(r._checked_type, "shape")]
    if tensor_roots:
        for r, v in zip(tensor_roots, _evaluate(tensor_roots)):
            values[r] = v
    if not values:
        return func

    memo = {old: Constant(v) for old, v in values.items()}
    body, _ = rewrite(func.body, None, memo)
    return Function(func.params, body, None, func.type_params, func.attrs)


_NUMPY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "negative": np.negative, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "exp": np.exp, "abs": np.abs,
    "maximum": np.maximum, "minimum": np.minimum,
}


def _numpy_fold(e, cache=None):
    """The value of constant expression ``e`` computed with numpy when every operator in it is a simple one
    (element-wise arithmetic, shape changes, transposes), else None."""
    cache = {} if cache is None else cache
    for n in post_order(e):
        if n in cache:
            continue
        if isinstance(n, Constant):
            cache[n] = n.value
            continue
        if not isinstance(n, Call) or not isinstance(n.op, Op):
            return None
        args = [cache[a] for a in n.args]
        name, t = n.op.name, n._checked_type
        if name in _NUMPY:
            v = _NUMPY[name](*args)
        elif name in _SHAPE_ONLY:
            v = args[0].reshape(t.shape)
        elif name == "transpose":
            v = np.transpose(args[0], n.attrs.axes)
        elif name == "layout_transform":
            from ..layout import transform_array
            v = transform_array(args[0], n.attrs.src_layout, n.attrs.dst_layout)
        elif name == "cast":
            v = args[0].astype(t.dtype)
        else:
            return None
        cache[n] = np.ascontiguousarray(np.asarray(v).astype(t.dtype, copy=False))
    return cache[e]


def _evaluate(roots):
    """Compile the constant sub-graphs ending at ``roots`` as one graph and run it once."""
    from ...ir.transform import PassContext
    from ...contrib.graph_executor import GraphModule
    from ...runtime import cpu
    from ..build_module import build
    body = Tuple(list(roots)) if len(roots) > 1 else roots[0]
    f = Function([], body)
    with PassContext(opt_level=0):
        lib = build(_module(f), target="llvm")
    m = GraphModule(lib["default"](cpu(0)))
    m.run()
    return [m.get_output(i).numpy() for i in range(len(roots))]


def _module(f):
    from ...ir.function import IRModule
    return IRModule({"main": f})
