"""graphviz drawings of AST1 (dataflow), AST2 (loop nest) and AST3 (lowered IR).

Every drawing is a ``graphviz.Digraph``; loops are filled with their kind's
colour (``colors.KIND_COLORS``).  Each node has a *key* (its path from the
root) so a drawing can outline the nodes that are new since the previous
step.  Big graphs collapse: long expression trees become one text node and
statements past a node budget fold into a "… n more" node.
"""
from __future__ import annotations

import shutil
import subprocess

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.printer import astext, reducer_name
from ..ir.tensor import ComputeOp, IterVar, PlaceholderOp
from .colors import CHANGED_EDGE, KIND_COLORS

MAX_EXPR_NODES = 40      # an expression tree bigger than this is drawn as one text node
MAX_STMT_NODES = 120     # statements past this budget fold into one node
MAX_SEQ_SHOWN = 8        # children of one sequence drawn before folding the rest
LABEL_CHARS = 60


def _short(text, n=LABEL_CHARS):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _digraph(name):
    import graphviz
    g = graphviz.Digraph(name)
    g.attr(rankdir="TB", fontname="Helvetica", fontsize="10")
    g.attr("node", fontname="Helvetica", fontsize="10", style="filled", fillcolor="white")
    g.attr("edge", arrowsize="0.6")
    return g


class _Builder:
    """Adds nodes with stable keys; outlines keys absent from ``previous``."""

    def __init__(self, name, previous=None):
        self.g = _digraph(name)
        self.previous = previous
        self.keys = set()
        self.count = 0

    def node(self, key, label, graph=None, **attrs):
        k = key
        n = 2
        while k in self.keys:
            k = f"{key}~{n}"
            n += 1
        self.keys.add(k)
        self.count += 1
        nid = f"n{self.count}"
        if self.previous is not None and k not in self.previous:
            attrs.update(color=CHANGED_EDGE, penwidth="2.5")
        (graph or self.g).node(nid, _short(label, attrs.pop("chars", LABEL_CHARS)), **attrs)
        return nid

    def done(self):
        self.g.keys = frozenset(self.keys)
        return self.g


# ---------------------------------------------------------------- AST1
def _expr_size(e, limit):
    count = 0
    stack = [e]
    while stack and count <= limit:
        x = stack.pop()
        count += 1
        stack.extend(_expr_children(x))
    return count


def _expr_children(e):
    if isinstance(e, E.Reduce):
        return list(e.source) + ([] if _is_true(e.condition) else [e.condition])
    if isinstance(e, (E.ProducerLoad, E.Var, E.IntImm, E.FloatImm, E.StringImm, IterVar)):
        return []
    if isinstance(e, E.Call):
        return list(e.args)
    if isinstance(e, E.Cast):
        return [e.value]
    if isinstance(e, E.Not):
        return [e.a]
    if isinstance(e, E.Select):
        return [e.condition, e.true_value, e.false_value]
    if isinstance(e, E.Let):
        return [e.value, e.body]
    if isinstance(e, (E.Ramp,)):
        return [e.base, e.stride]
    if isinstance(e, E.Broadcast):
        return [e.value]
    a, b = getattr(e, "a", None), getattr(e, "b", None)
    return [x for x in (a, b) if x is not None]


def _is_true(c):
    return c is None or (isinstance(c, E.IntImm) and c.value)


def _expr_label(e):
    if isinstance(e, E.Reduce):
        name = reducer_name(e.combiner) or "reduce"
        return f"{name} over {', '.join(iv.var.name for iv in e.axis)}"
    if isinstance(e, E.ProducerLoad):
        return astext(e)
    if isinstance(e, IterVar):
        return e.var.name
    if isinstance(e, (E.Var, E.IntImm, E.FloatImm, E.StringImm)):
        return astext(e)
    if isinstance(e, E.Call):
        return e.op
    if isinstance(e, E.Cast):
        return f"cast {e.dtype}"
    if isinstance(e, (E.Min, E.Max)):
        return type(e).__name__.lower()
    if isinstance(e, E.Not):
        return "not"
    if isinstance(e, E.Select):
        return "select"
    sym = getattr(type(e), "symbol", None)
    if sym and sym != "?":
        return sym
    return type(e).__name__


def _tensor_label(t):
    shape = ", ".join(astext(s) if not isinstance(s, int) else str(s) for s in t.shape)
    return f"{t.name}\n({shape}) {t.dtype}"


