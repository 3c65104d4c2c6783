"""``python -m tvmlab.autotvm.tophub tune|show``: tuning on this machine makes the log the shipped configs
are read from, one best record per workload, merged across runs."""
import io

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import autotvm, relay
from tvmlab.autotvm import tophub
from tvmlab.autotvm.record import load_from_file
from tvmlab.autotvm.tophub import tune as tt
from tvmlab.autotvm.tophub.__main__ import main

TARGET = "llvm -mcpu=x86-64"     # a key of its own, whatever this machine's CPU is
HOST = "llvm"                     # what is tuned must run here


def _records(path):
    return [(inp.task.workload, inp.config.index, res.error_no) for inp, res in load_from_file(str(path))]


def _conv_program():
    x = relay.var("x", shape=(1, 16, 12, 12))
    w = relay.const(np.random.default_rng(0).standard_normal((32, 16, 3, 3)).astype("float32"))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    return tvm.IRModule.from_expr(relay.Function([x], y)), {}


def test_tune_writes_best_records_the_shipped_lookup_reads(tmp_path, monkeypatch):
    report = io.StringIO()
    dest = tt.tune(HOST, [_conv_program()], [32], trials=3, seconds=60, out=str(tmp_path), tuner="random",
                   report=report)
    assert dest == str(tmp_path / f"{tophub.device_key(HOST)}.log")
    first = _records(dest)
    names = sorted(w[0] for w, _, _ in first)
    assert names == ["conv2d_NCHWc.x86", "matmul.x86"], names
    assert all(err == 0 for _, _, err in first)
    assert "fallback" in report.getvalue() and "2 records" in report.getvalue()
    # a second run merges: still one (best) record per workload
    tt.tune(HOST, [], [32], trials=2, seconds=60, out=str(tmp_path), tuner="random", report=io.StringIO())
    assert len(_records(dest)) == 2
    monkeypatch.setenv("TOPHUB_LOCATION", str(tmp_path))
    assert tophub.shipped_log(HOST) == dest
    out = io.StringIO()
    assert tt.show(HOST, report=out) == 2
    assert "matmul.x86(32, 32, 32, 'float32')" in out.getvalue()


def test_merge_keeps_the_lowest_cost_of_each_workload(tmp_path):
    from tvmlab.autotvm.measure import MeasureInput, MeasureResult
    task = autotvm.task.create("matmul.x86", args=(64, 64, 64, "float32"), target=TARGET)
    assert len(task.config_space) > 4

    def log(name, rows):
        p = tmp_path / name
        p.write_text("\n".join(autotvm.record.encode(MeasureInput(task.target, task, task.config_space.get(i)),
                                                     MeasureResult((c,), err, 0.1, 0)) for i, c, err in rows) + "\n")
        return str(p)
    dest = str(tmp_path / "out" / "llvm_x86-64.log")
    assert tt.merge([log("a.log", [(1, 3e-3, 0), (2, 1e-3, 0)])], dest) == 1
    assert _records(dest)[0][1] == 2
    # a failed record never wins, a faster one does
    assert tt.merge([log("b.log", [(3, 1e-6, 4), (4, 5e-4, 0)])], dest) == 1
    assert _records(dest)[0][1] == 4


def test_cuda_without_a_gpu_and_bad_requests_are_refused(tmp_path, capsys):
    if tvm.cuda(0).exist:
        pytest.skip("this machine has a GPU: the refusal is for machines without one")
    with pytest.raises(tt.TophubError, match="needs a CUDA GPU"):
        tt.tune("cuda", [], [64], out=str(tmp_path))
    assert main(["tune", "--target", "cuda", "--products", "64", "--out", str(tmp_path)]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
    assert main(["tune", "--target", TARGET, "--models", "nosuch", "--out", str(tmp_path)]) == 2
    assert "unknown model 'nosuch'" in capsys.readouterr().err
    with pytest.raises(tt.TophubError, match="no tasks"):
        tt.tune(TARGET, [], [], out=str(tmp_path))
    with pytest.raises(tt.TophubError, match="tuner must be"):
        tt.tune_task(autotvm.task.create("matmul.x86", args=(16, 16, 16, "float32"), target=TARGET),
                     str(tmp_path / "x.log"), 2, 10, tuner="nosuch")
    assert not list(tmp_path.glob("*.log"))


def test_every_shipped_record_is_a_point_of_its_templates_space():
    # a template's knobs may change; a shipped record must still name a config of its space
    import glob
    import os
    logs = sorted(glob.glob(os.path.join(tophub.PACKAGE_LOGS, "*.log")))
    assert logs, "the package ships at least one tuned log"
    for path in logs:
        key = os.path.basename(path)[:-4]
        for inp, res in load_from_file(path):
            assert res.error_no == 0 and res.costs, (path, inp.task.name)
            target = f"llvm -mcpu={key[len('llvm_'):]}" if key.startswith("llvm_") else f"cuda -arch={key[5:]}"
            assert tophub.device_key(target) == key
            task = autotvm.task.create(inp.task.name, inp.task.args, target)
            cfg = task.config_space.get(inp.config.index)
            assert cfg.to_json_dict()["entity"] == inp.config.to_json_dict()["entity"], (path, inp.task.args)
