"""Hybrid script -> AST1: a Python function's syntax tree read into a HybridOp.

The script's statements become AST2 as TVM's hybrid parser makes it:

* ``for i in range(a, b)`` (``unroll``, ``parallel``, ``vectorize``) is a loop
  from 0 of ``b - a`` iterations, ``i`` standing for ``i + a``;
  ``const_range`` is unrolled while parsing (its variable is a Python int);
  ``bind(tag, n)`` is no loop but a thread index, the kernel's
  ``thread_extent`` attributes wrapping the whole body;
* ``x = output_tensor(shape, dtype)`` declares an output, ``allocate(shape,
  dtype, scope)`` a buffer realized in the loop that declares it;
* ``x = value`` declares a constant when ``x`` is never assigned again and the
  value reads no memory, else a one-element buffer (``x[0]``) realized where ``x``
  is declared;
* ``y = other_script(...)`` inlines the other script's body; its outputs are
  buffers of this one;
* ``if`` / ``else``, ``a if c else b``, ``assert``, ``and`` / ``or`` / ``not``,
  arithmetic, comparisons (chained), calls of the intrinsics in
  ``intrinsics.py``, numbers and tuples captured from the enclosing Python code.

Anything else raises HybridScriptError naming the file and line.
"""
from __future__ import annotations

import ast
import numbers
import operator

from ..errors import HybridScriptError, TVMLabError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.functor import substitute
from ..ir.hybrid import HybridOp
from ..ir.stmt import AssertStmt, AttrStmt, For, IfThenElse, ProducerRealize, ProducerStore, seq
from ..ir.tensor import PlaceholderOp, Range, Tensor, is_thread_tag
from . import intrinsics
from .usage import collect

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}


class _Callee:
    """The value of ``other_script(...)`` inside a script: its operation, inlined where assigned."""
    __slots__ = ("op",)

    def __init__(self, op):
        self.op = op


