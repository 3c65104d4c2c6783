"""The text form of graphs, close to TVM's: ``%0 = nn.conv2d(%data, %w, ...) /* ty=Tensor[...] */;``."""
from __future__ import annotations

import numpy as np

from .expr import Call, Constant, Function, Let, Tuple, TupleGetItem, Var


def _fmt(v):
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, float):
        return _float_text(v, "float64") + "f"
    return str(v)


def _float_text(x, dtype):
    """The shortest text that reads back as the same ``dtype`` value."""
    short = f"{x:g}"
    if not np.isfinite(x):
        return short
    return short if np.array(float(short), dtype) == np.array(x, dtype) else repr(float(x))


def _suffix(dtype):
    """TVM's literal suffixes: none for int32 and bool, ``f`` for float32, ``i64``, ``f16``, ``u8``, ..."""
    if dtype in ("int32", "bool"):
        return ""
    if dtype == "float32":
        return "f"
    kind = {"int": "i", "uint": "u", "float": "f"}.get(dtype.rstrip("0123456789"))
    return f"{kind}{dtype.lstrip('intufloa')}" if kind else dtype


def _const_text(c, meta):
    v = c.value
    if v.size == 1 and v.ndim == 0:
        x = v.item()
        dtype = str(v.dtype)
        suffix = _suffix(dtype)
        if isinstance(x, float):        # exact: the text is also the key that shares identical groups
            return _float_text(x, dtype) + suffix
        return f"{x}{suffix}"
    k = meta.setdefault(id(c), len(meta))
    return f"meta[relay.Constant][{k}]"


class _Printer:
    def __init__(self, show_types=True):
        self.show_types = show_types
        self.meta = {}

    def function(self, f, name=None, indent=""):
        lines = []
        params = ", ".join(f"%{p.name_hint}" + (f": {p.type_annotation!r}" if p.type_annotation is not None else "")
                           for p in f.params)
        attrs = "".join(f", {k}={v}" for k, v in f.attrs.items())
        ret = f.body._checked_type if f.body._checked_type is not None else f.ret_type
        head = f"def @{name}" if name else "fn "
        lines.append(f"{indent}{head}({params}{attrs})" + (f" -> {ret!r}" if ret is not None else "") + " {")
        lines += self.body(f.body, indent + "  ")
        lines.append(f"{indent}}}")
        return lines

    def body(self, root, indent):
        names, lines = {}, []
        count = [0]

        def ref(e):
            if isinstance(e, Var):
                return f"%{e.name_hint}"
            if isinstance(e, Constant):
                return _const_text(e, self.meta)
            return names[e]

        def bind(e, text):
            ty = f" /* ty={e._checked_type!r} */" if self.show_types and e._checked_type is not None else ""
            name = f"%{count[0]}"
            count[0] += 1
            lines.append(f"{indent}{name} = {text}{ty};")
            names[e] = name

        for step, e in _order(root):
            if step == "let":
                ann = f": {e.var.type_annotation!r}" if e.var.type_annotation is not None else ""
                lines.append(f"{indent}let %{e.var.name_hint}{ann} = {ref(e.value)};")
                continue
            if step == "let-body":
                names[e] = ref(e.body)
                continue
            if isinstance(e, (Var, Constant)):
                continue
            if isinstance(e, Call):
                if isinstance(e.op, Function):
                    fn_lines = self.function(e.op, None, indent)
                    fname = f"%{count[0]}"
                    count[0] += 1
                    lines.append(f"{indent}{fname} = {fn_lines[0].strip()}")
                    lines += fn_lines[1:-1]
                    lines.append(f"{indent}}};")
                    bind(e, f"{fname}({', '.join(ref(a) for a in e.args)})")
                    continue
                opname = e.op.name if hasattr(e.op, "name") else ref(e.op)
                args = [ref(a) for a in e.args]
                defaults = getattr(e.op, "defaults", {})
                args += [f"{k}={_fmt(v)}" for k, v in e.attrs.items()
                         if v is not None and v != "" and _differs(v, defaults.get(k, object()))]
                bind(e, f"{opname}({', '.join(args)})")
            elif isinstance(e, Tuple):
                bind(e, f"({', '.join(ref(a) for a in e.fields)}{',' if len(e.fields) == 1 else ''})")
            elif isinstance(e, TupleGetItem):
                bind(e, f"{ref(e.tuple_value)}.{e.index}")
            elif isinstance(e, Function):
                fn_lines = self.function(e, None, indent)
                name = f"%{count[0]}"
                count[0] += 1
                lines.append(f"{indent}{name} = {fn_lines[0].strip()}")
                lines += fn_lines[1:-1]
                lines.append(f"{indent}}};")
                names[e] = name
        lines.append(f"{indent}{ref(root)}")
        return lines


def _order(root):
    """Nodes operands first (as ``post_order``), with each Let as ("let", value printed first) before
    the nodes of its body and ("let-body", ...) after them, so the text binds a name before its uses."""
    out, seen = [], set()
    stack = [(root, "enter")]
    while stack:
        node, step = stack.pop()
        if step != "enter":
            out.append((step, node))
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Let):
            stack += [(node, "let-body"), (node.body, "enter"), (node, "let"), (node.value, "enter")]
            continue
        stack.append((node, "node"))
        stack += [(c, "enter") for c in reversed(list(node.children())) if id(c) not in seen]
    return out


def _differs(a, b):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return [list(x) if isinstance(x, (list, tuple)) else x for x in a] != \
            [list(x) if isinstance(x, (list, tuple)) else x for x in b]
    return a != b


def astext(expr, name=None, show_types=True):
    """The text of an expression or function (``name``: print as ``def @name``)."""
    p = _Printer(show_types)
    if isinstance(expr, Function):
        lines = p.function(expr, name)
    else:
        lines = p.body(expr, "")
    return "\n".join(lines)
