"""End to end: every dtype, casts between them, bools, and integer division semantics."""
import numpy as np
import pytest

import tvmlab
import tvmlab.testing
from tvmlab import te

ALL = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "bool"]
NUMERIC = [d for d in ALL if d != "bool"]
INTS = ["int8", "int16", "int32", "int64"]


def _range(dtype):
    """Input range where ``x * 2 + y`` and short sums fit ``dtype``."""
    return {"int8": (-30, 30), "uint8": (0, 60), "float16": (-4, 4)}.get(
        dtype, (-1000, 1000) if dtype in ("int16", "int32", "int64") else (-2, 2))


@pytest.mark.parametrize("dtype", NUMERIC)
def test_elementwise(dtype, check_build):
    A = te.placeholder((9, 13), dtype=dtype, name="A")
    B = te.placeholder((9, 13), dtype=dtype, name="B")
    C = te.compute(A.shape, lambda i, j: A[i, j] * 2 + B[i, j], name="C")
    s = te.create_schedule(C.op)
    assert C.dtype == dtype
    check_build(s, [A, B, C], lambda a, b: (a * np.array(2, dtype) + b).astype(dtype),
                ranges={"A": _range(dtype), "B": _range(dtype)})


@pytest.mark.parametrize("dtype", NUMERIC)
def test_elementwise_vectorized(dtype, check_build):
    A = te.placeholder((50,), dtype=dtype, name="A")
    B = te.placeholder((50,), dtype=dtype, name="B")
    C = te.compute(A.shape, lambda i: tvmlab.tir.max(A[i], B[i]) - tvmlab.tir.min(A[i], B[i]),
                   name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    check_build(s, [A, B, C], lambda a, b: (np.maximum(a, b) - np.minimum(a, b)).astype(dtype),
                ranges={"A": _range(dtype), "B": _range(dtype)})


@pytest.mark.parametrize("dtype", NUMERIC)
def test_sum(dtype, check_build):
    A = te.placeholder((6, 4), dtype=dtype, name="A")
    k = te.reduce_axis((0, 4), name="k")
    B = te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    tol = {"float16": 2e-2}.get(dtype)
    check_build(s, [A, B], lambda a: a.astype("float64").sum(axis=1).astype(dtype),
                ranges={"A": _range(dtype)}, rtol=tol, atol=tol)


def test_float16_storage_math(check_build):
    A = te.placeholder((40,), dtype="float16", name="A")
    B = te.compute(A.shape, lambda i: te.exp(A[i]) * 0.5, name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: (np.exp(a.astype("float32")) * 0.5).astype("float16"),
                ranges={"A": (-2, 2)}, rtol=1e-2, atol=1e-2)


def test_float64_keeps_precision(check_build):
    A = te.placeholder((16,), dtype="float64", name="A")
    B = te.compute(A.shape, lambda i: (A[i] + 1e8) - 1e8 + A[i] * 1e-9, name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: (a + 1e8) - 1e8 + a * 1e-9, rtol=1e-7, atol=1e-7)


def test_int64_beyond_int32(check_build):
    A = te.placeholder((12,), dtype="int64", name="A")
    B = te.compute(A.shape, lambda i: A[i] * 3 + te.const(5_000_000_000, "int64"), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: a * 3 + 5_000_000_000,
                ranges={"A": (-(10 ** 12), 10 ** 12)})


def test_int8_dot_accumulates_in_int32(check_build):
    A = te.placeholder((8, 64), dtype="int8", name="A")
    B = te.placeholder((64, 8), dtype="int8", name="B")
    k = te.reduce_axis((0, 64), name="k")
    C = te.compute((8, 8), lambda i, j: te.sum(A[i, k].astype("int32") * B[k, j].astype("int32"),
                                               axis=k), name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].vectorize(ji)
    check_build(s, [A, B, C], lambda a, b: a.astype("int32") @ b.astype("int32"),
                ranges={"A": (-128, 127), "B": (-128, 127)})


def test_mixed_int_float_promotes(check_build):
    A = te.placeholder((10,), dtype="int32", name="A")
    B = te.placeholder((10,), dtype="float32", name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    assert C.dtype == "float32"
    s = te.create_schedule(C.op)
    check_build(s, [A, B, C], lambda a, b: a.astype("float32") + b)


# ---------------------------------------------------------------- casts

def _cast_input(src, dst, rng):
    """Data of ``src`` whose values ``dst`` can hold (no out-of-range float->int casts)."""
    n = 37
    if src == "bool":
        return rng.random(n) < 0.5
    if dst == "bool":
        return rng.integers(-2, 3, n).astype(src)  # zeros and non-zeros
    lo, hi = -100, 100
    if "uint" in src or "uint" in dst:
        lo = 0
    if src.startswith("float"):
        return rng.uniform(lo, hi, n).astype(src)
    return rng.integers(lo, hi + 1, n).astype(src)


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
def test_cast(src, dst, rng, check_build):
    if src == dst:
        pytest.skip("same dtype")
    if (src, dst) == ("float64", "float16"):
        pytest.skip("checked in a separate process by test_cast_float64_to_float16_isolated")
    A = te.placeholder((37,), dtype=src, name="A")
    B = te.compute(A.shape, lambda i: A[i].astype(dst), name="B")
    assert B.dtype == dst
    s = te.create_schedule(B.op)
    tol = 1e-3 if "float16" in (src, dst) else None
    check_build(s, [A, B], lambda a: a.astype(dst), inputs={"A": _cast_input(src, dst, rng)},
                rtol=tol, atol=tol)


def test_cast_float64_to_float16_isolated(isolated):
    rc, out = isolated("""
        import numpy as np
        import tvmlab as tvm
        from tvmlab import te
        A = te.placeholder((37,), dtype="float64", name="A")
        B = te.compute(A.shape, lambda i: A[i].astype("float16"), name="B")
        s = te.create_schedule(B.op)
        f = tvm.build(s, [A, B])
        a = np.random.default_rng(0).uniform(-100, 100, 37)
        b = tvm.nd.empty((37,), "float16")
        f(tvm.nd.array(a), b)
        np.testing.assert_allclose(b.numpy().astype("float64"), a.astype("float16"), rtol=1e-3)
        print("OK")
    """)
    assert rc == 0 and "OK" in out, f"exit code {rc}:\n{out[-2000:]}"


def test_cast_vectorized_chain(check_build):
    A = te.placeholder((64,), dtype="float32", name="A")
    B = te.compute(A.shape, lambda i: (A[i] * 10).astype("int8").astype("int32") * 3, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    check_build(s, [A, B], lambda a: (a * np.float32(10)).astype("int8").astype("int32") * 3,
                ranges={"A": (-12, 12)})


# ---------------------------------------------------------------- bool

@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparison_gives_bool_tensor(op, check_build):
    A = te.placeholder((30,), dtype="int32", name="A")
    B = te.placeholder((30,), dtype="int32", name="B")
    fn = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
          ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}[op]
    C = te.compute(A.shape, lambda i: fn(A[i], B[i]), name="C")
    assert C.dtype == "bool"
    s = te.create_schedule(C.op)
    check_build(s, [A, B, C], fn, ranges={"A": (-3, 3), "B": (-3, 3)})


def test_float_comparison_vectorized(check_build):
    A = te.placeholder((40,), name="A")
    C = te.compute(A.shape, lambda i: A[i] > 0.25, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    check_build(s, [A, C], lambda a: a > np.float32(0.25))


def test_bool_inputs_logic(check_build):
    P = te.placeholder((25,), dtype="bool", name="P")
    Q = te.placeholder((25,), dtype="bool", name="Q")
    R = te.compute(P.shape, lambda i: te.any(te.all(P[i], Q[i]),
                                              te.all(P[i] == Q[i], P[i] == False)),  # noqa: E712
                   name="R")
    s = te.create_schedule(R.op)
    check_build(s, [P, Q, R], lambda p, q: (p & q) | ((p == q) & ~p))


def test_bool_select_and_count(check_build):
    P = te.placeholder((6, 20), dtype="bool", name="P")
    A = te.placeholder((6, 20), name="A")
    k = te.reduce_axis((0, 20), name="k")
    cnt = te.compute((6,), lambda i: te.sum(P[i, k].astype("int32"), axis=k), name="cnt")
    sel = te.compute((6, 20), lambda i, j: te.if_then_else(P[i, j], A[i, j], -A[i, j]), name="sel")
    s = te.create_schedule([cnt.op, sel.op])
    check_build(s, [P, A, cnt, sel],
                lambda p, a: (p.sum(axis=1).astype("int32"), np.where(p, a, -a)))


def test_bool_output_stored_as_bytes(check_build):
    A = te.placeholder((17,), dtype="int32", name="A")
    C = te.compute(A.shape, lambda i: A[i].astype("bool"), name="C")
    s = te.create_schedule(C.op)
    mod, out = check_build(s, [A, C], lambda a: a != 0, ranges={"A": (-2, 2)})
    assert out["C"].dtype == np.bool_
    assert set(np.unique(out["C"].view(np.uint8))) <= {0, 1}


# ---------------------------------------------------------------- integer division

def _truncdiv(a, b):
    return (np.sign(a) * np.sign(b) * (np.abs(a.astype("int64")) // np.abs(b.astype("int64")))
            ).astype(a.dtype)


DIVS = {
    "floordiv": (tvmlab.tir.floordiv, np.floor_divide),
    "floormod": (tvmlab.tir.floormod, np.mod),
    "truncdiv": (tvmlab.tir.truncdiv, _truncdiv),
    "truncmod": (tvmlab.tir.truncmod, np.fmod),
    "//": (lambda a, b: a // b, np.floor_divide),
    "%": (lambda a, b: a % b, np.mod),
    "indexdiv": (tvmlab.tir.indexdiv, np.floor_divide),
    "indexmod": (tvmlab.tir.indexmod, np.mod),
}


def _nonzero(rng, shape, dtype, lo, hi):
    b = rng.integers(lo, hi + 1, shape)
    b[b == 0] = 1
    return b.astype(dtype)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", sorted(DIVS))
def test_int_division_by_tensor(op, dtype, rng, check_build):
    fte, fnp = DIVS[op]
    A = te.placeholder((64,), dtype=dtype, name="A")
    B = te.placeholder((64,), dtype=dtype, name="B")
    C = te.compute(A.shape, lambda i: fte(A[i], B[i]), name="C")
    s = te.create_schedule(C.op)
    a = rng.integers(-100, 101, 64).astype(dtype)
    b = _nonzero(rng, 64, dtype, -9, 9)
    check_build(s, [A, B, C], lambda x, y: fnp(x, y).astype(dtype), inputs={"A": a, "B": b})


@pytest.mark.parametrize("c", [1, 2, 3, 4, 7, 8, -1, -2, -3, -8])
@pytest.mark.parametrize("op", ["floordiv", "floormod", "truncdiv", "truncmod"])
def test_int_division_by_constant(op, c, check_build):
    fte, fnp = DIVS[op]
    A = te.placeholder((48,), dtype="int32", name="A")
    C = te.compute(A.shape, lambda i: fte(A[i], c) * 1000 + A[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    check_build(s, [A, C], lambda x: (fnp(x, np.int32(c)) * 1000 + x).astype("int32"),
                ranges={"A": (-100, 100)})


def test_index_division_of_loop_variables(check_build):
    A = te.placeholder((5, 12), dtype="int32", name="A")
    B = te.compute((60,), lambda i: A[i // 12, i % 12] + (i - 30) // 7 + tvmlab.tir.truncmod(i - 30, 7),
                   name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=5)
    i = np.arange(60)
    check_build(s, [A, B], lambda a: (a.reshape(-1) + np.floor_divide(i - 30, 7) +
                                      np.fmod(i - 30, 7)).astype("int32"))
