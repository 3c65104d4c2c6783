"""``save_json`` / ``load_json``: IR as JSON text and back (TVM's ``tvm.ir.save_json``).

Expressions, statements (AST2 and AST3), ranges, iter vars, buffers,
PrimFuncs and IRModules round-trip: ``structural_equal(load_json(save_json(x)),
x)``.  Each variable, tensor and operation is written once and referred to
by number afterwards, so sharing (the same loop variable in a loop and its
body) survives.  Only plain data is written: no pickle, nothing evaluated on
load; unknown node types are refused.
"""
from __future__ import annotations

import json
import math

from ..errors import TVMLabError
from . import expr as E
from . import stmt as S
from .attrs import AttrBool
from .function import Buffer, IRModule, PrimFunc
from .node import Node
from .tensor import ComputeOp, IterVar, PlaceholderOp, Range, Tensor

FORMAT = "tvmlab.ir/1"


class JSONError(TVMLabError, ValueError):
    """The object cannot be written as JSON, or the text is not tvmlab IR JSON."""


def _node_types():
    out = {}
    for mod in (E, S):
        for name in dir(mod):
            c = getattr(mod, name)
            if isinstance(c, type) and issubclass(c, Node) and "__dataclass_fields__" in c.__dict__:
                out[c.__name__] = c
    out["Range"] = Range
    return out


_TYPES = _node_types()
_CUSTOM = {}    # type name -> (class, write(obj, writer) -> dict, read(dict, reader) -> obj)


def register_type(cls, name, write, read):
    """Let a higher layer write its objects (the schedule registers Schedule)."""
    _CUSTOM[name] = (cls, write, read)


class _Writer:
    def __init__(self):
        self.ids = {}      # id(obj) -> number
        self.keep = []     # keeps objects alive while numbered

    def ref(self, obj):
        k = self.ids.get(id(obj))
        return None if k is None else {"ref": k}

    def number(self, obj, d):
        k = len(self.ids)
        self.ids[id(obj)] = k
        self.keep.append(obj)
        d["id"] = k
        return d

    def w(self, x):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, AttrBool):
            return bool(x)
        if isinstance(x, int):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"float": repr(x)}
        if isinstance(x, (list, tuple)):
            return {"seq": [self.w(v) for v in x], "kind": type(x).__name__}
        if isinstance(x, dict):
            return {"dict": [[self.w(k), self.w(v)] for k, v in x.items()]}
        r = self.ref(x)
        if r is not None:
            return r
        if isinstance(x, E.Var):
            return self.number(x, {"type": type(x).__name__, "name": x.name, "dtype": x.dtype})
        if isinstance(x, Node):
            t = type(x).__name__
            if _TYPES.get(t) is not type(x):
                raise JSONError(f"save_json: cannot write node type {t}")
            return {"type": t, "fields": {f: self.w(getattr(x, f)) for f in x.field_names()}}
        if isinstance(x, IterVar):
            d = {"type": "IterVar", "dom": self.w(x.dom), "var": self.w(x.var),
                 "iter_type": x.iter_type, "thread_tag": x.thread_tag}
            return self.number(x, d)
        if isinstance(x, Tensor):
            return {"type": "Tensor", "op": self.w(x.op), "value_index": x.value_index}
        if isinstance(x, PlaceholderOp):
            return self.number(x, {"type": "PlaceholderOp", "name": x.name,
                                   "shape": self.w(x.shape), "dtype": x.dtype})
        if isinstance(x, ComputeOp):
            d = {"type": "ComputeOp", "name": x.name, "tag": x.tag, "attrs": self.w(x.attrs),
                 "axis": self.w(x.axis)}
            d["body"] = self.w(x.body)
            return self.number(x, d)
        if isinstance(x, Buffer):
            d = {"type": "Buffer", "name": x.name, "shape": self.w(x.shape), "dtype": x.dtype,
                 "data": self.w(x.data), "strides": self.w(x.strides), "scope": x.scope}
            return self.number(x, d)
        if isinstance(x, PrimFunc):
            return {"type": "PrimFunc", "name": x.name, "params": self.w(x.params),
                    "buffer_map": [[self.w(p), self.w(b)] for p, b in x.buffer_map.items()],
                    "body": self.w(x.body), "attrs": self.w(x.attrs)}
        if isinstance(x, IRModule):
            return {"type": "IRModule", "functions": [[k, self.w(f)] for k, f in x.functions.items()]}
        for name, (cls, write, _) in _CUSTOM.items():
            if type(x) is cls:
                return {"type": name, "value": write(x, self)}
        raise JSONError(f"save_json: cannot write a {type(x).__name__} ({x!r:.80})")


