"""The operators TVM's topi has beyond the first inventory: element-wise (bitwise, shifts, sign, isinf ...),
reductions (all, any, argmax over every axis), data movement (flip, reverse_sequence, strided_set, tensor-
bounded strided_slice, one_hot, matrix_set_diag, adv_index ...), searches (searchsorted, argwhere, unique),
lstm and nll_loss: each built with its CPU and CUDA schedule, against numpy on random data (the CUDA build
on the simulator)."""
import numpy as np
import pytest

import tvmlab as tvm
from tvmlab import te, topi
from tvmlab.topi import testing as ref
from tvmlab.topi.utils import OperatorError
from topi_check import verify

X86, CUDA = topi.x86.schedule_injective, topi.cuda.schedule_injective


def ph(shape, name, dtype="float32"):
    return te.placeholder(shape, name=name, dtype=dtype)


@pytest.mark.parametrize("op,fn", [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                                   ("bitwise_xor", np.bitwise_xor), ("left_shift", np.left_shift),
                                   ("right_shift", np.right_shift)])
def test_bitwise_and_shifts(op, fn, rng):
    A, B = ph((3, 1, 37), "A", "int32"), ph((5, 37), "B", "int32")
    C = getattr(topi, op)(A, B)
    assert C.shape == (3, 5, 37)
    verify([A, B, C], fn, rng, X86, CUDA, ranges={"B": (0, 30)} if "shift" in op else None)
    x, y = te.var("x", "int32"), te.var("y", "int32")
    assert isinstance(getattr(topi, op)(x, y), tvm.tir.PrimExpr)


def test_bitwise_not_logical_xor_and_predicates(rng):
    A = ph((41,), "A", "int32")
    verify([A, topi.bitwise_not(A)], np.bitwise_not, rng, X86, CUDA)
    P, Q = ph((4, 9), "P", "bool"), ph((9,), "Q", "bool")
    verify([P, Q, topi.logical_xor(P, Q)], np.logical_xor, rng, X86, CUDA)
    assert isinstance(topi.logical_not(te.var("b", "bool")), tvm.tir.PrimExpr)
    F = ph((5, 13), "F")
    special = np.where(np.arange(65).reshape(5, 13) % 3 == 0, np.inf, np.linspace(-4, 4, 65).reshape(5, 13))
    special[1, 2], special[3, 3] = np.nan, -np.inf
    for op, fn in (("isinf", np.isinf), ("isfinite", np.isfinite), ("isnan", np.isnan), ("sign", np.sign),
                   ("trunc", np.trunc)):
        out = getattr(topi, op)(F)
        verify([F, out], fn, rng, X86, CUDA, inputs={"F": special.astype("float32")}, rtol=0, atol=0)
    assert topi.exp(ph((3,), "I", "int32")).dtype == "float32"      # numpy's promotion


def test_reinterpret_and_astype(rng):
    A = ph((33,), "A")
    R = topi.reinterpret(A, "int32")
    verify([A, R], lambda a: a.view("int32"), rng, X86)
    with tvm.target.Target("cuda"):       # CUDA C's bit casts (the simulator does not run them)
        src = tvm.build(CUDA(R), [A, R]).imported_modules[0].get_source()
    assert "__float_as_int(" in src
    U = ph((33,), "U", "uint32")
    verify([U, topi.reinterpret(U, "int32")], lambda a: a.view("int32"), rng, X86, CUDA)
    with pytest.raises(OperatorError, match="one width"):
        topi.reinterpret(A, "int16")
    C = topi.greater(A, ph((33,), "B")).astype("int8")
    assert C.dtype == "int8" and C.op.tag == "elemwise"


def test_all_any_and_argmax_over_every_axis(rng):
    B = ph((4, 7, 5), "B", "bool")
    for op in ("all", "any"):
        for axis, keep in ((None, False), ((0, 2), True), (1, False)):
            out = getattr(topi, op)(B, axis=axis, keepdims=keep)
            verify([B, out], lambda b: getattr(np, op)(b, axis=axis, keepdims=keep), rng, topi.x86.schedule_reduce,
                   topi.cuda.schedule_reduce if axis == 1 else None)
    A = ph((6, 5, 7), "A")
    for keep in (False, True):
        out = topi.argmax(A, keepdims=keep)
        want = (lambda a: np.array(a.argmax()).reshape((1, 1, 1) if keep else ()).astype("int32"))
        verify([A, out], want, rng, topi.x86.schedule_reduce)


