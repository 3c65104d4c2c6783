"""Reductions across the threads of a block: any comm_reducer (argmax's tuples too), warp
shuffles on CUDA, a shared-memory tree elsewhere; every part counted once, one writer.

The OpenGL compute target runs the shared-memory form for real here (Mesa's llvmpipe);
the CUDA form (shuffles) is compiled by NVRTC.
"""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import LoweringError
from tvmlab.ir.expr import Call
from tvmlab.ir.functor import post_order_visit
from tvmlab.runtime import opengl_context as glc

RNG = np.random.default_rng(5)
needs_gl = pytest.mark.skipif(not glc.available(), reason="no OpenGL context on this machine")


def argmax_reducer():
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return tvm.tir.Select(keep, x[0], y[0]), tvm.tir.Select(keep, x[1], y[1])
    return te.comm_reducer(fcombine, lambda t0, t1: (tvm.tir.const(-1, t0), te.min_value(t1)),
                           name="argmax")


def row_reduce(m, n, threads, kind="sum", rfactor=True, tag="threadIdx.x", rows=1):
    """Reduce each row of an m x n matrix across ``threads`` threads; rows over blockIdx.x and,
    with ``rows`` > 1, threadIdx.y (or threadIdx.x when the reduction is on threadIdx.y)."""
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    if kind == "argmax":
        idx = te.placeholder((m, n), name="I", dtype="int32")
        outs = te.compute((m,), lambda i: argmax_reducer()((idx[i, k], A[i, k]), axis=k), name="T")
        ins, red = [idx, A], outs[0]
    else:
        red = te.compute((m,), lambda i: (te.sum if kind == "sum" else te.max)(A[i, k], axis=k), name="B")
        outs, ins = [red], [A]
    s = te.create_schedule(red.op)
    tx = te.thread_axis(tag)
    if rfactor:
        _, ki = s[red].split(s[red].op.reduce_axis[0], factor=threads)
        BF = s.rfactor(red, ki)
        BF = BF[0] if isinstance(BF, (list, tuple)) else BF
        s[red].bind(s[red].op.reduce_axis[0], tx)
        s[BF].compute_at(s[red], s[red].op.reduce_axis[0])
    else:                          # no rfactor: each thread loops over its share, then they combine
        ko, _ = s[red].split(s[red].op.reduce_axis[0], nparts=threads)
        s[red].bind(ko, tx)
    other = "threadIdx.y" if tag == "threadIdx.x" else "threadIdx.x"
    bo, bi = s[red].split(s[red].op.axis[0], factor=rows)
    s[red].bind(bo, te.thread_axis("blockIdx.x"))
    s[red].bind(bi, te.thread_axis(other))
    return s, ins + list(outs)


def calls(mod, op):
    found = []
    for k in mod.device_split.kernels:
        post_order_visit(k.body, lambda n: found.append(n) if isinstance(n, Call) and n.op == op else None)
    return found


def check(call, m, n, kind, wrap=lambda x: x):
    """Run ``call`` on random data of the reduction's shape and compare with numpy."""
    a = RNG.standard_normal((m, n)).astype("float32")
    if kind == "argmax":
        ii = np.tile(np.arange(n, dtype="int32"), (m, 1))
        o0, o1 = wrap(np.full(m, -7, "int32")), wrap(np.full(m, np.nan, "float32"))
        call(wrap(ii), wrap(a), o0, o1)
        np.testing.assert_array_equal(_np(o0), a.argmax(1))
        np.testing.assert_allclose(_np(o1), a.max(1))
    else:
        b = wrap(np.full(m, np.nan, "float32"))
        call(wrap(a), b)
        want = a.sum(1) if kind == "sum" else a.max(1)
        np.testing.assert_allclose(_np(b), want, rtol=1e-4, atol=1e-4)


def _np(x):
    return x.numpy() if hasattr(x, "numpy") else x


def run_gl(s, args, m, n, kind):
    f = tvm.build(s, args, "opengl -compute")
    check(f, m, n, kind, lambda x: tvm.nd.array(x, tvm.opengl(0)))


