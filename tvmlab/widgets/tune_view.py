"""The explorer's Tune tab: the auto-scheduler searching this computation, live.

``ex.tune(n_trial=64, tuner="xgb")`` starts a search in a background thread
(the notebook stays responsive; ``stop`` ends it after the batch being
measured).  The tab plots every trial's GFLOP/s and the best so far against
the trial number, and the cost model's predicted rank of each measured batch
against the measured rank.  The knobs of the best state (sketch, tile sizes,
parallel / vectorize / unroll) are widgets: pick values by hand within the
space and "apply knobs"; "adopt best" puts the best state's schedule into the
explorer's trace (undo goes back).
"""
from __future__ import annotations

import html
import json
import threading

import ipywidgets as W

from ..errors import TVMLabError
from .bench import figure, figure_png, plotting
from .explorer_trace import click_handler

TUNERS = ("xgb", "random")


class TuneError(TVMLabError, ValueError):
    """A tune that cannot start (bad options, one already running) or a knob value outside the space."""


def _ranks(values):
    order = sorted(range(len(values)), key=lambda i: -values[i])
    r = [0] * len(values)
    for k, i in enumerate(order):
        r[i] = k + 1
    return r


@plotting
def plot_png(history, rank_pairs, width=7.5, height=3.0):
    """PNG bytes: GFLOP/s per trial with the best so far; predicted vs measured rank."""
    fig = figure(width, height)
    ax, ax_r = fig.subplots(1, 2)
    if history:
        xs = [h[0] for h in history]
        ax.plot(xs, [h[1] for h in history], ".", color="#868e96", label="trial")
        ax.plot(xs, [h[2] for h in history], "-", color="#1971c2", label="best so far")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel("trial")
    ax.set_ylabel("GFLOP/s")
    if rank_pairs:
        ax_r.plot([p[0] for p in rank_pairs], [p[1] for p in rank_pairs], "o", ms=3, alpha=0.6)
        n = max(max(p) for p in rank_pairs)
        ax_r.plot([1, n], [1, n], ":", color="gray")
    ax_r.set_xlabel("predicted rank in batch")
    ax_r.set_ylabel("measured rank")
    return figure_png(fig)


