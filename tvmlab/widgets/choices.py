"""Which primitives and which arguments are valid for a stage right now.

The explorer's controls offer only these choices, so a student can only pick
steps that make sense (the primitives still check, and say why if not).
"""
from __future__ import annotations

from ..ir.tensor import ComputeOp, IterVar

THREADS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
           "threadIdx.z", "vthread")
SCOPES = ("global", "shared", "local")
PRAGMAS = ("auto_unroll_max_step", "auto_unroll_max_extent", "unroll_explicit")


def _attach_points(sch, stage):
    return {id(s.attach_ivar) for s in sch.stages if s.attach_stage is stage}


def _free(sch, stage):
    """Leaf axes that are serial and carry no attached stage (splittable, markable)."""
    pts = _attach_points(sch, stage)
    return [iv for iv in stage.leaf_iter_vars
            if stage.attr(iv).kind == "serial" and id(iv) not in pts]


def _names(ivs):
    return [iv.var.name for iv in ivs]


def axis_choices(sch, stage_key, primitive):
    """{parameter: [valid values]} for ``primitive`` on stage ``stage_key``."""
    st = sch.stage_by_name(stage_key)
    free = _free(sch, st) if isinstance(st.op, ComputeOp) and st.attach_type != "inline" else []
    leaf = _names(st.leaf_iter_vars) if isinstance(st.op, ComputeOp) else []
    data = [iv for iv in free if iv.iter_type != IterVar.REDUCE]
    if primitive in ("split", "unroll"):
        return {"axis": _names(free)}
    if primitive in ("vectorize", "parallel"):
        return {"axis": _names(data)}
    if primitive == "tile":
        return {"x_parent": _names(data), "y_parent": _names(data)}
    if primitive == "fuse":
        runs = []
        ids = {id(iv) for iv in free}
        ivs = st.leaf_iter_vars
        for a in range(len(ivs)):
            for b in range(a + 2, len(ivs) + 1):
                run = ivs[a:b]
                if all(id(iv) in ids for iv in run) and \
                        len({iv.iter_type == IterVar.REDUCE for iv in run}) == 1:
                    runs.append(tuple(_names(run)))
        return {"axes": runs}
    if primitive == "reorder":
        return {"axis": leaf, "position": leaf}
    if primitive == "bind":
        used = {a.bind_thread.thread_tag for a in st.iter_var_attrs.values()
                if a.bind_thread is not None and a.bind_thread.thread_tag != "vthread"}
        return {"axis": _names(free), "thread": [t for t in THREADS if t not in used]}
    if primitive == "pragma":
        return {"axis": leaf, "pragma_type": list(PRAGMAS)}
    if primitive == "compute_at":
        parents = [sch.stage_key(s) for s in sch.stages
                   if s is not st and isinstance(s.op, ComputeOp) and s.attach_type != "inline"
                   and sch._reads_through_inline(s, st)]
        return {"parent": parents}
    if primitive == "set_scope":
        return {"scope": list(SCOPES)}
    if primitive == "cache_read":
        return {"scope": list(SCOPES),
                "readers": [sch.stage_key(s) for s in sch._consumers(st)]}
    if primitive == "cache_write":
        return {"scope": list(SCOPES)}
    if primitive == "rfactor":
        return {"axis": [iv.var.name for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]}
    return {}


def valid_primitives(sch, stage_key):
    """The primitives that have at least one valid choice on this stage."""
    st = sch.stage_by_name(stage_key)
    if not isinstance(st.op, ComputeOp):
        return ["cache_read"] if sch._consumers(st) else []
    out = []
    inline = st.attach_type == "inline"
    for p in ("split", "tile", "fuse", "reorder", "vectorize", "unroll", "parallel", "bind",
              "pragma", "rfactor"):
        if inline:
            continue
        ch = axis_choices(sch, stage_key, p)
        if p == "reorder":
            if len(ch["axis"]) >= 2:
                out.append(p)
        elif p == "tile":
            if len(ch["x_parent"]) >= 2:
                out.append(p)
        elif p == "bind":
            if ch["axis"] and ch["thread"]:
                out.append(p)
        elif all(ch.values()):
            out.append(p)
    if not st.is_output:
        if axis_choices(sch, stage_key, "compute_at")["parent"]:
            out.append("compute_at")
        attached = any(s.attach_stage is st for s in sch.stages)
        if not st.op.is_reduction and not inline and not attached:
            out.append("compute_inline")
    if st.attach_type != "root":
        out.append("compute_root")
    out.append("set_scope")
    if hasattr(st, "opengl") and not inline:
        out.append("opengl")
    if sch._consumers(st):
        out.append("cache_read")
    if not (inline or st.relations or st.iter_var_attrs):
        out.append("cache_write")      # cache_write comes before any other primitive
    out.append("normalize")
    return out


def scope_choices(sch, parent_key):
    """Leaf axes of the parent stage that another stage may be computed at."""
    return _names(sch.stage_by_name(parent_key).leaf_iter_vars)
