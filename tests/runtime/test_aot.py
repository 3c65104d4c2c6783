"""relay.build with the ahead-of-time executor: one entry runs the whole model; its library loads back from
Python; code built for another CPU (-mtriple) compiles, exports and refuses to run here."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from tvmlab.topi import testing as ref
import tvmlab as tvm
from tvmlab import relay, te, tir
from tvmlab.contrib import graph_executor
from tvmlab.errors import BuildError, DeviceError, RuntimeArgError
from tvmlab.relay.backend import Executor, Runtime
from tvmlab.runtime import llvm_jit
from tvmlab.runtime.executor import AotModule

AOT = Executor("aot")
HAVE_CC = any(shutil.which(c) for c in ("cc", "gcc", "clang"))
needs_cc = pytest.mark.skipif(not HAVE_CC, reason="no C compiler (cc, gcc or clang) to link the model's C API")


def rand(rng, *shape):
    return rng.uniform(-1, 1, shape).astype("float32")


def build(f, params=None, executor=AOT, **kw):
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(f), target=kw.pop("target", "llvm"), params=params,
                           executor=executor, **kw)


def poisoned(lib, name="default"):
    """An AotModule whose whole workspace holds NaN (0xFF bytes) before its first run."""
    m = AotModule(lib[name](tvm.cpu(0)))
    m.module.workspace[...] = 0xFF
    return m


def two_headed(rng):
    """conv -> relu -> (flatten, dense) with three outputs: the dense, the relu's view, and the input's view."""
    x = relay.var("data", shape=(1, 3, 8, 8))
    w, d = relay.var("w", shape=(4, 3, 3, 3)), relay.var("d", shape=(5, 256))
    y = relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1)))
    flat = relay.nn.batch_flatten(y)
    out = relay.Tuple([relay.nn.dense(flat, d), relay.reshape(y, (4, 64)), relay.reshape(x, (3, 64))])
    params = {"w": rand(rng, 4, 3, 3, 3), "d": rand(rng, 5, 256)}
    return relay.Function([x, w, d], out), params


def two_headed_ref(xv, params):
    y = np.maximum(ref.conv2d_nchw_python(xv, params["w"], 1, (1, 1, 1, 1)), 0)
    return [y.reshape(1, 256) @ params["d"].T.astype("float64"), y.reshape(4, 64), xv.reshape(3, 64)]


def test_aot_matches_numpy_and_the_graph_executor_bit_for_bit(rng):
    f, params = two_headed(rng)
    lib = build(f, params)
    graph = build(f, params, executor=None)
    assert repr(lib).startswith("AOTExecutorFactoryModule('default', ")
    xv = rand(rng, 1, 3, 8, 8)
    m = poisoned(lib)
    m.set_input("data", xv)
    m.run()
    g = graph_executor.GraphModule(graph["default"](tvm.cpu(0)))
    g.run(data=xv)
    assert m.get_num_outputs() == 3 and m.get_num_inputs() == 1
    for i, want in enumerate(two_headed_ref(xv, params)):
        got = m.get_output(i).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got, g.get_output(i).numpy())
    plan = lib.get_executor_config()
    assert [o["name"] for o in plan["outputs"]] == ["output0", "output1", "output2"]
    assert [r["name"] for r in plan["inputs"]] == ["data"] and len(plan["params"]) == len(lib.get_params())
    # the outputs that are views share the workspace with what they view: the input's view is the input
    assert plan["outputs"][2]["offset"] == plan["inputs"][0]["offset"]
    assert all(r["offset"] % 64 == 0 for r in plan["inputs"] + plan["outputs"] + plan["params"])


def test_aot_module_api_and_misuse(rng):
    f, params = two_headed(rng)
    lib = build(f, params)
    m = AotModule(lib["default"](tvm.cpu(0)))
    xv = rand(rng, 1, 3, 8, 8)
    m.set_input(0, xv, w=params["w"], nonsense=1)          # named params the model does not take are skipped
    np.testing.assert_array_equal(m.get_input("data").numpy(), xv)
    assert m.get_input_index("data") == 0
    assert m.get_input_info() == ({"data": (1, 3, 8, 8)}, {"data": "float32"})
    out = tvm.nd.empty((1, 5))
    m.run()
    assert m.get_output(0, out) is out and np.isfinite(out.numpy()).all()
    assert m.benchmark(number=2, repeat=2).mean > 0
    run = relay.create_executor("aot", tvm.IRModule.from_expr(f), tvm.cpu(0), "llvm", params=params).evaluate()
    np.testing.assert_allclose(run(xv)[0].numpy(), out.numpy(), rtol=1e-5, atol=1e-5)   # built at the default opt_level
    with pytest.raises(RuntimeArgError, match="no input 'x'; inputs: data"):
        m.set_input("x", xv)
    with pytest.raises(RuntimeArgError, match=r"input 'data': expected shape \(1, 3, 8, 8\), got \(3, 8, 8\)"):
        m.set_input("data", xv[0])
    with pytest.raises(RuntimeArgError, match="expected dtype float32, got float64"):
        m.set_input("data", xv.astype("float64"))
    with pytest.raises(RuntimeArgError, match="output index 3 is out of range: the model has 3 outputs"):
        m.get_output(3)
    with pytest.raises(RuntimeArgError, match="input index 1 is out of range"):
        m.get_input(1)
    with pytest.raises(RuntimeArgError, match="an ahead-of-time model: use tvm.runtime.executor.AotModule"):
        graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    with pytest.raises(RuntimeArgError, match="a graph-executor model: use graph_executor.GraphModule"):
        AotModule(build(f, params, executor=None)["default"](tvm.cpu(0)))
    with pytest.raises(RuntimeArgError, match="holds the model 'default', not 'other'"):
        lib["other"]
    with pytest.raises(RuntimeArgError, match="runs on the CPU"):
        lib["default"](tvm.cuda(0))


def test_executor_runtime_and_mod_name_are_checked(rng):
    f, params = two_headed(rng)
    with pytest.raises(tvm.TVMLabError, match="unknown executor 'vm'; known: 'graph', 'aot'"):
        Executor("vm")
    with pytest.raises(tvm.TVMLabError, match="unknown option 'bogus'; known: interface-api"):
        Executor("aot", {"bogus": 1})
    with pytest.raises(tvm.TVMLabError, match="workspace-byte-alignment must be a power of two >= 64"):
        Executor("aot", {"workspace-byte-alignment": 16})
    with pytest.raises(tvm.TVMLabError, match="option 'unpacked-api' must be a bool"):
        Executor("aot", {"unpacked-api": "yes"})
    with pytest.raises(tvm.TVMLabError, match="unknown runtime 'java'"):
        Runtime("java")
    with pytest.raises(tvm.TVMLabError, match="executor must be relay.backend.Executor"):
        build(f, params, executor=3)
    with pytest.raises(tvm.TVMLabError, match="ahead-of-time executor compiles for CPU targets"):
        build(f, params, target="cuda")
    with pytest.raises(tvm.TVMLabError, match="mod_name 'my model' names the model's C API"):
        build(f, params, mod_name="my model")
    # TVM's spellings: a name, options, a C runtime; a wider alignment spaces the buffers out
    lib = build(f, params, executor=Executor("aot", {"workspace-byte-alignment": 256, "interface-api": "c"}),
                runtime=Runtime("crt", {"system-lib": True}), mod_name="net")
    plan = lib.get_executor_config()
    assert plan["prefix"] == "tvmlab_net" and all(c[1] % 256 == 0 for call in plan["calls"] for c in call["args"])
    xv = rand(rng, 1, 3, 8, 8)
    m = poisoned(lib, "net")
    m.run(data=xv)
    np.testing.assert_allclose(m.get_output(0).numpy(), two_headed_ref(xv, params)[0], rtol=1e-5, atol=1e-5)
    assert isinstance(build(f, params, executor="aot")["default"](), type(m.module))


def checked_negative(attrs, inputs, out_type):
    """negative as an extern kernel that asserts its first input element is below 100."""
    def body(ins, outs):
        ib = tir.ir_builder.create()
        x, y = ib.buffer_ptr(ins[0]), ib.buffer_ptr(outs[0])
        with ib.for_range(0, int(np.prod(out_type.shape)), name="i") as i:
            y[i] = -x[i]
        return tir.AssertStmt(x[0] < 100.0, "the first element is below 100", ib.get())
    return [te.extern(out_type.shape, [inputs[0]], body, name="checked_negative", dtype=out_type.dtype)]


def failing_model(mod_name="default"):
    """exp -> checked negative -> exp: the middle kernel fails when exp(x[0]) >= 100."""
    from tvmlab.relay.op.registry import OpPattern
    op = relay.op.get("negative")
    old = op.compute, op.pattern
    op.compute, op.pattern = checked_negative, OpPattern.OPAQUE
    try:
        x = relay.var("x", shape=(4,))
        return build(relay.Function([x], relay.exp(relay.negative(relay.exp(x)))), mod_name=mod_name)
    finally:
        op.compute, op.pattern = old


def test_a_failing_kernel_stops_the_run_with_its_message():
    lib = failing_model()
    m = poisoned(lib)
    m.run(x=np.array([0.5, 1, 2, 3], "float32"))
    np.testing.assert_allclose(m.get_output(0).numpy(), np.exp(-np.exp([0.5, 1, 2, 3])), rtol=1e-6)
    m.module.workspace[...] = 0xFF
    m.set_input("x", np.array([5, 1, 2, 3], "float32"))
    with pytest.raises(RuntimeArgError, match=r"fused_negative: assertion failed: the first element is below 100"):
        m.run()
    assert np.isnan(m.get_output(0).numpy()).all()          # the kernel after the failing one did not run


@needs_cc
def test_exported_library_is_one_file_and_loads_without_the_compiler(rng, tmp_path, isolated):
    f, params = two_headed(rng)
    lib = build(f, params)
    lib.export_library(tmp_path / "model.so")
    assert sorted(os.listdir(tmp_path)) == ["model.h", "model.so"]
    xv = rand(rng, 1, 3, 8, 8)
    np.save(tmp_path / "x.npy", xv)
    rc, out = isolated(f"""
        import sys, numpy as np, tvmlab as tvm
        lib = tvm.runtime.load_module({str(tmp_path / "model.so")!r})
        m = tvm.runtime.executor.AotModule(lib["default"](tvm.cpu(0)))
        m.run(data=np.load({str(tmp_path / "x.npy")!r}))
        np.savez({str(tmp_path / "y.npz")!r}, *[m.get_output(i).numpy() for i in range(3)],
                 w=lib.get_params()["p0"].numpy())
        assert "tvmlab.relay" not in sys.modules, "loading a model must not need the compiler"
        print(repr(lib), lib.get_executor_config()["prefix"])
    """)
    assert rc == 0, out
    assert "AOTExecutorFactoryModule('default', " in out and "tvmlab_default" in out
    m = AotModule(lib["default"](tvm.cpu(0)))
    m.run(data=xv)
    with np.load(tmp_path / "y.npz") as z:
        for i in range(3):
            np.testing.assert_array_equal(z[f"arr_{i}"], m.get_output(i).numpy())
        np.testing.assert_array_equal(z["w"], lib.get_params()["p0"].numpy())
    loaded = tvm.runtime.load_module(tmp_path / "model.so")
    with pytest.raises(RuntimeArgError, match="loaded from a library, which carries its plan"):
        loaded.get_graph_json()
    with pytest.raises(RuntimeArgError, match="cannot be written out again"):
        loaded.export_library(tmp_path / "again.so")
    with pytest.raises(RuntimeArgError, match=r"written as a shared library \('.so'.*got '.*model.zip'"):
        lib.export_library(str(tmp_path / "model.zip"))
    with pytest.raises(BuildError, match="compiler 'no-such-cc' not found"):
        lib.export_library(tmp_path / "other.so", cc="no-such-cc")


@needs_cc
def test_a_failing_kernel_in_a_loaded_library(tmp_path):
    failing_model().export_library(tmp_path / "fails.so")
    m = AotModule(tvm.runtime.load_module(tmp_path / "fails.so")["default"](tvm.cpu(0)))
    m.run(x=np.array([0, 1, 2, 3], "float32"))
    np.testing.assert_allclose(m.get_output(0).numpy(), np.exp(-np.exp([0, 1, 2, 3])), rtol=1e-6)
    with pytest.raises(RuntimeArgError, match="fused_negative: assertion failed: the first element is below 100"):
        m.run(x=np.array([9, 1, 2, 3], "float32"))


# ------------------------------------------------------------------ another CPU
HOST_ARCH = llvm_jit.triple_arch(llvm_jit.llvm.get_process_triple())
OTHER = "aarch64-linux-gnu" if HOST_ARCH != "aarch64" else "x86_64-linux-gnu"
OTHER_ARCH = OTHER.split("-")[0]
AARCH64 = f"llvm -mtriple={OTHER}"
OTHER_CC = f"{OTHER}-gcc"


def test_a_model_for_another_cpu_compiles_and_refuses_to_run_here(rng):
    from tvmlab.codegen.llvm_vector import vector_registers
    if OTHER_ARCH == "aarch64":
        assert vector_registers(AARCH64).bits == 128    # NEON: the schedules tile for 4 floats a register
    f, params = two_headed(rng)
    for executor in (AOT, None):
        lib = build(f, params, executor=executor, target=AARCH64)
        asm = lib.get_lib().get_source("asm")
        assert ("fmla" in asm or ".4s" in asm) if OTHER_ARCH == "aarch64" else "%xmm" in asm, asm[:400]
        with pytest.raises(DeviceError, match=f"built for {OTHER} .*but this machine is"):
            m = lib["default"](tvm.cpu(0))
            (graph_executor.GraphModule(m) if executor is None else m).run()
    with pytest.raises(BuildError, match="-mtriple=z80-unknown-none: LLVM has no back end"):
        build(f, params, target="llvm -mtriple=z80-unknown-none")
    with pytest.raises(BuildError, match="-mcpu=native names this machine's CPU"):
        build(f, params, target=AARCH64 + " -mcpu=native")
    # the host's own triple (any vendor spelling) builds code that runs here
    host = build(f, params, target=f"llvm -mtriple={HOST_ARCH}-linux-gnu")
    AotModule(host["default"](tvm.cpu(0))).run(data=rand(rng, 1, 3, 8, 8))


def test_cross_built_kernels_export_with_the_targets_compiler(tmp_path):
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    xo, _ = s[B].split(B.op.axis[0], factor=8)
    s[B].parallel(xo)
    # a 32-bit ARM object: its ELF32 symbol table names the libgomp calls the link needs
    from tvmlab.codegen.llvm_vector import vector_registers
    armv7 = "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon"
    assert (vector_registers(armv7).bits, vector_registers(armv7).count) == (128, 16)     # q0-q15
    arm = tvm.build(s, [A, B], armv7, name="twice")
    arm.save(tmp_path / "twice.o")
    undefined = llvm_jit.undefined_symbols((tmp_path / "twice.o").read_bytes())
    assert ("GOMP_parallel" in undefined) == llvm_jit.has_openmp()
    mod = tvm.build(s, [A, B], AARCH64, name="twice")
    if shutil.which(OTHER_CC) is None:
        with pytest.raises(BuildError, match=f"pass cc='{OTHER_CC}'"):
            mod.export_library(tmp_path / "twice.so")
        pytest.skip(f"{OTHER_CC} not found (apt-get install gcc-{OTHER_ARCH.replace('_', '-')}-linux-gnu; "
                    "make test installs the aarch64 one)")
    from tvmlab.contrib import cc
    mod.export_library(tmp_path / "twice.so")                 # <triple>-gcc found on PATH
    mod.export_library(tmp_path / "twice2.so", fcompile=cc.cross_compiler(OTHER_CC))
    for name in ("twice.so", "twice2.so"):
        assert tvm.runtime.library.elf_machine(tmp_path / name) == {"aarch64": 183, "x86_64": 62}[OTHER_ARCH]
        with pytest.raises(RuntimeArgError, match=f"holds code for {OTHER_ARCH}, but this machine is {HOST_ARCH}"):
            tvm.runtime.load_module(tmp_path / name)
