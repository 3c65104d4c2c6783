"""CodeGenLLVM: AST3 PrimFuncs to one textual LLVM module.

Each PrimFunc becomes ``i32 @name(ptr noalias align 64 %A, ..., i32 %n)`` with
the C ABI, parameters in PrimFunc order.  Buffer pointers are ``noalias``
(the runtime rejects a written buffer passed twice) and 64-byte aligned (every
NDArray is); constant-shape buffers are also ``dereferenceable``, which lets
LLVM hoist loads out of conditionals.
"""
from __future__ import annotations

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir.expr import IntImm, Var
from ..runtime.library import MANGLE_PREFIX, function_symbol
from . import llvm_ir as L
from .llvm_expr import ExprMixin
from .llvm_intrin import IntrinMixin
from .llvm_parallel import ParallelMixin
from .llvm_stmt import ALIGN, StmtMixin
from .llvm_types import abi_type, value_type

_PTR_ATTRS = "noalias nocapture nofree noundef align 64"

# Functions named as a C library function the code may call get another symbol (runtime.library's
# function_symbol); these prefixes stay reserved for OpenMP, LLVM and tvmlab itself.
RESERVED_PREFIXES = ("GOMP_", "omp_", "llvm.", "__", MANGLE_PREFIX)


def check_symbol(name):
    """Raise BuildError unless ``name`` can name a generated function."""
    if not isinstance(name, str) or not name.isascii() or not name.replace(".", "_").isidentifier():
        raise BuildError(f"function name {name!r} is not a valid symbol name (letters, digits, '_' and '.')")
    if name.startswith(RESERVED_PREFIXES):
        raise BuildError(f"function name {name!r} clashes with a library function the generated code may "
                         "call; choose another name")


def _const_dim(x):
    """The int value of a constant buffer dim (an IntImm or a plain int), else None."""
    if isinstance(x, IntImm):
        return x.value
    return x if isinstance(x, int) else None


def signature(func):
    """The parameters of the generated function: ``func.params``, then every variable that appears as a
    whole dim of a buffer shape or stride but is not a parameter (the runtime fills it in from the
    arrays' shapes, so the body may use it like TVM binds shape variables)."""
    params = list(func.params)
    seen = set(params)
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        for d in tuple(buf.shape) + tuple(buf.strides or ()):
            if isinstance(d, Var) and d not in seen and not dt.is_handle(d.dtype):
                seen.add(d)
                params.append(d)
    return params


class FunctionState:
    """What the generator tracks for the LLVM function being written."""
    __slots__ = ("fn", "start", "vars", "heap", "masks", "in_parallel")

    def __init__(self, fn, start, in_parallel=False):
        self.fn = fn
        self.start = start          # first block after the entry block (which holds allocas)
        self.vars = {}              # Var -> Value
        self.heap = []              # live heap buffers, freed on early return
        self.masks = []             # vector conditions of enclosing if_then_else
        self.in_parallel = in_parallel


class CodeGenLLVM(ExprMixin, IntrinMixin, StmtMixin, ParallelMixin):
    """Writes the LLVM module for a set of PrimFuncs (``add_function`` each, then ``text()``)."""

    def __init__(self, triple, datalayout, openmp=True, name="tvmlab"):
        self.module = L.Module(name, triple, datalayout)
        self.openmp = openmp
        self._expr_handlers = {}
        self._stmt_handlers = {}
        self._defined = []
        self.st = self.b = None

    def enter_function(self, fn, in_parallel=False):
        start = fn.new_block("start")
        self.st = FunctionState(fn, start, in_parallel)
        self.b = L.Builder(fn)
        self.b.position(start)

    def finish_function(self):
        fn = self.st.fn
        fn.entry.instrs.append(f"br label %{self.st.start.label}")
        fn.entry.terminated = True
        self._defined.append(fn.name)

    def add_function(self, name, func):
        """Generate ``func`` as ``@name``; returns the error table {code: (kind, message)}."""
        check_symbol(name)
        self.func_name = name
        self.errors = {}
        self.buf_elem = {}
        self.aligned = {}
        self.parallel_count = 0
        params = []
        sig = signature(func)
        for p in sig:
            if dt.is_handle(p.dtype):
                buf = func.buffer_map.get(p)
                attrs = _PTR_ATTRS
                dims = [_const_dim(s) for s in buf.shape] if buf is not None else [None]
                if None not in dims:
                    nbytes = dt.itemsize(buf.dtype)
                    for d in dims:
                        nbytes *= d
                    if nbytes > 0:
                        attrs += f" dereferenceable({nbytes})"
                params.append(("ptr", attrs, buf.name if buf is not None else p.name))
            else:
                params.append((abi_type(p.dtype), "noundef", p.name))
        fn = self.module.add_function(L.Function(function_symbol(name), "i32", params))
        self.enter_function(fn)
        for p, arg in zip(sig, fn.args):
            self.st.vars[p] = self._param_value(p, arg)
            buf = func.buffer_map.get(p)
            if buf is not None:
                self.st.vars[buf.data] = arg
                for v in (p, buf.data):     # indices count scalars, also in buffers of vector elements
                    self.buf_elem[v] = dt.element_of(buf.dtype)
                    self.aligned[v] = ALIGN
            elif dt.is_handle(p.dtype):
                self.aligned[p] = ALIGN
        self.stmt(func.body)
        if not self.b.block.terminated:
            self.b.ret(L.const("i32", 0))
        self.finish_function()
        return self.errors

    def _param_value(self, p, arg):
        """A scalar argument as a value of its dtype (bool arrives as i8, float16 as float)."""
        if dt.is_handle(p.dtype):
            return arg
        want = value_type(p.dtype)
        if arg.ty == want:
            return arg
        if want == "i1":
            return self.b.icmp("ne", arg, L.const(arg.ty, 0), hint=p.name)
        return self.b.cast("fptrunc", arg, want, hint=p.name)

    def text(self):
        """The module as LLVM assembly."""
        names = set()
        for n in self._defined:
            if n in names or n in self.module._decls:
                raise BuildError(f"function name {n!r} is used twice in one module (or clashes with a library "
                                 "function the code calls); rename the function")
            names.add(n)
        return self.module.text()
