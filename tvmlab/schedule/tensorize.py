"""Tensorize: replace a loop nest by a hand-written kernel that computes the same tile.

``te.decl_tensor_intrin(op, intrin_func, binds=)`` declares what a kernel
computes (``op``, a small compute over placeholders) and how to call it
(``intrin_func(ins, outs)`` -> a statement, or ``(body, reduce_reset,
reduce_update)``, given one Buffer per tensor).  ``s[C].tensorize(axis,
intrin)`` replaces the loops from ``axis`` inward.  ScheduleOps checks that
those loops compute exactly the declared tile: each axis's range over the
loops equals the intrinsic's (leading axes of extent 1 may be dropped, as in
TVM), and the body read over the tile, with the inputs' tiles renamed to the
intrinsic's placeholders, simplifies to the intrinsic's body.  Each Buffer is
then bound to its tensor's tile (``buffer_bind_scope``), which storage
flattening resolves into a data pointer, an element offset and strides.
With ``scalar_params=[v, ...]`` the compute may use those variables and
``intrin_func(ins, outs, sp)`` passes them on; tensorize reads their values off
the stage (``intrin_scalars``).
"""
from __future__ import annotations

import weakref

from ..errors import DSLError, LoweringError, ScheduleError
from ..ir import op as _op
from ..ir.expr import Call, Expr, IntImm, ProducerLoad, Reduce, Select, Var
from ..ir.function import Buffer
from ..ir.functor import IRMutator, substitute
from ..ir.stmt import AttrStmt, Evaluate, IfThenElse, Stmt, seq
from ..ir.tensor import ComputeOp, IterVar, PlaceholderOp, Range, Tensor

BIND_SCOPE = "buffer_bind_scope"

_REGISTRY = weakref.WeakValueDictionary()     # name -> TensorIntrin (for trace replay)


class TensorIntrin:
    """A declared kernel: the compute it performs, its buffers and its statements."""

    def __init__(self, name, op, inputs, buffers, body, reduce_init, reduce_update, scalar_params=()):
        self.name = name
        self.op = op
        self.inputs = list(inputs)
        self.buffers = list(buffers)          # inputs' then outputs'
        self.body = body
        self.reduce_init = reduce_init
        self.reduce_update = reduce_update
        self.scalar_params = list(scalar_params)   # Vars whose values each call passes

    def __repr__(self):
        return f"TensorIntrin({self.name!r}, op={self.op.name})"

    def __call__(self, *args, reduce_axis=None):
        """``intrin(A[i, 0:16], B[i, 0:16], x * 2)`` inside ``te.compute``: the intrinsic applied to
        tensor regions (a fully indexed ``A[i, j]`` is a region of one element, as in TVM) and to
        scalar values for its ``scalar_params``, in any order."""
        from ..ir.tensor import TensorRegion
        regions, scalars = [], []
        for a in args:
            if isinstance(a, ProducerLoad):
                a = TensorRegion(a.producer, a.indices)
            if isinstance(a, TensorRegion):
                regions.append(a)
                continue
            try:
                scalars.append(_op.convert(a))
            except DSLError:
                raise DSLError(f"tensor intrinsic {self.name}: arguments are tensor regions such as "
                               f"A[i, 0:16] or scalar values, got {a!r}") from None
        if len(regions) != len(self.inputs):
            raise DSLError(f"tensor intrinsic {self.name} takes {len(self.inputs)} regions "
                           f"({', '.join(t.name for t in self.inputs)}), got {len(regions)}")
        if len(scalars) != len(self.scalar_params):
            raise DSLError(f"tensor intrinsic {self.name} takes {len(self.scalar_params)} scalar values "
                           f"({', '.join(v.name for v in self.scalar_params) or 'none'}), got {len(scalars)}")
        axes = [] if reduce_axis is None else (list(reduce_axis) if isinstance(reduce_axis, (list, tuple))
                                               else [reduce_axis])
        return TensorIntrinCall(self, regions, axes, scalars)