class TuneView(W.VBox):
    """The Tune tab of one Explorer (see the module docstring)."""

    def __init__(self, explorer):
        self.explorer = explorer
        self.task = self.policy = None
        self._thread = None
        self.rank_pairs = []
        self.error = None
        self.n_trial = W.BoundedIntText(value=64, min=1, max=100000, description="trials",
                                        layout=W.Layout(width="160px"))
        self.tuner = W.Dropdown(options=list(TUNERS), value="xgb", description="model",
                                layout=W.Layout(width="170px"))
        self.start_button = W.Button(description="tune", icon="play")
        self.stop_button = W.Button(description="stop", icon="stop", disabled=True)
        self.adopt_button = W.Button(description="adopt best", icon="check", disabled=True)
        self.apply_knobs_button = W.Button(description="apply knobs", icon="sliders", disabled=True)
        self.status = W.HTML("<i>not tuned yet: the auto-scheduler searches schedules of this "
                             "computation from its definition alone</i>")
        self.plot = W.Image(format="png")
        self.knobs = W.VBox()
        self.start_button.on_click(
            click_handler(lambda: self.start(self.n_trial.value, self.tuner.value)))
        self.stop_button.on_click(click_handler(self.stop))
        self.adopt_button.on_click(click_handler(self.adopt_best))
        self.apply_knobs_button.on_click(click_handler(self.apply_knobs))
        super().__init__([W.HBox([self.n_trial, self.tuner, self.start_button, self.stop_button,
                                  self.adopt_button]), self.status, self.plot,
                          W.HTML("<b>knobs</b> (of the best state; change and apply)"), self.knobs,
                          self.apply_knobs_button])

    def _fail(self, e):
        self.error = str(e)
        self.status.value = f'<span style="color:#c92a2a"><b>{type(e).__name__}:</b> {html.escape(str(e))}</span>'

    # ------------------------------------------------------------ tuning
    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    def start(self, n_trial=64, tuner="xgb", builder="local", runner="local", per_round=8, seed=0,
              log_file=None):
        """Start searching in the background; returns this view (``wait()`` joins)."""
        from .. import auto_scheduler as A
        try:
            if self.running:
                raise TuneError("a tune is already running; stop() it first")
            if tuner not in TUNERS:
                raise TuneError(f"tuner must be one of {TUNERS}, got {tuner!r}")
            if isinstance(n_trial, bool) or not isinstance(n_trial, int) or n_trial < 1:
                raise TuneError(f"n_trial must be an int >= 1, got {n_trial!r}")
            args = [a for a in self.explorer.session.args]
            self.task = A.SearchTask(compute_dag=A.ComputeDAG(args), target="llvm")
            model = A.XGBModel(num_warmup_sample=min(16, n_trial), seed=seed) if tuner == "xgb" \
                else A.RandomModel(seed=seed)
            self.policy = A.SketchPolicy(self.task, model, seed=seed, verbose=0,
                                         params={"population_size": 128, "num_generations": 3})
            cbs = [self._on_batch] + ([A.RecordToFile(log_file)] if log_file else [])
            self.options = A.TuningOptions(num_measure_trials=n_trial, num_measures_per_round=per_round,
                                           verbose=0, builder=builder, runner=runner, measure_callbacks=cbs)
        except TVMLabError as e:
            self._fail(e)
            raise
        self.rank_pairs, self.error = [], None
        self.status.value = f"tuning: 0/{n_trial} trials"
        self.start_button.disabled, self.stop_button.disabled = True, False
        self._thread = threading.Thread(target=self._work, name="tvmlab-tune", daemon=True)
        self._thread.start()
        return self

    def _work(self):
        try:
            self.task.tune(self.options, search_policy=self.policy)
            done = "stopped" if self.policy.stopped else "done"
            self.status.value = f"{done}: {self._summary()}"
        except Exception as e:  # noqa: BLE001 - any failure is shown, the notebook goes on
            self._fail(e)
        finally:
            self.start_button.disabled, self.stop_button.disabled = False, True

    def _summary(self):
        p = self.policy
        best = p.history[-1][2] if p.history else 0.0
        return f"{len(p.history)}/{self.options.num_measure_trials} trials, best {best:.2f} GFLOP/s"

    def _on_batch(self, policy, inputs, results):
        from ..auto_scheduler.search import _key
        pred = [policy.predicted.get(_key(i.state)) for i in inputs]
        meas = [policy.measured.get(_key(i.state), 0.0) for i in inputs]
        keep = [k for k, p in enumerate(pred) if p is not None]
        if len(keep) > 1:
            self.rank_pairs += list(zip(_ranks([pred[k] for k in keep]), _ranks([meas[k] for k in keep])))
        self.status.value = f"tuning: {self._summary()}"
        self.plot.value = plot_png(policy.history, self.rank_pairs)
        if policy.best_state is not None:
            self.adopt_button.disabled = False
            self._show_knobs(policy.best_state)

    def stop(self):
        """Stop after the batch being measured."""
        if self.policy is not None:
            self.policy.stop()
        return self

    def wait(self, timeout=None):
        """Wait for the background search to end; True if it has."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    @property
    def history(self):
        """``[(trial, GFLOP/s, best GFLOP/s so far)]``."""
        return list(self.policy.history) if self.policy else []

    # ------------------------------------------------------------ results into the explorer
    def _adopt(self, state, what):
        s, _ = self.task.instantiate(state)
        self.explorer.load_session({"format": "tvmlab-session", "version": 1,
                                    "steps": [dict(st) for st in s.trace.steps]})
        self.status.value = f"{what} adopted into the trace ({len(s.trace.steps)} steps)"
        return self.explorer

    def adopt_best(self):
        """Put the best state's schedule into the explorer's trace."""
        if self.policy is None or self.policy.best_state is None:
            e = TuneError("nothing measured yet: run ex.tune(...) first")
            self._fail(e)
            raise e
        return self._adopt(self.policy.best_state, "the best state")

    def _show_knobs(self, state):
        if self.running and self.knobs.children and getattr(self, "_knob_state", None) == json.dumps(state):
            return
        from ..auto_scheduler.sketch import UNROLL_STEPS, divisors
        dag = self.task.dag
        self._knob_state, rows, self._knob_widgets = json.dumps(state), [], {}
        for name in dag.tiled:
            modes = ["tile", "cache_write"] + (["fuse"] if name in dag.fusable else [])
            w = W.Dropdown(options=modes, value=state["sketch"][name], description=f"{name}",
                           layout=W.Layout(width="220px"))
            self._knob_widgets[("sketch", name)] = w
            row = [w]
            for kind, exts in (("S", dag.spatial(name)), ("R", dag.reduce(name))):
                for k, e in enumerate(exts):
                    for lv, f in enumerate(state["tiles"][name][kind][k]):
                        d = W.Dropdown(options=divisors(e), value=f, description=f"{kind}{k}.{lv + 1}",
                                       layout=W.Layout(width="120px"), style={"description_width": "42px"})
                        self._knob_widgets[("tile", name, kind, k, lv)] = d
                        row.append(d)
            rows.append(W.HBox(row, layout=W.Layout(flex_flow="row wrap")))
        for name, a in state["ann"].items():
            n = len(dag.spatial(name))
            par = W.BoundedIntText(value=a["parallel"], min=0, max=max(1, n), description="parallel",
                                   layout=W.Layout(width="160px"))
            vec = W.Checkbox(value=a["vectorize"], description="vectorize", indent=False)
            unr = W.Dropdown(options=list(UNROLL_STEPS), value=a["unroll"], description="unroll",
                             layout=W.Layout(width="160px"))
            self._knob_widgets[("ann", name)] = (par, vec, unr)
            rows.append(W.HBox([W.Label(name), par, vec, unr]))
        self.knobs.children = rows
        self.apply_knobs_button.disabled = False

    def knob_state(self):
        """The state the knob widgets describe."""
        state = json.loads(self._knob_state)
        for key, w in self._knob_widgets.items():
            if key[0] == "sketch":
                state["sketch"][key[1]] = w.value
            elif key[0] == "tile":
                _, name, kind, k, lv = key
                state["tiles"][name][kind][k][lv] = int(w.value)
            else:
                par, vec, unr = w
                state["ann"][key[1]] = {"parallel": int(par.value), "vectorize": bool(vec.value),
                                        "unroll": int(unr.value)}
        return state

    def apply_knobs(self):
        """Adopt the state the knobs describe (an invalid combination is reported, nothing changes)."""
        if not getattr(self, "_knob_widgets", None):
            e = TuneError("no knobs yet: run ex.tune(...) first")
            self._fail(e)
            raise e
        from ..auto_scheduler.sketch import check_state
        state = self.knob_state()
        try:
            check_state(self.task.dag, state)
        except TVMLabError as e:
            self._fail(e)
            raise
        return self._adopt(state, "the knobs' state")


def tune(explorer, n_trial=64, tuner="xgb", **options):
    """``explorer.tune``: start a search in the explorer's Tune tab and show the tab."""
    view = explorer.tune_view
    view.start(n_trial, tuner, **options)
    tabs = explorer._tabs
    tabs.selected_index = list(tabs.children).index(view)
    return view
