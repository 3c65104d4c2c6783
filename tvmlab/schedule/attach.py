"""Where attached stages sit: the check lowering makes before ScheduleOps.

``compute_at`` accepts a stage whose other readers are not yet inside the
chosen loop (TVM's idiom: ``s[AA].compute_at(s[BL], k)`` before
``s[AL].compute_at(s[BL], ki)``).  Before lowering, every reader must be
computed inside that loop: at the attach stage itself, or attached (through
any chain) to it at the same axis or one nested inside.
"""
from __future__ import annotations

from ..errors import LoweringError


def effective_readers(sch, stage):
    """Stages that read ``stage``, looking through inlined stages to their readers."""
    out = []
    for q in sch._consumers(stage):
        if q.attach_type == "inline":
            out += [r for r in effective_readers(sch, q) if r not in out]
        elif q not in out:
            out.append(q)
    return out


def _inside(q, parent, scope):
    """Whether stage ``q`` runs within loop ``scope`` of ``parent``."""
    if q is parent:
        return True
    leaves = parent.leaf_iter_vars
    k = leaves.index(scope)
    st = q
    while st.attach_type == "scope":
        if st.attach_stage is parent:
            return st.attach_ivar in leaves and leaves.index(st.attach_ivar) >= k
        st = st.attach_stage
    return False


def check_attachments(sch):
    """Raise LoweringError naming a stage read outside the loop it is computed in."""
    for st in sch.stages:
        if st.attach_type != "scope":
            continue
        parent, scope = st.attach_stage, st.attach_ivar
        if scope not in parent.leaf_iter_vars:
            continue        # ScheduleOps reports an attach axis that is no longer a leaf
        for q in effective_readers(sch, st):
            if not _inside(q, parent, scope):
                raise LoweringError(
                    f"stage {st.name} is computed at {parent.name}.{scope.var.name}, but its "
                    f"reader {q.name} runs outside that loop; compute {q.name} at "
                    f"{parent.name}.{scope.var.name} (or inside it), or inline it")
