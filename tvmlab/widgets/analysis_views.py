"""Pictures of the analyses (``tvmlab.analysis``): thread maps, write order, caches, the roofline.

Each function returns PNG bytes (matplotlib, Agg) or an HTML string, so the
explorer, ``tvmlab.compare`` and the standalone HTML export can all use
them, with or without ipywidgets.  Colours per loop kind come from
``colors.KIND_COLORS`` so a thread map reads like the graphs.
"""
from __future__ import annotations

import base64
import html
import textwrap

import numpy as np

from .bench import figure, figure_png, plotting
from .colors import KIND_COLORS, TABLE

WHO_TITLES = {"parallel": "parallel task", "blockIdx": "CUDA block", "threadIdx": "CUDA thread",
              "vthread": "virtual thread", "vectorized": "vector lane", "unrolled": "unrolled copy"}
_WHO_KIND_COLOR = {"parallel": "parallel", "blockIdx": "thread_binding",
                   "threadIdx": "thread_binding", "vthread": "thread_binding",
                   "vectorized": "vectorized", "unrolled": "unrolled"}


def png_img(data, alt=""):
    """An <img> with the PNG inlined (works in a standalone page)."""
    return (f'<img alt="{html.escape(alt)}" src="data:image/png;base64,'
            f'{base64.b64encode(data).decode()}">')


def _as_2d_slices(arr):
    """1-D -> one row; 2-D as is; 3-D -> a list of 2-D slices along the first axis."""
    if arr.ndim == 1:
        return [arr[None, :]], ["i"]
    if arr.ndim == 2:
        return [arr], [""]
    if arr.ndim == 3:
        return [arr[k] for k in range(arr.shape[0])], [f"[{k}, :, :]" for k in range(arr.shape[0])]
    flat = arr.reshape(-1, arr.shape[-1])
    return [flat], ["(leading axes flattened)"]


@plotting
def map_png(arr, title, numbers=True, cmap="tab20", max_slices=6):
    """A colour map over a 1-D to 3-D int array; each cell numbered when the grid is small."""
    slices, names = _as_2d_slices(np.asarray(arr))
    slices, names = slices[:max_slices], names[:max_slices]
    w = min(11.0, 1.2 + 3.2 * len(slices))
    h = 0.9 + min(3.4, 0.25 * max(s.shape[0] for s in slices) + 0.6)
    fig = figure(w, h)
    axes = fig.subplots(1, len(slices), squeeze=False)[0]
    vmax = max(1, int(np.max(arr))) if np.size(arr) else 1
    for ax, s, nm in zip(axes, slices, names):
        data = np.ma.masked_less(s, 0)
        ax.imshow(data, cmap=cmap, vmin=0, vmax=vmax, interpolation="nearest", aspect="auto")
        if numbers and s.size <= 400:
            for (r, c), v in np.ndenumerate(s):
                ax.text(c, r, "·" if v < 0 else str(int(v)), ha="center", va="center", fontsize=7)
        ax.set_title(nm, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=9)
    return figure_png(fig)


def owner_png(trace, kind, buffer=None):
    """Which task/block/thread/lane/copy (``kind``) wrote each element of the output."""
    arr = trace.owner_map(kind, buffer)
    name = buffer or trace.outputs[-1]
    return map_png(arr, f"{name}: which {WHO_TITLES.get(kind, kind)} writes each element "
                        f"(sizes {_sizes(trace)})")


def order_png(trace, buffer=None):
    """The rank of each element's first write: a numbered heat map."""
    arr = trace.order_map(buffer)
    name = buffer or trace.outputs[-1]
    return map_png(arr, f"{name}: order of first writes (0 = first)", cmap="viridis")


def _sizes(trace):
    return ", ".join(f"{k}={v}" for k, v in trace.sizes.items()) or "fixed"


