"""The Explorer widget: schedule primitives as controls, every compiler stage as a view.

Layout: a status line; the stages with their leaf axes and a form for one
primitive (offering only valid choices, see ``choices``); the trace with
undo / redo / reset / copy-as-code; tabs AST1 | AST2 | AST3 (graph and text,
with the change from the previous step highlighted) | Code (one pane per
target format, side by side) | Benchmark (live plot against numpy) | Explain
(why each stage's bounds are what they are) | Iteration space (who writes
each element, in which order, cache lines and reuse on a small instance) |
Roofline (each step's GFLOP/s against its arithmetic intensity) | A/B (the
pinned step against the current one) | Tune (the auto-scheduler searching
this computation in the background; ``ex.tune(n_trial=, tuner=)``).

The widget holds no compiler logic: ``Session`` applies trace steps and
lowers, the views draw what the session's current state holds.  Graphs of
hidden tabs are drawn when the tab is opened.

``Explorer`` owns the session, the widget tree and the refresh order; its
parts live in mixins of one concern each: ``explorer_trace`` (primitive
controls and trace), ``explorer_views`` (graph, text and code tabs),
``explorer_analysis`` (Explain, Iteration space, Roofline, A/B) and
``explorer_bench`` (Benchmark tab and ``tune``).
"""
from __future__ import annotations

import contextlib
import html
import threading
import time

import ipywidgets as W

from ..errors import TVMLabError
from .colors import legend_html
from .explorer_analysis import AnalysisPanels
from .explorer_bench import BenchmarkPanel, _records_html  # noqa: F401  (magics uses it)
from .explorer_trace import TraceControls
from .explorer_views import PANELS, TAB_TITLES, StageViews
from .session import LEVELS, Session

# The tab bar sizes each tab to its title (ipywidgets squeezes a fixed width per tab, which cut
# "Iteration space" short); the header carries it to the page.
EXPLORER_CSS = ("<style>.tvmlab-tabs > .lm-TabBar .lm-TabBar-tab, .tvmlab-tabs > .p-TabBar .p-TabBar-tab"
                "{flex:0 0 auto !important;max-width:none !important}"
                ".tvmlab-tabs .lm-TabBar-tabLabel, .tvmlab-tabs .p-TabBar-tabLabel"
                "{overflow:visible;text-overflow:clip}</style>")


