"""Structural equality and hashing of IR: TVM's ``structural_equal`` / ``structural_hash``.

Two pieces of IR are equal when they have the same node types and field
values, with variables matched by binding, not by name: a variable bound by
a ``For``, ``Let``, ``LetStmt``, ``Allocate``, a reducer or a reduce axis,
or a PrimFunc parameter, matches the variable bound at the same place on the
other side.  A free variable matches only itself, unless ``map_free_vars=True``,
when free variables match in order of appearance.  A tensor is storage, as a
Buffer is in TVM's lowered IR: it is defined where it first appears, so a
tensor matches another of the same dtype and shape at the same place, and then
only that one (two schedules built alike give equal statements).
``structural_hash`` is consistent with this: equal IR hashes equally.
"""
from __future__ import annotations

import numbers

import hashlib

import numpy as np

from ..errors import TVMLabError
from .expr import Var
from .function import Buffer, IRModule, PrimFunc
from .node import Node
from .stmt import Allocate, For, LetStmt, ProducerRealize
from .expr import CommReducer, Let, Reduce
from .tensor import IterVar, Operation, Range, Tensor


class StructuralMismatch(TVMLabError, ValueError):
    """``assert_structural_equal`` found two pieces of IR that differ."""


# node type -> fields that bind variables (or tensors) for the rest of the node
_BINDERS = {For: ("loop_var",), LetStmt: ("var",), Let: ("var",), Allocate: ("buffer_var",),
            CommReducer: ("lhs", "rhs"), ProducerRealize: ("producer",)}


def _fields(n):
    """A node's fields, binding ones first (a Reduce's axes come before the source that uses them)."""
    names = type(n).field_names()
    return ("axis",) + tuple(f for f in names if f != "axis") if type(n) is Reduce else names


class _Mismatch(Exception):
    def __init__(self, path, a, b, why):
        self.path, self.a, self.b, self.why = path, a, b, why


