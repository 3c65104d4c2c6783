"""TEDD (Tensor Expression Debug Display), spelled as in TVM: three drawings of a schedule.

    from tvmlab.contrib import tedd
    tedd.viz_dataflow_graph(s, dot_file_path="/tmp/dfg.dot")
    tedd.viz_schedule_tree(s, show_svg=True)
    tedd.viz_itervar_relationship_graph(s, output_dot_string=True)

As in TVM, each ``viz_*`` function writes the DOT text to ``dot_file_path``
when one is given, shows the SVG in the notebook with ``show_svg=True``, and
returns the DOT text with ``output_dot_string=True`` (else None, so a
notebook cell does not draw it twice); ``dataflow_graph(s)``,
``schedule_tree(s)`` and ``itervar_relationship_graph(s)`` return the
``graphviz.Digraph`` itself.  Loops are
filled with the explorer's loop-kind colours, so the pictures read the same
as the explorer's graphs.
"""
from __future__ import annotations

import html
import os

from ..errors import TVMLabError
from ..ir.printer import astext
from ..ir.tensor import ComputeOp, PlaceholderOp
from ..schedule.relations import Fuse, Rebase, Singleton, Split
from ..schedule.schedule import Schedule
from ..widgets.colors import KIND_COLORS

TENSOR_COLOR = "#fff3bf"      # tensors (data), as the explorer's AST1 graph draws them
STAGE_COLOR = "#dbe4ff"       # stages (operations)
ROOT_COLOR = "#f8f9fa"        # the schedule root of the tree
RELATION_COLOR = "#ffffff"


class TEDDError(TVMLabError, ValueError):
    """A TEDD call with something that is not a schedule, or an unwritable path."""


def _check(sch):
    if not isinstance(sch, Schedule):
        raise TEDDError(f"expected a schedule from te.create_schedule, got {type(sch).__name__}")


def _digraph(name, rankdir="TB"):
    try:
        import graphviz
    except ImportError:
        raise TEDDError("tedd needs the Python package 'graphviz' (pip install graphviz)") from None
    g = graphviz.Digraph(name)
    g.attr(rankdir=rankdir, fontname="Helvetica", fontsize="10")
    g.attr("node", fontname="Helvetica", fontsize="10", shape="box", style="filled,rounded",
           fillcolor="white")
    g.attr("edge", arrowsize="0.6")
    return g


def _esc(text):
    return html.escape(str(text), quote=True)


def _range(dom):
    if dom is None:
        return "?"
    lo = astext(dom.min)
    return f"[0, {astext(dom.extent)})" if lo == "0" else f"[{lo}, {lo} + {astext(dom.extent)})"


def _stage_id(sch, st):
    return "stage_" + "".join(c if c.isalnum() else "_" for c in sch.stage_key(st))


def _iv_kind(st, iv):
    a = st.attr(iv)
    if a.bind_thread is not None:
        return "thread_binding", a.bind_thread.thread_tag
    return a.kind, ""


def _finish(g, show_svg, dot_file_path, output_dot_string):
    if dot_file_path:
        try:
            d = os.path.dirname(os.path.abspath(dot_file_path))
            if not os.path.isdir(d):
                raise TEDDError(f"dot_file_path {dot_file_path!r}: the folder {d} does not exist")
            with open(dot_file_path, "w") as f:
                f.write(g.source)
        except OSError as e:
            raise TEDDError(f"cannot write dot_file_path {dot_file_path!r}: {e}") from None
    if show_svg:
        from ..widgets.graph import to_svg
        svg, why = to_svg(g)
        if svg is None:
            raise TEDDError(f"show_svg: {why}")
        try:
            from IPython.display import SVG, display
        except ImportError:
            raise TEDDError("show_svg needs IPython (run it in a notebook)") from None
        display(SVG(svg))
    return g.source if output_dot_string else None


