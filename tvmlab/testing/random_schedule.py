"""Random legal schedules for the fuzzer: a random sequence of primitives on a schedule.

``Scheduler(s, rng).run(n)`` applies up to ``n`` primitives chosen among those
that can apply (split, fuse, reorder, tile, vectorize, unroll, parallel,
compute_at / inline / root, cache_read / cache_write, rfactor, ...), plus a few
deliberately illegal calls that must raise ScheduleError and leave
``snapshot(s)`` unchanged.
"""
from __future__ import annotations

import math
import traceback

import numpy as np

from ..errors import ScheduleError
from ..ir.tensor import ComputeOp, IterVar

VECTOR_MAX = 32
UNROLL_MAX = 64


class Failure(Exception):
    """A program the compiler got wrong; ``phase`` says where."""

    def __init__(self, phase, message):
        super().__init__(f"[{phase}] {message}")
        self.phase, self.message = phase, message


# ---------------------------------------------------------------- schedule state

def snapshot(s):
    """Everything a failed primitive must leave untouched."""
    out = [len(s.trace), len(s.stages)]
    for st in s.stages:
        attrs = sorted((iv.var.name, a.kind, a.pragmas) for iv, a in st.iter_var_attrs.items())
        out.append((s.stage_key(st), id(st.op), tuple(iv.var.name for iv in st.leaf_iter_vars),
                    tuple(attrs), st.attach_type,
                    s.stage_key(st.attach_stage) if st.attach_stage is not None else None,
                    st.attach_ivar.var.name if st.attach_ivar is not None else None,
                    st.scope, len(st.relations)))
    return out


