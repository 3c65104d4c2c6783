"""Repeated blocks of a Relay graph: the layers of a transformer, the bottlenecks of a ResNet stage.

A graph is cut into *pieces* along its spine, then runs of structurally
identical pieces are found; nothing depends on names or on the order a
traversal happens to visit nodes in.

1. The *units* are what a drawing shows as nodes: operator calls, fused-group
   calls, tuples and tuple projections (variables and constants are not).
2. The *spine* is the chain of units that every path from one input to the
   output crosses. In a topological order a unit is on every such path exactly
   when no edge between path units jumps over it. Of the ``SOURCES`` inputs
   on whose paths most units lie, the one whose runs cover most is kept: the
   token ids of a BERT, not its attention mask nor a weight.
3. A unit's *piece* is the number of spine units above it, so each piece holds
   one spine unit and what lies between it and the one before. A unit the
   input does not reach (a weight's transpose, a mask made from another input)
   joins the piece of its users when they all are in one piece, else the first.
4. A piece's *form* is canonical: its units numbered depth first from its
   spine unit, each written as its signature (operator, attributes, output
   type; a fused group's whole body) and where its arguments come from (a unit
   of the piece by number, a spine unit by how many pieces back, another unit
   by its signature and how many pieces back (or "first piece", for values
   every block shares), an input or constant by type). Two pieces with equal forms
   are the same subgraph, wired the same way to what came before.
5. A *run* is ``count`` consecutive blocks of ``period`` pieces whose forms
   repeat; the run covering most units wins (ties: the block that reads the
   fewest values from before it, then the shorter period, then the later start),
   and the search goes on either side of it.

``find_repeats(func)`` returns the runs; ``Run.blocks`` are the units of each
block. No drawing here: ``tvmlab.widgets.relay_view`` draws a run folded.
"""
from __future__ import annotations

from collections import Counter

from .base import RelayError
from .expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order

MIN_BLOCK_UNITS = 2      # a "block" of one unit repeated (relu, relu) is not worth folding


class Run:
    """``count`` consecutive, structurally identical blocks; ``blocks[i]`` lists block i's units in
    topological order, ``ops`` counts the operators of one block (fused groups entered)."""

    def __init__(self, blocks, start, period):
        self.blocks = blocks
        self.start = start            # index of the first piece (see Repeats.pieces)
        self.period = period          # pieces per block
        self.ops = Counter()
        self._pattern = {}
        for u in blocks[0]:
            for n in ([u] if not _is_group(u) else post_order(u.op.body)):
                if isinstance(n, Call) and hasattr(n.op, "name"):
                    self.ops[n.op.name] += 1
                    self._pattern[n.op.name] = getattr(n.op, "pattern", 8)

    @property
    def count(self):
        return len(self.blocks)

    @property
    def groups(self):
        """Fused-group calls in one block (0 before FuseOps)."""
        return sum(1 for u in self.blocks[0] if _is_group(u))

    def summary(self, top=6):
        """The operators of one block, the heavy kinds (opaque, complex-out-fusable, reduction) before the
        element-wise ones, then most frequent first: ``nn.dense ×6, nn.batch_matmul ×2, …``."""
        order = sorted(self.ops, key=lambda k: (-self._pattern[k], -self.ops[k], k))[:top]
        parts = [f"{name} ×{self.ops[name]}" if self.ops[name] > 1 else name for name in order]
        more = len(self.ops) - top
        return ", ".join(parts) + (f", … {more} more" if more > 0 else "")

    def __repr__(self):
        return (f"Run({self.count} blocks of {len(self.blocks[0])} units: {self.summary(4)})")


class Repeats:
    """The analysis of one function: ``pieces`` (lists of units along the spine), ``spine`` (its units)
    and ``runs`` (in graph order)."""

    def __init__(self, func):
        if not isinstance(func, Function):
            raise RelayError(f"find_repeats needs a relay Function (mod[\"main\"]), got {type(func).__name__}")
        self.func = func
        order = [n for n in post_order(func.body) if _is_unit(n)]
        self.units = order
        self.pos = {n: k for k, n in enumerate(order)}
        self._sigs = {}
        best = None
        for reach, spine, source in _spines(func, order, self.pos):
            self.spine, self.source = spine, source
            self.pieces = _pieces(func, order, spine, source)
            self.runs = _find_runs(self)
            key = (sum(r.count * len(r.blocks[0]) for r in self.runs), reach, len(spine))
            if best is None or key > best[0]:
                best = (key, spine, source, self.pieces, self.runs)
        _, self.spine, self.source, self.pieces, self.runs = best or (None, [], None, [list(order)], [])

    def block_of(self, unit):
        """(run index, block index) of ``unit``, or None when it is in no repeated block."""
        if not hasattr(self, "_where"):
            self._where = {u: (r, b) for r, run in enumerate(self.runs)
                           for b, block in enumerate(run.blocks) for u in block}
        return self._where.get(unit)

    def __repr__(self):
        return f"Repeats({len(self.units)} units, {len(self.pieces)} pieces, runs={self.runs})"


