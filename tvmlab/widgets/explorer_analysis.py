"""The Explorer's analysis panels: Explain, Iteration space, Roofline and A/B.

Each panel answers "why" about the current state with ``tvmlab.analysis`` and is drawn only
when its tab is open (or asked for from Python), once per state.
"""
from __future__ import annotations

import html

import ipywidgets as W

from ..errors import TVMLabError
from .colors import TABLE
from .explorer_trace import click_handler
from .session import steps_key


class AnalysisPanel:
    """The Explain, Iteration space, Roofline and A/B pages of ``session``'s current state, each drawn
    once per state; the Roofline plots ``bench``'s records (a ``BenchPanel``) and A/B times at its
    sizes.  Observers do nothing while ``quiet`` is up."""

    WIDGETS = ("explain_stage", "explain_axis", "explain_view", "iter_sizes", "iter_kind", "iter_loop",
               "iter_button", "iter_view", "roofline_view", "remeasure_button", "pin_button", "compare_button",
               "pin_label", "compare_view")

    def __init__(self, session, quiet, bench):
        self.session = session
        self._quiet = quiet
        self.bench = bench
        self._drawn = {}             # panel title -> state key it was drawn for
        self.pinned = None           # steps of the pinned state (A of the A/B tab)
        self._counts = {}            # (state key, sizes) -> roofline Counts
        self._roofs = None           # the kept roofs, drawn while no benchmarker runs
        self.roof = None             # (peak GFLOP/s, bandwidth GB/s) the roofline last drew
        self.last_iteration_space = None
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
        self.iter_button = W.Button(description="draw", icon="th",
                                    layout=W.Layout(width="auto", flex="0 0 auto"))
        self.iter_view = W.HTML()
        self.iter_button.on_click(lambda _: self.draw("Iteration space", force=True))
        for w in (self.iter_kind, self.iter_loop):
            w.observe(lambda ch: None if self._quiet else self.draw("Iteration space", force=True), names="value")
        iter_page = W.VBox([W.HBox([self.iter_sizes, self.iter_kind, self.iter_loop,
                                    self.iter_button], layout=W.Layout(flex_flow="row wrap")),
                            self.iter_view])
        self.roofline_view = W.HTML()
        self.remeasure_button = W.Button(description="re-measure the roofs", icon="tachometer",
                                         tooltip="measure this machine's FMA peak and memory bandwidth "
                                                 "again (a few seconds, every core busy)",
                                         layout=W.Layout(width="auto", align_self="flex-start"))
        self.remeasure_button.on_click(click_handler(lambda: self.remeasure_roofs()))
        roof_page = W.VBox([self.roofline_view, self.remeasure_button])
        self.pin_button = W.Button(description="pin this step", icon="thumb-tack",
                                   layout=W.Layout(width="auto", flex="0 0 auto"))
        self.compare_button = W.Button(description="compare with pinned", icon="columns",
                                       layout=W.Layout(width="auto", flex="0 0 auto"))
        self.pin_label = W.Label("nothing pinned")
        self.compare_view = W.HTML()
        self.pin_button.on_click(lambda _: self.pin())
        self.compare_button.on_click(click_handler(lambda: self.compare_pinned()))
        ab_page = W.VBox([W.HBox([self.pin_button, self.compare_button, self.pin_label]),
                          self.compare_view])
        self.pages = [explain_page, iter_page, roof_page, ab_page]

    def forget(self):
        """A new state: every panel is drawn again when shown."""
        self._drawn.clear()

    def explain(self, stage=None, axis=None):
        """``Explorer.explain``: the Explain page for ``stage`` (and ``axis``)."""
        from ..analysis.explain import explain
        st = self.session.current
        e = explain(st.schedule, self.session.args, stage, axis, lowered=st.lowered)
        self.explain_view.value = e._repr_html_()
        return e

    def iteration_space(self, sizes=None, kind=None, loop=None, strict=True):
        """``Explorer.iteration_space``: a small instance interpreted, drawn on the Iteration space page
        (``sizes`` default: the sizes box's, the others suggested)."""
        from ..analysis.access import trace_accesses
        from .analysis_views import cache_html, order_png, owner_png, png_img, who_legend_html
        st = self.session.current
        if sizes is None:
            sizes = self._iter_sizes()
        tr = trace_accesses(st.schedule, self.session.args, sizes, lowered=st.lowered)
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
        gpu = self._gpu_check(st.schedule, sizes, parts)
        self.iter_view.value = '<div class="tvmlab-iteration">' + "".join(parts) + "</div>"
        with self._quiet():
            self.iter_kind.options = kinds or ["parallel"]
            self.iter_kind.value = kind if kind in (kinds or ["parallel"]) else self.iter_kind.options[0]
            self.iter_loop.options = loops
            if rep["loop"] in loops:
                self.iter_loop.value = rep["loop"]
        self.last_iteration_space = {"trace": tr, "kind": kind, "loop": rep["loop"], "cache": rep, "gpu": gpu}
        return self.last_iteration_space

    def remeasure_roofs(self):
        """``Explorer.remeasure_roofs``: by the benchmarker when one runs, else here (kept, drawn at once)."""
        if self.bench.benchmarker is None:
            from .bench import machine_roofs
            self._roofs = machine_roofs(remeasure=True)
            self._drawn.pop("Roofline", None)
            self.roofline()
        else:
            self.bench.benchmarker.remeasure()

    def _machine_roofs(self):
        """The roofs to draw: the benchmarker's (found by its worker), else the kept ones."""
        if self.bench.benchmarker is not None:
            return self.bench.benchmarker.roofs
        if self._roofs is None:
            from .bench import machine_roofs
            self._roofs = machine_roofs(measure=False)      # never measured on the notebook's thread
        return self._roofs

    def _gpu_check(self, sch, sizes, parts):
        """A schedule that binds GPU threads is also run on the thread-level simulator: its races and
        divergent barriers show below the maps (``parts`` gets the HTML); returns the ScheduleCheck."""
        from ..analysis.gpusim import binds_gpu_threads, check_schedule
        from .analysis_views import plot_note
        from .gpu_check_view import gpu_check_html
        if not binds_gpu_threads(sch):
            return None
        try:
            check = check_schedule(sch, self.session.args, sizes)
        except TVMLabError as e:
            parts.append(plot_note(f"GPU check: {e}"))
            return None
        parts.append(gpu_check_html(check))
        return check

    def roofline(self, bandwidth=True):
        """``Explorer.roofline``: the points of the measured steps, drawn on the Roofline page."""
        from ..analysis.roofline import kernel_counts
        from .analysis_views import png_img, roofline_png
        pts = []
        b = self.bench.benchmarker
        env = b.workload.env if b is not None else {}
        key_env = tuple(sorted(env.items()))
        for rec in self.bench.records():
            if rec.get("status") != "ok" or not rec.get("time_ms"):
                continue
            steps = self.session.steps[:rec["step"]]
            ck = (steps_key(steps), key_env)
            c = self._counts.get(ck)
            if c is None:
                try:
                    c = kernel_counts(self.session.state(steps).lowered, self.session.args, env)
                except TVMLabError:
                    continue
                self._counts[ck] = c
            pts.append({"label": str(rec["step"]), "series": rec["target"], "flops": c.flops,
                        "bytes": c.bytes, "intensity": c.intensity,
                        "bytes_by_buffer": dict(c.bytes_by_buffer),
                        "gflops": c.flops / (rec["time_ms"] * 1e-3) / 1e9})
        r = self._machine_roofs()
        peak = r.peak_gflops if r is not None else None
        bw = r.bandwidth_gbs if r is not None and bandwidth else None
        self.roof = (peak, bw)
        note = (f"roofs {'measured ' + r.measured_at if r.measured_at else 'given'} on this machine: "
                f"FMA {r.peak_method}; memory {r.bandwidth_method}") if r is not None else \
            "roofs not measured yet"
        if pts:
            img = png_img(roofline_png(pts, peak, bw, title="each step of the trace", note=note),
                          "roofline")
            rows = "".join(f"<tr><td>{p['label']}</td><td>{html.escape(p['series'])}</td>"
                           f"<td>{p['flops']:.3g}</td><td>{p['bytes']:.3g}</td>"
                           f"<td style='font-size:11px'>{html.escape(_per_buffer(p))}</td>"
                           f"<td>{p['intensity']:.2f}</td><td>{p['gflops']:.2f}</td></tr>"
                           for p in pts)
            roofs = r.note() if r is not None else ("roofs not measured yet (the benchmark worker "
                                                    "measures them when idle; or re-measure)")
            self.roofline_view.value = (
                f'<div class="tvmlab-roofline">{img}<div style="font-size:11px;color:#868e96">'
                f'{html.escape(roofs)}; flops and distinct bytes counted from each step\'s AST3 at '
                f'sizes {html.escape(b.workload.size_text() or "fixed")}</div>'
                + TABLE + '<tr><th>step</th><th>target</th><th>flops</th>'
                '<th>bytes</th><th>distinct bytes per buffer</th><th>flops/byte</th>'
                f'<th>GFLOP/s</th></tr>{rows}</table></div>')
        else:
            self.roofline_view.value = ('<div class="tvmlab-roofline" style="color:#868e96">no '
                                        'measured step yet: turn the live benchmark on or press '
                                        '"measure this step"</div>')
        return pts

    def pin(self, steps=None):
        """Pin ``steps`` (default: the current step's) as A of the A/B tab."""
        self.pinned = [dict(x) for x in steps] if steps is not None else list(self.session.steps)
        self.pin_label.value = f"pinned: step {len(self.pinned)}"
        self._drawn.pop("A/B", None)

    def compare_pinned(self, benchmark=True):
        """``Explorer.compare_pinned``: the Comparison, shown on the A/B page."""
        from ..errors import ScheduleError
        from .compare import Comparison
        if self.pinned is None:
            raise ScheduleError("nothing is pinned: press 'pin this step' (or call ex.pin()) first")
        a = self.session.state(self.pinned).schedule
        b = self.session.current.schedule
        if a is b:
            b = self.session.state(list(self.session.steps)).schedule
        c = Comparison(a, b, self.session.args, self.session.targets, self.bench.sizes, benchmark=benchmark,
                       labels=(f"pinned (step {len(self.pinned)})",
                               f"current (step {len(self.session.steps)})"))
        self.compare_view.value = c.html()
        return c

    def _refresh_explain_choices(self):
        sch = self.session.schedule
        keys = [sch.stage_key(x) for x in sch.stages if not x.is_placeholder]
        cur = self.explain_stage.value
        with self._quiet():
            self.explain_stage.options = keys
            self.explain_stage.value = cur if cur in keys else (keys[-1] if keys else None)
            self._refresh_explain_axes()

    def _refresh_explain_axes(self):
        stage = self.explain_stage.value
        if not stage:
            self.explain_axis.options = []
            return
        st = self.session.schedule.stage_by_name(stage)
        names = [("all axes", "")] + [(iv.var.name, iv.var.name) for iv in st.all_iter_vars]
        cur = self.explain_axis.value
        self.explain_axis.options = names
        self.explain_axis.value = cur if cur in [v for _, v in names] else ""

    def _on_explain_choice(self, change):
        if self._quiet:
            return
        if change["owner"] is self.explain_stage:
            with self._quiet():
                self._refresh_explain_axes()
        self.draw("Explain", force=True)

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

    def draw(self, title, force=False):
        key = self.session.current.key
        if not force and self._drawn.get(title) == key:
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
                if self.pinned is None:
                    self.compare_view.value = ('<i>pin a step, move on, then press "compare with '
                                               'pinned"</i>')
                else:
                    self.compare_view.value = ('<i>pinned: step ' f'{len(self.pinned)}; press '
                                               '"compare with pinned" to diff and time both</i>')
        except TVMLabError as e:
            view = {"Explain": self.explain_view, "Iteration space": self.iter_view,
                    "Roofline": self.roofline_view, "A/B": self.compare_view}[title]
            view.value = (f'<div style="color:#c92a2a;font-size:12px">{html.escape(title)} not '
                          f'drawn: {html.escape(str(e))}</div>')
        self._drawn[title] = key


def _per_buffer(point):
    return ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in point.get("bytes_by_buffer", {}).items()
                     if v)