class TensorIntrinCall:
    """What ``intrin(regions...)`` returns: ``te.compute`` makes it a TensorComputeOp."""
    __slots__ = ("intrin", "regions", "reduce_axis", "scalar_inputs")

    def __init__(self, intrin, regions, reduce_axis, scalar_inputs=()):
        self.intrin, self.regions, self.reduce_axis = intrin, tuple(regions), tuple(reduce_axis)
        self.scalar_inputs = tuple(scalar_inputs)


def lookup(name):
    """The most recent intrinsic declared under ``name`` (used to replay traces)."""
    intrin = _REGISTRY.get(name)
    if intrin is None:
        raise ScheduleError(f"no tensor intrinsic named {name!r} is declared in this process; "
                            "declare it with te.decl_tensor_intrin(..., name=...) before replaying")
    return intrin


def _as_stmt(x, what):
    if x is None or isinstance(x, Stmt):
        return x
    if isinstance(x, Expr):
        return Evaluate(x)
    raise DSLError(f"decl_tensor_intrin: {what} must be a statement (ib.get()) or an expression, "
                   f"got {type(x).__name__}: {x!r}")


def decl_tensor_intrin(op, fcompute, name="tensor_intrin", binds=None, scalar_params=None,
                       default_buffer_params=None):
    """Declare a tensor intrinsic computing ``op`` by the statements ``fcompute`` returns."""
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise DSLError(f"decl_tensor_intrin: expected the operation of a te.compute (c.op), got {op!r}")
    scalar_params = list(scalar_params or ())
    for v in scalar_params:
        if not isinstance(v, Var):
            raise DSLError(f"decl_tensor_intrin {name!r}: scalar_params are variables (te.var), got {v!r}")
    inputs = op.input_tensors
    for t in inputs:
        if not isinstance(t.op, PlaceholderOp):
            raise DSLError(f"decl_tensor_intrin {name!r}: input {t.name} of {op.name} is computed; the "
                           "intrinsic's compute must read placeholders only")
    binds = dict(binds or {})
    params = dict(default_buffer_params or {})
    unknown = set(params) - {"offset_factor", "data_alignment", "scope", "strides", "elem_offset"}
    if unknown:
        raise DSLError(f"decl_tensor_intrin {name!r}: unknown default_buffer_params {sorted(unknown)}")
    buffers = []
    for t in list(inputs) + list(op.outputs):
        buf = binds.pop(t, None)
        if buf is None:
            buf = _default_buffer(t, params)
        if not isinstance(buf, Buffer):
            raise DSLError(f"decl_tensor_intrin {name!r}: binds[{t.name}] must be a Buffer "
                           f"(tvm.tir.decl_buffer), got {buf!r}")
        if buf.dtype != t.dtype or len(buf.shape) != t.ndim:
            raise DSLError(f"decl_tensor_intrin {name!r}: buffer {buf.name} is {buf.dtype} with "
                           f"{len(buf.shape)} dimensions, tensor {t.name} is {t.dtype} with {t.ndim}")
        buffers.append(buf)
    if binds:
        raise DSLError(f"decl_tensor_intrin {name!r}: binds name tensors that {op.name} does not use: "
                       f"{[getattr(t, 'name', t) for t in binds]}")
    if scalar_params:
        res = fcompute(buffers[:len(inputs)], buffers[len(inputs):], scalar_params)
    else:
        res = fcompute(buffers[:len(inputs)], buffers[len(inputs):])
    if isinstance(res, (list, tuple)):
        if len(res) != 3:
            raise DSLError(f"decl_tensor_intrin {name!r}: intrin_func returned {len(res)} values; "
                           "expected one statement or (body, reduce_reset, reduce_update)")
        body, init, update = (_as_stmt(x, w) for x, w in zip(res, ("body", "reduce_reset", "reduce_update")))
    else:
        body, init, update = _as_stmt(res, "the result"), None, None
    if body is None and update is None:
        raise DSLError(f"decl_tensor_intrin {name!r}: intrin_func gave neither a body nor an update")
    if name == "tensor_intrin":         # TVM's default name: numbered, so a trace tells them apart
        k = 1
        while f"{name}.{k}" in _REGISTRY:
            k += 1
        name = f"{name}.{k}" if name in _REGISTRY else name
    intrin = TensorIntrin(name, op, inputs, buffers, body, init, update, scalar_params)
    _REGISTRY[name] = intrin
    return intrin


