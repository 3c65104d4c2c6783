"""The machine's roofs, measured once and kept: the float32 FMA peak and the memory bandwidth.

The roofline and the benchmark plot draw these two figures.  Measuring them takes a few seconds
with every core busy, and a figure measured while the machine was busy is low, so they are
measured once per machine and kept in a small JSON file, ``machine.json`` under the user's cache
folder (``$TVMLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/tvmlab``, else ``~/.cache/tvmlab``), with the
date and the method; ``remeasure()`` (the explorer's "re-measure" button, or
``python -m tvmlab.bench.machine --remeasure``) measures again and replaces them.  One entry per
host, CPU and thread count, so a home folder shared by several machines keeps each one's.
``TVMLAB_PEAK_GFLOPS`` / ``TVMLAB_BANDWIDTH_GBS`` replace a figure without measuring.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
import platform
import threading

FILE_NAME = "machine.json"
VERSION = 1
_LOCK = threading.Lock()


def cache_dir():
    """Where tvmlab keeps what it measured about this machine."""
    env = os.environ.get("TVMLAB_CACHE_DIR")
    if env:
        return pathlib.Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache") / "tvmlab"


def cache_file():
    return cache_dir() / FILE_NAME


def machine_key():
    """host | CPU name | threads: the figures hold for this combination only."""
    from ..runtime import llvm_jit
    from .peak import threads
    cpu, _ = llvm_jit.host_cpu()
    return f"{platform.node()}|{cpu}|{threads()} threads"


@dataclasses.dataclass(frozen=True)
class Roofs:
    """The two roofs, when and how they were found (``source``: "cache", "measured" or
    "environment" when both come from the variables)."""
    peak_gflops: float | None
    bandwidth_gbs: float | None
    measured_at: str            # "2026-11-27 05:40" (local time), "" when not measured
    peak_method: str
    bandwidth_method: str
    source: str

    def note(self):
        """One line for a plot or a table: the figures, their date and how they were found."""
        peak = f"FMA peak {self.peak_gflops:.0f} GFLOP/s" if self.peak_gflops else "FMA peak unknown"
        bw = f"memory {self.bandwidth_gbs:.1f} GB/s" if self.bandwidth_gbs else "memory bandwidth unknown"
        when = f"measured {self.measured_at}" if self.measured_at else "given"
        return f"{peak} ({self.peak_method}); {bw} ({self.bandwidth_method}); {when}"

    def as_dict(self):
        return dataclasses.asdict(self)


def _env_figure(var):
    env = os.environ.get(var)
    if not env:
        return None
    try:
        return float(env)
    except ValueError:
        from ..errors import TVMLabError
        raise TVMLabError(f"{var} must be a number, got {env!r}") from None


def _read():
    """The cache file's entries ({} when missing, unreadable or of another version)."""
    try:
        data = json.loads(cache_file().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("machines"), dict):
        return {}
    return data["machines"]


def _write(entries):
    """Replace the cache file atomically; a read-only home is not an error (nothing is kept)."""
    path = cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": VERSION, "machines": entries}, indent=1, sort_keys=True))
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def _with_env(r):
    """``r`` with the figures the environment variables give in place of the measured ones."""
    peak, bw = _env_figure("TVMLAB_PEAK_GFLOPS"), _env_figure("TVMLAB_BANDWIDTH_GBS")
    if peak is None and bw is None:
        return r
    return Roofs(peak if peak is not None else (r.peak_gflops if r else None),
                 bw if bw is not None else (r.bandwidth_gbs if r else None),
                 r.measured_at if r else "",
                 "TVMLAB_PEAK_GFLOPS" if peak is not None else (r.peak_method if r else "not measured"),
                 "TVMLAB_BANDWIDTH_GBS" if bw is not None else (r.bandwidth_method if r else "not measured"),
                 "environment" if (peak is not None and bw is not None) or r is None else r.source)


def cached():
    """The kept figures of this machine, or None (nothing measured yet); the variables applied."""
    e = _read().get(machine_key())
    r = None
    if isinstance(e, dict):
        try:
            r = Roofs(e.get("peak_gflops"), e.get("bandwidth_gbs"), str(e.get("measured_at", "")),
                      str(e.get("peak_method", "")), str(e.get("bandwidth_method", "")), "cache")
        except TypeError:
            r = None
    if r is None and (_env_figure("TVMLAB_PEAK_GFLOPS") is None or _env_figure("TVMLAB_BANDWIDTH_GBS") is None):
        return None
    return _with_env(r)


def remeasure(rounds=3):
    """Measure both roofs now (a few seconds, every core busy), keep them, and return them."""
    from ..analysis.roofline import BANDWIDTH_ELEMENTS, measure_bandwidth
    from .peak import _shape, measure, threads
    n = threads()
    lanes, chains = _shape()
    peak = bw = None
    peak_how = bw_how = "failed"
    try:
        peak = measure(n, rounds=rounds + 2)
        peak_how = f"{n} threads x {chains} chains of {lanes}-lane FMAs"
    except Exception as e:      # a host LLVM cannot target: no roof, never an error
        peak_how = f"not measured: {type(e).__name__}: {e}"
    try:
        bw = measure_bandwidth(rounds=rounds)
        bw_how = f"parallel vectorized stream of {BANDWIDTH_ELEMENTS * 4 >> 20} MiB in, the same out"
    except Exception as e:
        bw_how = f"not measured: {type(e).__name__}: {e}"
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    r = Roofs(peak, bw, when, peak_how, bw_how, "measured")
    with _LOCK:
        entries = _read()
        entries[machine_key()] = {k: v for k, v in r.as_dict().items() if k != "source"}
        _write(entries)
    return _with_env(r)


def roofs(measure=True):
    """This machine's roofs: the kept figures, else (with ``measure``) measured now and kept;
    None when nothing is kept and ``measure`` is False."""
    r = cached()
    if r is None and measure:
        r = remeasure()
    return r


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tvmlab.bench.machine",
                                 description="Show (or measure again) the FMA peak and memory bandwidth "
                                             "the roofline draws.")
    ap.add_argument("--remeasure", action="store_true", help="measure again and keep the new figures")
    a = ap.parse_args(argv)
    r = remeasure() if a.remeasure else roofs()
    print(r.note())
    print(f"kept in {cache_file()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