def cache_html(report):
    """A table: per buffer, lines per iteration of the chosen loop, reuse, predicted misses."""
    rows = []
    for name, r in report["buffers"].items():
        hist = " ".join(f"{lo}-{hi}:{c}" for lo, hi, c in r["reuse_histogram"] if c)
        med = "" if r["median_reuse"] is None else f"{r['median_reuse']:.0f}"
        rows.append(f"<tr><td><b>{html.escape(name)}</b></td><td>{r['accesses']}</td>"
                    f"<td>{r['distinct_lines']}</td><td>{r['lines_per_iteration']:.1f}</td>"
                    f"<td>{med}</td><td>{r['l1_misses']} ({r['l1_misses'] / r['accesses']:.0%})</td>"
                    f"<td>{r['l2_misses']} ({r['l2_misses'] / r['accesses']:.0%})</td>"
                    f"<td style='font-size:10px;color:#868e96'>{html.escape(hist)}</td></tr>")
    return (f'<div class="tvmlab-cache" style="font-size:12px"><b>Cache lines per iteration of '
            f'loop {html.escape(str(report["loop"]))}</b> ({report["line_bytes"]}-byte lines; '
            f'predicted misses of fully associative LRU caches of {report["l1_lines"]} (L1) and '
            f'{report["l2_lines"]} (L2) lines)'
            + TABLE + '<tr><th>buffer</th><th>accesses</th><th>lines</th>'
            '<th>lines / iteration</th><th>median reuse distance</th><th>L1 misses</th>'
            '<th>L2 misses</th><th>reuse distance histogram (lines: count)</th></tr>'
            + "".join(rows) + "</table></div>")


@plotting
def roofline_png(points, peak_gflops=None, bandwidth_gbs=None, title="roofline", width=6.5,
                 height=3.6, note=None):
    """Log-log: GFLOP/s against flops/byte; each point a step (or a schedule), roofs as lines.

    ``points``: RooflinePoint-like objects (label, intensity, gflops) or dicts with those keys;
    ``note``: when and how the roofs were found, written under the plot.
    """
    fig = figure(width, height + (0.35 if note else 0))
    ax = fig.subplots()
    pts = []
    for p in points:
        get = p.get if isinstance(p, dict) else (lambda k, p=p: getattr(p, k))
        if get("gflops") and get("intensity") and np.isfinite(get("intensity")):
            pts.append((get("label"), float(get("intensity")), float(get("gflops")),
                        get("series") if isinstance(p, dict) else None))
    xs = [p[1] for p in pts] or [1.0]
    lo, hi = min(xs + [0.05]) / 3, max(xs + [50.0]) * 3
    grid = np.logspace(np.log10(lo), np.log10(hi), 200)
    if peak_gflops and bandwidth_gbs:
        ax.plot(grid, np.minimum(peak_gflops, bandwidth_gbs * grid), color="#c92a2a", lw=2,
                label=f"roof: {bandwidth_gbs:.0f} GB/s, {peak_gflops:.0f} GFLOP/s")
        ridge = peak_gflops / bandwidth_gbs
        ax.axvline(ridge, color="#c92a2a", ls=":", lw=0.8)
    elif peak_gflops:
        ax.axhline(peak_gflops, color="#c92a2a", ls=":", label="FMA peak")
    series = {}
    for label, x, y, s in pts:
        series.setdefault(s, []).append((label, x, y))
    for s, ps in series.items():
        ax.plot([p[1] for p in ps], [p[2] for p in ps], "o-", ms=5, alpha=0.85,
                color=KIND_COLORS["parallel"] if s is None else None, markeredgecolor="#495057",
                label=s or "steps")
        for k, (label, x, y) in enumerate(ps):
            ax.annotate(str(label), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flops / distinct byte)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(alpha=0.3, which="both")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title, fontsize=9)
    if note:          # under the axis label, inside the layout
        ax.annotate(textwrap.fill(note, 110), xy=(0, 0), xycoords="axes fraction", xytext=(-30, -38),
                    textcoords="offset points", va="top", ha="left", fontsize=6.5, color="#495057",
                    annotation_clip=False)
    return figure_png(fig)


def who_legend_html(kinds):
    chips = "".join(
        f'<span style="background:{KIND_COLORS[_WHO_KIND_COLOR[k]]};padding:1px 6px;'
        f'margin-right:4px;border-radius:3px;font-size:11px">{html.escape(WHO_TITLES[k])}</span>'
        for k in kinds)
    return f'<div>writers in this loop nest: {chips or "<i>one serial thread</i>"}</div>'


def plot_note(err):
    """A short grey note saying why a view could not be drawn."""
    return f'<div style="color:#868e96;font-size:12px">not drawn: {html.escape(str(err))}</div>'