def leaf_extents(st):
    """Upper bounds of the leaf extents, from the root extents and the relations."""
    from ..schedule.relations import Fuse, Rebase, Singleton, Split
    ext = {}
    for iv in st.root_iter_vars:
        e = getattr(iv.dom, "extent", None)
        ext[iv] = e.value if hasattr(e, "value") else None

    def val(x):
        return x.value if hasattr(x, "value") else (x if isinstance(x, int) else None)

    for rel in st.relations:
        if isinstance(rel, Split):
            p = ext.get(rel.parent)
            if rel.factor is not None:
                f = val(rel.factor)
                ext[rel.inner] = f
                ext[rel.outer] = -(-p // f) if p is not None and f else None
            else:
                n = val(rel.nparts)
                ext[rel.outer] = n
                ext[rel.inner] = -(-p // n) if p is not None and n else None
        elif isinstance(rel, Fuse):
            a, b = ext.get(rel.outer), ext.get(rel.inner)
            ext[rel.fused] = a * b if a is not None and b is not None else None
        elif isinstance(rel, Rebase):
            ext[rel.rebased] = ext.get(rel.parent)
        elif isinstance(rel, Singleton):
            ext[rel.iter] = 1
    return ext


def _reads(s, q, st):
    """True if stage ``q``'s op reads an output of stage ``st`` (by any of its ops)."""
    return isinstance(q.op, ComputeOp) and any(s.stage_map.get(t.op) is st
                                               for t in q.op.input_tensors)


def _readers(s, st):
    """Non-inlined stages reading ``st``'s outputs, directly or through inlined stages."""
    found = []
    for q in s.stages:
        if q is not st and _reads(s, q, st):
            if q.attach_type == "inline":
                found += [r for r in _readers(s, q) if r not in found]
            elif q not in found:
                found.append(q)
    return found


def _direct_readers(s, st):
    return [q for q in s.stages if q is not st and q.attach_type != "inline" and _reads(s, q, st)]


def _has_kind(st, kind):
    return any(a.kind == kind for a in st.iter_var_attrs.values())


def _attached_below(s, st):
    """Stages attached (transitively) at ``st``."""
    out = []
    for q in s.stages:
        a = q.attach_stage
        while a is not None:
            if a is st:
                out.append(q)
                break
            a = a.attach_stage
    return out


# ---------------------------------------------------------------- the scheduler

class Scheduler:
    """Applies random primitives to a schedule, checking the error contract as it goes."""

    def __init__(self, s, rng, log=None):
        self.s, self.rng = s, rng
        self.log = log if log is not None else []
        self.errors = 0

    def pick(self, seq):
        seq = list(seq)
        return seq[int(self.rng.integers(0, len(seq)))] if seq else None

    def chance(self, p):
        return self.rng.random() < p

    def computed(self):
        return [st for st in self.s.stages if isinstance(st.op, ComputeOp)]

    def active(self):
        return [st for st in self.computed() if st.attach_type != "inline"]

    def run(self, n_steps):
        actions = [(self.split, 5), (self.fuse, 2), (self.reorder, 2), (self.tile, 1.5),
                   (self.vectorize, 2.5), (self.unroll, 1.5), (self.parallel, 2),
                   (self.pragma, 0.7), (self.compute_at, 3.5), (self.compute_inline, 2),
                   (self.compute_root, 0.5), (self.cache_read, 1), (self.cache_write, 1),
                   (self.rfactor, 1.2), (self.normalize, 0.2), (self.illegal, 1)]
        fns = [a for a, _ in actions]
        w = np.array([x for _, x in actions], dtype=float)
        w /= w.sum()
        for _ in range(n_steps):
            fn = fns[int(self.rng.choice(len(fns), p=w))]
            call = fn()
            if call is None:
                continue
            what, thunk, must_fail = call
            self.apply(what, thunk, must_fail)

    def apply(self, what, thunk, must_fail=False):
        before = snapshot(self.s)
        try:
            thunk()
        except ScheduleError as e:
            self.errors += 1
            after = snapshot(self.s)
            if after != before:
                raise Failure("schedule", f"{what} raised ScheduleError ({e}) but changed the "
                                          f"schedule:\nbefore {before}\nafter  {after}")
            self.log.append(f"# {what}: ScheduleError: {e}")
            return
        except Failure:
            raise
        except Exception as e:
            raise Failure("schedule", f"{what} raised {type(e).__name__} instead of "
                                      f"ScheduleError: {e}\n{traceback.format_exc()}") from e
        if must_fail:
            raise Failure("schedule", f"{what} is illegal but raised no ScheduleError")
        self.log.append(what)

    # -------------------------------------------------------- primitives
    def split(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ax = self.pick([iv for iv in st.leaf_iter_vars if st.attr(iv).kind == "serial"])
        if ax is None:
            return None
        if self.chance(0.75):
            f = int(self.rng.integers(1, 17))
            return (f"s[{st.name}].split({ax.var.name}, factor={f})",
                    lambda: st.split(ax, factor=f), False)
        n = int(self.rng.integers(1, 9))
        return (f"s[{st.name}].split({ax.var.name}, nparts={n})",
                lambda: st.split(ax, nparts=n), False)

    def fuse(self):
        st = self.pick(self.active())
        if st is None or len(st.leaf_iter_vars) < 2:
            return None
        leaves = st.leaf_iter_vars
        k = int(self.rng.integers(0, len(leaves) - 1))
        n = 3 if self.chance(0.2) and k + 3 <= len(leaves) else 2
        axes = leaves[k:k + n]
        if len({iv.iter_type for iv in axes}) != 1 or any(st.attr(a).kind != "serial" for a in axes):
            return None
        if any(q.attach_stage is st and q.attach_ivar in axes for q in self.s.stages):
            return None
        return (f"s[{st.name}].fuse({', '.join(a.var.name for a in axes)})",
                lambda: st.fuse(*axes), False)

    def reorder(self):
        st = self.pick(self.active())
        if st is None or len(st.leaf_iter_vars) < 2:
            return None
        leaves = list(st.leaf_iter_vars)
        n = int(self.rng.integers(2, len(leaves) + 1))
        sub = [leaves[i] for i in sorted(self.rng.choice(len(leaves), n, replace=False))]
        perm = [sub[i] for i in self.rng.permutation(n)]
        return (f"s[{st.name}].reorder({', '.join(a.var.name for a in perm)})",
                lambda: st.reorder(*perm), False)

    def tile(self):
        st = self.pick(self.active())
        if st is None:
            return None
        leaves = [iv for iv in st.leaf_iter_vars if st.attr(iv).kind == "serial"]
        if len(leaves) < 2:
            return None
        k = int(self.rng.integers(0, len(leaves) - 1))
        x, y = (leaves[k], leaves[k + 1]) if self.chance(0.7) else \
            tuple(leaves[i] for i in self.rng.choice(len(leaves), 2, replace=False))
        xf, yf = int(self.rng.integers(1, 17)), int(self.rng.integers(1, 17))
        return (f"s[{st.name}].tile({x.var.name}, {y.var.name}, {xf}, {yf})",
                lambda: st.tile(x, y, xf, yf), False)

    def vectorize(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ext = leaf_extents(st)
        ax = st.leaf_iter_vars[-1] if self.chance(0.85) else self.pick(st.leaf_iter_vars)
        e = ext.get(ax)
        if ax.iter_type == IterVar.REDUCE or e is None or e > VECTOR_MAX or \
                st.attr(ax).kind != "serial":
            return None
        return (f"s[{st.name}].vectorize({ax.var.name})", lambda: st.vectorize(ax), False)

    def unroll(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ext = leaf_extents(st)
        ax = self.pick(st.leaf_iter_vars)
        e = ext.get(ax)
        done = math.prod(ext.get(iv) or 1 for iv, a in st.iter_var_attrs.items()
                         if a.kind in ("unrolled", "vectorized"))
        if e is None or e > 16 or done * e > UNROLL_MAX or st.attr(ax).kind != "serial":
            return None
        return (f"s[{st.name}].unroll({ax.var.name})", lambda: st.unroll(ax), False)

    def parallel(self):
        cands = [st for st in self.active() if st.attach_type == "root" and st.leaf_iter_vars
                 and not _has_kind(st, "parallel")
                 and not any(_has_kind(q, "parallel") for q in _attached_below(self.s, st))]
        st = self.pick(cands)
        if st is None:
            return None
        ax = st.leaf_iter_vars[0]
        if ax.iter_type == IterVar.REDUCE or st.attr(ax).kind != "serial":
            return None
        return (f"s[{st.name}].parallel({ax.var.name})", lambda: st.parallel(ax), False)

    def pragma(self):
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        ax = self.pick(st.leaf_iter_vars)
        v = int(self.pick([4, 8, 16, 32]))
        return (f"s[{st.name}].pragma({ax.var.name}, 'auto_unroll_max_step', {v})",
                lambda: st.pragma(ax, "auto_unroll_max_step", v), False)

    def compute_at(self):
        cands = [st for st in self.active() if not st.is_output and not _has_kind(st, "parallel")]
        st = self.pick(cands)
        if st is None:
            return None
        readers = _readers(self.s, st)
        if len(readers) != 1:
            return None
        parent = readers[0]
        if not parent.leaf_iter_vars:
            return None
        ax = self.pick(parent.leaf_iter_vars)
        if parent.attr(ax).kind == "vectorized" and not self.chance(0.2):
            return None
        return (f"s[{st.name}].compute_at(s[{parent.name}], {ax.var.name})",
                lambda: st.compute_at(parent, ax), False)

    def compute_inline(self):
        cands = [st for st in self.active() if not st.is_output and not st.op.is_reduction
                 and not any(q.attach_stage is st for q in self.s.stages)]
        st = self.pick(cands)
        if st is None:
            return None
        return (f"s[{st.name}].compute_inline()", st.compute_inline, False)

    def compute_root(self):
        st = self.pick([st for st in self.computed() if st.attach_type == "scope"])
        if st is None:
            return None
        return (f"s[{st.name}].compute_root()", st.compute_root, False)

    def cache_read(self):
        # a stage computed inside a reader's loop cannot also be read by a new root stage
        srcs = [st for st in self.s.stages if st.attach_type == "root" and
                _direct_readers(self.s, st)]
        st = self.pick(srcs)
        if st is None:
            return None
        reader = self.pick(_direct_readers(self.s, st))
        t = st.op.output(0)
        scope = self.pick(["local", "global"])
        return (f"s.cache_read({t.name}, {scope!r}, [{reader.name}])",
                lambda: self.s.cache_read(t, scope, [reader.op.output(0)]), False)

    def cache_write(self):
        cands = [st for st in self.active() if not st.relations and not st.iter_var_attrs
                 and not any(q.attach_stage is st for q in self.s.stages)]
        st = self.pick(cands)
        if st is None:
            return None
        t = st.op.output(0)
        return (f"s.cache_write({t.name}, 'local')", lambda: self.s.cache_write(t, "local"), False)

    def rfactor(self):
        cands = [st for st in self.active() if st.op.is_reduction and
                 not any(q.attach_stage is st for q in self.s.stages)]
        st = self.pick(cands)
        if st is None:
            return None
        red = [iv for iv in st.leaf_iter_vars if iv.iter_type == IterVar.REDUCE]
        split = [iv for iv in red if iv not in st.root_iter_vars]
        if not split and len(red) < 2 and not self.chance(0.1):
            return None
        ax = self.pick(split) if split and self.chance(0.8) else self.pick(red)
        if ax is None:
            return None
        t = st.op.output(0)
        return (f"s.rfactor({t.name}, {ax.var.name})", lambda: self.s.rfactor(t, ax), False)

    def normalize(self):
        return ("s.normalize()", self.s.normalize, False)

    def illegal(self):
        """A call that must raise ScheduleError."""
        st = self.pick(self.active())
        if st is None or not st.leaf_iter_vars:
            return None
        k = int(self.rng.integers(0, 6))
        leaves = st.leaf_iter_vars
        if k == 0:
            red = [iv for iv in leaves if iv.iter_type == IterVar.REDUCE]
            if not red:
                return None
            ax = self.pick(red)
            how = self.pick(["vectorize", "parallel"])
            return (f"s[{st.name}].{how}({ax.var.name})  # reduction axis",
                    lambda: getattr(st, how)(ax), True)
        if k == 1:
            ax = self.pick(leaves)
            return (f"s[{st.name}].split({ax.var.name}, factor=0)",
                    lambda: st.split(ax, factor=0), True)
        if k == 2 and len(leaves) >= 3:
            a, b = leaves[0], leaves[2]
            return (f"s[{st.name}].fuse({a.var.name}, {b.var.name})  # not adjacent",
                    lambda: st.fuse(a, b), True)
        if k == 3 and st.is_output:
            return (f"s[{st.name}].compute_inline()  # output", st.compute_inline, True)
        if k == 4:
            ax = self.pick(leaves)
            return (f"s[{st.name}].reorder({ax.var.name}, {ax.var.name})",
                    lambda: st.reorder(ax, ax), True)
        if k == 5:
            # (a stage that reads st through others is a legal parent, as in TVM)
            others = [q for q in self.active() if q is not st and q.leaf_iter_vars and
                      q not in _readers(self.s, st) and not self.s._reads_transitively(q, st)]
            q = self.pick(others)
            if q is None or st.is_output:
                return None
            ax = self.pick(q.leaf_iter_vars)
            return (f"s[{st.name}].compute_at(s[{q.name}], {ax.var.name})  # not a reader",
                    lambda: st.compute_at(q, ax), True)
        return None