def find_repeats(func):
    """The runs of repeated blocks in a Relay function (``mod["main"]``): a list of ``Run``."""
    return Repeats(func).runs


# ---------------------------------------------------------------- units and signatures
def _is_group(n):
    return isinstance(n, Call) and isinstance(n.op, Function)


def _is_unit(n):
    return not isinstance(n, (Var, Constant, Function))


def _args(n):
    return list(n.args) if isinstance(n, Call) else list(n.children())


def _type_key(n):
    return str(getattr(n, "_checked_type", None))


def _leaf_key(n):
    if isinstance(n, Var):
        return ("var", str(n.type_annotation))
    if isinstance(n, Constant):
        return ("const", n.value.shape, str(n.value.dtype))
    return ("other", type(n).__name__)


def signature(n):
    """What a unit is, independent of where it sits: a hashable tuple."""
    if _is_group(n):
        return ("group", _body_form(n.op))
    if isinstance(n, Call):
        return ("op", getattr(n.op, "name", type(n.op).__name__), repr(sorted(n.attrs.items())), _type_key(n))
    if isinstance(n, TupleGetItem):
        return ("item", n.index, _type_key(n))
    if isinstance(n, Tuple):
        return ("tuple", len(n.fields))
    return (type(n).__name__, _type_key(n))


def _body_form(fn):
    """A fused function's body as a canonical tuple: inner nodes numbered in post order, parameters by
    position, constants by shape and type."""
    number, rows = {}, []
    params = {p: k for k, p in enumerate(fn.params)}
    for n in post_order(fn.body):
        if isinstance(n, Var):
            number[n] = ("param", params.get(n, -1), str(n.type_annotation))
            continue
        if isinstance(n, Constant):
            number[n] = _leaf_key(n)
            continue
        rows.append((signature(n), tuple(number.get(a, ("?",)) for a in _args(n))))
        number[n] = ("node", len(rows) - 1)
    return tuple(rows)


# ---------------------------------------------------------------- the spine and the pieces
def _sink(func, pos):
    """The unit the spine ends at: the body, or the deepest field of a tuple body."""
    body = func.body
    if isinstance(body, Tuple) and body.fields:
        fields = [f for f in body.fields if f in pos]
        if fields:
            return max(fields, key=lambda f: pos[f])
    return body if body in pos else None


SOURCES = 4      # inputs tried as the start of the spine


def _spines(func, order, pos):
    """[(reach, spine, source)]: for the ``SOURCES`` parameters on whose paths to the sink most units lie
    (``reach``), the chain of units on every such path. The caller keeps the one whose runs cover most:
    a weight feeding one layer reaches less than the token ids, and a mask feeding every attention may
    reach more but repeats less."""
    sink = _sink(func, pos)
    if sink is None:
        return []
    users = {n: [] for n in order}
    feeds = {p: [] for p in func.params}
    for n in order:
        for a in set(_args(n)):
            if a in users:
                users[a].append(n)
            elif a in feeds:
                feeds[a].append(n)
    above = {sink}                                # ancestors of the sink (and itself)
    for n in reversed(order):
        if n in above:
            above.update(a for a in _args(n) if a in pos)
    reaches = []
    for p in func.params:
        reach, stack = set(), [u for u in feeds[p] if u in above]
        while stack:                              # units on some path p -> sink
            u = stack.pop()
            if u in reach:
                continue
            reach.add(u)
            stack.extend(v for v in users[u] if v in above and v not in reach)
        if reach:
            reaches.append((len(reach), -len(reaches), p, reach))
    out = []
    for size, _, p, reach in sorted(reaches, key=lambda r: r[:2], reverse=True)[:SOURCES]:
        cover = [0] * (len(order) + 1)            # edges jumping over each position
        for u in reach:
            for v in users[u]:
                if v in reach and pos[v] > pos[u] + 1:
                    cover[pos[u] + 1] += 1
                    cover[pos[v]] -= 1
        starts = sorted(pos[u] for u in feeds[p] if u in reach)
        for k in starts[1:]:                      # the source's own edges jump over its first user
            cover[starts[0]] += 1
            cover[k] -= 1
        chain, depth = [], 0
        for k, n in enumerate(order):
            depth += cover[k]
            if n in reach and depth == 0:
                chain.append(n)
        out.append((size, chain, p))
    return out


def _descendants(func, order, source):
    below = set()
    for n in order:
        if any(a is source or a in below for a in _args(n)):
            below.add(n)
    return below


