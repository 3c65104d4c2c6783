"""AST1 operation of a hybrid script (``te.hybrid.script``): a loop nest written in Python.

The body is AST2 as the script wrote it (``For`` / ``IfThenElse`` /
``ProducerStore`` on tensors).  It writes its outputs through
``output_placeholders`` (the tensors ``output_tensor`` made, named as in the
script), which ScheduleOps replaces by the operation's own outputs, and reads
its inputs in place.  Every loop of the body is an axis of the operation
(``op.axis``, outermost first), so ``s[C].split`` / ``reorder`` / ``bind``
apply to them (``schedule/hybrid_ops.py``).
"""
from __future__ import annotations

from .expr import ProducerLoad
from .functor import post_order_visit
from .stmt import For, IfThenElse, ProducerStore, SeqStmt, Stmt
from .tensor import IterVar, Operation, Range, Tensor


def loop_axes(body):
    """One data-parallel IterVar per ``For`` of ``body``, in order of appearance (outer first)."""
    loops = []
    _pre_order(body, loops)
    return tuple(IterVar(Range(f.min, f.extent), f.loop_var, IterVar.DATA_PAR) for f in loops)


def _pre_order(s, out):
    if isinstance(s, For):
        out.append(s)
    if isinstance(s, SeqStmt):
        for x in s.seq:
            _pre_order(x, out)
    elif isinstance(s, IfThenElse):
        _pre_order(s.then_case, out)
        _pre_order(s.else_case, out)
    elif isinstance(s, Stmt) and hasattr(s, "body"):
        _pre_order(s.body, out)


class HybridOp(Operation):
    """Outputs written by a script's ``body``; ``axis`` are its loops (TVM's HybridOp)."""
    __slots__ = ("inputs", "output_placeholders", "body", "axis")

    def __init__(self, name, tag, attrs, inputs, output_placeholders, body, axis=None):
        super().__init__(name, tag or "HybridOp", attrs)
        self.inputs = tuple(inputs)
        self.output_placeholders = tuple(output_placeholders)
        self.body = body
        self.axis = loop_axes(body) if axis is None else tuple(axis)     # a copy reading a cache keeps its axes
        self.outputs = tuple(Tensor(t.shape, t.dtype, self, k) for k, t in enumerate(self.output_placeholders))

    @property
    def reduce_axis(self):
        return []

    @property
    def root_iter_vars(self):
        return self.axis

    @property
    def is_reduction(self):
        return False

    @property
    def input_tensors(self):
        """The inputs the body reads or writes (an input it never touches is not read)."""
        used = set()

        def visit(x):
            if isinstance(x, (ProducerLoad, ProducerStore)):
                used.add(x.producer)
        post_order_visit(self.body, visit)
        out = []
        for t in self.inputs:
            if t in used and t not in out:
                out.append(t)
        return out

    def __repr__(self):
        return f"hybrid({self.name})"


# ------------------------------------------------------------ save_json / load_json
def _write(op, w):
    return w.number(op, {"name": op.name, "tag": op.tag, "attrs": w.w(op.attrs), "inputs": w.w(op.inputs),
                         "outs": w.w(op.output_placeholders), "body": w.w(op.body)})


def _read(d, r):
    return r.keep(d, HybridOp(d["name"], d["tag"], r.r(d["attrs"]), r.r(d["inputs"]), r.r(d["outs"]),
                              r.r(d["body"])))


def _register_json():
    from .serialize import register_type
    register_type(HybridOp, "HybridOp", _write, _read)


_register_json()

__all__ = ["HybridOp", "loop_axes"]