class Parser:
    """Reads one ``def`` (``fdef``, an ast.FunctionDef) called with ``args``.

    ``scope`` maps the names the script captures (its globals and closure) to
    their Python values; ``filename`` and ``first_line`` place error messages.
    """

    def __init__(self, fdef, args, scope, filename="<script>", first_line=1):
        self.fdef, self.args, self.scope = fdef, list(args), scope
        self.filename, self.line0 = filename, first_line - 1
        self.name = fdef.name
        self.symbols = {}            # name -> (kind, value)
        self.binds = {}              # thread tag -> IterVar
        self.outputs = []            # output_tensor placeholders, in declaration order
        self.returned = None
        self.device = 0              # depth of bind loops around the statement being read
        self.loop_names = set()      # names of the loop variables so far (each axis has its own)
        self.ana = Analyzer()

    # ------------------------------------------------------------ errors
    def error(self, node, msg):
        line = getattr(node, "lineno", None)
        where = f"{self.filename}, line {self.line0 + line}" if line else self.filename
        raise HybridScriptError(f"hybrid script {self.name!r} ({where}): {msg}")

    def expr(self, node, v, what):
        """``v`` as an expression (numbers become constants)."""
        if isinstance(v, bool):
            return _op.const(v, "bool")
        if isinstance(v, (numbers.Number, E.Expr)) or (isinstance(v, E.ExprOp) and not isinstance(v, Tensor)):
            return _op.convert(v)
        if isinstance(v, Tensor):
            self.error(node, f"{what}: tensor {v.name} used as a value; index it ({v.name}[i])")
        self.error(node, f"{what}: expected a number or an expression, got {type(v).__name__}: {v!r}")

    # ------------------------------------------------------------ entry
    def parse(self):
        f = self.fdef
        a = f.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            self.error(f, "a script takes plain positional arguments only (no *args, **kwargs or keyword-only)")
        params = [x.arg for x in a.args]
        if len(params) != len(self.args):
            self.error(f, f"takes {len(params)} arguments ({', '.join(params)}) but was called with "
                          f"{len(self.args)}")
        known = set(self.scope) | intrinsics.NAMES
        self.usage = collect(f, params, known, self.error)
        for p, v in zip(params, self.args):
            self.symbols[p] = ("input", v)
        body = self.block(f.body, top=True)
        if self.returned is None:
            self.error(f, "the script must end with `return` of its output tensors")
        body = self.realize(f, body)
        return self.wrap_binds(body)

    def block(self, stmts, top=False):
        out = []
        for k, s in enumerate(stmts):
            if k == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) \
                    and isinstance(s.value.value, str):
                continue             # docstring
            if self.returned is not None:
                self.error(s, "statements after `return`")
            if isinstance(s, ast.Return) and not top:
                self.error(s, "`return` must be the last statement of the script, outside loops and ifs")
            out.append(self.stmt(s))
        return seq(*out)

    def stmt(self, node):
        return self._dispatch("s_", "statement", node)

    def value(self, node):
        return self._dispatch("e_", "expression", node)

    def _dispatch(self, prefix, what, node):
        """Parse ``node`` with its ``prefix + node type`` method; any error names the script's line."""
        fn = getattr(self, prefix + type(node).__name__, None)
        if fn is None:
            self.error(node, f"unsupported {what} `{ast.unparse(node).splitlines()[0]}` ({type(node).__name__})")
        try:
            return fn(node)
        except HybridScriptError:
            raise
        except TVMLabError as e:
            self.error(node, str(e))

    # ------------------------------------------------------------ storage
    def realize(self, scope_node, body):
        """Wrap ``body`` in the realizes of the buffers declared directly in ``scope_node``."""
        for name, u in self.usage.items():
            if u.scope is not scope_node or name not in self.symbols:
                continue
            kind, val = self.symbols.pop(name)       # out of scope (const_range declares it again)
            if kind not in ("buffer", "scalar", "callee"):
                continue
            for t, scope in (val if kind == "callee" else [val]):
                if scope == "global":
                    body = self.wrap_binds(body)        # global memory is allocated outside kernels
                bounds = tuple(Range(_op.const(0, _op.convert(d).dtype), _op.convert(d)) for d in t.shape)
                body = ProducerRealize(t, bounds, _op.const(True), body, scope)
        return body

    def wrap_binds(self, body):
        for iv in self.binds.values():
            body = AttrStmt(iv, "thread_extent", iv.dom.extent, body)
        self.binds = {}
        return body

    # ------------------------------------------------------------ statements
    def s_Pass(self, node):
        return None

    def s_Expr(self, node):
        self.error(node, "an expression alone is not a statement of hybrid script (assign its value)")

    def s_Return(self, node):
        v = node.value
        names = [v] if isinstance(v, ast.Name) else list(v.elts) if isinstance(v, ast.Tuple) else None
        if not names or not all(isinstance(n, ast.Name) for n in names):
            self.error(node, "return the output tensors by name (return c, or return c, d)")
        ids = [n.id for n in names]
        if len(set(ids)) != len(ids):
            self.error(node, f"an output is returned twice ({', '.join(ids)})")
        outs = []
        for n in ids:
            kind, val = self.symbols.get(n, (None, None))
            if kind != "output":
                self.error(node, f"returns {n!r}, which is not declared with output_tensor(...)")
            outs.append(val)
        self.returned = outs
        return None

    def s_Assert(self, node):
        cond = self.expr(node, self.value(node.test), "assert")
        msg = "assertion failed" if node.msg is None else self.value(node.msg)
        if not isinstance(msg, str):
            self.error(node, "an assert's message must be a string")
        return AssertStmt(_op.cast("bool", cond), E.StringImm(msg), seq())

    def s_If(self, node):
        cond = self.value(node.test)
        if not isinstance(cond, bool):
            cond = self.ana.simplify(_op.cast("bool", self.expr(node, cond, "if")))
            if isinstance(cond, E.IntImm):
                cond = bool(cond.value)
        if isinstance(cond, bool):           # known while parsing: only the branch taken
            return self.block(node.body if cond else node.orelse) if (cond or node.orelse) else None
        then = self.block(node.body)
        other = self.block(node.orelse) if node.orelse else None
        return IfThenElse(cond, then, other)

    def s_For(self, node):
        if node.orelse:
            self.error(node, "for ... else is not supported")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in intrinsics.LOOPS):
            self.error(node, "a loop iterates over range(), unroll(), parallel(), vectorize(), const_range() or "
                             f"bind(), not `{ast.unparse(it)}`")
        fname, kind = it.func.id, intrinsics.LOOPS[it.func.id]
        if it.keywords:
            self.error(node, f"{fname}() takes positional arguments only")
        args = [self.value(a) for a in it.args]
        name = node.target.id
        if kind == "bind":
            return self._bind_loop(node, name, args)
        if len(args) not in (1, 2):
            self.error(node, f"{fname}() takes (extent) or (begin, end), got {len(args)} arguments")
        low = self.expr(node, args[0], fname) if len(args) == 2 else _op.const(0, "int32")
        end = self.expr(node, args[-1], fname)
        ext = self.ana.simplify(_op.sub(end, low))
        if not dt.is_int(ext.dtype) or not dt.is_int(low.dtype):
            self.error(node, f"{fname}() needs integer bounds, got {low} and {end}")
        if kind == "const":
            low, ext = self.ana.simplify(low), ext
            if not (isinstance(low, E.IntImm) and isinstance(ext, E.IntImm)):
                self.error(node, f"const_range() needs bounds known while parsing, got {low} and {end}")
            bodies = []
            for i in range(low.value, low.value + ext.value):
                self.symbols[name] = ("const_loop", i)
                bodies.append(self.realize(node, self.block(node.body)))
                del self.symbols[name]
            return seq(*bodies)
        var = E.Var(self._loop_name(name), "int64" if ext.dtype == "int64" else "int32")
        is_zero = isinstance(low, E.IntImm) and low.value == 0
        self.symbols[name] = ("loop", var if is_zero else _op.add(var, low))
        body = self.realize(node, self.block(node.body))
        del self.symbols[name]
        return For(var, _op.const(0, var.dtype), ext, kind, body)

    def _loop_name(self, name):
        """``name``, or ``name1``, ``name2``... for a later loop reusing it: axes are found by name."""
        base, k = name, 0
        while name in self.loop_names:
            k += 1
            name = f"{base}{k}"
        self.loop_names.add(name)
        return name

    def _bind_loop(self, node, name, args):
        if len(args) != 2 or not isinstance(args[0], str):
            self.error(node, "bind() takes a thread tag and an extent: bind('threadIdx.x', n)")
        tag = args[0]
        if not is_thread_tag(tag) or tag in ("vthread", "cthread"):
            self.error(node, f"bind(): unknown thread tag {tag!r}; use blockIdx.x/y/z or threadIdx.x/y/z")
        ext = self.ana.simplify(self.expr(node, args[1], "bind()"))
        iv = self.binds.get(tag)
        if iv is None:
            from ..te import thread_axis
            iv = self.binds[tag] = thread_axis((0, ext), tag)
        elif not self.ana.can_prove(_op.eq(iv.dom.extent, ext)):
            self.error(node, f"{tag} is bound with extent {iv.dom.extent} elsewhere in the script and {ext} here; "
                             "one thread index has one extent")
        self.symbols[name] = ("thread", iv)
        self.device += 1
        body = self.realize(node, self.block(node.body))
        self.device -= 1
        del self.symbols[name]
        return body

    def s_AugAssign(self, node):
        t, idx = self.target(node.target)
        old = E.ProducerLoad(t, idx)
        try:
            new = _BINOPS[type(node.op)](old, self.value(node.value))
        except KeyError:
            self.error(node, f"unsupported operator {type(node.op).__name__}=")
        return self.store(node, t, idx, new)

    def s_Assign(self, node):
        if len(node.targets) != 1:
            self.error(node, "chained assignment (a = b = ...) is not supported")
        lhs = node.targets[0]
        rhs = self.value(node.value)
        if isinstance(rhs, _Callee):
            return self._assign_callee(node, lhs, rhs.op)
        if isinstance(lhs, ast.Name):
            return self._assign_name(node, lhs, rhs)
        if isinstance(lhs, ast.Subscript):
            t, idx = self.target(lhs)
            if isinstance(rhs, intrinsics.Alloc):
                self.error(node, "assign output_tensor/allocate to a name")
            return self.store(node, t, idx, self._simplify(self.expr(node, rhs, f"store into {t.name}")))
        self.error(node, f"cannot assign to `{ast.unparse(lhs)}`")

    def _assign_name(self, node, lhs, rhs):
        name = lhs.id
        u = self.usage[name]
        if name not in self.symbols:
            if u.decl is not lhs:
                self.error(node, f"{name!r} is used outside the scope that declares it")
            if isinstance(rhs, intrinsics.Alloc):
                t = PlaceholderOp(name, rhs.shape, rhs.dtype).output(0)
                if rhs.scope == "output":
                    if u.scope is not self.fdef:
                        self.error(node, "output_tensor() inside a loop; declare outputs before the loops")
                    self.symbols[name] = ("output", t)
                    self.outputs.append(t)
                else:
                    self.symbols[name] = ("buffer", (t, rhs.scope))
                return None
            if not u.stored and not _reads_memory(rhs):
                self.symbols[name] = ("const", rhs)
                return None
            e = self._simplify(self.expr(node, rhs, f"value of {name!r}"))
            t = PlaceholderOp(name, (_op.const(1, "int32"),), e.dtype).output(0)
            self.symbols[name] = ("scalar", (t, "local"))
            return self.store(node, t, (_op.const(0, "int32"),), e)
        kind, val = self.symbols[name]
        if kind != "scalar":
            self.error(node, f"cannot assign to {name!r} again: it is {_KIND_WORDS.get(kind, kind)}")
        if isinstance(rhs, intrinsics.Alloc):
            self.error(node, f"{name!r} is a scalar variable; allocate a new name")
        return self.store(node, val[0], (_op.const(0, "int32"),), self._simplify(self.expr(node, rhs, name)))

    def _assign_callee(self, node, lhs, op):
        names = [lhs] if isinstance(lhs, ast.Name) else list(lhs.elts) if isinstance(lhs, ast.Tuple) else []
        if not names or not all(isinstance(n, ast.Name) for n in names):
            self.error(node, "assign a hybrid function's outputs to names (c = f(a) or c, d = f(a))")
        if len(names) != op.num_outputs:
            self.error(node, f"{op.name} returns {op.num_outputs} tensors, assigned to {len(names)} names")
        for n, t in zip(names, op.output_placeholders):
            if n.id in self.symbols or self.usage[n.id].decl is not n:
                self.error(node, f"{n.id!r} is assigned more than once; a hybrid function's output needs a new name")
            self.symbols[n.id] = ("callee", [(t, "global")])
        renames = {}
        for iv in op.axis:                  # the callee's loops become axes of this script: unique names
            name = self._loop_name(iv.var.name)
            if name != iv.var.name:
                renames[iv.var] = E.Var(name, iv.var.dtype)
        return substitute(op.body, renames)

    def target(self, node):
        """(tensor, indices) written by ``node`` (``x[i, j]`` or a scalar variable ``x``)."""
        if isinstance(node, ast.Name):
            kind, val = self.symbols.get(node.id, (None, None))
            if kind != "scalar":
                self.error(node, f"cannot update {node.id!r}: it is {_KIND_WORDS.get(kind, 'undefined')}")
            return val[0], (_op.const(0, "int32"),)
        if not isinstance(node, ast.Subscript):
            self.error(node, f"cannot assign to `{ast.unparse(node)}`")
        t = self.value(node.value)
        if not isinstance(t, Tensor):
            self.error(node, f"cannot write `{ast.unparse(node.value)}`: it is not a tensor")
        return t, self.indices(node, t, self.value(node.slice))

    def indices(self, node, t, idx):
        idx = list(idx) if isinstance(idx, tuple) else [idx]
        if len(idx) != t.ndim:
            self.error(node, f"tensor {t.name} has {t.ndim} dimensions, indexed with {len(idx)}")
        out = []
        for k, i in enumerate(idx):
            e = self.expr(node, i, f"index {k} of {t.name}")
            if not dt.is_int(e.dtype):
                self.error(node, f"index {k} of {t.name} must be an integer, got {e} of type {e.dtype}")
            out.append(e)
        return tuple(out)

    def store(self, node, t, idx, value):
        v = self.expr(node, value, f"store into {t.name}")
        return ProducerStore(t, _op.cast(t.dtype, v), idx)

    def _simplify(self, e):
        """TVM's simplification of an assigned value (a float divided by a constant is a product)."""
        e = self.ana.simplify(e)
        if isinstance(e, E.Div) and isinstance(e.b, E.FloatImm) and e.b.value != 0:
            return _op.mul(e.a, _op.const(1.0 / e.b.value, e.b.dtype))
        return e

    # ------------------------------------------------------------ expressions
    def e_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return _op.const(v, "bool")
        if isinstance(v, int):
            return _op.const(v, "int32" if -2**31 <= v < 2**31 else "int64")
        if isinstance(v, float):
            return _op.const(v, "float32")
        if isinstance(v, str):
            return v
        self.error(node, f"unsupported constant {v!r}")

    def e_Name(self, node):
        name = node.id
        if name in self.symbols:
            kind, val = self.symbols[name]
            if kind in ("buffer", "scalar"):
                t = val[0]
                return E.ProducerLoad(t, (_op.const(0, "int32"),)) if kind == "scalar" else t
            if kind == "callee":
                return val[0][0]
            if kind == "thread":
                return val.var
            return val
        if name in self.scope:
            return self.captured(node, name, self.scope[name])
        self.error(node, f"name {name!r} is not defined here")

    def captured(self, node, name, v):
        """A value the script captures from Python: numbers, strings and (nested) tuples of them."""
        if isinstance(v, (bool, numbers.Number, str, E.Expr)):
            return _op.convert(v) if not isinstance(v, str) else v
        if isinstance(v, (list, tuple)):
            return [self.captured(node, name, x) for x in v]
        if hasattr(v, "dtype") and hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
            return _op.convert(v)
        self.error(node, f"captures {name!r}, a {type(v).__name__}; a script can capture numbers, strings and "
                         "tuples or lists of them")

    def e_Attribute(self, node):
        v = self.value(node.value)
        if isinstance(v, Tensor) and node.attr in ("shape", "dtype", "ndim"):
            return tuple(v.shape) if node.attr == "shape" else getattr(v, node.attr)
        self.error(node, f"unsupported attribute `{ast.unparse(node)}` (a tensor has .shape, .dtype and .ndim)")

    def e_Subscript(self, node):
        v = self.value(node.value)
        idx = self.value(node.slice)
        if isinstance(v, Tensor):
            items = list(idx) if isinstance(idx, tuple) else [idx]
            if len(items) < v.ndim:
                self.error(node, f"tensor {v.name} has {v.ndim} dimensions, indexed with {len(items)}")
            return E.ProducerLoad(v, self.indices(node, v, idx))
        if isinstance(v, (list, tuple)):
            for i in (idx if isinstance(idx, tuple) else (idx,)):
                if isinstance(i, E.IntImm):
                    i = i.value
                if not isinstance(i, int) or isinstance(i, bool):
                    self.error(node, f"a list or tuple is indexed with constants (or const_range variables), "
                                     f"got {i}")
                if not isinstance(v, (list, tuple)) or not -len(v) <= i < len(v):
                    self.error(node, f"index {i} out of range of `{ast.unparse(node.value)}`")
                v = v[i]
            return v
        self.error(node, f"`{ast.unparse(node.value)}` cannot be indexed")

    def e_Tuple(self, node):
        return tuple(self.value(x) for x in node.elts)

    e_List = e_Tuple

    def e_BinOp(self, node):
        fn = _BINOPS.get(type(node.op))
        if fn is None:
            self.error(node, f"unsupported operator {type(node.op).__name__}")
        a, b = self.value(node.left), self.value(node.right)
        for x in (a, b):
            self.expr(node, x, f"operand of {type(node.op).__name__}")
        return fn(a, b)

    def e_UnaryOp(self, node):
        v = self.value(node.operand)
        self.expr(node, v, f"operand of {type(node.op).__name__}")
        if isinstance(node.op, ast.Not):
            return (not v) if isinstance(v, (bool, numbers.Number)) else _op.logical_not(_op.cast("bool", v))
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](v)

    def e_BoolOp(self, node):
        vals = [self.value(v) for v in node.values]
        if all(isinstance(v, (bool, numbers.Number)) for v in vals):
            return all(vals) if isinstance(node.op, ast.And) else any(vals)
        conds = [_op.cast("bool", self.expr(node, v, "condition")) for v in vals]
        return _op.all(*conds) if isinstance(node.op, ast.And) else _op.any(*conds)

    def e_Compare(self, node):
        vals = [self.value(node.left)] + [self.value(c) for c in node.comparators]
        out = []
        for op, a, b in zip(node.ops, vals, vals[1:]):
            fn = _CMPOPS.get(type(op))
            if fn is None:
                self.error(node, f"unsupported comparison {type(op).__name__}")
            if isinstance(a, (str, list, tuple)) or isinstance(b, (str, list, tuple)):
                self.error(node, "comparisons take numbers or expressions")
            out.append(fn(a, b))
        if all(isinstance(c, bool) for c in out):
            return all(out)
        return _op.all(*[_op.convert(c) for c in out]) if len(out) > 1 else out[0]

    def e_IfExp(self, node):
        cond = self.value(node.test)
        if isinstance(cond, bool):
            return self.value(node.body if cond else node.orelse)
        a, b = self.value(node.body), self.value(node.orelse)
        return _op.if_then_else(_op.cast("bool", self.expr(node, cond, "condition")), self.expr(node, a, "value"),
                                self.expr(node, b, "value"))

    def e_Call(self, node):
        fname = node.func.id
        args = [self.value(a) for a in node.args]
        kwargs = {k.arg: self.value(k.value) for k in node.keywords}
        if fname in intrinsics.LOOPS:
            self.error(node, f"{fname}() makes a loop: use it as `for i in {fname}(...)`")
        if fname in intrinsics.CALLS and fname not in self.symbols:
            return intrinsics.CALLS[fname](self, node, fname, args, kwargs)
        fn = self.scope.get(fname)
        if getattr(fn, "_hybrid_script", None) is None:
            self.error(node, f"calls {fname!r}, which is not a hybrid script (@te.hybrid.script) nor an intrinsic")
        if kwargs:
            self.error(node, f"a hybrid function takes positional arguments, {fname}() got keywords")
        outs = fn(*args)
        return _Callee((outs[0] if isinstance(outs, list) else outs).op)


_KIND_WORDS = {"input": "an argument of the script", "output": "an output tensor", "buffer": "an allocated buffer",
               "const": "a constant (assigned once)", "loop": "a loop variable", "const_loop": "a loop variable",
               "thread": "a thread index", "callee": "a hybrid function's output"}


def _reads_memory(v):
    """Whether a value changes as memory is written (it reads a tensor): such a value needs storage."""
    if not isinstance(v, E.Expr):
        return False
    from ..ir.functor import post_order_visit
    found = []
    post_order_visit(v, lambda x: found.append(x) if isinstance(x, E.ProducerLoad) else None)
    return bool(found)


def source_to_op(fdef, args, scope, filename="<script>", first_line=1, tag="HybridOp"):
    """The output tensor (or list of tensors) of script ``fdef`` called with ``args``."""
    p = Parser(fdef, args, scope, filename, first_line)
    body = p.parse()
    inputs = []

    def gather(a):
        if isinstance(a, Tensor):
            if a not in inputs:
                inputs.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                gather(x)
    for a in p.args:
        gather(a)
    op = HybridOp(fdef.name, tag, None, inputs, p.returned, body)
    return op.outputs[0] if op.num_outputs == 1 else list(op.outputs)