# ---------------------------------------------------------------- dataflow graph
def dataflow_graph(sch):
    """The Digraph of tensors and stages: placeholder -> stage -> output tensor -> consumer."""
    _check(sch)
    g = _digraph("dataflow", rankdir="LR")
    for st in sch.stages:
        sid = _stage_id(sch, st)
        op = st.op
        where = {"inline": "inlined", "root": ""}.get(st.attach_type)
        if where is None:
            where = f"at {st.attach_stage.name}.{st.attach_ivar.var.name}"
        shape = "ellipse" if isinstance(op, PlaceholderOp) else "box"
        extra = f"<BR/><FONT POINT-SIZE='8'>{_esc(where)}</FONT>" if where else ""
        kind = "placeholder" if isinstance(op, PlaceholderOp) else type(op).__name__
        g.node(sid, f"<<B>{_esc(sch.stage_key(st))}</B><BR/>{_esc(kind)}"
               f"{(' · ' + _esc(st.scope)) if st.scope else ''}{extra}>",
               shape=shape, fillcolor=STAGE_COLOR if shape == "box" else "white")
        for t in op.outputs:
            tid = f"{sid}_t{t.value_index}"
            dims = ", ".join(astext(d) if not isinstance(d, int) else str(d) for d in t.shape)
            g.node(tid, f"{t.name}\n({dims})\n{t.dtype}", shape="note", fillcolor=TENSOR_COLOR,
                   style="filled")
            g.edge(sid, tid)
    for st in sch.stages:
        if isinstance(st.op, ComputeOp):
            for t in st.op.input_tensors:
                src = sch.stage_map.get(t.op)
                if src is None:
                    continue
                g.edge(f"{_stage_id(sch, src)}_t{t.value_index}", _stage_id(sch, st))
    return g