def test_flip_reverse_sequence_and_sequence_mask(rng):
    n = te.var("n")
    A = ph((n, 6, 5), "A")
    s = topi.x86.schedule_injective(topi.flip(A, 1))
    f = tvm.build(s, [A, s.outputs[0].output(0)])
    a = rng.uniform(-1, 1, (3, 6, 5)).astype("float32")
    out = tvm.nd.array(np.full_like(a, np.nan))
    f(tvm.nd.array(a), out)
    np.testing.assert_array_equal(out.numpy(), np.flip(a, 1))
    D, L = ph((4, 7, 3), "D"), ph((7,), "L", "int32")
    lens = np.array([0, 1, 4, 7, 9, -1, 3], "int32")

    def rev(d, ln):
        out = d.copy()
        for b, k in enumerate(np.minimum(ln, 4)):
            if k > 0:
                out[:k, b] = d[:k, b][::-1]
        return out
    verify([D, L, topi.reverse_sequence(D, L, seq_axis=0, batch_axis=1)], rev, rng, X86, CUDA, inputs={"L": lens})
    with pytest.raises(OperatorError, match="seq_lengths size should match"):
        topi.reverse_sequence(D, ph((5,), "L5", "int32"), 0, 1)
    M, V = ph((5, 3, 2), "M"), ph((3,), "V", "int32")
    verify([M, V, topi.sequence_mask(M, V, mask_value=-2.0, axis=0)], lambda m, v: ref.sequence_mask(m, v, -2.0, 0),
           rng, X86, CUDA, ranges={"V": (0, 5)})


def test_strided_slice_with_tensor_bounds_and_strided_set(rng):
    A = ph((5, 6, 7), "A")
    Bg, En, St = (ph((3,), n, "int64") for n in ("begin", "end", "strides"))
    out = topi.strided_slice(A, Bg, En, St)
    a = rng.uniform(-1, 1, (5, 6, 7)).astype("float32")
    for b, e, st in (([4, 0, -1], [0, 5, -8], [-1, 2, -3]), ([1, -2, 0], [9, 6, 7], [2, 1, 3])):
        want = ref.strided_slice_python(a, b, e, st)
        f = tvm.build(X86(out), [A, Bg, En, St, out])
        o = tvm.nd.array(np.full(want.shape, np.nan, "float32"))
        f(tvm.nd.array(a), *[tvm.nd.array(np.array(v, "int64")) for v in (b, e, st)], o)
        np.testing.assert_array_equal(o.numpy(), want)
    V = ph((2, 3, 4), "V")
    b, e, st = ph((3,), "b", "int32"), ph((3,), "e", "int32"), ph((2,), "st", "int32")
    bounds = {"b": np.array([4, 0, -5], "int32"), "e": np.array([0, 6, 6], "int32"), "st": np.array([-2, 2], "int32")}
    verify([A, V, b, e, st, topi.strided_set(A, V, b, e, st)],
           lambda a_, v, *_: ref.strided_set_python(a_, v, [4, 0, -5], [0, 6, 6], [-2, 2]), rng, X86, CUDA,
           inputs=bounds)


def test_creation_ops(rng):
    for args, kw in (((1, 20, 1.5), {}), ((20, 1, -3), {}), ((7,), {"dtype": "int32"})):
        out = topi.arange(*args, **kw)
        verify([out], lambda: np.arange(*args).astype(out.dtype), rng, X86, CUDA)
    I = ph((3, 4), "I", "int32")
    oh = topi.one_hot(I, tvm.tir.const(2.5), tvm.tir.const(-1.0), 6, 1, "float32")
    verify([I, oh], lambda i: ref.one_hot(i, 2.5, -1.0, 6, 1, "float32"), rng, X86, CUDA, ranges={"I": (0, 5)})
    A = ph((2, 7, 5), "A")
    verify([A, topi.shape(A, "int64")], lambda a: np.array(a.shape, "int64"), rng, X86, CUDA)
    verify([A, topi.ndarray_size(A, "int32")], lambda a: np.array(a.size, "int32"), rng, X86)
    E, S = ph((7,), "E"), ph((2, 7, 3), "S")
    verify([E, S, topi.expand_like(E, S, [0, 2])], lambda e, s: np.broadcast_to(e[None, :, None], s.shape),
           rng, X86, CUDA)
    idx, val, dv = ph((4, 2), "idx", "int32"), ph((4,), "val"), ph((), "dv")
    pos = np.array([[0, 1], [2, 3], [0, 1], [1, 0]], "int32")

    def dense(i, v, d):
        out = np.full((3, 4), d, "float32")
        for (y, x), w in zip(i, v):
            out[y, x] = w
        return out
    verify([idx, val, dv, topi.sparse_to_dense(idx, (3, 4), val, dv)], dense, rng, X86, CUDA, inputs={"idx": pos})


