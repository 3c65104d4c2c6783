"""TVM's TE tutorials (v0.9), condensed, run with only the imports changed.

Sizes are small so the file stays fast; GPU parts are built (CUDA C compiled
by NVRTC) and run only where a GPU is present.
"""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.contrib import cc, utils

HAS_GPU = tvm.cuda(0).exist


def test_tensor_expr_get_started():
    tgt = tvm.target.Target(target="llvm", host="llvm")
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], tgt, name="myadd")
    dev = tvm.device(tgt.kind.name, 0)
    n = 1024
    a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = tvm.nd.array(np.full(n, np.nan, dtype=C.dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    assert fadd.time_evaluator(fadd.entry_name, dev, number=2)(a, b, c).mean > 0

    s[C].parallel(C.op.axis[0])
    fadd_parallel = tvm.build(s, [A, B, C], tgt, name="myadd_parallel")
    c = tvm.nd.array(np.full(n, np.nan, dtype=C.dtype), dev)
    fadd_parallel(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())

    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=4)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    fadd_vector = tvm.build(s, [A, B, C], tgt, name="myadd_vector")
    c = tvm.nd.array(np.full(n, np.nan, dtype=C.dtype), dev)
    fadd_vector(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    assert "ramp" in str(tvm.lower(s, [A, B, C], simple_mode=True)).lower()

    tgt_gpu = tvm.target.Target(target="cuda", host="llvm")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    fadd_gpu = tvm.build(s, [A, B, C], target=tgt_gpu, name="myadd")
    assert "myadd_kernel0" in fadd_gpu.imported_modules[0].get_source()
    if HAS_GPU:
        dev = tvm.device(tgt_gpu.kind.name, 0)
        ag, bg = tvm.nd.array(a.numpy(), dev), tvm.nd.array(b.numpy(), dev)
        cg = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
        fadd_gpu(ag, bg, cg)
        tvm.testing.assert_allclose(cg.numpy(), a.numpy() + b.numpy())

    temp = utils.tempdir()
    fadd.save(temp.relpath("myadd.o"))
    cc.create_shared(temp.relpath("myadd.so"), [temp.relpath("myadd.o")])
    fadd1 = tvm.runtime.load_module(temp.relpath("myadd.so"))
    c = tvm.nd.array(np.full(n, np.nan, dtype=C.dtype))
    fadd1(tvm.nd.array(a.numpy()), tvm.nd.array(b.numpy()), c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


def test_opt_gemm():
    M = K = N = 64
    bn, kfactor = 16, 4
    dtype, target = "float32", "llvm"
    dev = tvm.device(target, 0)
    a = tvm.nd.array(np.random.rand(M, K).astype(dtype), dev)
    b = tvm.nd.array(np.random.rand(K, N).astype(dtype), dev)
    answer = np.dot(a.numpy(), b.numpy())
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")

    def check(s, args):
        func = tvm.build(s, args, target=target, name="mmult")
        c = tvm.nd.array(np.full((M, N), np.nan, dtype=dtype), dev)
        func(a, b, c)
        tvm.testing.assert_allclose(c.numpy(), answer, rtol=1e-5)

    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    s = te.create_schedule(C.op)
    check(s, [A, B, C])
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (kaxis,) = s[C].op.reduce_axis
    ko, ki = s[C].split(kaxis, factor=kfactor)
    s[C].reorder(mo, no, ko, mi, ki, ni)
    s[C].vectorize(ni)
    check(s, [A, B, C])

    packedB = te.compute((N / bn, K, bn), lambda bigN, k, littleN: B[k, bigN * bn + littleN],
                         name="packedB")
    C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * packedB[n // bn, k, tvm.tir.indexmod(n, bn)],
                                               axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=kfactor)
    s[CC].reorder(ko, mc, ki, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(ki)
    s[C].parallel(mo)
    bigN, _, littleN = s[packedB].op.axis
    s[packedB].vectorize(littleN)
    s[packedB].parallel(bigN)
    check(s, [A, B, C])


def test_schedule_primitives():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2, name="B")
    a = np.random.rand(13, 11).astype("float32")

    def check(s, args=(A, B)):
        f = tvm.build(s, list(args))
        out = tvm.nd.array(np.full((13, 11), np.nan, "float32"))
        f(tvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), a * 2, rtol=1e-6)

    for prim in ("split", "nparts", "tile", "fuse", "reorder"):
        s = te.create_schedule(B.op)
        if prim == "split":
            s[B].split(B.op.axis[0], factor=32)
        elif prim == "nparts":
            s[B].split(B.op.axis[0], nparts=32)
        else:
            xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
            if prim == "fuse":
                s[B].fuse(xi, yi)
            elif prim == "reorder":
                s[B].reorder(xi, yo, xo, yi)
        check(s)

    A1 = te.placeholder((m,), name="A1")
    B1 = te.compute((m,), lambda i: A1[i] + 1, name="B1")
    C1 = te.compute((m,), lambda i: B1[i] * 2, name="C1")
    a1 = np.random.rand(17).astype("float32")
    for prim in ("compute_at", "compute_inline", "compute_root"):
        s = te.create_schedule(C1.op)
        if prim == "compute_inline":
            s[B1].compute_inline()
        else:
            s[B1].compute_at(s[C1], C1.op.axis[0])
            if prim == "compute_root":
                s[B1].compute_root()
        f = tvm.build(s, [A1, C1])
        out = tvm.nd.array(np.full(17, np.nan, "float32"))
        f(tvm.nd.array(a1), out)
        np.testing.assert_allclose(out.numpy(), (a1 + 1) * 2, rtol=1e-6)

    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    assert "blockIdx.x" in str(tvm.lower(s, [A, B], simple_mode=True))


def test_reduction():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    a = np.random.rand(9, 37).astype("float32")

    def check(s):
        f = tvm.build(s, [A, B])
        out = tvm.nd.array(np.full(9, np.nan, "float32"))
        f(tvm.nd.array(a), out)
        np.testing.assert_allclose(out.numpy(), a.sum(1), rtol=1e-5)

    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    check(s)
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    body = s[B].op.body[0]
    assert isinstance(body, tvm.tir.Reduce) and body.source[0].producer.op is BF.op
    check(s)

    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    fcuda = tvm.build(s, [A, B], "cuda")
    assert "__shfl_down_sync" in fcuda.imported_modules[0].get_source()     # 16 lanes: warp shuffles
    out = np.full(9, np.nan, "float32")
    tvm.testing.simulate(fcuda, a, out)                                      # the shuffles, lane by lane
    np.testing.assert_allclose(out, a.sum(1), rtol=1e-5)

    product = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, dtype=t), name="product")
    P = te.compute((n,), lambda i: product(A[i, k], axis=k), name="P")
    f = tvm.build(te.create_schedule(P.op), [A, P])
    out = tvm.nd.array(np.full(9, np.nan, "float32"))
    f(tvm.nd.array(a), out)
    np.testing.assert_allclose(out.numpy(), a.prod(1), rtol=1e-4)


@pytest.mark.parametrize("size", [(7, 5)])
def test_intrin_math_on_the_cpu(size):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: tvm.tir.call_pure_extern("float32", "expf", A[i]), name="B")
    C = te.compute(A.shape, lambda i: te.exp(A[i]), name="C")
    s = te.create_schedule([B.op, C.op])
    f = tvm.build(s, [A, B, C], "llvm")
    a = np.random.uniform(-1, 1, size[0]).astype("float32")
    b, c = (tvm.nd.array(np.full(size[0], np.nan, "float32")) for _ in range(2))
    f(tvm.nd.array(a), b, c)
    np.testing.assert_allclose(b.numpy(), np.exp(a), rtol=1e-6)
    np.testing.assert_allclose(c.numpy(), np.exp(a), rtol=1e-6)
