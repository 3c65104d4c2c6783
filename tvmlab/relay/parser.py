"""Reading the Relay text format back: ``tvm.parser.parse`` / ``fromtext`` / ``parse_expr``.

It reads what ``astext`` prints and the common forms of TVM's text format:

    #[version = "0.0.5"]
    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) -> Tensor[(1, 4, 6, 6), float32] {
      %0 = nn.conv2d(%x, %w, kernel_size=[3, 3]) /* ty=... */;
      let %y: Tensor[(1, 4, 6, 6), float32] = nn.relu(%0);
      (%y, %0).1
    }

Functions with typed parameters (and attributes such as ``Primitive=1``), graph bindings
(``%0 = ...;``), ``let`` bindings, calls of registered operators with attributes (ints,
floats, strings, booleans, lists and tuples of them), calls of local functions, tuples,
tuple fields (``%t.0``), scalar constants (``1f``, ``2i64``, ``True``) and
``meta[relay.Constant][k]`` taken from ``init_meta_table``.  Types: ``Tensor[(d, ...), dtype]``
(an ``i64`` dimension stays int64), a bare dtype for a scalar, tuples of types and
``fn (types) -> type``.  Comments (``/* ty=... */``, ``//``) are skipped.  Anything else
raises :class:`RelayParseError` naming the line and column.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir import dtype as dt
from .base import RelayError
from .expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var
from .ty import Dim, FuncType, TensorType, TupleType


class RelayParseError(RelayError):
    """The Relay text is not well formed (the message names the line and column)."""


_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n]+|//[^\n]*|/\*.*?\*/)
  | (?P<attr>\#\[)
  | (?P<local>%[A-Za-z0-9_.]+)
  | (?P<glob>@[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<num>-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)(?:[fiu]\d*)?(?![A-Za-z0-9_]))
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<arrow>->)
  | (?P<punct>[()\[\]{},;:=.?])
""", re.S | re.X)


class _Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos


def _tokens(src, where):
    out, pos = [], 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise RelayParseError(f"{where(pos)}: unexpected character {src[pos]!r}")
        if m.lastgroup == "attr" and src.startswith("#[metadata]", pos):
            break                     # the metadata section: constants come from init_meta_table
        if m.lastgroup != "space":
            out.append(_Tok(m.lastgroup, m.group(), pos))
        pos = m.end()
    out.append(_Tok("end", "", pos))
    return out


def _scalar(text, where):
    """A numeric literal: ``1`` (int32), ``2i64``, ``1.5`` / ``1.5f`` (float32), ``1f64``, ``3u8``."""
    m = re.fullmatch(r"(-?[0-9.eE+-]+?)(?:([fiu])(\d*))?", text)
    body, kind, bits = m.group(1), m.group(2), m.group(3)
    is_float = kind == "f" or (kind is None and any(c in body for c in ".eE"))
    if kind in ("i", "u") and any(c in body for c in ".eE"):
        raise RelayParseError(f"{where}: {text!r} is an integer suffix on a fractional number")
    if is_float:
        dtype = f"float{bits or 32}"
        value = float(body)
    else:
        value = int(body)
        if kind is None:
            dtype = "int32" if -2**31 <= value < 2**31 else "int64"
        else:
            dtype = f"{'int' if kind == 'i' else 'uint'}{bits or 32}"
    try:
        dtype = dt.canonical(dtype)
    except Exception:
        raise RelayParseError(f"{where}: unknown numeric suffix in {text!r}") from None
    if not is_float and not dt.min_value(dtype) <= value <= dt.max_value(dtype):
        raise RelayParseError(f"{where}: {value} does not fit in {dtype}")
    return value, dtype