def _default_buffer(t, params):
    factor = int(params.get("offset_factor", 0) or 0)
    off = params.get("elem_offset")
    if off is None and factor:
        off = Var(f"{t.name}_elem_offset", "int32")
    # each buffer gets its own stride variables (one tensor's stride is not another's)
    strides = [Var(f"{v.name}_{t.name}", v.dtype) if isinstance(v, Var) else v
               for v in params.get("strides") or ()]
    return Buffer(t.name, t.shape, t.dtype, strides=strides or None,
                  scope=params.get("scope", "global"), elem_offset=off, offset_factor=factor)


# ------------------------------------------------------------------ matching


class _Mismatch(Exception):
    pass


def _prod(xs):
    acc = IntImm("int32", 1)
    for x in xs:
        acc = _op.mul(acc, x)
    return acc


def _ordered_reads(exprs):
    """[(tensor, [indices...])] in order of first read."""
    from .bound import accesses
    return list(accesses(exprs).items())


class Match:
    """Where the intrinsic's tensors lie in the stage's: (buffer, tensor, [Range per dim]); the
    values of its scalar parameters."""

    def __init__(self, inputs, outputs, scalars=None):
        self.inputs, self.outputs, self.scalars = inputs, outputs, scalars or {}


def match(st, intrin, body, values, dom_map, inner, ana):
    """Check that the loops ``inner`` of stage ``st`` compute ``intrin``; return the tiles."""
    op, iop = st.op, intrin.op
    where = f"tensorize of {st.name} with {intrin.name!r}"
    for it in list(iop.axis) + list(iop.reduce_axis):
        ana.bind(it.var, it.dom)        # the intrinsic's own axes, over their ranges
    relax = {iv.var: dom_map[iv] for iv in inner}
    region = _axis_region(op, values, relax, ana)
    if not ana.can_prove_equal(_prod(dom_map[iv].extent for iv in inner),
                               _prod(r.extent for r in region.values())):
        raise _Mismatch(f"{where}: the loops from {inner[0].var.name} inward do not cover a "
                        "rectangular tile of the stage's axes once each")
    vmap = {}
    for mine, theirs, kind in ((op.axis, iop.axis, "axes"), (op.reduce_axis, iop.reduce_axis,
                                                              "reduction axes")):
        skip = len(mine) - len(theirs)
        if skip < 0:
            raise _Mismatch(f"{where}: the intrinsic has {len(theirs)} {kind}, stage {st.name} only "
                            f"{len(mine)}")
        for k, iv in enumerate(mine):
            r = region[iv]
            if k < skip:
                if not ana.can_prove_equal(r.extent, 1):
                    raise _Mismatch(f"{where}: axis {iv.var.name} spans {r.extent} inside the tile; "
                                    f"only the last {len(theirs)} {kind} may (the intrinsic's)")
                vmap[iv.var] = r.min
            else:
                it = theirs[k - skip]
                if not ana.can_prove_equal(r.extent, it.dom.extent):
                    raise _Mismatch(f"{where}: axis {iv.var.name} spans {r.extent} inside the tile, "
                                    f"the intrinsic's axis {it.var.name} {it.dom.extent}")
                vmap[iv.var] = _op.add(r.min, it.var)
    mine_reads = _ordered_reads(body)
    their_reads = _ordered_reads(iop.body)
    if len(mine_reads) != len(their_reads):
        raise _Mismatch(f"{where}: stage {st.name} reads {len(mine_reads)} tensors "
                        f"({[t.name for t, _ in mine_reads]}), the intrinsic {len(their_reads)} "
                        f"({[t.name for t, _ in their_reads]})")
    root_vals = {iv.var: values[iv] for iv in region}
    rename, inputs = {}, []
    for (t, idx_list), (p, _) in zip(mine_reads, their_reads):
        if t.dtype != p.dtype or t.ndim < p.ndim:
            raise _Mismatch(f"{where}: tensor {t.name} ({t.dtype}, {t.ndim}-d) cannot be the "
                            f"intrinsic's {p.name} ({p.dtype}, {p.ndim}-d)")
        rng = _read_ranges(t, idx_list, root_vals, relax, ana)
        skip = t.ndim - p.ndim
        for d, r in enumerate(rng):
            want = 1 if d < skip else p.shape[d - skip]
            if not ana.can_prove_equal(r.extent, want):
                raise _Mismatch(f"{where}: the tile reads {r.extent} elements of {t.name} along "
                                f"dimension {d}; the intrinsic's {p.name} expects {want}")
        rename[t] = (p, [r.min for r in rng], skip)
        inputs.append((intrin.buffers[len(inputs)], t, rng))
    scalars = _compare_bodies(st, intrin, body, vmap, rename, ana, where)
    outs = [(intrin.buffers[len(intrin.inputs) + k], t, [region[iv] for iv in op.axis])
            for k, t in enumerate(op.outputs)]
    return Match(inputs, outs, scalars)


