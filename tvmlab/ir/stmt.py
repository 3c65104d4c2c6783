"""Statement nodes: AST2 (loop nests over tensors) and AST3 (flat memory).

AST2 uses ``ProducerRealize`` / ``ProducerStore`` / ``ProducerLoad`` on tensors;
storage flattening turns them into ``Allocate`` / ``Store`` / ``Load`` on buffer
variables.  ``For.kind`` is one of ``FOR_KINDS``.
"""
from __future__ import annotations

from typing import Any

from .node import Node, node

FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")


class ForKind:
    """TVM's ``tir.ForKind`` names for ``For.kind`` (``loop.kind == ForKind.UNROLLED``)."""
    SERIAL, PARALLEL, VECTORIZED, UNROLLED, THREAD_BINDING = FOR_KINDS


class Stmt(Node):
    __slots__ = ()


@node
class LetStmt(Stmt):
    var: Any
    value: Any
    body: Stmt


@node
class AttrStmt(Stmt):
    """An annotation on ``body``: "thread_extent", "pragma_*", "storage_scope", ..."""
    node: Any
    attr_key: str
    value: Any
    body: Stmt


@node
class AssertStmt(Stmt):
    condition: Any
    message: str
    body: Stmt


@node
class For(Stmt):
    loop_var: Any
    min: Any
    extent: Any
    kind: str
    body: Stmt
    annotations: tuple = ()   # ((key, value), ...): pragmas and unroll hints

    def __post_init__(self):
        # TVM code writes For(i, 0, 4, ...): plain ints become int32 constants like any bound.
        for f in ("min", "extent"):
            v = getattr(self, f)
            if isinstance(v, int) and not isinstance(v, bool):
                from .expr import IntImm
                object.__setattr__(self, f, IntImm("int32", v))

    def annotation(self, key, default=None):
        for k, v in self.annotations:
            if k == key:
                return v
        return default


@node
class Store(Stmt):
    """AST3: ``buffer_var[index] = value`` (vector store when index is a Ramp)."""
    buffer_var: Any
    value: Any
    index: Any
    predicate: Any = None

    @property
    def indices(self):
        """TVM's ``BufferStore.indices`` spelling: the flat index, as a one-element tuple."""
        return (self.index,)


@node
class ProducerStore(Stmt):
    """AST2: ``tensor[indices] = value``."""
    producer: Any
    value: Any
    indices: tuple


@node
class ProducerRealize(Stmt):
    """AST2: storage for ``producer`` over ``bounds`` (Ranges) lives inside ``body``."""
    producer: Any
    bounds: tuple
    condition: Any
    body: Stmt
    storage_scope: str = ""


@node
class Prefetch(Stmt):
    """A hint to bring ``buffer``'s region ``bounds`` (Ranges, one per dimension) into the cache.

    StorageFlatten turns it into loops of ``prefetch`` calls, one per cache line of the region.
    """
    buffer: Any
    bounds: tuple

    def __post_init__(self):
        bounds = tuple(self.bounds)
        if len(bounds) != len(self.buffer.shape):
            from ..errors import DSLError
            raise DSLError(f"Prefetch of buffer {self.buffer.name}: {len(bounds)} ranges for "
                           f"{len(self.buffer.shape)} dimensions")
        object.__setattr__(self, "bounds", bounds)


@node
class Allocate(Stmt):
    """AST3: a buffer of ``dtype`` with ``extents`` on ``buffer_var`` inside ``body``."""
    buffer_var: Any
    dtype: str
    extents: tuple
    condition: Any
    body: Stmt
    scope: str = "global"

    def __post_init__(self):
        # the pointer's type says where it points (TVM keeps the scope on the pointer's type)
        from .expr import PointerType, PrimType, Var
        v = self.buffer_var
        if isinstance(v, Var):
            ann = v.type_annotation
            if ann is None or ann.storage_scope != self.scope or ann.element_type.dtype != self.dtype:
                object.__setattr__(v, "type_annotation", PointerType(PrimType(self.dtype), self.scope))


@node
class SeqStmt(Stmt):
    seq: tuple

    def __len__(self):
        return len(self.seq)

    def __getitem__(self, i):
        return self.seq[i]


@node
class IfThenElse(Stmt):
    condition: Any
    then_case: Stmt
    else_case: Any = None


@node
class Evaluate(Stmt):
    value: Any


@node
class While(Stmt):
    """Run ``body`` while ``condition`` holds (re-evaluated before each iteration; ir_builder's while_loop)."""
    condition: Any
    body: Stmt


def seq(*stmts):
    """Flatten nested sequences and drop no-ops; returns one Stmt."""
    out = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, (list, tuple)):
            s = seq(*s)
        if isinstance(s, SeqStmt):
            out.extend(s.seq)
        elif not is_no_op(s):
            out.append(s)
    if not out:
        return Evaluate(_zero())
    return out[0] if len(out) == 1 else SeqStmt(tuple(out))


def _zero():
    from .expr import IntImm
    return IntImm("int32", 0)


def is_no_op(s):
    from .expr import IntImm
    return isinstance(s, Evaluate) and isinstance(s.value, IntImm)


# AttrStmt key of a reduction across the threads of a block, from ScheduleOps to
# lower_thread_allreduce: node is an AllreduceInfo, body stores each thread's part of each output
# into a one-element "local" buffer, where the pass leaves the block's total.
THREAD_ALLREDUCE = "thread_allreduce"


class AllreduceInfo:
    """What a ``thread_allreduce`` AttrStmt reduces with (``combiner``, a CommReducer) and across
    (``threads``, the IterVars of the threadIdx.* axes whose threads form one group).  Not an IR
    node: passes leave it alone."""
    __slots__ = ("combiner", "threads", "name")

    def __init__(self, combiner, threads, name):
        self.combiner, self.threads, self.name = combiner, tuple(threads), name

    def __repr__(self):
        return f"AllreduceInfo({self.name} across {', '.join(t.thread_tag for t in self.threads)})"
