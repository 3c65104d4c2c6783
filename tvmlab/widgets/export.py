"""The explorer as one standalone HTML page: opens in any browser, no kernel, nothing fetched.

Everything is inlined: graphs as SVG, plots as base64 PNG, code with its
highlighting, the trace as Python, and the explanation of each stage.  Tabs are
plain ``<details>`` sections, so the page needs no JavaScript.
"""
from __future__ import annotations

import html
import time

from ..errors import TVMLabError
from .code import pane_html
from .colors import legend_html
from .diff import diff_html
from .graph import to_svg
from .session import LEVELS, target_kind

_STYLE = ("body{font-family:Helvetica,Arial,sans-serif;margin:16px;max-width:1400px}"
          "details{margin:6px 0;border:1px solid #dee2e6;border-radius:4px;padding:4px 8px}"
          "summary{font-weight:bold;cursor:pointer}"
          ".row{display:flex;gap:8px}.row>div{flex:1;min-width:0}"
          "pre{white-space:pre-wrap}")


def _section(title, body, open_=False):
    return (f'<details{" open" if open_ else ""} class="tvmlab-section" data-title="'
            f'{html.escape(title)}"><summary>{html.escape(title)}</summary>{body}</details>')


def explorer_html(ex):
    """The page for explorer ``ex`` at its current step."""
    from .analysis_views import png_img, plot_note
    s = ex.session
    st, prev = s.current, s.previous
    names = ", ".join(a.name for a in s.args)
    parts = [f"<h2>tvmlab explorer — {html.escape(names)} on {html.escape(', '.join(ex.targets))}"
             f"</h2><div style='color:#868e96;font-size:12px'>exported "
             f"{time.strftime('%Y-%m-%d %H:%M:%S')} · step {len(s.steps)}</div>{legend_html()}"]
    parts.append(_section("Trace (Python that rebuilds the schedule)",
                          f"<pre>{html.escape(ex.as_python())}</pre>", True))
    parts.append(_section("Stages", ex.stages_view.value, True))
    for lv in LEVELS:
        svg, why = to_svg(s.graph(lv))
        graph = svg if svg is not None else f"<i>graph not drawn: {html.escape(why)}</i>"
        old = prev.text(lv) if prev is not None else None
        parts.append(_section(lv, f'<div class="row"><div style="overflow:auto">{graph}</div>'
                                  f"<div>{diff_html(old, st.text(lv), lv + ' text')}</div></div>",
                              lv == "AST3"))
    panes = []
    for t in ex.targets:
        fmt = "ll" if target_kind(t) == "llvm" else None
        try:
            panes.append(f"<div>{pane_html(f'code ({t})', st.source(t, fmt), 'llvm' if fmt else 'c')}"
                         "</div>")
        except TVMLabError as e:
            panes.append(f"<div>{pane_html(f'code ({t})', None, note=f'no code: {e}')}</div>")
    parts.append(_section("Code", f'<div class="row">{"".join(panes)}</div>'))
    bench = ""
    ex.bench_panel.refresh(plot=True)
    if ex.bench_plot.value:
        bench += png_img(ex.bench_plot.value, "benchmark")
    bench += ex.bench_table.value or "<i>no benchmark</i>"
    parts.append(_section("Benchmark", bench, True))
    try:
        parts.append(_section("Explain", ex.explain()._repr_html_()))
    except TVMLabError as e:
        parts.append(_section("Explain", plot_note(e)))
    try:
        ex.iteration_space()
        parts.append(_section("Iteration space", ex.iter_view.value))
    except TVMLabError as e:
        parts.append(_section("Iteration space", plot_note(e)))
    try:
        ex.roofline()
        parts.append(_section("Roofline", ex.roofline_view.value))
    except TVMLabError as e:
        parts.append(_section("Roofline", plot_note(e)))
    if ex.compare_view.value and "<i>" not in ex.compare_view.value[:4]:
        parts.append(_section("A/B", ex.compare_view.value))
    parts.append(_section("Session (load with ex.load_session)",
                          f"<pre>{html.escape(ex.save_session())}</pre>"))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>tvmlab explorer — "
            f"{html.escape(names)}</title><style>{_STYLE}</style></head><body>"
            + "".join(parts) + "</body></html>")
