"""s[X].set_store_predicate: serial stages skip stores, cross-thread reductions pick the writer."""
import os

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tvmlab as tvm  # noqa: E402
from tvmlab import te  # noqa: E402
from tvmlab.errors import ScheduleError  # noqa: E402
from tvmlab.lower.thread_sync import check_uniform_barriers  # noqa: E402
from tvmlab.runtime import opengl_context as glc  # noqa: E402
from tvmlab.schedule.trace import Trace  # noqa: E402

RNG = np.random.default_rng(11)
UNTOUCHED = -777.0      # outputs where the predicate is false keep this (NaN would hide a NaN + x write)


def _run_cpu(s, args, shapes):
    f = tvm.build(s, args, "llvm")
    ins = [RNG.standard_normal(shp).astype("float32") for shp in shapes[:-1]]
    out = tvm.nd.array(np.full(shapes[-1], UNTOUCHED, "float32"))
    f(*[tvm.nd.array(x) for x in ins], out)
    return ins, out.numpy()


@pytest.mark.parametrize("vectorized", [False, True])
def test_elementwise_skips_stores_where_false(vectorized):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    if vectorized:
        xo, xi = s[B].split(B.op.axis[0], factor=8)
        s[B].vectorize(xi)
    s[B].set_store_predicate(B.op.axis[0] % 3 != 0)
    (a,), b = _run_cpu(s, [A, B], [(37,), (37,)])
    keep = np.arange(37) % 3 != 0
    np.testing.assert_allclose(b[keep], a[keep] * 2)
    assert (b[~keep] == UNTOUCHED).all()


