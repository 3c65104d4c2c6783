"""TVM's packed calling convention as IR: what ``tir.transform.MakePackedAPI`` makes of a function.

A packed function takes ``(args, arg_type_ids, num_args, out_ret_value,
out_ret_tcode, resource_handle)``: ``args`` is an array of 8-byte values and
``arg_type_ids`` their type codes.  The pass rewrites a PrimFunc into that
form: it checks the argument count, reads each argument out of ``args``
(``tvm_struct_get(args, i, 12)``), checks its type code, and for a buffer
argument reads the DLTensor's fields (data, shape, strides, byte offset,
device), binding the buffer's variables to them and asserting what the
buffer declares (ndim, dtype, constant dims, compact strides).  A parameter
named ``device_api_context`` is not unpacked: it becomes ``resource_handle``.

tvmlab compiles functions before this form (its runtime checks the
arguments in Python); the pass shows the entry code TVM generates.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.expr import Call, Cast, IntImm, Load, StringImm, Var
from ..ir.function import PrimFunc
from ..ir.stmt import AssertStmt, AttrStmt, Evaluate, IfThenElse, LetStmt, SeqStmt

# TVM's DLTensor / TVMValue fields (builtin::TVMStructFieldKind) and argument type codes
ARR_DATA, ARR_SHAPE, ARR_STRIDES, ARR_NDIM, ARR_TYPE_CODE, ARR_TYPE_BITS, ARR_TYPE_LANES = 1, 2, 3, 4, 5, 6, 7
ARR_BYTE_OFFSET, ARR_DEVICE_ID, ARR_DEVICE_TYPE, VALUE_CONTENT = 8, 9, 10, 12
INT, UINT, FLOAT, OPAQUE_HANDLE, NULLPTR, DLTENSOR_HANDLE, NDARRAY_HANDLE = 0, 1, 2, 3, 4, 7, 13
DEVICE_TYPES = {"llvm": 1, "c": 1, "cuda": 2, "opencl": 4, "vulkan": 7, "metal": 8, "rocm": 10,
                "opengl": 11}
DEVICE_CONTEXT = "device_api_context"
_TYPE_CODES = {"int": INT, "uint": UINT, "float": FLOAT, "bfloat": 4, "bool": UINT}   # DLDataTypeCode


def _i32(v):
    return IntImm("int32", v)


def _get(dtype, handle, index, field):
    return Call(dtype, "tvm_struct_get", (handle, _i32(index), _i32(field)))


def _nop():
    return Evaluate(_i32(0))


class _Binder:
    """The let-bindings and assertions that tie a function's variables to its packed arguments."""

    def __init__(self):
        self.defined = set()
        self.init = []       # statements with an empty body, nested in order
        self.asserts = []

    def bind(self, target, value, what):
        """``target`` (a Var bound first here, else an expression) must equal ``value``."""
        if isinstance(target, Var) and target not in self.defined:
            self.defined.add(target)
            self.init.append(LetStmt(target, value, _nop()))
            return True
        self.asserts.append(AssertStmt(_op.eq(target, _op.cast(target.dtype, value)),
                                       f"Argument {what} has an unsatisfied constraint", _nop()))
        return False

    def bind_dltensor(self, buf, device_type, device_id, handle, name):
        ndim = len(buf.shape)
        self.asserts.append(AssertStmt(_op.eq(_get("int32", handle, 0, ARR_NDIM), _i32(ndim)),
                                       f"{name}.ndim is expected to equal {ndim}", _nop()))
        code = _TYPE_CODES[dt.kind(buf.dtype)]
        ok = _op.logical_and(_op.logical_and(
            _op.eq(_get("uint8", handle, 0, ARR_TYPE_CODE), IntImm("uint8", code)),
            _op.eq(_get("uint8", handle, 0, ARR_TYPE_BITS), IntImm("uint8", dt.bits(buf.dtype)))),
            _op.eq(_get("uint16", handle, 0, ARR_TYPE_LANES), IntImm("uint16", dt.lanes(buf.dtype))))
        self.asserts.append(AssertStmt(ok, f"{name}.dtype is expected to be {buf.dtype}", _nop()))
        if self.bind(buf.data, _get("handle", handle, 0, ARR_DATA), f"{name}.data"):
            self.init.append(AttrStmt(buf.data, "storage_alignment", _i32(64), _nop()))
        shape = Var(f"{name}.shape", "handle")
        self.init.append(LetStmt(shape, _get("handle", handle, 0, ARR_SHAPE), _nop()))
        for k, d in enumerate(buf.shape):
            self.bind(d, _op.cast(d.dtype, Load("int64", shape, _i32(k))), f"{name}.shape[{k}]")
        strides = Var(f"{name}.strides", "handle")
        self.init.append(LetStmt(strides, _get("handle", handle, 0, ARR_STRIDES), _nop()))
        has_strides = _op.logical_not(Call("bool", "isnullptr", (strides,)))
        if buf.strides:
            expect = _i32(1)
            for k in reversed(range(ndim)):
                given = _op.cast(buf.shape[k].dtype, Load("int64", strides, _i32(k)))
                self.bind(buf.strides[k], _op.if_then_else(has_strides, given, expect),
                          f"{name}.strides[{k}]")
                expect = _op.mul(expect, _op.cast(buf.shape[k].dtype, Load("int64", shape, _i32(k))))
        elif ndim:
            expect, conds = IntImm("int64", 1), []
            for k in reversed(range(ndim)):
                conds.append(_op.eq(expect, Load("int64", strides, _i32(k))))
                expect = _op.mul(expect, _op.cast("int64", buf.shape[k]))
            cond = conds[0]
            for c in conds[1:]:
                cond = _op.logical_and(cond, c)
            check = AssertStmt(cond, f"{name}.strides: expected to be compact array", _nop())
            self.asserts.append(SeqStmt((IfThenElse(has_strides, check), _nop())))
        nbytes = dt.itemsize(buf.dtype)
        offset = _get("uint64", handle, 0, ARR_BYTE_OFFSET)
        if isinstance(buf.elem_offset, IntImm):
            self.bind(IntImm("uint64", buf.elem_offset.value * nbytes), offset, f"{name}.byte_offset")
        else:
            self.bind(buf.elem_offset, Cast(buf.elem_offset.dtype, _op.floordiv(offset, IntImm("uint64", nbytes))),
                      f"{name}.elem_offset")
        self.bind(device_type, _get("int32", handle, 0, ARR_DEVICE_TYPE), f"{name}.device_type")
        self.bind(device_id, _get("int32", handle, 0, ARR_DEVICE_ID), f"{name}.device_id")


