"""Schedule primitives: structure, misuse errors that change nothing, and the trace."""
import json

import pytest

import tvmlab
from tvmlab import te
from tvmlab.errors import ScheduleError, TVMLabError
from tvmlab.schedule import Trace


def matmul(n=64, m=48, k=32):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def state(s):
    return [(st.name, [iv.var.name for iv in st.leaf_iter_vars],
             {iv.var.name: (a.kind, a.pragmas) for iv, a in st.iter_var_attrs.items()},
             st.attach_type, st.attach_ivar.var.name if st.attach_ivar else None, st.scope)
            for st in s.stages] + [len(s.trace)]


def test_split_fuse_reorder_names():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=8)
    jo, ji = s[C].split(j, nparts=4)
    s[C].reorder(io, jo, k, ii, ji)
    f = s[C].fuse(io, jo)
    assert [iv.var.name for iv in s[C].leaf_iter_vars] == \
        ["i.outer.j.outer.fused", "k", "i.inner", "j.inner"]
    assert f.var.name == "i.outer.j.outer.fused"
    assert len(s[C].relations) == 3
    assert [iv.var.name for iv in s[C].all_iter_vars][:3] == ["i", "j", "k"]


def test_tile_order():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    assert [iv.var.name for iv in s[C].leaf_iter_vars] == \
        ["i.outer", "j.outer", "i.inner", "j.inner", "k"]
    assert [st.primitive for st in s.trace] == ["tile"]


def test_axis_by_name():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    s[C].split("i", factor=4)
    assert s[C].axis("i.inner").var.name == "i.inner"


MISUSE = {
    "unknown axis name": lambda s, C, A: s[C].split("nope", factor=2),
    "axis of another stage": lambda s, C, A: s[A].split(C.op.axis[0], factor=2),
    "re-split a split axis": lambda s, C, A: s[C].split(C.op.axis[1], factor=2),
    "factor 0": lambda s, C, A: s[C].split(C.op.axis[0], factor=0),
    "negative factor": lambda s, C, A: s[C].split(C.op.axis[0], factor=-3),
    "factor and nparts": lambda s, C, A: s[C].split(C.op.axis[0], factor=2, nparts=2),
    "fuse not adjacent": lambda s, C, A: s[C].fuse(C.op.axis[0], C.op.reduce_axis[0]),
    "fuse reduce with data": lambda s, C, A: s[C].fuse(C.op.axis[1], C.op.reduce_axis[0]),
    "reorder duplicate": lambda s, C, A: s[C].reorder(C.op.axis[0], C.op.axis[0]),
    "parallel reduce": lambda s, C, A: s[C].parallel(C.op.reduce_axis[0]),
    "parallel of a vectorized axis": lambda s, C, A: s[C].parallel(s[C].axis("j.inner")),
    "bind non-thread": lambda s, C, A: s[C].bind(C.op.axis[0], C.op.axis[1]),
    "compute_at output": lambda s, C, A: s[C].compute_at(s[C], C.op.axis[0]),
    "inline output": lambda s, C, A: s[C].compute_inline(),
    "schedule placeholder": lambda s, C, A: s[A].split("x", factor=2),
    "unknown scope": lambda s, C, A: s.cache_read(A, "texture", [C]),
    "cache_read non-reader": lambda s, C, A: s.cache_read(C, "shared", [C]),
    "rfactor data axis": lambda s, C, A: s.rfactor(C, C.op.axis[0]),
    "pragma bad value": lambda s, C, A: s[C].pragma(C.op.axis[0], "auto_unroll_max_step", "x"),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_misuse_raises_and_changes_nothing(case):
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[1], factor=4)
    s[C].vectorize(s[C].axis("j.inner"))
    before = state(s)
    with pytest.raises(ScheduleError) as info:
        MISUSE[case](s, C, A)
    assert isinstance(info.value, TVMLabError)
    assert str(info.value)
    assert state(s) == before


