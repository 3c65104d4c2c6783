"""The GPU check in the explorer's Iteration space view: the schedule lowered for CUDA and run on the
thread-level simulator (``tvmlab.analysis.gpusim.check_schedule``), its findings drawn: which threads
race on which element, which threads of a block reach a barrier and which do not."""
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
                f'out-of-bounds access, no read of unwritten shared or local memory</div></div>')
    counts = ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in rep.counts.items())
    shapes = {name: arr.shape for name, arr in check.arrays.items()}
    body = []
    for kind in dict.fromkeys(f.kind for f in rep.findings):
        body += [_finding_html(f, shapes) for f in rep.of_kind(kind)[:limit]]
    stopped = f'<div style="font-size:11px">stopped: {html.escape(rep.stopped)}</div>' if rep.stopped else ""
    return head + f'<div style="color:{_BAD}">{html.escape(counts)}</div>{stopped}' + "".join(body) + "</div>"