def test_tensordot_matmul_and_einsum_ellipsis(rng):
    A, B = ph((4, 3, 2, 5), "A"), ph((2, 4, 3, 6), "B")
    out = topi.tensordot(A, B, ((1, 2, 0), (2, 0, 1)))
    verify([A, B, out], lambda a, b: np.tensordot(a, b, ((1, 2, 0), (2, 0, 1))), rng, None, rtol=1e-5, atol=1e-5)
    P, Q = ph((7, 5), "P"), ph((9, 7), "Q")
    verify([P, Q, topi.matmul(P, Q, True, True)], lambda p, q: p.T @ q.T, rng, None, rtol=1e-5, atol=1e-5)
    X, Y = ph((2, 1, 3, 4), "X"), ph((5, 4, 6), "Y")
    verify([X, Y, topi.einsum("...ij,...jk->...ik", X, Y)], lambda x, y: np.einsum("...ij,...jk->...ik", x, y), rng,
           None, rtol=1e-5, atol=1e-5)
    verify([X, topi.einsum("...j", X)], lambda x: np.einsum("...j", x), rng, None)


def test_indexing_ops(rng):
    I, S = ph((5,), "I", "int64"), ph((3,), "S", "int32")
    verify([I, S, topi.unravel_index(I, S)], lambda i, s: np.stack(np.unravel_index(i, s)).astype("int64"), rng,
           X86, CUDA, inputs={"I": np.array([0, 7, 59, 12, 33], "int64"), "S": np.array([4, 3, 5], "int32")})
    D = ph((6, 5, 4), "D")
    i0, i1 = ph((3, 1), "i0", "int32"), ph((1, 2), "i1", "uint8")
    verify([D, i0, i1, topi.adv_index(D, [i0, i1])], lambda d, a, b: d[a, b], rng, X86, CUDA,
           ranges={"i0": (0, 5), "i1": (0, 4)})
    M, G = ph((2, 4, 5), "M"), ph((2, 3, 5), "G")
    for align in ("RIGHT_LEFT", "LEFT_RIGHT"):
        verify([M, G, topi.matrix_set_diag(M, G, (-1, 1), align)],
               lambda m, g: ref.matrix_set_diag(m, g, (-1, 1), align), rng, X86, CUDA)
    G1 = ph((2, 4), "G1")
    verify([M, G1, topi.matrix_set_diag(M, G1, 1)], lambda m, g: ref.matrix_set_diag(m, g, 1), rng, X86, CUDA)


def test_space_depth_and_get_shape(rng):
    A = ph((2, 3, 4, 6), "A")
    verify([A, topi.nn.space_to_depth(A, 2)], lambda a: ref.space_to_depth_python(a, 2), rng, X86, CUDA)
    Z = ph((2, 12, 3, 5), "Z")
    for mode in ("DCR", "CDR"):
        verify([Z, topi.nn.depth_to_space(Z, 2, mode=mode)], lambda z: ref.depth_to_space_python(z, 2, mode), rng,
               X86, CUDA)
    assert topi.utils.get_shape((2, 3, 32, 32, 16, 8), "OIHW16i8o", "HWO8oI16i") == (32, 32, 2, 8, 3, 16)
    assert topi.utils.get_shape((1, 32, 7, 7), "NCHW", "NCHW16c") == (1, 2, 7, 7, 16)