def viz_dataflow_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Tensors and the stages that compute them (TVM's ``tedd.viz_dataflow_graph``)."""
    return _finish(dataflow_graph(sch), show_svg, dot_file_path, output_dot_string)


# ---------------------------------------------------------------- schedule tree
def _itervar_table(st, ivs, dom_map, title, color):
    rows = [f"<TR><TD COLSPAN='3' BGCOLOR='{color}'><B>{_esc(title)}</B></TD></TR>"]
    for k, iv in enumerate(ivs):
        kind, tag = _iv_kind(st, iv)
        red = " (reduce)" if iv.iter_type == "reduce" else ""
        rows.append(f"<TR><TD PORT='iv{k}'>{k}</TD><TD BGCOLOR='{KIND_COLORS[kind]}'>"
                    f"{_esc(iv.var.name)}{_esc(red)}</TD><TD>{_esc(tag or kind)} "
                    f"{_esc(_range(dom_map.get(iv)))}</TD></TR>")
    if not ivs:
        rows.append("<TR><TD COLSPAN='3'><I>no axes</I></TD></TR>")
    return "<<TABLE BORDER='0' CELLBORDER='1' CELLSPACING='0'>" + "".join(rows) + "</TABLE>>"


def _bounds(sch):
    from ..schedule.bound import infer_bound
    try:
        return infer_bound(sch)
    except TVMLabError:
        return {}


def schedule_tree(sch):
    """The Digraph of where each stage is computed: attached under the loop it is computed at."""
    _check(sch)
    dom_map = _bounds(sch)
    g = _digraph("schedule_tree")
    g.attr("node", shape="plaintext", style="")
    g.node("root", "<<TABLE BORDER='0' CELLBORDER='1' CELLSPACING='0'><TR><TD BGCOLOR='"
           f"{ROOT_COLOR}'><B>ROOT</B></TD></TR></TABLE>>")
    for st in sch.stages:
        if st.attach_type == "inline":
            continue
        sid = _stage_id(sch, st)
        scope = f" · {st.scope}" if st.scope else ""
        title = f"{sch.stage_key(st)}{scope}" + (" (placeholder)" if st.is_placeholder else "")
        g.node(sid, _itervar_table(st, st.leaf_iter_vars, dom_map, title, STAGE_COLOR))
        if st.attach_type == "scope":
            parent = st.attach_stage
            port = parent.leaf_iter_vars.index(st.attach_ivar)
            g.edge(f"{_stage_id(sch, parent)}:iv{port}", sid, color="#495057")
        else:
            g.edge("root", sid, color="#495057")
    inlined = [sch.stage_key(st) for st in sch.stages if st.attach_type == "inline"]
    if inlined:
        g.node("inlined", f"inlined: {', '.join(inlined)}", shape="note", style="filled",
               fillcolor=TENSOR_COLOR)
        g.edge("root", "inlined", style="dashed")
    return g


def viz_schedule_tree(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Stages as tables of leaf axes, each under the loop it is computed at (TVM's ``viz_schedule_tree``)."""
    return _finish(schedule_tree(sch), show_svg, dot_file_path, output_dot_string)


# ---------------------------------------------------------------- itervar relationships
def _relation_parts(rel):
    if isinstance(rel, Split):
        how = f"factor={rel.factor}" if rel.factor is not None else f"nparts={rel.nparts}"
        return f"Split\n{how}", [rel.parent], [rel.outer, rel.inner]
    if isinstance(rel, Fuse):
        return "Fuse", [rel.outer, rel.inner], [rel.fused]
    if isinstance(rel, Rebase):
        return "Rebase", [rel.parent], [rel.rebased]
    if isinstance(rel, Singleton):
        return "Singleton", [], [rel.iter]
    return type(rel).__name__, [], []


def itervar_relationship_graph(sch):
    """The Digraph of each stage's axes: root axes, split/fuse/rebase nodes, leaf axes (in order)."""
    _check(sch)
    dom_map = _bounds(sch)
    g = _digraph("itervar_relationship")
    for si, st in enumerate(sch.stages):
        if st.is_placeholder:
            continue
        sid = _stage_id(sch, st)
        with g.subgraph(name=f"cluster_{sid}") as c:
            c.attr(label=sch.stage_key(st), style="rounded", color="#adb5bd", fontsize="11")
            ids = {}
            leaf = {iv: k for k, iv in enumerate(st.leaf_iter_vars)}
            for k, iv in enumerate(st.all_iter_vars):
                kind, tag = _iv_kind(st, iv)
                nid = f"{sid}_iv{k}"
                ids[iv] = nid
                order = f"leaf {leaf[iv]}: " if iv in leaf else ""
                red = " (reduce)" if iv.iter_type == "reduce" else ""
                c.node(nid, f"{order}{iv.var.name}{red}\n{tag or kind} {_range(dom_map.get(iv))}",
                       fillcolor=KIND_COLORS[kind], penwidth="2" if iv in leaf else "1")
            for r, rel in enumerate(st.relations):
                label, parents, children = _relation_parts(rel)
                rid = f"{sid}_rel{r}"
                c.node(rid, label, shape="ellipse", style="filled", fillcolor=RELATION_COLOR)
                for p in parents:
                    if p in ids:
                        c.edge(ids[p], rid)
                for k, ch in enumerate(children):
                    if ch in ids:
                        c.edge(rid, ids[ch], label=("outer", "inner")[k] if len(children) == 2
                               else "")
    return g


def viz_itervar_relationship_graph(sch, show_svg=False, dot_file_path="",
                                   output_dot_string=False):
    """How each stage's leaf axes derive from its root axes (TVM's ``viz_itervar_relationship_graph``)."""
    return _finish(itervar_relationship_graph(sch), show_svg, dot_file_path, output_dot_string)


__all__ = ["viz_dataflow_graph", "viz_schedule_tree", "viz_itervar_relationship_graph",
           "dataflow_graph", "schedule_tree", "itervar_relationship_graph", "TEDDError"]