def _axis_region(op, values, relax, ana):
    """{root IterVar: Range} that the tile covers, the loops in ``relax`` spanning their ranges."""
    region = {}
    for iv in list(op.axis) + list(op.reduce_axis):
        s = ana.int_set(values[iv], relax)
        lo = ana.simplify(s.min)
        region[iv] = Range(lo, ana.simplify(_op.add(_op.sub(s.max, lo), 1)))
    return region


def _read_ranges(t, idx_list, root_vals, relax, ana):
    """[Range per dimension] of tensor ``t`` that the tile reads (``idx_list``: its index tuples)."""
    rng = []
    for d in range(t.ndim):
        lo = hi = None
        for idx in idx_list:
            s = ana.int_set(substitute(idx[d], root_vals), relax)
            lo = s.min if lo is None else _op.min(lo, s.min)
            hi = s.max if hi is None else _op.max(hi, s.max)
        lo = ana.simplify(lo)
        rng.append(Range(lo, ana.simplify(_op.add(_op.sub(hi, lo), 1))))
    return rng


class _Map(dict):
    """A dict whose ``items()`` is a list, as TVM's Map returns (``m.items()[0]``)."""

    def items(self):
        return list(super().items())


def infer_region(stage, dom_map):
    """TVM's ``test.op.InferTensorizeRegion``: ``(out_dom, in_dom)`` of a tensorized stage, the ranges of
    its root axes ({IterVar: Range}) and of each tensor it reads ({Tensor: [Range]}) over the tile."""
    from ..ir.arith.analyzer import Analyzer
    from .bound import effective_bodies
    from .passes import leaf_values, pass_up_index
    t = tensorized_leaf(stage)
    if t is None:
        raise ScheduleError(f"InferTensorizeRegion: stage {stage.name} is not tensorized")
    inner = stage.leaf_iter_vars[t:]
    ana = Analyzer()
    values = pass_up_index(stage, dom_map, leaf_values(stage))
    relax = {iv.var: dom_map[iv] for iv in inner}
    out_dom = _axis_region(stage.op, values, relax, ana)
    root_vals = {iv.var: values[iv] for iv in out_dom}
    body = effective_bodies(stage.schedule)[stage]
    in_dom = _Map((t, _read_ranges(t, idx, root_vals, relax, ana)) for t, idx in _ordered_reads(body))
    return _Map(out_dom), in_dom