def test_searchsorted_argwhere_unique(rng):
    seq = np.sort(rng.standard_normal((3, 37)).astype("float32"), axis=-1)
    vals = rng.standard_normal((3, 11)).astype("float32")
    vals[1, :3] = seq[1, [0, 5, 36]]                         # ties: left and right differ
    S, V = ph((3, 37), "S"), ph((3, 11), "V")
    for right in (False, True):
        verify([S, V, topi.searchsorted(S, V, right, "int32")], lambda s, v: ref.searchsorted_ref(s, v, right, "int32"),
               rng, topi.generic.schedule_extern, topi.cuda.schedule_extern, inputs={"S": seq, "V": vals})
    cond = (rng.integers(0, 3, (5, 4, 3)) > 1).astype("int32")
    count = int(np.count_nonzero(cond))
    shape_arg, C = ph((count, 3), "shape_arg", "int32"), ph((5, 4, 3), "C", "int32")
    verify([shape_arg, C, topi.argwhere(shape_arg, C)], lambda _, c: np.argwhere(c).astype("int32"), rng,
           topi.generic.schedule_argwhere, topi.cuda.schedule_argwhere, inputs={"C": cond})
    data = rng.integers(0, 9, 23).astype("int32")
    D = ph((23,), "D", "int32")
    for is_sorted in (True, False):
        outs = topi.unique(D, is_sorted, True)
        uniq, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True, return_counts=True)
        if not is_sorted:
            order = np.argsort(first)
            uniq, first, counts = uniq[order], first[order], counts[order]
            inverse = np.argsort(order)[inverse]
        k = len(uniq)
        f = tvm.build(topi.generic.schedule_unique(outs), [D] + outs)
        res = [tvm.nd.array(np.full((1,) if o.shape[0] == 1 else (23,), -7, "int32")) for o in outs]
        f(tvm.nd.array(data), *res)
        got = [r.numpy() for r in res]
        assert got[3][0] == k
        for g, w in zip([got[0][:k], got[1][:k], got[2], got[4][:k]], [uniq, first, inverse, counts]):
            np.testing.assert_array_equal(g, w)


def test_topk_of_the_whole_axis(rng):
    A = ph((4, 9), "A")
    out = topi.topk(A, 0, 1, "values", False)
    verify([A, out], lambda a: -np.sort(-a, axis=1), rng, topi.generic.schedule_topk)


@pytest.mark.parametrize("proj,peephole,reverse,layout", [(0, False, False, "IFGO"), (3, True, True, "IOFG")])
def test_lstm(proj, peephole, reverse, layout, rng):
    T, B, F, H = 4, 2, 3, 5
    O = proj or H
    shapes = {"Xs": (T, B, F), "Wi": (4 * H, F), "Wh": (4 * H, O), "Bi": (4 * H,), "Bh": (4 * H,), "h0": (B, O),
              "c0": (B, H)}
    if proj:
        shapes["proj"] = (proj, H)
    if peephole:
        shapes.update(p_i=(B, H), p_f=(B, H), p_o=(B, H))
    t = {k: ph(v, k) for k, v in shapes.items()}
    hs, cs = topi.nn.lstm(t["Xs"], t["Wi"], t["Wh"], t["Bi"], t["Bh"], t["h0"], t["c0"], t.get("proj"),
                          t.get("p_i"), t.get("p_f"), t.get("p_o"), reverse=reverse, weight_layout=layout)
    names = list(shapes)

    def want(*arrays):
        kw = dict(zip(names, arrays))
        return ref.lstm_python(kw["Xs"], kw["Wi"], kw["Wh"], kw["Bi"], kw["Bh"], kw["h0"], kw["c0"], kw.get("proj"),
                               kw.get("p_i"), kw.get("p_f"), kw.get("p_o"), reverse=reverse, weight_layout=layout)
    verify([t[k] for k in names] + [hs, cs], want, rng, topi.generic.schedule_lstm, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction, rng):
    P, Tg, W = ph((4, 5, 3), "P"), ph((4, 3), "Tg", "int32"), ph((5,), "W")
    targets = rng.integers(0, 5, (4, 3)).astype("int32")
    targets[1, 2] = -100
    out = topi.nn.nll_loss(P, Tg, W, reduction, -100)
    verify([P, Tg, W, out], lambda p, tg, w: np.asarray(ref.nll_loss(p, tg, w, reduction, -100), "float32"), rng,
           topi.generic.schedule_reduce, inputs={"Tg": targets}, rtol=1e-5, atol=1e-5)
