"""A small reference interpreter for AST2 and AST3: checks lowering passes, and shows who writes what.

AST2 tensors are numpy arrays indexed with logical indices (a realized tensor
holds only its bounds); AST3 buffers are flat numpy arrays (views of the
argument arrays, so stores reach them).  Vectors (Ramp, Broadcast, vector
Load/Store) are numpy arrays of ``lanes`` elements.  Arithmetic runs in int64 /
float64 and rounds at stores, so a lowered program that computes the same
expressions gives bit-identical results.  Every access is bounds-checked, the
operands of each binary node must have the same dtype, and fresh allocations
are filled with garbage, so a wrong index, a type slip in a pass, or a read of
memory nobody wrote shows up as an error or a mismatch.

With ``on_store`` / ``on_load`` callbacks it also reports every access together
with the loops around it (``frames``: (variable, kind, value) from the outside
in, kinds as in ``For.kind`` plus the thread tags), which the explorer's
iteration-space, thread-map and cache views are drawn from.
"""
from __future__ import annotations

import math

import numpy as np

from tvmlab.ir import dtype as dt
from tvmlab.ir.tensor import IterVar


class InterpError(Exception):
    """The program read or wrote out of bounds, used an unbound variable, or mixed dtypes."""


def _truncdiv(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((np.sign(a) * np.sign(b)) < 0, -q, q) if isinstance(q, np.ndarray) \
        else (-q if (a < 0) != (b < 0) else q)


def _popcount(x, dtype):
    """1 bits of ``x`` in ``dtype``'s width (values here are int64, so a negative int32 would count 64)."""
    u = np.atleast_1d(np.asarray(x).astype(dt.to_numpy(dt.element_of(dtype))))
    return np.unpackbits(u.view(np.uint8).reshape(u.size, -1), axis=1).sum(axis=1).reshape(np.shape(x))


_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "fabs": np.abs,
          "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "round": np.round,
          "trunc": np.trunc, "sin": np.sin, "cos": np.cos, "exp2": np.exp2, "log2": np.log2,
          "log10": np.log10, "isnan": np.isnan,
          "rsqrt": lambda x: 1.0 / np.sqrt(x), "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
          "bitwise_not": np.invert}
_BINARY = {"pow": np.power, "fmod": np.fmod, "bitwise_and": np.bitwise_and,
           "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
           "shift_left": np.left_shift, "shift_right": np.right_shift}


def _garbage(dtype, n):
    if dt.is_float(dtype):
        return np.full(n, np.nan, dtype=dt.to_numpy(dtype))
    return np.full(n, 0x5A5A % (2 ** (dt.bits(dtype) - 1)), dtype=dt.to_numpy(dtype))


