"""The explorer's Tune tab: a background auto-scheduler search, live plot, knobs, adopt best."""
import threading
import time

import numpy as np
import pytest

import tvmlab
from tvmlab import te
from tvmlab.autotvm.measure import Builder, BuildResult, MeasureResult, Runner
from tvmlab.errors import TVMLabError


def _matmul(n=16, m=24, k=8):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def _cost(state):
    t = state["tiles"]["C"]
    return 1e-3 * (1 + abs(np.log2(t["S"][1][2]) - 3) + abs(np.log2(t["R"][0][0]) - 2))


class FakeBuilder(Builder):
    def build(self, inputs):
        return [BuildResult("", [], None, 0.0) for _ in inputs]


class SlowRunner(Runner):
    """Known costs, and a gate the test opens batch by batch."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Semaphore(0)

    def run(self, inputs, build_results):
        assert self.gate.acquire(timeout=30)
        return [MeasureResult((_cost(i.state),), 0, 0.0, time.time()) for i in inputs]


def _check(ex):
    f = tvmlab.build(ex.schedule, ex.session.args, "llvm")
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (16, 8)).astype("float32")
    b = rng.uniform(-1, 1, (8, 24)).astype("float32")
    c = tvmlab.nd.array(np.full((16, 24), np.nan, "float32"))
    f(tvmlab.nd.array(a), tvmlab.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_tune_tab_updates_while_a_tune_runs_and_adopts_the_best():
    A, B, C = _matmul()
    s = te.create_schedule(C.op)
    ex = tvmlab.explore(s, [A, B, C], benchmark=False)
    assert "Tune" in [ex._tabs.get_title(k) for k in range(len(ex._tabs.children))]
    runner = SlowRunner()
    view = ex.tune(n_trial=24, tuner="xgb", builder=FakeBuilder(), runner=runner, per_round=8)
    assert view.running and ex._tabs.children[ex._tabs.selected_index] is view
    with pytest.raises(TVMLabError, match="already running"):
        ex.tune(n_trial=4)
    runner.gate.release()
    for _ in range(300):              # the first batch shows up while the search goes on
        if len(view.history) == 8 and view.plot.value:
            break
        time.sleep(0.05)
    assert len(view.history) == 8 and view.plot.value[:4] == b"\x89PNG" and view.running
    assert "tuning: 8/24" in view.status.value
    runner.gate.release()
    runner.gate.release()
    assert view.wait(60) and len(view.history) == 24 and "done" in view.status.value
    assert len(view.rank_pairs) >= 8       # predicted vs measured ranks of the model-picked batches
    best = view.policy.best_state
    assert _cost(best) == min(_cost(s) for s in view.policy.states)
    view.adopt_best()
    assert [dict(x) for x in ex.trace.steps] == [dict(x) for x in view.task.instantiate(best)[0].trace.steps]
    _check(ex)
    ex.undo()                              # adopting is one more state of the explorer


def test_knobs_and_stop():
    A, B, C = _matmul()
    ex = tvmlab.explore(te.create_schedule(C.op), [A, B, C], benchmark=False)
    view = ex.tune_view
    with pytest.raises(TVMLabError, match="nothing measured"):
        view.adopt_best()
    with pytest.raises(TVMLabError, match="tuner must be"):
        ex.tune(n_trial=4, tuner="annealing")
    runner = SlowRunner()
    ex.tune(n_trial=400, tuner="random", builder=FakeBuilder(), runner=runner, per_round=4)
    runner.gate.release()
    for _ in range(300):
        if view.history:
            break
        time.sleep(0.05)
    view.stop()
    for _ in range(5):
        runner.gate.release()
    assert view.wait(60) and len(view.history) < 400 and "stopped" in view.status.value
    # knobs: the best state's values as widgets; change one within the space and apply
    state = view.knob_state()
    assert state == view.policy.best_state
    w = view._knob_widgets[("tile", "C", "R", 0, 0)]
    w.value = 4 if w.value != 4 else 2
    view.apply_knobs()
    _check(ex)
    assert any(st.primitive == "split" and st.get("factor") == w.value for st in ex.trace.steps)
    # a combination outside the space is reported and changes nothing
    before = [dict(x) for x in ex.trace.steps]
    for lv in range(3):
        view._knob_widgets[("tile", "C", "S", 1, lv)].value = 8
    with pytest.raises(TVMLabError, match="do not divide"):
        view.apply_knobs()
    assert [dict(x) for x in ex.trace.steps] == before and "do not divide" in view.status.value
