"""Module.save / export_library and runtime.load_module: compiled code outlives the process that built it."""
import ctypes.util
import shutil

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te, topi
from tvmlab.contrib import cc, utils
from tvmlab.errors import BuildError, DeviceError, RuntimeArgError
from tvmlab.runtime.llvm_jit import not_runnable as _not_runnable

pytestmark = pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc") or shutil.which("ld")),
                                reason="no C compiler or linker on PATH to link shared libraries")


def _vadd(parallel=True):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    if parallel:
        s[C].parallel(xo)
    s[C].vectorize(xi)
    return tvm.build(s, [A, B, C], "llvm", name="myadd")


def _check_vadd(f, n=1027):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = tvm.nd.array(np.full(n, np.nan, np.float32))
    f(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_array_equal(c.numpy(), a + b)


def test_tutorial_save_link_load():
    """TVM's getting-started flow: save an object, link it, load it; export a library, load it."""
    fadd = _vadd()
    temp = utils.tempdir()
    fadd.save(temp.relpath("myadd.o"))
    cc.create_shared(temp.relpath("myadd.so"), [temp.relpath("myadd.o")])
    assert temp.listdir() == ["myadd.o", "myadd.so"]
    fadd1 = tvm.runtime.load_module(temp.relpath("myadd.so"))
    _check_vadd(fadd1)
    fadd.export_library(temp.relpath("myadd_pack.so"))
    fadd2 = tvm.runtime.load_module(temp.relpath("myadd_pack.so"))
    for n in (1, 8, 1027):
        _check_vadd(fadd2, n)
    assert fadd2.entry_name == "myadd" and fadd2.path.endswith("myadd_pack.so")
    assert repr(fadd2["myadd"]) == "<Function myadd(A: float32[n], B: float32[n], C: float32[n], n: int32)>"
    assert fadd2.time_evaluator("myadd", tvm.cpu(), number=3)(
        *[tvm.nd.empty((64,)) for _ in range(3)]).mean > 0
    # the loaded functions check their arguments as the built ones do
    with pytest.raises(RuntimeArgError, match="expected 3 arguments"):
        fadd2(tvm.nd.empty((4,)), tvm.nd.empty((4,)))
    with pytest.raises(RuntimeArgError, match="float32"):
        fadd2(*[tvm.nd.empty((4,), "float64")] * 3)


def test_other_formats(tmp_path):
    fadd = _vadd(parallel=False)
    fadd.save(tmp_path / "f.ll")
    fadd.save(tmp_path / "f.s")
    fadd.save(tmp_path / "f.so")
    assert "define" in (tmp_path / "f.ll").read_text() and "myadd" in (tmp_path / "f.s").read_text()
    _check_vadd(tvm.runtime.load_module(tmp_path / "f.so"))
    with pytest.raises(BuildError, match="unknown format 'txt'"):
        fadd.save(tmp_path / "f.txt")


def test_loaded_in_a_fresh_process(tmp_path, isolated):
    """A packed matmul (parallel loops, a symbolic-free spec) and a symbolic add, run in another process."""
    A = te.placeholder((70, 50), name="A")
    B = te.placeholder((50, 45), name="B")
    C = topi.matmul(A, B)
    tvm.build(topi.schedule_matmul(C), [A, B, C], "llvm", name="mm").export_library(tmp_path / "mm.so")
    n = te.var("n")
    X = te.placeholder((n, 3), name="X")
    Y = te.compute((n * 2,), lambda i: X[i // 2, i % 3] * 2, name="Y")
    tvm.build(te.create_schedule(Y.op), [X, Y], "llvm", name="dup").export_library(tmp_path / "dup.so")
    code = f"""
        import numpy as np, tvmlab as tvm
        rng = np.random.default_rng(0)
        mm = tvm.runtime.load_module({str(tmp_path / "mm.so")!r})
        a, b = rng.standard_normal((70, 50), dtype=np.float32), rng.standard_normal((50, 45), dtype=np.float32)
        c = tvm.nd.array(np.full((70, 45), np.nan, np.float32))
        mm(tvm.nd.array(a), tvm.nd.array(b), c)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4, atol=1e-4)
        dup = tvm.runtime.load_module({str(tmp_path / "dup.so")!r})
        x = rng.standard_normal((5, 3), dtype=np.float32)
        y = tvm.nd.array(np.full(10, np.nan, np.float32))
        dup(tvm.nd.array(x), y)
        np.testing.assert_array_equal(y.numpy(), [x[i // 2, i % 3] * 2 for i in range(10)])
        try:
            dup(tvm.nd.array(x), tvm.nd.empty((9,)))
        except tvm.TVMLabError as e:
            print("rejected:", e)
        print("ok")
    """
    rc, out = isolated(code)
    assert rc == 0 and "ok" in out, out
    assert "rejected:" in out and "n * 2" in out, out


def test_cross_compiled_library_refuses_to_run(tmp_path):
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm -mcpu=x86-64 -mattr=+sse2")
    f.export_library(tmp_path / "portable.so")
    g = tvm.runtime.load_module(tmp_path / "portable.so")
    a = np.arange(16, dtype=np.float32)
    b = tvm.nd.empty((16,))
    g(tvm.nd.array(a), b)
    np.testing.assert_array_equal(b.numpy(), a + 1)
    assert "lacks" in _not_runnable("x86-64", "+sse2,+surely-no-cpu-has-this")
    assert "-mcpu=sapphirerapids" in _not_runnable("sapphirerapids", "")
    assert _not_runnable("x86-64", "+sse2") is None


def test_misuse(tmp_path):
    with pytest.raises(RuntimeArgError, match="no file"):
        tvm.runtime.load_module(tmp_path / "missing.so")
    obj = tmp_path / "f.o"
    _vadd().save(obj)
    with pytest.raises(RuntimeArgError, match="object file; link it first"):
        tvm.runtime.load_module(obj)
    libm = ctypes.util.find_library("m")
    if libm:
        import os
        path = next((p for p in ("/lib/x86_64-linux-gnu/" + libm, "/usr/lib/x86_64-linux-gnu/" + libm)
                     if os.path.exists(p)), None)
        if path:
            with pytest.raises(RuntimeArgError, match="not a library exported by tvmlab"):
                tvm.runtime.load_module(path)
    (tmp_path / "junk.so").write_bytes(b"not an ELF file")
    with pytest.raises(RuntimeArgError, match="cannot load"):
        tvm.runtime.load_module(tmp_path / "junk.so")
    with pytest.raises(BuildError, match="no object file"):
        cc.create_shared(tmp_path / "x.so", [tmp_path / "nothing.o"])
    loaded = tvm.runtime.load_module(_export(tmp_path))
    with pytest.raises(RuntimeArgError, match="cannot be written out"):
        loaded.export_library(tmp_path / "again.so")


def _export(tmp_path):
    path = tmp_path / "v.so"
    _vadd().export_library(path)
    return path


def test_gpu_modules_are_not_exported(tmp_path):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "cuda")
    with pytest.raises(RuntimeArgError, match="cannot be written out"):
        f.export_library(tmp_path / "k.so")
    with pytest.raises((RuntimeArgError, DeviceError)):
        f.save(tmp_path / "k.o")
