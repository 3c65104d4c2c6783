"""IRBuilder: write a statement imperatively, as TVM's ``tvm.tir.ir_builder``.

    ib = tvm.tir.ir_builder.create()
    A = ib.buffer_ptr(ins[0]); B = ib.buffer_ptr(outs[0])
    with ib.for_range(0, n, name="i") as i:
        with ib.if_scope(A[i] > 0):
            B[i] = A[i]
        with ib.else_scope():
            B[i] = 0.0
    stmt = ib.get()

The statements are flat (``Load`` / ``Store`` on buffer pointers at flat
indices), which is what an extern stage's body is: storage flattening only
points the buffers at the tensors' memory.
"""
from __future__ import annotations

from ..errors import DSLError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.buffer import flat_index
from ..ir.expr import Expr, Load, Ramp, StringImm, Var
from ..ir.function import Buffer
from ..ir.stmt import Allocate, AttrStmt, Evaluate, For, IfThenElse, LetStmt, Stmt, Store, While, seq

_KINDS = {"serial": "serial", "parallel": "parallel", "vectorize": "vectorized", "vectorized": "vectorized",
          "unroll": "unrolled", "unrolled": "unrolled"}


class BufferVar:
    """A pointer to typed memory: ``ptr[i]`` loads, ``ptr[i] = v`` stores (through the builder)."""

    def __init__(self, builder, buffer_var, dtype, buffer=None):
        self._builder = builder
        self._buffer_var = buffer_var
        self._dtype = dtype
        self._buffer = buffer

    @property
    def dtype(self):
        return self._dtype

    def asobject(self):
        return self._buffer_var

    def _index(self, index):
        if isinstance(index, tuple):
            if self._buffer is None:
                raise DSLError(f"{self._buffer_var.name}: a pointer from ib.pointer takes one flat index, "
                               f"got {len(index)}")
            if len(index) != len(self._buffer.shape):
                raise DSLError(f"buffer {self._buffer.name} has {len(self._buffer.shape)} dimensions, indexed "
                               f"with {len(index)} indices")
            return flat_index(self._buffer, index)
        e = _op.convert(index)
        if not dt.is_int(e.dtype) or dt.lanes(e.dtype) != 1:
            raise DSLError(f"{self._buffer_var.name}[...]: the index must be a scalar integer, got {e} ({e.dtype})")
        return flat_index(self._buffer, (e,)) if self._buffer is not None else e

    def _address(self, index):
        """The flat index of element ``index``; memory is counted in scalars, so element i of a
        ``float32x4`` pointer is the 4 lanes ``Ramp(i * 4, 1, 4)``."""
        i = self._index(index)
        lanes = dt.lanes(self._dtype)
        if lanes == 1:
            return i
        return Ramp(_op.mul(i, lanes), _op.const(1, i.dtype), lanes)

    def __getitem__(self, index):
        return Load(self._dtype, self._buffer_var, self._address(index))

    def __setitem__(self, index, value):
        value = _op.convert(value)
        if value.dtype != self._dtype:
            if dt.lanes(value.dtype) != 1:
                raise DSLError(f"{self._buffer_var.name}[...] = value: value has type {value.dtype}, expected "
                               f"{self._dtype}")
            value = _op.cast(self._dtype, value)
        self._builder.emit(Store(self._buffer_var, value, self._address(index)))

    def vload(self, index, lanes):
        """``lanes`` consecutive elements from flat ``index``."""
        i = self._index(index)
        return Load(dt.with_lanes(self._dtype, lanes), self._buffer_var, Ramp(i, _op.const(1, i.dtype), lanes))

    def __repr__(self):
        return f"BufferVar({self._buffer_var.name}, {self._dtype})"


class WithScope:
    """A context whose exit runs a callback (and whose ``as`` value is ``enter_value``)."""

    def __init__(self, enter_value, exit_cb):
        self._enter_value = enter_value
        self._exit_cb = exit_cb

    def __enter__(self):
        return self._enter_value

    def __exit__(self, ptype, value, trace):
        if ptype is None:
            self._exit_cb()


