"""AST1 operations whose body is not one expression per element: extern stages and scans.

``ExternOp`` (``te.extern``) runs a statement written by hand (ir_builder, or a
``call_packed`` into a registered function) over whole buffers: its inputs
and outputs are seen through Buffers (``tir.decl_buffer``).  ``ScanOp`` (``te.scan``)
computes states over a time axis: ``state[0:k] = init`` then
``state[t] = update(state[t-1], ...)`` for each later ``t``.  Both produce
tensors consumers read like any other; the schedule places them
(``schedule/extern_ops.py``, ``schedule/scan.py``).
"""
from __future__ import annotations

import numbers

from ..errors import DSLError
from . import dtype as dt
from . import op as _op
from .buffer import decl_buffer
from .expr import Call, Expr, StringImm, Var
from .function import Buffer
from .stmt import Evaluate, Stmt
from .tensor import IterVar, Operation, Range, Tensor


class _WholeTensorOp(Operation):
    """An operation without per-element axes of its own (``axis`` and ``reduce_axis`` are empty)."""
    __slots__ = ()

    @property
    def axis(self):
        return []

    @property
    def reduce_axis(self):
        return []

    @staticmethod
    def _distinct(tensors):
        out = []
        for t in tensors:
            if t not in out:
                out.append(t)
        return out


class ExternOp(_WholeTensorOp):
    """Outputs written by ``body`` (a Stmt) through ``output_placeholders`` (Buffers)."""
    __slots__ = ("inputs", "input_placeholders", "output_placeholders", "body")
    root_iter_vars = ()

    def __init__(self, name, tag, attrs, inputs, input_placeholders, output_placeholders, body):
        super().__init__(name, tag, attrs)
        self.inputs = tuple(inputs)
        self.input_placeholders = tuple(input_placeholders)
        self.output_placeholders = tuple(output_placeholders)
        self.body = body
        self.outputs = tuple(Tensor(b.shape, b.dtype, self, k) for k, b in enumerate(self.output_placeholders))

    @property
    def input_tensors(self):
        return self._distinct(self.inputs)


class ScanOp(_WholeTensorOp):
    """States over a time axis: ``init`` for the first steps, ``update`` for the rest."""
    __slots__ = ("scan_axis", "init", "update", "state_placeholder", "inputs", "spatial_axis_")

    def __init__(self, name, tag, attrs, scan_axis, init, update, state_placeholder, inputs, spatial_axis):
        super().__init__(name, tag, attrs)
        self.scan_axis = scan_axis
        self.init = tuple(init)
        self.update = tuple(update)
        self.state_placeholder = tuple(state_placeholder)
        self.inputs = tuple(inputs)
        self.spatial_axis_ = tuple(spatial_axis)
        self.outputs = tuple(Tensor(s.shape, s.dtype, self, k) for k, s in enumerate(self.state_placeholder))

    @property
    def input_tensors(self):
        return self._distinct(self.init + self.update)

    @property
    def root_iter_vars(self):
        return (self.scan_axis,) + self.spatial_axis_


# ------------------------------------------------------------ te.extern
def _shape_list(shape, name):
    if isinstance(shape, (numbers.Integral, Expr)):
        return [(shape,)]
    shape = list(shape)
    if not shape or isinstance(shape[0], (numbers.Integral, Expr)):
        return [tuple(shape)]
    return [tuple(s) for s in shape]


def _dims(shape, name):
    out = []
    for k, s in enumerate(shape):
        if isinstance(s, float) and s.is_integer():
            s = int(s)
        try:
            e = _op.convert(s)
        except DSLError:
            e = None
        if e is None or isinstance(s, bool) or not dt.is_int(e.dtype):
            raise DSLError(f"extern {name!r}: shape[{k}] must be an int or an integer expression, got {s!r}")
        out.append(e)
    return tuple(out)


def _same_dims(a, b):
    from .arith import Analyzer
    if len(a) != len(b):
        return False
    ana = Analyzer()
    return all(x is y or ana.can_prove(_op.eq(_op.convert(x), _op.convert(y))) for x, y in zip(a, b))


def extern(shape, inputs, fcompute, name="extern", dtype=None, in_buffers=None, out_buffers=None,
           tag="", attrs=None):
    """Tensors computed by a statement: ``fcompute(ins, outs)`` gets the input and output Buffers and
    returns a Stmt (an ir_builder's ``ib.get()``) or an expression such as ``tir.call_packed(...)``."""
    shapes = [_dims(s, name) for s in _shape_list(shape, name)]
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise DSLError(f"extern {name!r}: input {k} must be a tensor, got {type(t).__name__}: {t!r}")
    if dtype is None:
        if not inputs:
            raise DSLError(f"extern {name!r}: cannot infer the output dtype without inputs; pass dtype=")
        kinds = {t.dtype for t in inputs}
        if len(kinds) != 1:
            raise DSLError(f"extern {name!r}: inputs have dtypes {sorted(kinds)}; pass dtype= for the outputs")
        dtype = inputs[0].dtype
    dtypes = [dtype] * len(shapes) if isinstance(dtype, str) else list(dtype)
    if len(dtypes) != len(shapes):
        raise DSLError(f"extern {name!r}: {len(shapes)} output shapes but {len(dtypes)} dtypes")
    ins = _buffers(in_buffers, [(t.shape, t.dtype, t.op.name) for t in inputs], name, "in_buffers", "input")
    outs = _buffers(out_buffers, [(s, d, name) for s, d in zip(shapes, dtypes)], name, "out_buffers", "output")
    body = fcompute(ins, outs)
    if isinstance(body, Expr):
        body = Evaluate(body)
    if not isinstance(body, Stmt):
        raise DSLError(f"extern {name!r}: fcompute must return a statement (ib.get()) or an expression such as "
                       f"tir.call_packed(...), got {type(body).__name__}: {body!r}")
    op = ExternOp(name, tag, attrs, inputs, ins, outs, body)
    return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)


