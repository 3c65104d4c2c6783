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
    """A typed region of memory: data pointer, shape, dtype, optional strides.

    ``elem_offset`` (elements from ``data`` to the first element) and
    ``offset_factor`` matter when a buffer is bound to part of a tensor
    (tensorize): a Var offset or stride is bound to the region's, a constant
    one must match it.
    """
    __slots__ = ("name", "data", "shape", "dtype", "strides", "scope", "elem_offset",
                 "offset_factor", "__weakref__")

    def __init__(self, name, shape, dtype, data=None, strides=None, scope="global",
                 elem_offset=None, offset_factor=0):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dt.canonical(dtype)
        self.data = data if data is not None else Var(name, "handle")
        self.strides = tuple(strides) if strides else None
        self.scope = scope
        self.elem_offset = elem_offset if elem_offset is not None else IntImm("int32", 0)
        self.offset_factor = int(offset_factor or 0)

    def access_ptr(self, access_mask="rw", ptr_type="handle", content_lanes=1, offset=0, extent=None):
        """A pointer to element ``offset`` (past ``elem_offset``), for ``call_extern``.

        ``access_mask``: "r", "w", "rw" or an int (1 read, 2 write); the
        pointer's element type is the buffer's dtype.
        """
        from . import op as _op
        from .expr import Call, StringImm
        if isinstance(access_mask, str):
            if not access_mask or set(access_mask) - {"r", "w"}:
                from ..errors import DSLError
                raise DSLError(f"access_ptr of buffer {self.name}: access mask must use 'r' and 'w', "
                               f"got {access_mask!r}")
            access_mask = (1 if "r" in access_mask else 0) | (2 if "w" in access_mask else 0)
        if extent is None:
            extent = _op.const(1, "int32")
            for d in self.shape:
                extent = _op.mul(extent, d)
        return Call("handle", "tvm_access_ptr",
                    (StringImm(self.dtype), self.data, _op.add(self.elem_offset, offset),
                     _op.convert(extent), _op.const(int(access_mask), "int32")))

    def _flat(self, begin):
        from . import op as _op
        begin = tuple(begin) if isinstance(begin, (list, tuple)) else (begin,)
        strides = self.strides
        if not strides:
            strides, acc = [], _op.const(1, "int32")
            for d in reversed(self.shape):
                strides.append(acc)
                acc = _op.mul(acc, d)
            strides = tuple(reversed(strides))
        idx = self.elem_offset
        for b, st in zip(begin, strides):
            idx = _op.add(idx, _op.mul(b, st))
        return idx

    def vload(self, begin, dtype=None):
        """Read the element at ``begin`` (a flat AST3 load)."""
        from .expr import Load
        dtype = dt.canonical(dtype) if dtype else self.dtype
        return Load(dtype, self.data, _lanes_index(self._flat(begin), dt.lanes(dtype)))

    def vstore(self, begin, value):
        """Write ``value`` at ``begin`` (a flat AST3 store)."""
        from . import op as _op
        from .stmt import Store
        value = _op.convert(value)
        return Store(self.data, value, _lanes_index(self._flat(begin), dt.lanes(value.dtype)))

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        shape = ", ".join(str(s) for s in self.shape)
        return f'T.Buffer(({shape}{"," if len(self.shape) == 1 else ""}), "{self.dtype}")'


def _lanes_index(index, lanes):
    """A vector access of ``lanes`` consecutive elements from ``index`` (a Ramp)."""
    if lanes == 1:
        return index
    from .expr import Ramp
    from . import op as _op
    return Ramp(index, _op.const(1, index.dtype), lanes)


