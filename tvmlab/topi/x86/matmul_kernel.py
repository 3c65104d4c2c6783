"""A matmul register-tile micro-kernel in LLVM vector code, used through tensorize.

``intrin_matmul_tile(rows, block, K, dtype, target)`` declares the tile
``c[i, j] = sum_k a[k, i] * b[k, j]`` (a: a packed panel of A, ``rows``
wide; b: a packed panel of B, ``block`` wide) as a tensor intrinsic whose
body calls a kernel written directly as LLVM IR: ``rows x block / lanes``
accumulators held in vector registers (loop-carried phis) over the whole
reduction, one vector load per ``lanes`` columns of b and one broadcast per
row of a at each step, fused multiply-adds, then one store of the tile.  The
IR is linked into the module (``pragma_import_llvm``) and inlined where it is
called.  ``topi.x86.schedule_matmul(C, tensorize=True)`` uses it.
"""
from __future__ import annotations

from ... import te
from ...codegen.llvm_vector import vector_registers
from ...errors import ScheduleError
from ...ir import op as _op
from ...ir.expr import StringImm
from ...ir.function import Buffer
from ...ir.stmt import AttrStmt, Evaluate

K_UNROLL = 4            # reduction steps per iteration of the kernel's loop (LLVM unrolls it)
_LLVM_TYPES = {"float32": ("float", 4, "f32"), "float64": ("double", 8, "f64")}


def kernel_name(rows, vectors, lanes, dtype, a_rows=False):
    return f"tvmlab_matmul_tile_{rows}x{vectors}x{lanes}_{dtype}{'_arows' if a_rows else ''}"


def kernel_ir(rows, vectors, lanes, dtype, a_rows=False):
    """LLVM assembly of the kernel ``i32 NAME(c, a, b, K, sa, sb, sc)``.

    ``a[k * sa + i]`` (i < rows; ``a[i * sa + k]`` with ``a_rows``: A read in
    place), ``b[k * sb + j]`` (j < vectors * lanes), ``c[i * sc + j]`` is
    written (not accumulated into).
    """
    if dtype not in _LLVM_TYPES:
        raise ScheduleError(f"matmul micro-kernel: dtype {dtype} is not supported (float32, float64)")
    t, size, suffix = _LLVM_TYPES[dtype]
    vt = f"<{lanes} x {t}>"
    fma = f"llvm.fma.v{lanes}{suffix}"
    name = kernel_name(rows, vectors, lanes, dtype, a_rows)
    acc = [(r, v) for r in range(rows) for v in range(vectors)]
    L = [f"define i32 @{name}(ptr noalias %c, ptr noalias %a, ptr noalias %b, i32 %K, i32 %sa, "
         f"i32 %sb, i32 %sc) #0 {{",
         "entry:",
         "  %any = icmp sgt i32 %K, 0",
         "  br i1 %any, label %loop, label %done",
         "loop:",
         "  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]"]
    L += [f"  %acc{r}_{v} = phi {vt} [ zeroinitializer, %entry ], [ %n{r}_{v}, %loop ]" for r, v in acc]
    L += ["  %ka = mul nsw i32 %k, %sa", "  %kb = mul nsw i32 %k, %sb",
          "  %ka64 = sext i32 %ka to i64", "  %kb64 = sext i32 %kb to i64",
          "  %k64 = sext i32 %k to i64", "  %sa64 = sext i32 %sa to i64"]
    for v in range(vectors):
        L += [f"  %ib{v} = add nsw i64 %kb64, {v * lanes}",
              f"  %pb{v} = getelementptr inbounds {t}, ptr %b, i64 %ib{v}",
              f"  %b{v} = load {vt}, ptr %pb{v}, align {size}"]
    for r in range(rows):
        L += [f"  %ra{r} = mul nsw i64 %sa64, {r}", f"  %ia{r} = add nsw i64 %ra{r}, %k64"] if a_rows else \
            [f"  %ia{r} = add nsw i64 %ka64, {r}"]
        L += [
              f"  %pa{r} = getelementptr inbounds {t}, ptr %a, i64 %ia{r}",
              f"  %a{r} = load {t}, ptr %pa{r}, align {size}",
              f"  %x{r} = insertelement {vt} poison, {t} %a{r}, i64 0",
              f"  %s{r} = shufflevector {vt} %x{r}, {vt} poison, <{lanes} x i32> zeroinitializer"]
        L += [f"  %n{r}_{v} = call {vt} @{fma}({vt} %s{r}, {vt} %b{v}, {vt} %acc{r}_{v})"
              for v in range(vectors)]
    L += ["  %k1 = add nsw i32 %k, 1", "  %more = icmp slt i32 %k1, %K",
          "  br i1 %more, label %loop, label %done, !llvm.loop !0", "done:"]
    L += [f"  %f{r}_{v} = phi {vt} [ zeroinitializer, %entry ], [ %n{r}_{v}, %loop ]" for r, v in acc]
    L += ["  %sc64 = sext i32 %sc to i64"]
    for r in range(rows):
        L += [f"  %ic{r} = mul nsw i64 %sc64, {r}"]
        for v in range(vectors):
            L += [f"  %jc{r}_{v} = add nsw i64 %ic{r}, {v * lanes}",
                  f"  %pc{r}_{v} = getelementptr inbounds {t}, ptr %c, i64 %jc{r}_{v}",
                  f"  store {vt} %f{r}_{v}, ptr %pc{r}_{v}, align {size}"]
    L += ["  ret i32 0", "}", f"declare {vt} @{fma}({vt}, {vt}, {vt})",
          "attributes #0 = { alwaysinline nounwind }",
          "!0 = distinct !{!0, !1}", f"!1 = !{{!\"llvm.loop.unroll.count\", i32 {K_UNROLL}}}", ""]
    return "\n".join(L)


