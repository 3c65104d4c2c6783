"""The Relay view: a graph-level module drawn before and after each pass, fused groups coloured by kind.

``tvmlab.explore(mod, params=params)`` on a Relay IRModule opens it. The
stages are the module as given, then after each pass relay.build runs
(SimplifyInference, FoldConstant, AlterOpLayout, FoldConstant again,
DeadCodeElimination, FuseOps), recorded while ``relay.optimize`` runs them.
An operator is filled with the colour of its pattern kind (TVM's four:
injective, reduction, complex-out-fusable, opaque) and outlined when it is
new since the stage before; after FuseOps each fused group is a box around
its operators, in the colour of its kind. Repeated blocks (the layers of a
transformer, found by ``tvmlab.relay.repeats``) are folded into one node
each run, ``expand=i`` draws block i in full between the folded others.
Choosing a group opens its TE schedule in the operator explorer. ``RelayView`` (no widgets needed)
computes the stages and draws; ``RelayExplorer`` is the ipywidgets face.
"""
from __future__ import annotations

import html

from ..errors import TVMLabError

# one colour per pattern kind (OpPattern.NAMES), shared by operators and fused groups
PATTERN_COLORS = {
    "elemwise": "#d3f9d8", "broadcast": "#b2f2bb", "injective": "#8ce99a",
    "reduction": "#a5d8ff", "out-elemwise-fusable": "#ffc078", "tuple": "#e9ecef", "opaque": "#ffa8a8",
}
MAX_NODES = 400           # operators drawn before the rest of a big graph folds into one node


def pattern_name(pattern):
    from ..relay.op.registry import OpPattern
    return OpPattern.NAMES.get(pattern, "opaque")


def is_relay_module(obj):
    from ..ir.function import IRModule
    from ..relay.expr import Function
    if not isinstance(obj, IRModule):
        return False
    try:
        return isinstance(obj["main"], Function)
    except Exception:
        return False


def _short_shape(ty):
    shape = getattr(ty, "shape", None)
    if shape is None:
        return ""
    return "(" + ", ".join(str(d) for d in shape) + ")"


class Group:
    """A fused group: its primitive function, name, pattern kind and operators."""

    def __init__(self, index, call):
        fn = call.op
        self.index = index
        self.call = call
        self.function = fn
        self.name = getattr(fn, "name_hint", None) or f"group{index}"
        self.kind = pattern_name(getattr(fn, "pattern", 8))
        from ..relay.expr import Call, post_order
        from ..relay.op.registry import Op
        self.ops = [n.op.name for n in post_order(fn.body) if isinstance(n, Call) and isinstance(n.op, Op)]

    def __repr__(self):
        return f"Group({self.name}, {self.kind}, {len(self.ops)} ops)"


