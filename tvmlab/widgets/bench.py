"""The live benchmark: check each step against numpy, time it, plot it.

``Benchmarker`` owns the inputs (random, never zero), the numpy reference
(values and time) and a worker thread.  ``submit`` queues one step's built
modules and returns at once; the worker checks every runnable target against
numpy (outputs poisoned with NaN first), times it, and reports each record
through ``on_update``, so the notebook stays responsive.  The native calls
release the GIL, so the UI keeps working while a kernel runs.
"""
from __future__ import annotations

import atexit
import io
import math
import queue
import threading
import time
import weakref

import numpy as np

from ..errors import TVMLabError
from ..ir.expr import Var
from ..ir.tensor import PlaceholderOp, Tensor
from ..testing import poison, random_data, tolerance
from .reference import ReferenceError, evaluate, flop_count, shape_vars

DEFAULT_SIZE = 1024      # value given to a symbolic shape variable unless ``sizes`` says otherwise
MIN_REPEAT_MS = 20
REPEAT = 3
SETTLE_S = 0.2           # after timing numpy: OpenBLAS's threads spin ~0.1 s and would slow the kernel's timing


def machine_roofs(measure=True, remeasure=False):
    """This machine's roofs (``tvmlab.bench.machine.Roofs``: FMA peak, memory bandwidth, when and
    how measured), kept per machine in the user's cache folder; None when unknown."""
    from ..bench import machine
    try:
        return machine.remeasure() if remeasure else machine.roofs(measure=measure)
    except Exception:           # a host LLVM cannot target, a bad variable: no roof, never an error
        return None


def machine_peak_gflops(rounds=5, measure=True):
    """(float32 peak GFLOP/s of this CPU, how it was found) or (None, why unknown).

    The same kind of FMA peak ``make bench`` measures (``tvmlab.bench.peak``), measured once per
    machine and kept (``tvmlab.bench.machine``), since the nominal clock says little about a
    boosting or shared CPU.
    """
    from ..bench.machine import _env_figure
    try:
        env = _env_figure("TVMLAB_PEAK_GFLOPS")
    except TVMLabError as e:
        return None, f"peak unknown: {e}"
    if env is not None:                 # given: nothing to measure
        return env, f"peak {env:.0f} GFLOP/s (TVMLAB_PEAK_GFLOPS)"
    return peak_of(machine_roofs(measure=measure))


def peak_of(r):
    """(GFLOP/s or None, note) of Roofs ``r``: the figure, how and when it was found."""
    if r is None or not r.peak_gflops:
        return None, "peak unknown" + (f": {r.peak_method}" if r is not None else "")
    when = f", measured {r.measured_at}" if r.measured_at and r.peak_method != "TVMLAB_PEAK_GFLOPS" else ""
    return r.peak_gflops, f"peak {r.peak_gflops:.0f} GFLOP/s ({r.peak_method}{when})"