def _nest(stmts, body):
    """Each statement of ``stmts`` (innermost last) wrapped around the next, ``body`` innermost."""
    for s in reversed(stmts):
        if isinstance(s, SeqStmt):
            body = SeqStmt(s.seq[:-1] + (body,))
        else:
            body = s.replace(body=body)
    return body


def _type_check(name, i, tcode, dtype):
    kind = dt.kind(dtype)
    if kind == "handle":
        ok = _op.logical_or(_op.logical_or(_op.eq(tcode, OPAQUE_HANDLE), _op.eq(tcode, NDARRAY_HANDLE)),
                            _op.logical_or(_op.eq(tcode, DLTENSOR_HANDLE), _op.eq(tcode, NULLPTR)))
        return AssertStmt(ok, f"{name}: Expect arg[{i}] to be pointer", _nop())
    if kind in ("int", "uint", "bool"):
        return AssertStmt(_op.eq(tcode, INT), f"{name}: Expect arg[{i}] to be int", _nop())
    return AssertStmt(_op.eq(tcode, FLOAT), f"{name}: Expect arg[{i}] to be float", _nop())


def make_packed_api(func, num_unpacked_args=-1):
    """``func`` in TVM's packed calling convention (see the module's docstring).

    The last ``num_unpacked_args`` parameters stay plain parameters (between
    ``num_args`` and ``out_ret_value``); -1 packs them all.
    """
    name = func.attrs.get("global_symbol")
    if not name:
        raise LoweringError(f"MakePackedAPI: function {func.name} has no \"global_symbol\" attribute")
    target = func.attrs.get("target")
    if target is None:
        raise LoweringError(f"MakePackedAPI: function {func.name} has no \"target\" attribute; add one "
                            "with func.with_attr(\"target\", tvm.target.Target(\"llvm\"))")
    kind = str(getattr(target, "kind", None) or str(target).split()[0])
    if kind not in DEVICE_TYPES:
        raise LoweringError(f"MakePackedAPI: unknown device of target {kind!r}; known: {sorted(DEVICE_TYPES)}")
    nparams = len(func.params)
    if not (num_unpacked_args == -1 or 0 <= num_unpacked_args <= nparams):
        raise LoweringError(f"MakePackedAPI: num_unpacked_args must be -1 or 0..{nparams}, "
                            f"got {num_unpacked_args!r}")
    pack = num_unpacked_args == -1 or nparams > num_unpacked_args
    unpacked = max(num_unpacked_args, 0)
    num_packed = nparams - unpacked
    v_args, v_type_ids, v_num_args = Var("args", "handle"), Var("arg_type_ids", "handle"), Var("num_args", "int32")
    v_resource = Var("resource_handle", "handle")
    device_id, device_type = Var("dev_id", "int32"), _i32(DEVICE_TYPES[kind])
    params = [v_args, v_type_ids, v_num_args] if pack else []
    seq_init, seq_check, scalars, buffers = [], [], [], []
    for i, p in enumerate(func.params):
        if p.name == DEVICE_CONTEXT:
            num_packed -= 1
            v_resource = p
            continue
        v_arg = Var(f"arg.{p.name}" if p.name else f"arg{i}", p.dtype)
        buf = func.buffer_map.get(p)
        (buffers if buf is not None else scalars).append((v_arg, buf if buf is not None else p))
        if i < num_packed:
            api = "float64" if dt.is_float(p.dtype) else "int64" if dt.kind(p.dtype) != "handle" else "handle"
            value = _get(api, v_args, i, VALUE_CONTENT)
            seq_init.append(LetStmt(v_arg, value if api == p.dtype else Cast(p.dtype, value), _nop()))
            tcode = Var(f"{v_arg.name}.code", "int32")
            seq_init.append(LetStmt(tcode, Load("int32", v_type_ids, _i32(i)), _nop()))
            seq_check.append(_type_check(name, i, tcode, p.dtype))
        else:
            params.append(v_arg)
    if pack:
        params += [Var("out_ret_value", "handle"), Var("out_ret_tcode", "handle"), v_resource]
    binder = _Binder()
    for v_arg, p in scalars:
        binder.bind(p, v_arg, v_arg.name)
    for v_arg, buf in buffers:
        binder.bind_dltensor(buf, device_type, device_id, v_arg, v_arg.name)
    body = AttrStmt(_i32(0), "compute_scope", StringImm(f"{name}_compute_"), func.body)
    if device_id in binder.defined:
        seq_check.append(AttrStmt(StringImm("default"), "device_id", device_id, _nop()))
        seq_check.append(AttrStmt(StringImm("default"), "device_type", device_type, _nop()))
    nest = seq_init + binder.init + seq_check + binder.asserts
    if pack:
        nest.insert(0, AssertStmt(_op.eq(v_num_args, _i32(num_packed)),
                                  f"{name}: num_args should be {num_packed}", _nop()))
    attrs = dict(func.attrs)
    if unpacked == 0:
        attrs["calling_conv"] = 1           # TVM's CallingConv::kCPackedFunc
    return PrimFunc(func.name, params, {}, _nest(nest, body), attrs)
