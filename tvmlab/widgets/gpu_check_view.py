"""The GPU check in the explorer's Iteration space view: the schedule lowered for CUDA and run on the
thread-level simulator (``tvmlab.analysis.gpusim.check_schedule``), its findings drawn: which threads
race on which element, which threads of a block reach a barrier and which do not; and its memory
traffic: how coalesced each global access is, how many ways each shared access conflicts."""
from __future__ import annotations

import html

import numpy as np

from .analysis_views import map_png, png_img

_OK = "#2b8a3e"
_BAD = "#c92a2a"


def _coords(c):
    return f"({c[0]},{c[1]},{c[2]})"


def block_map(finding):
    """The finding's block as a grid of threads (x across, y down, z as slices): 1 took part, 2 did not."""
    bx, by, bz = finding.block
    grid = np.zeros((bz, by, bx), dtype=int)
    for code, threads in ((1, finding.arrived), (2, finding.missing)):
        for x, y, z in threads:
            grid[z, y, x] = code
    return grid[0] if bz == 1 else grid


def element_map(finding, shape):
    """The buffer's elements: 1 where the finding is, 0 elsewhere (None if it lies outside)."""
    size = int(np.prod(shape)) if shape else 1
    if finding.element is None or not 0 <= finding.element < size:
        return None
    flat = np.zeros(size, dtype=int)
    flat[finding.element] = 1
    return flat.reshape(shape)


def _finding_html(f, shapes):
    who = ", ".join(f"threadIdx={_coords(t)} blockIdx={_coords(b)}" for t, b in f.threads)
    parts = [f'<div style="margin:6px 0"><b style="color:{_BAD}">{html.escape(f.kind)}</b> in '
             f'<code>{html.escape(f.kernel)}</code>: {html.escape(f.message)}<br>'
             f'<span style="font-size:11px">at <code>{html.escape(f.stmt)}</code>'
             + (f'; threads: {html.escape(who)}' if who else "") + '</span></div>']
    if f.arrived or f.missing:
        parts.append(png_img(map_png(block_map(f), "threads of the block: 1 reach it, 2 do not"),
                             f"{f.kind}: which threads take part"))
    elif f.buffer in shapes:
        m = element_map(f, shapes[f.buffer])
        if m is not None:
            parts.append(png_img(map_png(m, f"{f.buffer}: the element ({who})", numbers=m.size <= 64),
                                 f"{f.kind} on {f.buffer}"))
    return "".join(parts)


def traffic_html(report, limit=6):
    """The memory traffic of a simulated run as a small table, the least efficient accesses first; one
    green line when every global access is coalesced and no shared access conflicts."""
    from ..analysis.gpusim.traffic import totals
    rows = report.traffic()
    if not rows:
        return ""
    eff, conflict = totals(rows)
    head = (f'<div style="margin-top:6px"><b>Memory traffic</b> <span style="font-size:11px">(per warp request: '
            f'global 32-byte sectors, shared-memory banks; {100 * eff:.0f}% of the global bytes moved are '
            f'used, shared accesses {conflict:.2f}-way)</span>')
    bad = sorted((r for r in rows if r.efficiency < 0.995), key=lambda r: (r.efficiency, -r.bytes))
    if not bad:
        return head + f'<div style="color:{_OK}">every global access coalesced, no shared-memory bank ' \
                      'conflict</div></div>'
    cells = []
    for r in bad[:limit]:
        what = (f"{100 * r.efficiency:.0f}% of each sector used" if r.scope == "global"
                else f"{r.conflict:.2f}-way bank conflict")
        cells.append(f'<tr><td>{html.escape(r.scope)} {html.escape(r.op)}</td><td><code>{html.escape(r.buffer)}'
                     f'</code></td><td style="color:{_BAD}">{what}</td><td style="font-size:11px"><code>'
                     f'{html.escape(r.stmt)}</code></td></tr>')
    more = f'<div style="font-size:11px">... {len(bad) - limit} more</div>' if len(bad) > limit else ""
    return head + '<table style="font-size:12px">' + "".join(cells) + "</table>" + more + "</div>"


def gpu_check_html(check, limit=3):
    """HTML for a ``ScheduleCheck``: a green line when the simulator found nothing, else each kind of
    finding with its first ``limit`` cases drawn."""
    rep = check.report
    sizes = ", ".join(f"{k}={v}" for k, v in check.sizes.items()) or "the tensors' own shapes"
    head = (f'<div class="tvmlab-gpu-check" style="margin-top:8px"><b>GPU check</b> '
            f'<span style="font-size:11px">(CUDA lowering on the thread-level simulator, {html.escape(sizes)}; '
            f'{len(rep.launches)} launch(es), {rep.barriers} block barrier(s))</span>')
    if rep.ok:
        return (head + f'<div style="color:{_OK}">no race, no divergent barrier or warp shuffle, no '
                f'out-of-bounds access, no read of unwritten shared or local memory</div>'
                f'{traffic_html(rep)}</div>')
    counts = ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in rep.counts.items())
    shapes = {name: arr.shape for name, arr in check.arrays.items()}
    body = []
    for kind in dict.fromkeys(f.kind for f in rep.findings):
        body += [_finding_html(f, shapes) for f in rep.of_kind(kind)[:limit]]
    stopped = f'<div style="font-size:11px">stopped: {html.escape(rep.stopped)}</div>' if rep.stopped else ""
    return head + f'<div style="color:{_BAD}">{html.escape(counts)}</div>{stopped}' + "".join(body) + \
        traffic_html(rep) + "</div>"