class RelayView:
    """The stages of a Relay module through relay.build's graph passes, and their drawings.

    The passes are those ``relay.optimize`` runs for ``target`` under a
    PassContext of ``opt_level`` and ``disabled_pass`` (recorded by a pass
    instrument), so the stages are exactly what the build compiles.
    """

    def __init__(self, mod, params=None, target="llvm", opt_level=3, disabled_pass=()):
        if not is_relay_module(mod):
            raise TVMLabError(f"the Relay view needs an IRModule with a Relay function 'main', "
                              f"got {type(mod).__name__}")
        from .. import transform as tr
        from ..relay import transform as rt
        from ..relay.build_module import optimize
        if params:
            names = {p.name_hint for p in mod["main"].params}
            for k in params:
                if k not in names:
                    raise TVMLabError(f"params names {k!r}, which is not a parameter of main")
        self._source = (mod, params, target, opt_level, list(disabled_pass))
        self._repeats = {}
        self.stages = [("input", rt.InferType()(mod))]
        recorder = _Recorder(self.stages)
        with tr.PassContext(opt_level=opt_level, disabled_pass=list(disabled_pass), instruments=[recorder]):
            optimize(mod, target, params)

    @property
    def names(self):
        return [n for n, _ in self.stages]

    def module(self, stage=-1):
        return self.stages[self._index(stage)][1]

    def _index(self, stage):
        if isinstance(stage, str):
            names = self.names
            if stage not in names:
                raise TVMLabError(f"unknown stage {stage!r}; the stages are {names}")
            return names.index(stage)
        if not -len(self.stages) <= stage < len(self.stages):
            raise TVMLabError(f"stage {stage} out of range (0..{len(self.stages) - 1})")
        return stage

    def groups(self, stage=-1):
        """The fused groups of ``stage`` (empty before FuseOps), in graph order."""
        from ..relay.expr import Call, Function, post_order
        body = self.module(stage)["main"].body
        calls = [n for n in post_order(body) if isinstance(n, Call) and isinstance(n.op, Function)]
        return [Group(k, c) for k, c in enumerate(calls)]

    def counts(self, stage=-1):
        """{operator name: count} of the calls in ``stage`` (inside fused groups too)."""
        from ..relay.expr import Call, post_order
        from ..relay.op.registry import Op
        out = {}
        for n in post_order(self.module(stage)["main"].body, enter_functions=True):
            if isinstance(n, Call) and isinstance(n.op, Op):
                out[n.op.name] = out.get(n.op.name, 0) + 1
        return out

    def repeats(self, stage=-1):
        """The repeated blocks of ``stage`` (a ``tvmlab.relay.repeats.Repeats``; ``.runs`` lists them)."""
        from ..relay.repeats import Repeats
        i = self._index(stage) % len(self.stages)
        if i not in self._repeats:
            self._repeats[i] = Repeats(self.module(i)["main"])
        return self._repeats[i]

    def graph(self, stage=-1, show_params=False, collapse=True, expand=None):
        """A graphviz Digraph of ``stage``; operators new since the stage before are outlined.

        Each run of repeated blocks is one folded node unless ``collapse`` is
        False; ``expand=i`` (or ``(run, i)``) draws block i of the run in full,
        the blocks before and after it staying folded."""
        i = self._index(stage) % len(self.stages)
        previous = self.module(i - 1)["main"] if i else None
        repeats = self.repeats(i) if collapse else None
        if expand is not None and not collapse:
            raise TVMLabError("expand= needs collapse=True (with collapse=False every block is drawn)")
        return relay_graph(self.module(i)["main"], show_params=show_params, title=self.names[i],
                           previous=previous, repeats=repeats, expand=expand)

    def profile(self, inputs=None, number=5, rounds=3):
        """Build the module as relay.build does and time each kernel call alone (random inputs unless
        given): [(kernel name, ms, output shape)], slowest first (see tvmlab.bench.graph.profile)."""
        import numpy as np

        from .. import transform as tr
        from ..bench.graph import profile
        from ..contrib import graph_executor
        from ..relay.build_module import build
        from ..runtime import cpu
        mod, params, target, opt_level, disabled = self._source
        with tr.PassContext(opt_level=opt_level, disabled_pass=disabled):
            lib = build(mod, target=target, params=params)
        gmod = graph_executor.GraphModule(lib["default"](cpu(0)))
        rng = np.random.default_rng(0)
        names = set(params or {})
        for p in mod["main"].params:
            if p.name_hint in names:
                continue
            t = p.type_annotation
            value = (inputs or {}).get(p.name_hint)
            if value is None:
                value = rng.standard_normal([int(d) for d in t.shape]).astype(t.dtype)
            gmod.set_input(p.name_hint, value)
        gmod.run()
        return profile(gmod, number=number, rounds=rounds)

    def group_schedule(self, group, stage=-1, target="llvm"):
        """(schedule, tensors) of one fused group, as the build compiles it."""
        if isinstance(group, int):
            groups = self.groups(stage)
            if not 0 <= group < len(groups):
                raise TVMLabError(f"group {group} out of range: stage has {len(groups)} fused groups")
            group = groups[group]
        return lower_group(group.function, target)

    def explore_group(self, group, stage=-1, target="llvm", **options):
        """The operator explorer on one fused group's TE schedule."""
        from . import explore
        s, args = self.group_schedule(group, stage, target)
        return explore(s, args, targets=[target], **options)


def lower_group(fn, target="llvm"):
    """(schedule, placeholders + outputs) of a primitive function, as relay.build schedules it: the
    anchor operator's schedule, else the default one when that cannot apply."""
    from ..relay.build_module import group_tensors
    from ..relay.schedules import schedule_default, schedule_group
    inputs, outs, anchor = group_tensors(fn)
    try:
        s = schedule_group(outs, anchor, target)
    except TVMLabError:
        inputs, outs, anchor = group_tensors(fn)
        s = schedule_default(outs, target, False)
    return s, inputs + outs


