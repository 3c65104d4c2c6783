"""Features of lowered IR (loops, annotations, buffer strides and footprints) and the XGB cost model."""
import math

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.tuning import features as F


def matmul(n=64, m=48, l=32):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def scheduled(vec=True, par=True, unroll=True, tile=8):
    A, B, C = matmul()
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, factor=4)
    jo, ji = s[C].split(j, factor=tile)
    ko, ki = s[C].split(k, factor=2)
    s[C].reorder(io, jo, ko, ki, ii, ji)
    if par:
        s[C].parallel(io)
    if unroll:
        s[C].unroll(ki)
    if vec:
        s[C].vectorize(ji)
    return s, [A, B, C]


def test_loops_and_annotations_of_the_main_nest():
    s, args = scheduled()
    for mod in (tvm.lower(s, args), F.flat_function(s, args)):
        loops = F.loop_summary(mod)
        names = [x[0] for x in loops]
        assert names == ["i.outer", "j.outer", "k.outer", "k.inner", "i.inner", "j.inner"]
        assert [x[1] for x in loops] == [16, 6, 16, 2, 4, 8]
        assert [x[2] for x in loops] == ["parallel", "serial", "serial", "unrolled", "serial", "vectorized"]


def test_itervar_features_encode_annotations_strides_and_footprints():
    max_loops, max_bufs = 8, 4
    per_loop = F.LOOP_FEATS + max_bufs
    s, args = scheduled()
    f = F.itervar_features(F.flat_function(s, args), max_loops, max_bufs)
    assert len(f) == max_loops * per_loop + max_bufs * 3 + 2
    rows = [f[k * per_loop:(k + 1) * per_loop] for k in range(max_loops)]
    assert rows[0] == [0.0] * per_loop and rows[1] == [0.0] * per_loop        # 6 loops, right-aligned
    inner = rows[-1]
    assert inner[0] == pytest.approx(math.log2(9))                            # extent 8
    kinds = inner[3:3 + len(F.KINDS)]
    assert kinds == [0.0, 0.0, 1.0, 0.0]                                      # vectorized
    assert rows[2][3:3 + len(F.KINDS)] == [0.0, 1.0, 0.0, 0.0]                # i.outer parallel
    assert rows[5][3:3 + len(F.KINDS)] == [0.0, 0.0, 0.0, 1.0]                # k.inner unrolled
    # buffers by footprint: A 64x32, C 64x48, B 32x48 floats -> C, B... with strides along j.inner
    glob = f[max_loops * per_loop:]
    touched = sorted(glob[0:3 * 3:3], reverse=True)
    assert touched[0] == pytest.approx(math.log2(64 * 48 * 4 + 1))
    assert glob[-2] == pytest.approx(math.log2(64 * 48 * 32 + 1))             # iterations of the nest
    # A is read along k: stride 1 on k.inner; B and C move by 1 along j.inner
    a_stride_ji = [r for r in rows[-1][F.LOOP_FEATS:]]
    assert sorted(a_stride_ji) == sorted([math.log2(2)] * 2 + [0.0, 0.0])
    # different schedules give different vectors; equal schedules equal ones
    g = F.itervar_features(F.flat_function(*scheduled(tile=16)), max_loops, max_bufs)
    assert g != f
    assert F.itervar_features(F.flat_function(*scheduled()), max_loops, max_bufs) == f
    h = F.itervar_features(F.flat_function(*scheduled(vec=False, par=False)), max_loops, max_bufs)
    h_rows = [h[k * per_loop:(k + 1) * per_loop] for k in range(max_loops)]
    assert h_rows[-1][3:3 + len(F.KINDS)] == [1.0, 0.0, 0.0, 0.0]            # j.inner now serial
    assert h_rows[2][3:3 + len(F.KINDS)] == [1.0, 0.0, 0.0, 0.0]             # i.outer now serial


def test_curve_features_grow_with_loops():
    s, args = scheduled()
    c = F.curve_features(F.flat_function(s, args), max_loops=6, max_buffers=3)
    assert len(c) == 18
    for b in range(3):
        curve = c[b * 6:(b + 1) * 6]
        assert all(x <= y + 1e-9 for x, y in zip(curve, curve[1:])), curve
        assert curve[-1] > curve[0]


def test_symbolic_shapes_and_empty_functions_have_features():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=8)
    f = F.itervar_features(tvm.lower(s, [A, B]))
    assert len(f) == 8 * (F.LOOP_FEATS + 4) + 14 and any(f)
    assert all(math.isfinite(x) for x in f)
    with pytest.raises(TypeError, match="lowered IRModule"):
        F.itervar_features("not ir")


def test_xgb_cost_model_ranks_and_rejects_bad_data():
    xgb = pytest.importorskip("xgboost")  # noqa: F841
    from tvmlab.tuning.cost_model import CostModelError, XGBCostModel
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, 6))
    y = 3 * X[:, 0] - 2 * X[:, 2] + 0.1 * rng.standard_normal(200) + 3
    for loss in ("rank", "reg"):
        m = XGBCostModel(loss_type=loss)
        assert not m.trained and (m.predict(X[:3]) == 0).all()
        m.fit(X[:150], y[:150])
        p = m.predict(X[150:])
        rho = np.corrcoef(np.argsort(np.argsort(p)), np.argsort(np.argsort(y[150:])))[0, 1]
        assert rho > 0.7, (loss, rho)
    with pytest.raises(CostModelError, match="loss_type"):
        XGBCostModel(loss_type="l1")
    with pytest.raises(CostModelError, match="5 features per row"):
        m.predict(X[:, :5])
    with pytest.raises(CostModelError, match="rows but y has"):
        m.fit(X[:10], y[:9])
    base = XGBCostModel().fit_log(list(zip(X[:100], y[:100])))
    base.fit(X[100:110], y[100:110])                 # the log stays as a base
    p = base.predict(X[150:])
    rho = np.corrcoef(np.argsort(np.argsort(p)), np.argsort(np.argsort(y[150:])))[0, 1]
    assert rho > 0.6
