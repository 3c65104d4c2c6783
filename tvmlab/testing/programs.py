"""Random tensor-expression programs with a numpy reference.

A program is 1-3 chained compute stages over random placeholders.  Each
expression is built as a small tree of ``Node`` objects (``program_exprs``) that render
themselves as TE Python source (so every program can be printed and rerun) and
evaluate themselves with numpy in exactly the same dtypes.

Values are kept in ranges where the results are well defined: integers never
overflow, floats stay finite, logs and square roots see ``abs(x) + 1``, integer
division is by nonzero constants only.  Operations whose result jumps on a
tiny change of their input (comparisons, float-to-int casts, floor/ceil/round)
only see *exact* values: values the compiled code and numpy compute bit for
bit alike (inputs, index arithmetic, min/max/select of exact values), so a
different summation order can never flip a comparison.
"""
from __future__ import annotations

import math

import numpy as np

from .program_exprs import (_CMP, FLOAT_LIMIT, INT_LIMIT, Binary, Cast, Cmp, Const, Index, IndexValue,
                            Logic, Node, Read, Select, Unary, _is_float)

MAX_OUT = 2048           # elements of a stage's output
MAX_LOOP = 12000         # elements of a stage's whole iteration space (output x reduction)
DTYPES = ("float32", "float64", "int32")


# ---------------------------------------------------------------- tensors and stages

class TensorInfo:
    """A placeholder or a stage output: name, shape, dtype, value bounds, numpy value."""

    def __init__(self, name, shape, dtype, lo, hi, exact=True, stage=None):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.lo, self.hi, self.exact, self.stage = lo, hi, exact, stage
        self.value = None

    @property
    def is_input(self):
        return self.stage is None


class StageInfo:
    """One compute: axes [(name, extent)], reduction axes, reducer, condition and body."""

    def __init__(self, name, dtype, axes, raxes, reducer, where, body):
        self.name, self.dtype, self.axes, self.raxes = name, dtype, list(axes), list(raxes)
        self.reducer, self.where, self.body = reducer, where, body

    def py(self):
        lines = [f"{n} = te.reduce_axis((0, {e}), name={n!r})" for n, e in self.raxes]
        shape = "(" + ", ".join(str(e) for _, e in self.axes) + ("," if len(self.axes) == 1 else "") + ")"
        params = ", ".join(n for n, _ in self.axes)
        body = self.body.py()
        if self.reducer:
            axis = "[" + ", ".join(n for n, _ in self.raxes) + "]"
            where = "" if self.where is None else f", where={self.where.py()}"
            body = f"te.{self.reducer}({body}, axis={axis}{where})"
        lines.append(f"{self.name} = te.compute({shape}, lambda {params}: {body}, name={self.name!r})")
        return "\n".join(lines)

    def evaluate(self):
        """The stage's output as a numpy array."""
        names = [n for n, _ in self.axes] + [n for n, _ in self.raxes]
        exts = [e for _, e in self.axes] + [e for _, e in self.raxes]
        env = {}
        for k, (n, e) in enumerate(zip(names, exts)):
            shape = [1] * len(exts)
            shape[k] = e
            env[n] = np.arange(e, dtype=np.int64).reshape(shape)
        with np.errstate(all="ignore"):
            val = np.broadcast_to(np.asarray(self.body.np(env), dtype=self.dtype), exts)
            if not self.reducer:
                return np.ascontiguousarray(val)
            axes = tuple(range(len(self.axes), len(exts)))
            if self.where is not None:
                mask = np.broadcast_to(self.where.np(env), exts)
            else:
                mask = np.ones(exts, dtype=bool)
            if self.reducer == "sum":
                acc = np.float64 if _is_float(self.dtype) else np.int64
                out = np.where(mask, val, 0).astype(acc).sum(axis=axes)
            else:
                if _is_float(self.dtype):
                    ident = -np.inf if self.reducer == "max" else np.inf
                else:
                    info = np.iinfo(self.dtype)
                    ident = info.min if self.reducer == "max" else info.max
                filled = np.where(mask, val, np.array(ident, dtype=self.dtype))
                out = filled.max(axis=axes) if self.reducer == "max" else filled.min(axis=axes)
            return np.ascontiguousarray(out.astype(self.dtype))


