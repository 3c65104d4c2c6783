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
"""
from __future__ import annotations

import html
import json
import threading
import time

import ipywidgets as W

from ..errors import TVMLabError
from . import choices as C
from .bench import Benchmarker, Workload, plot_png
from .bench_worker import ProcessBenchmarker
from .code import pane_html
from .colors import KIND_COLORS, legend_html
from .diff import diff_html
from .session import LEVELS, Session, steps_key, target_kind

_TAB_TITLES = LEVELS + ("Code", "Benchmark", "Explain", "Iteration space", "Roofline", "A/B", "Tune")
_PANELS = ("Explain", "Iteration space", "Roofline", "A/B")
_SOURCE_TITLES = {"cuda": ("CUDA C", "cuda"), "opengl": ("GLSL", "glsl")}
_GRAPH_BOX = ("overflow:auto;max-height:520px;border:1px solid #dee2e6;background:white;"
              "padding:2px")


def _flex(**kw):
    return W.Layout(flex="1 1 0", min_width="0", **kw)


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

    def apply(self, primitive, stage=None, axis=None, **params):
        """Apply one primitive by printed names: ``apply("split", stage="C", axis="i", factor=64)``.

        On failure the TVMLabError is shown in the widget and raised; nothing changes.
        """
        t0 = time.perf_counter()
        with self._lock:
            try:
                self._session.apply(primitive, stage=stage, axis=axis, **params)
            except TVMLabError as e:
                self._show_error(e)
                raise
            self.last_timings = {"schedule+lower": (time.perf_counter() - t0) * 1e3}
            self._refresh(t0, f"applied {self._session.steps[-1]!r}")
        return self

    def undo(self):
        return self._move(self._session.undo, "undid the last step")

    def redo(self):
        return self._move(self._session.redo, "redid a step")

    def reset(self):
        return self._move(self._session.reset, "reset to the schedule the explorer opened with")

    def _move(self, fn, what):
        t0 = time.perf_counter()
        with self._lock:
            try:
                fn()
            except TVMLabError as e:
                self._show_error(e)
                raise
            self.last_timings = {"schedule+lower": (time.perf_counter() - t0) * 1e3}
            self._refresh(t0, what)
        return self

    def as_python(self, schedule_var="s"):
        """Python that rebuilds the current schedule from the tensors, bound to ``s``."""
        return self._session.as_python(schedule_var)

    def source(self, target, fmt=None):
        """Generated source for ``target`` (LLVM IR for "llvm"; ``fmt="asm"`` for assembly)."""
        return self._session.source(target, fmt)

    def graph(self, level):
        """A graphviz.Digraph of "AST1", "AST2" or "AST3" (new nodes outlined)."""
        return self._session.graph(level)

    def text(self, level):
        """The text of "AST1", "AST2" or "AST3"."""
        return self._session.text(level)

    @property
    def benchmarks(self):
        """One record per step of the trace and runnable target (waits for pending measurements)."""
        self.wait()
        return self._records()

    def tune(self, n_trial=64, tuner="xgb", **options):
        """Auto-schedule this computation in the background, shown in the Tune tab (widgets.tune_view)."""
        from .tune_view import tune
        return tune(self, n_trial, tuner, **options)

    def wait(self, timeout=300):
        """Block until the queued benchmark measurements are done; False on timeout."""
        return True if self._bench is None else self._bench.wait(timeout)

    # ---------------------------------------------------------------- analyses
    def explain(self, stage=None, axis=None):
        """Why ``stage``'s bounds are what they are (``tvmlab.analysis.explain``); shown in Explain."""
        from ..analysis.explain import explain
        st = self._session.current
        e = explain(st.schedule, self._session.args, stage, axis, lowered=st.lowered)
        self.explain_view.value = e._repr_html_()
        return e

    def iteration_space(self, sizes=None, kind=None, loop=None, strict=True):
        """Interpret a small instance: {"trace", "kind", "loop", "cache"}; shown in Iteration space.

        ``sizes`` gives the symbolic shape variables (default: 1.5 x the largest split factor,
        16 to 32, so a tail tile shows); ``kind`` one of
        the writer kinds (parallel, blockIdx, threadIdx, vthread, vectorized, unrolled);
        ``loop`` the loop whose iterations the cache view counts lines for (with
        ``strict=False`` an unknown kind or loop, left from another step, falls back to the
        first one).
        """
        from ..analysis.access import trace_accesses
        from .analysis_views import cache_html, order_png, owner_png, png_img, who_legend_html
        st = self._session.current
        if sizes is None:
            sizes = self._iter_sizes()
        tr = trace_accesses(st.schedule, self._session.args, sizes, lowered=st.lowered)
        kinds = tr.who_kinds()
        loops = [n for n, _ in tr.loops]
        if not strict:
            kind = kind if kind in kinds else None
            loop = loop if loop in loops else None
        kind = kind or (kinds[0] if kinds else "parallel")
        rep = tr.cache_report(loop)
        parts = [who_legend_html(kinds),
                 png_img(owner_png(tr, kind), f"who writes each element: {kind}"),
                 png_img(order_png(tr), "write order"), cache_html(rep)]
        self.iter_view.value = '<div class="tvmlab-iteration">' + "".join(parts) + "</div>"
        was, self._updating = self._updating, True
        try:
            self.iter_kind.options = kinds or ["parallel"]
            self.iter_kind.value = kind if kind in (kinds or ["parallel"]) else self.iter_kind.options[0]
            self.iter_loop.options = loops
            if rep["loop"] in loops:
                self.iter_loop.value = rep["loop"]
        finally:
            self._updating = was
        self.last_iteration_space = {"trace": tr, "kind": kind, "loop": rep["loop"], "cache": rep}
        return self.last_iteration_space

    def roofline(self, bandwidth=True):
        """One point per benchmarked step: {"label", "intensity", "gflops", "series", ...}."""
        from ..analysis.roofline import kernel_counts, memory_bandwidth
        from .analysis_views import png_img, roofline_png
        pts = []
        env = self._bench.workload.env if self._bench is not None else {}
        key_env = tuple(sorted(env.items()))
        for rec in self._records():
            if rec.get("status") != "ok" or not rec.get("time_ms"):
                continue
            steps = self._session.steps[:rec["step"]]
            ck = (steps_key(steps), key_env)
            c = self._counts.get(ck)
            if c is None:
                try:
                    c = kernel_counts(self._session.state(steps).lowered, self._session.args, env)
                except TVMLabError:
                    continue
                self._counts[ck] = c
            pts.append({"label": str(rec["step"]), "series": rec["target"], "flops": c.flops,
                        "bytes": c.bytes, "intensity": c.intensity,
                        "bytes_by_buffer": dict(c.bytes_by_buffer),
                        "gflops": c.flops / (rec["time_ms"] * 1e-3) / 1e9})
        peak = (self._bench.peak or (None, ""))[0] if self._bench is not None else None
        bw = None
        if bandwidth:
            if isinstance(self._bench, ProcessBenchmarker):
                bw = (self._bench.bandwidth or (None, ""))[0]     # measured by the worker
            else:
                try:
                    bw = memory_bandwidth()[0]
                except Exception:      # no memory roof drawn, never an error
                    bw = None
        self._roof = (peak, bw)
        if pts:
            img = png_img(roofline_png(pts, peak, bw, title="each step of the trace"), "roofline")
            rows = "".join(f"<tr><td>{p['label']}</td><td>{html.escape(p['series'])}</td>"
                           f"<td>{p['flops']:.3g}</td><td>{p['bytes']:.3g}</td>"
                           f"<td style='font-size:11px'>{html.escape(_per_buffer(p))}</td>"
                           f"<td>{p['intensity']:.2f}</td><td>{p['gflops']:.2f}</td></tr>"
                           for p in pts)
            roofs = (f"roofs: FMA peak {peak:.0f} GFLOP/s" if peak else "FMA peak not measured yet") \
                + (f", memory {bw:.1f} GB/s" if bw else ", memory bandwidth not measured yet")
            self.roofline_view.value = (
                f'<div class="tvmlab-roofline">{img}<div style="font-size:11px;color:#868e96">'
                f'{html.escape(roofs)}; flops and distinct bytes counted from each step\'s AST3 at '
                f'sizes {html.escape(self._bench.workload.size_text() or "fixed")}</div>'
                '<table style="font-size:12px"><tr><th>step</th><th>target</th><th>flops</th>'
                '<th>bytes</th><th>distinct bytes per buffer</th><th>flops/byte</th>'
                f'<th>GFLOP/s</th></tr>{rows}</table></div>')
        else:
            self.roofline_view.value = ('<div class="tvmlab-roofline" style="color:#868e96">no '
                                        'measured step yet: turn the live benchmark on or press '
                                        '"measure this step"</div>')
        return pts

    def pin(self):
        """Pin the current step: the A/B tab compares it (A) with whatever is current (B)."""
        self._pinned = list(self._session.steps)
        self.pin_label.value = f"pinned: step {len(self._pinned)}"
        self._panel_of.pop("A/B", None)
        return self

    def compare_pinned(self, benchmark=True):
        """``tvmlab.compare`` of the pinned step (A) and the current one (B); shown in A/B."""
        from ..errors import ScheduleError
        from .compare import Comparison
        if self._pinned is None:
            raise ScheduleError("nothing is pinned: press 'pin this step' (or call ex.pin()) first")
        a = self._session.state(self._pinned).schedule
        b = self._session.current.schedule
        if a is b:
            b = self._session.state(list(self._session.steps)).schedule
        c = Comparison(a, b, self._session.args, self.targets, self._sizes, benchmark=benchmark,
                       labels=(f"pinned (step {len(self._pinned)})",
                               f"current (step {len(self._session.steps)})"))
        self.compare_view.value = c.html()
        return c

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
        self._header = W.HTML(f'<div style="font-size:14px"><b>tvmlab explorer</b> — '
                              f'{html.escape(names)} on {html.escape(", ".join(self.targets))}'
                              f'</div>{legend_html()}')
        self._status = W.HTML()
        self.stages_view = W.HTML()
        self.stage_select = W.Dropdown(description="stage", layout=W.Layout(width="260px"))
        self.primitive_select = W.Dropdown(description="primitive", layout=W.Layout(width="260px"))
        self._form = W.VBox()
        self._params = {}
        self.apply_button = W.Button(description="apply", button_style="primary", icon="play")
        self.stage_select.observe(self._on_stage, names="value")
        self.primitive_select.observe(self._on_primitive, names="value")
        self.apply_button.on_click(self._on_apply)
        self._controls_box = W.VBox([self.stages_view, self.stage_select, self.primitive_select,
                                     self._form, self.apply_button], layout=_flex())
        self.trace_view = W.HTML()
        self.undo_button = W.Button(description="undo", icon="undo")
        self.redo_button = W.Button(description="redo", icon="repeat")
        self.reset_button = W.Button(description="reset", icon="refresh")
        self.copy_button = W.Button(description="copy as code", icon="clipboard")
        self.code_box = W.Textarea(layout=W.Layout(width="100%", height="140px", display="none"))
        for b, fn in ((self.undo_button, self.undo), (self.redo_button, self.redo),
                      (self.reset_button, self.reset)):
            b.on_click(self._button(fn))
        self.copy_button.on_click(self._on_copy)
        self._trace_box = W.VBox([W.HTML("<b>trace</b>"), self.trace_view, W.HBox(
            [self.undo_button, self.redo_button, self.reset_button, self.copy_button]),
            self.code_box], layout=_flex())
        self.graph_views = {lv: W.HTML(layout=_flex()) for lv in LEVELS}
        self.text_views = {lv: W.HTML(layout=_flex()) for lv in LEVELS}
        pages = [W.HBox([self.graph_views[lv], self.text_views[lv]]) for lv in LEVELS]
        self.code_views = W.HBox(layout=W.Layout(width="100%"))
        self.bench_progress = W.IntProgress(min=0, max=1, value=0, description="benchmark")
        self.bench_label = W.Label()
        self.bench_plot = W.Image(format="png")
        self.bench_table = W.HTML()
        self.live_benchmark = W.Checkbox(description="live benchmark of every step", value=True)
        self.measure_button = W.Button(description="measure this step", icon="clock-o")
        self.live_benchmark.observe(self._on_live, names="value")
        self.measure_button.on_click(self._on_measure)
        bench_page = W.VBox([W.HBox([self.live_benchmark, self.measure_button]),
                             W.HBox([self.bench_progress, self.bench_label]),
                             self.bench_plot, self.bench_table])
        self.explain_stage = W.Dropdown(description="stage", layout=W.Layout(width="220px"))
        self.explain_axis = W.Dropdown(description="axis", layout=W.Layout(width="220px"))
        self.explain_view = W.HTML()
        self.explain_stage.observe(self._on_explain_choice, names="value")
        self.explain_axis.observe(self._on_explain_choice, names="value")
        explain_page = W.VBox([W.HBox([self.explain_stage, self.explain_axis]), self.explain_view])
        self.iter_sizes = W.Text(description="sizes", placeholder="n=16",
                                 layout=W.Layout(width="220px"))
        self.iter_kind = W.Dropdown(description="writer", layout=W.Layout(width="220px"))
        self.iter_loop = W.Dropdown(description="lines per", layout=W.Layout(width="220px"))
        self.iter_button = W.Button(description="draw", icon="th")
        self.iter_view = W.HTML()
        self.iter_button.on_click(lambda _: self._draw_panel("Iteration space", force=True))
        for w in (self.iter_kind, self.iter_loop):
            w.observe(lambda ch: None if self._updating else self._draw_panel(
                "Iteration space", force=True), names="value")
        iter_page = W.VBox([W.HBox([self.iter_sizes, self.iter_kind, self.iter_loop,
                                    self.iter_button]), self.iter_view])
        self.roofline_view = W.HTML()
        roof_page = W.VBox([self.roofline_view])
        self.pin_button = W.Button(description="pin this step", icon="thumb-tack")
        self.compare_button = W.Button(description="compare with pinned", icon="columns")
        self.pin_label = W.Label("nothing pinned")
        self.compare_view = W.HTML()
        self.pin_button.on_click(lambda _: self.pin())
        self.compare_button.on_click(self._button(lambda: self.compare_pinned()))
        ab_page = W.VBox([W.HBox([self.pin_button, self.compare_button, self.pin_label]),
                          self.compare_view])
        from .tune_view import TuneView
        self.tune_view = TuneView(self)     # the Tune tab (widgets.tune_view)
        self._tabs = W.Tab(children=pages + [self.code_views, bench_page, explain_page, iter_page,
                                             roof_page, ab_page, self.tune_view])
        for k, t in enumerate(_TAB_TITLES):
            self._tabs.set_title(k, t)
        self._tabs.selected_index = 1
        self._tabs.observe(self._on_tab, names="selected_index")

    def _button(self, fn):
        def click(_):
            try:
                fn()
            except TVMLabError:
                pass        # already shown in the status line
        return click

    # ================================================================ refresh
    def _refresh(self, t0, what):
        # The open view first (its message reaches the page before the controls' updates, which
        # create widgets), its graph laid out meanwhile; then the trace, the stages and the form.
        self.error = None
        t1 = time.perf_counter()
        self._text_of = {}
        self._graph_of.clear()
        self._panel_of.clear()
        sel = self._tabs.selected_index
        if sel is not None and sel < len(LEVELS):
            self._draw_text(LEVELS[sel])
            self._draw_graph(LEVELS[sel])
        elif sel is not None and _TAB_TITLES[sel] in _PANELS:
            self._draw_panel(_TAB_TITLES[sel])
        t2 = time.perf_counter()
        self._refresh_trace()
        self._updating = True
        try:
            self._refresh_stages()
        finally:
            self._updating = False
        self._rebuild_form()
        self._code_of = None
        if sel is not None and _TAB_TITLES[sel] == "Code":
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

    def _show_error(self, e):
        self.error = str(e)
        self._status.value = (f'<div class="tvmlab-error" style="color:#c92a2a;background:#fff5f5;'
                              f'border:1px solid #ffc9c9;padding:4px;font-size:12px;'
                              f'white-space:pre-wrap"><b>{type(e).__name__}:</b> '
                              f'{html.escape(str(e))}<br><i>nothing was changed</i></div>')

    def _refresh_stages(self):
        sch = self._session.schedule
        rows = []
        for stg in sch.stages:
            key = sch.stage_key(stg)
            if stg.is_placeholder:
                rows.append(f"<tr><td><b>{html.escape(key)}</b></td><td colspan=2>"
                            f"<i>input</i></td></tr>")
                continue
            chips = []
            for iv in stg.leaf_iter_vars:
                a = stg.attr(iv)
                kind = a.kind
                tag = f" → {a.bind_thread.thread_tag}" if a.bind_thread is not None else ""
                border = "1px dashed #495057" if iv.iter_type == "reduce" else "1px solid #ced4da"
                chips.append(f'<span title="{kind}" style="background:{KIND_COLORS[kind]};'
                             f'border:{border};padding:0 4px;margin:1px;border-radius:3px;'
                             f'font-family:monospace">{html.escape(iv.var.name + tag)}</span>')
            where = {"root": "root", "inline": "inlined"}.get(stg.attach_type)
            if where is None:
                where = f"at {stg.attach_stage.name}.{stg.attach_ivar.var.name}"
            if stg.scope:
                where += f", {stg.scope}"
            rows.append(f"<tr><td><b>{html.escape(key)}</b></td><td>{''.join(chips)}</td>"
                        f"<td style='color:#868e96'>{html.escape(where)}</td></tr>")
        self.stages_view.value = ('<table style="font-size:12px"><tr><th>stage</th>'
                                  '<th>leaf axes (outer → inner)</th><th>computed</th></tr>'
                                  + "".join(rows) + "</table>")
        keys = [sch.stage_key(x) for x in sch.stages]
        cur = self.stage_select.value
        default = next((sch.stage_key(x) for x in reversed(sch.stages) if not x.is_placeholder),
                       keys[-1])
        self.stage_select.options = keys
        self.stage_select.value = cur if cur in keys else default
        self._refresh_primitives()

    def _refresh_primitives(self):
        sch = self._session.schedule
        prims = C.valid_primitives(sch, self.stage_select.value) if self.stage_select.value else []
        cur = self.primitive_select.value
        self.primitive_select.options = prims
        if prims:
            self.primitive_select.value = cur if cur in prims else prims[0]
        self.primitive_select.disabled = not prims
        self.apply_button.disabled = not prims

    def _on_stage(self, change):
        if self._updating:
            return
        self._updating = True
        try:
            self._refresh_primitives()
        finally:
            self._updating = False
        self._rebuild_form()

    def _on_primitive(self, change):
        if not self._updating:
            self._rebuild_form()

    def _rebuild_form(self):
        sch = self._session.schedule
        stage, prim = self.stage_select.value, self.primitive_select.value
        self._params = {}
        if not stage or not prim:
            self._form.children = [W.HTML("<i>no primitive applies to this stage</i>")]
            return
        ch = C.axis_choices(sch, stage, prim)
        P = self._params
        wide = W.Layout(width="260px")

        def dd(name, opts, value=None, desc=None):
            w = W.Dropdown(options=opts, description=desc or name, layout=wide)
            if value is not None and value in [o[1] if isinstance(o, tuple) else o for o in opts]:
                w.value = value
            P[name] = w
            return w

        def num(name, value, lo=1, desc=None):
            w = W.BoundedIntText(value=value, min=lo, max=2**30, description=desc or name,
                                 layout=wide)
            P[name] = w
            return w

        if prim == "split":
            dd("axis", ch["axis"])
            P["mode"] = W.ToggleButtons(options=["factor", "nparts"], value="factor",
                                        style={"button_width": "60px"})
            num("amount", 8)
        elif prim == "tile":
            ax = ch["x_parent"]
            dd("x_parent", ax, desc="x axis")
            dd("y_parent", ax, ax[1] if len(ax) > 1 else None, desc="y axis")
            num("x_factor", 8, desc="x factor")
            num("y_factor", 8, desc="y factor")
        elif prim == "fuse":
            dd("axes", [(", ".join(r), r) for r in ch["axes"]])
        elif prim == "reorder":
            leaf = ch["axis"]
            dd("axis", leaf, leaf[-1] if leaf else None, desc="move")
            dd("position", [(f"{k}: where {n} is", k) for k, n in enumerate(leaf)], 0, desc="to")
        elif prim in ("vectorize", "unroll", "parallel", "rfactor"):
            dd("axis", ch["axis"])
            if prim == "rfactor":
                num("factor_axis", 0, lo=0, desc="factor_axis")
        elif prim == "bind":
            dd("axis", ch["axis"])
            dd("thread", ch["thread"])
        elif prim == "pragma":
            dd("axis", ch["axis"])
            dd("pragma_type", ch["pragma_type"], desc="pragma")
            num("pragma_value", 16, lo=0, desc="value")
        elif prim == "compute_at":
            parent = dd("parent", ch["parent"])
            dd("scope", C.scope_choices(sch, parent.value) if parent.value else [])

            def on_parent(change):
                P["scope"].options = C.scope_choices(self._session.schedule, change["new"]) \
                    if change["new"] else []
            parent.observe(on_parent, names="value")
        elif prim in ("set_scope", "cache_write"):
            dd("scope", ch["scope"], "local" if prim == "cache_write" else None)
        elif prim == "cache_read":
            dd("scope", ch["scope"], "local")
            P["readers"] = W.SelectMultiple(options=ch["readers"], value=tuple(ch["readers"]),
                                            description="readers", layout=wide)
        widgets = list(P.values())
        self._form.children = widgets or [W.HTML("<i>no parameters</i>")]

    def form_kwargs(self):
        """The ``apply`` keyword arguments the controls currently describe."""
        P = {k: w.value for k, w in self._params.items()}
        prim, stage = self.primitive_select.value, self.stage_select.value
        if prim == "split":
            return {"stage": stage, "axis": P["axis"], P["mode"]: P["amount"]}
        if prim == "reorder":
            leaf = [iv.var.name for iv in self._session.schedule[stage].leaf_iter_vars]
            order = [n for n in leaf if n != P["axis"]]
            order.insert(P["position"], P["axis"])
            return {"stage": stage, "axes": order}
        if prim in ("cache_read", "cache_write", "rfactor"):
            kw = {"tensor": stage, **P}
            if prim == "cache_read":
                kw["readers"] = list(P["readers"])
            return kw
        if prim == "normalize":
            return {}
        return {"stage": stage, **P}

    def _on_apply(self, _):
        prim = self.primitive_select.value
        if not prim:
            return
        try:
            kw = self.form_kwargs()
            self.apply(prim, **kw)
        except TVMLabError:
            pass            # shown in the status line
        except (KeyError, TypeError, ValueError) as e:
            self._show_error(TVMLabError(f"{prim}: incomplete choice ({e})"))

    def _refresh_trace(self):
        s = self._session
        items = []
        for k, step in enumerate(s.steps):
            weight = "bold" if k == len(s.steps) - 1 else "normal"
            items.append(f'<li style="font-weight:{weight}">{html.escape(repr(step))}</li>')
        for step in reversed(s.redo_steps):
            items.append(f'<li style="color:#adb5bd">(undone) {html.escape(repr(step))}</li>')
        body = "".join(items) or "<i>no steps yet: the default schedule</i>"
        self.trace_view.value = (f'<ol style="font-family:monospace;font-size:12px;margin:0;'
                                 f'padding-left:22px">{body}</ol>')
        self.undo_button.disabled = not s.steps
        self.redo_button.disabled = not s.redo_steps
        if self.code_box.layout.display != "none":
            self.code_box.value = self.as_python()

    def _on_copy(self, _):
        self.code_box.value = self.as_python()
        self.code_box.layout.display = None if self.code_box.layout.display == "none" else "none"

    def _on_tab(self, change):
        k = change["new"]
        if k is not None and k < len(LEVELS):
            self._draw_text(LEVELS[k])
            self._draw_graph(LEVELS[k])
        elif k is not None and _TAB_TITLES[k] in _PANELS:
            self._draw_panel(_TAB_TITLES[k])
        elif k is not None and _TAB_TITLES[k] == "Code":
            self._refresh_code()
        elif k is not None and _TAB_TITLES[k] == "Benchmark":
            self._refresh_bench_view()

    # ================================================================ analysis panels
    def _refresh_explain_choices(self):
        sch = self._session.schedule
        keys = [sch.stage_key(x) for x in sch.stages if not x.is_placeholder]
        cur = self.explain_stage.value
        was, self._updating = self._updating, True
        try:
            self.explain_stage.options = keys
            self.explain_stage.value = cur if cur in keys else (keys[-1] if keys else None)
            self._refresh_explain_axes()
        finally:
            self._updating = was

    def _refresh_explain_axes(self):
        stage = self.explain_stage.value
        if not stage:
            self.explain_axis.options = []
            return
        st = self._session.schedule.stage_by_name(stage)
        names = [("all axes", "")] + [(iv.var.name, iv.var.name) for iv in st.all_iter_vars]
        cur = self.explain_axis.value
        self.explain_axis.options = names
        self.explain_axis.value = cur if cur in [v for _, v in names] else ""

    def _on_explain_choice(self, change):
        if self._updating:
            return
        if change["owner"] is self.explain_stage:
            self._updating = True
            try:
                self._refresh_explain_axes()
            finally:
                self._updating = False
        self._draw_panel("Explain", force=True)

    def _iter_sizes(self):
        """{name: int} from the sizes box ("n=16, m=8"); the others get the suggested size."""
        from ..errors import ScheduleError
        out = {}
        for part in (self.iter_sizes.value or "").replace(";", ",").split(","):
            if not part.strip():
                continue
            name, _, val = part.partition("=")
            try:
                out[name.strip()] = int(val)
            except ValueError:
                raise ScheduleError(f"sizes: expected name=int pairs like 'n=16', got {part!r}") \
                    from None
        return out

    def _draw_panel(self, title, force=False):
        key = self._session.current.key
        if not force and self._panel_of.get(title) == key:
            return
        try:
            if title == "Explain":
                if not force:
                    self._refresh_explain_choices()      # the stages of the state now shown
                self.explain(self.explain_stage.value or None, self.explain_axis.value or None)
            elif title == "Iteration space":
                self.iteration_space(None, self.iter_kind.value or None, self.iter_loop.value or None,
                                     strict=False)
            elif title == "Roofline":
                self.roofline()
            elif title == "A/B":
                if self._pinned is None:
                    self.compare_view.value = ('<i>pin a step, move on, then press "compare with '
                                               'pinned"</i>')
                else:
                    self.compare_view.value = ('<i>pinned: step ' f'{len(self._pinned)}; press '
                                               '"compare with pinned" to diff and time both</i>')
        except TVMLabError as e:
            view = {"Explain": self.explain_view, "Iteration space": self.iter_view,
                    "Roofline": self.roofline_view, "A/B": self.compare_view}[title]
            view.value = (f'<div style="color:#c92a2a;font-size:12px">{html.escape(title)} not '
                          f'drawn: {html.escape(str(e))}</div>')
        self._panel_of[title] = key

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
            fmts = [("LLVM IR", "ll", "llvm"), ("assembly", "asm", "asm")] if kind == "llvm" else \
                [(_SOURCE_TITLES.get(kind, (f"{kind} source", "c"))[0], None,
                  _SOURCE_TITLES.get(kind, ("", "c"))[1])]
            for title, fmt, lang in fmts:
                label = f"{title} ({t})"
                try:
                    text = st.source(t, fmt)
                    panes.append(W.HTML(pane_html(label, text, lang), layout=_flex()))
                except TVMLabError as e:
                    panes.append(W.HTML(pane_html(label, None, note=f"no code: {e}"),
                                        layout=_flex()))
        self.code_views.children = panes

    # ================================================================ benchmark
    def _start_benchmarker(self, sizes):
        wl = Workload(self._session.args, self._session.ops, sizes)
        if self._bench is not None:
            self._bench.close(timeout=0.5)
        if self._benchmark_process:
            self._bench = ProcessBenchmarker(wl, on_update=self._refresh_bench_view)
        else:
            self._bench = Benchmarker(wl, on_update=self._refresh_bench_view)

    def _runnable(self):
        import tvmlab
        out, skipped = [], []
        for t in self.targets:
            kind = target_kind(t)
            try:
                dev = tvmlab.device(kind)
                ok = dev.exist
            except TVMLabError:
                ok = False
            (out if ok else skipped).append(t)
        return out, skipped

    def _submit_benchmark(self, force=False):
        if self._bench is None or not (self.live_benchmark.value or force):
            return
        st = self._session.current
        label = str(len(self._session.steps))
        if isinstance(self._bench, ProcessBenchmarker):
            self._bench.submit_steps(st.key, label, st.steps, self._runnable()[0])
            return
        mods = {}
        for t in self._runnable()[0]:
            try:
                mods[t] = st.module(t)
            except TVMLabError as e:
                mods[t] = f"build failed: {e}"
        self._bench.submit(st.key, label, mods)

    def _on_live(self, change):
        if change["new"]:
            if self._bench is None:
                self._start_benchmarker(self._sizes)
            self._submit_benchmark()
            self._refresh_bench_view()

    def _on_measure(self, _):
        if self._bench is None:
            self._start_benchmarker(self._sizes)
        self._submit_benchmark(force=True)
        self._refresh_bench_view()

    def _records(self):
        if self._bench is None:
            return []
        steps = self._session.steps
        out = []
        runnable = self._runnable()[0]
        for k in range(len(steps) + 1):
            key = steps_key(steps[:k])
            for t in runnable:
                rec = self._bench.records.get((key, t))
                if rec is not None:
                    out.append({"step": k, "label": repr(steps[k - 1]) if k else "initial schedule",
                                **rec})
        return out

    def _refresh_bench_view(self, plot=None):
        """Progress line always; the plot and table (``plot=None``: only while the Benchmark tab is
        open, and only when the records changed; ``True``: now)."""
        b = self._bench
        skipped = self._runnable()[1]
        note = f" · not run (no device): {', '.join(skipped)}" if skipped else ""
        if b is None:
            self.bench_label.value = "benchmark off" + note
            return
        pending = b.pending
        total = len(b.records) + pending
        self.bench_progress.max = max(1, total)
        self.bench_progress.value = len(b.records)
        cur = b.current
        self.bench_label.value = (f"measuring {cur}…" if cur else
                                  (f"{pending} queued" if pending else "idle")) + \
            f" · sizes: {b.workload.size_text() or 'fixed'}" + note
        sel = self._tabs.selected_index
        if plot is None:          # the plot is drawn for the open Benchmark tab only
            plot = sel is not None and _TAB_TITLES[sel] == "Benchmark"
        recs = self._records()
        peak, how = b.peak or (None, "")
        sig = (json.dumps(recs, sort_keys=True, default=str), peak, how)
        if plot and sig != self._plotted:
            if recs:
                try:
                    self.bench_plot.value = plot_png(recs, peak, how)
                except Exception as e:   # a plotting failure is shown, never raised into the kernel
                    self.bench_label.value += f" · plot failed: {e}"
            self.bench_table.value = _records_html(recs, how)
            self._plotted = sig
        if sel is not None and _TAB_TITLES[sel] == "Roofline" and not pending:
            with self._lock:      # from the benchmark thread: never while an apply is lowering
                self._draw_panel("Roofline", force=True)


def _per_buffer(point):
    return ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in point.get("bytes_by_buffer", {}).items()
                     if v)


def _records_html(recs, how):
    def f(x, fmt):
        return "" if x is None else format(x, fmt)
    rows = "".join(
        f"<tr><td>{r['step']}</td><td style='font-family:monospace'>{html.escape(r['label'])}</td>"
        f"<td>{html.escape(r['target'])}</td><td>{html.escape(r['status'])}</td>"
        f"<td>{f(r['time_ms'], '.3f')}</td><td>{f(r['gflops'], '.2f')}</td>"
        f"<td>{f(r.get('numpy_ms'), '.3f')}</td><td>{html.escape(r.get('message') or '')}</td></tr>"
        for r in recs)
    return (f'<div style="font-size:11px;color:#868e96">{html.escape(how)}</div>'
            '<table style="font-size:12px"><tr><th>step</th><th>last primitive</th><th>target</th>'
            '<th>check</th><th>ms</th><th>GFLOP/s</th><th>numpy ms</th><th></th></tr>'
            f"{rows}</table>")