def _buffers(given, specs, name, what, role):
    if given is None:
        return [decl_buffer(shape, d, n) for shape, d, n in specs]
    given = list(given) if isinstance(given, (list, tuple)) else [given]
    if len(given) != len(specs):
        raise DSLError(f"extern {name!r}: {what} has {len(given)} buffers for {len(specs)} {role}s")
    for k, (b, (shape, d, _)) in enumerate(zip(given, specs)):
        if not isinstance(b, Buffer):
            raise DSLError(f"extern {name!r}: {what}[{k}] must be a buffer (tir.decl_buffer), got {b!r}")
        free = [x if not (isinstance(x, Var) and not _same_dims((x,), (y,))) else y      # a Var dim binds
                for x, y in zip(b.shape, shape)] if len(b.shape) == len(shape) else b.shape
        if b.dtype != dt.canonical(d) or not _same_dims(free, shape):
            raise DSLError(f"extern {name!r}: {what}[{k}] is {b.dtype}{list(b.shape)} but the {role} is "
                           f"{d}{list(shape)}")
    return given


# ------------------------------------------------------------ call_packed
def call_packed(*args):
    """Call the function registered under ``args[0]`` (``tvm.register_func``) from generated code.

    Buffers arrive in the function as NDArrays viewing their memory (no copy),
    expressions as Python numbers, strings as str.  A packed function that
    raises makes the compiled function raise ``PackedFuncError`` afterwards.
    """
    if not args or not isinstance(args[0], str) or not args[0]:
        raise DSLError(f"call_packed needs the registered function's name (a string) first, got "
                       f"{args[:1]!r}")
    out = [StringImm(args[0])]
    for k, a in enumerate(args[1:], 1):
        out.append(_packed_arg(a, args[0], k))
    return Call("int32", "tvm_call_packed", tuple(out))


def _packed_arg(a, fname, k):
    if isinstance(a, Buffer):
        strides = a.strides if a.strides else _row_major(a.shape)
        return Call("handle", "tvm_stack_make_array",
                    (a.data, StringImm(a.dtype), _op.convert(a.elem_offset)) + tuple(_op.convert(s) for s in a.shape)
                    + tuple(_op.convert(s) for s in strides))
    if isinstance(a, Tensor):
        raise DSLError(f"call_packed {fname!r}: argument {k} is tensor {a.name}; pass its buffer "
                       "(the ins/outs of te.extern's fcompute)")
    if isinstance(a, str):
        return StringImm(a)
    if hasattr(a, "asobject") and not isinstance(a, Expr):
        a = a.asobject()                 # ir_builder's pointer (ib.allocate / ib.buffer_ptr): its handle
    try:
        e = _op.convert(a)
    except DSLError:
        raise DSLError(f"call_packed {fname!r}: argument {k} must be a buffer, an expression, a number or a "
                       f"string, got {type(a).__name__}: {a!r}") from None
    if dt.lanes(e.dtype) != 1:
        raise DSLError(f"call_packed {fname!r}: argument {k} has type {e.dtype}; pass scalars or buffers")
    return e


def _row_major(shape):
    out, acc = [], _op.const(1)
    for d in reversed(shape):
        out.append(acc)
        acc = _op.mul(acc, d)
    return tuple(reversed(out))


