"""tvm.testing's pytest face (tvmlab.testing.plugin): parameters and correlated parameters, cached
fixtures, tests taking ``target`` run once per test target with absent devices skipped, explicit target
lists, known-failing targets; written as TVM's tests are and run by pytest in a fresh process."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import numpy as np
import pytest
import tvmlab as tvm
import tvmlab.testing
from tvmlab import te, topi

CALLS = []
size = tvm.testing.parameter(3, 5, ids=["small", "big"])
shape, axis = tvm.testing.parameters(((4, 6), 0), ((2, 3, 5), 2))


@tvm.testing.fixture(cache_return_value=True)
def data(shape):
    CALLS.append(shape)
    return np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)


def test_sum(target, dev, data, axis):
    A = te.placeholder(data.shape, name="A")
    B = topi.sum(A, axis=axis)
    with tvm.target.Target(target):
        s = tvm.topi.testing.get_reduce_schedule(target)(B)
    f = tvm.build(s, [A, B], target)
    out = tvm.nd.empty([int(d) for d in B.shape], device=dev)
    f(tvm.nd.array(data, dev), out)
    np.testing.assert_allclose(out.numpy(), data.sum(axis=axis))
    data[...] = -1          # the cached value is copied for each test: the next one sees it unchanged


def test_cache_computed_once_per_shape():
    assert len(CALLS) == len(set(CALLS)) == 2


def test_size(size):
    assert size in (3, 5)


@tvm.testing.parametrize_targets("llvm", "opencl")
def test_listed(target):
    assert target == "llvm"


@tvm.testing.known_failing_targets("llvm")
def test_known(target):
    assert target != "llvm"


@tvm.testing.requires_cuda
def test_needs_cuda():
    assert tvm.cuda(0).exist


@tvm.testing.requires_tensorcore
def test_needs_tensor_cores():        # on the GPU simulator where there is no GPU
    dev = tvm.cuda(0)
    assert dev.exist
    X, W = te.placeholder((32, 32), "float16", name="X"), te.placeholder((32, 32), "float16", name="W")
    C = topi.cuda.dense_tensorcore(X, W)
    f = tvm.build(topi.cuda.schedule_dense_tensorcore([C]), [X, W, C], "cuda")
    x, w = (np.random.rand(32, 32).astype("float16") for _ in range(2))
    c = tvm.nd.array(np.full((32, 32), np.nan, "float32"), dev)
    f(tvm.nd.array(x, dev), tvm.nd.array(w, dev), c)
    np.testing.assert_allclose(c.numpy(), x.astype("float32") @ w.astype("float32").T, rtol=1e-4, atol=1e-4)
'''


def test_plugin_runs_tvm_style_tests(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tvmlab.testing.plugin"]\n')
    (tmp_path / "test_style.py").write_text(textwrap.dedent(TESTS))
    env = dict(os.environ, PYTHONPATH=str(ROOT), TVMLAB_TEST_TARGETS="llvm;cuda")
    env.pop("TVM_TEST_TARGETS", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    import tvmlab
    gpu = tvmlab.cuda(0).exist
    # test_sum: 2 shapes x 2 targets; test_size 2; test_listed: llvm (+ opencl skipped); test_known: llvm
    # xfails (+ cuda); test_needs_cuda; the cache check; test_needs_tensor_cores (on the simulator without a GPU)
    passed = 2 + 2 + 1 + 1 + 1 + (2 + 1 + 1 if gpu else 0)
    assert f"{passed} passed" in out, out
    assert "1 xfailed" in out, out
    if not gpu:
        assert "no cuda device on this machine" in out and "'opencl' is not among the test targets" in out, out
