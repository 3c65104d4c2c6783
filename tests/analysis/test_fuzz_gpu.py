"""The random-program fuzzer's cuda mode, on fixed seeds so a failure reproduces.

Each chunk gives ``PER_CHUNK`` random programs a random GPU schedule, builds them for CUDA
and runs them on the thread-level simulator against numpy.  A failure prints the program
and its (shrunk) schedule as Python plus the command that reruns it.  Failures that match
a known, reported compiler bug (``KNOWN_BUGS``) turn the chunk into an xfail naming the
bugs; any other failure fails it.  Drop an entry once its bug is fixed.
"""
import re

import numpy as np
import pytest

from tvmlab import te
from tvmlab.testing import fuzz, fuzz_gpu
from tvmlab.testing.programs import generate
from tvmlab.testing.random_gpu_schedule import GPUScheduler

SEED = 2027
CHUNKS = 5
PER_CHUNK = 40
SIM_SECONDS = 10       # a simulation running longer skips its program (these need 2 s at most)

# (phase, regex over the failure report, bug)
KNOWN_BUGS = [
]


def known_bug(outcome):
    text = outcome.report()
    for phase, pattern, bug in KNOWN_BUGS:
        if outcome.phase == phase and re.search(pattern, text):
            return bug
    return None


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fuzz_gpu_chunk(chunk):
    refused = []
    failures, n, secs = fuzz.run(PER_CHUNK, seed=SEED, start=chunk * PER_CHUNK, out=lambda s: None,
                                 max_failures=PER_CHUNK, target="cuda", refused=refused, sim_seconds=SIM_SECONDS)
    assert n == PER_CHUNK
    unknown = [r for r in failures if known_bug(r) is None]
    assert not unknown, "\n\n".join(r.report() for r in unknown)
    # refusals are rare by construction: most programs are built and simulated (how many are too
    # slow to simulate depends on the machine)
    refused = [msg for _, msg in refused if not msg.startswith(fuzz_gpu.TooSlow.PREFIX)]
    assert len(refused) <= PER_CHUNK // 10, refused
    if failures:
        bugs = sorted({known_bug(r) for r in failures})
        pytest.xfail(f"{len(failures)} of {n} programs hit known compiler bugs: " + "; ".join(bugs))


def _schedule(k, seed=SEED):
    pseed = fuzz.program_seed(seed, k)
    prog = generate(pseed)
    ns = prog.build_te()
    s = te.create_schedule([t.op for t in ns["outs"]])
    GPUScheduler(s, np.random.default_rng([pseed, 2])).run()
    return s


def test_gpu_schedules_are_deterministic():
    assert _schedule(3).trace.as_python() == _schedule(3).trace.as_python()


def test_gpu_schedules_cover_the_gpu_primitives():
    """Over a few dozen programs every kind of GPU schedule step occurs."""
    text = "\n".join(_schedule(k, SEED + 1).trace.as_python() for k in range(60))
    for what in ["'blockIdx.x'", "'blockIdx.y'", "'threadIdx.x'", "'threadIdx.y'", "'vthread'", "s.rfactor(",
                 "cache_read(", "'shared'", "'local'", "cache_write(", ".double_buffer()", "set_store_predicate(",
                 "auto_unroll_max_step", ".unroll(", ".fuse(", "nparts=", "factor=", "compute_inline()",
                 "compute_at("]:
        assert what in text, what


def test_cuda_fuzzer_detects_a_wrong_result(monkeypatch):
    """The checker is not vacuous: a corrupted reference must be reported, with a reproducer."""
    real = fuzz.generate

    def corrupted(seed):
        prog = real(seed)
        out = prog.outputs[-1]
        out.value = out.value.copy()
        k = int(np.argmax(np.isfinite(out.value).reshape(-1)))
        out.value.flat[k] = out.value.flat[k] + (1 if out.value.dtype.kind != "f" else 1 + abs(out.value.flat[k]))
        return prog
    monkeypatch.setattr(fuzz, "generate", corrupted)
    res = fuzz.check_one(fuzz.program_seed(SEED, 0), trace_rate=0.0, minimize=False, target="cuda")
    assert not res.ok and res.failure.phase == "compare"
    text = res.report()
    assert "te.thread_axis(" in text and "fuzz.check_schedule(" in text and "target='cuda'" in text
    assert "--target cuda" in text


def test_cuda_fuzzer_reports_a_race_as_a_simulator_finding(monkeypatch):
    """With barrier insertion switched off, a schedule that hands data between threads through
    shared memory is reported by the simulator (phase "simulate")."""
    import sys
    pipeline = sys.modules["tvmlab.lower.pipeline"]
    passes = [(name, (lambda stmt, ctx: stmt) if name == "thread_sync" else fn)
              for name, fn in pipeline.GPU_PIPELINE]
    monkeypatch.setattr(pipeline, "GPU_PIPELINE", passes)
    for k in range(40):
        res = fuzz.check_one(fuzz.program_seed(SEED, k), trace_rate=0.0, minimize=False, target="cuda")
        if not res.ok:
            break
    assert not res.ok and res.failure.phase == "simulate", res.failure
    assert "race" in res.failure.message


def test_too_slow_simulation_is_stopped():
    import time
    t0 = time.perf_counter()
    with pytest.raises(fuzz_gpu.TooSlow, match="too slow to simulate"):
        with fuzz_gpu.deadline(0.2):
            while True:
                sum(range(1000))
    assert time.perf_counter() - t0 < 5


def test_cli_takes_the_target(capsys):
    assert fuzz.main(["--target", "cuda", "--count", "2", "--start", "1", "--seed", str(SEED),
                      "--in-process"]) == 0
    out = capsys.readouterr().out
    assert "fuzz (cuda): 2 programs" in out
