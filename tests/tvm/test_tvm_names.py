"""TVM module paths and helpers that TVM's own tests import: tvm.ir.module, relay.GlobalVar,
driver.build_module.get_binds, contrib.nvcc, tvm.testing's markers."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te


def test_ir_module_path_and_global_var_keys(rng):
    from tvmlab.ir.module import IRModule
    n = 9
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    f = tvm.lower(s, [A, B])["main"]
    from tvmlab.relay import GlobalVar
    mod = IRModule({GlobalVar("main"): f})
    assert mod["main"] is f and tvm.ir.GlobalVar("x") == tvm.ir.GlobalVar("x")
    built = tvm.build(s, [A, B])
    a = rng.standard_normal(n).astype("float32")
    b = tvm.nd.array(np.full(n, np.nan, "float32"))
    built(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 2.0)


def test_get_binds_gives_each_tensor_a_buffer():
    from tvmlab.driver.build_module import get_binds
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + 1.0, name="B")
    own = tvm.tir.decl_buffer((n, 4), "float32", name="Aown")
    binds, arg_list = get_binds([A, B, n], binds={A: own})
    assert binds[A] is own and arg_list[0] is own and arg_list[2] is n
    assert arg_list[1].dtype == "float32" and len(arg_list[1].shape) == 2
    with pytest.raises(tvm.TVMLabError):
        get_binds([A, "x"])


def test_nvcc_capability_checks_and_ptx():
    from tvmlab.contrib import nvcc
    assert nvcc.have_fp16("7.5") and nvcc.have_fp16("5.3") and not nvcc.have_fp16("5.2")
    assert nvcc.have_int8("6.1") and not nvcc.have_int8("6.0")
    assert nvcc.have_tensorcore("7.0") and not nvcc.have_tensorcore("6.1")
    with pytest.raises(tvm.TVMLabError):
        nvcc.have_fp16("seven")
    with pytest.raises(tvm.TVMLabError):
        nvcc.compile_cuda("", target_format="fatbin")
    pytest.importorskip("cuda.bindings.nvrtc")
    ptx = nvcc.compile_cuda('extern "C" __global__ void k(float* a) { a[threadIdx.x] += 1.0f; }')
    assert b".entry k" in bytes(ptx)


@tvm.testing.parametrize_targets("llvm")
def test_parametrize_targets_passes_the_target(target):
    """The target only (the ``dev`` fixture comes with the plugin: tests/tvm/test_testing_plugin.py)."""
    assert target == "llvm" and tvm.device(target, 0) == tvm.cpu(0)


def test_prim_expr_is_the_expression_base():
    n = te.var("n")
    assert isinstance(n + 1, tvm.tir.PrimExpr) and isinstance(tvm.tir.const(1.0), tvm.tir.PrimExpr)
    assert not isinstance(te.placeholder((2,)), tvm.tir.PrimExpr)


def test_build_takes_the_current_target_and_runtime_enabled(rng):
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with tvm.target.Target("llvm"):
        f = tvm.build(s, [A, B])
    a = rng.standard_normal(5).astype("float32")
    b = tvm.nd.array(np.full(5, np.nan, "float32"))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a + 1.0)
    assert tvm.runtime.enabled("llvm") and not tvm.runtime.enabled("vulkan")
    assert not tvm.runtime.enabled("no-such-target")


def test_clang_create_llvm_links_a_c_kernel_into_a_build(rng):
    from tvmlab.contrib import clang
    if not clang.find_clang(required=False):
        pytest.skip("no clang on this machine")
    src = """
    extern "C" int scale_add(float* out, const float* x, float k, int n) {
        for (int i = 0; i < n; ++i) out[i] = x[i] * k + 1.0f;
        return 0;
    }"""
    ll = clang.create_llvm(src, options=["-O2"])
    assert "define" in ll and "scale_add" in ll
    n = 16
    A = te.placeholder((4, n), name="A")

    def fcompute(ins, outs):
        ib = tvm.tir.ir_builder.create()
        with ib.for_range(0, 4, "r") as r:
            ib.emit(tvm.tir.call_extern("int32", "scale_add", outs[0].access_ptr("w", offset=r * n),
                                        ins[0].access_ptr("r", offset=r * n), tvm.tir.const(3.0), n))
        return ib.get()
    B = te.extern((4, n), [A], fcompute, name="B", dtype="float32")
    s = te.create_schedule(B.op)
    func = tvm.lower(s, [A, B])["main"]          # the IR text rides on an import_llvm attribute
    body = tvm.tir.AttrStmt(tvm.tir.StringImm("scale_add"), "pragma_import_llvm", tvm.tir.StringImm(ll), func.body)
    f = tvm.build(tvm.IRModule({"main": func.with_body(body)}), target="llvm")
    a = rng.standard_normal((4, n)).astype("float32")
    b = tvm.nd.array(np.full((4, n), np.nan, "float32"))
    f(tvm.nd.array(a), b)
    np.testing.assert_allclose(b.numpy(), a * 3.0 + 1.0, rtol=1e-6, atol=1e-6)   # a fused multiply-add near 0


def test_clang_missing_is_a_clear_error(monkeypatch):
    from tvmlab.contrib import clang
    monkeypatch.setenv("PATH", "/nonexistent")
    assert clang.find_clang(required=False) == []
    with pytest.raises(tvm.TVMLabError, match="clang"):
        clang.create_llvm("int f() { return 0; }")


def test_ffi_and_tir_stmt_module_names():
    """``tvm._ffi`` (the error class and the function registry) and ``tvm.tir.stmt``, as TVM's tests
    spell them."""
    from tvmlab._ffi.base import TVMError
    assert TVMError is tvm.TVMError is tvm._ffi.base.TVMError
    name = "tvmlab_test.ffi_double"
    tvm._ffi.register_func(name, lambda v: v * 2, override=True)
    try:
        assert tvm._ffi.get_global_func(name)(21) == 42 and tvm.get_global_func(name)(1) == 2
    finally:
        from tvmlab.runtime.registry import remove_global_func
        remove_global_func(name)
    assert tvm.tir.stmt.For is tvm.tir.For and tvm.tir.stmt.IfThenElse is tvm.tir.IfThenElse


def test_nnpack_is_not_available_and_says_so():
    from tvmlab.contrib import nnpack
    assert nnpack.is_available() is False
    with pytest.raises(tvm.TVMLabError, match="no NNPACK binding"):
        nnpack.convolution_inference(None, None, None, None, None, None)
