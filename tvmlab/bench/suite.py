"""The benchmark rows: each builds a topi kernel, checks it against its reference, and times both.

A row is a function returning a ``Row``; ``ROWS`` lists them in table order.
Ratios are reference time / kernel time (above 1: faster than the reference).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import driver, te, topi
from ..runtime import ndarray as nd
from .timing import side_by_side


@dataclasses.dataclass
class Row:
    name: str
    reference: str
    kernel_s: float
    reference_s: float
    build_s: float
    flops: float = 0.0      # floating-point operations per call (0: not compute-bound)
    bytes: float = 0.0      # bytes moved per call (for bandwidth-bound rows)

    @property
    def ratio(self):
        return self.reference_s / self.kernel_s


def _build(s, args):
    t0 = time.perf_counter()
    f = driver.build(s, args, "llvm")
    return f, time.perf_counter() - t0


def _prepare(f, *arrays):
    return f.get_function(f.entry_name).prepare(*arrays)


def _poisoned(shape, dtype="float32"):
    return nd.array(np.full(shape, np.nan, dtype))


def matmul(n):
    def row(rng):
        A = te.placeholder((n, n), name="A")
        B = te.placeholder((n, n), name="B")
        C = topi.matmul(A, B)
        f, build_s = _build(topi.schedule_matmul(C), [A, B, C])
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        ta, tb, tc = nd.array(a), nd.array(b), _poisoned((n, n))
        out = np.empty((n, n), np.float32)
        call = _prepare(f, ta, tb, tc)
        call()
        np.testing.assert_allclose(tc.numpy(), a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(n))
        k, r = side_by_side(call, lambda: np.matmul(a, b, out=out))
        return Row(f"matmul {n}x{n}x{n}", "numpy", k, r, build_s, flops=2.0 * n ** 3)
    return row


def add(n=1 << 24):
    def row(rng):
        A = te.placeholder((n,), name="A")
        B = te.placeholder((n,), name="B")
        C = topi.add(A, B)
        f, build_s = _build(topi.schedule_elementwise(C), [A, B, C])
        a = rng.standard_normal(n, dtype=np.float32)
        b = rng.standard_normal(n, dtype=np.float32)
        ta, tb, tc = nd.array(a), nd.array(b), _poisoned((n,))
        out = np.empty(n, np.float32)
        call = _prepare(f, ta, tb, tc)
        call()
        np.testing.assert_array_equal(tc.numpy(), a + b)
        k, r = side_by_side(call, lambda: np.add(a, b, out=out))
        return Row(f"add {n // (1 << 20)}M float32", "numpy", k, r, build_s, bytes=12.0 * n)
    return row


def softmax(m=4096, n=1024):
    def row(rng):
        x = te.placeholder((m, n), name="x")
        out = topi.softmax(x)
        f, build_s = _build(topi.schedule_softmax(out), [x, out])
        a = rng.standard_normal((m, n), dtype=np.float32)
        tx, to = nd.array(a), _poisoned((m, n))

        def ref():
            e = np.exp(a - a.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        call = _prepare(f, tx, to)
        call()
        np.testing.assert_allclose(to.numpy(), ref(), rtol=1e-5, atol=1e-7)
        k, r = side_by_side(call, ref)
        return Row(f"softmax rows {m}x{n}", "numpy", k, r, build_s, bytes=8.0 * m * n)
    return row


def _conv_reference(w, c, h, o):
    """(name, callable(a) -> output) for the conv2d reference: torch on the CPU if installed, else numpy."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tw = torch.from_numpy(w)
        return "torch", lambda a: torch.nn.functional.conv2d(torch.from_numpy(a), tw, padding=1).numpy()
    from numpy.lib.stride_tricks import sliding_window_view
    w2 = w.reshape(o, c * 9)

    def im2col(a):   # numpy's fastest route: windows as columns, then one BLAS matmul
        p = np.pad(a[0], ((0, 0), (1, 1), (1, 1)))
        cols = sliding_window_view(p, (3, 3), axis=(1, 2)).transpose(0, 3, 4, 1, 2).reshape(c * 9, h * h)
        return (w2 @ cols).reshape(1, o, h, h)
    return "numpy", im2col


def conv2d(h=56, c=64, o=64):
    def row(rng):
        d = te.placeholder((1, c, h, h), name="data")
        k = te.placeholder((o, c, 3, 3), name="kernel")
        out = topi.conv2d_nchw(d, k, stride=1, padding=1)
        f, build_s = _build(topi.schedule_conv2d_nchw(out), [d, k, out])
        a = rng.standard_normal((1, c, h, h), dtype=np.float32)
        w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
        ref_name, ref = _conv_reference(w, c, h, o)
        td, tk, to = nd.array(a), nd.array(w), _poisoned((1, o, h, h))
        call = _prepare(f, td, tk, to)
        call()
        np.testing.assert_allclose(to.numpy(), ref(a), rtol=1e-3, atol=1e-3)
        kt, rt = side_by_side(call, lambda: ref(a))
        return Row(f"conv2d {h}x{h}x{c}->{o} 3x3", ref_name, kt, rt, build_s, flops=2.0 * o * c * 9 * h * h)
    return row


ROWS = [matmul(512), matmul(1024), matmul(2048), add(), softmax(), conv2d()]
