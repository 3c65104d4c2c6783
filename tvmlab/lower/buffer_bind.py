"""Bind a declared Buffer to a tile of a tensor (``buffer_bind_scope``, from tensorize).

Storage flattening knows where the tensor lives (data pointer, per-dimension
origin and strides).  The buffer's variables are replaced inside the scope:
its data by the tensor's, a Var ``elem_offset`` by the tile's flat offset, Var
strides by the tensor's strides of the tile's last dimensions, Var shape
entries by the tile's extents.  A constant offset or stride must equal the
tile's, and a buffer declared without strides must see a contiguous tile.
"""
from __future__ import annotations

from ..errors import LoweringError
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import Var
from ..ir.functor import substitute


def _row_major(shape):
    out, acc = [], _op.const(1, "int32")
    for d in reversed(shape):
        out.append(acc)
        acc = _op.mul(acc, d)
    return list(reversed(out))


def bind_buffer(buf, tensor, data, mins, strides, tup, body):
    """``body`` with ``buf`` resolved onto the tile ``tup`` (min, extent pairs) of ``tensor``."""
    args = list(tup.args)
    rmin, rext = args[0::2], args[1::2]
    ana = Analyzer()
    where = f"buffer {buf.name} bound to {tensor.name}"
    offset = _op.const(0, "int32")
    for lo, origin, st in zip(rmin, mins, strides):
        offset = _op.add(offset, _op.mul(_op.sub(lo, origin), st))
    offset = ana.simplify(offset)
    skip = len(rmin) - len(buf.shape)
    kept = [ana.simplify(s) for s in strides[skip:]]
    vmap = {buf.data: data}
    if isinstance(buf.elem_offset, Var):
        vmap[buf.elem_offset] = offset
    elif not ana.can_prove_equal(buf.elem_offset, offset):
        raise LoweringError(f"{where}: the tile starts at element {offset} of {tensor.name}, but the buffer's "
                            f"elem_offset is {buf.elem_offset}; declare it with offset_factor=1 (a "
                            "variable offset)")
    if buf.strides:
        for k, (want, got) in enumerate(zip(buf.strides, kept)):
            if isinstance(want, Var):
                vmap.setdefault(want, got)
            elif not ana.can_prove_equal(want, got):
                raise LoweringError(f"{where}: stride {k} is {got} in {tensor.name}, the buffer declares "
                                    f"{want}; declare it as a variable (strides=[te.var('s'), 1])")
    else:
        for k, (want, got) in enumerate(zip(_row_major(buf.shape), kept)):
            if not ana.can_prove_equal(want, got):
                raise LoweringError(f"{where}: the tile of {tensor.name} is not contiguous (stride {k} is "
                                    f"{got}, a compact buffer needs {want}); give the buffer strides")
    for d, e in zip(buf.shape, rext[skip:]):
        if isinstance(d, Var):
            vmap.setdefault(d, e)
    return substitute(body, vmap)