def _timeit(fn, min_ms=MIN_REPEAT_MS, repeat=REPEAT):
    fn()
    results = []
    n = 1
    for _ in range(repeat):
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            el = time.perf_counter() - t0
            if el * 1e3 >= min_ms:
                break
            n = max(n + 1, int(math.ceil(n * min_ms / max(el * 1e3, 1e-3) * 1.2)))
        results.append(el / n)
    results.sort()
    return results[len(results) // 2]


class Workload:
    """Inputs, sizes, the numpy reference and the flop count of one computation."""

    def __init__(self, args, outputs, sizes=None, seed=0):
        self.args = list(args)
        self.outputs = list(outputs)
        names = shape_vars([a for a in self.args if isinstance(a, Tensor)])
        names += [a.name for a in self.args if isinstance(a, Var) and a.name not in names]
        self.env = {n: DEFAULT_SIZE for n in names}
        self.env.update(sizes or {})
        self.seed = seed
        self._ref = None
        self._lock = threading.Lock()

    def shape(self, t):
        from .reference import eval_dim
        return tuple(eval_dim(d, self.env) for d in t.shape)

    def inputs(self):
        rng = np.random.default_rng(self.seed)
        return {a: random_data(self.shape(a), a.dtype, rng) for a in self.args
                if isinstance(a, Tensor) and isinstance(a.op, PlaceholderOp)}

    def reference(self):
        """(inputs, {Tensor: expected}, numpy seconds, flops, why no reference or None)."""
        with self._lock:
            if self._ref is None:
                ins = self.inputs()
                try:
                    flops = flop_count(self.outputs, self.env)
                except TVMLabError:
                    flops = None
                try:
                    vals = evaluate(self.outputs, ins, self.env)
                    secs = _timeit(lambda: evaluate(self.outputs, ins, self.env))
                    time.sleep(SETTLE_S)
                    self._ref = (ins, vals, secs, flops, None)
                except ReferenceError as e:
                    self._ref = (ins, None, None, flops, str(e))
            return self._ref

    def size_text(self):
        return ", ".join(f"{k}={v}" for k, v in self.env.items())


def measure(module, target, workload):
    """Check ``module`` against numpy, then time it: one record (a dict)."""
    import tvmlab
    rec = {"target": target, "status": "failed", "time_ms": None, "gflops": None,
           "max_abs_error": None, "message": ""}
    ins, ref, np_secs, flops, why = workload.reference()
    rec["numpy_ms"] = np_secs * 1e3 if np_secs else None
    rec["numpy_gflops"] = flops / np_secs / 1e9 if (np_secs and flops) else None
    rec["flops"] = flops
    dev = tvmlab.device(target)
    if not dev.exist:
        rec.update(status="not runnable", message=f"no {dev.device_type} device on this machine")
        return rec
    call, outs = [], []
    for a in workload.args:
        if isinstance(a, Tensor) and a in ins:
            call.append(tvmlab.nd.array(ins[a], dev))
        elif isinstance(a, Tensor):
            arr = tvmlab.nd.empty(workload.shape(a), a.dtype, dev)
            poison(arr)
            outs.append((a, arr))
            call.append(arr)
        else:
            call.append(workload.env[a.name])
    module(*call)
    dev.sync()
    if ref is None:
        rec["message"] = f"not checked: {why}"
    else:
        worst = 0.0
        for t, arr in outs:
            got, want = arr.numpy(), ref[t]
            rtol, atol = tolerance(t.dtype)
            if rtol:     # reductions reassociate: allow for the summation order
                per_point = (flops or 0) / max(1, got.size)
                rtol, atol = max(rtol, 1e-4), max(atol, 1e-5 * math.sqrt(max(1.0, per_point)))
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            bad = ~(diff <= atol + rtol * np.abs(want.astype(np.float64)))
            worst = max(worst, float(np.nanmax(diff)) if diff.size else 0.0)
            if bad.any():
                rec.update(status="wrong", max_abs_error=worst,
                           message=f"{t.name}: {int(bad.sum())} of {bad.size} elements differ from "
                                   f"numpy (max abs error {worst:.3g})")
                return rec
        rec["max_abs_error"] = worst
    ev = module.time_evaluator(module.entry_name, dev, number=1, repeat=REPEAT,
                               min_repeat_ms=MIN_REPEAT_MS)
    secs = ev(*call).median
    rec.update(status="ok", time_ms=secs * 1e3, gflops=(flops / secs / 1e9) if flops else None)
    return rec


_LIVE = weakref.WeakSet()      # benchmarkers whose worker may be running native code


@atexit.register
def _close_all():
    for b in list(_LIVE):
        b.close()


def failed_record(target, message):
    """The record of a step that could not be built or measured (``message`` says why)."""
    return {"target": target, "status": "failed", "time_ms": None, "gflops": None,
            "max_abs_error": None, "numpy_ms": None, "numpy_gflops": None, "flops": None,
            "message": message}


class BenchmarkerBase:
    """What the views read of a benchmarker, whether it measures on a thread or in a process:
    records by (step key, target), what it measures now, the FMA peak; ``on_update`` is called
    on every change and may never stop the measurements."""

    def __init__(self, workload, on_update=None):
        self.workload = workload
        self.on_update = on_update
        self.records = {}        # (key, target) -> record
        self.current = None      # what the worker is doing, for the progress line
        self.peak = None         # (GFLOP/s or None, note): the CPU's, measured by the worker when its
        #                          queue is first empty (never on the caller's thread; OpenGL has no CPU roof)
        self.bandwidth = None    # (GB/s or None, note): the memory roof, found with the peak
        self.roofs = None        # both, with their date and method (tvmlab.bench.machine.Roofs)

    def _take_roofs(self, r):
        """Keep ``r`` (a Roofs or None) as peak, bandwidth and roofs."""
        self.roofs = r
        self.peak = peak_of(r)
        self.bandwidth = (None, "bandwidth unknown") if r is None else (r.bandwidth_gbs, r.bandwidth_method)

    def remeasure(self):
        """Measure the machine's roofs again (on a thread; the views redraw when done)."""
        def run():
            self.current = "the machine's FMA peak and memory bandwidth"
            self._notify()
            self._take_roofs(machine_roofs(remeasure=True))
            self.current = None
            self._notify()
        t = threading.Thread(target=run, name="tvmlab-roofs", daemon=True)
        t.start()
        return t

    def _notify(self):
        if self.on_update is not None:
            try:
                self.on_update()
            except Exception:
                pass    # a view that fails to refresh must not stop the measurements


class Benchmarker(BenchmarkerBase):
    """A worker thread that measures queued steps; records are keyed by step key and target."""

    def __init__(self, workload, on_update=None):
        super().__init__(workload, on_update)
        self._queue = queue.Queue()
        self._pending = 0
        self._cv = threading.Condition()
        self._thread = None

    # OpenGL contexts belong to the thread that made them: measure those on the caller's thread.
    SAME_THREAD = ("opengl", "gl", "glsl")

    def submit(self, key, label, modules):
        """Queue ``modules`` ({target: Module or an error message}) of step ``key``."""
        todo = [(t, m) for t, m in modules.items() if (key, t) not in self.records]
        here = [(t, m) for t, m in todo if str(t).split()[0] in self.SAME_THREAD]
        todo = [x for x in todo if x not in here]
        for t, m in here:
            self.records[(key, t)] = self._measure(t, m)
        if not todo:
            return
        with self._cv:
            self._pending += len(todo)
        for t, m in todo:
            self._queue.put((key, label, t, m))
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="tvmlab-benchmark", daemon=True)
            self._thread.start()
            _LIVE.add(self)

    @property
    def pending(self):
        return self._pending

    def close(self, timeout=10.0):
        """Stop the worker after what it is measuring now (at exit: native code must not be
        running while the interpreter shuts down)."""
        self._closing = True
        t = self._thread
        if t is not None and t.is_alive() and t is not threading.current_thread():
            t.join(timeout)

    _closing = False

    def _run(self):
        while True:
            if self._closing:
                return
            try:
                key, label, target, mod = self._queue.get(timeout=0.5)
            except queue.Empty:
                if self.peak is not None or self._closing:
                    return
                # the FMA peak (both cores busy for about a second) once nothing else waits
                self.current = "the machine's FMA peak"
                self._notify()
                self._take_roofs(machine_roofs())
                self.current = None
                self._notify()
                continue
            self.current = f"step {label} on {target}"
            self._notify()
            rec = self._measure(target, mod)
            self.records[(key, target)] = rec
            with self._cv:
                self._pending -= 1
                self._cv.notify_all()
            self.current = None
            self._notify()

    def _measure(self, target, mod):
        if isinstance(mod, str):
            return failed_record(target, mod)
        try:
            return measure(mod, target, self.workload)
        except Exception as e:    # a failing step is a record, never a dead worker
            return failed_record(target, f"{type(e).__name__}: {e}")

    def wait(self, timeout=300):
        """Block until every queued measurement is done; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._pending > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
        return True


PLOT_LOCK = threading.RLock()    # matplotlib's text parsing is not thread-safe: one figure at a time


def plotting(fn):
    """Run ``fn`` holding PLOT_LOCK (views are drawn from the notebook and the benchmark threads)."""
    import functools

    @functools.wraps(fn)
    def locked(*a, **kw):
        with PLOT_LOCK:
            return fn(*a, **kw)
    return locked


def figure(width, height):
    """A matplotlib Figure on the Agg canvas (no pyplot: no global state, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=96)
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig):
    """PNG bytes of ``fig``, laid out tight."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


@plotting
def plot_png(records, peak=None, title="", width=7.5, height=3.2):
    """PNG bytes: time (ms) and GFLOP/s per step and target, numpy and peak as lines."""
    fig = figure(width, height)
    ax_t, ax_g = fig.subplots(1, 2)
    targets = []
    for r in records:
        if r["target"] not in targets:
            targets.append(r["target"])
    steps = sorted({r["step"] for r in records})
    np_ms = next((r["numpy_ms"] for r in records if r.get("numpy_ms")), None)
    np_gf = next((r["numpy_gflops"] for r in records if r.get("numpy_gflops")), None)
    for t in targets:
        pts = [(r["step"], r["time_ms"], r["gflops"]) for r in records
               if r["target"] == t and r["status"] == "ok"]
        if pts:
            xs = [p[0] for p in pts]
            ax_t.plot(xs, [p[1] for p in pts], "o-", label=t)
            if any(p[2] for p in pts):
                ax_g.plot(xs, [p[2] or float("nan") for p in pts], "o-", label=t)
        bad = [r["step"] for r in records if r["target"] == t and r["status"] == "wrong"]
        if bad:
            ax_t.plot(bad, [np_ms or 1] * len(bad), "rx", label=f"{t}: wrong result")
    if np_ms:
        ax_t.axhline(np_ms, color="gray", ls="--", label="numpy")
    if np_gf:
        ax_g.axhline(np_gf, color="gray", ls="--", label="numpy")
    if peak:
        ax_g.axhline(peak, color="#c92a2a", ls=":", label="machine peak")
    ax_t.set_ylabel("time per call (ms)")
    ax_g.set_ylabel("GFLOP/s")
    if any(r.get("time_ms") for r in records):
        ax_t.set_yscale("log")
    for ax in (ax_t, ax_g):
        ax.set_xlabel("step")
        if steps:
            ax.set_xticks(steps)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return figure_png(fig)