def ast1_graph(schedule_or_ops, previous=None):
    """Dataflow of tensors and operations with their expression trees."""
    from ..schedule.schedule import Schedule, post_order
    if isinstance(schedule_or_ops, Schedule):
        sch = schedule_or_ops
        stages = [(st.op, st.attach_type) for st in sch.stages]
    else:
        sch = None
        ops = schedule_or_ops if isinstance(schedule_or_ops, (list, tuple)) else [schedule_or_ops]
        stages = [(op, "root") for op in post_order([getattr(o, "op", o) for o in ops])]
    b = _Builder("AST1", previous)
    b.g.attr(rankdir="TB")
    tensor_node = {}
    collapse_all = len(stages) > 30
    for op, attach in stages:
        if isinstance(op, PlaceholderOp):
            for t in op.outputs:
                tensor_node[t] = b.node(f"in:{t.name}", _tensor_label(t), shape="box",
                                        fillcolor="#fff3bf")
            continue
        if not isinstance(op, ComputeOp):
            for t in op.outputs:
                tensor_node[t] = b.node(f"op:{t.name}", _tensor_label(t), shape="box")
            continue
        import graphviz
        cluster = graphviz.Digraph(f"cluster_{b.count}")
        axes = ", ".join(iv.var.name for iv in op.axis)
        note = " (inlined)" if attach == "inline" else ""
        cluster.attr(label=_short(f"{op.name}[{axes}] = …{note}"), style="dashed" if note else "rounded",
                     color="#868e96", fontname="Helvetica", fontsize="10")
        roots = []
        for k, body in enumerate(op.body):
            big = collapse_all or _expr_size(body, MAX_EXPR_NODES) > MAX_EXPR_NODES
            if big:
                nid = b.node(f"{op.name}/expr{k}", astext(body), graph=cluster, shape="note",
                             chars=120)
                for t in _loads(body):
                    if t in tensor_node:
                        b.g.edge(tensor_node[t], nid)
                roots.append(nid)
            else:
                roots.append(_draw_expr(b, cluster, body, f"{op.name}/{k}", tensor_node))
        b.g.subgraph(cluster)
        for k, t in enumerate(op.outputs):
            tensor_node[t] = b.node(f"out:{t.name}", _tensor_label(t), shape="box",
                                    fillcolor="#e7f5ff" if attach != "inline" else "white",
                                    style="filled,dashed" if attach == "inline" else "filled")
            b.g.edge(roots[min(k, len(roots) - 1)], tensor_node[t])
    del sch
    return b.done()


def _loads(e):
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, E.ProducerLoad) and x.producer not in out:
            out.append(x.producer)
        stack.extend(_expr_children(x))
        if isinstance(x, E.ProducerLoad):
            stack.extend(x.indices)
    return out


def _draw_expr(b, graph, e, key, tensor_node):
    label = _expr_label(e)
    shape = "box" if isinstance(e, E.ProducerLoad) else "ellipse"
    fill = "#f1f3f5" if isinstance(e, E.Reduce) else "white"
    nid = b.node(f"{key}/{label}", label, graph=graph, shape=shape, fillcolor=fill)
    if isinstance(e, E.ProducerLoad):
        t = e.producer
        if t in tensor_node:
            b.g.edge(tensor_node[t], nid)
        return nid
    for k, c in enumerate(_expr_children(e)):
        cid = _draw_expr(b, graph, c, f"{key}/{k}", tensor_node)
        graph.edge(cid, nid)
    return nid


# ---------------------------------------------------------------- AST2 / AST3
def stmt_graph(func, level="AST2", previous=None):
    """The statement tree of a PrimFunc (AST2 or AST3): loops coloured by kind."""
    b = _Builder(level, previous)
    params = ", ".join(getattr(func.buffer_map.get(v), "name", None) or v.name for v in func.params)
    root = b.node("func", f"{func.name}({params})", shape="box", fillcolor="#f8f9fa")
    state = {"left": MAX_STMT_NODES}
    _draw_stmt(b, func.body, root, "func", state)
    return b.done()


def _count_stmts(s):
    n, stack = 0, [s]
    while stack:
        x = stack.pop()
        if isinstance(x, S.SeqStmt):
            stack.extend(x.seq)
            continue
        n += 1
        for f in ("body", "then_case", "else_case"):
            c = getattr(x, f, None)
            if isinstance(c, S.Stmt):
                stack.append(c)
    return n


def _fold(b, parent, key, count, what="statements"):
    nid = b.node(f"{key}/fold", f"… {count} more {what}", shape="plaintext", style="")
    b.g.edge(parent, nid, style="dashed")