class _Parser:
    def __init__(self, src, source_name, meta):
        self.src, self.name = src, source_name
        self.meta = dict(meta or {})
        self.toks = _tokens(src, self.where)
        self.i = 0
        self.scopes = [{}]

    # ------------------------------------------------------------ tokens
    def where(self, pos):
        line = self.src.count("\n", 0, pos) + 1
        col = pos - (self.src.rfind("\n", 0, pos) + 1) + 1
        return f"{self.name}:{line}:{col}"

    def error(self, msg, tok=None):
        tok = tok or self.peek()
        return RelayParseError(f"{self.where(tok.pos)}: {msg}")

    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def at(self, text, k=0):
        t = self.peek(k)
        return t.kind in ("punct", "arrow", "name") and t.text == text

    def accept(self, text):
        if self.at(text):
            return self.next()
        return None

    def expect(self, text, what=None):
        t = self.peek()
        if not self.at(text):
            found = "the end of the text" if t.kind == "end" else repr(t.text)
            raise self.error(f"expected {text!r}{' ' + what if what else ''}, found {found}", t)
        return self.next()

    # ------------------------------------------------------------ scopes
    def find(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def lookup(self, tok):
        """The value ``%name`` stands for; ``%1.0`` is field 0 of ``%1`` unless a name ``1.0`` is bound
        (names may hold dots, as ``layer1.0.weight``)."""
        name = tok.text[1:]
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            if k < len(parts) and not parts[k].isdigit():
                continue
            if k < len(parts) and not all(x.isdigit() for x in parts[k:]):
                continue
            e = self.find(".".join(parts[:k]))
            if e is not None:
                for x in parts[k:]:
                    e = TupleGetItem(e, int(x))
                return e
        raise self.error(f"%{name} is not defined here", tok)

    # ------------------------------------------------------------ module
    def header(self):
        if self.peek().kind == "attr":
            start = self.next()
            self.expect("version")
            self.expect("=")
            v = self.next()
            if v.kind != "str":
                raise self.error("expected the version string", v)
            if v.text.strip('"').split(".")[:2] != ["0", "0"]:
                raise self.error(f"unsupported text format version {v.text} (this reads 0.0.x)", start)
            self.expect("]")

    def module(self):
        self.header()
        funcs = {}
        while self.peek().kind != "end":
            if not self.at("def"):
                raise self.error(f"expected 'def @name(...)' at module level, found {self.peek().text!r}")
            self.next()
            g = self.next()
            if g.kind != "glob":
                raise self.error("expected the function's @name", g)
            if g.text[1:] in funcs:
                raise self.error(f"function {g.text} is defined twice", g)
            funcs[g.text[1:]] = self.function_rest()
        if not funcs:
            raise self.error("the text defines no function (expected 'def @main(...) { ... }')")
        return funcs

    def function_rest(self):
        """``(params[, attrs]) [-> type] { body }`` after ``def @name`` or ``fn``."""
        self.expect("(")
        params, attrs = [], {}
        self.scopes.append({})
        while not self.at(")"):
            t = self.peek()
            if t.kind == "local":
                self.next()
                ty = self.type_() if self.accept(":") else None
                v = Var(t.text[1:], ty)
                self.scopes[-1][t.text[1:]] = v
                params.append(v)
            elif t.kind == "name" and self.at("=", 1):
                self.next()
                self.next()
                attrs[t.text] = self.attr_value()
            else:
                raise self.error("expected a parameter %name or an attribute name=value", t)
            if not self.accept(","):
                break
        self.expect(")", "closing the parameter list")
        ret = self.type_() if self.accept("->") else None
        self.expect("{", "opening the function body")
        body = self.block()
        self.expect("}", "closing the function body")
        self.scopes.pop()
        return Function(params, body, ret_type=ret, attrs=attrs)

    def block(self):
        """Bindings (``%n = e;``, ``let %x = e;``) then the result expression."""
        self.scopes.append({})
        lets = []
        while True:
            t = self.peek()
            if t.kind == "local" and self.at("=", 1):
                self.next()
                self.next()
                self.scopes[-1][t.text[1:]] = self.expr()
                self.expect(";", "after a binding")
            elif self.at("let"):
                self.next()
                v = self.next()
                if v.kind != "local":
                    raise self.error("expected the %name a let binds", v)
                ty = self.type_() if self.accept(":") else None
                self.expect("=")
                value = self.expr()
                self.expect(";", "after a let binding")
                var = Var(v.text[1:], ty)
                self.scopes[-1][v.text[1:]] = var
                lets.append((var, value))
            else:
                break
        body = self.expr()
        self.scopes.pop()
        for var, value in reversed(lets):
            body = Let(var, value, body)
        return body

    # ------------------------------------------------------------ expressions
    def expr(self):
        e = self.primary()
        while True:
            if self.at(".") and self.peek(1).kind == "num":
                self.next()
                k = self.next()
                if not k.text.isdigit():
                    raise self.error(f"a tuple field index must be an int >= 0, got {k.text}", k)
                e = TupleGetItem(e, int(k.text))
            elif self.at("("):
                start = self.peek()
                if not isinstance(e, (Var, Function)):
                    raise self.error("only operators, functions and function-typed variables can be called",
                                     start)
                args, attrs = self.arguments(None)
                if attrs:
                    raise self.error("a call of a function takes no attributes", start)
                e = Call(e, args)
            else:
                return e

    def primary(self):
        t = self.peek()
        if t.kind == "local":
            self.next()
            return self.lookup(t)
        if t.kind == "num":
            self.next()
            value, dtype = _scalar(t.text, self.where(t.pos))
            return Constant(np.array(value, dtype=dtype))
        if t.kind == "glob":
            raise self.error(f"calls of module functions ({t.text}) are not supported; "
                             "inline the function or call a local fn", t)
        if self.at("("):
            self.next()
            if self.accept(")"):
                return Tuple([])
            first = self.expr()
            if self.accept(")"):
                return first
            fields = [first]
            while self.accept(","):
                if self.at(")"):
                    break
                fields.append(self.expr())
            self.expect(")", "closing the tuple")
            return Tuple(fields)
        if self.at("{"):
            self.next()
            body = self.block()
            self.expect("}")
            return body
        if t.kind == "name":
            if t.text == "fn":
                self.next()
                return self.function_rest()
            if t.text in ("True", "False"):
                self.next()
                return Constant(np.array(t.text == "True"))
            if t.text == "meta":
                return self.meta_ref()
            return self.op_call()
        found = "the end of the text" if t.kind == "end" else repr(t.text)
        raise self.error(f"expected an expression, found {found}", t)

    def meta_ref(self):
        start = self.next()
        self.expect("[")
        kind = self.next()
        self.expect("]")
        self.expect("[")
        k = self.next()
        self.expect("]")
        table = self.meta.get(kind.text)
        if table is None:
            raise self.error(f"meta[{kind.text}][{k.text}]: the text refers to a metadata table that was not "
                             f"given (pass init_meta_table={{{kind.text!r}: [...]}})", start)
        if kind.text != "relay.Constant":
            raise self.error(f"meta[{kind.text}]: only relay.Constant entries are supported", start)
        if not k.text.isdigit() or int(k.text) >= len(table):
            raise self.error(f"meta[relay.Constant][{k.text}]: the table has {len(table)} entries", k)
        c = table[int(k.text)]
        return c if isinstance(c, Constant) else Constant(c.numpy() if hasattr(c, "numpy") else np.asarray(c))

    def op_call(self):
        from .op.registry import _REGISTRY
        t = self.next()
        op = _REGISTRY.get(t.text)
        if op is None:
            raise self.error(f"unknown operator {t.text!r}", t)
        if not self.at("("):
            raise self.error(f"operator {t.text} must be called: {t.text}(...)", self.peek())
        args, attrs = self.arguments(op)
        if op.num_inputs is not None and len(args) != op.num_inputs:
            raise self.error(f"{op.name} takes {op.num_inputs} argument(s), got {len(args)}", t)
        return Call(op, args, {**op.defaults, **attrs})

    def arguments(self, op):
        self.expect("(")
        args, attrs = [], {}
        while not self.at(")"):
            t = self.peek()
            if t.kind == "name" and self.at("=", 1):
                self.next()
                self.next()
                if op is not None and t.text not in op.defaults:
                    raise self.error(f"{op.name} has no attribute {t.text!r}; known: {sorted(op.defaults)}", t)
                value = self.attr_value()
                default = op.defaults.get(t.text) if op is not None else None
                if isinstance(value, tuple) and isinstance(default, list):
                    value = _as_list(value)
                attrs[t.text] = value
            elif attrs:
                raise self.error("positional arguments must come before attributes", t)
            else:
                args.append(self.expr())
            if not self.accept(","):
                break
        self.expect(")", "closing the argument list")
        return args, attrs

    def attr_value(self):
        t = self.peek()
        if t.kind == "num":
            self.next()
            value, dtype = _scalar(t.text, self.where(t.pos))
            return value
        if t.kind == "str":
            self.next()
            return re.sub(r"\\(.)", r"\1", t.text[1:-1])
        if t.kind == "name" and t.text in ("True", "False", "None", "nullptr"):
            self.next()
            return {"True": True, "False": False}.get(t.text)
        if self.at("[") or self.at("("):
            close = "]" if self.next().text == "[" else ")"
            items = []
            while not self.at(close):
                items.append(self.attr_value())
                if not self.accept(","):
                    break
            self.expect(close, "closing the attribute value")
            return tuple(items)
        found = "the end of the text" if t.kind == "end" else repr(t.text)
        raise self.error(f"expected an attribute value (number, string, bool, list), found {found}", t)

    # ------------------------------------------------------------ types
    def type_(self):
        t = self.peek()
        if self.at("Tensor"):
            self.next()
            self.expect("[")
            self.expect("(")
            dims = []
            while not self.at(")"):
                d = self.next()
                if d.kind != "num":
                    what = "dynamic dimensions (?) are" if d.text == "?" else f"{d.text!r} is"
                    raise self.error(f"a tensor dimension must be an int: {what} not supported", d)
                value, dtype = _scalar(d.text, self.where(d.pos))
                if not dtype.startswith("int") or value < 0:
                    raise self.error(f"a tensor dimension must be an int >= 0, got {d.text}", d)
                dims.append(Dim(value, dtype) if dtype == "int64" else value)
                if not self.accept(","):
                    break
            self.expect(")", "closing the shape")
            self.expect(",")
            dtype = self.dtype_()
            self.expect("]", "closing the tensor type")
            return TensorType(dims, dtype)
        if self.at("("):
            self.next()
            fields = []
            while not self.at(")"):
                fields.append(self.type_())
                if not self.accept(","):
                    break
            self.expect(")", "closing the tuple type")
            return TupleType(fields)
        if self.at("fn"):
            self.next()
            self.expect("(")
            args = []
            while not self.at(")"):
                args.append(self.type_())
                if not self.accept(","):
                    break
            self.expect(")")
            self.expect("->")
            return FuncType(args, self.type_())
        if t.kind == "name":
            return TensorType((), self.dtype_())
        raise self.error(f"expected a type (Tensor[...], a dtype, a tuple of types or fn), found {t.text!r}", t)

    def dtype_(self):
        t = self.next()
        if t.kind != "name":
            raise self.error(f"expected a dtype, found {t.text!r}", t)
        try:
            return dt.canonical(t.text)
        except Exception:
            raise self.error(f"unknown dtype {t.text!r}", t) from None

    def done(self):
        t = self.peek()
        if t.kind != "end":
            raise self.error(f"unexpected {t.text!r} after the end", t)


def _as_list(v):
    return [_as_list(x) if isinstance(x, tuple) else x for x in v]


def parse(source, source_name="from_string", init_module=None, init_meta_table=None):
    """An IRModule from Relay text (``def @main(...) { ... }``); ``init_module``'s functions come first."""
    from ..ir.function import IRModule
    if not isinstance(source, str):
        raise RelayParseError(f"parse needs the text as a str, got {type(source).__name__}")
    p = _Parser(source, source_name, init_meta_table)
    funcs = p.module()
    p.done()
    if init_module is not None:
        funcs = {**init_module.functions, **funcs}
    return IRModule(funcs)


def parse_expr(source, init_meta_table=None):
    """One Relay expression from text (``fn (%x: float32) { %x }``, ``add(1f, 2f)``, ...)."""
    if not isinstance(source, str):
        raise RelayParseError(f"parse_expr needs the text as a str, got {type(source).__name__}")
    p = _Parser(source, "string", init_meta_table)
    p.header()
    e = p.block()
    p.done()
    return e


def fromtext(source, source_name="from_string"):
    """TVM's older name of :func:`parse`."""
    return parse(source, source_name)
