"""The roofline's figures: measured once per machine, kept with their date and method, re-measured
on demand; the explorer draws them and says when and how they were found."""
from __future__ import annotations

import json
import time

import pytest

import tvmlab
from tvmlab import te
from tvmlab.bench import machine

pytest.importorskip("ipywidgets")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TVMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TVMLAB_PEAK_GFLOPS", raising=False)
    monkeypatch.delenv("TVMLAB_BANDWIDTH_GBS", raising=False)
    return tmp_path


@pytest.fixture
def fake_measure(monkeypatch):
    """Count measurements and give fixed figures (the real ones take seconds with every core busy)."""
    calls = []
    from tvmlab.analysis import roofline
    from tvmlab.bench import peak
    monkeypatch.setattr(peak, "measure", lambda n, rounds=5: calls.append("peak") or 80.0 + len(calls))
    monkeypatch.setattr(roofline, "measure_bandwidth", lambda rounds=3: calls.append("bw") or 20.0)
    return calls


def test_measured_once_kept_and_remeasured(cache, fake_measure):
    assert machine.cached() is None
    r = machine.roofs()
    assert fake_measure == ["peak", "bw"] and r.source == "measured"
    assert r.peak_gflops == 81.0 and r.bandwidth_gbs == 20.0 and r.measured_at
    assert "threads x" in r.peak_method and "MiB" in r.bandwidth_method
    kept = json.loads((cache / "machine.json").read_text())
    assert kept["machines"][machine.machine_key()]["peak_gflops"] == 81.0
    again = machine.roofs()                          # from the file: nothing measured
    assert fake_measure == ["peak", "bw"] and again.source == "cache" and again.peak_gflops == 81.0
    assert "measured " + again.measured_at in again.note()
    new = machine.remeasure()
    assert fake_measure == ["peak", "bw", "peak", "bw"] and new.peak_gflops == 83.0
    assert machine.roofs().peak_gflops == 83.0


def test_variables_replace_figures_without_measuring(cache, fake_measure, monkeypatch):
    monkeypatch.setenv("TVMLAB_PEAK_GFLOPS", "100")
    monkeypatch.setenv("TVMLAB_BANDWIDTH_GBS", "10")
    r = machine.roofs()
    assert fake_measure == [] and (r.peak_gflops, r.bandwidth_gbs, r.source) == (100.0, 10.0, "environment")
    assert "TVMLAB_PEAK_GFLOPS" in r.note()
    monkeypatch.setenv("TVMLAB_PEAK_GFLOPS", "lots")
    with pytest.raises(tvmlab.TVMLabError, match="TVMLAB_PEAK_GFLOPS must be a number"):
        machine.roofs()


@pytest.mark.parametrize("content", ["{not json", json.dumps({"version": 99, "machines": {}}), "[]"])
def test_a_corrupt_or_foreign_file_is_measured_over(cache, fake_measure, content):
    (cache / "machine.json").write_text(content)
    assert machine.cached() is None
    assert machine.roofs().peak_gflops == 81.0
    assert json.loads((cache / "machine.json").read_text())["version"] == machine.VERSION


def test_cache_folder_follows_the_variables(monkeypatch, tmp_path):
    monkeypatch.delenv("TVMLAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert machine.cache_file() == tmp_path / "tvmlab" / "machine.json"


def test_explorer_draws_the_kept_roofs_with_their_date_and_remeasures(cache):
    old = {"peak_gflops": 50.0, "bandwidth_gbs": 5.0, "measured_at": "2000-01-01 00:00",
           "peak_method": "an old way", "bandwidth_method": "an old stream"}
    (cache / "machine.json").write_text(json.dumps({"version": machine.VERSION,
                                                    "machines": {machine.machine_key(): old}}))
    A = te.placeholder((256,), name="A")
    C = te.compute((256,), lambda i: A[i] * 2.0, name="C")
    ex = tvmlab.explore(te.create_schedule(C.op), [A, C], targets=["llvm"], benchmark=False)
    ex.controls["measure"].click()
    ex.wait()
    b = ex.bench_panel.benchmarker
    deadline = time.monotonic() + 60
    while b.roofs is None and time.monotonic() < deadline:   # the worker reads the kept figures
        time.sleep(0.1)
    ex.roofline()
    assert ex.analysis_panel.roof == (50.0, 5.0)
    assert "measured 2000-01-01 00:00" in ex.roofline_view.value and "an old way" in ex.roofline_view.value
    ex.remeasure_button.click()                               # measured again, in the worker
    while b.roofs.measured_at == "2000-01-01 00:00" and time.monotonic() < deadline:
        time.sleep(0.1)
    ex.roofline()
    r = machine.cached()
    assert r.measured_at != "2000-01-01 00:00" and r.peak_gflops > 0 and r.bandwidth_gbs > 0
    assert f"measured {r.measured_at}" in ex.roofline_view.value and "threads x" in ex.roofline_view.value
    assert ex.analysis_panel.roof == (r.peak_gflops, r.bandwidth_gbs)
    assert "data:image/png;base64," in ex.roofline_view.value
    ex.close()


def test_tables_and_tabs_are_styled(cache):
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] + 1.0, name="C")
    ex = tvmlab.explore(te.create_schedule(C.op), [A, C], targets=["llvm"], benchmark=False)
    assert 'class="tvmlab-table"' in ex.stages_view.value and "padding" in ex.stages_view.value
    assert "tvmlab-tabs" in ex._tabs._dom_classes and ".tvmlab-tabs" in ex._header.value
    assert all(b.layout.width == "auto" for b in (ex.undo_button, ex.copy_button))
