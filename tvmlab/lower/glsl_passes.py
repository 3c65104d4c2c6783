"""Split an AST3 function into OpenGL fragment-shader passes (one per ``opengl()`` stage).

After ``s[X].opengl()`` every non-inlined stage of the function is one loop
over its output's flat index, marked with the ``pragma_opengl`` annotation;
each such loop is a *pass*: one fragment per output element, the loop body
run inside the fragment, reductions as loops there.  Intermediate tensors are
the ``Allocate``s around the passes (the runtime gives them textures).  A stage
whose output has one element may have lost its loop to simplification; such a
statement is a one-pixel pass.  Anything else (a stage that was not scheduled
with ``opengl()``) is a LoweringError naming the stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import LoweringError
from ..ir import expr as E
from ..ir.arith import Analyzer
from ..ir.arith.keys import KeyCache
from ..ir.functor import IRVisitor, collect_vars
from ..ir.stmt import Allocate, AttrStmt, Evaluate, For, LetStmt, SeqStmt, is_no_op

PRAGMA = "pragma_opengl"


@dataclass
class FragmentPass:
    """One fragment-shader pass: ``outputs`` written at ``pixel`` over ``extent`` elements."""
    outputs: list                 # buffer Vars written (several for a multi-output stage)
    pixel: object                 # the loop Var standing for the flat output index, or None
    extent: object                # number of output elements (an Expr)
    body: object                  # the loop body (Stmt)
    lets: list = field(default_factory=list)   # enclosing (Var, value) LetStmts

    @property
    def name(self):
        return "_".join(v.name for v in self.outputs)


@dataclass
class FragmentProgram:
    passes: list
    intermediates: list           # (buffer Var, dtype, extents Exprs)


class _Stores(IRVisitor):
    def __init__(self):
        super().__init__()
        self.stores = []
        self.loops = []

    def visit_Store(self, s):
        self.stores.append(s)
        self.generic_visit(s)

    def visit_For(self, f):
        self.loops.append(f)
        self.generic_visit(f)


def split_passes(func):
    """The FragmentProgram of an AST3 PrimFunc scheduled with ``opengl()``."""
    passes, inter, loose = [], [], []

    def flush():
        if loose:
            passes.append(_one_pixel(func, list(loose)))
            loose.clear()

    def walk(s, lets):
        if isinstance(s, SeqStmt):
            for x in s.seq:
                walk(x, lets)
        elif isinstance(s, Allocate):
            if s.scope not in ("global", ""):
                raise LoweringError(f"{func.name}: buffer {s.buffer_var.name} has scope {s.scope!r} "
                                    "outside any pass; the OpenGL fragment mode keeps tensors in textures "
                                    "(use target 'opengl -compute' for shared/local memory)")
            inter.append((s.buffer_var, s.dtype, tuple(s.extents)))
            walk(s.body, lets)
        elif isinstance(s, AttrStmt):
            walk(s.body, lets)
        elif isinstance(s, LetStmt):
            flush()
            walk(s.body, lets + [(s.var, s.value)])
        elif isinstance(s, For) and s.annotation(PRAGMA) is not None:
            flush()
            c = _Stores()
            c.visit(s.body)
            outs = []
            for st in c.stores:
                if st.buffer_var not in outs:
                    outs.append(st.buffer_var)
            if not outs:
                raise LoweringError(f"{func.name}: the OpenGL pass over {s.loop_var.name} writes nothing")
            body = s.body
            if not (isinstance(s.min, E.IntImm) and s.min.value == 0):
                body = LetStmt(s.loop_var, s.loop_var + s.min, body)
            passes.append(FragmentPass(outs, s.loop_var, s.extent, body, list(lets)))
        elif isinstance(s, Evaluate) and is_no_op(s):
            return
        else:
            if loose and lets is not loose[-1][1]:
                flush()
            loose.append((s, lets))

    walk(func.body, [])
    flush()
    return FragmentProgram(passes, inter)


def _one_pixel(func, items):
    """Statements without a pixel loop: valid only as a one-element stage (all stores at index 0)."""
    c = _Stores()
    for s, _ in items:
        c.visit(s)
    outs = []
    for st in c.stores:
        if st.buffer_var not in outs:
            outs.append(st.buffer_var)
    names = ", ".join(v.name for v in outs) or "nothing"
    hint = (f"schedule every stage for OpenGL: s[{outs[0].name if outs else 'X'}].opengl() "
            "(or compute_inline() it)")
    if not outs:
        raise LoweringError(f"{func.name}: a statement outside any OpenGL pass writes nothing; {hint}")
    ana = Analyzer()
    for st in c.stores:
        if isinstance(st.index, E.Ramp):
            raise LoweringError(f"{func.name}: stage {st.buffer_var.name} is vectorized; the OpenGL fragment "
                                "mode runs one element per pixel and has no vector lanes (do not vectorize, "
                                "unroll or parallelize the axis that opengl() returns)")
        if not is_pixel_index(st.index, None, ana):
            loops = [f.loop_var.name for f in c.loops if f.loop_var in collect_vars(st.index)]
            where = f" over {', '.join(loops)}" if loops else ""
            raise LoweringError(f"{func.name}: stage {st.buffer_var.name} writes {names} in a plain "
                                f"loop{where}, not as an OpenGL pass; {hint}")
    body = items[0][0] if len(items) == 1 else SeqStmt(tuple(s for s, _ in items))
    return FragmentPass(outs, None, E.IntImm("int32", 1), body, list(items[0][1]))


# ------------------------------------------------------------------ index identity
class _Poly:
    """Integer polynomials over shape variables and floordiv/floormod atoms, keyed structurally."""

    def __init__(self, pixel):
        self.pixel = pixel
        self.key = KeyCache()
        self.atoms = {}          # structural key -> atom Expr

    def atom(self, e):
        k = self.key(e)
        self.atoms.setdefault(k, e)
        return k

    def terms(self, e):
        """``e`` as {(atom key or None, sorted var keys): coefficient}, or None if not polynomial."""
        if isinstance(e, E.IntImm):
            return {(None, ()): e.value}
        if isinstance(e, E.Var):
            if e is self.pixel:
                return {(self.atom(e), ()): 1}
            return {(None, (self.key(e),)): 1}
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            return {(self.atom(e), ()): 1}
        if isinstance(e, E.Cast) and e.dtype == e.value.dtype:
            return self.terms(e.value)
        if isinstance(e, (E.Add, E.Sub)):
            a, b = self.terms(e.a), self.terms(e.b)
            if a is None or b is None:
                return None
            sign = 1 if isinstance(e, E.Add) else -1
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, 0) + sign * v
            return {k: v for k, v in out.items() if v}
        if isinstance(e, E.Mul):
            a, b = self.terms(e.a), self.terms(e.b)
            if a is None or b is None:
                return None
            out = {}
            for (xa, ma), ca in a.items():
                for (xb, mb), cb in b.items():
                    if xa is not None and xb is not None:
                        return None
                    k = (xa if xa is not None else xb, tuple(sorted(ma + mb)))
                    out[k] = out.get(k, 0) + ca * cb
            return {k: v for k, v in out.items() if v}
        return None

    def combine(self, terms):
        """Apply ``(x // d) * d + x % d -> x`` until nothing changes."""
        changed = True
        while changed:
            changed = False
            for (ak, mono), coef in list(terms.items()):
                atom = self.atoms.get(ak)
                if not isinstance(atom, E.FloorMod):
                    continue
                d = self.terms(atom.b)
                if d is None or len(d) != 1:
                    continue
                ((dx, dm), dc), = d.items()
                if dx is not None:
                    continue
                partner = (self.atom(E.FloorDiv(atom.a, atom.b)), tuple(sorted(mono + dm)))
                x = self.terms(atom.a)
                if terms.get(partner) != coef * dc or x is None:
                    continue
                del terms[(ak, mono)]
                del terms[partner]
                for (xa, xm), xc in x.items():
                    k = (xa, tuple(sorted(xm + mono)))
                    terms[k] = terms.get(k, 0) + xc * coef
                for k in [k for k, v in terms.items() if not v]:
                    del terms[k]
                changed = True
                break
        return terms


def is_pixel_index(index, pixel, ana=None):
    """True when ``index`` provably equals ``pixel`` (the flat output index of the fragment)."""
    ana = ana or Analyzer()
    if pixel is None:
        return ana.can_prove(E.EQ(index, E.IntImm("int32", 0)))
    if index is pixel or ana.can_prove(E.EQ(index, pixel)):
        return True
    poly = _Poly(pixel)
    t = poly.terms(index)
    return t is not None and poly.combine(t) == {(poly.atom(pixel), ()): 1}
