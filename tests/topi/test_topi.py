"""The topi operators, built with their CPU schedules, against numpy on random data.

Shapes include ones the schedules' tiles do not divide (register tiles, row
blocks, reduction chunks, vector widths) and degenerate ones; outputs are
poisoned with NaN before each call by ``check_build``.
"""
import re

import numpy as np
import pytest

import tvmlab
from tvmlab import te, topi
from tvmlab.errors import ScheduleError
from tvmlab.ir.functor import IRVisitor
from tvmlab.topi.x86.dense import tile_rows
from tvmlab.topi.utils import vector_block as default_block


def _ref_matmul(a, b):
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(a.dtype)


@pytest.mark.parametrize("pack_b", [None, True, False], ids=["auto", "packed", "in-place"])
@pytest.mark.parametrize("m,k,n", [(64, 64, 64), (37, 53, 41), (1, 1, 1), (130, 300, 70), (8, 513, 33),
                                   (3, 7, 100), (16, 40, 37), (4, 33, 1030)])
def test_matmul(m, k, n, pack_b, check_build):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    C = topi.matmul(A, B, pack_b=pack_b)
    s = topi.schedule_matmul(C)
    check_build(s, [A, B, C], _ref_matmul, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_matmul_float64_small_tiles(check_build):
    A = te.placeholder((45, 29), dtype="float64", name="A")
    B = te.placeholder((29, 50), dtype="float64", name="B")
    C = topi.matmul(A, B, block=16)
    s = topi.schedule_matmul(C, rows=4, row_block=12, k_chunk=8)
    check_build(s, [A, B, C], lambda a, b: a @ b)


def test_matmul_int32(check_build):
    A = te.placeholder((19, 23), dtype="int32", name="A")
    B = te.placeholder((23, 35), dtype="int32", name="B")
    C = topi.matmul(A, B)
    check_build(topi.schedule_matmul(C), [A, B, C], lambda a, b: a @ b, ranges={"A": (-9, 9), "B": (-9, 9)})


def _allocations(stmt):
    found = []

    class Walk(IRVisitor):
        def visit_Allocate(self, s):
            n = 1
            for x in s.extents:
                n *= x.value
            found.append((s.buffer_var.name, n))
            self.generic_visit(s)

    Walk().visit(stmt)
    return found


@pytest.mark.parametrize("k,n", [(64, 64), (50, 70)])
def test_matmul_packing_memory_is_the_packed_operand(k, n):
    """Beside the packed B panels the kernel allocates only its register tile (per task)."""
    A = te.placeholder((48, k), name="A")
    B = te.placeholder((k, n), name="B")
    C = topi.matmul(A, B)
    block = default_block("float32")
    rows = tile_rows(block, "float32")
    mod = tvmlab.lower(topi.schedule_matmul(C), [A, B, C])
    allocs = _allocations(next(iter(mod.functions.values())).body)
    assert allocs[0] == ("C_packB", k * -(-n // block) * block)
    assert {a for a, _ in allocs[1:]} == {"C.global"} and all(size == rows * block for _, size in allocs[1:])


def test_matmul_tile_follows_the_vector_registers():
    """Two vector registers of columns; rows that leave one register for B's row and one for A."""
    assert default_block("float32", "llvm -mcpu=haswell") == 16
    assert tile_rows(16, "float32", "llvm -mcpu=haswell") == 6        # 12 + 2 + 1 of 16
    assert default_block("float32", "llvm -mcpu=skylake-avx512") == 32
    assert tile_rows(32, "float32", "llvm -mcpu=skylake-avx512") == 12  # 24 + 2 + 1 of 32
    assert default_block("float64", "llvm -mcpu=haswell") == 8
    assert tile_rows(32, "float32", "llvm -mcpu=haswell") == 2         # 4 registers a row


@pytest.mark.parametrize("m,packed", [(1, False), (16, False), (17, True)])
def test_matmul_few_rows_read_b_in_place(m, packed):
    """With at most SMALL_M rows a packing pass over B costs more than it saves: no copy of B."""
    A = te.placeholder((m, 64), name="A")
    B = te.placeholder((64, 48), name="B")
    C = topi.matmul(A, B)
    assert any(t.op.name == "C_packB" for t in C.op.input_tensors) == packed
    allocs = _allocations(next(iter(tvmlab.lower(topi.schedule_matmul(C), [A, B, C]).functions.values())).body)
    # one or a few rows stream B's rows whole into C (no register tile); more rows keep the tile
    assert {a for a, _ in allocs} == ({"C_packB", "C.global"} if packed else {"C.global"} if m > 4 else set())
    n = te.var("n")
    S = topi.matmul(te.placeholder((n, 64), name="A"), B)         # rows unknown: packed
    assert any(t.op.name == "C_packB" for t in S.op.input_tensors)


def test_matmul_column_tail_accumulates_unmasked():
    """The last column panel (15 of 16 columns) keeps its tile in registers: only the stores to C
    (and the packing of B past its last column) are masked, never the write cache's accumulation."""
    A = te.placeholder((24, 64), name="A")
    B = te.placeholder((64, 1023), name="B")
    C = topi.matmul(A, B)
    for target in ("llvm -mcpu=znver3", "llvm -mcpu=skylake-avx512"):
        text = str(tvmlab.lower(topi.schedule_matmul(C, target=target), [A, B, C]))
        masked = [line.strip() for line in text.splitlines() if "predicate=" in line]
        # Only the stores of the tail into C and the packing of B past its last column are
        # masked, never a store into the write cache.
        assert masked, text
        assert all(m.startswith(("T.store(C, ", "C_packB[")) for m in masked), masked
        # The tail's accumulation selects the valid columns of its last vector instead.
        tails = re.findall(r"T\.Select\(T\.Ramp\((\d+), 1, (\d+)\) < T\.Broadcast\(1023, \d+\), "
                           r"C\.global(?:_\d+)?\[", text)
        assert tails, text
        assert all(int(first) == 1023 // int(w) * int(w) for first, w in tails), tails


def test_matmul_column_blocks_are_equal_runs_of_panels(check_build):
    """B's column blocks (as many 16-column panels as fit B_BLOCK_BYTES: 8 here) split the 12 panels into equal
    runs (6 + 6), not 8 + 4: a shorter last block left every column guarded in the inner loop (16x slower)."""
    A = te.placeholder((20, 8192), name="A")
    B = te.placeholder((8192, 192), name="B")
    C = topi.matmul(A, B)
    s = topi.schedule_matmul(C, target="llvm -mcpu=znver3")
    text = str(tvmlab.lower(s, [A, B, C]))
    assert "< T.Broadcast(192" not in text and "T.min(12 - " not in text, text
    check_build(topi.schedule_matmul(C), [A, B, C], lambda a, b: a @ b, rtol=1e-4, atol=1e-3)


def test_matmul_packed_a_memory():
    A = te.placeholder((20, 30), name="A")
    B = te.placeholder((30, 40), name="B")
    C = topi.matmul(A, B, rows=8)
    mod = tvmlab.lower(topi.schedule_matmul(C), [A, B, C])
    sizes = dict(_allocations(next(iter(mod.functions.values())).body))
    assert sizes["C_packA"] == 24 * 30          # 20 rows padded to whole 8-row panels


def test_matmul_pack_b_errors():
    A = te.placeholder((4, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    with pytest.raises(ScheduleError, match="pack_b must be True, False or None"):
        topi.matmul(A, B, pack_b="yes")
    with pytest.raises(ScheduleError, match="needs pack_b"):
        topi.matmul(A, B, rows=4, pack_b=False)


def test_matmul_errors():
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(ScheduleError, match=r"reduction sizes differ: float32\(4, 5\) has 5, float32\(6, 3\) has 6"):
        topi.matmul(A, te.placeholder((6, 3), name="B"))
    with pytest.raises(ScheduleError, match="2-D"):
        topi.matmul(A, te.placeholder((5,), name="B"))
    with pytest.raises(ScheduleError, match="no operator tagged matmul"):
        topi.schedule_matmul(topi.add(A, A))
    with pytest.raises(ScheduleError, match="target 'llvm'"):
        topi.schedule_matmul(topi.matmul(A, te.placeholder((5, 3), name="B")), target="cuda")
    C = topi.matmul(A, te.placeholder((5, 3), name="B"))
    for bad in ({"rows": -2}, {"row_block": 0}, {"col_block": -5}, {"k_chunk": 2.5}):
        with pytest.raises(ScheduleError, match=f"schedule_matmul: {next(iter(bad))} must be an int >= 1"):
            topi.schedule_matmul(C, **bad)
    with pytest.raises(ScheduleError, match="matmul: rows must be an int >= 1"):
        topi.matmul(A, te.placeholder((5, 3), name="B"), rows=-1)


def test_matmul_is_topi_nn_matmul_blocked():
    """One compute and one CPU schedule: topi.matmul is topi.nn.matmul's blocked product, and
    topi.schedule_matmul is topi.x86's."""
    assert topi.schedule_matmul is topi.x86.schedule_matmul
    A = te.placeholder((40, 30), name="A")
    B = te.placeholder((30, 20), name="B")
    C, D = topi.matmul(A, B), topi.nn.matmul(A, B, blocked=True, name="C")
    assert (C.op.tag, dict(C.op.attrs)) == (D.op.tag, dict(D.op.attrs)) == ("matmul", {
        "block": default_block("float32"), "rows": 0, "packed_b": 1})
    assert topi.schedule_matmul(C).trace.as_python() == topi.schedule_matmul(D).trace.as_python()
    assert not topi.nn.matmul(A, B).op.attrs           # the plain product: B read in place
    with pytest.raises(ScheduleError, match="give blocked=True"):
        topi.nn.matmul(A, B, pack_b=True)
    with pytest.raises(ScheduleError, match="shape the blocked product of topi.matmul"):
        topi.schedule_matmul(topi.nn.matmul(A, B), rows=4)


@pytest.mark.parametrize("m", [3, 50])
def test_matmul_blocked_with_a_fused_tail(m, check_build):
    """A bias and an activation after topi.matmul's product go through each register tile as it is stored."""
    A = te.placeholder((m, 37), name="A")
    B = te.placeholder((37, 45), name="B")
    bias = te.placeholder((45,), name="bias")
    out = topi.nn.relu(topi.nn.matmul(A, B, bias, blocked=True))
    check_build(topi.schedule_matmul([out]), [A, B, bias, out], lambda a, b, c: np.maximum(_ref_matmul(a, b) + c, 0),
                rtol=1e-4, atol=1e-4)
    for bad in ({"k_chunk": 8}, {"tensorize": True}):
        with pytest.raises(ScheduleError, match="need the product 'T_matmul' as the output"):
            topi.schedule_matmul([out], **bad)


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_matmul_transposed_is_a_plain_product(ta, tb, check_build):
    A = te.placeholder((23, 41) if ta else (41, 23), name="A")
    B = te.placeholder((30, 23) if tb else (23, 30), name="B")
    C = topi.matmul(A, B, ta, tb)
    assert not C.op.attrs and C.op.name == "C"
    check_build(topi.schedule_matmul(C), [A, B, C],
                lambda a, b: _ref_matmul(a.T if ta else a, b.T if tb else b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1000,), (1,), (65536 + 37,), (37, 23), (3, 4, 5)])
def test_add(shape, check_build):
    A = te.placeholder(shape, name="A")
    B = te.placeholder(shape, name="B")
    C = topi.add(A, B)
    check_build(topi.schedule_elementwise(C), [A, B, C], lambda a, b: a + b)


def test_add_errors():
    with pytest.raises(ScheduleError, match="one shape and dtype"):
        topi.add(te.placeholder((3,), name="A"), te.placeholder((3,), dtype="int32", name="B"))


def _ref_softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("m,n", [(4, 37), (3, 5), (2, 1000), (5, 1), (7, 16), (64, 256)])
def test_softmax(m, n, check_build):
    x = te.placeholder((m, n), name="x")
    out = topi.softmax(x)
    check_build(topi.schedule_softmax(out), [x, out], _ref_softmax, ranges={"x": (-30, 30)},
                rtol=2e-6, atol=1e-7)


def test_softmax_extreme_rows(check_build):
    """Rows with huge spreads (underflowing exponentials) and equal values."""
    x = te.placeholder((3, 40), name="x")
    out = topi.softmax(x)
    data = np.random.default_rng(1).uniform(-200, 200, (3, 40)).astype(np.float32)
    data[1] = 7.0
    data[2, :20] = -1e30
    check_build(topi.schedule_softmax(out), [x, out], _ref_softmax, inputs={"x": data}, rtol=2e-6, atol=1e-7)


def _ref_conv(a, w, stride, padding):
    n, c, h, wd = a.shape
    o, _, kh, kw = w.shape
    p = np.pad(a.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for y in range(kh):
        for x in range(kw):
            win = p[:, :, y:y + stride * oh:stride, x:x + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", win, w[:, :, y, x].astype(np.float64))
    return out.astype(a.dtype)


@pytest.mark.parametrize("n,c,h,o,k,stride,padding", [
    (1, 3, 7, 5, 3, 1, 1),       # 5 output channels: not a multiple of the channel block
    (2, 4, 16, 8, 3, 1, 1),      # rows of 16: one full vector
    (1, 2, 9, 4, 3, 2, 1),       # stride 2
    (1, 3, 8, 6, 1, 1, 0),       # 1x1, no padding
    (1, 2, 10, 3, 5, 1, 2),      # 5x5 window
])
def test_conv2d_nchw(n, c, h, o, k, stride, padding, check_build):
    d = te.placeholder((n, c, h, h), name="data")
    w = te.placeholder((o, c, k, k), name="kernel")
    out = topi.conv2d_nchw(d, w, stride=stride, padding=padding)
    check_build(topi.schedule_conv2d_nchw(out), [d, w, out],
                lambda a, b: _ref_conv(a, b, stride, padding), rtol=1e-4, atol=1e-4)


def test_conv2d_errors():
    d = te.placeholder((1, 3, 8, 8), name="data")
    assert topi.conv2d_nchw is topi.nn.conv2d_nchw                     # one compute
    assert topi.schedule_conv2d_nchw is topi.x86.schedule_conv2d_nchw  # and the CPU's schedule
    with pytest.raises(ScheduleError, match="3 channels but the kernel expects 4"):
        topi.conv2d_nchw(d, te.placeholder((2, 4, 3, 3), name="w"), 1, 1)
    with pytest.raises(ScheduleError, match="stride"):
        topi.conv2d_nchw(d, te.placeholder((2, 3, 3, 3), name="w"), stride=0, padding=1)
    with pytest.raises(ScheduleError, match="oc_block"):
        topi.conv2d_nchw(d, te.placeholder((2, 3, 3, 3), name="w"), 1, 1, oc_block=0)
    out = topi.conv2d_nchw(d, te.placeholder((2, 3, 3, 3), name="w"), 1, 1)
    with pytest.raises(ScheduleError, match="width must be an int >= 1"):
        topi.schedule_conv2d_nchw(out, width=-1)


@pytest.mark.parametrize("k_chunk", [None, 8])
def test_matmul_schedule_variants(k_chunk, check_build):
    """Register write cache over the whole reduction, and small reduction chunks with packed A per task."""
    A = te.placeholder((70, 45), name="A")
    B = te.placeholder((45, 40), name="B")
    C = topi.matmul(A, B)
    s = topi.schedule_matmul(C, row_block=16, k_chunk=k_chunk)
    check_build(s, [A, B, C], _ref_matmul, rtol=1e-4, atol=1e-3)


def test_matmul_unpacked_a(check_build):
    A = te.placeholder((21, 30), name="A")
    B = te.placeholder((30, 33), name="B")
    C = topi.matmul(A, B, rows=0)
    check_build(topi.schedule_matmul(C), [A, B, C], _ref_matmul, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("m,k,n", [(29, 40, 37), (6, 3, 16)])
def test_matmul_symbolic_shapes(m, k, n, check_build):
    """Symbolic M, K, N: the tile loops are guarded at run time, the result is the same."""
    M, K, N = te.var("M"), te.var("K"), te.var("N")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = topi.matmul(A, B)
    check_build(topi.schedule_matmul(C), [A, B, C], _ref_matmul, env={"M": m, "K": k, "N": n},
                rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype,oc_block,width", [("float64", None, None), ("float32", 4, 3), ("int32", 8, 5)])
def test_conv2d_nchw_blocks(dtype, oc_block, width, check_build):
    """Other dtypes, channel blocks and tile widths (3 and 5 do not divide the 9 output columns)."""
    d = te.placeholder((2, 5, 9, 9), dtype=dtype, name="data")
    w = te.placeholder((6, 5, 3, 3), dtype=dtype, name="kernel")
    out = topi.conv2d_nchw(d, w, stride=1, padding=1, oc_block=oc_block)
    check_build(topi.schedule_conv2d_nchw(out, width=width), [d, w, out], lambda a, b: _ref_conv(a, b, 1, 1),
                ranges={"data": (-9, 9), "kernel": (-9, 9)}, rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-3)


def test_conv2d_tile_follows_the_vector_registers():
    from tvmlab.topi.x86.conv2d import tile_width
    assert default_block("float32", "llvm -mcpu=haswell") == 16
    assert tile_width(56, 16, "float32", "llvm -mcpu=haswell") == 6      # 6 x 2 accumulators of 16 registers
    assert tile_width(56, 32, "float32", "llvm -mcpu=skylake-avx512") == 8   # half of 32 registers
    assert tile_width(56, 16, "float32", "llvm -mcpu=skylake-avx512") == 14  # 4 tiles, none guarded
    assert tile_width(7, 16, "float32", "llvm -mcpu=haswell") == 4       # 4 + 3 rather than 6 + 1
    assert tile_width(14, 16, "float32", "llvm -mcpu=haswell") == 5      # 3 tiles, the last one guarded
    assert tile_width(2, 16, "float32", "llvm -mcpu=haswell") == 2
