"""``python -m tvmlab.bench.tensorize``: matmul with the micro-kernel intrinsic vs the loop schedule.

Each size is built twice from the same inputs: ``schedule_matmul(C)`` (the
register tile written with schedule primitives) and ``schedule_matmul(C2,
tensorize=True)`` (each tile computed by the LLVM micro-kernel of
``topi.x86.matmul_kernel`` through ``s[CC].tensorize``).  Both are checked
against numpy, then timed side by side in this process; the ratio is the
loop schedule's time over the tensorized one's (above 1: the micro-kernel is
faster), with numpy's time for scale.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import driver, te, topi
from ..errors import ScheduleError
from ..runtime import ndarray as nd
from ..topi.x86.dense import tile_rows
from ..topi.utils import vector_block
from .timing import side_by_side

SIZES = [(256, 256, 256), (500, 300, 700), (1024, 1024, 1024), (257, 256, 256)]


def _kernel(M, K, N, tensorize):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    if tensorize:
        try:        # A read in place when a tile height divides M, else packed
            C = topi.matmul(A, B)
            s = topi.schedule_matmul(C, tensorize=True)
        except ScheduleError:
            C = topi.matmul(A, B, rows=tile_rows(vector_block("float32"), "float32"))
            s = topi.schedule_matmul(C, tensorize=True)
    else:
        C = topi.matmul(A, B)
        s = topi.schedule_matmul(C)
    f = driver.build(s, [A, B, C], "llvm")
    return f


def measure(M, K, N, rng):
    """(loop schedule s, tensorized s, numpy s) per call, after checking both results."""
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    calls = []
    for tensorize in (False, True):
        f = _kernel(M, K, N, tensorize)
        ta, tb, tc = nd.array(a), nd.array(b), nd.array(np.full((M, N), np.nan, np.float32))
        call = f.get_function(f.entry_name).prepare(ta, tb, tc)
        call()
        np.testing.assert_allclose(tc.numpy(), a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(K))
        calls.append(call)
    loops, tens = side_by_side(calls[0], calls[1])
    out = np.empty((M, N), np.float32)
    _, ref = side_by_side(calls[1], lambda: np.matmul(a, b, out=out))
    return loops, tens, ref


def run(sizes=SIZES, out=sys.stdout):
    rng = np.random.default_rng(0)
    print(f"{'matmul MxKxN':<18}{'loops ms':>10}{'tensorized ms':>15}{'numpy ms':>10}"
          f"{'loops/tensorized':>18}{'GFLOP/s (tens.)':>17}", file=out)
    rows = []
    for M, K, N in sizes:
        loops, tens, ref = measure(M, K, N, rng)
        rows.append((M, K, N, loops, tens, ref))
        print(f"{f'{M}x{K}x{N}':<18}{loops * 1e3:>10.3f}{tens * 1e3:>15.3f}{ref * 1e3:>10.3f}"
              f"{loops / tens:>18.2f}{2.0 * M * K * N / tens / 1e9:>17.1f}", file=out)
    return rows


if __name__ == "__main__":
    run()
