"""FuseOps: operators grouped by pattern kind into primitive functions, one kernel each.

The operator-fusion rules (TVM's FuseOps), applied from the outputs back to the inputs (a node joins
the group of its users only when all of its users are in that one group and
it is not an output of the graph):

- injective (element-wise, broadcast, layout maps) operators fuse into an
  injective or reduction group: chains of injective operators become one
  kernel, and a reduction absorbs the injective operators computing its input;
- a complex-out-fusable operator (conv2d, dense, pooling) absorbs the
  element-wise and broadcast operators after it (same output shape), e.g.
  conv2d + bias_add + add + relu, and the injective operators that only that
  tail reads (a slice or reshape of another operand of its add);
- a reduction (and a global pooling, a reduction over whole axes) absorbs
  the injective operators after it when they form a group without another
  reduction or anchor (global_avg_pool2d + layout_transform + batch_flatten
  is one kernel: the pooled values are written once, in the final layout);
  nothing else after a reduction fuses into it, and opaque operators
  (softmax, lrn, ...) stay alone;
- a layout_transform packing an image's few channels (NCHW -> NCHW3c) joins
  the blocked convolution that reads it (its loop nest in the conv's kernel
  is ~10x faster than the flat kernel it would be alone; TVM keeps it apart);
- an element-wise tail of a complex-out-fusable operator prefers that
  operator's group to an injective group after it (an inception branch's
  bias add + relu runs in its conv's output tile; the concatenate and any
  layout_transform form their own group), so the conv's output is not
  written to memory and read back.

``fuse_opt_level=0`` makes every operator a group of its own.  Each group
becomes ``fn (%p0, ...) -> ..., Primitive=1 { ... }`` called from the graph;
scalar constants stay inside, other constants become arguments.
"""
from __future__ import annotations

import hashlib

from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order
from ..op.registry import Op, OpPattern
from ..ty import TensorType

P = OpPattern


class Group:
    __slots__ = ("nodes", "root", "pattern", "anchor")

    def __init__(self, root, pattern):
        self.nodes = [root]
        self.root = root
        self.pattern = pattern
        self.anchor = root

    def add(self, node, pattern):
        self.nodes.append(node)
        if pattern > self.pattern and pattern != P.TUPLE:
            self.pattern, self.anchor = pattern, node


def pattern_of(node):
    if isinstance(node, Call) and isinstance(node.op, Op):
        return node.op.pattern
    if isinstance(node, Tuple):
        return P.TUPLE
    return P.OPAQUE


def _downstream_ok(node, group, users, shape):
    """Every group member reachable from ``node`` is element-wise/broadcast with output ``shape``."""
    members = set(group.nodes)
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        for u in users.get(n, ()):
            if u in members and u not in seen:
                seen.add(u)
                if pattern_of(u) > P.BROADCAST or not isinstance(u._checked_type, TensorType) \
                        or u._checked_type.shape != shape:
                    return False
                stack.append(u)
    return True


# out-elemwise-fusable by pattern, but reductions over whole axes: their group's schedule is a reduction's
GLOBAL_POOLS = frozenset({"nn.global_avg_pool2d", "nn.global_max_pool2d"})


def _is_reduction(node, p):
    return p == P.COMM_REDUCE or (p == P.OUT_ELEMWISE_FUSABLE and getattr(node.op, "name", "") in GLOBAL_POOLS)


def _can_join(node, p, group, users):
    if p == P.OPAQUE or group.pattern == P.OPAQUE:
        return False
    if _is_reduction(node, p):      # a reduction takes the injective group after it (one reduction per group)
        return group.pattern <= P.INJECTIVE
    if p == P.TUPLE:        # the argument of a concatenate belongs to it
        us = users[node]
        return len(us) == 1 and isinstance(us[0], Call) and getattr(us[0].op, "name", "") == "concatenate"
    if p <= P.INJECTIVE:
        return group.pattern <= P.COMM_REDUCE or _packs_conv_input(node, group, users) or \
            _feeds_epilogue(node, group, users)
    if p == P.OUT_ELEMWISE_FUSABLE:
        if group.pattern > P.INJECTIVE:
            return False
        return _downstream_ok(node, group, users, node._checked_type.shape)
    return False


def _feeds_epilogue(node, group, users):
    """Whether ``node`` (injective) is read only by the element-wise tail of the complex-out-fusable op anchoring
    ``group`` (an RNN step's slice of the input projection added after its recurrent product; a residual
    read through a reshape): inlined there, it is read as each output tile is stored, instead of being copied
    by a kernel of its own.  The anchor itself takes no injective input (its schedule reads plain tensors)."""
    if group.pattern != P.OUT_ELEMWISE_FUSABLE:
        return False
    us = users.get(node, ())        # (all in ``group``: its other members follow the anchor)
    return bool(us) and all(u is not group.anchor for u in us)


def _packs_conv_input(node, group, users):
    """Whether ``node`` packs a few channels (C <= block: an image's RGB) from NCHW into the NCHW{C}c input of
    the blocked convolution anchoring ``group``: in the conv's kernel it is a plain loop nest, where alone it
    is a flat loop of div/mod gathers (about 10x slower)."""
    if getattr(node.op, "name", "") != "layout_transform" or node.attrs.src_layout != "NCHW":
        return False
    a = group.anchor
    if not (isinstance(a, Call) and getattr(a.op, "name", "") == "nn.contrib_conv2d_NCHWc" and a.args[0] is node
            and users.get(node) == [a]):
        return False
    t = node.args[0]._checked_type
    return isinstance(t, TensorType) and len(t.shape) == 4 and node.attrs.dst_layout == f"NCHW{t.shape[1]}c"