def match_body(stage, out_dom, in_dom, intrin):
    """TVM's ``test.op.MatchTensorizeBody``: the stage's body over the tile in the intrinsic's terms (its
    axes, its input tensors indexed from the tile's corner), to compare with ``intrin.op.body``."""
    from ..ir.arith.analyzer import Analyzer
    from .bound import effective_bodies
    op, iop = stage.op, intrin.op
    vmap, axis_of = {}, {}
    for mine, theirs in ((op.axis, iop.axis), (op.reduce_axis, iop.reduce_axis)):
        skip = len(mine) - len(theirs)
        for k, iv in enumerate(mine):
            r = out_dom[iv]
            vmap[iv.var] = r.min if k < skip else _op.add(r.min, theirs[k - skip].var)
            if k >= skip:
                axis_of[iv] = theirs[k - skip]
    reads = list(in_dom.items())
    their = [p for p, _ in _ordered_reads(iop.body)]
    rename = {t: (p, [r.min for r in rng], t.ndim - p.ndim) for (t, rng), p in zip(reads, their)}
    ana = Analyzer()

    class Rename(IRMutator):
        def visit_ProducerLoad(self, ld):
            if ld.producer not in rename:
                return ProducerLoad(ld.producer, tuple(self.visit(i) for i in ld.indices))
            p, mins, skip = rename[ld.producer]
            idx = [self.visit(i) for i in ld.indices]
            return ProducerLoad(p, tuple(ana.simplify(_op.sub(i, m)) for i, m in list(zip(idx, mins))[skip:]))

        def visit_Reduce(self, e):
            return e.replace(source=tuple(self.visit(x) for x in e.source), condition=self.visit(e.condition),
                             axis=tuple(axis_of.get(a, a) for a in e.axis))

    return [_Selects().visit(Rename().visit(substitute(b, vmap))) for b in effective_bodies(stage.schedule)[stage]]


class _Selects(IRMutator):
    """if_then_else as Select: a guard a split put into the stage's body is an if_then_else, the
    intrinsic's declaration may say Select; over the tile they compute one value."""

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return Select(*(self.visit(a) for a in e.args))
        return self.generic_visit(e)


def _compare_bodies(st, intrin, body, vmap, rename, ana, where):
    class Rename(IRMutator):
        def visit_ProducerLoad(self, ld):
            idx = tuple(self.visit(i) for i in ld.indices)
            p, mins, skip = rename[ld.producer]
            return ProducerLoad(p, tuple(ana.simplify(_op.sub(i, m))
                                         for i, m in list(zip(idx, mins))[skip:]))

    def lift(e):
        return _Selects().visit(Rename().visit(substitute(e, vmap)))

    def norm(e):
        return ana.simplify(lift(e))

    iop = intrin.op
    if len(body) != len(iop.body):
        raise _Mismatch(f"{where}: stage {st.name} has {len(body)} outputs, the intrinsic {len(iop.body)}")
    scalars = {}
    if intrin.scalar_params:
        from .intrin_scalars import find_values
        scalars = find_values(intrin, [lift(b) for b in body], ana, where)
    for mine, theirs in zip(body, [substitute(b, scalars) for b in iop.body]):
        if isinstance(mine, Reduce) != isinstance(theirs, Reduce):
            raise _Mismatch(f"{where}: one of stage {st.name} and the intrinsic is a reduction, "
                            "the other is not")
        if isinstance(mine, Reduce):
            cm, ct = mine.combiner, theirs.combiner
            swap = dict(zip(ct.lhs, cm.lhs)) | dict(zip(ct.rhs, cm.rhs))
            same = len(cm.result) == len(ct.result) and all(
                ana.can_prove_equal(a, substitute(b, swap)) for a, b in zip(cm.result, ct.result)) \
                and all(ana.can_prove_equal(a, b) for a, b in zip(cm.identity_element, ct.identity_element))
            if not same:
                raise _Mismatch(f"{where}: the reductions combine differently")
            pairs = [(norm(a), ana.simplify(_Selects().visit(b))) for a, b in zip(mine.source, theirs.source)]
            pairs.append((norm(mine.condition), ana.simplify(theirs.condition)))
        else:
            pairs = [(norm(mine), ana.simplify(_Selects().visit(theirs)))]
        for a, b in pairs:
            if a.dtype != b.dtype or not ana.can_prove_equal(a, b):
                raise _Mismatch(f"{where}: over the tile, stage {st.name} computes {a}; the intrinsic "
                                f"computes {b}")
    return scalars