# ------------------------------------------------------------ te.scan
def scan(init, update, state_placeholder, inputs=None, name="scan", tag="", attrs=None):
    """``state[t] = update`` for ``t`` after the ``init`` steps; returns the state tensor(s).

    ``init`` covers the first ``init.shape[0]`` steps, ``update`` (which reads
    ``state_placeholder[t - 1, ...]``) the rest up to ``update.shape[0]``.
    """
    single = isinstance(init, Tensor)
    init = [init] if isinstance(init, Tensor) else list(init)
    update = [update] if isinstance(update, Tensor) else list(update)
    states = [state_placeholder] if isinstance(state_placeholder, Tensor) else list(state_placeholder)
    inputs = [] if inputs is None else ([inputs] if isinstance(inputs, Tensor) else list(inputs))
    if not (len(init) == len(update) == len(states)) or not init:
        raise DSLError(f"scan {name!r}: init, update and state_placeholder must have one tensor per state; got "
                       f"{len(init)}, {len(update)} and {len(states)}")
    for k, (i, u, s) in enumerate(zip(init, update, states)):
        for what, t in (("init", i), ("update", u), ("state_placeholder", s)):
            if not isinstance(t, Tensor):
                raise DSLError(f"scan {name!r}: {what}[{k}] must be a tensor, got {t!r}")
        if s.ndim < 1:
            raise DSLError(f"scan {name!r}: state {k} ({s.name}) needs a time dimension first")
        if not _same_dims(u.shape, s.shape):
            raise DSLError(f"scan {name!r}: update[{k}] ({u.name}) has shape {list(u.shape)}, expected the state's "
                           f"{list(s.shape)}")
        if i.ndim != s.ndim or not _same_dims(i.shape[1:], s.shape[1:]):
            raise DSLError(f"scan {name!r}: init[{k}] ({i.name}) has shape {list(i.shape)}, expected "
                           f"[k, {', '.join(str(x) for x in s.shape[1:])}] like the state {list(s.shape)}")
        if not (i.dtype == u.dtype == s.dtype):
            raise DSLError(f"scan {name!r}: state {k} has dtypes init {i.dtype}, update {u.dtype}, placeholder "
                           f"{s.dtype}; they must agree")
        if not _same_dims(i.shape[:1], init[0].shape[:1]) or not _same_dims(u.shape[:1], update[0].shape[:1]):
            raise DSLError(f"scan {name!r}: every state must have the same number of init and total steps")
    _check_reads_past(update, states, name)
    t0 = _op.convert(init[0].shape[0])
    total = _op.convert(update[0].shape[0])
    axis = IterVar(Range(t0, _op.sub(total, t0)), Var(f"{name}.idx", t0.dtype), "ordered")
    spatial = []
    for k, s in enumerate(states):
        for d in range(1, s.ndim):
            ext = _op.convert(s.shape[d])
            spatial.append(IterVar(Range(_op.const(0, ext.dtype), ext), Var(f"{name}.s{k}.i{d}", ext.dtype)))
    op = ScanOp(name, tag, attrs, axis, init, update, states, inputs, spatial)
    return op.outputs[0] if single and len(op.outputs) == 1 else list(op.outputs)


def _check_reads_past(update, states, name):
    """Refuse a scan body that reads a state at its own time step or later (not computed yet)."""
    from .arith import Analyzer
    from .expr import IntImm, ProducerLoad
    from .functor import post_order_visit
    from .tensor import ComputeOp
    ana, seen, todo = Analyzer(), set(), [u.op for u in update]
    while todo:
        op = todo.pop()
        if op in seen or not isinstance(op, ComputeOp):
            continue
        seen.add(op)
        todo += [t.op for t in op.input_tensors if t not in states]
        t = op.axis[0].var if op.axis else None

        def check(x):
            if isinstance(x, ProducerLoad) and x.producer in states and t is not None:
                d = ana.simplify(_op.sub(x.indices[0], t))
                if isinstance(d, IntImm) and d.value >= 0:
                    raise DSLError(f"scan {name!r}: stage {op.name} reads state {x.producer.name} at step "
                                   f"{t.name}{' + ' + str(d.value) if d.value else ''}, which is not computed yet; "
                                   f"read {x.producer.name}[{t.name} - 1, ...] (or earlier)")
        for b in op.body:
            post_order_visit(b, check)


# ------------------------------------------------------------ save_json / load_json
def _write_extern(op, w):
    return w.number(op, {"name": op.name, "tag": op.tag, "attrs": w.w(op.attrs), "inputs": w.w(op.inputs),
                         "ins": w.w(op.input_placeholders), "outs": w.w(op.output_placeholders),
                         "body": w.w(op.body)})


def _read_extern(d, r):
    return r.keep(d, ExternOp(d["name"], d["tag"], r.r(d["attrs"]), r.r(d["inputs"]), r.r(d["ins"]),
                              r.r(d["outs"]), r.r(d["body"])))


def _write_scan(op, w):
    return w.number(op, {"name": op.name, "tag": op.tag, "attrs": w.w(op.attrs), "axis": w.w(op.scan_axis),
                         "init": w.w(op.init), "update": w.w(op.update), "states": w.w(op.state_placeholder),
                         "inputs": w.w(op.inputs), "spatial": w.w(op.spatial_axis_)})


def _read_scan(d, r):
    return r.keep(d, ScanOp(d["name"], d["tag"], r.r(d["attrs"]), r.r(d["axis"]), r.r(d["init"]),
                            r.r(d["update"]), r.r(d["states"]), r.r(d["inputs"]), r.r(d["spatial"])))


def _register_json():
    from .serialize import register_type
    register_type(ExternOp, "ExternOp", _write_extern, _read_extern)
    register_type(ScanOp, "ScanOp", _write_scan, _read_scan)


_register_json()

__all__ = ["ExternOp", "ScanOp", "extern", "scan", "call_packed"]