class _Recorder:
    """A pass instrument keeping the module after each graph pass (InferType and wrappers left out)."""
    SKIP = ("InferType", "relay.optimize", "sequential")

    def __init__(self, stages):
        self.stages = stages

    def run_after_pass(self, mod, info):
        if info.name in self.SKIP or not is_relay_module(mod):
            return
        names = [n for n, _ in self.stages]
        name, k = info.name, 2
        while name in names:
            name, k = f"{info.name} ({k})", k + 1
        self.stages.append((name, mod))


# ---------------------------------------------------------------- drawing
def node_keys(func):
    """{operator call: key}, a key being what a reader sees: the operator, its attributes, its output
    type and what each input is (producer operator and shape, an input's name, a constant's shape).

    Operators inside a fused group key as they did before fusion (a group
    parameter stands for the group's argument), so FuseOps changes no key.
    """
    from ..relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order
    from ..relay.op.registry import Op
    keys, looks = {}, {}

    def walk(root, env):
        for n in post_order(root):
            if n in looks:
                continue
            if isinstance(n, Var):
                looks[n] = env.get(n, ("var", n.name_hint))
            elif isinstance(n, Constant):
                looks[n] = ("const", n.value.shape, str(n.value.dtype))
            elif isinstance(n, Tuple):
                looks[n] = ("tuple",) + tuple(looks[f] for f in n.fields)
            elif isinstance(n, TupleGetItem):
                looks[n] = ("item", n.index, looks[n.tuple_value])
            elif isinstance(n, Call) and isinstance(n.op, Function):
                walk(n.op.body, dict(zip(n.op.params, (looks[a] for a in n.args))))
                looks[n] = looks[n.op.body]
            elif isinstance(n, Call) and isinstance(n.op, Op):
                shape = _short_shape(getattr(n, "_checked_type", None))
                keys[n] = (n.op.name, repr(sorted(n.attrs.items())), shape, tuple(looks[a] for a in n.args))
                looks[n] = (n.op.name, shape)
    walk(func.body, {})
    return keys


def new_since(func, previous_func):
    """The operator calls of ``func`` that ``previous_func`` has no counterpart for (keys as a multiset)."""
    from collections import Counter
    left = Counter(node_keys(previous_func).values())
    fresh = set()
    for n, k in node_keys(func).items():
        if left[k] > 0:
            left[k] -= 1
        else:
            fresh.add(n)
    return fresh


def relay_graph(func, show_params=False, title="", previous=None, repeats=None, expand=None):
    """graphviz Digraph of a Relay function: inputs, operators (by kind colour), fused groups as boxes.

    Weights (parameters after the first) and constants are left out unless
    ``show_params``; past ``MAX_NODES`` operators the rest folds into one node.
    With ``previous`` (the function of the stage before), operators that are
    new since then are outlined. With ``repeats`` (a ``relay.repeats.Repeats``
    of ``func``) each run of repeated blocks is one folded node; ``expand``
    (block index of the first run, or ``(run, block)``) draws that block in
    full, in a box, between the folded blocks before and after it.
    """
    from ..relay.expr import Call, Function, Tuple, TupleGetItem, Var, post_order
    from ..relay.op.registry import Op
    from .graph import _digraph
    g = _digraph("relay")
    if title:
        g.attr(label=title, labelloc="t")
    shown_vars = set(func.params) if show_params else set(func.params[:1])
    fresh = new_since(func, previous) if previous is not None else set()
    ends = {}          # node -> id of the drawn node its value leaves from
    counter = [0]

    def new_id():
        counter[0] += 1
        return f"r{counter[0]}"

    folds, opened = _fold_plan(repeats, expand)
    fold_of = {u: f for f in folds for block in f.blocks for u in block}
    block_of = {u: c for c in opened for u in c.units}
    edge = _Edges(g, {f.id for f in folds})
    drawn = 0
    for n in post_order(func.body):
        if drawn >= MAX_NODES:
            if "more" not in ends.values():
                g.node("more", "… more operators", shape="note")
            ends[n] = "more"
            continue
        if n in fold_of:
            f = fold_of[n]
            if not f.drawn:
                f.draw(g, fresh)
                drawn += 1
            ends[n] = f.id
            for child in (n.args if isinstance(n, Call) else n.children()):
                if child in ends and ends[child] != f.id:
                    edge(ends[child], f.id)
            continue
        where = block_of[n].graph if n in block_of else g
        if isinstance(n, Var):
            if n in shown_vars or n not in func.params:
                ends[n] = new_id()
                where.node(ends[n], f"%{n.name_hint}\\n{_short_shape(n.type_annotation)}", shape="ellipse",
                           fillcolor="#e7f5ff")
            continue
        if isinstance(n, Call) and isinstance(n.op, Function):
            drawn += len(_draw_group(where, n, ends, new_id, fresh, edge))
            continue
        k = new_id()
        if isinstance(n, Call) and isinstance(n.op, Op):
            _op_node(where, k, n, n in fresh)
            drawn += 1
        elif isinstance(n, TupleGetItem):
            where.node(k, f".{n.index}", shape="circle", width="0.3", fillcolor="#f1f3f5")
        elif isinstance(n, Tuple):
            where.node(k, "tuple", shape="box", fillcolor=PATTERN_COLORS["tuple"])
        else:
            continue
        ends[n] = k
        for child in (n.args if isinstance(n, Call) else n.children()):
            if child in ends:
                edge(ends[child], k)
    for c in opened:
        g.subgraph(c.graph)
    if func.body in ends:
        g.node("out", "output", shape="plaintext")
        edge(ends[func.body], "out")
    return g


