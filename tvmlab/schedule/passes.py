"""Message passing over IterVar relations (TVM's message_passing.cc).

``pass_down_domain`` derives leaf ranges from root ranges; ``pass_up_index``
expresses each root index in terms of the leaf loop variables.
"""
from __future__ import annotations

from ..ir import op as _op
from ..ir.expr import IntImm
from ..ir.tensor import Range
from .relations import Fuse, Rebase, Singleton, Split


def ceildiv(a, b):
    return _op.floordiv(_op.add(a, _op.sub(b, 1)), b)


def _zero():
    return IntImm("int32", 0)


def _feeds_thread(stage, iv):
    """Whether ``iv`` or an axis derived from it is bound to a (virtual) thread."""
    derived = {iv}
    for rel in stage.relations:
        if isinstance(rel, Split) and rel.parent in derived:
            derived |= {rel.outer, rel.inner}
        elif isinstance(rel, Fuse) and (rel.outer in derived or rel.inner in derived):
            derived.add(rel.fused)
        elif isinstance(rel, Rebase) and rel.parent in derived:
            derived.add(rel.rebased)
    return any(getattr(stage.iter_var_attrs.get(d), "bind_thread", None) is not None
               for d in derived)


def _cutoff(stage, iv, part, ext, tighten):
    """A split part larger than a constant parent extent shrinks to it (no idle iterations),
    as in TVM: not while scheduling (``tighten`` False), and not when it feeds a thread, whose
    extent a split may set on purpose to match the kernel's other stages."""
    if not tighten or _feeds_thread(stage, iv):
        return part
    if isinstance(part, IntImm) and isinstance(ext, IntImm) and part.value > ext.value:
        return ext
    return part


def pass_down_domain(stage, dom_map, simplify, tighten=True):
    """Fill ``dom_map`` for every non-root axis of ``stage`` (roots must be present); with
    ``tighten``, a split part larger than its constant parent shrinks to the parent's extent."""
    for rel in stage.relations:
        if isinstance(rel, Split):
            ext = dom_map[rel.parent].extent
            if rel.factor is not None:
                dom_map[rel.inner] = Range(_zero(), _cutoff(stage, rel.inner, rel.factor, ext, tighten))
                dom_map[rel.outer] = Range(_zero(), simplify(ceildiv(ext, rel.factor)))
            else:
                dom_map[rel.outer] = Range(_zero(), _cutoff(stage, rel.outer, rel.nparts, ext, tighten))
                dom_map[rel.inner] = Range(_zero(), simplify(ceildiv(ext, rel.nparts)))
        elif isinstance(rel, Fuse):
            dom_map[rel.fused] = Range(_zero(), simplify(_op.mul(dom_map[rel.outer].extent,
                                                                  dom_map[rel.inner].extent)))
        elif isinstance(rel, Rebase):
            dom_map[rel.rebased] = Range(_zero(), dom_map[rel.parent].extent)
        elif isinstance(rel, Singleton):
            dom_map[rel.iter] = Range(_zero(), IntImm("int32", 1))


def pass_up_index(stage, dom_map, leaf_values):
    """Root index expressions from leaf values: ``{IterVar: Expr}`` for every axis."""
    value = dict(leaf_values)
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            factor = dom_map[rel.inner].extent
            v = _op.add(_op.mul(value[rel.outer], factor), value[rel.inner])
            value[rel.parent] = _op.add(v, dom_map[rel.parent].min)
        elif isinstance(rel, Fuse):
            f = value[rel.fused]
            ext = dom_map[rel.inner].extent
            if isinstance(ext, IntImm) and ext.value == 0:      # an empty loop: its body never runs
                value[rel.outer], value[rel.inner] = dom_map[rel.outer].min, dom_map[rel.inner].min
                continue
            value[rel.outer] = _op.add(_op.floordiv(f, ext), dom_map[rel.outer].min)
            value[rel.inner] = _op.add(_op.floormod(f, ext), dom_map[rel.inner].min)
        elif isinstance(rel, Rebase):
            value[rel.parent] = _op.add(value[rel.rebased], dom_map[rel.parent].min)
        elif isinstance(rel, Singleton):
            pass
    return value


def leaf_values(stage):
    """Each leaf axis stands for its own loop variable."""
    return {iv: iv.var for iv in stage.leaf_iter_vars}
