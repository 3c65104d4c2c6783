"""CUDA C for tensor cores: ``nvcuda::wmma`` fragment declarations and the four wmma intrinsics.

A fragment buffer (``wmma.*`` scope, see ``lower.tensor_core``) prints as an array of fragment
objects, one per ``rows x cols`` tile: ``nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16,
half, nvcuda::wmma::row_major> A_frag[4];``, and the intrinsics as the ``nvcuda::wmma`` calls on
one element of it.  CUDA's wmma needs ``#include <mma.h>`` and sm_70 or newer.
"""
from __future__ import annotations

from ..errors import BuildError
from ..ir import expr as E

MIN_ARCH = 70
HEADER = "#include <mma.h>\n"
_NS = "nvcuda::wmma::"
_USE = {"wmma.matrix_a": "matrix_a", "wmma.matrix_b": "matrix_b", "wmma.accumulator": "accumulator"}
_ELEM = {"float16": "half", "float32": "float"}


def fragment_decl(frag, name):
    """The declaration of fragment buffer ``name`` (a ``lower.tensor_core.Fragment``)."""
    m, n, k = frag.shape
    parts = [_NS + _USE[frag.scope], str(m), str(n), str(k), _ELEM[frag.dtype]]
    if frag.layout is not None:
        parts.append(_NS + frag.layout)
    return f"{_NS}fragment<{', '.join(parts)}> {name}[{frag.count}];"


def _pointer(cg, e):
    """A pointer argument: ``tvm_access_ptr(type, data, offset, extent, mask)`` as ``&data[offset]``."""
    if isinstance(e, E.Call) and e.op == "tvm_access_ptr":
        dtype, data, offset = e.args[0], e.args[1], e.args[2]
        name = cg._name(data)
        want = cg.ctype(dtype.value if isinstance(dtype, E.StringImm) else "float32")
        have = cg.buf_types.get(data)
        if have is None or have == want:
            return f"(&{name}[{cg.expr(offset)}])"
        return f"((({want}*){name}) + {cg.expr(offset)})"
    return cg.expr(e)


def _frag(cg, var, index):
    return f"{cg._name(var)}[{cg.expr(index)}]"


def wmma_call(cg, e):
    """The CUDA C of wmma intrinsic call ``e`` (checked by ``lower.tensor_core.infer_fragments``)."""
    op, a = e.op, e.args
    if op == "tvm_fill_fragment":
        return f"{_NS}fill_fragment({_frag(cg, a[0], a[4])}, {cg.expr(a[5])})"
    if op == "tvm_mma_sync":
        return (f"{_NS}mma_sync({_frag(cg, a[0], a[1])}, {_frag(cg, a[2], a[3])}, {_frag(cg, a[4], a[5])}, "
                f"{_frag(cg, a[6], a[7])})")
    frag = cg.fragments[a[0]]
    layout = f"{_NS}mem_{a[7].value}"
    if op == "tvm_load_matrix_sync":
        tail = f", {layout}" if frag.scope == "wmma.accumulator" else ""
        return f"{_NS}load_matrix_sync({_frag(cg, a[0], a[4])}, {_pointer(cg, a[5])}, {cg.expr(a[6])}{tail})"
    if op == "tvm_store_matrix_sync":
        return f"{_NS}store_matrix_sync({_pointer(cg, a[5])}, {_frag(cg, a[0], a[4])}, {cg.expr(a[6])}, {layout})"
    raise BuildError(f"the cuda target does not know the wmma intrinsic {op!r}")


def check_arch(arch):
    """Raise BuildError when CUDA architecture sm_<arch> has no tensor cores."""
    if arch < MIN_ARCH:
        raise BuildError(f"the kernels use tensor cores (wmma), which need sm_{MIN_ARCH} or newer; the target "
                         f"asks for sm_{arch} (build for 'cuda -arch=sm_{MIN_ARCH}' or newer)")


__all__ = ["fragment_decl", "wmma_call", "check_arch", "HEADER", "MIN_ARCH"]
