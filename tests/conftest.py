"""Shared fixtures for the end-to-end tests.

``rng``: a numpy Generator seeded from the test's id, so every test sees its
own reproducible data.  ``poison(arr)``: fill an output with NaN / a sentinel.
``check_build(s, args, ref_fn, ...)``: build for LLVM, run on random inputs
with poisoned outputs, compare every output with ``ref_fn`` at tolerances
fitting its dtype.
"""
from __future__ import annotations

import os
import tempfile
import zlib

import numpy as np
import pytest

import tvmlab
import tvmlab.testing
from tvmlab.ir import expr as E
from tvmlab.ir.tensor import PlaceholderOp, Tensor
from tvmlab.testing import poison as _poison
from tvmlab.testing import random_data, tolerance


# property tests (hypothesis) draw the same examples on every run, so a run's result does not depend
# on luck; HYPOTHESIS_PROFILE=explore draws new ones each run, to look for new failures
try:
    from hypothesis import settings as _hyp

    _hyp.register_profile("tvmlab", derandomize=True, database=None)
    _hyp.register_profile("explore", derandomize=False)
    _hyp.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "tvmlab"))
except ImportError:      # hypothesis is a test dependency; without it the property tests do not import
    pass


# the machine figures the explorer keeps (tvmlab.bench.machine) go to a folder of this run,
# never into the user's cache
os.environ.setdefault("TVMLAB_CACHE_DIR", tempfile.mkdtemp(prefix="tvmlab-test-cache-"))

_THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_THREADS_AT_START = {k: os.environ.get(k) for k in _THREAD_VARS}


def _restore_threads():
    for k, v in _THREADS_AT_START.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(autouse=True)
def _restore_thread_settings():
    """Each test starts with the thread settings the run started with.

    distributed's LocalCluster writes OMP_NUM_THREADS=1 (and the BLAS ones) into this
    process's environment for its nanny; left there, processes started by later tests
    (fresh measurement interpreters) would run their parallel loops on one thread.
    """
    _restore_threads()
    yield
    _restore_threads()


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (or set TVMLAB_SLOW=1)")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``slow`` (a ResNet-50 end to end) are skipped unless asked for."""
    if config.getoption("--run-slow") or os.environ.get("TVMLAB_SLOW"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (or TVMLAB_SLOW=1)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def poison():
    return _poison


def eval_dim(e, env):
    """The integer value of a shape expression given ``env`` {Var or name: int}."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        for k, v in env.items():
            if k is e or k == e.name:
                return int(v)
        raise KeyError(f"no value given for shape variable {e.name}")
    ops = {E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
           E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b,
           E.Min: min, E.Max: max}
    for cls, fn in ops.items():
        if isinstance(e, cls):
            return fn(eval_dim(e.a, env), eval_dim(e.b, env))
    raise TypeError(f"cannot evaluate shape expression {e!r}")


def shape_of(t, env):
    return tuple(eval_dim(d, env) for d in t.shape)


def _key(ranges, t):
    if ranges is None:
        return None
    return ranges.get(t, ranges.get(t.name)) if not isinstance(t, str) else ranges.get(t)


def run_build(s, args, ref_fn, rng, *, env=None, ranges=None, inputs=None, rtol=None,
              atol=None, target="llvm", name="default_function", simple_mode=None, scalars=None):
    """Build ``s`` for ``args``, run it, and compare outputs with ``ref_fn(*inputs)``.

    Placeholders among ``args`` are inputs (random data, or ``inputs[name]``);
    the other tensors are outputs, filled with NaN / sentinels before the call.
    ``ranges`` maps a tensor (or its name) to (low, high) for its random data;
    ``env`` gives symbolic dims; ``scalars`` maps scalar Var args to values
    passed to both the function and ``ref_fn`` (after the arrays).
    Returns (module, {name: numpy result}).
    """
    env = env or {}
    scalars = scalars or {}
    mod = tvmlab.build(s, args, target=target, name=name)
    dev = tvmlab.cpu(0)
    call_args, in_np, outs = [], [], []
    for a in args:
        if isinstance(a, Tensor) and isinstance(a.op, PlaceholderOp):
            if inputs is not None and a.name in inputs:
                data = np.asarray(inputs[a.name])
            else:
                lo_hi = _key(ranges, a) or (None, None)
                data = random_data(shape_of(a, env), a.dtype, rng, *lo_hi)
            in_np.append(data)
            call_args.append(tvmlab.nd.array(data, dev))
        elif isinstance(a, Tensor):
            arr = _poison(tvmlab.nd.empty(shape_of(a, env), a.dtype, dev))
            outs.append((a, arr))
            call_args.append(arr)
        else:
            call_args.append(scalars[a])
    mod(*call_args)
    expected = ref_fn(*in_np, *[scalars[a] for a in args if not isinstance(a, Tensor)])
    if not isinstance(expected, (list, tuple)):
        expected = [expected]
    assert len(expected) == len(outs), f"ref_fn gave {len(expected)} outputs for {len(outs)}"
    results = {}
    for (t, arr), want in zip(outs, expected):
        got = arr.numpy()
        want = np.asarray(want)
        r, a_ = tolerance(t.dtype)
        r = r if rtol is None else rtol
        a_ = a_ if atol is None else atol
        if want.dtype != got.dtype:
            want = want.astype(got.dtype)
        tvmlab.testing.assert_allclose(got, want, rtol=r, atol=a_)
        results[t.name] = got
    return mod, results


@pytest.fixture
def check_build(rng):
    def check(s, args, ref_fn, **kw):
        return run_build(s, args, ref_fn, kw.pop("rng", rng), **kw)
    return check


ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def run_isolated(code, timeout=120):
    """Run ``code`` in a fresh interpreter, for cases that could kill the process.

    Returns (returncode, stdout + stderr); a crash shows as a negative code or
    an LLVM abort message, a hang as returncode None, instead of taking the
    test session down.
    """
    import os
    import subprocess
    import sys
    import textwrap
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return None, f"timed out after {timeout} s (a hang)\n{e.stdout or ''}{e.stderr or ''}"
    return p.returncode, p.stdout + p.stderr


@pytest.fixture
def isolated():
    return run_isolated


@pytest.fixture(params=["gpu", "simulator"])
def cuda_run(request):
    """``cuda_run(f, *arrays)`` runs CUDA build ``f`` on numpy ``arrays`` and returns them as numpy
    arrays after the run (outputs filled): on the GPU where there is one, and on the thread-level
    simulator everywhere (which also fails the test on a race, a divergent barrier or an
    out-of-bounds access)."""
    if request.param == "gpu":
        if not tvmlab.cuda(0).exist:
            pytest.skip("no CUDA device on this machine (tvmlab.cuda(0).exist is False); the simulator "
                        "variant of this test runs the same kernels")
        dev = tvmlab.cuda(0)

        def run(f, *arrays):
            nds = [tvmlab.nd.array(a, dev) if isinstance(a, np.ndarray) else a for a in arrays]
            f(*nds)
            return [x.numpy() if hasattr(x, "numpy") else x for x in nds]
    else:
        def run(f, *arrays):
            arrays = [np.array(a) if isinstance(a, np.ndarray) else a for a in arrays]
            tvmlab.testing.simulate(f, *arrays)
            return arrays
    return run