# ------------------------------------------------------------------ ScheduleOps


class BufferBind(tuple):
    """``(buffer, tensor)``, the node of a ``buffer_bind_scope``; prints as ``buffer -> tensor``."""

    def __new__(cls, buf, tensor):
        return super().__new__(cls, (buf, tensor))

    def __repr__(self):
        return f"{self[0].name} -> {self[1].name}"


def bind(stmt, tiles):
    """``stmt`` inside one ``buffer_bind_scope`` per (buffer, tensor, ranges) tile."""
    for buf, t, rng in reversed(tiles):
        tup = Call("handle", "tvm_tuple", tuple(x for r in rng for x in (r.min, r.extent)))
        stmt = AttrStmt(BufferBind(buf, t), BIND_SCOPE, tup, stmt)
    return stmt


def outside_storage(sch, dom_map, ana, m, args):
    """Why a tile of ``m`` may lie outside its tensor's memory, or None when all provably lie inside.

    A tensor is in memory over its shape (an argument or an output) or over
    the region its stage realizes (an intermediate).
    """
    for _, t, rng in m.inputs + m.outputs:
        st = sch.stage_map.get(t.op)
        if st is not None and not st.is_placeholder and t not in args and not st.is_output:
            mem = [dom_map[iv] for iv in st.op.axis]
        else:
            mem = [Range(IntImm("int32", 0), d) for d in t.shape]
        for d, (r, s) in enumerate(zip(rng, mem)):
            if not (_within(ana, r, s, dom_map) or (ana.can_prove(_op.ge(r.min, s.min)) and
                    ana.can_prove(_op.le(_op.add(r.min, r.extent), _op.add(s.min, s.extent))))):
                return (f"the tile of {t.name} (dimension {d}: {r.min} + {r.extent}) may lie outside "
                        f"its memory ({s.min} + {s.extent})")
    return None


def _within(ana, r, s, dom_map):
    """A part of a fused loop, of extent 1, inside ``[0, n)``: ``x % n``, or ``x // y`` where ``x``
    runs over ``[0, n * y)`` (symbolic divisors the analyzer cannot bound; when they are not
    positive the loop runs no iteration)."""
    from ..ir.expr import FloorDiv, FloorMod
    m = ana.simplify(r.min)
    if not (ana.can_prove_equal(r.extent, 1) and ana.can_prove_equal(s.min, 0)):
        return False
    if isinstance(m, FloorMod):
        return ana.can_prove_equal(m.b, s.extent)
    if isinstance(m, FloorDiv) and isinstance(m.a, Var):
        ext = next((rg.extent for iv, rg in dom_map.items() if iv.var is m.a and _is_zero(rg.min)), None)
        return ext is not None and ana.can_prove_equal(ext, _op.mul(s.extent, m.b))
    return False


def _is_zero(e):
    return isinstance(e, IntImm) and e.value == 0


def tensorized_leaf(st):
    for k, iv in enumerate(st.leaf_iter_vars):
        if st.attr(iv).kind == "tensorized":
            return k
    return None


