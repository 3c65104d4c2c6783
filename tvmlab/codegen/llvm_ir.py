"""A small writer of textual LLVM IR (opaque pointers).

The code generator writes LLVM assembly text and lets ``llvm.parse_assembly``
check it.  Writing text directly (instead of llvmlite.ir) gives full access to
what the backend needs and llvmlite.ir does not model with opaque pointers:
vector GEPs, atomics, struct GEPs, distinct loop metadata.

Types are LLVM type strings ("i32", "<8 x float>", "ptr"); a ``Value`` is a
type plus its textual reference ("%x3", "42", "<i32 0, i32 1>").  Constants
remember their Python value in ``const`` so the generator can specialise on
them (e.g. floor division by a positive constant).
"""
from __future__ import annotations

import functools
import re
import struct

from ..errors import BuildError

FLOAT_TYPES = ("half", "float", "double")


# ---------------------------------------------------------------- types
def vec(t, n):
    """``t`` with ``n`` lanes (scalar when n == 1)."""
    return t if n == 1 else f"<{n} x {t}>"


@functools.lru_cache(maxsize=None)
def lanes(t):
    return int(t[1:t.index(" x ")]) if t.startswith("<") else 1


@functools.lru_cache(maxsize=None)
def elem(t):
    return t[t.index(" x ") + 3:-1] if t.startswith("<") else t


def is_float_type(t):
    return elem(t) in FLOAT_TYPES


def int_width(t):
    e = elem(t)
    return int(e[1:]) if e[0] == "i" and e[1:].isdigit() else None


# ---------------------------------------------------------------- values
class Value:
    """A typed operand: ``ty`` (type string), ``ref`` (its text), ``const`` (Python value or None)."""
    __slots__ = ("ty", "ref", "const")

    def __init__(self, ty, ref, const=None):
        self.ty, self.ref, self.const = ty, ref, const

    def __str__(self):
        return f"{self.ty} {self.ref}"

    def __repr__(self):
        return f"Value({self.ty} {self.ref})"


