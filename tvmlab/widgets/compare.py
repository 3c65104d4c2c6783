"""A/B comparison of two schedules of one computation: traces, AST3 and code diffs, both timed.

    cmp = tvmlab.compare(s1, s2, [A, B, C])      # shows itself in a notebook
    cmp.records                                  # one benchmark record per side and target
    cmp.speedup("llvm")                          # time(A) / time(B)

Both sides are checked against numpy on the same random inputs and timed in
the same process, one after the other, and drawn on one plot (time per call
and a roofline).  Nothing here needs ipywidgets.
"""
from __future__ import annotations

import html

from ..errors import ScheduleError, TVMLabError
from .bench import Workload, figure, figure_png, machine_peak_gflops, measure, plotting
from .colors import TABLE
from .diff import diff_html, diff_stats
from .session import Session, target_kind


class Comparison:
    """Two schedules side by side (``a`` and ``b``: their Sessions)."""

    def __init__(self, s1, s2, args, targets=None, sizes=None, benchmark=True, labels=("A", "B")):
        if s1 is s2:
            raise ScheduleError("compare needs two different schedules (got the same object twice)")
        self.a = Session(s1, args, targets)
        self.b = Session(s2, args, targets)
        if [t.name for t in self.a.ops] != [t.name for t in self.b.ops] and \
                [o.name for o in self.a.ops] != [o.name for o in self.b.ops]:
            raise ScheduleError(f"compare: the schedules compute different outputs "
                                f"({[o.name for o in self.a.ops]} vs {[o.name for o in self.b.ops]})")
        self.labels = tuple(labels)
        self.targets = list(self.a.targets)
        self.workload = Workload(self.a.args, self.a.ops, sizes)
        self.records = []
        self.peak = None
        if benchmark:
            self.run()

    # ------------------------------------------------------------ data
    @property
    def traces(self):
        return self.a.as_python(), self.b.as_python()

    def ast3_diff(self):
        return diff_html(self.a.text("AST3"), self.b.text("AST3"), "AST3: A → B")

    def code_diff(self, target=None):
        t = target or self.targets[0]
        fmt = "ll" if target_kind(t) == "llvm" else None
        try:
            old, new = self.a.source(t, fmt), self.b.source(t, fmt)
        except TVMLabError as e:
            return f'<div style="color:#868e96">no code for {html.escape(t)}: {html.escape(str(e))}</div>'
        return diff_html(old, new, f"{t} code: A → B")

    def run(self):
        """Check and time both sides on every runnable target (same inputs, one after the other)."""
        import tvmlab
        self.records = []
        for t in self.targets:
            try:
                runnable = tvmlab.device(target_kind(t)).exist
            except TVMLabError:
                runnable = False
            for label, side in zip(self.labels, (self.a, self.b)):
                rec = {"side": label, "target": t}
                if not runnable:
                    rec.update(status="not runnable", time_ms=None, gflops=None,
                               message=f"no device for {t} here")
                else:
                    try:
                        rec.update(measure(side.current.module(t), t, self.workload))
                    except TVMLabError as e:
                        rec.update(status="failed", time_ms=None, gflops=None, message=str(e))
                rec["side"] = label
                self.records.append(rec)
        if any(r.get("status") == "ok" for r in self.records):
            try:
                self.peak = machine_peak_gflops(rounds=1)[0]
            except Exception:     # no roof on the plot, never an error
                self.peak = None
        return self.records

    def speedup(self, target=None):
        """time(A) / time(B) on ``target`` (> 1: B is faster), or None if either did not run."""
        t = target or self.targets[0]
        ta = next((r["time_ms"] for r in self.records if r["target"] == t and
                   r["side"] == self.labels[0] and r.get("status") == "ok"), None)
        tb = next((r["time_ms"] for r in self.records if r["target"] == t and
                   r["side"] == self.labels[1] and r.get("status") == "ok"), None)
        return ta / tb if ta and tb else None

    def roofline_points(self):
        from ..analysis.roofline import kernel_counts
        pts = []
        for label, side in zip(self.labels, (self.a, self.b)):
            try:
                c = kernel_counts(side.current.lowered, self.a.args, self.workload.env)
            except TVMLabError:
                continue
            for r in self.records:
                if r["side"] == label and r.get("status") == "ok" and r.get("time_ms"):
                    pts.append({"label": label, "series": r["target"],
                                "intensity": c.intensity,
                                "gflops": c.flops / (r["time_ms"] * 1e-3) / 1e9})
        return pts

    @plotting
    def plot_png(self):
        """One figure: time per call of both sides per target, next to their roofline."""
        fig = figure(9.0, 3.2)
        ax_t, ax_r = fig.subplots(1, 2)
        ok = [r for r in self.records if r.get("status") == "ok"]
        names = [f"{r['side']} · {r['target']}" for r in ok]
        colors = ["#74c0fc" if r["side"] == self.labels[0] else "#ffc078" for r in ok]
        ax_t.barh(names, [r["time_ms"] for r in ok], color=colors, edgecolor="#495057")
        np_ms = next((r.get("numpy_ms") for r in ok if r.get("numpy_ms")), None)
        if np_ms:
            ax_t.axvline(np_ms, color="gray", ls="--", label="numpy")
            ax_t.legend(fontsize=7)
        times = [r["time_ms"] for r in ok]
        if times and max(times) > 20 * min(times):
            ax_t.set_xscale("log")
        ax_t.set_xlabel("time per call (ms)")
        ax_t.invert_yaxis()
        pts = self.roofline_points()
        for p in pts:
            c = "#1c7ed6" if p["label"] == self.labels[0] else "#e8590c"
            ax_r.loglog([p["intensity"]], [p["gflops"]], "o", color=c, ms=7)
            ax_r.annotate(f"{p['label']} · {p['series']}", (p["intensity"], p["gflops"]),
                          textcoords="offset points", xytext=(4, 4), fontsize=7)
        if self.peak:
            ax_r.axhline(self.peak, color="#c92a2a", ls=":", label="FMA peak")
            ax_r.legend(fontsize=7)
        ax_r.set_xlabel("flops / distinct byte")
        ax_r.set_ylabel("GFLOP/s")
        ax_r.grid(alpha=0.3, which="both")
        return figure_png(fig)

    # ------------------------------------------------------------ display
    def html(self):
        from .analysis_views import png_img
        ta, tb = self.traces
        sa, sb = diff_stats(self.a.text("AST3"), self.b.text("AST3"))
        sp = self.speedup()
        head = (f"<b>A/B</b>: {html.escape(', '.join(self.targets))}, sizes "
                f"{html.escape(self.workload.size_text() or 'fixed')}"
                + (f" · B is <b>{sp:.2f}x</b> {'faster' if sp >= 1 else 'slower'} than A on "
                   f"{html.escape(self.targets[0])}" if sp else ""))
        rows = "".join(
            f"<tr><td>{html.escape(r['side'])}</td><td>{html.escape(r['target'])}</td>"
            f"<td>{html.escape(str(r.get('status')))}</td>"
            f"<td>{'' if r.get('time_ms') is None else format(r['time_ms'], '.3f')}</td>"
            f"<td>{'' if r.get('gflops') is None else format(r['gflops'], '.2f')}</td>"
            f"<td>{html.escape(r.get('message') or '')}</td></tr>" for r in self.records)
        plot = png_img(self.plot_png(), "A/B benchmark") if any(
            r.get("status") == "ok" for r in self.records) else ""
        traces = "".join(
            f'<div style="flex:1;min-width:0"><b>{lab}</b><pre style="font-size:11px;'
            f'background:#f8f9fa;padding:4px;white-space:pre-wrap">{html.escape(t)}</pre></div>'
            for lab, t in zip(self.labels, (ta, tb)))
        return (f'<div class="tvmlab-compare" style="font-size:12px"><div>{head}</div>'
                f'<div style="display:flex;gap:8px">{traces}</div>'
                f'{TABLE}<tr><th>side</th><th>target</th><th>check</th>'
                f'<th>ms</th><th>GFLOP/s</th><th></th></tr>{rows}</table>{plot}'
                f'<div>AST3: +{sa} −{sb} lines</div>{self.ast3_diff()}{self.code_diff()}</div>')

    def _repr_html_(self):
        return self.html()

    def __repr__(self):
        sp = self.speedup()
        return (f"Comparison({len(self.a.steps)} vs {len(self.b.steps)} steps"
                + (f", B {sp:.2f}x vs A on {self.targets[0]}" if sp else "") + ")")


def compare(s1, s2, args, targets=None, sizes=None, benchmark=True):
    """Compare two schedules of the same computation: see ``Comparison``."""
    return Comparison(s1, s2, args, targets=targets, sizes=sizes, benchmark=benchmark)
