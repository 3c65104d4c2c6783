"""Running the rows and printing the table."""
from __future__ import annotations

import sys

import numpy as np

from .peak import peak_gflops, threads
from .suite import ROWS


def format_table(rows, peak, peak_note):
    head = (f"{'kernel':<26}{'vs':<7}{'ratio':>7}{'tvmlab ms':>11}{'ref ms':>9}{'GFLOP/s':>9}"
            f"{'% peak':>8}{'GB/s':>7}{'build s':>9}")
    out = [head, "-" * len(head)]
    for r in rows:
        gf = r.flops / r.kernel_s / 1e9 if r.flops else None
        gb = r.bytes / r.kernel_s / 1e9 if r.bytes else None
        out.append(f"{r.name:<26}{r.reference:<7}{r.ratio:>6.2f}x{r.kernel_s * 1e3:>11.3f}{r.reference_s * 1e3:>9.3f}"
                   + (f"{gf:>9.1f}{100 * gf / peak:>7.0f}%" if gf is not None else f"{'':>17}")
                   + (f"{gb:>7.1f}" if gb is not None else f"{'':>7}") + f"{r.build_s:>9.2f}")
    out.append(f"ratio = reference time / tvmlab time (> 1: tvmlab is faster); float32 peak "
               f"{peak:.0f} GFLOP/s ({peak_note}); {threads()} threads")
    return "\n".join(out)


def run(rows=None, out=sys.stdout, seed=0):
    """Run ``rows`` (default: all), print the table to ``out`` and return the Row results."""
    rng = np.random.default_rng(seed)
    peak, note = peak_gflops()
    results = []
    for make in rows or ROWS:
        results.append(make(rng))
        print(f"  {results[-1].name}: {results[-1].ratio:.2f}x", file=sys.stderr, flush=True)
    if note.startswith("measured"):      # measured again at the end: the best of both is the less disturbed
        peak = peak_gflops(fresh=True)[0]
    print(format_table(results, peak, note), file=out, flush=True)
    return results