class _Reader:
    def __init__(self):
        self.objs = {}

    def keep(self, d, obj):
        self.objs[d["id"]] = obj
        return obj

    def r(self, d):
        if d is None or isinstance(d, (bool, int, float, str)):
            return d
        if isinstance(d, list):
            raise JSONError("load_json: a bare list in IR JSON (sequences are written as objects)")
        if not isinstance(d, dict):
            raise JSONError(f"load_json: unexpected {type(d).__name__}")
        if "ref" in d:
            try:
                return self.objs[d["ref"]]
            except (KeyError, TypeError):
                raise JSONError(f"load_json: reference {d['ref']!r} before its definition") from None
        if "float" in d:
            return float(d["float"])
        if "seq" in d:
            items = [self.r(v) for v in d["seq"]]
            return items if d.get("kind") == "list" else tuple(items)
        if "dict" in d:
            return {self.r(k): self.r(v) for k, v in d["dict"]}
        t = d.get("type")
        if t in ("Var", "SizeVar"):
            return self.keep(d, getattr(E, t)(d["name"], d["dtype"]))
        if t == "IterVar":
            dom, var = self.r(d["dom"]), self.r(d["var"])
            return self.keep(d, IterVar(dom, var, d["iter_type"], d["thread_tag"]))
        if t == "Tensor":
            return self.r(d["op"]).output(d["value_index"])
        if t == "PlaceholderOp":
            return self.keep(d, PlaceholderOp(d["name"], self.r(d["shape"]), d["dtype"]))
        if t == "ComputeOp":
            attrs = self.r(d["attrs"])      # written first: a variable in attrs is defined there
            axis = self.r(d["axis"])
            body = self.r(d["body"])
            return self.keep(d, ComputeOp(d["name"], d["tag"], attrs, axis, body))
        if t == "Buffer":
            data = self.r(d["data"])
            return self.keep(d, Buffer(d["name"], self.r(d["shape"]), d["dtype"], data=data,
                                       strides=self.r(d["strides"]), scope=d["scope"]))
        if t == "PrimFunc":
            params = list(self.r(d["params"]))
            bmap = {self.r(p): self.r(b) for p, b in d["buffer_map"]}
            return PrimFunc(d["name"], params, bmap, self.r(d["body"]), self.r(d["attrs"]))
        if t == "IRModule":
            return IRModule({k: self.r(f) for k, f in d["functions"]})
        if t in _CUSTOM:
            return _CUSTOM[t][2](d["value"], self)
        cls = _TYPES.get(t)
        if cls is None:
            raise JSONError(f"load_json: unknown node type {t!r}")
        fields = d.get("fields", {})
        if set(fields) != set(cls.field_names()):
            raise JSONError(f"load_json: {t} expects fields {list(cls.field_names())}, "
                            f"got {sorted(fields)}")
        return cls(**{f: self.r(fields[f]) for f in cls.field_names()})


def save_json(node):
    """The JSON text of ``node`` (an expression, statement, PrimFunc, IRModule, ...)."""
    return json.dumps({"format": FORMAT, "root": _Writer().w(node)})


def load_json(text):
    """The IR that ``save_json`` wrote."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as e:
        raise JSONError(f"load_json: not JSON text ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise JSONError(f"load_json: expected tvmlab IR JSON (format {FORMAT!r}), got {got!r}")
    try:
        return _Reader().r(doc["root"])
    except JSONError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise JSONError(f"load_json: malformed IR JSON ({type(e).__name__}: {e})") from None
