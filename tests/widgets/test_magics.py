"""``%load_ext tvmlab`` and the ``%tvmlab`` magics, through IPython's shell."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")
pytest.importorskip("ipywidgets")

from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import tvmlab  # noqa: E402
from tvmlab import te  # noqa: E402


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "tvmlab")
    return shell


@pytest.fixture
def vadd(ip):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] * B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=16)
    ip.user_ns.update(A=A, B=B, C=C, s=s)
    return s, [A, B, C]


def test_explore_returns_the_explorer(ip, vadd):
    from tvmlab.widgets.explorer import Explorer
    ex = ip.run_line_magic("tvmlab", "explore s A B C --target llvm --no-bench")
    assert isinstance(ex, Explorer) and ex.targets == ["llvm"]
    assert [st.primitive for st in ex.trace] == ["split"]
    ex.apply("vectorize", stage="C", axis="i.inner")
    assert "T.vectorized(16)" in ex.text("AST2")
    assert len(vadd[0].trace) == 1


def test_lower_and_bench(ip, vadd):
    mod = ip.run_line_magic("tvmlab", "lower s A B C")
    assert "i.outer" in mod.script()
    simple = ip.run_line_magic("tvmlab", "lower s A B C --simple")
    assert "i.outer" in simple.script()
    rep = ip.run_line_magic("tvmlab", "bench s A B C --size n=777")
    assert len(rep) == 1 and rep[0]["status"] == "ok", rep.records
    assert rep[0]["flops"] == 2 * 777 and "llvm: ok" in repr(rep)
    assert "<table" in rep._repr_html_()


def test_bench_reports_targets_it_cannot_run(ip, vadd):
    rep = ip.run_line_magic("tvmlab", "bench s A B C --target llvm --target opengl")
    by = {r["target"]: r for r in rep}
    assert by["llvm"]["status"] == "ok"
    if not tvmlab.device("opengl").exist:
        assert by["opengl"]["status"] == "not runnable"


def test_usage_errors_and_help(ip, vadd):
    with pytest.raises(UsageError, match="cannot find 'missing'"):
        ip.run_line_magic("tvmlab", "explore missing A B C")
    with pytest.raises(UsageError, match="give the argument tensors"):
        ip.run_line_magic("tvmlab", "lower s")
    with pytest.raises(UsageError):
        ip.run_line_magic("tvmlab", "compile s A B C")
    with pytest.raises(UsageError, match="NAME=INT"):
        ip.run_line_magic("tvmlab", "bench s A B C --size n")
    doc = ip.find_line_magic("tvmlab").__doc__
    assert "--target" in doc and "explore" in doc and "bench" in doc


def test_compiler_errors_propagate_as_tvmlab_errors(ip, vadd):
    with pytest.raises(tvmlab.TVMLabError):
        ip.run_line_magic("tvmlab", "lower s A B C C")   # duplicate arguments