class Program:
    """Inputs, stages and outputs of one random program, with its numpy results."""

    def __init__(self, seed, inputs, stages, outputs):
        self.seed, self.inputs, self.stages, self.outputs = seed, inputs, stages, outputs

    @property
    def tensors(self):
        return self.inputs + [st.out for st in self.stages]

    def source(self):
        """TE definition as Python (names: the tensors; ``args`` and ``outs`` at the end)."""
        lines = ["import tvmlab as tvm", "from tvmlab import te", ""]
        for t in self.inputs:
            shape = "(" + ", ".join(map(str, t.shape)) + ("," if len(t.shape) == 1 else "") + ")"
            lines.append(f"{t.name} = te.placeholder({shape}, dtype={t.dtype!r}, name={t.name!r})")
        for st in self.stages:
            lines.append(st.py())
        outs = ", ".join(t.name for t in self.outputs)
        lines.append(f"outs = [{outs}]")
        lines.append("args = [" + ", ".join(t.name for t in self.inputs + self.outputs) + "]")
        return "\n".join(lines) + "\n"

    def build_te(self):
        """Execute the source; returns {name: Tensor} plus "outs" and "args"."""
        import tvmlab
        from tvmlab import te
        ns = {"tvm": tvmlab, "te": te}
        exec(compile(self.source(), f"<fuzz program {self.seed}>", "exec"), ns)
        return ns

    def input_data(self):
        return {t.name: t.value for t in self.inputs}

    def expected(self):
        return {t.name: t.value for t in self.outputs}

    def float_tolerance(self):
        """Relative tolerance (of each output's largest value): float32 anywhere sets the pace."""
        dts = {t.dtype for t in self.tensors}
        nodes_f32 = "float32" in dts or any(_uses_dtype(st, "float32") for st in self.stages)
        return 2e-4 if nodes_f32 else 1e-9


def _uses_dtype(stage, dtype):
    found = []

    def walk(n):
        if n is None:
            return
        if getattr(n, "dtype", None) == dtype:
            found.append(n)
        for f in ("x", "a", "b", "cond"):
            c = getattr(n, f, None)
            if isinstance(c, Node):
                walk(c)
    walk(stage.body)
    walk(stage.where)
    return bool(found)


# ---------------------------------------------------------------- generator

