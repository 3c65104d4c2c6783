"""Tensor-core fragments: what each ``wmma.*`` buffer of a kernel holds (TVM's InferFragment).

A tensorized kernel allocates its fragments as plain buffers in the scopes ``wmma.matrix_a``,
``wmma.matrix_b`` and ``wmma.accumulator`` and touches them only through the warp-collective
intrinsics

    tvm_fill_fragment(frag, m, n, k, index, value)
    tvm_load_matrix_sync(frag, m, n, k, index, ptr, stride, layout)
    tvm_mma_sync(d, di, a, ai, b, bi, c, ci)
    tvm_store_matrix_sync(frag, m, n, k, index, ptr, stride, layout)

A CUDA fragment is a typed object, not an array of elements: its shape (m, n, k), element type and
(for the A and B operands) layout are part of its C++ type.  ``infer_fragments`` reads them from the
calls: the shape from fill / load / store, the layout of A and B from their loads, and the shape of
an operand only ever used by ``tvm_mma_sync`` from its partners there.  A buffer of ``count``
fragments is ``count * rows * cols`` elements long; ``index`` picks one.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import LoweringError
from ..ir.expr import Call, IntImm, StringImm, Var
from ..ir.functor import IRVisitor
from ..schedule.scope import WMMA_SCOPES

WMMA_CALLS = ("tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_mma_sync", "tvm_store_matrix_sync")
# (m, n, k) shapes CUDA's wmma has for half inputs
SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
LAYOUTS = ("row_major", "col_major")
_ACC_DTYPES = ("float32", "float16")
_SHAPED = {"tvm_fill_fragment": 0, "tvm_load_matrix_sync": 0, "tvm_store_matrix_sync": 0}


@dataclass
class Fragment:
    """One fragment buffer: scope, (m, n, k), element dtype, layout (A and B), element count."""
    scope: str
    shape: tuple = None
    dtype: str = ""
    layout: str = None
    size: int = 0

    @property
    def rows_cols(self):
        m, n, k = self.shape
        return {"wmma.matrix_a": (m, k), "wmma.matrix_b": (k, n)}.get(self.scope, (m, n))

    @property
    def count(self):
        r, c = self.rows_cols
        return self.size // (r * c)


def _int(e, what, call):
    if not isinstance(e, IntImm):
        raise LoweringError(f"{call.op}: {what} must be a constant int, got {e} in {call}")
    return int(e.value)


class _Collect(IRVisitor):
    def __init__(self):
        super().__init__()
        self.frags = {}
        self.calls = []

    def visit_Allocate(self, s):
        if s.scope in WMMA_SCOPES:
            size = 1
            for x in s.extents:
                size *= _int(x, f"the size of fragment buffer {s.buffer_var.name}", Call("", "allocate", ()))
            self.frags[s.buffer_var] = Fragment(s.scope, dtype=s.dtype, size=size)
        self.generic_visit(s)

    def visit_Call(self, c):
        if c.op in WMMA_CALLS:
            self.calls.append(c)
        self.generic_visit(c)


def _frag(frags, e, call, want=None):
    if not isinstance(e, Var) or e not in frags:
        raise LoweringError(f"{call.op}: {e} is not a fragment buffer (a buffer in scope "
                            f"{' / '.join(WMMA_SCOPES)} allocated in the kernel): {call}")
    f = frags[e]
    if want is not None and f.scope not in want:
        raise LoweringError(f"{call.op}: fragment {e.name} is in scope {f.scope!r}, expected "
                            f"{' or '.join(repr(w) for w in want)}: {call}")
    return f


def _set_shape(f, name, shape, call):
    if shape not in SHAPES:
        raise LoweringError(f"{call.op}: fragment {name} has shape m, n, k = {shape}; tensor cores take "
                            f"{', '.join('x'.join(map(str, s)) for s in SHAPES)} for float16 inputs")
    if f.shape is not None and f.shape != shape:
        raise LoweringError(f"fragment {name} is used with shape {f.shape} and with {shape} ({call})")
    f.shape = shape


def infer_fragments(body):
    """{buffer Var: Fragment} of the fragment buffers allocated in kernel ``body``; raises
    LoweringError where a call is malformed or a fragment's shape or layout is unknown or mixed."""
    col = _Collect()
    col.visit(body)
    frags = col.frags
    if not frags and not col.calls:
        return {}
    for c in col.calls:
        if c.op in _SHAPED:
            want = ({"wmma.accumulator"} if c.op == "tvm_fill_fragment" else
                    {"wmma.accumulator"} if c.op == "tvm_store_matrix_sync" else None)
            n_args = 6 if c.op == "tvm_fill_fragment" else 8
            if len(c.args) != n_args:
                raise LoweringError(f"{c.op} takes {n_args} arguments, got {len(c.args)}: {c}")
            f = _frag(frags, c.args[0], c, want)
            shape = tuple(_int(a, "m, n, k", c) for a in c.args[1:4])
            _set_shape(f, c.args[0].name, shape, c)
            if c.op == "tvm_load_matrix_sync" and f.scope != "wmma.accumulator":
                lay = c.args[7]
                if not isinstance(lay, StringImm) or lay.value not in LAYOUTS:
                    raise LoweringError(f"{c.op}: layout must be 'row_major' or 'col_major', got {lay}: {c}")
                if f.layout is not None and f.layout != lay.value:
                    raise LoweringError(f"fragment {c.args[0].name} is loaded both {f.layout} and {lay.value}")
                f.layout = lay.value
            if c.op == "tvm_store_matrix_sync" or (c.op == "tvm_load_matrix_sync" and f.scope == "wmma.accumulator"):
                lay = c.args[7]
                if not isinstance(lay, StringImm) or lay.value not in LAYOUTS:
                    raise LoweringError(f"{c.op}: layout must be 'row_major' or 'col_major', got {lay}: {c}")
    mmas = [c for c in col.calls if c.op == "tvm_mma_sync"]
    for c in mmas:
        if len(c.args) != 8:
            raise LoweringError(f"tvm_mma_sync takes 8 arguments (d, d_index, a, a_index, b, b_index, c, "
                                f"c_index), got {len(c.args)}: {c}")
    for _ in range(2):       # an operand's shape may come from its partners
        for c in mmas:
            fs = [_frag(frags, c.args[i], c, {s}) for i, s in
                  ((0, "wmma.accumulator"), (2, "wmma.matrix_a"), (4, "wmma.matrix_b"), (6, "wmma.accumulator"))]
            shapes = {f.shape for f in fs if f.shape is not None}
            if len(shapes) > 1:
                raise LoweringError(f"tvm_mma_sync mixes fragments of shapes {sorted(shapes)}: {c}")
            if shapes:
                shape = shapes.pop()
                for f, i in zip(fs, (0, 2, 4, 6)):
                    _set_shape(f, c.args[i].name, shape, c)
    for var, f in frags.items():
        if f.shape is None:
            raise LoweringError(f"fragment {var.name} ({f.scope}) has no known shape: no tvm_fill_fragment, "
                                "tvm_load_matrix_sync or tvm_store_matrix_sync gives it m, n, k")
        if f.scope != "wmma.accumulator":
            if f.dtype != "float16":
                raise LoweringError(f"fragment {var.name} ({f.scope}) holds {f.dtype}; tensor cores take "
                                    "float16 inputs")
            if f.layout is None:
                raise LoweringError(f"fragment {var.name} ({f.scope}) is never loaded, so its layout is "
                                    "unknown; load it with tvm_load_matrix_sync")
        elif f.dtype not in _ACC_DTYPES:
            raise LoweringError(f"accumulator fragment {var.name} holds {f.dtype}; tensor cores accumulate in "
                                f"{' or '.join(_ACC_DTYPES)}")
        r, c = f.rows_cols
        if f.size % (r * c):
            raise LoweringError(f"fragment buffer {var.name} has {f.size} elements, not a whole number of "
                                f"{r}x{c} fragments ({f.scope}, shape {f.shape})")
    return frags


def uses_wmma(kernels):
    """Whether any of ``kernels`` (PrimFuncs) allocates a fragment or calls a wmma intrinsic."""
    for k in kernels:
        col = _Collect()
        col.visit(k.body)
        if col.frags or col.calls:
            return True
    return False


__all__ = ["Fragment", "infer_fragments", "uses_wmma", "WMMA_CALLS", "WMMA_SCOPES", "SHAPES", "LAYOUTS"]