def _anchor_above(node, users):
    """The complex-out-fusable op whose element-wise tail ``node`` ends, or None.

    Walks up through single-user element-wise/broadcast ops of ``node``'s
    shape (conv2d -> bias add -> relu); the tail belongs with that op so it
    runs in the op's output tile instead of in a second pass over memory."""
    t = getattr(node, "_checked_type", None)
    if not isinstance(t, TensorType):
        return None
    shape = t.shape
    n = node
    while pattern_of(n) <= P.BROADCAST:
        nxt = None
        for a in n.args:
            t = getattr(a, "_checked_type", None)
            if isinstance(a, Call) and isinstance(a.op, Op) and len(users.get(a, ())) == 1 \
                    and isinstance(t, TensorType) and t.shape == shape:
                if pattern_of(a) == P.OUT_ELEMWISE_FUSABLE:
                    return a
                if pattern_of(a) <= P.BROADCAST and nxt is None:
                    nxt = a
        if nxt is None:
            return None
        n = nxt
    return None


def _keeps_anchor(node, group, users):
    """Whether ``group`` after taking ``node`` could still take the anchor above it (only element-wise after)."""
    return group.pattern <= P.INJECTIVE and _downstream_ok(node, group, users, node._checked_type.shape)


def find_groups(body, fuse_opt_level=2):
    """``{node: Group}`` for every call (and concatenate's tuple) of ``body``; graph-level nodes are absent."""
    nodes = post_order(body)
    users = {}
    for n in nodes:
        for c in n.children():
            users.setdefault(c, []).append(n)
    outputs = {body} | (set(body.fields) if isinstance(body, Tuple) else set())
    group_of = {}
    for n in reversed(nodes):
        if isinstance(n, (Var, Constant, TupleGetItem)):
            continue
        if isinstance(n, Call) and not isinstance(n.op, Op):
            continue
        p = pattern_of(n)
        us = users.get(n, [])
        target = None
        # a tuple read by one operator (concatenate's) goes into that operator's group even unfused: a kernel
        # takes tensors, not tuples
        if (fuse_opt_level > 0 or p == P.TUPLE) and n not in outputs and us:
            gs = {id(group_of.get(u)) for u in us}
            g = group_of.get(us[0])
            if g is not None and len(gs) == 1 and _can_join(n, p, g, users):
                target = g
                # an element-wise tail of a conv goes with the conv, not into e.g. a concatenate after it
                if p <= P.BROADCAST and _anchor_above(n, users) is not None and not _keeps_anchor(n, g, users):
                    target = None
        if target is None and p == P.TUPLE:
            continue        # a tuple at graph level: a list of entries
        if target is None:
            target = Group(n, p)
        else:
            target.add(n, p)
        group_of[n] = target
    return group_of


def group_name(group):
    names = []
    for n in reversed(group.nodes):
        if isinstance(n, Call):
            names.append(n.op.name.replace(".", "_"))
    name = "fused_" + "_".join(names)
    if len(name) > 80:
        name = name[:64] + "_" + hashlib.sha1(name.encode()).hexdigest()[:8]
    return name


def fuse_function(func, fuse_opt_level=2):
    """``func`` with each group replaced by a call of a primitive function."""
    from ..visit import inline_lets
    from .infer_type import infer_function
    body = inline_lets(func.body)
    if body is not func.body:
        func = Function(func.params, body, None, func.type_params, func.attrs)
    infer_function(func)
    group_of = find_groups(body, fuse_opt_level)
    groups = []
    for g in group_of.values():
        if g not in groups:
            groups.append(g)
    new = {}            # old graph-level node -> new node
    order = post_order(body)
    for n in order:
        g = group_of.get(n)
        if g is not None and n is not g.root:
            continue
        if g is not None:
            new[n] = _make_group_call(g, new)
        elif isinstance(n, (Var, Constant)):
            new[n] = n
        elif isinstance(n, Tuple):
            new[n] = Tuple([new[f] for f in n.fields])
        elif isinstance(n, TupleGetItem):
            new[n] = TupleGetItem(new[n.tuple_value], n.index)
        elif isinstance(n, Call):     # a call of a function already fused
            new[n] = Call(n.op, [new[a] for a in n.args], n.attrs)
        else:
            new[n] = n
    out = Function(func.params, new[body], None, func.type_params, func.attrs)
    infer_function(out)
    return out


def _make_group_call(g, new):
    members = set(g.nodes)
    params, args, inner = [], [], {}

    def operand(c):
        if c in members:
            return inner[c]
        if isinstance(c, Constant) and c.value.ndim == 0:
            return c
        if c not in inner:
            v = Var(f"p{len(params)}", c._checked_type)
            params.append(v)
            args.append(new[c])
            inner[c] = v
        return inner[c]
    for n in post_order(g.root):
        if n not in members:
            continue
        if isinstance(n, Call):
            inner[n] = Call(n.op, [operand(a) for a in n.args], n.attrs)
        elif isinstance(n, Tuple):
            inner[n] = Tuple([operand(f) for f in n.fields])
    fn = Function(params, inner[g.root], None, None, {"Primitive": 1})
    fn.name_hint = group_name(g)
    fn.pattern = g.pattern
    return Call(fn, args)
