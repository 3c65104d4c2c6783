"""GPU-scheduled test programs shared by the CUDA and GPU-lowering tests: (schedule, args, reference)."""
import numpy as np

from tvmlab import te


def vector_add(n=None, factor=64):
    n = te.var("n") if n is None else n
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=factor)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C], lambda a, b: a + b


def tiled_matmul(N=64, M=48, K=40, tile=8, kt=8, bind_copies=True):
    """Shared-memory tiles of A and B, per-thread local accumulator; sizes need not divide."""
    A = te.placeholder((N, K), name="A")
    B = te.placeholder((K, M), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bi, ti = s[C].split(i, factor=tile)
    bj, tj = s[C].split(j, factor=tile)
    s[C].reorder(bi, bj, ti, tj)
    s[C].bind(bi, te.thread_axis("blockIdx.y"))
    s[C].bind(bj, te.thread_axis("blockIdx.x"))
    s[C].bind(ti, te.thread_axis("threadIdx.y"))
    s[C].bind(tj, te.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tj)
    ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=kt)
    s[AA].compute_at(s[CL], ko)
    s[BB].compute_at(s[CL], ko)
    for S in (AA, BB) if bind_copies else ():
        y, x = s[S].op.axis
        s[S].bind(y, te.thread_axis("threadIdx.y"))
        s[S].bind(x, te.thread_axis("threadIdx.x"))
    return s, [A, B, C], lambda a, b: a @ b


def rfactor_sum(n=None, m=None, threads=16):
    """Row sums: rfactor the inner split of k, bind it to threadIdx.x (cross-thread reduction)."""
    n = te.var("n") if n is None else n
    m = te.var("m") if m is None else m
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=threads)
    BF = s.rfactor(B, ki)
    tx = s[B].op.reduce_axis[0]
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], tx)
    s[B].bind(s[B].op.axis[0], te.thread_axis("blockIdx.x"))
    return s, [A, B], lambda a: a.sum(axis=1)


def rfactor_max(n=20, m=100, threads=32, rows=4):
    """Row max with several rows per block (threadIdx.y) and a cross-thread reduction on threadIdx.x."""
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=threads)
    BF = s.rfactor(B, ki)
    bo, bi = s[B].split(s[B].op.axis[0], factor=rows)
    tx = s[B].op.reduce_axis[0]
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.y"))
    s[BF].compute_at(s[B], tx)
    return s, [A, B], lambda a: a.max(axis=1)


def serial_reduce(n=100, m=37):
    """Row sums with one thread per row (a serial reduction inside each thread)."""
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B], lambda a: a.sum(axis=1)


def conv2d(N=1, C=4, H=10, W=10, F=8, R=3):
    """Direct NCHW conv2d (no padding, stride 1): one thread per output element."""
    X = te.placeholder((N, C, H, W), name="X")
    Wt = te.placeholder((F, C, R, R), name="W")
    c = te.reduce_axis((0, C), name="c")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, R), name="rx")
    OH, OW = H - R + 1, W - R + 1
    Y = te.compute((N, F, OH, OW), lambda n, f, y, x: te.sum(
        X[n, c, y + ry, x + rx] * Wt[f, c, ry, rx], axis=[c, ry, rx]), name="Y")
    s = te.create_schedule(Y.op)
    n, f, y, x = s[Y].op.axis
    fused = s[Y].fuse(n, f, y, x)
    bx, tx = s[Y].split(fused, factor=64)
    s[Y].bind(bx, te.thread_axis("blockIdx.x"))
    s[Y].bind(tx, te.thread_axis("threadIdx.x"))

    def ref(x, w):
        out = np.zeros((N, F, OH, OW), dtype=np.float64)
        for i in range(R):
            for j in range(R):
                out += np.einsum("nchw,fc->nfhw", x[:, :, i:i + OH, j:j + OW], w[:, :, i, j])
        return out
    return s, [X, Wt, Y], ref


def vthread_add(n=256):
    """Vector add where each thread handles two elements through a virtual thread."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, rest = s[B].split(B.op.axis[0], factor=64)
    vx, tx = s[B].split(rest, nparts=2)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(vx, te.thread_axis("vthread"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B], lambda a: a * 2.0


from tvmlab.testing.gpu_schedules import opt_conv_hwcn  # noqa: E402,F401  (TVM's opt_conv_cuda tutorial)
