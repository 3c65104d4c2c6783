"""python -m tvmlab.bench.gpu: every row builds and is checked on the simulator; without a GPU it says so."""
import io

import pytest

import tvmlab as tvm
from tvmlab.bench import gpu


def test_every_row_runs_on_the_simulator():
    out = io.StringIO()
    assert gpu.main(["--simulate"], out=out) == 0
    lines = out.getvalue().splitlines()
    assert len(lines) == sum(len(v) for v in gpu.ROWS.values())
    assert all("simulated: matches numpy" in line for line in lines)
    assert [line.split()[1] for line in lines if line.startswith("matmul")] == ["32^3", "64^3", "128^3", "32^3", "32^3",
                                                                              "128^3", "128^3"]


@pytest.mark.skipif(tvm.cuda(0).exist, reason="checks the behaviour without a GPU")
def test_without_a_gpu_it_says_so_and_exits_0():
    out = io.StringIO()
    assert gpu.main(["--rows", "add"], out=out) == 0
    assert "no CUDA GPU here" in out.getvalue() and "--simulate" in out.getvalue()


def test_bench_help_prints_usage_and_runs_nothing():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "tvmlab.bench", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("usage: python -m tvmlab.bench") and "GFLOP" not in r.stdout


def test_torch_compile_reference_reports_why_it_did_not_run():
    """ResNet-50's torch.compile row: the time where it compiles, else the reason on one line (no raise)."""
    from tvmlab.bench.gpu import compiled_ms

    class Events:
        def __init__(self, enable_timing):
            pass

        def record(self):
            pass

        def elapsed_time(self, other):
            return 2.5

    class FakeTorch:
        class cuda:
            Event = Events

            @staticmethod
            def synchronize():
                pass

        @staticmethod
        def no_grad():
            import contextlib
            return contextlib.nullcontext()

        def __init__(self, fails):
            self.fails = fails

        def compile(self, net):
            if self.fails:
                raise RuntimeError("Cannot find a working triton installation.\nMore details follow")
            return net

    calls = []
    ms, why = compiled_ms(FakeTorch(False), lambda x: calls.append(x), "x", repeat=3)
    assert (ms, why) == (2.5, None) and len(calls) == 2 + 3     # compiled, warmed, timed
    ms, why = compiled_ms(FakeTorch(True), lambda x: x, "x")
    assert ms is None and why == "RuntimeError: Cannot find a working triton installation."