def _float_text(t, v):
    """LLVM's exact hexadecimal spelling of float ``v`` (already representable in ``t``)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]


def const(t, v):
    """A scalar constant of type ``t`` (int value for integer types, float for float types)."""
    if is_float_type(t):
        return Value(t, _float_text(t, v), float(v))
    return Value(t, str(int(v)), int(v))


def const_vector(t, values):
    """A vector constant of element type ``t`` with the given lane values."""
    items = [const(t, v) for v in values]
    return Value(vec(t, len(items)), "<" + ", ".join(str(i) for i in items) + ">", tuple(i.const for i in items))


def splat_const(c, n):
    """A vector constant repeating scalar constant ``c`` ``n`` times."""
    if n == 1:
        return c
    return Value(vec(c.ty, n), "<" + ", ".join([str(c)] * n) + ">", (c.const,) * n)


def zero(t):
    return Value(t, "zeroinitializer" if t.startswith("<") else ("0.0" if is_float_type(t) else "0"),
                 None if t.startswith("<") else 0)


def poison(t):
    return Value(t, "poison")


# ---------------------------------------------------------------- functions
class Block:
    __slots__ = ("label", "instrs", "terminated")

    def __init__(self, label):
        self.label = label
        self.instrs = []
        self.terminated = False


class Phi:
    """A phi whose incoming edges are added as the loop is built."""
    __slots__ = ("name", "ty", "incoming")

    def __init__(self, name, ty):
        self.name, self.ty, self.incoming = name, ty, []

    def __str__(self):
        edges = ", ".join(f"[ {v.ref}, %{b.label} ]" for v, b in self.incoming)
        return f"{self.name} = phi {self.ty} {edges}"


_SANITIZE = re.compile(r"[^A-Za-z0-9_.]")


class Function:
    """A function definition under construction."""

    def __init__(self, name, ret, params, linkage="", fn_attrs="nounwind"):
        self.name, self.ret, self.linkage, self.fn_attrs = name, ret, linkage, fn_attrs
        self._counts = {}
        self.params = []     # (type, attributes, name)
        self.args = []
        for ty, attrs, hint in params:
            v = Value(ty, self.new_name(hint))
            self.params.append((ty, attrs, v.ref))
            self.args.append(v)
        self.blocks = []
        self.entry = self.new_block("entry")

    def new_name(self, hint):
        hint = _SANITIZE.sub("_", hint or "t") or "t"
        n = self._counts.get(hint, 0)
        self._counts[hint] = n + 1
        return f"%{hint}" if n == 0 and not hint[-1].isdigit() else f"%{hint}.{n}"

    def new_block(self, hint):
        b = Block(self.new_name(hint)[1:])
        self.blocks.append(b)
        return b

    def text(self):
        params = ", ".join(f"{ty}{' ' + attrs if attrs else ''} {ref}" for ty, attrs, ref in self.params)
        link = f"{self.linkage} " if self.linkage else ""
        out = [f'define {link}{self.ret} @"{self.name}"({params}) {self.fn_attrs} {{']
        for b in self.blocks:
            out.append(f"{b.label}:")
            out.extend(f"  {i}" for i in b.instrs)
        out.append("}")
        return "\n".join(out)


class Builder:
    """Appends instructions to the current block of a Function."""

    def __init__(self, fn):
        self.fn = fn
        self.block = None

    def position(self, block):
        self.block = block

    def new_block(self, hint):
        return self.fn.new_block(hint)

    # ------------------------------------------------------------ raw emission
    def emit(self, text, ty, hint="t"):
        if self.block.terminated:
            raise BuildError(f"internal error: instruction after terminator in {self.fn.name}: {text}")
        name = self.fn.new_name(hint)
        self.block.instrs.append(f"{name} = {text}")
        return Value(ty, name)

    def do(self, text):
        if self.block.terminated:
            raise BuildError(f"internal error: instruction after terminator in {self.fn.name}: {text}")
        self.block.instrs.append(text)

    def terminate(self, text):
        self.do(text)
        self.block.terminated = True

    # ------------------------------------------------------------ arithmetic
    def binop(self, op, a, b, flags="", hint="t"):
        f = f" {flags}" if flags else ""
        return self.emit(f"{op}{f} {a.ty} {a.ref}, {b.ref}", a.ty, hint)

    def icmp(self, pred, a, b, hint="c"):
        return self.emit(f"icmp {pred} {a.ty} {a.ref}, {b.ref}", vec("i1", lanes(a.ty)), hint)

    def fcmp(self, pred, a, b, hint="c"):
        return self.emit(f"fcmp {pred} {a.ty} {a.ref}, {b.ref}", vec("i1", lanes(a.ty)), hint)

    def select(self, c, a, b, hint="sel"):
        return self.emit(f"select {c}, {a}, {b}", a.ty, hint)

    def cast(self, op, v, ty, hint="cast"):
        return self.emit(f"{op} {v} to {ty}", ty, hint)

    def fneg(self, v, hint="neg"):
        return self.emit(f"fneg {v}", v.ty, hint)

    # ------------------------------------------------------------ memory
    def load(self, ty, ptr, align, hint="ld"):
        return self.emit(f"load {ty}, ptr {ptr.ref}, align {align}", ty, hint)

    def store(self, v, ptr, align):
        self.do(f"store {v}, ptr {ptr.ref}, align {align}")

    def gep(self, elem_ty, ptr, index, inbounds=True, hint="p"):
        ty = vec("ptr", lanes(index.ty))
        ib = "inbounds " if inbounds else ""
        return self.emit(f"getelementptr {ib}{elem_ty}, {ptr}, {index}", ty, hint)

    def struct_gep(self, struct_ty, ptr, field, hint="f"):
        return self.emit(f"getelementptr inbounds {struct_ty}, ptr {ptr.ref}, i32 0, i32 {field}", "ptr", hint)

    def alloca(self, ty, align, hint="buf"):
        """An alloca in the entry block (so it is allocated once per call)."""
        name = self.fn.new_name(hint)
        self.fn.entry.instrs.append(f"{name} = alloca {ty}, align {align}")
        return Value("ptr", name)

    def atomic_or(self, ptr, v):
        self.emit(f"atomicrmw or ptr {ptr.ref}, {v} monotonic", v.ty, "old")

    # ------------------------------------------------------------ vectors
    def extract(self, v, k, hint="e"):
        return self.emit(f"extractelement {v}, i32 {k}", elem(v.ty), hint)

    def insert(self, vecv, v, k, hint="ins"):
        return self.emit(f"insertelement {vecv}, {v}, i32 {k}", vecv.ty, hint)

    def splat(self, v, n, hint="splat"):
        if n == 1:
            return v
        if v.const is not None:
            return splat_const(v, n)
        t = vec(v.ty, n)
        one = self.insert(poison(t), v, 0, hint)
        return self.emit(f"shufflevector {one}, {poison(t)}, <{n} x i32> zeroinitializer", t, hint)

    # ------------------------------------------------------------ calls and control
    def call(self, ret, name, args, hint="call", attrs=""):
        a = ", ".join(str(x) for x in args)
        tail = f" {attrs}" if attrs else ""
        if ret == "void":
            self.do(f'call void @"{name}"({a}){tail}')
            return None
        return self.emit(f'call {ret} @"{name}"({a}){tail}', ret, hint)

    def call_ptr(self, ret, fn_value, args, hint="call"):
        a = ", ".join(str(x) for x in args)
        if ret == "void":
            self.do(f"call void {fn_value.ref}({a})")
            return None
        return self.emit(f"call {ret} {fn_value.ref}({a})", ret, hint)

    def phi(self, ty, hint="phi"):
        p = Phi(self.fn.new_name(hint), ty)
        self.block.instrs.append(p)
        return p

    def br(self, target, md=None):
        self.terminate(f"br label %{target.label}" + (f", !llvm.loop {md}" if md else ""))

    def cbr(self, c, t, f, weights=None):
        self.terminate(f"br {c}, label %{t.label}, label %{f.label}" + (f", !prof {weights}" if weights else ""))

    def ret(self, v=None):
        self.terminate(f"ret {v}" if v is not None else "ret void")


# ---------------------------------------------------------------- module
class Module:
    """Functions, declarations and metadata of one LLVM module."""

    def __init__(self, name, triple, datalayout):
        self.name, self.triple, self.datalayout = name, triple, datalayout
        self.functions = []
        self._decls = {}
        self._metadata = []
        self._named_md = {}
        self._helpers = {}

    def add_function(self, fn):
        self.functions.append(fn)
        return fn

    def declare(self, name, ret, argtys, attrs=""):
        """Declare external function ``name`` once; a conflicting second declaration is an error."""
        sig = (ret, tuple(argtys))
        old = self._decls.get(name)
        if old is not None:
            if old[0] != sig:
                raise BuildError(f"function {name!r} is used with two signatures: {old[0]} and {sig}")
            return name
        tail = f" {attrs}" if attrs else ""
        self._decls[name] = (sig, f'declare {ret} @"{name}"({", ".join(argtys)}){tail}')
        return name

    def helper(self, key, text):
        """Module-level IR (globals, internal functions) added once under ``key``."""
        self._helpers.setdefault(key, text)

    def metadata(self, body, distinct=False, self_ref=False):
        """Add metadata node ``!{body}``; ``self_ref`` puts the node itself first (loop IDs)."""
        ref = f"!{len(self._metadata)}"
        inner = f"{ref}, {body}" if self_ref else body
        self._metadata.append(f"{ref} = {'distinct ' if distinct else ''}!{{{inner}}}")
        return ref

    def shared_metadata(self, key, body):
        """A metadata node made once per module under ``key``."""
        ref = self._named_md.get(key)
        if ref is None:
            ref = self._named_md[key] = self.metadata(body)
        return ref

    def text(self):
        out = [f'; ModuleID = "{self.name}"', f'target triple = "{self.triple}"',
               f'target datalayout = "{self.datalayout}"', ""]
        out += list(self._helpers.values())
        for fn in self.functions:
            out += [fn.text(), ""]
        out += [d for _, d in self._decls.values()]
        if self._metadata:
            out += [""] + self._metadata
        return "\n".join(out) + "\n"