FOLD_COLOR = "#e5dbff"


class _Edges:
    """Adds edges to the top graph (so no edge pulls a node into a box); an edge that touches a folded
    node is drawn once however many values of the fold it stands for."""

    def __init__(self, graph, fold_ids):
        self.graph, self.fold_ids, self.seen = graph, fold_ids, set()

    def __call__(self, a, b):
        if a in self.fold_ids or b in self.fold_ids:
            if (a, b) in self.seen:
                return
            self.seen.add((a, b))
        self.graph.edge(a, b)


class _Fold:
    """Consecutive blocks of one run drawn as a single node."""

    def __init__(self, run, r, first, last):
        self.run, self.blocks = run, run.blocks[first:last]
        self.id = f"fold{r}_{first}"
        self.first, self.last = first, last
        self.drawn = False

    def label(self):
        n, run = self.last - self.first, self.run
        if n == run.count:
            head = f"repeated block ×{n}"
        elif n == 1:
            head = f"block {self.first + 1} of {run.count}"
        else:
            head = f"blocks {self.first + 1}–{self.last} of {run.count} (×{n})"
        groups = run.groups
        what = (f"{groups} fused groups" if groups else f"{len(run.blocks[0])} operators") + " each"
        return f"{head}\\n{what}\\n{_wrap(run.summary(), 44)}"

    def draw(self, g, fresh):
        from .colors import CHANGED_EDGE
        changed = any(u in fresh or (hasattr(u, "op") and _group_has(u, fresh)) for b in self.blocks for u in b)
        extra = {"color": CHANGED_EDGE, "penwidth": "2.5"} if changed else {}
        g.node(self.id, self.label(), shape="box3d", fillcolor=FOLD_COLOR, fontsize="10",
               tooltip="structurally identical blocks, folded (expand= or the explorer's menu opens one)",
               **extra)
        self.drawn = True


class _Opened:
    """The one block drawn in full, in its own box."""

    def __init__(self, run, r, b):
        import graphviz
        self.units = run.blocks[b]
        self.graph = graphviz.Digraph(name=f"cluster_block{r}_{b}")
        self.graph.attr(label=f"block {b + 1} of {run.count}", style="dashed,rounded", color="#7048e8",
                        penwidth="1.5", fontsize="10", labeljust="l")


def _group_has(call, fresh):
    from ..relay.expr import Function, post_order
    return isinstance(call.op, Function) and any(n in fresh for n in post_order(call.op.body))


def _wrap(text, width):
    lines, line = [], ""
    for word in text.split(", "):
        if line and len(line) + len(word) + 2 > width:
            lines.append(line + ",")
            line = word
        else:
            line = f"{line}, {word}" if line else word
    return "\\n".join(lines + [line])


