"""Host/device split: cut an AST3 function into GPU kernels and the host code that launches them.

A kernel is a maximal subtree that starts with a ``thread_extent`` AttrStmt
of a "blockIdx.*" or "threadIdx.*" axis.  Each kernel becomes a PrimFunc
whose body is target-neutral AST3:

* every thread index is one Var per tag, named after it ("blockIdx.x",
  "threadIdx.y", ...), the same Var object wherever it appears; the
  ``thread_extent`` AttrStmts are removed (their extents move to attrs);
* "shared" Allocates are hoisted to the top of the kernel body, "local"
  Allocates stay where they are (per-thread storage);
* barriers are ``Evaluate(Call("void", "tvm_storage_sync", ("shared",)))``.

Kernel attrs: ``launch`` {tag: extent Expr} for every launched tag (extents
are expressions of the host function's scalar params), ``thread_vars`` {tag:
Var}, ``shared`` [(Var, dtype, element count)], ``shared_bytes`` (int),
``calling_conv`` "device_kernel", ``host`` (the host function's name).
Kernel params are the buffer handles it uses (``buffer_map`` gives the
Buffer of each; global temporaries get a 1-D Buffer), then the scalar Vars it
uses, in host-param order.

The host PrimFunc keeps the original params and buffer_map; its body holds,
in order, Allocate("global") of temporaries between kernels and
``Evaluate(Call("int32", "launch_kernel", (StringImm(kernel name), *args)))``
for each launch; ``host.attrs["launches"]`` lists the same as ``KernelLaunch``
objects.  Any load or store left outside a kernel is a data-parallel loop
that was not bound to GPU threads, which is an error.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir import op as _op
from ..ir.arith import Analyzer
from ..ir.expr import Call, IntImm, StringImm, Var
from ..ir.function import Buffer, PrimFunc
from ..ir.functor import IRMutator, IRVisitor, substitute
from ..ir.stmt import Allocate, AttrStmt, Evaluate
from ..ir.tensor import IterVar

THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


def is_thread_attr(s):
    """True for a ``thread_extent`` AttrStmt of a hardware thread axis (blockIdx/threadIdx)."""
    return (isinstance(s, AttrStmt) and s.attr_key == "thread_extent" and isinstance(s.node, IterVar)
            and s.node.thread_tag in THREAD_TAGS)


@dataclass
class KernelLaunch:
    """One launch made by the host: kernel name, argument Vars, and {tag: extent Expr}."""
    name: str
    args: list
    launch: dict

    def grid(self):
        """(x, y, z) block counts as Exprs (1 where a tag is not launched)."""
        return tuple(self.launch.get(f"blockIdx.{a}", IntImm("int32", 1)) for a in "xyz")

    def block(self):
        """(x, y, z) threads per block as Exprs."""
        return tuple(self.launch.get(f"threadIdx.{a}", IntImm("int32", 1)) for a in "xyz")


@dataclass
class DeviceSplit:
    """The result of ``split_host_device``: ``host`` PrimFunc, ``kernels`` (PrimFuncs), ``launches``."""
    host: PrimFunc
    kernels: list = field(default_factory=list)
    launches: list = field(default_factory=list)


class _Uses(IRVisitor):
    """Buffer vars and scalar vars a kernel body uses but does not define."""

    def __init__(self):
        super().__init__()
        self.buffers, self.scalars, self.defined = {}, {}, set()

    def visit_Var(self, v):
        if v in self.defined:
            return
        if v.dtype == "handle":
            self.buffers[v] = None
        else:
            self.scalars[v] = None

    def visit_For(self, s):
        self.defined.add(s.loop_var)
        self.generic_visit(s)

    def visit_LetStmt(self, s):
        self.defined.add(s.var)
        self.generic_visit(s)

    def visit_Let(self, e):
        self.defined.add(e.var)
        self.generic_visit(e)

    def visit_Allocate(self, s):
        self.defined.add(s.buffer_var)
        self.generic_visit(s)

    def visit_AttrStmt(self, s):
        if isinstance(s.node, IterVar):
            self.defined.add(s.node.var)
            self.visit(s.value)
            self.visit(s.body)
            return
        self.generic_visit(s)


class _Kernel(IRMutator):
    """Strip thread attrs (collecting extents), unify thread Vars, pull out shared Allocates."""

    def __init__(self, kernel_name):
        super().__init__()
        self.name = kernel_name
        self.launch, self.vars, self.shared = {}, {}, []
        self.seen = {}        # each thread IterVar's var -> the kernel's Var for its tag

    def visit_AttrStmt(self, s):
        if not is_thread_attr(s):
            return self.generic_visit(s)
        tag = s.node.thread_tag
        ext = self.visit(s.value)
        if tag in self.launch:
            if not _same(self.launch[tag], ext):
                raise LoweringError(
                    f"{self.name}: thread axis {tag} is bound with two extents, {self.launch[tag]} and "
                    f"{ext}; every axis bound to {tag} in one kernel must have the same extent "
                    "(split both by the same factor)")
        else:
            self.launch[tag] = ext
        v = self.vars.get(tag)
        if v is None:
            v = self.vars[tag] = Var(tag, "int32")
        self.seen[s.node.var] = v
        return self.visit(s.body)        # visit_Var puts the kernel's Var in (one walk, not one per axis)

    def visit_Var(self, v):
        return self.seen.get(v, v)

    def visit_Allocate(self, s):
        if s.scope != "shared":
            return self.generic_visit(s)
        if not isinstance(s.extents[0], IntImm):
            raise LoweringError(f"{self.name}: shared buffer {s.buffer_var.name} has the symbolic size "
                                f"{s.extents[0]}; shared memory needs a constant size (split by a constant "
                                "factor and compute_at inside the split)")
        known = [k for k, (v, _, _) in enumerate(self.shared) if v is s.buffer_var]
        if known:           # one buffer allocated again (the copies of an unrolled loop): one array
            v, d, c = self.shared[known[0]]
            self.shared[known[0]] = (v, d, max(c, s.extents[0].value))
        else:
            self.shared.append((s.buffer_var, s.dtype, s.extents[0].value))
        return self.visit(s.body)


def _same(a, b):
    return Analyzer().can_prove(_op.eq(a, b))


class _Host(IRMutator):
    """Replace each kernel subtree with a launch; collect kernels."""

    def __init__(self, func, target_kind):
        super().__init__()
        self.func, self.kind = func, target_kind
        self.kernels, self.launches, self.temps = [], [], {}
        self.order = {p: k for k, p in enumerate(func.params)}
        self.host_loops = []        # serial host loops around launches (a scan's time loop)

    def visit_For(self, s):
        self.host_loops.append(s.loop_var)
        try:
            return self.generic_visit(s)
        finally:
            self.host_loops.pop()

    def visit_AttrStmt(self, s):
        if not is_thread_attr(s):
            return self.generic_visit(s)
        name = f"{self.func.name}_kernel{len(self.kernels)}"
        k = _Kernel(name)
        body = k.visit(s)
        # a store predicate may name a thread axis of a stage computed inside (every statement of
        # the kernel runs on all its threads): that use is outside the axis's own attribute
        body = substitute(body, k.seen)
        for var, dtype, count in reversed(k.shared):
            body = Allocate(var, dtype, (IntImm("int32", count),), _op.const(True), body, "shared")
        uses = _Uses()
        uses.defined.update(k.vars.values())
        uses.visit(body)
        handles = sorted(uses.buffers, key=lambda v: self.order.get(v, len(self.order)))
        scalars = sorted(uses.scalars, key=lambda v: self.order.get(v, len(self.order)))
        missing = [v for v in scalars if v not in self.order and v not in self.host_loops]
        if missing:
            raise LoweringError(f"{name}: uses {', '.join(v.name for v in missing)}, which the host "
                                "cannot pass (a loop variable outside the kernel); bind that loop to a "
                                "thread axis too, or move it inside the kernel")
        buffer_map = {}
        for h in handles:
            buf = self.func.buffer_map.get(h)
            if buf is None:
                if h not in self.temps:
                    raise LoweringError(f"{name}: buffer {h.name} is used by the kernel but is neither an "
                                        "argument nor allocated in global memory by the host")
                dtype, count = self.temps[h]
                buf = Buffer(h.name, (count,), dtype, data=h)
            buffer_map[h] = buf
        shared_bytes = sum(c * dt.itemsize(d) for _, d, c in k.shared)
        attrs = {"launch": dict(k.launch), "thread_vars": dict(k.vars), "shared": list(k.shared),
                 "shared_bytes": shared_bytes, "calling_conv": "device_kernel", "target": self.kind,
                 "host": self.func.name, "global_symbol": name}
        kernel = PrimFunc(name, handles + scalars, buffer_map, body, attrs)
        self.kernels.append(kernel)
        launch = KernelLaunch(name, handles + scalars, dict(k.launch))
        self.launches.append(launch)
        return Evaluate(Call("int32", "launch_kernel", (StringImm(name), *launch.args)))

    def visit_Allocate(self, s):
        if s.scope in ("shared", "local"):
            raise LoweringError(f"buffer {s.buffer_var.name} in {s.scope!r} memory is computed outside "
                                "every GPU kernel; compute_at it inside a loop bound to a thread axis")
        self.temps[s.buffer_var] = (s.dtype, s.extents[0])
        return self.generic_visit(s)


class _Unbound(IRVisitor):
    """Host code must not touch memory: whatever does is a stage left unbound."""

    def __init__(self):
        super().__init__()
        self.loops = []

    def visit_For(self, s):
        self.loops.append(s.loop_var.name)
        self.generic_visit(s)
        self.loops.pop()

    def visit_Store(self, s):
        self._fail(s.buffer_var, "written")

    def visit_Load(self, e):
        self._fail(e.buffer_var, "read")

    def visit_Call(self, c):
        if c.op != "launch_kernel":
            self.generic_visit(c)

    def _fail(self, var, what):
        where = f" in loop(s) {', '.join(self.loops)}" if self.loops else ""
        raise LoweringError(
            f"{var.name} is {what} outside every GPU kernel{where}: the data-parallel loops of stage "
            f"{var.name.split('.')[0]} are not bound to GPU threads; bind them, e.g. "
            f"bx, tx = s[{var.name.split('.')[0]}].split(axis, factor=64); s[...].bind(bx, "
            "te.thread_axis(\"blockIdx.x\")); s[...].bind(tx, te.thread_axis(\"threadIdx.x\"))")


def split_host_device(func, target_kind="cuda"):
    """Split AST3 PrimFunc ``func`` into a host PrimFunc and its kernels; returns a DeviceSplit."""
    h = _Host(func, target_kind)
    body = h.visit(func.body)
    _Unbound().visit(body)
    if not h.kernels:
        raise LoweringError(f"{func.name}: no loop is bound to a GPU thread axis, so there is no kernel "
                            f"to run on {target_kind}; bind the outer loops of each stage to "
                            "te.thread_axis(\"blockIdx.x\") and te.thread_axis(\"threadIdx.x\")")
    host = func.with_body(body, launches=list(h.launches), kernels=[k.name for k in h.kernels],
                          target=target_kind)
    return DeviceSplit(host, h.kernels, h.launches)


