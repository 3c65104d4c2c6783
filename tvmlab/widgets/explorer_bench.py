"""The Explorer's Benchmark tab: live measurements of every step against numpy, and ``tune``.

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


class BenchmarkPanel:
    """Mixin of ``Explorer``: the live benchmark, its records and the Tune entry point."""

    def _build_bench_page(self):
        """The Benchmark page: live switch, measure button, progress, plot and table."""
        self.bench_progress = W.IntProgress(min=0, max=1, value=0, description="benchmark")
        self.bench_label = W.Label()
        self.bench_plot = W.Image(format="png")
        self.bench_table = W.HTML()
        self.live_benchmark = W.Checkbox(description="live benchmark of every step", value=True)
        self.measure_button = W.Button(description="measure this step", icon="clock-o",
                                   layout=W.Layout(width="auto", flex="0 0 auto"))
        self.live_benchmark.observe(self._on_live, names="value")
        self.measure_button.on_click(self._on_measure)
        bench_page = W.VBox([W.HBox([self.live_benchmark, self.measure_button]),
                             W.HBox([self.bench_progress, self.bench_label]),
                             self.bench_plot, self.bench_table])
        return bench_page

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
        tab = self._open_tab()
        if plot is None:          # the plot is drawn for the open Benchmark tab only
            plot = tab == "Benchmark"
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
        if tab == "Roofline" and not pending:
            with self._lock:      # from the benchmark thread: never while an apply is lowering
                self._draw_panel("Roofline", force=True)



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
