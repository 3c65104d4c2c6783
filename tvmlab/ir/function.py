"""Buffer, PrimFunc and IRModule: what ``tvmlab.lower`` returns and codegen consumes.

A PrimFunc's parameters are buffer data pointers (``Var`` of dtype "handle")
and scalar shape variables; ``buffer_map`` gives each pointer its Buffer
(shape, dtype, strides) so the runtime can check arguments before a call.
"""
from __future__ import annotations

from . import dtype as dt
from .expr import IntImm, Var
from .printer import Printer


class Buffer:
    """A typed region of memory: data pointer, shape, dtype, optional strides."""
    __slots__ = ("name", "data", "shape", "dtype", "strides", "scope", "__weakref__")

    def __init__(self, name, shape, dtype, data=None, strides=None, scope="global"):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dt.canonical(dtype)
        self.data = data if data is not None else Var(name, "handle")
        self.strides = tuple(strides) if strides else None
        self.scope = scope

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        shape = ", ".join(str(s) for s in self.shape)
        return f'T.Buffer(({shape}{"," if len(self.shape) == 1 else ""}), "{self.dtype}")'


class PrimFunc:
    """A lowered function: ``params`` (handles and scalars), ``buffer_map``, ``body``."""

    def __init__(self, name, params, buffer_map, body, attrs=None):
        self.name = name
        self.params = list(params)
        self.buffer_map = dict(buffer_map)
        self.body = body
        self.attrs = dict(attrs or {})

    def with_body(self, body, **attrs):
        return PrimFunc(self.name, self.params, self.buffer_map, body, self.attrs | attrs)

    def script(self):
        p = Printer()
        args = []
        for v in self.params:
            b = self.buffer_map.get(v)
            args.append(f"{b.name}: {b!r}" if b is not None else f"{v.name}: T.{v.dtype}")
        p.line("@T.prim_func")
        p.line(f"def {self.name}({', '.join(args)}):")
        p.indent += 1
        if self.attrs:
            shown = {k: v for k, v in self.attrs.items() if isinstance(v, (str, int, float, bool))}
            if shown:
                p.line(f"T.func_attr({shown!r})")
        p.stmt(self.body)
        return "\n".join(p.lines)

    def __str__(self):
        return self.script()

    __repr__ = __str__

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(self.script())}</pre>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)


class IRModule:
    """Named PrimFuncs (usually one) plus, when kept, the IR after every lowering step."""

    def __init__(self, functions, history=None):
        self.functions = dict(functions)
        self.history = dict(history or {})

    def __getitem__(self, name):
        return self.functions[name]

    def __contains__(self, name):
        return name in self.functions

    def __iter__(self):
        return iter(self.functions.values())

    def get_global_vars(self):
        return list(self.functions)

    def script(self):
        return "\n\n".join(f.script() for f in self.functions.values())

    def __str__(self):
        return self.script()

    __repr__ = __str__

    def show(self):
        print(self.script())

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(self.script())}</pre>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)


def const_int(x):
    """The Python int of an IntImm, else None."""
    return x.value if isinstance(x, IntImm) else None
