"""tir.transform.MakePackedAPI: TVM's packed calling convention as IR (argument count, unpacking,
type codes, DLTensor fields), checked on the structure TVM's own tests check."""
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.driver.build_module import schedule_to_module
from tvmlab.errors import BuildError, LoweringError


def _llvm(mod):
    return tvm.tir.transform.Apply(lambda f: f.with_attr({"target": tvm.target.Target("llvm"),
                                                          "global_symbol": "main"}))(mod)


def _lets(stmt):
    """{name: LetStmt} of the entry code, and the statement where it ends."""
    out = {}
    while not isinstance(stmt, tvm.tir.For):
        if isinstance(stmt, tvm.tir.LetStmt):
            out[stmt.var.name] = stmt
        stmt = stmt.seq[-1] if isinstance(stmt, tvm.tir.SeqStmt) else stmt.body
    return out, stmt


def _vector_add():
    n = te.size_var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    mod = schedule_to_module(te.create_schedule(C.op), [n, A, B, C])
    return n, _llvm(tvm.tir.transform.StorageFlatten(64)(mod))


def test_packed_signature_and_unpacked_arguments():
    _, mod = _vector_add()
    f = tvm.tir.transform.MakePackedAPI()(mod)["main"]
    assert [p.name for p in f.params] == ["args", "arg_type_ids", "num_args", "out_ret_value",
                                          "out_ret_tcode", "resource_handle"]
    assert f.buffer_map == {} and f.attrs["calling_conv"] == 1
    assert f.body.condition.a is f.params[2] and f.body.condition.b.value == 4
    # the last two stay plain parameters, between num_args and the return slots
    g = tvm.tir.transform.MakePackedAPI(2)(mod)["main"]
    assert [p.name for p in g.params] == ["args", "arg_type_ids", "num_args", "arg.B", "arg.C",
                                          "out_ret_value", "out_ret_tcode", "resource_handle"]
    assert g.body.condition.b.value == 2 and "calling_conv" not in g.attrs
    # a packed function is left as it is
    tvm.ir.assert_structural_equal(tvm.tir.transform.MakePackedAPI()(tvm.IRModule({"main": f}))["main"], f)


def test_buffers_and_scalars_are_read_out_of_the_packed_values():
    n, mod = _vector_add()
    f = tvm.tir.transform.MakePackedAPI()(mod)["main"]
    lets, loop = _lets(f.body)
    args = f.params[0]
    for k, name in enumerate(["n", "A", "B", "C"]):
        get = lets[f"arg.{name}"].value
        get = get.value if isinstance(get, tvm.tir.Cast) else get
        assert get.op == "tvm_struct_get" and get.args[0] is args and \
            [a.value for a in get.args[1:]] == [k, 12]
    assert lets["n"].var is n and lets["n"].value is lets["arg.n"].var
    for name in "ABC":      # each buffer's data pointer is field 1 of its DLTensor
        data = lets[name].value
        assert data.op == "tvm_struct_get" and data.args[0] is lets[f"arg.{name}"].var
        assert data.args[2].value == 1
    assert lets["dev_id"].value.args[2].value == 9
    text = str(f)
    assert "'main: Expect arg[0] to be int'" in text and "'arg.C.dtype is expected to be float32'" in text
    assert "'Argument arg.B.shape[0] has an unsatisfied constraint'" in text
    assert "main_compute_" in text and "C[i] = A[i] + B[i]" in str(loop)


def _extern_call_func(second):
    ib = tvm.tir.ir_builder.create()
    buf = tvm.tir.decl_buffer(name="input_buffer", shape=[1])
    ib.emit(tvm.tir.call_extern("float32", "some_external_call", buf.data, second))
    mod = tvm.IRModule.from_expr(tvm.tir.PrimFunc([buf, second], ib.get()))
    return buf, tvm.tir.transform.MakePackedAPI()(_llvm(mod))["main"]


def _call_after_checks(f):
    stmt = f.body
    while not isinstance(stmt, tvm.tir.Evaluate) or not isinstance(stmt.value, tvm.tir.Call):
        stmt = stmt.seq[-1] if isinstance(stmt, tvm.tir.SeqStmt) else stmt.body
    return stmt.value


def test_handle_argument_is_unpacked_and_bound():
    handle = tvm.tir.Var("not_device_context", dtype="handle")
    buf, f = _extern_call_func(handle)
    assert f.body.condition.b.value == 2
    lets = {}
    stmt = f.body
    while not isinstance(stmt, tvm.tir.Evaluate):
        if isinstance(stmt, tvm.tir.LetStmt):
            lets[stmt.var.name] = stmt
        stmt = stmt.seq[-1] if isinstance(stmt, tvm.tir.SeqStmt) else stmt.body
    assert lets["not_device_context"].value is lets["arg.not_device_context"].var
    call = _call_after_checks(f)
    assert call.args[1] is lets["input_buffer"].var is buf.data
    assert call.args[2] is lets["not_device_context"].var is handle


def test_device_api_context_becomes_the_resource_handle():
    ctx = tvm.tir.Var("device_api_context", dtype="handle")
    _, f = _extern_call_func(ctx)
    assert f.params[5] is ctx and f.body.condition.b.value == 1
    assert _call_after_checks(f).args[2] is ctx


def test_make_packed_api_errors():
    _, mod = _vector_add()
    with pytest.raises(LoweringError, match="num_unpacked_args must be -1 or 0..4"):
        tvm.tir.transform.MakePackedAPI(5)(mod)
    bare = tvm.IRModule.from_expr(tvm.tir.PrimFunc([tvm.tir.Var("x", "int32")], tvm.tir.Evaluate(0)))
    with pytest.raises(LoweringError, match="no \"target\" attribute"):
        tvm.tir.transform.MakePackedAPI()(tvm.tir.transform.Apply(
            lambda f: f.with_attr("global_symbol", "main"))(bare))
    with pytest.raises(BuildError, match="packed calling convention"):
        tvm.build(tvm.tir.transform.MakePackedAPI()(mod), target="llvm")
