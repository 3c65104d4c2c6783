"""Config spaces and TVM-format records: round trips, lines written by TVM, corrupt lines."""
import json
import time

import numpy as np
import pytest

from tvmlab import autotvm, te
from tvmlab.autotvm import record
from tvmlab.autotvm.measure import MeasureInput, MeasureResult
from tvmlab.autotvm.space import (AnnotateEntity, ConfigEntity, ConfigError, FallbackConfigEntity,
                                  OtherOptionEntity, ReorderEntity, SplitEntity)
from tvmlab.autotvm.task import TaskError


@autotvm.template("test/rec_matmul")
def rec_matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    if cfg.is_fallback:
        cfg["tile_y"] = SplitEntity([-1, 4])
    cfg.define_split("tile_x", x, num_outputs=3, policy="power2")
    cfg.define_split("tile_k", k, num_outputs=2, max_factor=8)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xm, xi = cfg["tile_x"].apply(s, C, x)
    ko, ki = cfg["tile_k"].apply(s, C, k)
    cfg.define_reorder("order", [yi, ko, ki], policy="all")
    s[C].reorder(yo, xo, xm)
    cfg["order"].apply(s, C, [yi, ko, ki])
    cfg.define_annotate("ann", [xi], policy="try_unroll_vec")
    cfg["ann"].apply(s, C, [xi])
    cfg.define_knob("par", [0, 1])
    if cfg["par"].val:
        s[C].parallel(yo)
    cfg.add_flop(2 * N * L * M)
    return s, [A, B, C]


@pytest.fixture(scope="module")
def task():
    return autotvm.task.create("test/rec_matmul", args=(24, 16, 32, "float32"), target="llvm")


def test_split_policies():
    from tvmlab.autotvm.space import SplitSpace
    f = SplitSpace(24, "factors", 2)
    assert [e.size for e in f.entities] == [[-1, d] for d in (1, 2, 3, 4, 6, 8, 12, 24)]
    p = SplitSpace(24, "power2", 2)
    assert [e.size[1] for e in p.entities] == [1, 2, 4, 8, 16]
    v = SplitSpace(24, "verbose", 2)
    assert [e.size[1] for e in v.entities] == [1, 2, 3, 4, 6, 8, 12, 16, 24]
    three = SplitSpace(8, "factors", 3)
    assert all(8 % (e.size[1] * e.size[2]) == 0 for e in three.entities) and len(three) == 10
    assert [e.size[1] for e in SplitSpace(64, "factors", 2, max_factor=8).entities] == [1, 2, 4, 8]
    with pytest.raises(ConfigError, match="policy"):
        SplitSpace(8, "fancy", 2)


def test_space_length_printing_and_get(task):
    space = task.config_space
    assert list(space.space_map) == ["tile_y", "tile_x", "tile_k", "order", "ann", "par"]
    assert len(space) == 8 * 21 * 4 * 6 * 3 * 2
    text = str(space)
    assert "len=%d" % len(space) in text and "tile_x: Split(policy=power2, product=32, num_outputs=3)" in text
    c = space.get(1234)
    assert c.index == 1234 and space.point2knob(1234) == [space.space_map[n].index(c[n]) for n in space.space_map]
    assert space.knob2point(space.point2knob(1234)) == 1234
    assert space.index_of(dict(c._entity_map)) == 1234
    assert isinstance(c["tile_x"], SplitEntity) and len(c["tile_x"].size) == 3
    assert isinstance(c["order"], ReorderEntity) and isinstance(c["ann"], AnnotateEntity)
    assert isinstance(c["par"], OtherOptionEntity) and c["par"].val in (0, 1)
    for bad in (-1, len(space), 2.0, "3"):
        with pytest.raises(ConfigError, match="index"):
            space.get(bad)
    with pytest.raises(ConfigError, match="no knob"):
        c["nope"]
    assert task.flop == 2 * 24 * 16 * 32


def test_every_config_instantiates_and_computes_the_product(task):
    import tvmlab as tvm
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (24, 16)).astype("float32")
    b = rng.uniform(-1, 1, (16, 32)).astype("float32")
    for index in rng.choice(len(task.config_space), 6, replace=False):
        s, args = task.instantiate(task.config_space.get(int(index)))
        f = tvm.build(s, args, "llvm")
        c = tvm.nd.array(np.full((24, 32), np.nan, "float32"))
        f(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)