class _Equal:
    def __init__(self, map_free_vars, tensors_by_identity=False):
        self.map_free = map_free_vars
        self.tensor_identity = tensors_by_identity
        self.lr = {}     # id(left symbol) -> right symbol
        self.rl = {}

    def fail(self, path, a, b, why):
        raise _Mismatch(path, a, b, why)

    def symbol(self, a, b, path, define):
        """Variables and tensors: matched through the binding map."""
        mapped = self.lr.get(id(a))
        if mapped is not None:
            if mapped is not b:
                self.fail(path, a, b, "bound to a different variable")
            return
        if id(b) in self.rl:
            self.fail(path, a, b, "the right side is already bound to another variable")
        if a is b and not define and not self.map_free:
            return
        if not (define or self.map_free):
            self.fail(path, a, b, "different free variables (pass map_free_vars=True to match them)")
        self.lr[id(a)] = b
        self.rl[id(b)] = a

    def eq(self, a, b, path, define=False):
        if isinstance(a, Var) or isinstance(a, Tensor):
            if type(a) is not type(b):
                self.fail(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
            if isinstance(a, Var):
                if a.dtype != b.dtype:
                    self.fail(path, a, b, f"dtype {a.dtype} vs {b.dtype}")
            else:
                if a.dtype != b.dtype or len(a.shape) != len(b.shape):
                    self.fail(path, a, b, "tensors of different dtype or rank")
                self.eq(a.shape, b.shape, path + ".shape")
                define = define or not self.tensor_identity   # storage: defined where first seen
            self.symbol(a, b, path, define)
            return
        if type(a) is not type(b) and not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
            self.fail(path, a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, Node):
            binders = _BINDERS.get(type(a), ())
            for f in _fields(a):
                self.eq(getattr(a, f), getattr(b, f), f"{path}.{f}", define=f in binders)
        elif hasattr(type(a), "_structural_fields"):
            # graph-level (Relay) nodes name the fields to compare and those that bind variables;
            # a variable among them is a symbol, matched through the binding map like a TIR Var
            binders = getattr(type(a), "_structural_binders", ())
            for f in type(a)._structural_fields:
                self.eq(getattr(a, f), getattr(b, f), f"{path}.{f}", define=f in binders)
            if getattr(type(a), "_structural_symbol", False):
                self.symbol(a, b, path, define)
        elif isinstance(a, np.ndarray):
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
                self.fail(path, a, b, "constant arrays differ (dtype, shape or values)")
        elif isinstance(a, IterVar):
            if a.iter_type != b.iter_type or a.thread_tag != b.thread_tag:
                self.fail(path, a, b, "iter vars of different kind or thread tag")
            self.eq(a.dom, b.dom, path + ".dom")
            self.eq(a.var, b.var, path + ".var", define=True)
        elif isinstance(a, (list, tuple)):
            if len(a) != len(b):
                self.fail(path, a, b, f"length {len(a)} vs {len(b)}")
            for k, (x, y) in enumerate(zip(a, b)):
                self.eq(x, y, f"{path}[{k}]", define)
        elif isinstance(a, dict):
            if list(a) != list(b) and set(a) != set(b):
                self.fail(path, a, b, f"keys {sorted(map(str, a))} vs {sorted(map(str, b))}")
            for k in a:
                self.eq(a[k], b[k], f"{path}[{k!r}]")
        elif isinstance(a, Buffer):
            if a.dtype != b.dtype or a.scope != b.scope:
                self.fail(path, a, b, "buffers of different dtype or scope")
            self.eq(a.data, b.data, path + ".data", define=True)
            self.eq(a.shape, b.shape, path + ".shape")
            self.eq(a.strides, b.strides, path + ".strides")
        elif isinstance(a, PrimFunc):
            self.eq(a.params, b.params, path + ".params", define=True)
            for k, (p, q) in enumerate(zip(a.params, b.params)):
                bp, bq = a.buffer_map.get(p), b.buffer_map.get(q)
                if (bp is None) != (bq is None):
                    self.fail(f"{path}.buffer_map[{k}]", bp, bq, "a buffer on one side only")
                if bp is not None:
                    self.eq(bp.shape, bq.shape, f"{path}.buffer_map[{k}].shape")
                    if bp.dtype != bq.dtype:
                        self.fail(f"{path}.buffer_map[{k}]", bp, bq, f"dtype {bp.dtype} vs {bq.dtype}")
            self.eq(a.attrs, b.attrs, path + ".attrs")
            self.eq(a.body, b.body, path + ".body")
        elif isinstance(a, IRModule):
            if set(a.functions) != set(b.functions):
                self.fail(path, a, b, f"functions {sorted(a.functions)} vs {sorted(b.functions)}")
            for k in a.functions:
                self.eq(a.functions[k], b.functions[k], f"{path}[{k!r}]")
        elif isinstance(a, Operation):
            if a is not b:
                self.fail(path, a, b, "different operations")
        elif isinstance(a, float):
            if not (a == b or (a != a and b != b)):
                self.fail(path, a, b, f"{a!r} vs {b!r}")
        elif a is None or isinstance(a, (str, int, bool, complex, bytes)):
            if a != b:
                self.fail(path, a, b, f"{a!r} vs {b!r}")
        elif a is not b and a != b:
            self.fail(path, a, b, f"{type(a).__name__} values differ")


def _as_ir(x):
    """A Python number as its constant (TVM's FFI converts arguments so); anything else as it is."""
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        from .op import const
        return const(x)
    return x


def _check(lhs, rhs, map_free_vars, tensors_by_identity=False):
    e = _Equal(map_free_vars, tensors_by_identity)
    if isinstance(lhs, numbers.Number) != isinstance(rhs, numbers.Number):     # 16 against IntImm(16)
        lhs, rhs = _as_ir(lhs), _as_ir(rhs)
    e.eq(lhs, rhs, "root")


def structural_equal(lhs, rhs, map_free_vars=False):
    """True when ``lhs`` and ``rhs`` are the same IR up to the names of bound variables."""
    try:
        _check(lhs, rhs, map_free_vars)
    except _Mismatch:
        return False
    return True


def same_value(lhs, rhs):
    """Whether two expressions compute the same value where they stand: structural equality with
    free variables and tensors matching only themselves (what passes use to find a repeated
    condition or index; ``A[i] > 0`` and ``B[i] > 0`` differ)."""
    try:
        _check(lhs, rhs, False, tensors_by_identity=True)
    except _Mismatch:
        return False
    return True


def assert_structural_equal(lhs, rhs, map_free_vars=False):
    """Raise StructuralMismatch naming the first place where ``lhs`` and ``rhs`` differ."""
    try:
        _check(lhs, rhs, map_free_vars)
    except _Mismatch as m:
        raise StructuralMismatch(f"IR differs at {m.path}: {m.why}\n  lhs: {_short(m.a)}\n"
                                 f"  rhs: {_short(m.b)}") from None


def _short(x, limit=300):
    s = str(x)
    return s if len(s) <= limit else s[:limit] + " ..."


class _Hasher:
    """Feeds a canonical token stream of the IR to a hash; symbols are numbered by first appearance."""

    def __init__(self):
        self.h = hashlib.blake2b(digest_size=8)
        self.ids = {}

    def put(self, *tokens):
        for t in tokens:
            self.h.update(repr(t).encode())
            self.h.update(b"\x00")

    def visit(self, a):
        if isinstance(a, (Var, Tensor)):
            n = self.ids.setdefault(id(a), (len(self.ids), a))[0]
            self.put(type(a).__name__, a.dtype, "sym", n)
            if isinstance(a, Tensor):
                self.visit(a.shape)
            return
        if isinstance(a, Node):
            self.put(type(a).__name__)
            for f in _fields(a):
                self.visit(getattr(a, f))
        elif isinstance(a, IterVar):
            self.put("IterVar", a.iter_type, a.thread_tag)
            self.visit(a.dom)
            self.visit(a.var)
        elif isinstance(a, (list, tuple)):
            self.put("seq", len(a))
            for x in a:
                self.visit(x)
        elif isinstance(a, dict):
            self.put("dict", len(a))
            for k in a:
                self.put(k)
                self.visit(a[k])
        elif isinstance(a, Buffer):
            self.put("Buffer", a.dtype, a.scope)
            self.visit(a.data)
            self.visit(a.shape)
        elif isinstance(a, PrimFunc):
            self.put("PrimFunc")
            self.visit(a.params)
            for p in a.params:
                b = a.buffer_map.get(p)
                self.put(None if b is None else b.dtype)
                if b is not None:
                    self.visit(b.shape)
            self.visit(a.attrs)
            self.visit(a.body)
        elif isinstance(a, IRModule):
            self.put("IRModule")
            for k in sorted(a.functions):
                self.put(k)
                self.visit(a.functions[k])
        elif isinstance(a, Operation):
            self.put("op", a.name)
        elif isinstance(a, float) and a != a:
            self.put("nan")
        else:
            self.put(type(a).__name__, a)


def structural_hash(node, map_free_vars=False):
    """A 64-bit hash such that structurally equal IR hashes equally."""
    h = _Hasher()
    h.visit(node)
    return int.from_bytes(h.h.digest(), "little", signed=True)


__all__ = ["structural_equal", "assert_structural_equal", "structural_hash", "StructuralMismatch",
           "Range"]