CASES = [
    # (m, n, threads, kind, rfactor, tag, rows)
    (10, 1027, 16, "argmax", True, "threadIdx.x", 4),     # TVM's test_rfactor_argmax shape
    (16, 256, 32, "sum", False, "threadIdx.x", 2),        # warp_reduction: serial part per thread
    (10, 20, 32, "max", False, "threadIdx.x", 4),         # more threads than elements
    (7, 300, 64, "sum", True, "threadIdx.x", 2),          # two warps: shuffles, shared, shuffles
    (5, 500, 128, "argmax", True, "threadIdx.x", 1),
    (9, 77, 20, "sum", True, "threadIdx.x", 3),           # not a power of two: the tree
    (9, 77, 8, "max", True, "threadIdx.y", 4),            # across threadIdx.y: the tree
]


@pytest.mark.parametrize("m,n,threads,kind,rfactor,tag,rows", CASES)
def test_cross_thread_reduction(m, n, threads, kind, rfactor, tag, rows):
    s, args = row_reduce(m, n, threads, kind, rfactor, tag, rows)
    mod = tvm.lower(s, args, target="cuda")
    shuffles = calls(mod, "tvm_warp_shuffle_down")
    pow2 = threads & (threads - 1) == 0
    if tag == "threadIdx.x" and pow2 and (threads <= 32 or threads % 32 == 0):
        assert shuffles
    else:
        assert not shuffles
    f = tvm.build(s, args, "cuda")                              # NVRTC compiles the shuffles
    check(lambda *xs: tvm.testing.simulate(f, *xs), m, n, kind)   # no race, no divergent shuffle
    assert not calls(tvm.lower(s, args, target="opengl -compute"), "tvm_warp_shuffle_down")
    if glc.available():
        run_gl(s, args, m, n, kind)