def expand_target(repeats, expand):
    """``expand`` (None, a block index of the first run, or (run, block)) checked against ``repeats``."""
    if expand is None:
        return None
    runs = repeats.runs if repeats is not None else []
    r, b = (0, expand) if isinstance(expand, int) else tuple(expand) if isinstance(expand, (tuple, list)) \
        else (None, None)
    if not (isinstance(r, int) and isinstance(b, int)):
        raise TVMLabError(f"expand must be a block index or (run, block), got {expand!r}")
    if not runs:
        raise TVMLabError("expand: this stage has no repeated blocks")
    if not 0 <= r < len(runs):
        raise TVMLabError(f"expand: run {r} out of range (the stage has {len(runs)} runs of repeated blocks)")
    if not 0 <= b < runs[r].count:
        raise TVMLabError(f"expand: block {b} out of range (run {r} has {runs[r].count} blocks, 0.."
                          f"{runs[r].count - 1})")
    return r, b


def _fold_plan(repeats, expand):
    """(folds, opened blocks): every run folded, the expanded block (if any) drawn in full."""
    target = expand_target(repeats, expand)
    if repeats is None:
        return [], []
    folds, opened = [], []
    for r, run in enumerate(repeats.runs):
        if target is not None and target[0] == r:
            b = target[1]
            folds += [_Fold(run, r, lo, hi) for lo, hi in ((0, b), (b + 1, run.count)) if hi > lo]
            opened.append(_Opened(run, r, b))
        else:
            folds.append(_Fold(run, r, 0, run.count))
    return folds, opened


def _op_node(graph, k, call, fresh=False):
    from .colors import CHANGED_EDGE
    kind = pattern_name(call.op.pattern)
    extra = {"color": CHANGED_EDGE, "penwidth": "2.5"} if fresh else {}
    graph.node(k, f"{call.op.name}\\n{_short_shape(getattr(call, '_checked_type', None))}", shape="box",
               style="filled,rounded", fillcolor=PATTERN_COLORS[kind],
               tooltip=kind + (" (new in this stage)" if fresh else ""), **extra)


def _draw_group(g, call, ends, new_id, fresh=(), edge=None):
    """The group's operators inside a box of its kind; outside values enter the operators using them
    (through ``edge``, which puts edges in the top graph; ``g.edge`` when not given)."""
    from ..relay.expr import Call, Tuple, post_order
    from ..relay.op.registry import Op
    fn = call.op
    kind = pattern_name(getattr(fn, "pattern", 8))
    outside = {p: a for p, a in zip(fn.params, call.args)}
    inner = {}
    with g.subgraph(name=f"cluster_{new_id()}") as c:
        c.attr(label=f"{getattr(fn, 'name_hint', 'group')} · {kind}", style="filled,rounded",
               fillcolor=PATTERN_COLORS[kind] + "66", color=PATTERN_COLORS[kind], penwidth="2",
               fontsize="9")
        for n in post_order(fn.body):
            if not (isinstance(n, Call) and isinstance(n.op, Op)):
                continue
            inner[n] = new_id()
            _op_node(c, inner[n], n, n in fresh)
            args = []
            for a in n.args:            # a tuple inside the group (concatenate's) stands for its fields
                args += list(a.fields) if isinstance(a, Tuple) else [a]
            for a in args:
                if a in inner:
                    c.edge(inner[a], inner[n])
                elif a in outside and outside[a] in ends:
                    (edge or g.edge)(ends[outside[a]], inner[n])
    last = inner.get(fn.body) or (list(inner.values())[-1] if inner else None)
    if last is not None:
        ends[call] = last
    return inner


def to_html(view, stage=-1, collapse=True, expand=None):
    """A stage's drawing as inline SVG (or why it cannot be drawn, with the text form)."""
    from .graph import to_svg
    svg, why = to_svg(view.graph(stage, collapse=collapse, expand=expand))
    if svg is not None:
        return svg
    return (f"<p>{html.escape(why)}</p><pre>{html.escape(str(view.module(stage)))}</pre>")


def legend_html():
    chips = "".join(f'<span style="background:{c};padding:1px 6px;margin-right:4px;border-radius:3px;'
                    f'font-family:monospace;font-size:11px">{html.escape(k)}</span>'
                    for k, c in PATTERN_COLORS.items())
    return f'<div style="margin:2px 0">pattern kinds: {chips}</div>'


def explore_relay(mod, params=None, targets=None, **options):
    """The Relay explorer widget on ``mod`` (see RelayExplorer)."""
    from .relay_explorer import RelayExplorer
    return RelayExplorer(mod, params=params, targets=targets, **options)