class Generator:
    """Draws one random program from ``rng`` (a numpy Generator)."""

    def __init__(self, rng, max_stages=3):
        self.rng = rng
        self.max_stages = max_stages
        self.inputs, self.stages = [], []
        self.counter = {"A": 0, "T": 0, "r": 0}
        self.loopvars = []      # (name, extent, is_reduction) of the stage being built
        self.required = []      # reads the stage's body must contain

    # -------------------------------------------------------- helpers
    def pick(self, seq, p=None):
        seq = list(seq)
        if p is not None:
            p = np.asarray(p, dtype=float)
            p = p / p.sum()
        return seq[int(self.rng.choice(len(seq), p=p))]

    def chance(self, p):
        return self.rng.random() < p

    def fresh(self, prefix):
        k = self.counter[prefix]
        self.counter[prefix] += 1
        return f"{prefix}{k}"

    def extent(self, hi=40):
        # favour small and awkward extents
        return int(self.pick([1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 40,
                              int(self.rng.integers(1, hi + 1))],
                             [1, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 8]))

    # -------------------------------------------------------- program
    def program(self, seed):
        n_stages = int(self.pick(range(1, self.max_stages + 1), [3, 4, 3, 2, 2][:self.max_stages]))
        for k in range(n_stages):
            self.stage(last=k == n_stages - 1)
        outputs = [self.stages[-1].out]
        for st in self.stages[:-1]:
            if self.chance(0.15):
                outputs.insert(0, st.out)
        prog = Program(seed, self.inputs, self.stages, outputs)
        for t in self.inputs:
            t.value = self.input_value(t)
        for st in self.stages:
            st.out.value = st.evaluate()
        return prog

    def input_value(self, t):
        from . import random_data
        if _is_float(t.dtype):
            return random_data(t.shape, t.dtype, self.rng, t.lo, t.hi)
        return random_data(t.shape, t.dtype, self.rng, int(t.lo), int(t.hi))

    def new_input(self, shape, dtype):
        if _is_float(dtype):
            lo, hi = -3.0, 3.0
        else:
            lo, hi = -20, 20
        t = TensorInfo(self.fresh("A"), shape, dtype, lo, hi)
        self.inputs.append(t)
        return t

    # -------------------------------------------------------- stages
    def stage(self, last):
        """Append one compute; it reads the previous stage (when there is one) first."""
        prev = self.stages[-1].out if self.stages else None
        reduce = self.chance(0.45)
        axes, raxes, primary = [], [], None
        if prev is not None:
            idx = []
            for ext in prev.shape:
                role = self.pick(["out", "red", "const"], [6, 3 if reduce else 0, 0.5])
                if role == "red" and len(raxes) >= 2:
                    role = "out"
                if role == "out":
                    name = f"i{len(axes)}"
                    axes.append((name, ext))
                    idx.append(Index("var", name))
                elif role == "red":
                    name = self.fresh("r")
                    raxes.append((name, ext))
                    idx.append(Index("var", name))
                else:
                    idx.append(Index("const", value=int(self.rng.integers(0, ext))))
            if self.chance(0.2) and len(axes) < 3:
                axes.insert(int(self.rng.integers(0, len(axes) + 1)), (None, self.extent(12)))
            order = list(range(len(axes)))
            if self.chance(0.4):
                self.rng.shuffle(order)
            axes = [axes[o] for o in order]
            # rename output axes by position so the lambda reads i0, i1, ...
            rename = {}
            for pos, (n, e) in enumerate(axes):
                if n is not None:
                    rename[n] = f"i{pos}"
            axes = [(f"i{pos}", e) for pos, (n, e) in enumerate(axes)]
            for ix in idx:
                if ix.kind == "var" and ix.name in rename:
                    ix.name = rename[ix.name]
            primary = Read(prev, idx)
        if not axes:
            for d in range(int(self.pick([1, 2, 3], [3, 4, 2]))):
                axes.append((f"i{d}", self.extent()))
        while _prod(e for _, e in axes) > MAX_OUT:
            n, e = max(axes, key=lambda a: a[1])
            axes = [(a, max(1, x // 2) if a == n else x) for a, x in axes]
            primary = None      # the read was bound to the old shape
        if reduce and (not raxes or self.chance(0.3)) and len(raxes) < 2:
            raxes.append((self.fresh("r"), self.extent()))
        while _prod(e for _, e in axes + raxes) > MAX_LOOP and raxes:
            n, e = max(raxes, key=lambda a: a[1])
            raxes = [(a, max(1, x // 2) if a == n else x) for a, x in raxes]
            primary = None
        if primary is not None and _extent_mismatch(primary, axes, raxes):
            primary = None
        self.loopvars = [(n, e, False) for n, e in axes] + [(n, e, True) for n, e in raxes]
        if primary is None and prev is not None:
            primary = Read(prev, self.fit_index(prev.shape))
        reducer = self.pick(["sum", "max", "min"], [5, 2, 2]) if raxes else None
        dtype = self.stage_dtype(primary)
        self.required = [primary] if primary is not None else []
        body = self.expr(dtype, int(self.pick([1, 2, 3, 4], [2, 3, 3, 2])))
        if self.required:       # the read of the previous stage found no place yet
            body = self.combine(body, self.as_dtype(self.required.pop(), dtype, False))
        body = self.tame_for_reduce(body, reducer, raxes)
        where = None
        if reducer and self.chance(0.3) and (reducer == "sum" or last):
            where = self.cond(2)
        name = self.fresh("T")
        st = StageInfo(name, dtype, axes, raxes, reducer, where, body)
        lo, hi, exact = self.out_bounds(st)
        st.out = TensorInfo(name, [e for _, e in axes], dtype, lo, hi, exact, stage=st)
        if reducer in ("max", "min") and where is not None:
            st.out.lo, st.out.hi = -math.inf, math.inf
        self.stages.append(st)

    def stage_dtype(self, primary):
        if primary is not None and _is_float(primary.dtype) and not primary.exact:
            return self.pick(["float32", "float64"], [3, 1])
        return self.pick(DTYPES, [4, 2, 3])

    def out_bounds(self, st):
        b = st.body
        if st.reducer == "sum":
            n = _prod(e for _, e in st.raxes)
            return n * min(b.lo, 0.0), n * max(b.hi, 0.0), not _is_float(st.dtype)
        return b.lo, b.hi, b.exact

    def tame_for_reduce(self, body, reducer, raxes):
        if reducer != "sum":
            return body
        n = _prod(e for _, e in raxes)
        limit = (FLOAT_LIMIT if _is_float(body.dtype) else INT_LIMIT) / n
        if body.mag <= limit:
            return body
        if _is_float(body.dtype):
            return Unary("tanh", body)
        c = max(2, min(97, int(limit)))
        return Binary("floormod", body, Const(c, body.dtype))

    # -------------------------------------------------------- expressions
    def expr(self, dtype, depth, exact=False):
        if depth <= 0 or self.chance(0.2):
            return self.leaf(dtype, exact)
        if _is_float(dtype):
            kind = self.pick(["unary", "binary", "select", "cast"], [3, 5, 1.5, 1])
        else:
            kind = self.pick(["unary", "binary", "divmod", "select", "cast"], [1, 5, 2, 1.5, 1])
        if kind == "unary":
            return self.unary(dtype, depth, exact)
        if kind == "binary":
            return self.binary(dtype, depth, exact)
        if kind == "divmod":
            return self.divmod(dtype, depth)
        if kind == "select":
            c = self.cond(depth - 1)
            a, b = self.expr(dtype, depth - 1, exact), self.expr(dtype, depth - 1, exact)
            return Select(self.pick(["if_then_else", "Select"]), c, a, b)
        src = self.pick([d for d in DTYPES if d != dtype])
        need_exact = exact or (_is_float(src) and not _is_float(dtype))
        return self.cast(dtype, self.expr(src, depth - 1, need_exact))

    def cast(self, dtype, x):
        if x.dtype == dtype:
            return x
        if not _is_float(x.dtype) and _is_float(dtype):
            return Cast(dtype, x)
        if _is_float(x.dtype) and not _is_float(dtype):
            if not x.exact:
                raise AssertionError("float-to-int cast of an inexact value")
            if x.mag > INT_LIMIT:
                x = Binary("min", Binary("max", x, Const(-float(INT_LIMIT), x.dtype)),
                           Const(float(INT_LIMIT), x.dtype))
            return Cast(dtype, x)
        return Cast(dtype, x)

    def unary(self, dtype, depth, exact):
        x = self.expr(dtype, depth - 1, exact)
        if not _is_float(dtype):
            return Unary(self.pick(["neg", "abs"]), x)
        ops = ["neg", "abs"]
        if x.exact:
            ops += ["floor", "ceil", "round"]
        if not exact:
            ops += ["tanh", "sigmoid", "log1p_abs", "sqrt1p_abs", "rsqrt1p_abs"]
            if -30 <= x.lo and x.hi <= 8:
                ops += ["exp", "exp"]
        return Unary(self.pick(ops), x)

    def binary(self, dtype, depth, exact):
        a = self.expr(dtype, depth - 1, exact)
        b = self.expr(dtype, depth - 1, exact)
        limit = FLOAT_LIMIT if _is_float(dtype) else INT_LIMIT
        if exact and _is_float(dtype):
            if self.chance(0.3):
                return Binary("mul", a, Const(float(self.pick([2, 4, 0.5, -2])), dtype))
            return Binary(self.pick(["min", "max"]), a, b)
        ops = ["add", "sub", "mul", "min", "max"] + (["div1p"] if _is_float(dtype) else [])
        op = self.pick(ops, [3, 2, 3, 1, 1] + ([1] if _is_float(dtype) else []))
        node = Binary(op, a, b)
        if node.mag > limit:
            node = Binary(self.pick(["min", "max"]), a, b)
        return node

    def divmod(self, dtype, depth):
        a = self.expr(dtype, depth - 1)
        c = int(self.pick([2, 3, 4, 5, 7, 8, 16, -2, -3, -5, 1, -1],
                          [3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 0.3, 0.3]))
        op = self.pick(["floordiv", "floormod", "truncdiv", "truncmod", "idiv_op", "imod_op"],
                       [3, 3, 2, 2, 1, 1])
        return Binary(op, a, Const(c, dtype))

    def cond(self, depth):
        if depth > 1 and self.chance(0.2):
            return Logic(self.pick(["and", "or"]), self.cond(depth - 1), self.cond(depth - 1))
        dtype = self.pick(DTYPES, [1, 1, 3])
        a = self.expr(dtype, min(depth, 2), exact=True)
        b = self.expr(dtype, min(depth, 1), exact=True) if self.chance(0.6) else \
            Const(int(self.rng.integers(-3, 10)) if not _is_float(dtype) else
                  float(self.rng.integers(-4, 4)) / 2, dtype)
        return Cmp(self.pick(list(_CMP), [3, 2, 3, 2, 1, 1]), a, b)

    def combine(self, a, b):
        limit = FLOAT_LIMIT if _is_float(a.dtype) else INT_LIMIT
        node = Binary(self.pick(["add", "mul", "sub"]), a, b)
        return node if node.mag <= limit else Binary(self.pick(["min", "max"]), a, b)

    def leaf(self, dtype, exact=False):
        if self.required and not exact and self.castable(self.required[-1], dtype):
            return self.as_dtype(self.required.pop(), dtype, exact)
        kind = self.pick(["input", "stage", "const", "index"], [6, 1 if len(self.stages) > 0 else 0, 1.5, 2])
        if kind == "const":
            if _is_float(dtype):
                return Const(float(np.round(self.rng.uniform(-4, 4), 2)), dtype)
            return Const(int(self.rng.integers(-9, 10)), dtype)
        if kind == "index":
            n, e, _ = self.pick(self.loopvars)
            return self.as_dtype(IndexValue(n, e), dtype, exact)
        if kind == "stage":
            cands = [st.out for st in self.stages if (st.out.exact or not exact) and
                     math.isfinite(st.out.lo) and math.isfinite(st.out.hi) and
                     (st.out.exact or _is_float(dtype))]
            if cands:
                t = self.pick(cands)
                return self.as_dtype(Read(t, self.fit_index(t.shape)), dtype, exact)
        return self.as_dtype(self.input_read(dtype), dtype, exact)

    @staticmethod
    def castable(x, dtype):
        """False for an inexact float going to int (its value could round either way)."""
        return not (_is_float(x.dtype) and not _is_float(dtype) and not x.exact)

    def as_dtype(self, x, dtype, exact):
        if x.dtype == dtype:
            return x
        assert self.castable(x, dtype), "float-to-int cast of an inexact value"
        return self.cast(dtype, x)

    def input_read(self, dtype):
        reuse = [t for t in self.inputs if t.dtype == dtype or self.chance(0.2)]
        if reuse and self.chance(0.4):
            t = self.pick(reuse)
            return Read(t, self.fit_index(t.shape))
        idx, shape = [], []
        ndim = int(self.pick([1, 2, 3], [3, 4, 2]))
        for _ in range(ndim):
            if self.chance(0.12):
                c = int(self.rng.integers(0, 4))
                idx.append(Index("const", value=c))
                shape.append(c + 1 + int(self.rng.integers(0, 2)))
                continue
            n, e, _ = self.pick(self.loopvars)
            extra = int(self.pick([0, 1, 3], [6, 1, 1]))
            form = self.pick(["var", "off", "rev"], [6, 1.5, 1])
            if form == "var":
                idx.append(Index("var", n))
                shape.append(e + extra)
            elif form == "off":
                off = int(self.rng.integers(1, 4))
                idx.append(Index("var", n, off))
                shape.append(e + off + extra)
            else:
                idx.append(Index("rev", n, e - 1))
                shape.append(e + extra)
        while _prod(shape) > 4 * MAX_LOOP:
            return self.input_read(dtype)
        src_dtype = dtype if self.chance(0.8) else self.pick(DTYPES)
        return Read(self.new_input(shape, src_dtype), idx)

    def fit_index(self, shape):
        """Indices that stay inside ``shape`` using the current loop variables."""
        idx = []
        for ext in shape:
            fits = [(n, e) for n, e, _ in self.loopvars if e <= ext]
            if fits and self.chance(0.9):
                same = [f for f in fits if f[1] == ext]
                n, e = self.pick(same) if same and self.chance(0.7) else self.pick(fits)
                room = ext - e
                if room and self.chance(0.3):
                    idx.append(Index("rev", n, ext - 1 - int(self.rng.integers(0, room + 1))))
                else:
                    idx.append(Index("var", n, int(self.rng.integers(0, room + 1)) if room else 0))
            else:
                idx.append(Index("const", value=int(self.rng.integers(0, ext))))
        return idx


def _extent_mismatch(read, axes, raxes):
    exts = dict(axes + raxes)
    for ix, ext in zip(read.index, read.tensor.shape):
        if ix.kind == "var" and exts.get(ix.name) != ext:
            return True
    return False


def _prod(xs):
    out = 1
    for x in xs:
        out *= int(x)
    return out


def generate(seed, max_stages=3):
    """The random program of ``seed`` (deterministic)."""
    rng = np.random.default_rng(seed)
    return Generator(rng, max_stages).program(seed)
