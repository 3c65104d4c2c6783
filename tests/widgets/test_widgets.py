"""The explorer: Python API, driving the widget's controls, views, code panes, benchmark."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
pytest.importorskip("graphviz")

import tvmlab  # noqa: E402
from tvmlab import te  # noqa: E402
from tvmlab.errors import TVMLabError  # noqa: E402
from tvmlab.widgets import choices  # noqa: E402
from tvmlab.widgets.bench import Workload, measure, plot_png  # noqa: E402
from tvmlab.widgets.colors import KIND_COLORS  # noqa: E402
from tvmlab.widgets.diff import diff_html, diff_lines  # noqa: E402
from tvmlab.widgets.graph import MAX_SEQ_SHOWN, dot_missing_reason, stmt_graph  # noqa: E402
from tvmlab.widgets.reference import evaluate, flop_count  # noqa: E402


def vadd():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return te.create_schedule(C.op), [A, B, C]


def matmul(n=37, m=29, k=23):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_schedule(C.op), [A, B, C]


def test_apply_undo_redo_reset_and_python():
    s, args = vadd()
    ex = tvmlab.explore(s, args, benchmark=False)
    before = ex.text("AST2")
    ex.apply("split", stage="C", axis="i", factor=64)
    ex.apply("vectorize", stage="C", axis="i.inner")
    assert "T.vectorized(64)" in ex.text("AST2") and ex.text("AST2") != before
    assert [st.primitive for st in ex.trace] == ["split", "vectorize"]
    assert ex.last_latency_ms is not None and len(ex.latencies) == 3
    code = ex.as_python()
    A, B, C = args
    ns = {"te": te, "A": A, "B": B, "C": C}
    exec(code, ns)
    assert ns["s"].trace.steps == ex.trace.steps
    ex.undo()
    assert "vectorized" not in ex.text("AST2") and "i.outer" in ex.text("AST2")
    ex.redo()
    assert "T.vectorized(64)" in ex.text("AST2")
    ex.reset()
    assert ex.text("AST2") == before and len(ex.trace) == 0
    ex.redo()
    ex.redo()
    assert len(ex.trace) == 2
    with pytest.raises(TVMLabError, match="nothing to redo"):
        ex.redo()
    # the original schedule object is left as it was
    assert len(s.trace) == 0


def test_panels_own_their_widgets_and_state():
    """Each panel holds its widgets and state; the Explorer names the widgets as before and shares
    only the session with them."""
    s, args = vadd()
    ex = tvmlab.explore(s, args, benchmark=False)
    panels = (ex.trace_panel, ex.views_panel, ex.analysis_panel, ex.bench_panel)
    assert all(p.session is ex.session for p in panels)
    for p in panels:
        for name in p.WIDGETS:
            assert getattr(ex, name) is getattr(p, name), name
    assert ex.bench_panel.benchmarker is None and ex.analysis_panel.pinned is None
    ex.controls["stage"].value = "C"
    ex.controls["primitive"].value = "split"
    ex.controls["params"]["axis"].value = "i"
    ex.controls["apply"].click()                          # the trace panel's button: the Explorer's apply
    assert [st.primitive for st in ex.trace] == ["split"] and "C: split" in ex.trace_view.value
    ex.pin_button.click()                                 # the analysis panel's button and state
    assert len(ex.analysis_panel.pinned) == 1 and ex.pin_label.value == "pinned: step 1"
    assert json.loads(ex.save_session())["pinned"] == ex.analysis_panel.pinned
    ex.undo_button.click()
    assert len(ex.trace) == 0 and ex.form_kwargs()["stage"] == "C"


def test_failed_apply_changes_nothing_and_shows_message():
    s, args = vadd()
    ex = tvmlab.explore(s, args, benchmark=False)
    ex.apply("split", stage="C", axis="i", factor=8)
    text, steps = ex.text("AST2"), list(ex.trace.steps)
    for bad in [dict(primitive="split", stage="C", axis="nope", factor=4),
                dict(primitive="split", stage="C", axis="i.inner", factor=0),
                dict(primitive="fuse", stage="C", axes=["i.inner", "i.outer"]),
                dict(primitive="teleport", stage="C"),
                dict(primitive="split", stage="Z", axis="i", factor=2),
                dict(primitive="vectorize", stage="C")]:
        with pytest.raises(TVMLabError) as info:
            ex.apply(**bad)
        assert ex.text("AST2") == text and list(ex.trace.steps) == steps
        assert "tvmlab-error" in ex._status.value
        assert ex.error == str(info.value)
    assert "nope" in str(pytest.raises(TVMLabError, ex.apply, "split", stage="C", axis="nope",
                                       factor=4).value)


def test_named_primitives_and_numpy_check():
    s, args = matmul()
    ex = tvmlab.explore(s, args, benchmark=False)
    ex.apply("cache_write", stage="C", scope="local")
    ex.apply("tile", stage="C", axes=("i", "j"), factors=(8, 5))
    ex.apply("split", stage="C.local", axis="k", factor=4)
    ex.apply("reorder", stage="C.local", axes=["k.outer", "i", "k.inner", "j"])
    ex.apply("compute_at", stage="C.local", parent="C", axis="j.outer")
    ex.apply("unroll", stage="C.local", axis="k.inner")
    ex.apply("parallel", stage="C", axis="i.outer")
    assert "computed at C.j.outer" in ex.text("AST1")
    wl = Workload(args, ex.session.ops)
    rec = measure(ex.session.current.module("llvm"), "llvm", wl)
    assert rec["status"] == "ok", rec
    assert rec["flops"] == 2 * 37 * 29 * 23
    code = ex.as_python()
    A, B, C = args
    ns = {"te": te, "A": A, "B": B, "C": C}
    exec(code, ns)
    f = tvmlab.build(ns["s"], args)
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (37, 23)).astype("float32")
    b = rng.uniform(-1, 1, (23, 29)).astype("float32")
    c = tvmlab.nd.array(np.full((37, 29), np.nan, "float32"))
    f(tvmlab.nd.array(a), tvmlab.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_wrong_kernel_is_caught():
    s, args = vadd()
    A, B, C = args
    D = te.compute(A.shape, lambda i: A[i] - B[i], name="C")
    wrong = tvmlab.build(te.create_schedule(D.op), [A, B, D])
    rec = measure(wrong, "llvm", Workload(args, [C.op], {"n": 100}))
    assert rec["status"] == "wrong" and "differ from numpy" in rec["message"]


def test_widget_controls_drive_the_explorer():
    s, args = matmul()
    ex = tvmlab.explore(s, args, benchmark=False)
    c = ex.controls
    assert c["stage"].value == "C"
    assert "split" in c["primitive"].options and "vectorize" in c["primitive"].options
    c["primitive"].value = "split"
    p = ex.controls["params"]
    p["axis"].value = "j"
    p["mode"].value = "factor"
    p["amount"].value = 7           # does not divide 29
    before = ex.text_views["AST2"].value
    graph_before = ex.graph_views["AST2"].value
    c["apply"].click()
    assert ex.error is None
    assert ex.text_views["AST2"].value != before and "j.inner" in ex.text_views["AST2"].value
    assert ex.wait_graphs()                     # laid out on a background thread
    if dot_missing_reason() is None:
        assert "<svg" in ex.graph_views["AST2"].value
        assert ex.graph_views["AST2"].value != graph_before
    assert "tvmlab-add" in ex.text_views["AST2"].value          # the change is highlighted
    # vectorize offers only data-parallel serial axes
    c["primitive"].value = "vectorize"
    assert set(ex.controls["params"]["axis"].options) == {"i", "j.outer", "j.inner"}
    ex.controls["params"]["axis"].value = "j.inner"
    c["apply"].click()
    assert "T.vectorized(7)" in ex.text("AST2")
    # a marked axis is no longer offered for splitting
    c["primitive"].value = "split"
    assert "j.inner" not in ex.controls["params"]["axis"].options
    # reorder through "move axis to position"
    c["primitive"].value = "reorder"
    ex.controls["params"]["axis"].value = "k"
    ex.controls["params"]["position"].value = 0
    c["apply"].click()
    assert [iv.var.name for iv in ex.schedule["C"].leaf_iter_vars][0] == "k"
    # undo / redo / reset buttons
    c["undo"].click()
    assert [iv.var.name for iv in ex.schedule["C"].leaf_iter_vars][0] == "i"
    c["redo"].click()
    assert len(ex.trace) == 3
    c["copy"].click()
    assert "s[C].split(" in ex.code_box.value and ex.code_box.layout.display != "none"
    c["reset"].click()
    assert len(ex.trace) == 0 and ex.controls["undo"].disabled
    # a failing choice from the controls shows the message and changes nothing
    c["primitive"].value = "split"
    ex.controls["params"]["mode"].value = "nparts"
    ex.controls["params"]["amount"].value = 3
    c["apply"].click()
    assert len(ex.trace) == 1 and ex.schedule["C"].leaf_iter_vars[0].var.name == "i.outer"


def test_compute_at_choices_and_tabs():
    A = te.placeholder((40,), name="A")
    B = te.compute((40,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((40,), lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    ex = tvmlab.explore(s, [A, C], benchmark=False)
    ex.controls["stage"].value = "B"
    prims = ex.controls["primitive"].options
    assert "compute_at" in prims and "compute_inline" in prims
    ex.controls["stage"].value = "A"
    assert ex.controls["primitive"].options == ("cache_read",)
    ex.controls["stage"].value = "C"
    assert "compute_at" not in ex.controls["primitive"].options     # C is an output
    ex.apply("split", stage="C", axis="i", factor=16)
    ex.controls["stage"].value = "B"
    ex.controls["primitive"].value = "compute_at"
    assert ex.controls["params"]["parent"].options == ("C",)
    assert set(ex.controls["params"]["scope"].options) == {"i.outer", "i.inner"}
    ex.controls["params"]["scope"].value = "i.outer"
    ex.controls["apply"].click()
    assert "computed at C.i.outer" in ex.text("AST1")
    assert choices.valid_primitives(ex.schedule, "B")[:1] == ["split"]
    ex.controls["tabs"].selected_index = 0          # AST1 graph drawn on opening its tab
    assert ex.wait_graphs()
    if dot_missing_reason() is None:
        assert "<svg" in ex.graph_views["AST1"].value


def test_graphs_colour_kinds_and_collapse():
    s, args = vadd()
    ex = tvmlab.explore(s, args, benchmark=False)
    ex.apply("split", stage="C", axis="i", factor=4)
    ex.apply("vectorize", stage="C", axis="i.inner")
    g = ex.graph("AST2")
    assert KIND_COLORS["vectorized"] in g.source
    assert "penwidth" in g.source          # new nodes outlined
    assert set(ex.graph("ast1").keys) >= {"in:A", "in:B", "out:C"}
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s2 = te.create_schedule(B.op)
    s2[B].unroll(B.op.axis[0])
    lowered = tvmlab.lower(s2, [A, B])
    g3 = stmt_graph(lowered["main"], "AST3")
    assert "64 - " not in g3.source and f"… {64 - MAX_SEQ_SHOWN} more statements" in g3.source
    with pytest.raises(TVMLabError, match="unknown level"):
        ex.graph("AST4")


def test_code_panes_and_unregistered_targets():
    s, args = vadd()
    ex = tvmlab.explore(s, args, targets=["llvm", "cuda", "opengl"], benchmark=False)
    assert "define" in ex.source("llvm")
    assert ex.source("llvm", "asm").strip()
    assert ex.code_views.children == ()           # built only once the Code tab is opened
    ex.controls["tabs"].selected_index = 3
    panes = [w.value for w in ex.code_views.children]
    assert "LLVM IR (llvm)" in panes[0] and "assembly (llvm)" in panes[1]
    registered = tvmlab.codegen.list_targets()
    # CUDA: its C, the PTX and the resources; OpenGL: the GLSL
    assert ["CUDA C (cuda)" in panes[2], "PTX (cuda)" in panes[3], "occupancy (cuda)" in panes[4]] == [True] * 3
    for kind, pane in zip(("cuda", "cuda", "cuda", "opengl"), panes[2:]):
        if kind not in registered:
            assert "is not registered" in pane
            with pytest.raises(TVMLabError, match="not registered"):
                ex.source(kind)
        else:
            assert "no code" in pane or "tvmlab-code" in pane


def test_live_benchmark_records_and_plot():
    s, args = matmul(24, 20, 18)
    ex = tvmlab.explore(s, args)
    ex.wait()                                      # the initial schedule, in the worker process
    ex.apply("split", stage="C", axis="j", factor=6)
    ex.apply("vectorize", stage="C", axis="j.inner")   # cancels step 1 if it was not done yet
    recs = ex.benchmarks
    assert [r["step"] for r in recs][0] == 0 and recs[-1]["step"] == 2
    assert all(r["status"] == "ok" and r["time_ms"] > 0 and r["numpy_ms"] > 0 for r in recs), recs
    assert recs[-1]["label"].startswith("C: vectorize") and recs[-1]["build_ms"] > 0
    ex.undo()
    assert [r["step"] for r in ex.benchmarks] == [0, 1]
    recs = ex.benchmarks + [r for r in recs if r["step"] == 2]
    ex.bench_panel.refresh(plot=True)
    assert ex.bench_plot.value[:4] == b"\x89PNG"
    assert "GFLOP/s" in ex.bench_table.value
    assert plot_png(recs, peak=100.0, title="t")[:4] == b"\x89PNG"
    # the plot's peak line is the FMA peak make bench measures, found by the benchmark thread
    deadline = time.monotonic() + 60          # measured once the worker has nothing else to do
    while ex.bench_panel.benchmarker.peak is None and time.monotonic() < deadline:
        time.sleep(0.1)
    peak, how = ex.bench_panel.benchmarker.peak
    ex.bench_panel.refresh(plot=True)
    assert peak > max(r["gflops"] for r in recs) and "measured" in how and how in ex.bench_table.value


def test_peak_override(monkeypatch):
    from tvmlab.widgets.bench import machine_peak_gflops
    monkeypatch.setenv("TVMLAB_PEAK_GFLOPS", "123.5")
    assert machine_peak_gflops() == (123.5, "peak 124 GFLOP/s (TVMLAB_PEAK_GFLOPS)")


def test_symbolic_sizes_for_benchmark():
    s, args = vadd()
    ex = tvmlab.explore(s, args, sizes={"n": 1001})
    ex.apply("split", stage="C", axis="i", factor=64)
    recs = ex.benchmarks
    assert recs and all(r["status"] == "ok" for r in recs), recs
    assert recs[0]["flops"] == 1001


def test_reference_evaluator_against_numpy():
    rng = np.random.default_rng(3)
    n = te.var("n")
    A = te.placeholder((n, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    M = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="M")
    P = te.compute((n, 6), lambda i, j: te.if_then_else(j > 0, A[i, j - 1], 0.0) + te.exp(A[i, j])
                   - M[i], name="P")
    a = rng.uniform(-1, 1, (9, 6)).astype("float32")
    vals = evaluate([P.op], {A: a}, {"n": 9})
    shifted = np.concatenate([np.zeros((9, 1), "float32"), a[:, :-1]], axis=1)
    np.testing.assert_allclose(vals[P], shifted + np.exp(a) - a.max(1, keepdims=True), rtol=1e-6)
    assert flop_count([P.op], {"n": 9}) == 9 * 6 * 1 + 9 * 6 * 3


def test_diff_highlighting():
    lines = diff_lines("a\nb\nc", "a\nx\nc")
    assert lines == [(" ", "a"), ("-", "b"), ("+", "x"), (" ", "c")]
    h = diff_html("for i in range(4):\n  x", "for i in T.parallel(4):\n  x", "AST2")
    assert KIND_COLORS["parallel"] in h and "tvmlab-add" in h and "tvmlab-del" in h


def test_unbuildable_steps_are_failed_records_in_thread_and_process_benchmarkers():
    from tvmlab.widgets.bench import Benchmarker
    from tvmlab.widgets.bench_worker import ProcessBenchmarker
    from tvmlab.widgets.explorer import _records_html
    s, args = vadd()
    wl = Workload(args, [args[-1]], {"n": 100})
    updates = []
    thread = Benchmarker(wl, on_update=lambda: updates.append(1) or 1 / 0)   # a failing view
    thread.peak = (100.0, "set")             # no peak measurement once the queue is empty
    proc = ProcessBenchmarker(wl)
    try:
        for b in (thread, proc):
            b.submit("k", "1", {"llvm": "build failed: <no kernel>"})
        assert thread.wait(30)
        recs = [b.records[("k", "llvm")] for b in (thread, proc)]
        assert recs[0] == recs[1] and recs[0]["status"] == "failed" and recs[0]["time_ms"] is None
        assert recs[0]["message"] == "build failed: <no kernel>" and updates
        page = _records_html([{"step": 1, "label": "C: split", **recs[0]}], "how <measured>")
        assert "&lt;no kernel&gt;" in page and "how &lt;measured&gt;" in page
    finally:
        thread.close(timeout=5)
        proc.close(timeout=5)