@needs_gl
def test_custom_reducer_and_init_across_threads():
    A = te.placeholder((6, 40), name="A")
    k = te.reduce_axis((0, 40), name="k")
    absmax = te.comm_reducer(lambda x, y: te.max(te.abs(x), te.abs(y)), lambda t: tvm.tir.const(0, t),
                             name="absmax")
    B = te.compute((6,), lambda i: absmax(A[i, k], axis=k), name="B")
    C = te.compute((6,), lambda i: te.sum(A[i, k], axis=k, init=100.0), name="C")
    dev = tvm.opengl(0)
    a = RNG.standard_normal((6, 40)).astype("float32")
    for T, want in ((B, np.abs(a).max(1)), (C, a.sum(1) + 100.0)):
        s = te.create_schedule(T.op)
        s[T].bind(s[T].op.axis[0], te.thread_axis("blockIdx.x"))
        s[T].bind(s[T].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
        out = tvm.nd.array(np.full(6, np.nan, "float32"), dev)
        tvm.build(s, [A, T], "opengl -compute")(tvm.nd.array(a, dev), out)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
        out = np.full(6, np.nan, "float32")
        tvm.testing.simulate(tvm.build(s, [A, T], "cuda"), a, out)
        np.testing.assert_allclose(out, want, rtol=1e-5)


def grid_reduce(m, n1, n2, tags, kind, rows=None, parts=None):
    """Reduce A[i, :, :] over k1 (bound to tags[0]) and k2 (bound to tags[1]; with ``parts``, its
    outer part after split(nparts=parts), the inner part serial in each thread); rows over
    blockIdx.x and, with ``rows`` = (tag, count), that thread axis too."""
    A = te.placeholder((m, n1, n2), name="A")
    k1, k2 = te.reduce_axis((0, n1), name="k1"), te.reduce_axis((0, n2), name="k2")
    if kind == "argmax":
        idx = te.placeholder((m, n1, n2), name="I", dtype="int32")
        outs = te.compute((m,), lambda i: argmax_reducer()((idx[i, k1, k2], A[i, k1, k2]), axis=[k1, k2]),
                          name="T")
        ins, red = [idx, A], outs[0]
    else:
        red = te.compute((m,), lambda i: (te.sum if kind == "sum" else te.max)(A[i, k1, k2], axis=[k1, k2]),
                         name="B")
        outs, ins = [red], [A]
    s = te.create_schedule(red.op)
    s[red].bind(k1, te.thread_axis(tags[0]))
    if parts:
        ko, _ = s[red].split(k2, nparts=parts)
        s[red].bind(ko, te.thread_axis(tags[1]))
    else:
        s[red].bind(k2, te.thread_axis(tags[1]))
    if rows:
        bo, bi = s[red].split(s[red].op.axis[0], factor=rows[1])
        s[red].bind(bo, te.thread_axis("blockIdx.x"))
        s[red].bind(bi, te.thread_axis(rows[0]))
    else:
        s[red].bind(s[red].op.axis[0], te.thread_axis("blockIdx.x"))
    return s, ins + list(outs)


GRID_CASES = [
    # (m, n1, n2, tags, kind, rows, parts, shuffles)
    (6, 4, 8, ("threadIdx.x", "threadIdx.y"), "sum", ("threadIdx.z", 2), None, True),    # 32 lanes: one warp
    (5, 5, 3, ("threadIdx.x", "threadIdx.y"), "max", ("threadIdx.z", 2), None, False),   # 15 threads: the tree
    (4, 16, 8, ("threadIdx.x", "threadIdx.y"), "argmax", None, None, True),              # 4 warps
    (3, 8, 8, ("threadIdx.y", "threadIdx.x"), "sum", None, None, True),                  # k1 on y, k2 on x
    (6, 4, 4, ("threadIdx.y", "threadIdx.z"), "sum", ("threadIdx.x", 3), None, False),   # not lanes in order
    (5, 6, 50, ("threadIdx.x", "threadIdx.y"), "sum", None, 4, False),                   # 24 threads, serial parts
    (3, 8, 37, ("threadIdx.x", "threadIdx.y"), "argmax", ("threadIdx.z", 2), 4, True),   # 37 = 4 uneven parts
    (7, 32, 3, ("threadIdx.x", "threadIdx.y"), "max", None, None, True),                 # 96: 3 warps, padded to 4
    (4, 32, 6, ("threadIdx.x", "threadIdx.y"), "argmax", ("threadIdx.z", 2), None, True),  # 6 warps, 2 rows
]


def _check_grid(call, m, n1, n2, kind, wrap=lambda x: x):
    a = RNG.standard_normal((m, n1 * n2)).astype("float32")
    if kind == "argmax":
        ii = np.tile(np.arange(n1 * n2, dtype="int32"), (m, 1))
        o0, o1 = wrap(np.full(m, -7, "int32")), wrap(np.full(m, np.nan, "float32"))
        call(wrap(ii.reshape(m, n1, n2)), wrap(a.reshape(m, n1, n2)), o0, o1)
        np.testing.assert_array_equal(_np(o0), a.argmax(1))
        np.testing.assert_allclose(_np(o1), a.max(1))
    else:
        b = wrap(np.full(m, np.nan, "float32"))
        call(wrap(a.reshape(m, n1, n2)), b)
        np.testing.assert_allclose(_np(b), a.sum(1) if kind == "sum" else a.max(1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m,n1,n2,tags,kind,rows,parts,shuffles", GRID_CASES)
def test_reduce_axes_on_several_threads_form_one_group(m, n1, n2, tags, kind, rows, parts, shuffles):
    """k1 on threadIdx.x and k2 on threadIdx.y reduce over all their threads together (index
    threadIdx.x fastest); warp shuffles only when those threads are consecutive lanes."""
    s, args = grid_reduce(m, n1, n2, tags, kind, rows, parts)
    mod = tvm.lower(s, args, target="cuda")
    assert bool(calls(mod, "tvm_warp_shuffle_down")) == shuffles
    f = tvm.build(s, args, "cuda")                              # NVRTC compiles it
    _check_grid(lambda *xs: tvm.testing.simulate(f, *xs), m, n1, n2, kind)
    if glc.available():
        g = tvm.build(s, args, "opengl -compute")
        _check_grid(g, m, n1, n2, kind, lambda x: tvm.nd.array(x, tvm.opengl(0)))


def test_group_with_a_symbolic_thread_extent_is_refused():
    n = te.var("n")
    A = te.placeholder((4, 8, n), name="A")
    k1, k2 = te.reduce_axis((0, 8), name="k1"), te.reduce_axis((0, n), name="k2")
    B = te.compute((4,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(k1, te.thread_axis("threadIdx.x"))
    s[B].bind(k2, te.thread_axis("threadIdx.y"))
    with pytest.raises(LoweringError, match="threadIdx.y: the extent n is symbolic"):
        tvm.lower(s, [A, B], target="cuda")
