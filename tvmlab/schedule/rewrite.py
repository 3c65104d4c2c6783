"""Helpers for primitives that replace operations: tensor substitution and axis copies."""
from __future__ import annotations

from ..ir.expr import ProducerLoad, Reduce, Var
from ..ir.functor import IRMutator, substitute
from ..ir.tensor import ComputeOp, IterVar


def canonical_tensor(sch, t):
    """The tensor a stage really produces for ``t`` (after cache_write / rfactor)."""
    st = sch.stage_map.get(t.op)
    if st is None:
        return t
    return st.op.outputs[t.value_index] if t.value_index < st.op.num_outputs else t


def replace_tensor(sch, op, old, new):
    """A copy of compute ``op`` that reads ``new`` wherever it read ``old``; same axes."""
    old = canonical_tensor(sch, old)
    from ..ir.extern import ExternOp, ScanOp
    if isinstance(op, ExternOp):      # the same buffers and body, bound to the new input
        inputs = [new if canonical_tensor(sch, t) is old else t for t in op.inputs]
        return ExternOp(op.name, op.tag, op.attrs, inputs, op.input_placeholders, op.output_placeholders, op.body)
    from ..ir.hybrid import HybridOp
    if isinstance(op, HybridOp):      # the script's body reads (and may write) the new tensor
        class H(IRMutator):
            def visit_ProducerLoad(self, ld):
                idx = tuple(self.visit(i) for i in ld.indices)
                return ProducerLoad(new if canonical_tensor(sch, ld.producer) is old else ld.producer, idx)

            def visit_ProducerStore(self, s):
                t = new if canonical_tensor(sch, s.producer) is old else s.producer
                return s.replace(producer=t, value=self.visit(s.value), indices=tuple(self.visit(i) for i in s.indices))
        inputs = [new if canonical_tensor(sch, t) is old else t for t in op.inputs]
        return HybridOp(op.name, op.tag, op.attrs, inputs, op.output_placeholders, H().visit(op.body), op.axis)
    from .tensor_compute import is_tensor_compute, replace_input
    if is_tensor_compute(op):
        return replace_input(sch, op, old, new)
    if isinstance(op, ScanOp):
        from ..errors import ScheduleError
        raise ScheduleError(f"scan {op.name} reads {old.name} as its init or update; cache the tensors its "
                            "update reads instead")

    class R(IRMutator):
        def visit_ProducerLoad(self, ld):
            idx = tuple(self.visit(i) for i in ld.indices)
            t = canonical_tensor(sch, ld.producer)
            return ProducerLoad(new if t is old else ld.producer, idx)

    body = [R().visit(b) for b in op.body]
    return ComputeOp(op.name, op.tag, op.attrs, op.axis, body)


def reads(sch, op, tensor):
    tensor = canonical_tensor(sch, tensor)
    return any(canonical_tensor(sch, t) is tensor for t in op.input_tensors)


def copy_axis(iv, suffix=""):
    """A fresh IterVar with the same domain and type (and a new Var)."""
    return IterVar(iv.dom, Var(iv.var.name + suffix, iv.var.dtype), iv.iter_type, iv.thread_tag)


def rebase_reduce(body, vmap, axis_map):
    """Substitute variables and swap the IterVars of every Reduce via ``axis_map``."""
    class M(IRMutator):
        def visit_Reduce(self, r):
            src = tuple(self.visit(s) for s in r.source)
            cond = self.visit(r.condition)
            return Reduce(r.combiner, src, tuple(axis_map.get(a, a) for a in r.axis), cond,
                          r.value_index, tuple(self.visit(i) for i in r.init))
    return M().visit(substitute(body, vmap))
