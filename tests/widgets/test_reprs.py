"""Rich notebook displays of tensors, schedules, lowered IR and modules."""
from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import tvmlab  # noqa: E402
from tvmlab import te  # noqa: E402
from tvmlab.widgets.colors import KIND_COLORS  # noqa: E402
from tvmlab.widgets.graph import dot_missing_reason  # noqa: E402


@pytest.fixture(scope="module")
def prog():
    A = te.placeholder((64, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((64,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].parallel(xo)
    return s, A, B


def fmt(obj):
    data, _ = InteractiveShell.instance().display_formatter.format(obj)
    return data


def test_tensor(prog):
    _, A, B = prog
    d = fmt(B)
    assert d["text/plain"] == repr(B)
    h = d["text/html"]
    assert "Tensor" in h and "(64,)" in h and "reduction" in h and "float32" in h
    if dot_missing_reason() is None:
        assert "<svg" in h
    assert "placeholder" in fmt(A)["text/html"]
    assert "http" not in h.replace("http://www.w3.org", "")   # nothing fetched from the network


def test_schedule(prog):
    s, _, _ = prog
    h = fmt(s)["text/html"]
    assert "s[B].split(" in h.replace("<span", "\n<span") or "split" in h
    assert KIND_COLORS["parallel"] in h and "i.outer" in h


def test_lowered_ir_and_primfunc(prog):
    s, A, B = prog
    mod = tvmlab.lower(s, [A, B])
    h = fmt(mod)["text/html"]
    assert "IRModule" in h and KIND_COLORS["parallel"] in h and "i.outer" in h
    assert fmt(mod)["text/plain"] == mod.script()
    assert "PrimFunc" in fmt(mod["main"])["text/html"]


def test_module(prog):
    s, A, B = prog
    m = tvmlab.build(s, [A, B])
    h = fmt(m)["text/html"]
    assert "LLVM IR" in h and "assembly" in h and "define" in h
    assert fmt(m)["text/plain"] == repr(m)
