"""Each tuner finds the known best of a space whose costs come from a fake runner (no building)."""
import time

import pytest

pytest.importorskip("xgboost")

from tvmlab import autotvm, te  # noqa: E402
from tvmlab.autotvm.measure import BuildResult, Builder, MeasureResult, Runner  # noqa: E402
from tvmlab.autotvm.tuner import GATuner, GridSearchTuner, RandomTuner, TunerError, XGBTuner  # noqa: E402

VALUES = list(range(1, 9))
BEST = {"a": 6, "b": 3, "c": 7}


@autotvm.template("test/fake_space")
def fake_space(n):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg = autotvm.get_config()
    for name in "abc":
        cfg.define_knob(name, VALUES)
    return s, [A, B]


def fake_cost(config):
    # a smooth bowl with one minimum, so learning and evolving pay off
    return 1e-3 * (1 + sum((config[k].val - v) ** 2 for k, v in BEST.items()))


class FakeBuilder(Builder):
    def __init__(self, n_parallel=8):
        super().__init__(timeout=1, n_parallel=n_parallel)

    def build(self, measure_inputs):
        return [BuildResult("fake", [], None, 0.0) for _ in measure_inputs]


class FakeRunner(Runner):
    def __init__(self):
        super().__init__(timeout=1)
        self.n_parallel = 1
        self.seen = []

    def run(self, measure_inputs, build_results):
        self.seen += [i.config.index for i in measure_inputs]
        return [MeasureResult((fake_cost(i.config),), 0, 0.0, time.time()) for i in measure_inputs]


def best_of(tuner, n_trial):
    runner = FakeRunner()
    tuner.tune(n_trial=n_trial, measure_option=autotvm.measure_option(builder=FakeBuilder(), runner=runner))
    assert len(set(runner.seen)) == len(runner.seen), "a config was measured twice"
    return {k: tuner.best_config[k].val for k in "abc"}, runner


@pytest.fixture(scope="module")
def task():
    t = autotvm.task.create("test/fake_space", args=(16,), target="llvm")
    assert len(t.config_space) == len(VALUES) ** 3
    return t


def test_grid_search_walks_everything_in_order(task):
    best, runner = best_of(GridSearchTuner(task), len(task.config_space))
    assert best == BEST
    assert runner.seen == list(range(len(task.config_space)))


def test_random_tuner_covers_the_space_without_repeats(task):
    best, runner = best_of(RandomTuner(task, seed=1), len(task.config_space))
    assert best == BEST and sorted(runner.seen) == list(range(len(task.config_space)))


def test_random_tuner_range_idx(task):
    tuner = RandomTuner(task, range_idx=(10, 19), seed=0)
    _, runner = best_of(tuner, 50)
    assert sorted(runner.seen) == list(range(10, 20))
    with pytest.raises(TunerError, match="range_idx"):
        RandomTuner(task, range_idx=(5, 10 ** 6))