class Interpreter:
    """Run a statement.  ``tensors``: {Tensor: ndarray} (AST2), ``buffers``: {Var: ndarray} (AST3)."""

    def __init__(self, tensors=None, buffers=None, env=None, on_store=None, on_load=None):
        self.on_store, self.on_load = on_store, on_load
        self.frames = ()             # ((var, kind, value), ...) of the enclosing loops (hooks only)
        self.tensors = {t: (a, (0,) * a.ndim) for t, a in (tensors or {}).items()}
        self.args = set(self.tensors)
        self.buffers = {v: a.reshape(-1) for v, a in (buffers or {}).items()}
        for v, a in self.buffers.items():
            if a.size and not np.shares_memory(a, (buffers or {})[v]):
                raise InterpError(f"buffer {v.name} must be contiguous")
        self.env = dict(env or {})

    # ------------------------------------------------------------------ statements
    def run(self, s):
        getattr(self, "s_" + type(s).__name__)(s)

    def s_SeqStmt(self, s):
        for x in s.seq:
            self.run(x)

    def s_Evaluate(self, s):
        self.eval(s.value)

    def s_For(self, s):
        lo, ext = self.eval(s.min), self.eval(s.extent)
        track = self.on_store is not None or self.on_load is not None
        outer = self.frames
        for k in range(int(lo), int(lo) + int(ext)):
            self.env[s.loop_var] = k
            if track:
                self.frames = outer + ((s.loop_var, s.kind, k),)
            self.run(s.body)
        self.frames = outer
        self.env.pop(s.loop_var, None)

    def s_AttrStmt(self, s):
        if s.attr_key == "thread_extent" and isinstance(s.node, IterVar):
            track = self.on_store is not None or self.on_load is not None
            tag = s.node.thread_tag or "thread"
            outer = self.frames
            for k in range(int(self.eval(s.value))):
                self.env[s.node.var] = k
                if track:
                    self.frames = outer + ((s.node.var, tag, k),)
                self.run(s.body)
            self.frames = outer
            return
        self.run(s.body)

    def s_LetStmt(self, s):
        self.env[s.var] = self.eval(s.value)
        self.run(s.body)

    def s_AssertStmt(self, s):
        if not self.eval(s.condition):
            raise InterpError(f"assertion failed: {s.message}")
        self.run(s.body)

    def s_IfThenElse(self, s):
        c = self.eval(s.condition)
        if isinstance(c, np.ndarray):
            raise InterpError(f"IfThenElse condition must be scalar, got {s.condition}")
        if c:
            self.run(s.then_case)
        elif s.else_case is not None:
            self.run(s.else_case)

    def s_Allocate(self, s):
        n = 1
        for e in s.extents:
            n *= int(self.eval(e))
        self.buffers[s.buffer_var] = _garbage(s.dtype, n)
        self.run(s.body)
        del self.buffers[s.buffer_var]

    def s_Store(self, s):
        buf = self._typed(self._buffer(s.buffer_var), s.value.dtype)
        idx, val = self.eval(s.index), self.eval(s.value)
        li, lv = dt.lanes(s.index.dtype), dt.lanes(s.value.dtype)
        if li != lv:
            raise InterpError(f"store to {s.buffer_var.name}: index has {li} lanes, value {lv}")
        mask = self._mask(s.predicate, li)
        self._check(buf, idx, mask, s.buffer_var.name)
        if self.on_store is not None:
            self.on_store(s.buffer_var, idx, mask, self.frames)
        if li == 1:
            if mask:
                buf[int(idx)] = val
            return
        buf[np.asarray(idx)[mask]] = np.asarray(val)[mask]

    def s_ProducerRealize(self, s):
        if s.producer in self.args:      # an argument: its array is the storage
            self.run(s.body)
            return
        shape = tuple(int(self.eval(r.extent)) for r in s.bounds)
        mins = tuple(int(self.eval(r.min)) for r in s.bounds)
        arr = _garbage(s.producer.dtype, int(np.prod(shape))).reshape(shape)
        old = self.tensors.get(s.producer)
        self.tensors[s.producer] = (arr, mins)
        self.run(s.body)
        if old is None:
            del self.tensors[s.producer]
        else:
            self.tensors[s.producer] = old

    def s_ProducerStore(self, s):
        arr, idx = self._element(s.producer, s.indices)
        arr[idx] = self.eval(s.value)

    # ------------------------------------------------------------------ expressions
    def eval(self, e):
        if isinstance(e, IterVar):
            e = e.var
        return getattr(self, "e_" + type(e).__name__)(e)

    def e_Var(self, e):
        if e not in self.env:
            raise InterpError(f"variable {e.name} is not bound")
        return self.env[e]

    e_SizeVar = e_Var

    def e_IntImm(self, e):
        return bool(e.value) if e.dtype == "bool" else e.value

    def e_FloatImm(self, e):
        return e.value

    def e_StringImm(self, e):
        return e.value

    def e_Cast(self, e):
        v = self.eval(e.value)
        k = dt.kind(e.dtype)
        if isinstance(v, np.ndarray):
            if k == "float":
                return v.astype(np.float64)
            if k == "bool":
                return v.astype(bool)
            return np.trunc(v).astype(np.int64)
        if k == "float":
            return float(v)
        if k == "bool":
            return bool(v)
        return int(math.trunc(v))

    def _binary(self, e, fn):
        if e.a.dtype != e.b.dtype:
            raise InterpError(f"operands of {type(e).__name__} differ in dtype: "
                              f"{e.a.dtype} vs {e.b.dtype} in {e}")
        return fn(self.eval(e.a), self.eval(e.b))

    def e_Add(self, e): return self._binary(e, lambda a, b: a + b)
    def e_Sub(self, e): return self._binary(e, lambda a, b: a - b)
    def e_Mul(self, e): return self._binary(e, lambda a, b: a * b)

    def e_Div(self, e):
        if dt.is_float(e.dtype):
            return self._binary(e, lambda a, b: a / b)
        return self._binary(e, _truncdiv)

    def e_Mod(self, e):
        return self._binary(e, lambda a, b: a - b * _truncdiv(a, b))

    def e_FloorDiv(self, e): return self._binary(e, lambda a, b: a // b)
    def e_FloorMod(self, e): return self._binary(e, lambda a, b: a % b)
    def e_Min(self, e): return self._binary(e, np.minimum)
    def e_Max(self, e): return self._binary(e, np.maximum)
    def e_EQ(self, e): return self._binary(e, lambda a, b: a == b)
    def e_NE(self, e): return self._binary(e, lambda a, b: a != b)
    def e_LT(self, e): return self._binary(e, lambda a, b: a < b)
    def e_LE(self, e): return self._binary(e, lambda a, b: a <= b)
    def e_GT(self, e): return self._binary(e, lambda a, b: a > b)
    def e_GE(self, e): return self._binary(e, lambda a, b: a >= b)
    def e_And(self, e): return self._binary(e, np.logical_and)
    def e_Or(self, e): return self._binary(e, np.logical_or)

    def e_Not(self, e):
        return np.logical_not(self.eval(e.a))

    def e_Select(self, e):
        c, t, f = self.eval(e.condition), self.eval(e.true_value), self.eval(e.false_value)
        if dt.lanes(e.true_value.dtype) != dt.lanes(e.false_value.dtype):
            raise InterpError(f"Select branches differ in lanes: {e}")
        return np.where(c, t, f) if isinstance(c, np.ndarray) or isinstance(t, np.ndarray) \
            else (t if c else f)

    def e_Ramp(self, e):
        b, s = self.eval(e.base), self.eval(e.stride)
        if isinstance(b, np.ndarray) or isinstance(s, np.ndarray):
            raise InterpError(f"Ramp of vectors: {e}")
        return b + s * np.arange(e.lanes, dtype=np.int64)

    def e_Broadcast(self, e):
        v = self.eval(e.value)
        if isinstance(v, np.ndarray):
            raise InterpError(f"Broadcast of a vector: {e}")
        return np.full(e.lanes, v)

    def e_Let(self, e):
        self.env[e.var] = self.eval(e.value)
        return self.eval(e.body)

    def e_Call(self, e):
        if e.op == "likely":
            return self.eval(e.args[0])
        if e.op == "if_then_else":
            c = self.eval(e.args[0])
            if isinstance(c, np.ndarray):
                return np.where(c, self.eval(e.args[1]), self.eval(e.args[2]))
            return self.eval(e.args[1] if c else e.args[2])
        args = [self.eval(a) for a in e.args]
        if e.op in _UNARY:
            r = _UNARY[e.op](np.asarray(args[0]))
        elif e.op == "popcount":
            r = _popcount(args[0], e.args[0].dtype)
        elif e.op in _BINARY:
            r = _BINARY[e.op](np.asarray(args[0]), np.asarray(args[1]))
        else:
            raise InterpError(f"unknown call {e.op}")
        return r if isinstance(args[0], np.ndarray) else r.item()

    def e_Load(self, e):
        buf = self._typed(self._buffer(e.buffer_var), e.dtype)
        idx = self.eval(e.index)
        lanes = dt.lanes(e.dtype)
        if dt.lanes(e.index.dtype) != lanes:
            raise InterpError(f"load of {e.buffer_var.name}: dtype {e.dtype} but index "
                              f"{e.index.dtype}")
        mask = self._mask(e.predicate, lanes)
        self._check(buf, idx, mask, e.buffer_var.name)
        if self.on_load is not None:
            self.on_load(e.buffer_var, idx, mask, self.frames)
        if lanes == 1:
            return buf[int(idx)].item() if mask else 0
        out = np.zeros(lanes, dtype=buf.dtype)
        out[mask] = buf[np.asarray(idx)[mask]]
        return out.astype(np.float64 if dt.is_float(e.dtype) else np.int64)

    def e_ProducerLoad(self, e):
        arr, idx = self._element(e.producer, e.indices)
        return arr[idx].item()

    # ------------------------------------------------------------------ helpers
    def _buffer(self, var):
        if var not in self.buffers:
            raise InterpError(f"buffer {var.name} is not allocated")
        return self.buffers[var]

    @staticmethod
    def _typed(buf, dtype):
        """A byte buffer (uint8, as MergeDynamicSharedMemoryAllocations makes) seen as elements of the
        access's type; any other buffer as it is, so a pass that mixes types still shows up."""
        want = np.dtype(dt.to_numpy(dt.element_of(dtype)))
        if buf.dtype != np.uint8 or want == buf.dtype or buf.size % want.itemsize:
            return buf
        return buf.view(want)

    def _mask(self, pred, lanes):
        if pred is None:
            return True if lanes == 1 else np.ones(lanes, dtype=bool)
        m = self.eval(pred)
        return np.asarray(m, dtype=bool) if lanes > 1 else bool(m)

    def _check(self, buf, idx, mask, name):
        if isinstance(idx, (int, np.integer)):         # the common scalar case, without numpy
            if mask is True or (mask is not False and bool(mask)):
                if not 0 <= idx < buf.size:
                    raise InterpError(f"access to {name} out of bounds: {idx} (size {buf.size})")
            return
        ix = np.asarray(idx)[mask] if np.ndim(idx) else (np.asarray([idx]) if mask else [])
        if len(ix) and (np.min(ix) < 0 or np.max(ix) >= buf.size):
            raise InterpError(f"access to {name} out of bounds: {idx} (size {buf.size})")

    def _element(self, t, indices):
        if t not in self.tensors:
            raise InterpError(f"tensor {t.name} has no storage")
        arr, mins = self.tensors[t]
        idx = tuple(int(self.eval(i)) - m for i, m in zip(indices, mins))
        for k, (i, n) in enumerate(zip(idx, arr.shape)):
            if not 0 <= i < n:
                raise InterpError(f"index {k} of {t.name} out of bounds: {i + mins[k]} "
                                  f"(realized from {mins[k]}, extent {n})")
        return arr, idx


def run_ast2(stmt, tensors, env=None):
    """Run AST2 ``stmt`` on {Tensor: ndarray} (arrays are updated in place)."""
    it = Interpreter(tensors=tensors, env=env)
    it.run(stmt)
    return it


def run_ast3(stmt, binds, tensors, env=None):
    """Run AST3 ``stmt``; ``binds`` maps Tensor -> Buffer, ``tensors`` Tensor -> ndarray."""
    it = Interpreter(buffers={binds[t].data: a for t, a in tensors.items()}, env=env)
    it.run(stmt)
    return it