def make_nest(b, st):
    """AST2 of a tensorized stage (``b`` is ScheduleOps' builder)."""
    from .passes import leaf_values, pass_up_index
    leaves = st.leaf_iter_vars
    t = tensorized_leaf(st)
    intrin = st.attr(leaves[t]).tensor_intrin
    inner = leaves[t:]
    values = pass_up_index(st, b.dom_map, leaf_values(st))
    guards = b._guards(st, values)
    # as for untensorized stages: a guard covers the stage's own stores, not the producers attached
    # in its loops (threads of a block fill a shared tile together, barriers included)
    last_attach = max((k for k, iv in enumerate(leaves[:t]) if b.attached.get(iv)), default=-1)
    guards = [(c, d if d >= t else max(d, last_attach)) for c, d in guards]
    pos = {iv.var: k for k, iv in enumerate(leaves)}
    where = f"tensorize of {st.name} at {leaves[t].var.name}"
    if st.store_predicate is not None:
        raise LoweringError(f"{where}: the stage has a store predicate; the intrinsic writes whole tiles")
    for iv in inner:
        if b.attached.get(iv):
            raise LoweringError(f"{where}: stage {b.attached[iv][0].name} is computed inside the tile")
        if iv is not leaves[t] and st.attr(iv).kind != "serial":
            raise LoweringError(f"{where}: axis {iv.var.name} inside the tile is {st.attr(iv).kind}; the "
                                "intrinsic replaces those loops")
    try:
        m = match(st, intrin, b.bodies[st], values, b.dom_map, inner, b.ana)
    except _Mismatch as e:
        raise LoweringError(str(e)) from None
    from .intrin_scalars import with_values
    intrin = with_values(intrin, m.scalars, b.ana)     # the kernel's statements get the call's values
    if any(d >= t for _, d in guards):
        reason = outside_storage(b.sch, b.dom_map, b.ana, m, b.args)
        if reason:
            raise LoweringError(f"{where}: a split inside the tile does not divide its axis, and {reason}; "
                                "choose factors that divide the extents or pad the tensors")
        guards = [(c, d) for c, d in guards if d < t]   # whole tiles in storage: the extra work is unused
    return emit(b, st, intrin, m, t, guards, pos, where)


def emit(b, st, intrin, m, t, guards, pos, where, prepare=None):
    """The loops ``leaves[:t]`` of stage ``st`` around the intrinsic's statements, each bound to
    the tiles of ``m``: the body when the tile holds the whole reduction, else the reset once per
    output tile and the update (or, without a reset, the body at the first reduction step).
    ``prepare`` rewrites each statement first (a call's scalar values)."""
    leaves = st.leaf_iter_vars

    def stmt(x):
        return prepare(x) if prepare is not None and x is not None else x
    first_red = next((k for k, iv in enumerate(leaves) if iv.iter_type == IterVar.REDUCE), len(leaves))
    if first_red >= t:
        if intrin.body is None:
            raise LoweringError(f"{where}: the tile holds the whole reduction but {intrin.name!r} has "
                                "no body (it gave only reduce_reset and reduce_update)")
        return b._wrap(st, 0, t, bind(stmt(intrin.body), m.inputs + m.outputs), guards, pos)
    if intrin.reduce_update is None or (intrin.reduce_init is None and intrin.body is None):
        raise LoweringError(f"{where}: reduction axis {leaves[first_red].var.name} is outside the tile, "
                            f"so {intrin.name!r} must give (body, reduce_reset, reduce_update) (a body "
                            "without reset is used for the first step)")
    update = bind(stmt(intrin.reduce_update), m.inputs + m.outputs)
    if intrin.reduce_init is None:
        # TVM's rule without a reset: the first step of the outer reduction runs the body
        # (which writes the tile), the others the update.
        firsts = [_op.eq(iv.var, b.dom_map[iv].min) for iv in leaves[first_red:t]
                  if iv.iter_type == IterVar.REDUCE]
        update = IfThenElse(_op.all(*firsts), bind(stmt(intrin.body), m.inputs + m.outputs), update)
        inner_stmt = b._wrap(st, first_red, t, update, [(c, d) for c, d in guards if d >= first_red], pos,
                             outer_guards=False)
        return b._wrap(st, 0, first_red, inner_stmt, [(c, d) for c, d in guards if d < first_red], pos)
    inner_stmt = b._wrap(st, first_red, t, update, [(c, d) for c, d in guards if d >= first_red], pos,
                         outer_guards=False)
    # The reset runs once per output tile: over the data-parallel loops between the
    # first reduction loop and the tile, with fresh variables.
    fresh, loops = {}, []
    for iv in leaves[first_red:t]:
        if iv.iter_type != IterVar.REDUCE:
            nv = Var(iv.var.name + ".init", iv.var.dtype)
            fresh[iv.var] = nv
            loops.append((iv, nv))
    outs = [(buf, tn, [Range(substitute(r.min, fresh), r.extent) for r in rng])
            for buf, tn, rng in m.outputs]
    init = bind(substitute(stmt(intrin.reduce_init), fresh), outs)
    for iv, nv in reversed(loops):
        init = b._loop(st, iv, nv, b.dom_map[iv], init)
    outer = [(c, d) for c, d in guards if d < first_red]
    return b._wrap(st, 0, first_red, seq(init, inner_stmt), outer, pos)