def test_serial_reduction_skips_init_and_update():
    A = te.placeholder((9, 20), name="A")
    k = te.reduce_axis((0, 20), name="k")
    B = te.compute((9,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    s[B].set_store_predicate(B.op.axis[0] < 5)
    (a,), b = _run_cpu(s, [A, B], [(9, 20), (9,)])
    np.testing.assert_allclose(b[:5], a[:5].sum(1), rtol=1e-5)
    assert (b[5:] == UNTOUCHED).all()


def _cross_thread(tx_pred=True, row_limit=None, writer=None):
    """TVM's reduction tutorial: rows over blockIdx.x / threadIdx.y, the row sum across threadIdx.x."""
    n = te.var("n")
    A = te.placeholder((n, 77), name="A")
    k = te.reduce_axis((0, 77), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=8)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    pred = (writer(tx) if writer else tx.var.equal(0)) if tx_pred else None
    if row_limit is not None:
        row = s[B].op.axis[0] < row_limit
        pred = row if pred is None else pred & row
    if pred is not None:
        s[B].set_store_predicate(pred)
    return s, [A, B]


def test_cross_thread_barriers_are_reached_by_every_thread():
    s, args = _cross_thread()
    src = tvm.build(s, args, "cuda").imported_modules[0].get_source()
    body = src[src.index("kernel0("):]
    shuffles = [line for line in body.splitlines() if "__shfl" in line]
    starts = ("  float B_red_lane_s0", "  B_red[0] = ")
    assert len(shuffles) == 5 and all(line.startswith(starts) for line in shuffles)
    assert "threadIdx.x) == 0)" in body
    lowered = tvm.lower(s, args, target="opengl -compute").device_split.kernels[0]
    check_uniform_barriers(lowered)              # the shared-memory tree: none under an if


@pytest.mark.skipif(not glc.available(), reason="no OpenGL context on this machine")
@pytest.mark.parametrize("row_limit", [None, 5])
def test_cross_thread_reduction_runs(row_limit):
    s, args = _cross_thread(row_limit=row_limit)
    f = tvm.build(s, args, "opengl -compute")
    dev = tvm.opengl(0)
    for rows in (13, 3, 16):              # rows the 8-row blocks do not divide
        a = RNG.standard_normal((rows, 77)).astype("float32")
        b = tvm.nd.array(np.full(rows, UNTOUCHED, "float32"), dev)
        f(tvm.nd.array(a, dev), b)
        want = a.sum(1)
        got = b.numpy()
        lim = rows if row_limit is None else min(rows, row_limit)
        np.testing.assert_allclose(got[:lim], want[:lim], rtol=1e-5, atol=1e-5)
        assert (got[lim:] == UNTOUCHED).all()


@pytest.mark.skipif(not glc.available(), reason="no OpenGL context on this machine")
@pytest.mark.parametrize("writer", [lambda tx: tx.var == 3, lambda tx: tx.var < 4, lambda tx: tx.var >= 15],
                         ids=["thread 3", "threads 0-3", "thread 15"])
def test_cross_thread_predicate_picks_any_writers(writer):
    s, args = _cross_thread(writer=writer, row_limit=11)
    f = tvm.build(s, args, "opengl -compute")
    dev = tvm.opengl(0)
    a = RNG.standard_normal((13, 77)).astype("float32")
    b = tvm.nd.array(np.full(13, UNTOUCHED, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy()[:11], a.sum(1)[:11], rtol=1e-5, atol=1e-5)
    assert (b.numpy()[11:] == UNTOUCHED).all()


@pytest.mark.skipif(not glc.available(), reason="no OpenGL context on this machine")
def test_thread_index_of_the_stage_it_is_computed_inside():
    """The predicate's threadIdx.x is a fresh thread_axis: matched by tag with the parent's binding."""
    n = 40
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    C = te.compute((n,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=8)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], tx)
    s[B].set_store_predicate(te.thread_axis("threadIdx.x").var < 8)
    replayed = Trace.from_json(s.trace.to_json()).replay([C.op])
    for sch in (s, replayed):
        f = tvm.build(sch, [A, C], "opengl -compute")
        dev = tvm.opengl(0)
        a = RNG.standard_normal(n).astype("float32")
        c = tvm.nd.array(np.full(n, np.nan, "float32"), dev)
        f(tvm.nd.array(a, dev), c)
        np.testing.assert_allclose(c.numpy(), a * 2 + 1, rtol=1e-6)


def test_shape_variables_and_constants_of_other_types():
    n = te.var("n")
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n + 1,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].set_store_predicate((B.op.axis[0] < n - 3) & (B.op.axis[0].var.astype("int64") > te.const(1, "int64")))
    code = s.trace.as_python()
    assert "(s[B].op.axis[0] < (n - 3))" in code and "te.const(1, 'int64')" in code
    f = tvm.build(s, [A, B, n], "llvm")
    a = RNG.standard_normal(13).astype("float32")
    out = tvm.nd.array(np.full(13, UNTOUCHED, "float32"))
    f(tvm.nd.array(a), out, 12)
    b = out.numpy()
    keep = (np.arange(13) < 9) & (np.arange(13) > 1)
    np.testing.assert_allclose(b[keep], a[keep] * 2)
    assert (b[~keep] == UNTOUCHED).all()


def test_trace_json_python_and_replay():
    s, args = _cross_thread(row_limit=5)
    want = str(tvm.lower(s, args, simple_mode=True))
    step = s.trace[-1]
    assert step.primitive == "set_store_predicate"
    replayed = Trace.from_json(s.trace.to_json()).replay([args[1].op])
    assert str(tvm.lower(replayed, args, simple_mode=True)) == want
    code = s.trace.as_python()
    assert "set_store_predicate(((te.thread_axis('threadIdx.x') == 0) & (s[B].op.axis[0] < 5)))" in code
    ns = {"te": te, "B": args[1]}
    exec(code, ns)
    assert str(tvm.lower(ns["s"], args, simple_mode=True)) == want


def test_misuse_changes_nothing():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    before = len(s.trace)
    cases = [
        (lambda: s[C].set_store_predicate(C.op.axis[0] + 1), "boolean expression"),
        (lambda: s[C].set_store_predicate(B.op.axis[0] < 3), "variable i is not an axis of C"),
        (lambda: s[C].set_store_predicate(C[C.op.axis[0]] > 0), "a predicate may use"),
        (lambda: s[A].set_store_predicate(A.shape[0] > 0), "placeholder"),
        (lambda: s[C].set_store_predicate("yes"), "boolean expression"),
    ]
    R = te.placeholder((8, 5), name="R")
    k = te.reduce_axis((0, 5), name="k")
    S = te.compute((8,), lambda i: te.sum(R[i, k], axis=k), name="S")
    s2 = te.create_schedule(S.op)
    cases += [(lambda: s2[S].set_store_predicate(k < 3), "k is a reduce axis")]
    s3 = te.create_schedule(C.op)
    s3[C].opengl()
    cases += [(lambda: s3[C].set_store_predicate(C.op.axis[0] < 3), "fragment pass writes every pixel")]
    for fn, match in cases:
        with pytest.raises(ScheduleError, match=match):
            fn()
    assert len(s.trace) == before and s[C].store_predicate is None
    s[B].set_store_predicate(B.op.axis[0] < 3)
    with pytest.raises(ScheduleError, match="an inlined stage stores nothing"):
        s[B].compute_inline()
    s4 = te.create_schedule(C.op)
    s4[C].set_store_predicate(C.op.axis[0] < 3)
    with pytest.raises(ScheduleError, match="has a store predicate"):
        s4[C].opengl()
