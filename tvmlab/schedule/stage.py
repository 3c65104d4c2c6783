"""Stage: the schedule of one operation, and the per-stage primitives.

Each primitive checks everything first, then changes the stage, then records
one step in the schedule's trace; a failing primitive raises ScheduleError and
the schedule's transaction puts every stage back as it was.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

from ..errors import ScheduleError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.expr import IntImm, Var
from ..ir.tensor import ComputeOp, IterVar, PlaceholderOp, Range, Tensor, TensorComputeOp
from .relations import Fuse, Rebase, Singleton, Split

KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding", "tensorized")


@dataclass(frozen=True)
class IterVarAttr:
    """How a leaf axis runs: loop kind, bound thread, pragmas."""
    kind: str = "serial"
    bind_thread: object = None
    pragmas: tuple = ()
    tensor_intrin: object = None
    dim_align: tuple = ()               # (factor, offset) of storage_align
    prefetch: tuple = ()                # ((tensor, offset), ...) of prefetch

    # TVM's spelling of the same: iter_type codes, pragma keys and values
    @property
    def iter_type(self):
        from ..ir.tensor import IterVar as IV
        codes = {"unrolled": IV.Unrolled, "vectorized": IV.Vectorized,
                 "parallel": IV.Parallelized, "tensorized": IV.Tensorized}
        if self.tensor_intrin is not None:
            return IV.Tensorized
        return codes.get(self.kind, IV.DataPar)

    @property
    def pragma_keys(self):
        from ..ir.expr import StringImm
        return [StringImm(k) for k, _ in self.pragmas]

    @property
    def pragma_values(self):
        return [v for _, v in self.pragmas]


class AttachType(str):
    """Where a stage is computed: "root", "scope" or "inline"; it also equals TVM's integer
    code (1 group root, 2 inline, 4 scope), so TVM code comparing ``attach_type == 2`` works."""

    _CODES = {"root": 1, "inline": 2, "scope": 4}
    __hash__ = str.__hash__

    def __eq__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return self._CODES.get(str(self)) == other
        return str.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __int__(self):
        return self._CODES[str(self)]


def _wider(a, b):
    """The index dtype of an axis fused from axes of dtypes ``a`` and ``b``: the wider one."""
    return a if dt.bits(a) >= dt.bits(b) else b


class Stage:
    """The schedule of one operation (``s[C]``)."""

    @property
    def attach_type(self):
        return self._attach_type

    @attach_type.setter
    def attach_type(self, kind):
        self._attach_type = AttachType(kind)

    _STATE = ("op", "all_iter_vars", "leaf_iter_vars", "relations", "iter_var_attrs",
              "attach_type", "attach_ivar", "attach_stage", "scope", "is_output", "origin_op",
              "store_predicate", "double_buffer_scope", "rolling_buffer_scope", "group", "layout_order")

    def __init__(self, op, schedule):
        self.schedule = schedule
        self.op = op
        self.origin_op = op
        if isinstance(op, ComputeOp):
            roots = list(op.axis) + list(op.reduce_axis)
        else:
            roots = list(getattr(op, "root_iter_vars", ()))     # a scan's time and state axes
        self.all_iter_vars = list(roots)
        self.leaf_iter_vars = list(roots)
        self.relations = []
        self.iter_var_attrs = {}
        self.attach_type = "root"        # root | scope | inline
        self.attach_ivar = None
        self.attach_stage = None
        self.scope = ""
        self.is_output = False
        self.store_predicate = None
        self.double_buffer_scope = False
        self.rolling_buffer_scope = False
        self.group = None                # the create_group Group this stage belongs to
        self.layout_order = None         # transform_layout: the tensor's dimensions in storage order

    # ------------------------------------------------------------ state
    def _snapshot(self):
        out = {}
        for k in self._STATE:
            v = getattr(self, k)
            out[k] = v.copy() if isinstance(v, (list, dict)) else v
        return out

    def _restore(self, snap):
        for k, v in snap.items():
            setattr(self, k, v)

    @property
    def name(self):
        return self.op.name

    @property
    def is_placeholder(self):
        return isinstance(self.op, PlaceholderOp)

    @property
    def root_iter_vars(self):
        if isinstance(self.op, ComputeOp):
            return list(self.op.axis) + list(self.op.reduce_axis)
        return list(getattr(self.op, "root_iter_vars", ()))

    def __repr__(self):
        return f"stage({self.name}, {type(self.op).__name__})"

    def attr(self, iv):
        return self.iter_var_attrs.get(iv, IterVarAttr())

    # ------------------------------------------------------------ axis lookup
    def axis(self, ref, what="axis", leaf=True):
        """Resolve an IterVar, a Var or a printed name (``"i.inner"``) to this stage's axis."""
        if isinstance(ref, IterVar):
            pool = self.leaf_iter_vars if leaf else self.all_iter_vars
            for iv in pool:
                if iv is ref:
                    return iv
            for iv in pool:
                if iv.var is ref.var:
                    return iv       # a copy keeping the variable (rfactor's other reduce axes)
            if ref in self.all_iter_vars:
                raise ScheduleError(
                    f"stage {self.name}: {what} {ref.var.name} is no longer a leaf axis "
                    f"(it was split or fused); leaf axes are {self._leaf_names()}")
            if isinstance(self.op, TensorComputeOp) and ref in self.op.axis:
                raise ScheduleError(f"stage {self.name}: {what} {ref.var.name} is inside the tile of tensor "
                                    f"intrinsic {self.op.intrin.name}; only its first "
                                    f"{self.op.schedulable_ndim} axes (and its reduce axes) are loops")
            owner = self.schedule._owner_of(ref) if self.schedule is not None else None
            if owner is not None and owner is not self:
                raise ScheduleError(f"stage {self.name}: {what} {ref.var.name} belongs to stage "
                                    f"{owner.name}, not {self.name}")
            raise ScheduleError(f"stage {self.name}: {what} {ref.var.name} is not an axis of "
                                f"this stage; leaf axes are {self._leaf_names()}")
        if isinstance(ref, Var):
            for iv in self.all_iter_vars:
                if iv.var is ref:
                    return self.axis(iv, what, leaf)
        if isinstance(ref, str):
            pool = self.leaf_iter_vars if leaf else self.all_iter_vars
            for iv in pool:
                if iv.var.name == ref:
                    return iv
            for iv in self.all_iter_vars:
                if iv.var.name == ref:
                    return self.axis(iv, what, leaf)
            raise ScheduleError(f"stage {self.name} has no {what} named {ref!r}; "
                                f"leaf axes are {self._leaf_names()}")
        raise ScheduleError(f"stage {self.name}: {what} must be an IterVar or an axis name, "
                            f"got {type(ref).__name__}: {ref!r}")

    def _leaf_names(self):
        return "[" + ", ".join(iv.var.name for iv in self.leaf_iter_vars) + "]"

    def _check_compute(self, prim):
        if isinstance(self.op, TensorComputeOp):
            if prim in ("compute_inline", "set_store_predicate", "opengl", "prefetch", "tensorize"):
                raise ScheduleError(f"{prim}: stage {self.name} is computed by tensor intrinsic "
                                    f"{self.op.intrin.name} (te.compute over an intrinsic call); its loops "
                                    "call the intrinsic on whole tiles and have no element-wise body for "
                                    + prim)
            return
        if not isinstance(self.op, ComputeOp) and not self.is_placeholder:
            if prim in ("compute_at", "compute_root"):
                return                   # an extern, scan or hybrid stage is placed like any other
            from .hybrid_ops import PRIMITIVES, is_hybrid
            if is_hybrid(self.op):
                if prim in PRIMITIVES:
                    return               # its loops are axes (schedule/hybrid_ops.py)
                raise ScheduleError(f"{prim}: stage {self.name} is a hybrid script; its loops can be split, "
                                    "fused, reordered, bound and annotated, but not " + prim)
            raise ScheduleError(f"{prim}: stage {self.name} is a {type(self.op).__name__} (te.extern / te.scan); "
                                "its loops are its own: only compute_at and compute_root apply to it")
        if not isinstance(self.op, ComputeOp):
            raise ScheduleError(f"{prim}: stage {self.name} is a placeholder (an input); "
                                "only computed stages can be scheduled")

    def _check_not_inlined(self, prim):
        if self.attach_type == "inline":
            raise ScheduleError(f"{prim}: stage {self.name} is inlined; call "
                                f"s[{self.name}].compute_root() first to give it loops again")

    def _new_iv(self, name, iter_type, dtype="int32"):
        """A new axis; split and fuse give it the index dtype of the axes it comes from (int64 stays int64)."""
        name = self._unique_name(name)
        return IterVar(None, Var(name, dtype), iter_type)

    def _unique_name(self, name):
        used = {iv.var.name for iv in self.all_iter_vars}
        if name not in used:
            return name
        k = 1
        while f"{name}{k}" in used:
            k += 1
        return f"{name}{k}"

    def _record(self, primitive, **args):
        if self.schedule is not None:
            self.schedule.trace._add(primitive, self, args)

    def _txn(self):
        return self.schedule._transaction()

    # ------------------------------------------------------------ primitives
    def split(self, parent, factor=None, nparts=None):
        """Split ``parent`` into (outer, inner) with ``factor`` inner or ``nparts`` outer iterations."""
        with self._txn():
            self._check_compute("split")
            self._check_not_inlined("split")
            parent = self.axis(parent, "split axis")
            if (factor is None) == (nparts is None):
                raise ScheduleError(f"split of {self.name}.{parent.var.name}: give exactly one of "
                                    f"factor= or nparts= (got factor={factor}, nparts={nparts})")
            amount = _positive(factor if factor is not None else nparts,
                               f"split of {self.name}.{parent.var.name}: "
                               f"{'factor' if factor is not None else 'nparts'}")
            if self.attr(parent).kind != "serial":
                raise ScheduleError(f"split of {self.name}.{parent.var.name}: the axis is already "
                                    f"{self.attr(parent).kind}; split before marking it")
            outer = self._new_iv(parent.var.name + ".outer", parent.iter_type, parent.var.dtype)
            inner = self._new_iv(parent.var.name + ".inner", parent.iter_type, parent.var.dtype)
            rel = Split(parent, outer, inner, amount if factor is not None else None,
                        amount if nparts is not None else None)
            self.relations.append(rel)
            self.all_iter_vars += [outer, inner]
            k = self.leaf_iter_vars.index(parent)
            self.leaf_iter_vars[k:k + 1] = [outer, inner]
            self._move_attached([parent], inner)
            if factor is not None:
                self._record("split", axis=parent, factor=factor)
            else:
                self._record("split", axis=parent, nparts=nparts)
            return outer, inner

    def fuse(self, *args):
        """Fuse consecutive leaf axes (outer to inner) into one axis."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        with self._txn():
            self._check_compute("fuse")
            self._check_not_inlined("fuse")
            if not args:
                iv = self._new_iv("singleton", IterVar.DATA_PAR)
                self.relations.append(Singleton(iv))
                self.all_iter_vars.append(iv)
                self.leaf_iter_vars.insert(0, iv)
                self._record("fuse", axes=[])
                return iv
            axes = [self.axis(a, "fuse axis") for a in args]
            if len(set(map(id, axes))) != len(axes):
                raise ScheduleError(f"fuse in stage {self.name}: an axis is repeated")
            pos = [self.leaf_iter_vars.index(a) for a in axes]
            if pos != list(range(pos[0], pos[0] + len(pos))):
                raise ScheduleError(
                    f"fuse in stage {self.name}: axes {[a.var.name for a in axes]} must be "
                    f"consecutive leaf axes from outer to inner; leaf order is {self._leaf_names()}")
            # As in TVM, a data-parallel axis may be fused with a reduction axis;
            # the fused axis is a reduction axis (ScheduleOps initialises the
            # output over its whole range before the reduction).
            types = {a.iter_type for a in axes}
            mixed_type = IterVar.REDUCE if IterVar.REDUCE in types else None
            for a in axes:
                if self.attr(a).kind != "serial":
                    raise ScheduleError(f"fuse in stage {self.name}: axis {a.var.name} is already "
                                        f"{self.attr(a).kind}")
            cur = axes[0]
            for nxt in axes[1:]:
                fused = self._new_iv(f"{cur.var.name}.{nxt.var.name}.fused",
                                     mixed_type or cur.iter_type, _wider(cur.var.dtype, nxt.var.dtype))
                self.relations.append(Fuse(cur, nxt, fused))
                self.all_iter_vars.append(fused)
                k = self.leaf_iter_vars.index(cur)
                self.leaf_iter_vars[k:k + 2] = [fused]
                self._move_attached([cur, nxt], fused)
                cur = fused
            self._record("fuse", axes=list(axes))
            return cur

    def _move_attached(self, axes, to):
        """Stages (and groups) computed at one of ``axes``, which a split or fuse replaces, are now
        computed at ``to``: the inner part of a split, the fused axis (TVM legalizes such an
        attachment the same way when it lowers)."""
        for st in list(self.schedule.stages) + list(self.schedule.groups):
            if st.attach_type == "scope" and st.attach_stage is self and st.attach_ivar in axes:
                st.attach_ivar = to

    def reorder(self, *args):
        """Put the given leaf axes in this order (others keep their places)."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        with self._txn():
            self._check_compute("reorder")
            self._check_not_inlined("reorder")
            axes = [self.axis(a, "reorder axis") for a in args]
            if len(set(map(id, axes))) != len(axes):
                names = [a.var.name for a in axes]
                dup = sorted({n for n in names if names.count(n) > 1})
                raise ScheduleError(f"reorder in stage {self.name}: axis {', '.join(dup)} given "
                                    "more than once")
            pos = sorted(self.leaf_iter_vars.index(a) for a in axes)
            for p, a in zip(pos, axes):
                self.leaf_iter_vars[p] = a
            self._record("reorder", axes=list(axes))

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """Split two axes and reorder to (x.outer, y.outer, x.inner, y.inner)."""
        with self._txn():
            x_parent, y_parent = self.axis(x_parent, "tile axis"), self.axis(y_parent, "tile axis")
            xo, xi = self.split(x_parent, factor=x_factor)
            yo, yi = self.split(y_parent, factor=y_factor)
            self.reorder(xo, yo, xi, yi)
            self._record("tile", x_parent=x_parent, y_parent=y_parent, x_factor=x_factor,
                         y_factor=y_factor)
            return xo, yo, xi, yi

    def _set_kind(self, iv, kind, prim):
        with self._txn():
            self._check_compute(prim)
            self._check_not_inlined(prim)
            iv = self.axis(iv, f"{prim} axis")
            cur = self.attr(iv)
            if cur.kind not in ("serial", kind):
                raise ScheduleError(f"{prim} of {self.name}.{iv.var.name}: the axis is already "
                                    f"{cur.kind}")
            if kind == "parallel" and iv.iter_type == IterVar.REDUCE:
                raise ScheduleError(f"parallel of {self.name}.{iv.var.name}: it is a reduction "
                                    "axis; parallel updates would race (use rfactor first)")
            if kind == "vectorized" and iv.iter_type == IterVar.REDUCE:
                raise ScheduleError(f"vectorize of {self.name}.{iv.var.name}: it is a reduction "
                                    "axis; vectorize a data-parallel axis or rfactor first")
            self.iter_var_attrs[iv] = replace(cur, kind=kind)
            self._record(prim, axis=iv)

    def vectorize(self, var):
        """Run this axis as SIMD lanes (its extent must be a constant)."""
        self._set_kind(var, "vectorized", "vectorize")

    def unroll(self, var):
        """Unroll this axis completely (its extent must be a constant)."""
        self._set_kind(var, "unrolled", "unroll")

    def parallel(self, var):
        """Run the iterations of this axis on several CPU threads."""
        self._set_kind(var, "parallel", "parallel")

    def bind(self, ivar, thread_ivar):
        """Bind an axis to a GPU thread index (``te.thread_axis("threadIdx.x")``)."""
        with self._txn():
            self._check_compute("bind")
            self._check_not_inlined("bind")
            ivar = self.axis(ivar, "bind axis")
            if not isinstance(thread_ivar, IterVar) or thread_ivar.iter_type != IterVar.THREAD:
                raise ScheduleError(f"bind of {self.name}.{ivar.var.name}: expected a thread axis "
                                    f"from te.thread_axis(...), got {thread_ivar!r}")
            cur = self.attr(ivar)
            # binding an axis again to the same kind of thread replaces the binding, as in TVM (a
            # test binding once per target it builds for); another kind of thread is a mistake
            rebind = cur.bind_thread is not None and cur.bind_thread.thread_tag == thread_ivar.thread_tag
            if cur.kind != "serial" and not rebind:
                what = (f"bound to {cur.bind_thread.thread_tag}" if cur.bind_thread is not None
                        else cur.kind)
                raise ScheduleError(f"bind of {self.name}.{ivar.var.name}: the axis is already {what}")
            for iv, a in self.iter_var_attrs.items():
                if iv is not ivar and a.bind_thread is not None and a.bind_thread.thread_tag == \
                        thread_ivar.thread_tag and thread_ivar.thread_tag != "vthread":
                    raise ScheduleError(f"bind of {self.name}.{ivar.var.name}: "
                                        f"{thread_ivar.thread_tag} is already bound to axis "
                                        f"{iv.var.name} of this stage")
            self.iter_var_attrs[ivar] = replace(cur, kind="thread_binding", bind_thread=thread_ivar)
            self._record("bind", axis=ivar, thread=thread_ivar)

    def pragma(self, var, pragma_type, pragma_value=None):
        """Annotate an axis: ``"unroll"``, ``"auto_unroll_max_step"``, ``"unroll_explicit"``, ..."""
        with self._txn():
            self._check_compute("pragma")
            iv = self.axis(var, "pragma axis")
            if not isinstance(pragma_type, str) or not pragma_type:
                raise ScheduleError(f"pragma of {self.name}.{iv.var.name}: pragma_type must be a "
                                    f"non-empty string, got {pragma_type!r}")
            delegate = {"unroll": self.unroll, "vectorize": self.vectorize,
                        "parallel": self.parallel, "parallel_launch_point": self.parallel}
            if pragma_type in delegate:
                delegate[pragma_type](iv)
                self._record("pragma", axis=iv, pragma_type=pragma_type, pragma_value=pragma_value)
                return
            if pragma_type in ("auto_unroll_max_step", "auto_unroll_max_extent") and \
                    not isinstance(pragma_value, numbers.Integral):
                raise ScheduleError(f"pragma {pragma_type} of {self.name}.{iv.var.name} needs an "
                                    f"integer value, got {pragma_value!r}")
            cur = self.attr(iv)
            prs = tuple(p for p in cur.pragmas if p[0] != pragma_type) + ((pragma_type, pragma_value),)
            self.iter_var_attrs[iv] = replace(cur, pragmas=prs)
            self._record("pragma", axis=iv, pragma_type=pragma_type, pragma_value=pragma_value)

    def storage_align(self, axis, factor, offset):
        """Pad the stride of ``axis``'s dimension in storage to ``k * factor + offset``.

        Used to shift rows of a shared-memory tile across banks.
        """
        from .storage import storage_align
        storage_align(self, axis, factor, offset)

    def transform_layout(self, mapping_function):
        """Store this stage's tensor with its dimensions in another order (TVM's ``transform_layout`` for
        the mappings that permute the axes): ``s[B].transform_layout(lambda i, j: [j, i])`` keeps ``B``
        column by column.  Reads and writes keep their indices; only the storage changes.  The stage's
        loops then run in the new order (the new row-major traversal), which are returned; they may be
        reordered again (e.g. a shared-memory copy fetched in its source's order, stored transposed).

        Used to give a thread's values one aligned, vector-wide place in shared memory (see
        ``topi.cuda.conv2d``).  Call it before splitting or fusing the stage's axes."""
        from .storage import transform_layout
        return transform_layout(self, mapping_function)

    def double_buffer(self):
        """Keep two copies of this stage's buffer: compute the next tile while the current is read."""
        from .storage import double_buffer
        double_buffer(self)

    def rolling_buffer(self):
        """Make this stage's tile a circular buffer along the axis its consumer's loop slides:
        each iteration computes only the elements the previous one did not."""
        from .storage import rolling_buffer
        rolling_buffer(self)

    def prefetch(self, tensor, var, offset):
        """Prefetch the part of ``tensor`` that iteration ``var + offset`` reads, at each ``var``."""
        from .storage import prefetch
        prefetch(self, tensor, var, offset)

    def tensorize(self, var, tensor_intrin):
        """Compute the loops from ``var`` inward with ``tensor_intrin`` (te.decl_tensor_intrin)."""
        from .tensorize import apply
        apply(self, var, tensor_intrin)

    def compute_at(self, parent, scope):
        """Compute this stage inside loop ``scope`` of its consumer stage ``parent``."""
        with self._txn():
            self._check_compute("compute_at")
            sch = self.schedule
            if not isinstance(parent, Stage):
                if isinstance(parent, Tensor):
                    parent = sch[parent]
                else:
                    raise ScheduleError(f"compute_at of {self.name}: parent must be a stage "
                                        f"(s[C]), got {parent!r}")
            if parent.schedule is not sch:
                raise ScheduleError(f"compute_at of {self.name}: stage {parent.name} belongs to "
                                    "another schedule")
            if parent is self:
                raise ScheduleError(f"compute_at of {self.name}: cannot attach a stage to itself")
            if self.is_output:
                raise ScheduleError(f"compute_at of {self.name}: it is an output of the schedule; "
                                    "outputs are computed at the root")
            if parent.attach_type == "inline":
                raise ScheduleError(f"compute_at of {self.name}: stage {parent.name} is inlined "
                                    "and has no loops")
            scope = parent.axis(scope, "compute_at scope")
            from .hybrid_ops import is_hybrid
            if is_hybrid(parent.op):
                raise ScheduleError(f"compute_at of {self.name}: stage {parent.name} is a hybrid script, whose loops "
                                    "hold only its own statements; compute it at the root")
            if not sch._reads_transitively(parent, self):
                readers = [s.name for s in sch._consumers(self)]
                raise ScheduleError(f"compute_at of {self.name}: stage {parent.name} does not read "
                                    f"{self.name}, directly or through other stages (its consumers "
                                    f"are {readers})")
            # As in TVM, other readers may still be attached inside parent's loop
            # (the cache_read shared -> local chain) or inlined later; lowering
            # checks that they are (attach.check_attachments).
            outs = [s for s in sch._consumers(self) if s is not parent and s.is_output]
            if outs:
                raise ScheduleError(
                    f"compute_at of {self.name}: it is also read by output {outs[0].name}, which "
                    f"is computed at the root, outside {parent.name}'s loop")
            a = parent
            while a is not None:
                if a is self:
                    raise ScheduleError(f"compute_at of {self.name}: {parent.name} is attached "
                                        f"inside {self.name} (a cycle)")
                a = a.attach_stage
            self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, scope
            self._record("compute_at", parent=parent, scope=scope)

    def compute_inline(self):
        """Substitute this stage's expression into its consumers (no storage, no loops)."""
        with self._txn():
            self._check_compute("compute_inline")
            if self.is_output:
                raise ScheduleError(f"compute_inline of {self.name}: it is an output of the "
                                    "schedule and must be stored")
            if self.op.is_reduction:
                raise ScheduleError(f"compute_inline of {self.name}: a reduction cannot be inlined")
            if self.store_predicate is not None:
                raise ScheduleError(f"compute_inline of {self.name}: it has a store predicate, and an inlined "
                                    "stage stores nothing")
            for st in self.schedule.stages:
                if st.attach_stage is self:
                    raise ScheduleError(f"compute_inline of {self.name}: stage {st.name} is "
                                        "computed at one of its axes")
            self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None
            self._record("compute_inline")

    def compute_root(self):
        """Compute this stage at the root, before its consumers."""
        with self._txn():
            self._check_compute("compute_root")
            self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None
            self._record("compute_root")

    def set_scope(self, scope):
        """Storage scope of this stage's tensor: "global", "shared" or "local"."""
        with self._txn():
            from .scope import check_scope
            check_scope(f"set_scope of {self.name}", scope)
            self.scope = scope
            self._record("set_scope", scope=scope)

    def set_store_predicate(self, predicate):
        """Store this stage's results only where ``predicate`` holds.

        TVM's idiom after a cross-thread reduction is
        ``s[B].set_store_predicate(tx.var.equal(0))``: one thread writes the
        total.  A serial stage skips its stores (init and update) where the
        predicate is false, leaving those elements untouched.
        """
        from . import predicate as P
        with self._txn():
            self._check_compute("set_store_predicate")
            self._check_not_inlined("set_store_predicate")
            if self._is_opengl():
                raise ScheduleError(f"set_store_predicate of {self.name}: an OpenGL fragment pass writes every "
                                    "pixel; use target 'opengl -compute' for stores under a predicate")
            e = P.check(self, predicate)
            self.store_predicate = e
            self._record("set_store_predicate", predicate={"expr": P.encode(e, self)})

    def _is_opengl(self):
        return any(dict(a.pragmas).get("opengl") for a in self.iter_var_attrs.values() if a.pragmas)

    def opengl(self):
        """The default OpenGL schedule: one output pixel per element.

        Fuses the stage's data-parallel axes (in their original order, so the
        fused index is the output's flat index) and marks the fused axis with
        pragma "opengl"; the "opengl" target runs each such stage as one
        fragment-shader pass, with reduction loops inside each pixel.  Other
        targets see an ordinary serial loop.  Returns the fused axis.
        """
        with self._txn():
            self._check_compute("opengl")
            self._check_not_inlined("opengl")
            if self.attach_type == "scope":
                raise ScheduleError(f"opengl of {self.name}: it is computed at "
                                    f"{self.attach_stage.name}.{self.attach_ivar.var.name}; each "
                                    "OpenGL stage is its own pass, call compute_root() first")
            leaves = self.leaf_iter_vars
            data = [iv for iv in leaves if iv.iter_type == IterVar.DATA_PAR]
            if self._is_opengl():
                raise ScheduleError(f"opengl of {self.name}: the stage is already scheduled for OpenGL")
            if self.store_predicate is not None:
                raise ScheduleError(f"opengl of {self.name}: the stage has a store predicate, and a fragment "
                                    "pass writes every pixel; use target 'opengl -compute' instead")
            if data != list(self.op.axis):
                raise ScheduleError(
                    f"opengl of {self.name}: its data-parallel axes were split, fused or reordered "
                    f"(leaf axes {self._leaf_names()}); opengl() fuses the original axes "
                    f"{[iv.var.name for iv in self.op.axis]} and must come before such primitives")
            if data and leaves.index(data[-1]) != len(data) - 1:
                raise ScheduleError(f"opengl of {self.name}: reduction axes must come after the "
                                    f"data-parallel axes (leaf axes {self._leaf_names()})")
            for iv in data:
                if self.attr(iv).kind != "serial":
                    raise ScheduleError(f"opengl of {self.name}: axis {iv.var.name} is already "
                                        f"{self.attr(iv).kind}")
            fused = self.fuse(*data) if data else self.fuse()
            cur = self.attr(fused)
            self.iter_var_attrs[fused] = replace(cur, pragmas=cur.pragmas + (("opengl", 1),))
            self._record("opengl")
            return fused


def _positive(v, what):
    if isinstance(v, bool):
        raise ScheduleError(f"{what} must be a positive integer, got {v!r}")
    if isinstance(v, numbers.Integral):
        if v <= 0:
            raise ScheduleError(f"{what} must be a positive integer, got {v}")
        return _op.const(int(v), "int32")
    if isinstance(v, IntImm):
        if v.value <= 0:
            raise ScheduleError(f"{what} must be a positive integer, got {v.value}")
        return v
    try:
        e = _op.convert(v)
    except Exception:
        raise ScheduleError(f"{what} must be a positive integer, got {v!r}") from None
    from ..ir import dtype as dt
    if not dt.is_int(e.dtype):
        raise ScheduleError(f"{what} must be an integer, got {e} of type {e.dtype}")
    return e


__all__ = ["Stage", "IterVarAttr", "Range", "Split", "Fuse", "Rebase", "Singleton"]