class PrimFunc:
    """A lowered function: ``params`` (handles and scalars), ``buffer_map``, ``body``."""

    def __init__(self, name, params=None, buffer_map=None, body=None, attrs=None):
        if isinstance(name, (list, tuple)):
            # TVM's PrimFunc(params, body, ret_type=None, buffer_map=None, attrs=None)
            tvm_params, body, bmap = name, params, body if isinstance(body, dict) else buffer_map
            name = (attrs or {}).get("global_symbol", "main")
            params, buffer_map = [], dict(bmap or {})
            for p in tvm_params:
                if isinstance(p, Buffer):
                    params.append(p.data)
                    buffer_map[p.data] = p
                else:
                    params.append(p.asobject() if hasattr(p, "asobject") else p)
        self.name = name
        self.params = list(params)
        self.buffer_map = dict(buffer_map or {})
        self.body = body
        self.attrs = dict(attrs or {})

    def with_attr(self, key, value=None):
        """A copy with attribute ``key`` set (``"global_symbol"`` also renames it); ``key`` may be
        a dict of several attributes."""
        items = dict(key) if isinstance(key, dict) else {key: value}
        out = PrimFunc(self.name, self.params, self.buffer_map, self.body, self.attrs | items)
        if "global_symbol" in items:
            out.name = items["global_symbol"]
        return out

    def with_body(self, body, **attrs):
        return PrimFunc(self.name, self.params, self.buffer_map, body, self.attrs | attrs)

    def script(self):
        p = Printer()
        args = []
        for v in self.params:
            b = self.buffer_map.get(v)
            args.append(f"{p.vn(v)}: {b!r}" if b is not None else f"{p.vn(v)}: T.{v.dtype}")
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

    def astext(self, show_meta_data=True):
        """The text form (TVM's name)."""
        return self.script()

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(self.script())}</pre>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)


class GlobalVar:
    """TVM's name of a module-level function: ``IRModule({GlobalVar("main"): f})`` keys by its name."""
    __slots__ = ("name_hint",)

    def __init__(self, name_hint):
        if not isinstance(name_hint, str):
            raise TypeError(f"GlobalVar takes a name, got {type(name_hint).__name__}")
        self.name_hint = name_hint

    def __eq__(self, other):
        return isinstance(other, GlobalVar) and other.name_hint == self.name_hint

    def __hash__(self):
        return hash(("GlobalVar", self.name_hint))

    def __repr__(self):
        return f"GlobalVar({self.name_hint!r})"


class IRModule:
    """Named PrimFuncs (usually one) plus, when kept, the IR after every lowering step."""

    def __init__(self, functions=None, history=None):
        self.functions = {getattr(k, "name_hint", k): v for k, v in dict(functions or {}).items()}
        self.history = dict(history or {})

    @classmethod
    def from_expr(cls, expr, functions=None, type_defs=None):
        """A module whose "main" is ``expr`` (a PrimFunc, or a graph-level function; see ``tvmlab.relay``)."""
        if isinstance(expr, PrimFunc):
            return cls({"main": expr} | dict(functions or {}))
        if _FROM_EXPR is None:
            from ..errors import TVMLabError
            raise TVMLabError("IRModule.from_expr needs the graph level: `from tvmlab import relay` first")
        return _FROM_EXPR(cls, expr, functions)

    def __getitem__(self, name):
        return self.functions[name]

    def __setitem__(self, name, func):
        self.functions[name] = func

    def __contains__(self, name):
        return name in self.functions

    def __iter__(self):
        return iter(self.functions.values())

    def _move(self):
        """TVM hands a module over without copying it; here the module itself."""
        return self

    def get_global_vars(self):
        return list(self.functions)

    def script(self):
        return "\n\n".join(f.script() if isinstance(f, PrimFunc) else f.script(name)
                             for name, f in self.functions.items())

    def __str__(self):
        return self.script()

    __repr__ = __str__

    def show(self):
        print(self.script())

    def astext(self, show_meta_data=True):
        """The text form (TVM's name)."""
        return self.script()

    def _repr_html_(self):
        import html
        return f"<pre>{html.escape(self.script())}</pre>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Rich display in a notebook (drawn by tvmlab.widgets.repr)."""
        from ..widgets.repr import mimebundle
        return mimebundle(self)


_FROM_EXPR = None


def register_from_expr(fn):
    """Set how ``IRModule.from_expr`` wraps an expression (the graph level registers it; ir imports nothing above)."""
    global _FROM_EXPR
    _FROM_EXPR = fn


def const_int(x):
    """The Python int of an IntImm, else None."""
    return x.value if isinstance(x, IntImm) else None