def _draw_stmt(b, s, parent, key, state, edge_label=None):
    if isinstance(s, S.SeqStmt):
        items = list(s.seq)
        shown = items if len(items) <= MAX_SEQ_SHOWN + 1 else items[:MAX_SEQ_SHOWN]
        for k, x in enumerate(shown):
            if state["left"] <= 0:
                _fold(b, parent, f"{key}/{k}", sum(_count_stmts(y) for y in items[k:]))
                return
            _draw_stmt(b, x, parent, f"{key}/{k}", state)
        if len(shown) < len(items):
            _fold(b, parent, f"{key}/rest", sum(_count_stmts(y) for y in items[len(shown):]))
        return
    if state["left"] <= 0:
        _fold(b, parent, key, _count_stmts(s))
        return
    state["left"] -= 1
    attrs = {"shape": "box"}
    body, children = None, []
    if isinstance(s, S.For):
        ext = astext(s.extent)
        if isinstance(s.min, E.IntImm) and s.min.value == 0:
            rng = f"range({ext})"
        else:
            rng = f"range({astext(s.min)}, {astext(s.min)} + {ext})"
        label = f"for {s.loop_var.name} in {rng}\n{s.kind}"
        if s.annotations:
            label += "\n" + ", ".join(f"{k}={v}" for k, v in s.annotations)
        attrs.update(fillcolor=KIND_COLORS.get(s.kind, "white"), style="filled,rounded")
        body = s.body
    elif isinstance(s, S.AttrStmt):
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar):
            label = f"launch {s.node.thread_tag}\nextent {astext(s.value)}"
            attrs.update(fillcolor=KIND_COLORS["thread_binding"], style="filled,rounded")
        else:
            nd = getattr(s.node, "name", None) or _short(
                astext(s.node) if isinstance(s.node, E.Expr) else repr(s.node), 24)
            val = astext(s.value) if isinstance(s.value, E.Expr) else repr(s.value)
            label = f"attr {s.attr_key}\n{nd} = {_short(val, 30)}"
            attrs.update(shape="cds", fillcolor="#f8f9fa")
        body = s.body
    elif isinstance(s, S.ProducerRealize):
        bounds = ", ".join(astext(r.extent) for r in s.bounds)
        scope = f" ({s.storage_scope})" if s.storage_scope else ""
        label = f"realize {s.producer.name}[{bounds}]{scope}"
        attrs.update(shape="folder", fillcolor="#fff9db")
        body = s.body
    elif isinstance(s, S.Allocate):
        ext = ", ".join(astext(x) for x in s.extents)
        label = f"allocate {s.buffer_var.name}\n{s.dtype}[{ext}] {s.scope}"
        attrs.update(shape="folder", fillcolor="#fff9db")
        body = s.body
    elif isinstance(s, S.LetStmt):
        label = f"let {s.var.name} = {astext(s.value)}"
        body = s.body
    elif isinstance(s, S.AssertStmt):
        label = f"assert {astext(s.condition)}"
        body = s.body
    elif isinstance(s, S.IfThenElse):
        label = f"if {astext(s.condition)}"
        attrs.update(shape="diamond", fillcolor="#fff5f5")
        children = [(s.then_case, "then")] + ([(s.else_case, "else")] if s.else_case is not None else [])
    elif isinstance(s, (S.ProducerStore, S.Store)):
        label = astext(s)
        attrs.update(shape="note", fillcolor="#f1f3f5")
    else:
        label = astext(s)
        attrs.update(shape="plaintext", style="")
    # A statement is "new in this step" only if its own text is new: a loop whose kind changed is
    # outlined, the unchanged statements inside it are not (keys do not include the ancestors).
    nid = b.node(f"stmt:{label}" + (f"/{edge_label}" if edge_label else ""), label, **attrs)
    b.g.edge(parent, nid, **({"label": edge_label} if edge_label else {}))
    if body is not None:
        _draw_stmt(b, body, nid, f"{key}/{_short(label, 40)}", state)
    for c, lab in children:
        _draw_stmt(b, c, nid, f"{key}/{_short(label, 40)}/{lab}", state, edge_label=lab)


# ---------------------------------------------------------------- rendering
def dot_missing_reason():
    """Why graphs cannot be drawn as SVG here, or None when they can."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return "the Python package 'graphviz' is not installed (pip install graphviz)"
    if shutil.which("dot") is None:
        return ("the graphviz program 'dot' is not installed, so graphs are shown as text "
                "(install it with `apt-get install graphviz`, or run `make` as root)")
    return None


def to_svg(graph, timeout=20):
    """(svg text, None) or (None, why it could not be drawn)."""
    why = dot_missing_reason()
    if why is not None:
        return None, why
    try:
        data = subprocess.run(["dot", "-Tsvg"], input=graph.source.encode(), capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"graphviz 'dot' failed: {e}"
    if data.returncode != 0:
        return None, f"graphviz 'dot' failed: {data.stderr.decode(errors='replace')[:300]}"
    svg = data.stdout.decode("utf-8", errors="replace")
    start = svg.find("<svg")
    return (svg[start:] if start >= 0 else svg), None