def test_ga_tuner_finds_the_best_in_half_the_space(task):
    best, _ = best_of(GATuner(task, pop_size=32, elite_num=4, seed=3), len(task.config_space) // 2)
    assert best == BEST


@pytest.mark.parametrize("loss_type", ["rank", "reg"])
def test_xgb_tuner_knob_features_finds_the_best_in_a_quarter(task, loss_type):
    tuner = XGBTuner(task, plan_size=16, feature_type="knob", loss_type=loss_type, seed=0)
    best, _ = best_of(tuner, len(task.config_space) // 4)
    assert best == BEST
    assert tuner.train_ct >= 2 and tuner.cost_model.trained


def test_early_stopping_and_stop(task):
    tuner = GridSearchTuner(task)
    runner = FakeRunner()
    # in grid order ("a" varies fastest) the best with c=1 comes at a=6, b=3 (index 21); the next
    # improvement needs c=2 (index 85), more than 10 trials later: the tune stops at 21 + 10
    first = task.config_space.index_of({"a": autotvm.space.OtherOptionEntity(6),
                                        "b": autotvm.space.OtherOptionEntity(3),
                                        "c": autotvm.space.OtherOptionEntity(1)})
    assert first == 21
    tuner.tune(n_trial=len(task.config_space), early_stopping=10,
               measure_option=autotvm.measure_option(builder=FakeBuilder(n_parallel=1), runner=runner))
    assert tuner.best_config.index == first and tuner.best_iter == first
    assert len(runner.seen) == first + 10        # trials 0..30: 10 after the best one (21)

    tuner2 = RandomTuner(task, seed=0)

    def stop_after_first(t, inputs, results):
        t.stop()

    tuner2.tune(n_trial=100, measure_option=autotvm.measure_option(builder=FakeBuilder(), runner=FakeRunner()),
                callbacks=[stop_after_first])
    assert tuner2.trials_done == 8


def test_tune_rejects_bad_arguments(task):
    opt = autotvm.measure_option(builder=FakeBuilder(), runner=FakeRunner())
    for bad in (0, -3, 2.5, True):
        with pytest.raises(TunerError, match="n_trial"):
            RandomTuner(task).tune(n_trial=bad, measure_option=opt)
    with pytest.raises(TunerError, match="early_stopping"):
        RandomTuner(task).tune(n_trial=4, measure_option=opt, early_stopping=0)
    with pytest.raises(TunerError, match="callbacks"):
        RandomTuner(task).tune(n_trial=4, measure_option=opt, callbacks=["log.txt"])
    with pytest.raises(TunerError, match="feature_type"):
        XGBTuner(task, feature_type="pixels")
    with pytest.raises(autotvm.measure.MeasureOptionError, match="builder"):
        autotvm.measure_option(builder="remote")


def test_progress_bar_and_log_callbacks(task, tmp_path, capsys):
    pytest.importorskip("tqdm")
    log = tmp_path / "fake.log"
    tuner = GridSearchTuner(task)
    tuner.tune(n_trial=24, measure_option=autotvm.measure_option(builder=FakeBuilder(), runner=FakeRunner()),
               callbacks=[autotvm.callback.progress_bar(24, prefix="fake"),
                          autotvm.callback.log_to_file(str(log))])
    err = capsys.readouterr().err
    assert "fake" in err and "24/24" in err and "GFLOPS" in err
    assert len(log.read_text().splitlines()) == 24
    with pytest.raises(autotvm.record.RecordError, match="si_prefix"):
        autotvm.callback.progress_bar(10, si_prefix="X")


@autotvm.template("test/fake_crashy")
def fake_crashy(n):
    import ctypes
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg = autotvm.get_config()
    cfg.define_split("t", B.op.axis[0], num_outputs=2)
    cfg.define_knob("a", VALUES)
    if cfg["a"].val == 4:
        ctypes.string_at(0)               # instantiating this config segfaults
    cfg["t"].apply(s, B, B.op.axis[0])
    return s, [A, B]


def test_xgb_itervar_features_survive_a_template_that_crashes():
    task = autotvm.task.create("test/fake_crashy", args=(64,), target="llvm")

    class Runner(FakeRunner):
        def run(self, measure_inputs, build_results):
            self.seen += [i.config.index for i in measure_inputs]
            return [MeasureResult((1e-3 * (1 + abs(i.config["a"].val - 6) + abs(i.config["t"].size[1] - 8)),),
                                  0, 0.0, time.time()) for i in measure_inputs]

    tuner = XGBTuner(task, plan_size=8, feature_type="itervar", seed=0, feature_budget=60)
    tuner.tune(n_trial=24, measure_option=autotvm.measure_option(builder=FakeBuilder(), runner=Runner()))
    assert tuner.train_ct >= 2 and len(tuner.history) == 24
    crashed = [i for i, row in tuner.features.cache.items() if task.config_space.get(i)["a"].val == 4]
    assert crashed and all(not any(tuner.features.cache[i]) for i in crashed)
