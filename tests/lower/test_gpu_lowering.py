"""GPU lowering: host/device split, launch dims, shared/local scopes, barriers, checks."""
import pytest

import tvmlab as tvm
from tvmlab import te
from tvmlab.errors import LoweringError
from tvmlab.ir import stmt as S
from tvmlab.ir.expr import IntImm
from tvmlab.ir.functor import post_order_visit
from tvmlab.lower.thread_sync import is_barrier

import gpu_programs as P


def nodes(stmt, cls):
    out = []
    post_order_visit(stmt, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def test_split_vector_add_symbolic():
    s, args, _ = P.vector_add()
    mod = tvm.lower(s, args, target="cuda")
    split = mod.device_split
    assert list(mod.functions) == ["main", "main_kernel0"]
    (k,) = split.kernels
    assert [p.name for p in k.params] == ["A", "B", "C", "n"]
    launch = k.attrs["launch"]
    assert launch["threadIdx.x"].value == 64
    assert "n" in str(launch["blockIdx.x"])            # symbolic grid: an expression of n
    assert not [a for a in nodes(k.body, S.AttrStmt) if a.attr_key == "thread_extent"]
    assert set(k.attrs["thread_vars"]) == {"blockIdx.x", "threadIdx.x"}
    for key in ("AST2", "storage_flatten", "thread_sync", "split_host_device"):
        assert key in mod.history
    (ln,) = split.launches
    assert ln.block()[0].value == 64 and ln.block()[1].value == 1


def test_matmul_shared_local_barriers():
    s, args, _ = P.tiled_matmul()
    (k,) = tvm.lower(s, args, target="cuda").device_split.kernels
    assert [(v.name, c) for v, _, c in k.attrs["shared"]] == [("A.shared", 64), ("B.shared", 64)]
    assert k.attrs["shared_bytes"] == 512
    top = k.body                                   # shared buffers hoisted to the top
    assert isinstance(top, S.Allocate) and top.scope == "shared"
    assert isinstance(top.body, S.Allocate) and top.body.scope == "shared"
    local = [a for a in nodes(k.body, S.Allocate) if a.scope == "local"]
    assert [a.extents[0].value for a in local] == [1]
    loops = [f for f in nodes(k.body, S.For) if f.loop_var.name == "k.outer"]
    body = loops[0].body.seq
    kinds = ["sync" if is_barrier(x) else type(x).__name__ for x in body]
    # loads into shared, barrier, compute, barrier before the next tile overwrites
    assert kinds.index("sync") > 0 and kinds[-1] == "sync"
    assert {k.attrs["launch"][t].value for t in ("threadIdx.x", "threadIdx.y")} == {8}


def _calls(stmt, op):
    from tvmlab.ir.expr import Call
    return [n for n in nodes(stmt, Call) if n.op == op]


def test_cross_thread_reduction_lowering():
    """32 threads per row: warp shuffles on CUDA (no shared memory, no barrier); a shared-memory
    tree, one row of 32 per threadIdx.y, on targets without shuffles."""
    s, args, _ = P.rfactor_max()
    (k,) = tvm.lower(s, args, target="cuda").device_split.kernels
    assert not [v for v, _, _ in k.attrs["shared"] if v.name.startswith("red_buf")]
    assert not [n for n in nodes(k.body, S.Evaluate) if is_barrier(n)]
    assert [c.args[1].value for c in _calls(k.body, "tvm_warp_shuffle_down")] == [16, 8, 4, 2, 1]
    assert len(_calls(k.body, "tvm_warp_shuffle")) == 1              # lane 0's total to every lane
    (k,) = tvm.lower(s, args, target="opengl -compute").device_split.kernels
    red = [v for v, _, _ in k.attrs["shared"] if v.name.startswith("red_buf")]
    assert red and dict((v.name, c) for v, _, c in k.attrs["shared"])[red[0].name] == 4 * 32
    assert len([n for n in nodes(k.body, S.Evaluate) if is_barrier(n)]) >= 5
    assert not _calls(k.body, "tvm_warp_shuffle_down")


def test_vthread_becomes_loop():
    s, args, _ = P.vthread_add()
    (k,) = tvm.lower(s, args, target="cuda").device_split.kernels
    assert "vthread" not in k.attrs["launch"]
    assert not nodes(k.body, S.For)                  # the unroll pass expanded the vthread loop
    assert len(nodes(k.body, S.Store)) == 2          # one store per virtual thread


def test_unbound_loop_is_an_error():
    A = te.placeholder((100,), name="A")
    B = te.compute((100,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(LoweringError, match="not bound to GPU threads"):
        tvm.lower(s, [A, B], target="cuda")
    C = te.compute((100,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(LoweringError, match="stage B"):
        tvm.build(s, [A, C], "cuda")


def test_two_extents_is_an_error():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((64, 64), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[1], factor=32)
    s[C].bind(s[C].op.axis[0], te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], bx)
    s[B].set_scope("shared") if hasattr(s[B], "set_scope") else None
    _, bj = s[B].split(s[B].op.axis[1], factor=16)
    s[B].bind(bj, te.thread_axis("threadIdx.x"))
    with pytest.raises(LoweringError, match="two extents"):
        tvm.lower(s, [A, C], target="cuda")


def test_too_many_threads():
    s, args, _ = P.vector_add(factor=2048)
    with pytest.raises(LoweringError, match="threadIdx.x has extent 2048, more than the device's 1024"):
        tvm.build(s, args, "cuda")
    s, args, _ = P.tiled_matmul(N=64, M=64, K=64, tile=64, kt=64)
    with pytest.raises(LoweringError, match="4096 threads per block"):
        tvm.build(s, args, "cuda")
    s, args, _ = P.vector_add(factor=512)
    with pytest.raises(LoweringError, match="maximum of 256"):
        tvm.build(s, args, "cuda -max_threads_per_block=256")


def test_shared_memory_limit():
    s, args, _ = P.tiled_matmul(N=256, M=256, K=256, tile=32, kt=256, bind_copies=False)
    with pytest.raises(LoweringError, match="shared memory"):
        tvm.build(s, args, "cuda")


def test_lower_from_cpu_module_then_build():
    s, args, _ = P.vector_add()
    mod = tvm.lower(s, args)                          # no target: the CPU pipeline
    f = tvm.build(mod, target="cuda")
    assert "__global__" in f.imported_modules[0].get_source()


def test_cpu_path_unchanged():
    s, args, _ = P.vector_add()
    mod = tvm.lower(s, args)
    assert list(mod.functions) == ["main"] and getattr(mod, "device_split", None) is None
    thread_attrs = [a for a in nodes(mod["main"].body, S.AttrStmt) if a.attr_key == "thread_extent"]
    assert len(thread_attrs) == 2 and any(isinstance(a.value, IntImm) for a in thread_attrs)


def test_barriers_stay_out_of_thread_dependent_guards():
    """With sizes the tiles do not divide, loads of shared tiles are not under the output's
    guard, and no barrier sits inside an `if` (some threads of a block would skip it)."""
    s, args, _ = P.tiled_matmul(N=50, M=45, K=37, tile=8, kt=8)
    mod = tvm.lower(s, args, target="cuda")
    kernel = mod.device_split.kernels[0]
    inside_if = []

    def visit(n):
        if isinstance(n, S.IfThenElse):
            post_order_visit(n.then_case, lambda x: inside_if.append(x) if is_barrier(x) else None)
    post_order_visit(kernel.body, visit)
    assert not inside_if
    assert "__syncthreads" in tvm.build(s, args, "cuda").imported_modules[0].get_source()


def test_reductions_across_threads_it_cannot_lower_are_errors():
    A = te.placeholder((8, 64), name="A")
    k = te.reduce_axis((0, 64), name="k")
    B = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].bind(s[B].op.axis[0], te.thread_axis("threadIdx.x"))
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("blockIdx.x"))
    with pytest.raises(LoweringError, match="blocks cannot combine"):
        tvm.lower(s, [A, B], target="cuda")
