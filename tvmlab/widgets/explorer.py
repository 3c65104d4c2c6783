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

``Explorer`` owns what its panels share (the session, the lock, the tabs, the
status line, the refresh order) and its Python API; each panel is an object
that owns its widgets and state, given what it needs explicitly:
``TracePanel`` (primitive controls and trace, ``explorer_trace``),
``ViewsPanel`` (graph, text and code tabs, ``explorer_views``),
``AnalysisPanel`` (Explain, Iteration space, Roofline, A/B,
``explorer_analysis``) and ``BenchPanel`` (Benchmark tab, ``explorer_bench``).
"""
from __future__ import annotations

import html
import threading
import time

import ipywidgets as W

from ..errors import TVMLabError
from .colors import legend_html
from .explorer_analysis import AnalysisPanel
from .explorer_bench import BenchPanel, _records_html  # noqa: F401  (magics uses it)
from .explorer_trace import TracePanel
from .explorer_views import PANELS, TAB_TITLES, Quiet, ViewsPanel
from .session import LEVELS, Session

# The tab bar sizes each tab to its title (ipywidgets squeezes a fixed width per tab, which cut
# "Iteration space" short); the header carries it to the page.
EXPLORER_CSS = ("<style>.tvmlab-tabs > .lm-TabBar .lm-TabBar-tab, .tvmlab-tabs > .p-TabBar .p-TabBar-tab"
                "{flex:0 0 auto !important;max-width:none !important}"
                ".tvmlab-tabs .lm-TabBar-tabLabel, .tvmlab-tabs .p-TabBar-tabLabel"
                "{overflow:visible;text-overflow:clip}</style>")


class Explorer(W.VBox):
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
        self._session = Session(s, args, targets)
        self.targets = list(self._session.targets)
        self.last_latency_ms = None
        self.last_timings = {}
        self.latencies = []
        self.error = None
        self._lock = threading.RLock()
        self._quiet = Quiet()
        self._build_widgets(sizes, benchmark_process, async_graphs)
        super().__init__(children=[self._header, self._status, W.HBox(
            [self.trace_panel.controls_box, self.trace_panel.trace_box], layout=W.Layout(width="100%")),
            self._tabs])
        self.live_benchmark.value = bool(benchmark)
        if benchmark:
            self.bench_panel.start(sizes)
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

    def apply(self, primitive, stage=None, axis=None, **params):
        """Apply one primitive by printed names: ``apply("split", stage="C", axis="i", factor=64)``.

        On failure the TVMLabError is shown in the widget and raised; nothing changes.
        """
        return self._move(lambda: self._session.apply(primitive, stage=stage, axis=axis, **params),
                          lambda: f"applied {self._session.steps[-1]!r}")

    def undo(self):
        return self._move(self._session.undo, "undid the last step")

    def redo(self):
        return self._move(self._session.redo, "redid a step")

    def reset(self):
        return self._move(self._session.reset, "reset to the schedule the explorer opened with")

    def as_python(self, schedule_var="s"):
        """Python that rebuilds the current schedule from the tensors, bound to ``s``."""
        return self._session.as_python(schedule_var)

    def form_kwargs(self):
        """The ``apply`` keyword arguments the controls currently describe."""
        return self.trace_panel.form_kwargs()

    def source(self, target, fmt=None):
        """Generated source for ``target`` (LLVM IR for "llvm"; ``fmt="asm"`` for assembly)."""
        return self._session.source(target, fmt)

    def graph(self, level):
        """A graphviz.Digraph of "AST1", "AST2" or "AST3" (new nodes outlined)."""
        return self._session.graph(level)

    def text(self, level):
        """The text of "AST1", "AST2" or "AST3"."""
        return self._session.text(level)

    def wait_graphs(self, timeout=60):
        """Block until the graphs being laid out are shown; False on timeout."""
        return self.views_panel.wait_graphs(timeout)

    @property
    def benchmarks(self):
        """One record per step of the trace and runnable target (waits for pending measurements)."""
        self.wait()
        return self.bench_panel.records()

    def wait(self, timeout=300):
        """Block until the queued benchmark measurements are done; False on timeout."""
        return self.bench_panel.wait(timeout)

    def tune(self, n_trial=64, tuner="xgb", **options):
        """Auto-schedule this computation in the background, shown in the Tune tab (widgets.tune_view)."""
        from .tune_view import tune
        return tune(self, n_trial, tuner, **options)

    def explain(self, stage=None, axis=None):
        """Why ``stage``'s bounds are what they are (``tvmlab.analysis.explain``); shown in Explain."""
        return self.analysis_panel.explain(stage, axis)

    def iteration_space(self, sizes=None, kind=None, loop=None, strict=True):
        """Interpret a small instance: {"trace", "kind", "loop", "cache"}; shown in Iteration space.

        ``sizes`` gives the symbolic shape variables (default: 1.5 x the largest split factor,
        16 to 32, so a tail tile shows); ``kind`` one of
        the writer kinds (parallel, blockIdx, threadIdx, vthread, vectorized, unrolled);
        ``loop`` the loop whose iterations the cache view counts lines for (with
        ``strict=False`` an unknown kind or loop, left from another step, falls back to the
        first one).
        """
        return self.analysis_panel.iteration_space(sizes, kind, loop, strict)

    @property
    def last_iteration_space(self):
        """What ``iteration_space`` returned last (None before)."""
        return self.analysis_panel.last_iteration_space

    def roofline(self, bandwidth=True):
        """One point per benchmarked step: {"label", "intensity", "gflops", "series", ...}."""
        return self.analysis_panel.roofline(bandwidth)

    def remeasure_roofs(self):
        """Measure this machine's FMA peak and memory bandwidth again and keep them (the figures
        the roofline and the benchmark plot draw; ``tvmlab.bench.machine``); the views redraw."""
        self.analysis_panel.remeasure_roofs()
        return self

    def pin(self):
        """Pin the current step: the A/B tab compares it (A) with whatever is current (B)."""
        self.analysis_panel.pin()
        return self

    def compare_pinned(self, benchmark=True):
        """``tvmlab.compare`` of the pinned step (A) and the current one (B); shown in A/B."""
        return self.analysis_panel.compare_pinned(benchmark)

    # ---------------------------------------------------------------- sharing
    def save_session(self, path=None):
        """The session (trace, targets, sizes, pinned step) as JSON text; written to ``path`` if given."""
        import json
        b = self.bench_panel.benchmarker
        sizes = b.workload.env if b is not None else (self.bench_panel.sizes or {})
        text = json.dumps(self._session.to_dict(sizes, self.analysis_panel.pinned), indent=1, default=str)
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
                self.analysis_panel.pin(pinned)
            sizes = data.get("sizes") or None
            b = self.bench_panel.benchmarker
            if sizes and b is not None and sizes != b.workload.env:
                self.bench_panel.start(sizes)
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
                "params": dict(self.trace_panel.params), "apply": self.apply_button,
                "undo": self.undo_button, "redo": self.redo_button, "reset": self.reset_button,
                "copy": self.copy_button, "tabs": self._tabs, "live": self.live_benchmark,
                "measure": self.measure_button, "pin": self.pin_button,
                "compare": self.compare_button, "explain_stage": self.explain_stage,
                "explain_axis": self.explain_axis, "iter_sizes": self.iter_sizes,
                "iter_kind": self.iter_kind, "iter_loop": self.iter_loop}

    # ================================================================ widgets
    def _build_widgets(self, sizes, benchmark_process, async_graphs):
        names = ", ".join(a.name for a in self._session.args)
        self._header = W.HTML(f'{EXPLORER_CSS}<div style="font-size:14px"><b>tvmlab explorer</b> — '
                              f'{html.escape(names)} on {html.escape(", ".join(self.targets))}'
                              f'</div>{legend_html()}')
        self._status = W.HTML()
        self.trace_panel = TracePanel(self._session, self._quiet, self.apply, self.undo, self.redo, self.reset,
                                      self._show_error)
        self.views_panel = ViewsPanel(self._session, self._lock, async_graphs)
        self.bench_panel = BenchPanel(self._session, self._open_tab, self._redraw_roofline, benchmark_process,
                                      sizes)
        self.analysis_panel = AnalysisPanel(self._session, self._quiet, self.bench_panel)
        # the panels' widgets, under the names the Explorer's API has always given them
        for panel in (self.trace_panel, self.views_panel, self.bench_panel, self.analysis_panel):
            for name in panel.WIDGETS:
                setattr(self, name, getattr(panel, name))
        from .tune_view import TuneView
        self.tune_view = TuneView(self)     # the Tune tab (widgets.tune_view)
        self._tabs = W.Tab(children=self.views_panel.pages + [self.code_views, self.bench_panel.page,
                                                              *self.analysis_panel.pages, self.tune_view])
        for k, t in enumerate(TAB_TITLES):
            self._tabs.set_title(k, t)
        self._tabs.add_class("tvmlab-tabs")
        self._tabs.selected_index = 1
        self._tabs.observe(self._on_tab, names="selected_index")

    def _show_error(self, e):
        self.error = str(e)
        self._status.value = (f'<div class="tvmlab-error" style="color:#c92a2a;background:#fff5f5;'
                              f'border:1px solid #ffc9c9;padding:4px;font-size:12px;'
                              f'white-space:pre-wrap"><b>{type(e).__name__}:</b> '
                              f'{html.escape(str(e))}<br><i>nothing was changed</i></div>')

    # ================================================================ refresh
    def _move(self, fn, what):
        """Run ``fn`` (a session change) under the lock, then refresh with the status ``what``
        (text, or a function giving it once ``fn`` is done); a TVMLabError is shown and raised."""
        t0 = time.perf_counter()
        with self._lock:
            try:
                fn()
            except TVMLabError as e:
                self._show_error(e)
                raise
            self.last_timings = {"schedule+lower": (time.perf_counter() - t0) * 1e3}
            self._refresh(t0, what() if callable(what) else what)
        return self

    def _refresh(self, t0, what):
        # The open view first (its message reaches the page before the controls' updates, which
        # create widgets), its graph laid out meanwhile; then the trace, the stages and the form.
        self.error = None
        t1 = time.perf_counter()
        self.views_panel.forget()
        self.analysis_panel.forget()
        tab = self._open_tab()
        self._draw_view(tab)
        t2 = time.perf_counter()
        self.trace_panel.refresh_trace()
        with self._quiet():
            self.trace_panel.refresh_stages()
        self.trace_panel.rebuild_form()
        if tab == "Code":
            self.views_panel.refresh_code()
        t3 = time.perf_counter()
        self.bench_panel.submit()
        self.bench_panel.refresh()
        done = time.perf_counter()
        self.last_latency_ms = (done - t0) * 1e3
        self.last_timings.update({"text views": (t2 - t1) * 1e3, "code": (t3 - t2) * 1e3,
                                  "total": self.last_latency_ms})
        self.latencies.append(self.last_latency_ms)
        self._status.value = (f'<div style="color:#2b8a3e;font-size:12px">{html.escape(what)} · '
                              f'views and code refreshed in {self.last_latency_ms:.0f} ms</div>')

    def _open_tab(self):
        """The title of the open tab (None when none is)."""
        sel = self._tabs.selected_index
        return None if sel is None else TAB_TITLES[sel]

    def _draw_view(self, title):
        """Draw the stage view (text and graph) or analysis panel called ``title``; False if
        ``title`` is neither."""
        if title in LEVELS:
            self.views_panel.draw(title)
        elif title in PANELS:
            self.analysis_panel.draw(title)
        else:
            return False
        return True

    def _redraw_roofline(self):
        """The benchmark's measurements are done with the Roofline tab open (called from its thread)."""
        with self._lock:      # never while an apply is lowering
            self.analysis_panel.draw("Roofline", force=True)

    def _on_tab(self, change):
        title = None if change["new"] is None else TAB_TITLES[change["new"]]
        if self._draw_view(title):
            return
        if title == "Code":
            self.views_panel.refresh_code()
        elif title == "Benchmark":
            self.bench_panel.refresh()