def test_fallback_uses_template_defaults():
    s, args = rec_matmul(24, 16, 32, "float32")     # no context: the fallback config
    code = s.trace.as_python()
    assert "split(s[C].op.axis[0], factor=4)" in code          # the template's default
    assert "split(s[C].op.axis[1], factor=1)" in code          # first entity of the others
    cfg = FallbackConfigEntity()
    cfg.define_split("t", 24, num_outputs=2)
    cfg.fallback_split("t", [-1, 5])
    assert cfg["t"].size == [-1, 4]
    with pytest.raises(ConfigError, match="knob entity"):
        cfg["t"] = [-1, 4]


def test_record_round_trip(task, tmp_path):
    log = tmp_path / "r.log"
    space = task.config_space
    pairs = []
    for k, index in enumerate((3, 77, 1000)):
        inp = MeasureInput(task.target, task, space.get(index))
        res = MeasureResult((0.001 * (k + 1), 0.0011 * (k + 1)), 0, 0.5, time.time())
        pairs.append((inp, res))
    err = MeasureResult((autotvm.measure.MeasureError(7, "no result after 1 s"),), 7, 1.0, time.time())
    pairs.append((MeasureInput(task.target, task, space.get(5)), err))
    cb = autotvm.callback.log_to_file(str(log))
    cb(None, [p[0] for p in pairs], [p[1] for p in pairs])
    lines = log.read_text().splitlines()
    assert len(lines) == 4
    row = json.loads(lines[0])
    assert row["input"] == ["llvm", "test/rec_matmul", [24, 16, 32, "float32"], {}]
    assert row["config"]["index"] == 3 and row["config"]["entity"][0][:2] == ["tile_y", "sp"]
    assert row["result"][1] == 0 and len(row["result"]) == 4 and row["version"] == 0.2
    back = list(record.load_from_file(str(log)))
    assert len(back) == 4
    for (inp, res), (inp2, res2) in zip(pairs, back):
        assert inp2.config == inp.config and inp2.config.index == inp.config.index
        assert inp2.task.workload == inp.task.workload
        assert res2.error_no == res.error_no
    assert back[0][1].costs == pytest.approx(pairs[0][1].costs)
    assert isinstance(back[3][1].costs[0], str) and "RUN_TIMEOUT" in back[3][1].costs[0]
    best = record.pick_best(str(log), str(tmp_path / "best.log"))
    assert len(best) == 1 and best[0][0].config.index == 3
    # the best record drives the template
    with autotvm.apply_history_best(str(log)) as ctx:
        cfg = ctx.query("llvm", task.workload)
        assert cfg.index == 3
        s, args = rec_matmul(24, 16, 32, "float32")
    tile = space.get(3)["tile_y"].size[1]
    assert f"split(s[C].op.axis[0], factor={tile})" in s.trace.as_python()


TVM_LINES = [
    # written by TVM 0.9 for its own tutorial template (same knob names and kinds)
    '{"input": ["llvm -keys=cpu -link-params=0", "test/rec_matmul", [24, 16, 32, "float32"], {}], '
    '"config": {"index": 4711, "code_hash": null, "entity": [["tile_y", "sp", [-1, 8]], ["tile_x", "sp", '
    '[-1, 4, 2]], ["tile_k", "sp", [-1, 4]], ["order", "re", [2, 0, 1]], ["ann", "an", ["vec"]], '
    '["par", "ot", 1]]}, "result": [[0.000123, 0.000125], 0, 0.6251, 1650000000.123], "version": 0.2, '
    '"tvm_version": "0.9.dev0"}',
    '{"input": ["llvm -keys=cpu", "test/rec_matmul", [24, 16, 32, "float32"], {}], "config": {"index": 12, '
    '"code_hash": null, "entity": [["tile_y", "sp", [-1, 1]], ["tile_x", "sp", [-1, 1, 1]], ["tile_k", "sp", '
    '[-1, 1]], ["order", "re", [0, 1, 2]], ["ann", "an", ["none"]], ["par", "ot", 0]]}, "result": '
    '[["RuntimeError(\'timeout\')"], 7, 10.1, 1650000001.0], "version": 0.2, "tvm_version": "0.9.dev0"}',
]


