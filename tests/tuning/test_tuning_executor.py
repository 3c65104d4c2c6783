"""Executors: results in job order; an error, a segfault and a hang each end only their own job."""
import ctypes
import os
import time

import pytest

from tvmlab.tuning import measure as M
from tvmlab.tuning.executor import ExecutorError, JobResult, LocalExecutor


def work(x):
    if x == "segv":
        ctypes.string_at(0)            # a segmentation fault in this worker
    if x == "hang":
        time.sleep(600)
    if x == "raise":
        raise ValueError("bad job")
    return x * 2


def children():
    """(pid, state, command line) of this process's children, ps itself left out."""
    out = os.popen(f"ps --ppid {os.getpid()} -o pid=,stat=,args=").read().split("\n")
    rows = [line.split(None, 2) for line in out if line.strip()]
    return [r for r in rows if len(r) == 3 and not r[2].startswith("ps ")]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_each_failure_stays_with_its_job(method):
    jobs = [(1,), ("segv",), (2,), ("hang",), ("raise",), (3,)]
    with LocalExecutor(2, method=method) as ex:
        if method == "spawn":
            ex.run(abs, [(0,)], 120)      # start the interpreters outside the timed part
        t0 = time.monotonic()
        res = ex.run(work, jobs, timeout=5)      # room for a busy machine; "hang" never ends
        assert time.monotonic() - t0 < 30
        assert [r.status for r in res] == ["ok", "crash", "ok", "timeout", "error", "ok"]
        assert [r.value for r in res if r.ok] == [2, 4, 6]
        assert "SIGSEGV" in res[1].message
        assert "5 s" in res[3].message
        assert "ValueError: bad job" in res[4].message
        # the pool goes on after the failures
        assert [r.value for r in ex.run(work, [(5,), (6,)], timeout=10)] == [10, 12]
    assert not [c for c in children() if "Z" in c[1]], children()             # no zombies
    assert not [c for c in children() if "tvmlab.tuning.worker" in c[2]], children()


def start_writer(path):
    """A job that starts a process writing ``path`` a second later (as a linker writes a library)."""
    import subprocess
    subprocess.Popen(["sh", "-c", f"sleep 1; echo late > {path}"])
    time.sleep(600)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_killed_worker_takes_what_its_job_started_with_it(tmp_path, method):
    """A job cut off by its timeout (or by closing the pool: a tuning run's dropped build) ends with the
    processes it started, so none writes a file after the caller has cleaned up."""
    from tvmlab.tuning.executor import WorkerPool
    late = tmp_path / "late"
    pool = WorkerPool(1, method=method).start()
    ticket = pool.submit(start_writer, (str(late),), 0.5)
    [(got, res)] = pool.collect(wait_s=60)
    assert (got, res.status) == (ticket, "timeout")
    ticket = pool.submit(start_writer, (str(late),), 30)
    time.sleep(0.5)
    pool.close()
    time.sleep(1.5)
    assert not late.exists()


def test_fork_runs_closures_and_keeps_order():
    base = 100

    def add(x, y):
        time.sleep(0.05 * (5 - x))     # later jobs finish first
        return base + x + y

    res = LocalExecutor(3).run(add, [(x, 1) for x in range(5)], timeout=10)
    assert [r.value for r in res] == [101, 102, 103, 104, 105]
    assert all(isinstance(r, JobResult) and r.elapsed > 0 for r in res)


def test_bad_arguments():
    with pytest.raises(ExecutorError, match="n_parallel"):
        LocalExecutor(0)
    with pytest.raises(ExecutorError, match="method"):
        LocalExecutor(1, method="thread")
    ex = LocalExecutor(1)
    with pytest.raises(ExecutorError, match="tuple"):
        ex.run(work, [1, 2], timeout=1)
    with pytest.raises(ExecutorError, match="timeout"):
        ex.run(work, [(1,)], timeout=0)
    assert ex.run(work, [], timeout=1) == []


def test_measure_build_then_run_in_a_clean_process():
    from tvmlab import te

    def make(factor=8, wrong=False):
        A = te.placeholder((37, 29), name="A")
        B = te.placeholder((29, 41), name="B")
        k = te.reduce_axis((0, 29), name="k")
        C = te.compute((37, 41), lambda i, j: te.sum(A[i, k] * (B[k, j] + (1.0 if wrong else 0.0)), axis=k),
                       name="C")
        s = te.create_schedule(C.op)
        yo, yi = s[C].split(C.op.axis[0], factor=factor)
        s[C].parallel(yo)
        s[C].vectorize(s[C].split(C.op.axis[1], factor=8)[1])
        return s, [A, B, C]

    ref = M.build_candidate(lambda: make(1), "llvm")["path"]
    good = M.build_candidate(lambda: make(5), "llvm")
    bad = M.build_candidate(lambda: make(5, wrong=True), "llvm")
    assert good["args"] == [((37, 29), "float32"), ((29, 41), "float32"), ((37, 41), "float32")]
    with LocalExecutor(1, method="spawn") as ex:
        res = ex.run(M.run_candidate, [(good["path"], good["args"], 2, 3, 0, ref),
                                       (bad["path"], bad["args"], 2, 3, 0, ref)], timeout=60)
    assert res[0].ok and len(res[0].value) == 3 and all(c > 0 for c in res[0].value)
    assert res[1].status == "error" and "WRONG_ANSWER" in res[1].message
    assert not os.path.exists(good["path"])            # run_candidate removes the library
    with pytest.raises(M.MeasureError) as e:
        M.build_candidate(lambda: (_ for _ in ()).throw(RuntimeError("no such config")), "llvm")
    assert e.value.error_no == M.MeasureErrorNo.INSTANTIATION_ERROR
    # in-process measurement (parallel code here, so it is not forked afterwards)
    costs = M.measure(lambda: make(4), number=2, repeat=2, check_against=lambda: make(1))
    assert len(costs) == 2 and all(c > 0 for c in costs)
    with pytest.raises(M.MeasureError, match="WRONG_ANSWER"):
        M.measure(lambda: make(4, wrong=True), check_against=lambda: make(1))
    os.unlink(ref)
