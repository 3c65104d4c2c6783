"""Extern stages and scans against their numpy references, side by side in one process.

    python -m tvmlab.bench.extern

- ``cblas.matmul`` (an extern stage calling numpy's BLAS through call_packed)
  with a bias add scheduled by tvmlab, against ``a @ b + bias``: the price of
  the packed call and the NDArray views.
- one ``call_packed`` of a function that does nothing, against the same
  function without the call (the difference is the packed call's cost).
- ``te.scan`` cumulative sum over rows (update split and vectorised) against
  ``numpy.cumsum``.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..contrib import cblas
from ..driver import build
from ..ir.extern import call_packed
from ..runtime import ndarray as nd
from ..runtime.registry import register_func
from .timing import side_by_side


def _arr(x):
    return nd.array(x)


def matmul_bias(n=1024):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = cblas.matmul(A, B)
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    io, ii = s[D].split(D.op.axis[1], factor=16)
    s[D].vectorize(ii)
    # no parallel loop: right after the BLAS call OpenBLAS's workers still spin, and OpenMP's threads
    # would fight them for the cores (the bias add then takes twice the whole product)
    f = build(s, [A, B, D])
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    ta, tb, td = _arr(a), _arr(b), _arr(np.zeros((n, n), np.float32))
    f(ta, tb, td)
    np.testing.assert_allclose(td.numpy(), a @ b + 1, rtol=1e-4)
    ours, ref = side_by_side(f.get_function(f.entry_name).prepare(ta, tb, td), lambda: a @ b + 1.0)
    return f"cblas.matmul + bias {n}x{n}", ours, ref


def packed_call_overhead():
    """One call of a built function whose extern stage calls an empty Python function, against the same
    function with the copy written by ir_builder (no Python): the difference is the packed call."""
    from ..tir import ir_builder
    register_func("tvmlab.bench.nothing", lambda *args: None, override=True)
    A = te.placeholder((16,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: call_packed("tvmlab.bench.nothing", ins[0], outs[0]), name="B")

    def copy(ins, outs):
        ib = ir_builder.create()
        a, b = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, 16, name="i") as i:
            b[i] = a[i]
        return ib.get()
    C = te.extern(A.shape, [A], copy, name="C")
    f, g = build(te.create_schedule(B.op), [A, B]), build(te.create_schedule(C.op), [A, C])
    ta, tb = _arr(np.ones(16, np.float32)), _arr(np.zeros(16, np.float32))
    ours, ref = side_by_side(f.get_function(f.entry_name).prepare(ta, tb),
                             g.get_function(g.entry_name).prepare(ta, tb), rounds=3, min_ms=20.0, settle=0.05)
    return "call_packed (empty fn) vs no call", ours, ref


def cumsum(m=256, n=4096):
    M, N = te.var("m"), te.var("n")
    X = te.placeholder((M, N), name="X")
    state = te.placeholder((M, N), name="state")
    init = te.compute((1, N), lambda _, i: X[0, i], name="init")
    upd = te.compute((M, N), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    scan = te.scan(init, upd, state, name="scan")
    s = te.create_schedule(scan.op)
    io, ii = s[upd].split(upd.op.axis[1], factor=16)
    s[upd].vectorize(ii)
    f = build(s, [X, scan])
    x = np.random.default_rng(1).random((m, n), dtype=np.float32)
    tx, ty = _arr(x), _arr(np.zeros((m, n), np.float32))
    f(tx, ty)
    np.testing.assert_allclose(ty.numpy(), np.cumsum(x, axis=0), rtol=1e-4)
    ours, ref = side_by_side(f.get_function(f.entry_name).prepare(tx, ty), lambda: np.cumsum(x, axis=0))
    return f"te.scan cumsum {m}x{n}", ours, ref


def main():
    print(f"{'case':40s} {'tvmlab':>12s} {'reference':>12s} {'ratio':>8s}")
    for case in (matmul_bias, packed_call_overhead, cumsum):
        name, ours, ref = case()
        ratio = ref / ours if ours > 0 else float("inf")
        print(f"{name:40s} {ours * 1e6:10.1f}us {ref * 1e6:10.1f}us {ratio:7.2f}x")
    print("ratio = reference time / tvmlab time (above 1: tvmlab is faster); the call_packed line's reference is "
          "the same function without the call")


if __name__ == "__main__":
    main()