def check(st, iv, intrin):
    """At ``s[C].tensorize`` time: the match ScheduleOps will make, as a ScheduleError."""
    from .bound import effective_bodies, infer_bound
    from .passes import leaf_values, pass_up_index
    from ..ir.arith import Analyzer
    sch = st.schedule
    try:
        bodies = effective_bodies(sch)
        dom_map = infer_bound(sch, bodies)
    except LoweringError:
        return      # the schedule is not lowerable yet; ScheduleOps checks again
    ana = Analyzer()
    for k, r in dom_map.items():
        ana.bind(k.var, r)
    values = pass_up_index(st, dom_map, leaf_values(st))
    t = st.leaf_iter_vars.index(iv)
    inner = st.leaf_iter_vars[t:]
    from .schedule_ops import _Builder
    try:
        m = match(st, intrin, bodies[st], values, dom_map, inner, ana)
    except _Mismatch as e:
        raise ScheduleError(str(e)) from None
    if any(d >= t for _, d in _Builder(sch, dom_map, bodies, ())._guards(st, values)):
        reason = outside_storage(sch, dom_map, ana, m, set())
        if reason:
            raise ScheduleError(f"tensorize of {st.name} at {iv.var.name}: a split inside the tile does not "
                                f"divide its axis, and {reason}; choose factors that divide the extents "
                                "or pad the tensors")


def apply(st, var, intrin):
    """``s[C].tensorize(var, intrin)``."""
    from dataclasses import replace
    with st._txn():
        st._check_compute("tensorize")
        st._check_not_inlined("tensorize")
        iv = st.axis(var, "tensorize axis")
        if not isinstance(intrin, TensorIntrin):
            raise ScheduleError(f"tensorize of {st.name}.{iv.var.name}: expected an intrinsic from "
                                f"te.decl_tensor_intrin, got {intrin!r}")
        if st.store_predicate is not None:
            raise ScheduleError(f"tensorize of {st.name}.{iv.var.name}: the stage has a store predicate; "
                                "the intrinsic writes whole tiles")
        prev = tensorized_leaf(st)
        if prev is not None and st.leaf_iter_vars[prev] is not iv:     # the same axis again: the new one wins
            raise ScheduleError(f"tensorize of {st.name}.{iv.var.name}: the stage is already tensorized at "
                                f"{st.leaf_iter_vars[prev].var.name}")
        k = st.leaf_iter_vars.index(iv)
        for x in st.leaf_iter_vars[k:]:
            a = st.attr(x)
            if a.kind != "serial" and not (x is iv and a.kind == "tensorized"):
                raise ScheduleError(f"tensorize of {st.name}.{iv.var.name}: axis {x.var.name} inside the "
                                    f"tile is already {a.kind}")
        for other in st.schedule.stages:
            if other.attach_stage is st and other.attach_ivar in st.leaf_iter_vars[k:]:
                raise ScheduleError(f"tensorize of {st.name}.{iv.var.name}: stage {other.name} is computed "
                                    f"at {other.attach_ivar.var.name}, inside the tile")
        check(st, iv, intrin)
        st.iter_var_attrs[iv] = replace(st.attr(iv), kind="tensorized", tensor_intrin=intrin)
        st._record("tensorize", axis=iv, intrin=intrin.name)