def test_loads_lines_written_by_tvm(task, tmp_path):
    log = tmp_path / "tvm.log"
    log.write_text("\n".join(TVM_LINES) + "\n")
    recs = list(record.load_from_file(str(log)))
    assert len(recs) == 2
    inp, res = recs[0]
    assert inp.task.name == "test/rec_matmul" and inp.task.args == (24, 16, 32, "float32")
    assert inp.config["tile_x"].size == [-1, 4, 2] and inp.config["order"].perm == [2, 0, 1]
    assert inp.config["ann"].anns == ["vec"] and inp.config["par"].val == 1
    assert res.costs == (0.000123, 0.000125) and res.error_no == 0
    assert recs[1][1].error_no == 7
    with autotvm.apply_history_best(str(log)):
        s, args = rec_matmul(24, 16, 32, "float32")
    import tvmlab as tvm
    f = tvm.build(s, args, "llvm")
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (24, 16)).astype("float32")
    b = rng.uniform(-1, 1, (16, 32)).astype("float32")
    c = tvm.nd.array(np.full((24, 32), np.nan, "float32"))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5, atol=1e-5)
    code = s.trace.as_python()
    assert "split(s[C].op.axis[0], factor=8)" in code and "factor=2)" in code
    assert "vectorize" in code and "parallel" in code


CORRUPT = [
    "not json at all",
    '{"input": ["llvm", "x"], "config": {}, "result": []}',
    '["a", "list"]',
    '{"input": ["llvm", "test/rec_matmul", [24, 16, 32, "float32"], {}], "config": {"index": 1, "entity": '
    '[["tile_y", "zz", [1]]]}, "result": [[0.1], 0, 0.1, 1.0]}',
    '{"input": ["llvm", "test/rec_matmul", [24, 16, 32, "float32"], {}], "config": {"index": 1, "entity": '
    '[["tile_y", "sp", "__import__(\'os\').system(\'echo pwned\')"]]}, "result": [[0.1], 0, 0.1, 1.0]}',
    '{"input": ["llvm", "test/rec_matmul", [24, 16, 32, "float32"], {}], "config": {"index": 1, "entity": []}, '
    '"result": [["nan-ish"], 0, 0.1, 1.0]}',
]


def test_corrupt_lines_are_skipped_with_a_warning_naming_the_line(tmp_path):
    log = tmp_path / "mixed.log"
    log.write_text("\n".join([TVM_LINES[0]] + CORRUPT + [TVM_LINES[1]]) + "\n")
    with pytest.warns(record.RecordWarning) as caught:
        recs = list(record.load_from_file(str(log)))
    assert len(recs) == 2
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == len(CORRUPT)
    for lineno, m in zip(range(2, 2 + len(CORRUPT)), msgs):
        assert f"mixed.log:{lineno}:" in m
    with pytest.warns(record.RecordWarning, match="not JSON"):
        assert record.decode("{broken") is None


def test_task_errors():
    with pytest.raises(TaskError, match="no template named"):
        autotvm.task.create("test/none", args=(1,), target="llvm")
    with pytest.raises(TaskError, match="template argument"):
        autotvm.task.create("test/rec_matmul", args=(24, 16, object(), "float32"), target="llvm")
    cfg = ConfigEntity.from_json_dict({"index": 0, "entity": [["tile_y", "sp", [-1, 2]]]})
    with pytest.raises(ConfigError, match="no knob 'tile_x'|has no knob"):
        autotvm.task.Task("test/rec_matmul", (24, 16, 32, "float32")).instantiate(cfg)


def test_record_misuse_is_a_clear_error(task, tmp_path):
    with pytest.raises(record.RecordError, match="no tuning log"):
        autotvm.apply_history_best(str(tmp_path / "missing.log"))
    inp = MeasureInput(task.target, task, task.config_space.get(0))
    res = MeasureResult((0.1,), 0, 0.1, 0.0)
    with pytest.raises(record.RecordError, match="pickled records"):
        record.encode(inp, res, protocol="pickle")
    with pytest.raises(record.RecordError, match="pickled records"):
        autotvm.callback.log_to_file(str(tmp_path / "x.log"), protocol="pickle")
    assert issubclass(record.RecordError, tvm_error())


def tvm_error():
    from tvmlab.errors import TVMLabError
    return TVMLabError
