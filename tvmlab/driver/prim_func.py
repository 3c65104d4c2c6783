"""``te.create_prim_func``: a tensor-expression graph as one PrimFunc, without writing a schedule.

    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    f = te.create_prim_func([A, B])     # PrimFunc "main"(A, B), the default schedule's AST2
    m = tvm.build(f)                    # lowered like tvm.lower(create_schedule(B.op), [A, B])

The function's parameters are the given tensors in their order (plus the
shape variables they use); every other computed tensor becomes an internal
buffer.  TVM returns a TensorIR function (blocks) for its TensorIR schedule;
tvmlab has no blocks, so this is the TE function of the default schedule,
which ``tvm.lower``, ``tvm.build`` and the ``tir.transform`` passes accept.
"""
from __future__ import annotations

from ..errors import DSLError
from ..ir.extern import ExternOp
from ..ir.tensor import ComputeOp, PlaceholderOp, Tensor
from ..schedule import create_schedule
from ..schedule.steps import BINDS_ATTR

_SUPPORTED = (PlaceholderOp, ComputeOp, ExternOp)


def create_prim_func(ops):
    """A PrimFunc computing the tensors ``ops`` (a list of Tensors: inputs and outputs, in the
    order the function takes them) with the default schedule."""
    if isinstance(ops, Tensor):
        ops = [ops]
    if not isinstance(ops, (list, tuple)) or not ops:
        raise DSLError(f"create_prim_func takes a non-empty list of tensors, got {ops!r}")
    for k, t in enumerate(ops):
        if not isinstance(t, Tensor):
            raise DSLError(f"create_prim_func: argument {k} must be a tensor, got {type(t).__name__}: {t!r}")
    given = {t.op for t in ops}
    computed = [t.op for t in ops if not isinstance(t.op, PlaceholderOp)]
    if not computed:
        raise DSLError("create_prim_func: every tensor given is a placeholder; give the output tensors too")
    seen, stack = set(), list(computed)
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if not isinstance(op, _SUPPORTED):
            raise DSLError(f"create_prim_func: Unsupported Operation: {type(op).__name__}. Only "
                           f"te.placeholder, te.compute and te.extern are allowed (operation {op.name!r})")
        if isinstance(op, PlaceholderOp) and op not in given:
            raise DSLError(f"create_prim_func: placeholder {op.name!r} is read but not among the "
                           "arguments; add it to the list")
        stack.extend(t.op for t in op.input_tensors)
    from .build_module import make_function
    sch = create_schedule(list(dict.fromkeys(computed)))
    func, binds = make_function(sch, list(ops), "main")
    return func.with_body(func.body, **{BINDS_ATTR: binds, "tir.noalias": True})


__all__ = ["create_prim_func"]
