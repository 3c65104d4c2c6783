"""The Explorer's stage views: the AST1/AST2/AST3 graph and text tabs and the Code tab.

Kept apart from the controls because drawing is the slow part of a refresh: the text is diffed
against the previous step, graphs are laid out on background threads and code is built only
while its tab is open.  Also holds the tab layout every part of the Explorer refers to.
"""
from __future__ import annotations

import html
import threading
import time

import ipywidgets as W

from ..errors import TVMLabError
from .code import pane_html
from .diff import diff_html
from .session import LEVELS, target_kind

TAB_TITLES = LEVELS + ("Code", "Benchmark", "Explain", "Iteration space", "Roofline", "A/B", "Tune")
PANELS = ("Explain", "Iteration space", "Roofline", "A/B")
_SOURCE_TITLES = {"cuda": ("CUDA C", "cuda"), "opengl": ("GLSL", "glsl")}
_GRAPH_BOX = ("overflow:auto;max-height:520px;border:1px solid #dee2e6;background:white;"
              "padding:2px")


def flex(**kw):
    """A layout that shares a row equally with its siblings."""
    return W.Layout(flex="1 1 0", min_width="0", **kw)


class StageViews:
    """Mixin of ``Explorer``: the graph, text and code of the current state."""

    def _build_stage_pages(self):
        """One graph|text page per level, and the row of code panes."""
        self.graph_views = {lv: W.HTML(layout=flex()) for lv in LEVELS}
        self.text_views = {lv: W.HTML(layout=flex()) for lv in LEVELS}
        pages = [W.HBox([self.graph_views[lv], self.text_views[lv]]) for lv in LEVELS]
        self.code_views = W.HBox(layout=W.Layout(width="100%"))
        return pages

    def source(self, target, fmt=None):
        """Generated source for ``target`` (LLVM IR for "llvm"; ``fmt="asm"`` for assembly)."""
        return self._session.source(target, fmt)

    def graph(self, level):
        """A graphviz.Digraph of "AST1", "AST2" or "AST3" (new nodes outlined)."""
        return self._session.graph(level)

    def text(self, level):
        """The text of "AST1", "AST2" or "AST3"."""
        return self._session.text(level)

    def _draw_text(self, level):
        """The text of ``level`` with the last step's change highlighted (only the open tab's:
        the hidden ones are drawn when opened, so an apply sends one diff, not three)."""
        st, prev = self._session.current, self._session.previous
        if self._text_of.get(level) == st.key:
            return
        old = prev.text(level) if prev is not None else None
        self.text_views[level].value = diff_html(old, st.text(level), f"{level} text")
        self._text_of[level] = st.key

    def _draw_graph(self, level):
        """Show the graph of the current state: at once when its layout is cached, else laid out
        on a background thread (graphviz runs outside the GIL) while the text views are already
        up to date; a layout for a state the user has left is dropped."""
        st, prev = self._session.current, self._session.previous
        if self._graph_of.get(level) == st.key:
            return
        self._graph_of[level] = st.key
        cached = st.cached_svg(level, prev)
        if cached is not None or not self._async_graphs:
            self._show_graph(level, *(cached or st.svg(level, prev)))
            return
        self.graph_views[level].value = (f'<div style="font-size:12px;color:#868e96"><b>{level} '
                                         'graph</b> laying out…</div>')

        def work():
            try:
                got = st.svg(level, prev)
            except Exception as e:      # never raise on a worker thread
                got = (None, f"{type(e).__name__}: {e}")
            with self._lock:
                if self._session.current is st and self._graph_of.get(level) == st.key:
                    self._show_graph(level, *got)
        t = threading.Thread(target=work, name="tvmlab-graph", daemon=True)
        self._graph_threads = [x for x in self._graph_threads if x.is_alive()] + [t]
        t.start()

    def _show_graph(self, level, svg, why):
        if svg is None:
            self.graph_views[level].value = (f'<div style="color:#868e96;font-size:12px">graph not '
                                             f'drawn: {html.escape(why)}; the text is on the right'
                                             f'</div>')
        else:
            self.graph_views[level].value = (f'<div style="font-size:12px"><b>{level} graph</b> '
                                             f'(nodes new in this step outlined)</div>'
                                             f'<div style="{_GRAPH_BOX}">{svg}</div>')

    def wait_graphs(self, timeout=60):
        """Block until the graphs being laid out are shown; False on timeout."""
        deadline = time.monotonic() + timeout
        for t in list(self._graph_threads):
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._graph_threads)

    def _refresh_code(self):
        """Build and show the code of the current state (only while the Code tab is open: a
        build is the slowest part of a refresh, and the benchmark builds in its own process)."""
        st = self._session.current
        if self._code_of == st.key:
            return
        self._code_of = st.key
        panes = []
        for t in self.targets:
            kind = target_kind(t)
            if kind == "llvm":
                fmts = [("LLVM IR", "ll", "llvm"), ("assembly", "asm", "asm")]
            elif kind == "cuda":     # beside the CUDA C: the PTX, and what the kernels cost the SM
                fmts = [("CUDA C", None, "cuda"), ("PTX", "ptx", "text"), ("registers, shared memory, occupancy",
                                                                        "resources", "text")]
            else:
                fmts = [(_SOURCE_TITLES.get(kind, (f"{kind} source", "c"))[0], None,
                         _SOURCE_TITLES.get(kind, ("", "c"))[1])]
            for title, fmt, lang in fmts:
                label = f"{title} ({t})"
                try:
                    text = st.source(t, fmt)
                    panes.append(W.HTML(pane_html(label, text, lang), layout=flex()))
                except TVMLabError as e:
                    panes.append(W.HTML(pane_html(label, None, note=f"no code: {e}"),
                                        layout=flex()))
        self.code_views.children = panes

    def _open_tab(self):
        """The title of the open tab (None when none is)."""
        sel = self._tabs.selected_index
        return None if sel is None else TAB_TITLES[sel]