def test_compute_at_non_consumer():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: A[i] * 2, name="C")
    D = te.compute((16,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    before = state(s)
    with pytest.raises(ScheduleError, match="does not read B"):
        s[B].compute_at(s[C], C.op.axis[0])
    assert state(s) == before
    s[B].compute_at(s[D], D.op.axis[0])
    assert s[B].attach_stage is s[D]


def test_compute_at_cycle_and_inlined_parent():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1, name="B")
    C = te.compute((16,), lambda i: B[i] * 2, name="C")
    D = te.compute((16,), lambda i: C[i] + 1, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_inline()
    with pytest.raises(ScheduleError, match="inlined"):
        s[B].compute_at(s[C], C.op.axis[0])
    s[B].compute_at(s[D], D.op.axis[0])   # through the inlined C


def test_wrong_arity_and_dsl_errors():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(TVMLabError, match="2 dimension"):
        te.compute((4, 4), lambda i: A[i, i])
    with pytest.raises(TVMLabError, match="indexed with 1"):
        te.compute((4,), lambda i: A[i])
    with pytest.raises(TVMLabError, match="ambiguous"):
        te.compute((4,), lambda i: A[i, 0] + i / 2)
    with pytest.raises(TVMLabError, match="Python bool"):
        te.compute((4,), lambda i: A[i, 0] if i < 2 else 0.0)
    with pytest.raises(TVMLabError, match="unknown dtype"):
        te.placeholder((4,), dtype="float8")
    with pytest.raises(TVMLabError, match=r"shape\[0\] must be an int .* got 2.5"):
        te.compute((5 / 2,), lambda i: A[i, 0])


def test_integral_float_shape_is_an_int():
    """TVM's CPU matmul tutorial writes ``(N / bn, K, bn)``: a float under Python 3."""
    B = te.placeholder((64, 8), name="B")
    P = te.compute((64 / 16, 8, 16), lambda x, y, z: B[x * 16 + z, y], name="P")
    assert [d.value for d in P.shape] == [4, 8, 16] and P.shape[0].dtype == "int32"


def test_trace_json_roundtrip_and_replay():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[CC].compute_at(s[C], yo)
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, ki, *s[CC].op.axis)
    s[CC].vectorize(s[CC].op.axis[1])
    s[C].parallel(xo)
    s[C].pragma(yo, "auto_unroll_max_step", 16)
    text = s.trace.to_json()
    assert json.loads(text)["steps"][0]["primitive"] == "cache_write"
    s2 = Trace.from_json(text).replay([C.op])
    assert state(s2) == state(s)
    assert s2.trace.to_json() == text


def test_as_python_rebuilds_schedule():
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[AA].compute_at(s[C], io)
    s[C].unroll(ii)
    code = s.trace.as_python()
    ns = {"te": te, "A": A, "B": B, "C": C}
    exec(code, ns)
    assert state(ns["s"]) == state(s)


def test_trace_load_errors():
    with pytest.raises(ScheduleError):
        Trace.from_json("{not json")
    with pytest.raises(ScheduleError):
        Trace.from_json(json.dumps({"version": 99, "steps": []}))
    A, B, C = matmul()
    bad = Trace.from_json(json.dumps({"version": 1, "steps": [
        {"primitive": "split", "stage": "C", "axis": "zz", "factor": 2}]}))
    with pytest.raises(ScheduleError, match="zz"):
        bad.replay([C.op])


def test_rfactor_structure():
    A = te.placeholder((128,), name="A")
    k = te.reduce_axis((0, 128), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="S")
    s = te.create_schedule(S.op)
    ko, ki = s[S].split(k, factor=16)
    SF = s.rfactor(S, ki)
    assert SF.shape[0].value == 16
    assert [st.name for st in s.stages] == ["A", "S.rf", "S"]
    assert [iv.var.name for iv in s[S].leaf_iter_vars] == ["i", "ki.v"] or \
        [iv.var.name for iv in s[S].leaf_iter_vars][-1].endswith(".v")


def test_second_cache_of_a_tensor_gets_its_own_name_and_replays():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    c1 = s.cache_read(A, "global", [B])
    c2 = s.cache_read(A, "global", [c1])
    s.cache_write(c2, "local")
    assert [c1.name, c2.name] == ["A.global", "A.global.1"]
    s2 = te.create_schedule(B.op)
    Trace.from_json(s.trace.to_json()).replay(s2)
    assert str(tvmlab.lower(s2, [A, B])) == str(tvmlab.lower(s, [A, B]))
    ns = {"te": te, "A": A, "B": B, "s": te.create_schedule(B.op)}
    exec(s.trace.as_python(header=False), ns)
    assert str(tvmlab.lower(ns["s"], [A, B])) == str(tvmlab.lower(s, [A, B]))


def test_binding_an_axis_again_to_the_same_thread_kind_replaces_it():
    """TVM's tests bind once per target they build for; another kind of thread is still an error."""
    import pytest
    from tvmlab.errors import ScheduleError
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=8)
    for _ in range(2):
        s[B].bind(bx, te.thread_axis("blockIdx.x"))
        s[B].bind(tx, te.thread_axis("threadIdx.x"))
    assert s[B].attr(tx).bind_thread.thread_tag == "threadIdx.x"
    with pytest.raises(ScheduleError, match="already bound to threadIdx.x"):
        s[B].bind(tx, te.thread_axis("threadIdx.y"))
    tvmlab.lower(s, [A, B], target="cuda")
