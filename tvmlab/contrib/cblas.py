"""``tvm.contrib.cblas``: matrix products as extern stages calling the BLAS numpy links.

``cblas.matmul(A, B)`` is a ``te.extern`` stage whose body is
``call_packed("tvm.contrib.cblas.matmul", A, B, C, transa, transb)``; the
packed function (registered when tvmlab is imported, as TVM's is built in)
runs ``numpy.matmul`` on views of the buffers and writes into C's memory.
Consumers of C are scheduled as usual.
"""
from __future__ import annotations

import numpy as np

from ..errors import DSLError
from ..ir.extern import call_packed, extern
from ..ir.tensor import Tensor
from ..runtime.registry import get_global_func, register_func


def _check(what, *tensors):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise DSLError(f"cblas.{what}: expected tensors, got {type(t).__name__}: {t!r}")
    if len({t.dtype for t in tensors}) != 1 or tensors[0].dtype not in ("float32", "float64"):
        raise DSLError(f"cblas.{what}: BLAS multiplies float32 or float64 matrices of one dtype, got "
                       f"{[t.dtype for t in tensors]}")


def matmul(lhs, rhs, transa=False, transb=False, **kwargs):
    """``C = op(A) @ op(B)`` with ``op`` transposing when ``transa`` / ``transb``; C is (n, m)."""
    _check("matmul", lhs, rhs)
    if lhs.ndim != 2 or rhs.ndim != 2:
        raise DSLError(f"cblas.matmul: expected 2-d tensors, got shapes {list(lhs.shape)} and {list(rhs.shape)}")
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern((n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0],
                                                bool(transa), bool(transb)),
                  name=kwargs.get("name", "C"), tag=kwargs.get("tag", ""))


def batch_matmul(lhs, rhs, transa=False, transb=False, iterative=False, **kwargs):
    """``C[b] = op(A[b]) @ op(B[b])`` over a leading batch dimension."""
    _check("batch_matmul", lhs, rhs)
    if lhs.ndim != 3 or rhs.ndim != 3:
        raise DSLError(f"cblas.batch_matmul: expected 3-d tensors, got shapes {list(lhs.shape)} and "
                       f"{list(rhs.shape)}")
    b = lhs.shape[0]
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    return extern((b, n, m), [lhs, rhs],
                  lambda ins, outs: call_packed("tvm.contrib.cblas.batch_matmul", ins[0], ins[1], outs[0],
                                                bool(transa), bool(transb)),
                  name=kwargs.get("name", "C"), tag=kwargs.get("tag", ""))


def _product(a, b, c, transa, transb, batched):
    x, y = a._arr, b._arr                        # views of the buffers: no copy
    if transa:
        x = np.swapaxes(x, -1, -2)
    if transb:
        y = np.swapaxes(y, -1, -2)
    if x.shape[-1] != y.shape[-2] or (batched and x.shape[0] != y.shape[0]):
        raise ValueError(f"cblas: inner dimensions differ: {x.shape} @ {y.shape}")
    out = c._arr
    if out.shape != x.shape[:-1] + y.shape[-1:]:
        raise ValueError(f"cblas: output of shape {out.shape}, the product is {x.shape[:-1] + y.shape[-1:]}")
    np.matmul(x, y, out=out)


def _register():
    if get_global_func("tvm.contrib.cblas.matmul", allow_missing=True) is None:
        register_func("tvm.contrib.cblas.matmul",
                      lambda a, b, c, ta=False, tb=False: _product(a, b, c, ta, tb, False))
    if get_global_func("tvm.contrib.cblas.batch_matmul", allow_missing=True) is None:
        register_func("tvm.contrib.cblas.batch_matmul",
                      lambda a, b, c, ta=False, tb=False: _product(a, b, c, ta, tb, True))


_register()

__all__ = ["matmul", "batch_matmul"]