class Explorer(TraceControls, StageViews, AnalysisPanels, BenchmarkPanel, W.VBox):
    """An interactive explorer of one schedule of ``args``.

    Python API (also what the controls call): ``apply``, ``undo``, ``redo``,
    ``reset``, ``as_python``, ``source``, ``graph``, ``schedule``, ``trace``,
    ``benchmarks``.  ``last_latency_ms`` is the time from the start of the last
    apply/undo/redo/reset to refreshed views and code; ``latencies`` keeps all.
    Options: ``benchmark=False`` turns the live benchmark off; ``sizes`` gives
    symbolic shape variables their benchmark values (default 1024);
    ``benchmark_process=False`` measures on a thread of this process instead of
    a worker process (a newer step then does not cancel older measurements);
    ``async_graphs=False`` lays graphs out before an apply returns (``wait_graphs()``
    waits for the background layouts otherwise).
    """

    def __init__(self, s, args, targets=None, benchmark=True, sizes=None, benchmark_process=True,
                 async_graphs=True):
        self._benchmark_process = bool(benchmark_process)
        self._async_graphs = bool(async_graphs)
        self._graph_threads = []
        self._code_of = None
        self._text_of = {}           # level -> state key its text view was drawn for
        self._plotted = None         # what the benchmark plot shows (records, peak)
        self._session = Session(s, args, targets)
        self.targets = list(self._session.targets)
        self.last_latency_ms = None
        self.last_timings = {}
        self.latencies = []
        self.error = None
        self._lock = threading.RLock()
        self._updating = False
        self._graph_of = {}          # level -> state key its graph was drawn for
        self._panel_of = {}          # panel title -> state key it was drawn for
        self._pinned = None          # steps of the pinned state (A of the A/B tab)
        self._counts = {}            # (state key, sizes) -> roofline Counts
        self.last_iteration_space = None
        self._bench = None
        self._sizes = sizes
        self._build_widgets()
        super().__init__(children=[self._header, self._status, W.HBox(
            [self._controls_box, self._trace_box], layout=W.Layout(width="100%")), self._tabs])
        self.live_benchmark.value = bool(benchmark)
        if benchmark:
            self._start_benchmarker(sizes)
        self._refresh(time.perf_counter(), "opened")

    # ================================================================ Python API
    @property
    def schedule(self):
        """The current Schedule (rebuilt from the tensors by replaying the trace)."""
        return self._session.schedule

    @property
    def trace(self):
        """The current Trace: the steps applied, as plain data."""
        return self._session.trace

    @property
    def session(self):
        return self._session

    # ---------------------------------------------------------------- sharing
    def save_session(self, path=None):
        """The session (trace, targets, sizes, pinned step) as JSON text; written to ``path`` if given."""
        import json
        sizes = self._bench.workload.env if self._bench is not None else (self._sizes or {})
        text = json.dumps(self._session.to_dict(sizes, self._pinned), indent=1, default=str)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

    def load_session(self, source):
        """Go to a saved session (a path, JSON text or a dict); nothing changes if it does not replay."""
        import json
        import os
        data = source
        if isinstance(source, str):
            text = source
            if not source.lstrip().startswith("{"):
                if not os.path.exists(source):
                    from ..errors import ScheduleError
                    raise ScheduleError(f"no session file {source!r}")
                with open(source) as f:
                    text = f.read()
            try:
                data = json.loads(text)
            except ValueError as e:
                from ..errors import ScheduleError
                raise ScheduleError(f"a session is JSON; this is not: {e}") from None
        t0 = time.perf_counter()
        with self._lock:
            try:
                self._session.load_dict(data)
            except TVMLabError as e:
                self._show_error(e)
                raise
            pinned = data.get("pinned")
            if pinned:
                self._pinned = [dict(x) for x in pinned]
                self.pin_label.value = f"pinned: step {len(self._pinned)}"
            sizes = data.get("sizes") or None
            if sizes and self._bench is not None and sizes != self._bench.workload.env:
                self._sizes = sizes
                self._start_benchmarker(sizes)
            self._refresh(t0, f"loaded a session of {len(self._session.steps)} steps")
        return self

    def export_html(self, path=None):
        """A standalone HTML page of the current state (views, trace, code, plots) that opens
        without a kernel; written to ``path`` if given."""
        from .export import explorer_html
        page = explorer_html(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    @property
    def controls(self):
        """The widgets, by name, for driving the explorer from code (tests, demos)."""
        return {"stage": self.stage_select, "primitive": self.primitive_select,
                "params": dict(self._params), "apply": self.apply_button,
                "undo": self.undo_button, "redo": self.redo_button, "reset": self.reset_button,
                "copy": self.copy_button, "tabs": self._tabs, "live": self.live_benchmark,
                "measure": self.measure_button, "pin": self.pin_button,
                "compare": self.compare_button, "explain_stage": self.explain_stage,
                "explain_axis": self.explain_axis, "iter_sizes": self.iter_sizes,
                "iter_kind": self.iter_kind, "iter_loop": self.iter_loop}

    # ================================================================ widgets
    def _build_widgets(self):
        names = ", ".join(a.name for a in self._session.args)
        self._header = W.HTML(f'{EXPLORER_CSS}<div style="font-size:14px"><b>tvmlab explorer</b> — '
                              f'{html.escape(names)} on {html.escape(", ".join(self.targets))}'
                              f'</div>{legend_html()}')
        self._status = W.HTML()
        self._build_trace_controls()
        pages = self._build_stage_pages()
        bench_page = self._build_bench_page()
        explain_page, iter_page, roof_page, ab_page = self._build_analysis_pages()
        from .tune_view import TuneView
        self.tune_view = TuneView(self)     # the Tune tab (widgets.tune_view)
        self._tabs = W.Tab(children=pages + [self.code_views, bench_page, explain_page, iter_page,
                                             roof_page, ab_page, self.tune_view])
        for k, t in enumerate(TAB_TITLES):
            self._tabs.set_title(k, t)
        self._tabs.add_class("tvmlab-tabs")
        self._tabs.selected_index = 1
        self._tabs.observe(self._on_tab, names="selected_index")

    # ================================================================ refresh
    def _refresh(self, t0, what):
        # The open view first (its message reaches the page before the controls' updates, which
        # create widgets), its graph laid out meanwhile; then the trace, the stages and the form.
        self.error = None
        t1 = time.perf_counter()
        self._text_of = {}
        self._graph_of.clear()
        self._panel_of.clear()
        tab = self._open_tab()
        self._draw_view(tab)
        t2 = time.perf_counter()
        self._refresh_trace()
        with self._quietly():
            self._refresh_stages()
        self._rebuild_form()
        self._code_of = None
        if tab == "Code":
            self._refresh_code()
        t3 = time.perf_counter()
        self._submit_benchmark()
        self._refresh_bench_view()
        done = time.perf_counter()
        self.last_latency_ms = (done - t0) * 1e3
        self.last_timings.update({"text views": (t2 - t1) * 1e3, "code": (t3 - t2) * 1e3,
                                  "total": self.last_latency_ms})
        self.latencies.append(self.last_latency_ms)
        self._status.value = (f'<div style="color:#2b8a3e;font-size:12px">{html.escape(what)} · '
                              f'views and code refreshed in {self.last_latency_ms:.0f} ms</div>')

    @contextlib.contextmanager
    def _quietly(self):
        """Set the controls' options and values without their observers redrawing anything."""
        was, self._updating = self._updating, True
        try:
            yield
        finally:
            self._updating = was

    def _draw_view(self, title):
        """Draw the stage view (text and graph) or analysis panel called ``title``; False if
        ``title`` is neither."""
        if title in LEVELS:
            self._draw_text(title)
            self._draw_graph(title)
        elif title in PANELS:
            self._draw_panel(title)
        else:
            return False
        return True

    def _on_tab(self, change):
        title = None if change["new"] is None else TAB_TITLES[change["new"]]
        if self._draw_view(title):
            return
        if title == "Code":
            self._refresh_code()
        elif title == "Benchmark":
            self._refresh_bench_view()
