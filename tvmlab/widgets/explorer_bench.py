"""The Explorer's Benchmark tab: live measurements of every step against numpy.

Measuring runs in a worker process (or a thread) so a step never waits for its timing; this
module turns the records into the progress line, plot and table.
"""
from __future__ import annotations

import html
import json

import ipywidgets as W

from ..errors import TVMLabError
from .bench import Benchmarker, Workload, plot_png
from .bench_worker import ProcessBenchmarker
from .colors import TABLE
from .session import steps_key, target_kind


class BenchPanel:
    """The live benchmark of ``session``'s steps: its Benchmarker (None while off), its records and the
    Benchmark page.  The plot is drawn only while ``open_tab()`` is "Benchmark"; when the measurements
    are done with the Roofline tab open, ``redraw_roofline()`` is called (from the benchmark thread)."""

    WIDGETS = ("bench_progress", "bench_label", "bench_plot", "bench_table", "live_benchmark", "measure_button")

    def __init__(self, session, open_tab, redraw_roofline, process=True, sizes=None):
        self.session = session
        self._open_tab = open_tab
        self._redraw_roofline = redraw_roofline
        self._process = bool(process)
        self.sizes = sizes               # symbolic shape variables' benchmark values (None: the default)
        self.benchmarker = None
        self._plotted = None             # what the plot shows (records, peak)
        self.bench_progress = W.IntProgress(min=0, max=1, value=0, description="benchmark")
        self.bench_label = W.Label()
        self.bench_plot = W.Image(format="png")
        self.bench_table = W.HTML()
        self.live_benchmark = W.Checkbox(description="live benchmark of every step", value=True)
        self.measure_button = W.Button(description="measure this step", icon="clock-o",
                                       layout=W.Layout(width="auto", flex="0 0 auto"))
        self.live_benchmark.observe(self._on_live, names="value")
        self.measure_button.on_click(self._on_measure)
        self.page = W.VBox([W.HBox([self.live_benchmark, self.measure_button]),
                            W.HBox([self.bench_progress, self.bench_label]),
                            self.bench_plot, self.bench_table])

    def wait(self, timeout=300):
        """Block until the queued measurements are done; False on timeout."""
        return True if self.benchmarker is None else self.benchmarker.wait(timeout)

    def start(self, sizes):
        """(Re)start measuring, at ``sizes``; an older benchmarker is closed."""
        self.sizes = sizes
        wl = Workload(self.session.args, self.session.ops, sizes)
        if self.benchmarker is not None:
            self.benchmarker.close(timeout=0.5)
        if self._process:
            self.benchmarker = ProcessBenchmarker(wl, on_update=self.refresh)
        else:
            self.benchmarker = Benchmarker(wl, on_update=self.refresh)

    def runnable(self):
        """(targets with a device here, targets without)."""
        import tvmlab
        out, skipped = [], []
        for t in self.session.targets:
            kind = target_kind(t)
            try:
                dev = tvmlab.device(kind)
                ok = dev.exist
            except TVMLabError:
                ok = False
            (out if ok else skipped).append(t)
        return out, skipped

    def submit(self, force=False):
        """Queue the current step (when live, or ``force``)."""
        if self.benchmarker is None or not (self.live_benchmark.value or force):
            return
        st = self.session.current
        label = str(len(self.session.steps))
        if isinstance(self.benchmarker, ProcessBenchmarker):
            self.benchmarker.submit_steps(st.key, label, st.steps, self.runnable()[0])
            return
        mods = {}
        for t in self.runnable()[0]:
            try:
                mods[t] = st.module(t)
            except TVMLabError as e:
                mods[t] = f"build failed: {e}"
        self.benchmarker.submit(st.key, label, mods)

    def _on_live(self, change):
        if change["new"]:
            if self.benchmarker is None:
                self.start(self.sizes)
            self.submit()
            self.refresh()

    def _on_measure(self, _):
        if self.benchmarker is None:
            self.start(self.sizes)
        self.submit(force=True)
        self.refresh()

    def records(self):
        """One record per measured step of the trace and runnable target, as measured so far."""
        if self.benchmarker is None:
            return []
        steps = self.session.steps
        out = []
        runnable = self.runnable()[0]
        for k in range(len(steps) + 1):
            key = steps_key(steps[:k])
            for t in runnable:
                rec = self.benchmarker.records.get((key, t))
                if rec is not None:
                    out.append({"step": k, "label": repr(steps[k - 1]) if k else "initial schedule",
                                **rec})
        return out

    def refresh(self, plot=None):
        """Progress line always; the plot and table (``plot=None``: only while the Benchmark tab is
        open, and only when the records changed; ``True``: now)."""
        b = self.benchmarker
        skipped = self.runnable()[1]
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
        tab = self._open_tab()
        if plot is None:          # the plot is drawn for the open Benchmark tab only
            plot = tab == "Benchmark"
        recs = self.records()
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
        if tab == "Roofline" and not pending:
            self._redraw_roofline()


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
            + TABLE + '<tr><th>step</th><th>last primitive</th><th>target</th>'
            '<th>check</th><th>ms</th><th>GFLOP/s</th><th>numpy ms</th><th></th></tr>'
            f"{rows}</table>")
