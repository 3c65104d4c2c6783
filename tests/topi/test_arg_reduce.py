"""argmax / argmin and small-k top-k as vector reductions (topi.nn.arg_reduce), and the dense layers of RNN
steps with packed weights, against numpy on random data with ties, infinities and NaN."""
from __future__ import annotations

import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import relay, te, topi
from tvmlab.topi.nn.arg_reduce import arg_reduce, topk_by_rounds


def _run(outs, args, *arrays):
    s = topi.x86.schedule_reduce(outs)
    f = tvm.build(s, args + list(outs), "llvm")
    bufs = [tvm.nd.array(a) for a in arrays]
    res = [tvm.nd.array(np.full([int(d) for d in o.shape], -7, o.dtype)) for o in outs]
    f(*bufs, *res)
    return [r.numpy() for r in res]


@pytest.mark.parametrize("shape, axis, keepdims", [((37, 1000), 1, False), ((1000, 21), 0, True),
                                                   ((3, 5, 77), -1, True)])
@pytest.mark.parametrize("largest", [True, False])
def test_arg_reduce_first_index_on_ties(shape, axis, keepdims, largest):
    rng = np.random.default_rng(3)
    x = rng.integers(-20, 20, shape).astype(np.float32)        # many ties
    X = te.placeholder(shape, name="X")
    (got,) = _run([arg_reduce(X, axis, keepdims, largest)], [X], x)
    want = (np.argmax if largest else np.argmin)(x, axis=axis)
    if keepdims:
        want = np.expand_dims(want, axis)
    np.testing.assert_array_equal(got, want)


def test_arg_reduce_special_values():
    x = np.array([[np.nan, 1.0, np.nan], [-np.inf, -np.inf, -np.inf], [np.nan] * 3, [2.0, np.inf, np.inf]],
                 np.float32)
    X = te.placeholder(x.shape, name="X")
    (got,) = _run([arg_reduce(X, 1)], [X], x)
    np.testing.assert_array_equal(got, [1, 0, 0, 1])       # NaN is skipped (as topi.argmax), a row of NaN: 0
    (last,) = _run([arg_reduce(X, 1, select_last_index=True)], [X], x)
    np.testing.assert_array_equal(last, [1, 2, 0, 2])
    xi = np.random.default_rng(4).integers(-1000, 1000, (9, 300)).astype(np.int32)
    XI = te.placeholder(xi.shape, "int32", name="XI")
    (got,) = _run([arg_reduce(XI, 1, largest=False)], [XI], xi)
    np.testing.assert_array_equal(got, xi.argmin(axis=1))


@pytest.mark.parametrize("k, largest", [(1, True), (5, True), (3, False)])
def test_topk_by_rounds_ranks_ties_by_the_lower_index(k, largest):
    rng = np.random.default_rng(5)
    x = rng.integers(-8, 8, (7, 301)).astype(np.float32)
    x[0, :] = 1.0                                           # one row of a single value
    X = te.placeholder(x.shape, name="X")
    vals, idx = _run(list(topk_by_rounds(X, k, -1, largest, "int64")), [X], x)
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, order, axis=1))
    assert idx.dtype == np.int64


def test_relay_argmax_and_topk_use_the_reductions():
    x = relay.var("x", shape=(16, 500))
    v, i = relay.topk(x, k=4)
    y = relay.Tuple([relay.argmax(x, axis=1), relay.argmin(x, axis=0, keepdims=True), v, i])
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    assert "sort" not in str(lib.lowered)
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = np.random.default_rng(6).standard_normal((16, 500)).astype(np.float32)
    m.set_input("x", xv)
    m.run()
    order = np.argsort(-xv, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(m.get_output(0).numpy(), xv.argmax(1))
    np.testing.assert_array_equal(m.get_output(1).numpy(), xv.argmin(0)[None])
    np.testing.assert_array_equal(m.get_output(2).numpy(), np.take_along_axis(xv, order, 1))
    np.testing.assert_array_equal(m.get_output(3).numpy(), order)


def test_dense_with_few_rows_reads_a_packed_constant_weight():
    x = relay.var("x", shape=(3, 50))
    w = np.random.default_rng(7).standard_normal((70, 50)).astype(np.float32)
    y = relay.sigmoid(relay.nn.dense(x, relay.const(w)))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    assert "nn.contrib_dense_pack" in str(lib.ir_mod) and "nn.dense(" not in str(lib.ir_mod)
    from tvmlab.contrib import graph_executor
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    xv = np.random.default_rng(8).standard_normal((3, 50)).astype(np.float32)
    m.set_input("x", xv)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), 1 / (1 + np.exp(-(xv @ w.T))), rtol=1e-5, atol=1e-6)
