"""The Explorer's stage views: the AST1/AST2/AST3 graph and text tabs and the Code tab.

Kept apart from the controls because drawing is the slow part of a refresh: the text is diffed
against the previous step, graphs are laid out on background threads and code is built only
while its tab is open.  Also holds what every panel of the Explorer refers to: the tab layout,
``flex`` and ``Quiet``.
"""
from __future__ import annotations

import contextlib
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


class Quiet:
    """Up while the explorer sets its controls' options and values itself: an observer that finds it
    up redraws nothing.  ``with quiet(): ...`` raises it; ``if quiet:`` reads it."""

    def __init__(self):
        self.up = False

    def __bool__(self):
        return self.up

    @contextlib.contextmanager
    def __call__(self):
        was, self.up = self.up, True
        try:
            yield
        finally:
            self.up = was


class ViewsPanel:
    """The graph and text of each level and the code of ``session``'s current state, each drawn once
    per state; graphs are laid out on background threads that show their result under ``lock``."""

    WIDGETS = ("graph_views", "text_views", "code_views")

    def __init__(self, session, lock, async_graphs=True):
        self.session = session
        self._lock = lock
        self._async_graphs = bool(async_graphs)
        self._graph_threads = []
        self._text_of = {}           # level -> state key its text view was drawn for
        self._graph_of = {}          # level -> state key its graph was drawn for
        self._code_of = None         # state key the code panes were built for
        self.graph_views = {lv: W.HTML(layout=flex()) for lv in LEVELS}
        self.text_views = {lv: W.HTML(layout=flex()) for lv in LEVELS}
        self.pages = [W.HBox([self.graph_views[lv], self.text_views[lv]]) for lv in LEVELS]
        self.code_views = W.HBox(layout=W.Layout(width="100%"))

    def forget(self):
        """A new state: every view is drawn again when shown."""
        self._text_of = {}
        self._graph_of.clear()
        self._code_of = None

    def draw(self, level):
        self.draw_text(level)
        self.draw_graph(level)

    def draw_text(self, level):
        """The text of ``level`` with the last step's change highlighted (only the open tab's:
        the hidden ones are drawn when opened, so an apply sends one diff, not three)."""
        st, prev = self.session.current, self.session.previous
        if self._text_of.get(level) == st.key:
            return
        old = prev.text(level) if prev is not None else None
        self.text_views[level].value = diff_html(old, st.text(level), f"{level} text")
        self._text_of[level] = st.key

    def draw_graph(self, level):
        """Show the graph of the current state: at once when its layout is cached, else laid out
        on a background thread (graphviz runs outside the GIL) while the text views are already
        up to date; a layout for a state the user has left is dropped."""
        st, prev = self.session.current, self.session.previous
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
                if self.session.current is st and self._graph_of.get(level) == st.key:
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
        """``Explorer.wait_graphs``: join the layout threads (False if one is still running)."""
        deadline = time.monotonic() + timeout
        for t in list(self._graph_threads):
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._graph_threads)

    def refresh_code(self):
        """Build and show the code of the current state (only while the Code tab is open: a
        build is the slowest part of a refresh, and the benchmark builds in its own process)."""
        st = self.session.current
        if self._code_of == st.key:
            return
        self._code_of = st.key
        panes = []
        for t in self.session.targets:
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