def _pieces(func, order, spine, source):
    """Units grouped by how many spine units lie above them (each piece holds one spine unit, the last
    piece maybe none). A unit the source does not reach (a weight's transpose, a mask) joins the piece
    of its users when they are all in one piece, else the first piece."""
    on_spine = set(spine)
    above = {}
    for n in order:
        above[n] = max((above[a] + (a in on_spine) for a in _args(n) if a in above), default=0)
    below = _descendants(func, order, source)
    users = {n: set() for n in order}
    for n in order:
        for a in _args(n):
            if a in users:
                users[a].add(n)
    for n in reversed(order):
        if n not in below and users[n]:
            homes = {above[u] for u in users[n]}
            above[n] = homes.pop() if len(homes) == 1 else 0
    pieces = [[] for _ in range(len(spine) + 1)]
    for n in order:
        pieces[above[n]].append(n)
    return [p for p in pieces if p]


def _piece_forms(rep):
    """Canonical form of every piece (see the module doc, step 4), interned to small ints."""
    spine_index = {n: k for k, n in enumerate(rep.spine)}
    piece_of = {n: k for k, piece in enumerate(rep.pieces) for n in piece}
    sigs = rep._sigs
    forms, ids = [], {}
    for k, piece in enumerate(rep.pieces):
        members = set(piece)
        local, rows = {}, []
        # number depth first from the piece's spine unit, then from any unit not reached (latest first)
        roots = [n for n in piece if n in spine_index] + piece[::-1]
        for root in roots:
            if root in local:
                continue
            stack = [(root, False)]
            while stack:
                n, done = stack.pop()
                if done:
                    if n in local:
                        continue
                    refs = []
                    for a in _args(n):
                        if a in local:
                            refs.append(("u", local[a]))
                        elif a in spine_index and a not in members:
                            refs.append(("spine", k - piece_of[a]))
                        elif a is rep.source:             # the input the spine starts from
                            refs.append(("spine", k + 1))
                        elif a in piece_of and a not in members:
                            if a not in sigs:
                                sigs[a] = signature(a)
                            # a value of the first piece (a mask every layer reads) is shared: no distance
                            refs.append(("x", sigs[a], k - piece_of[a] if piece_of[a] else "first"))
                        else:
                            refs.append(_leaf_key(a))
                    if n not in sigs:
                        sigs[n] = signature(n)
                    rows.append((sigs[n], tuple(refs)))
                    local[n] = len(rows) - 1
                    continue
                if n in local:
                    continue
                stack.append((n, True))
                for a in reversed(_args(n)):
                    if a in members and a not in local:
                        stack.append((a, False))
        form = tuple(rows)
        forms.append(ids.setdefault(form, len(ids)))
    return forms


# ---------------------------------------------------------------- runs
def _find_runs(rep):
    if len(rep.pieces) < 2:
        return []
    forms = _piece_forms(rep)
    sizes = [len(p) for p in rep.pieces]
    runs = []
    _search(rep, forms, sizes, 0, len(forms), runs)
    runs.sort(key=lambda r: r.start)
    return runs


def _search(rep, forms, sizes, lo, hi, runs):
    """Best run within pieces [lo, hi), then the search on either side of it."""
    best, best_key = None, None
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)
    for period in range(1, (hi - lo) // 2 + 1):
        same = [forms[j] == forms[j + period] for j in range(lo, hi - period)]
        j = 0
        while j < len(same):
            if not same[j]:
                j += 1
                continue
            end = j
            while end < len(same) and same[end]:
                end += 1
            length = end - j                      # pieces lo+j .. lo+end-1 equal the ones a period on
            count = length // period + 1
            for start in range(lo + j, lo + end - period * (count - 1) + 1):
                block = prefix[start + period] - prefix[start]
                if count < 2 or block < MIN_BLOCK_UNITS or (best_key and block * count < best_key[0]):
                    continue
                key = (block * count, -_reads(rep, start, period, count), -period, start)
                if best_key is None or key > best_key:
                    best, best_key = (start, period, count), key
            j = end
    if best is None:
        return
    start, period, count = best
    blocks = [[u for p in rep.pieces[start + i * period: start + (i + 1) * period] for u in p]
              for i in range(count)]
    runs.append(Run(blocks, start, period))
    _search(rep, forms, sizes, lo, start, runs)
    _search(rep, forms, sizes, start + period * count, hi, runs)


def _reads(rep, start, period, count):
    """Values that the blocks of a candidate run read from units outside them, per block (the largest)."""
    worst = 0
    for i in range(count):
        members = {u for p in rep.pieces[start + i * period: start + (i + 1) * period] for u in p}
        outside = {a for u in members for a in _args(u) if a in rep.pos and a not in members}
        worst = max(worst, len(outside))
    return worst