class IRBuilder:
    """Builds a Stmt; ``get()`` returns it."""

    def __init__(self):
        self._seq_stack = [[]]
        self.nidx = 0

    # ------------------------------------------------------------ sequences
    def _pop_seq(self):
        items = self._seq_stack.pop()
        if not items or callable(items[-1]):
            items.append(Evaluate(_op.const(0)))
        body = items[-1]
        for s in reversed(items[:-1]):
            body = s(body) if callable(s) else seq(s, body)
        return body

    def emit(self, stmt):
        """Append ``stmt`` (a Stmt, an expression to evaluate, or a function wrapping what follows)."""
        if isinstance(stmt, Expr):
            stmt = Evaluate(stmt)
        if not (isinstance(stmt, Stmt) or callable(stmt)):
            raise DSLError(f"ib.emit expects a statement, an expression or a function of the body, got "
                           f"{type(stmt).__name__}: {stmt!r}")
        self._seq_stack[-1].append(stmt)

    def scope_attr(self, node, attr_key, value):
        """``AttrStmt(node, attr_key, value)`` around the rest of the current scope."""
        if isinstance(node, str):
            node = StringImm(node)
        value = StringImm(value) if isinstance(value, str) else _op.convert(value)
        self.emit(lambda body: AttrStmt(node, attr_key, value, body))

    def new_scope(self):
        """A ``with`` block whose statements form one unit."""
        self._seq_stack.append([])
        return WithScope(None, lambda: self.emit(self._pop_seq()))

    def let(self, var_name, value):
        """Bind a new variable to ``value`` for the rest of the scope; returns the Var."""
        value = _op.convert(value)
        v = Var(var_name, value.dtype) if isinstance(var_name, str) else var_name
        self.emit(lambda body: LetStmt(v, value, body))
        return v

    # ------------------------------------------------------------ control flow
    def for_range(self, begin, end, name="i", dtype=None, kind="serial"):
        """``with ib.for_range(0, n) as i:`` a loop of ``kind`` (serial, parallel, vectorize, unroll);
        the loop variable is int64 when ``begin`` or ``end`` is, else int32 (or ``dtype``)."""
        if kind not in _KINDS:
            raise DSLError(f"for_range: unknown kind {kind!r}; expected serial, parallel, vectorize or unroll")
        if name == "i":
            name = chr(ord("i") + self.nidx) if self.nidx < 3 else f"i_{self.nidx - 3}"
            self.nidx += 1
        begin, end = _op.convert(begin), _op.convert(end)
        for what, e in (("begin", begin), ("end", end)):
            if not dt.is_int(e.dtype):
                raise DSLError(f"for_range {name}: {what} must be an integer, got {e} ({e.dtype})")
        if dtype is None:
            dtype = "int64" if "int64" in (begin.dtype, end.dtype) else "int32"
        loop_var = Var(name, dt.canonical(dtype))
        begin, end = _op.cast(loop_var.dtype, begin), _op.cast(loop_var.dtype, end)
        extent = end if _is_zero(begin) else _op.sub(end, begin)
        self._seq_stack.append([])

        def exit_cb():
            body = self._pop_seq()
            self.emit(For(loop_var, begin, extent, _KINDS[kind], body))
        return WithScope(loop_var, exit_cb)

    def while_loop(self, condition):
        """``with ib.while_loop(cond):`` repeat the block while ``cond`` (re-read each time) holds."""
        cond = _op.convert(condition)
        if not dt.is_bool(cond.dtype) or dt.lanes(cond.dtype) != 1:
            raise DSLError(f"while_loop: the condition must be a scalar bool, got {cond} ({cond.dtype})")
        self._seq_stack.append([])
        return WithScope(None, lambda: self.emit(While(cond, self._pop_seq())))

    def if_scope(self, cond):
        """``with ib.if_scope(cond):`` statements run when ``cond`` holds."""
        cond = _op.convert(cond)
        if not dt.is_bool(cond.dtype) or dt.lanes(cond.dtype) != 1:
            raise DSLError(f"if_scope: the condition must be a scalar bool, got {cond} ({cond.dtype})")
        self._seq_stack.append([])
        return WithScope(None, lambda: self.emit(IfThenElse(cond, self._pop_seq())))

    def else_scope(self):
        """``with ib.else_scope():`` right after an if_scope block."""
        seq = self._seq_stack[-1]
        if not seq or not isinstance(seq[-1], IfThenElse) or seq[-1].else_case is not None:
            raise DSLError("else_scope must directly follow an if_scope block")
        prev = seq.pop()
        self._seq_stack.append([])

        def exit_cb():
            self.emit(IfThenElse(prev.condition, prev.then_case, self._pop_seq()))
        return WithScope(None, exit_cb)

    # ------------------------------------------------------------ memory
    def allocate(self, dtype, shape, name="buf", axis_separators=None, scope=""):
        """Scratch memory for the rest of the scope; returns a BufferVar indexed with one index per
        dimension of ``shape`` (``A[i, j]``) or with one flat index (``A[i * m + j]``)."""
        if axis_separators:
            raise DSLError("allocate: axis_separators are not supported")
        try:
            dtype = dt.canonical(dtype)
        except Exception:
            raise DSLError(f"allocate {name!r}: unknown dtype {dtype!r}") from None
        shape = tuple(_op.convert(s) for s in (shape if isinstance(shape, (list, tuple)) else (shape,)))
        for k, s in enumerate(shape):
            if not dt.is_int(s.dtype) or dt.lanes(s.dtype) != 1:
                raise DSLError(f"allocate {name!r}: shape[{k}] must be a scalar integer, got {s} ({s.dtype})")
        count = _op.const(1)
        for s in shape:
            count = _op.mul(count, s)
        v = Var(name, "handle")
        self.emit(lambda body: Allocate(v, dtype, (count,), _op.const(True), body, scope or "global"))
        return BufferVar(self, v, dtype, Buffer(name, shape, dtype, v, None, scope or "global"))

    def pointer(self, content_type, name="ptr", scope=""):
        """A fresh pointer Var of ``content_type`` elements."""
        return BufferVar(self, Var(name, "handle"), dt.canonical(content_type))

    def buffer_ptr(self, buf, shape=None):
        """Index ``buf`` (a tir Buffer): ``ptr[i]`` (flat) or ``ptr[i, j]`` (one index per dimension);
        ``shape`` views its memory with another (row-major) shape."""
        if not isinstance(buf, Buffer):
            raise DSLError(f"buffer_ptr expects a buffer (e.g. ins[0] in te.extern), got {type(buf).__name__}: "
                           f"{buf!r}")
        if shape is not None:
            shape = shape if isinstance(shape, (list, tuple)) else (shape,)
            buf = Buffer(buf.name, tuple(_op.convert(s) for s in shape), buf.dtype, buf.data, None, buf.scope,
                         buf.elem_offset)
        return BufferVar(self, buf.data, buf.dtype, buf)

    def likely(self, expr):
        return _op.likely(expr)

    def get(self):
        """The statement built so far."""
        if len(self._seq_stack) != 1:
            raise DSLError("ib.get() inside an open with-block")
        seq = self._pop_seq()
        self._seq_stack.append([])
        return seq


def _is_zero(e):
    from ..ir.expr import IntImm
    return isinstance(e, IntImm) and e.value == 0


def create():
    """A new IRBuilder."""
    return IRBuilder()


__all__ = ["IRBuilder", "BufferVar", "create"]