def intrin_matmul_tile(rows, block, K, dtype="float32", target="llvm", a_rows=False):
    """The tensor intrinsic of one ``rows x block`` tile of a packed matmul over ``K`` steps.

    A's tile is a packed panel ``a[k, i]`` or, with ``a_rows``, rows of A read
    in place ``a[i, k]``; B's is a packed panel ``b[k, j]``.
    """
    lanes = vector_registers(target).lanes(dtype)
    if block % lanes:
        raise ScheduleError(f"matmul micro-kernel: the panel width {block} is not a multiple of the "
                            f"{lanes} lanes of a vector register")
    vectors = block // lanes
    a = te.placeholder((rows, K) if a_rows else (K, rows), dtype, name="a")
    b = te.placeholder((K, block), dtype, name="b")
    k = te.reduce_axis((0, K), name="k")
    c = te.compute((rows, block), lambda i, j: te.sum((a[i, k] if a_rows else a[k, i]) * b[k, j], axis=k),
                   name="c")
    bufs = {x: Buffer(x.name, x.shape, dtype, strides=[te.var(f"{x.name}_stride"), 1],
                      elem_offset=te.var(f"{x.name}_offset"), offset_factor=1) for x in (a, b, c)}
    name = kernel_name(rows, vectors, lanes, dtype, a_rows)
    from ...codegen.llvm_import import register_llvm
    ir = register_llvm(name, kernel_ir(rows, vectors, lanes, dtype, a_rows))

    def body(ins, outs):
        aa, bb = ins
        call = _call(name, outs[0], aa, bb, K)
        return AttrStmt(StringImm(name), "pragma_import_llvm", StringImm(ir), Evaluate(call))

    return te.decl_tensor_intrin(c.op, body, name=name, binds=bufs)


def _call(name, cc, aa, bb, K):
    from ...ir.op import call_extern
    return call_extern("int32", name, cc.access_ptr("w"), aa.access_ptr("r"), bb.access_ptr("r"),
                       _op.convert(K), aa.strides[0], bb.strides[0], cc.strides[0])
