"""GLSL compute shaders (``#version 430``) from the GPU lowering's kernels: ``"opengl -compute"``.

The driver lowers the schedule with the shared GPU lowering (thread binding,
shared memory, barriers, host/device split; ``tvmlab.lower.pipeline.
lower_for_device``), exactly as for CUDA.  Each kernel becomes one compute
shader: ``blockIdx.*`` is ``gl_WorkGroupID``, ``threadIdx.*`` is
``gl_LocalInvocationID`` (so the threadIdx extents are the shader's
``local_size``, which must be constants), tensors are std430 storage buffers,
"shared" buffers are ``shared`` arrays, "local" buffers per-invocation arrays,
and the lowering's barrier is ``memoryBarrierShared(); groupMemoryBarrier();
barrier();`` (like ``__syncthreads()``, it orders the work group's global
writes too).  The
host function's launches, in order, become the runtime's dispatches, with
the work-group counts evaluated from the shape variables at call time.
"""
from __future__ import annotations

from ..errors import BuildError
from ..ir import expr as E
from ..ir.arith import Analyzer
from ..ir.arith.interval import POS_INF, IntervalSet
from ..ir.stmt import Allocate, AttrStmt, Evaluate, LetStmt, SeqStmt, is_no_op
from ..ir.tensor import Range
from ..lower.thread_sync import is_barrier
from ..runtime import opengl_context as glc
from ..runtime.opengl_module import ComputeStep, GLFunction, TempSpec
from .common import written_buffers
from .glsl_params import params_of, size_fn
from .glsl_expr import Names, glsl_type, shader_source
from .glsl_fragment import check_dtypes
from .glsl_stmt import StmtWriter

_AXES = "xyz"


class ComputeWriter(StmtWriter):
    """Writes the compute shader of one kernel."""

    def __init__(self, kernel, shape_vars):
        self.k = kernel
        self.where = f"OpenGL compute kernel {kernel.name}"
        self.names = Names()
        self.ana = Analyzer()
        self.helpers = set()
        self.lines = []
        self.indent = 1
        self.buffers = {}        # handle Var -> GLSL array name (storage buffers)
        self.arrays = {}         # shared/local Var -> GLSL array name
        for v in shape_vars:
            self.ana.bind(v, IntervalSet(E.IntImm("int32", 0), POS_INF))

    def load(self, e):
        name = self.buffers.get(e.buffer_var) or self.arrays.get(e.buffer_var)
        if name is None:
            raise BuildError(f"{self.where}: buffer {e.buffer_var.name} is read but is not bound")
        return f"{name}[{self.expr(e.index)}]"

    def _s_Store(self, s):
        name = self.buffers.get(s.buffer_var) or self.arrays.get(s.buffer_var)
        if name is None:
            raise BuildError(f"{self.where}: buffer {s.buffer_var.name} is written but is not bound")
        if s.predicate is not None and not (isinstance(s.predicate, E.IntImm) and s.predicate.value):
            raise BuildError(f"{self.where}: predicated stores are not supported by the OpenGL target")
        self.emit(f"{name}[{self.expr(s.index)}] = {self.expr(s.value)};")

    def _s_Evaluate(self, s):
        if is_no_op(s):
            return
        if is_barrier(s):
            self.emit("memoryBarrierShared();")
            self.emit("groupMemoryBarrier();")
            self.emit("barrier();")
            return
        raise BuildError(f"{self.where}: cannot evaluate {s.value} for its effect in a compute shader")

    def _s_Allocate(self, s):
        if s.buffer_var in self.arrays:           # shared: declared at global scope already
            self.stmt(s.body)
            return
        if s.scope not in ("local", "warp", ""):
            raise BuildError(f"{self.where}: buffer {s.buffer_var.name} of scope {s.scope!r} inside the "
                             "kernel body; only 'shared' (hoisted) and 'local' buffers can live in a shader")
        n = _const_count(s, self.where)
        t = glsl_type(s.dtype, f"{self.where}: local buffer {s.buffer_var.name}")
        name = self.names.of(s.buffer_var, s.buffer_var.name)
        self.arrays[s.buffer_var] = name
        self.emit(f"{t} {name}[{n}];")
        self.stmt(s.body)

    def check_loop(self, s):
        if s.kind == "thread_binding":
            raise BuildError(f"{self.where}: loop {s.loop_var.name} is still bound to a thread after lowering")

    def write(self, local_size, dtypes, scalar_keys):
        k = self.k
        head = [f"layout(local_size_x = {local_size[0]}, local_size_y = {local_size[1]}, "
                f"local_size_z = {local_size[2]}) in;"]
        writes = written_buffers(k.body)
        bindings, scalars = [], []
        for p in k.params:
            if p.dtype == "handle":
                t = glsl_type(dtypes[p], f"{self.where}: tensor {p.name}")
                name = self.names.of(p, p.name)
                block = self.names.fresh(f"{name}_block")
                binding = len(bindings)
                access = "" if p in writes else "readonly "
                head.append(f"layout(std430, binding = {binding}) {access}buffer {block} {{ {t} {name}[]; }};")
                self.buffers[p] = name
                bindings.append((p, binding, p in writes))
            else:
                t = glsl_type(p.dtype, f"{self.where}: scalar {p.name}")
                if p not in scalar_keys:
                    raise BuildError(f"{self.where}: scalar {p.name} is not a parameter of the host function")
                name = self.names.of(p, p.name)
                head.append(f"uniform {t} {name};")
                scalars.append((scalar_keys[p], name, p.dtype))
        for var, dtype, count in k.attrs.get("shared", ()):
            t = glsl_type(dtype, f"{self.where}: shared buffer {var.name}")
            if not isinstance(count, int):
                count = _const_count(Allocate(var, dtype, (count,), None, Evaluate(E.IntImm("int32", 0))),
                                     self.where)
            name = self.names.of(var, var.name)
            self.arrays[var] = name
            head.append(f"shared {t} {name}[{count}];")
        launch = k.attrs.get("launch", {})
        for tag, var in k.attrs.get("thread_vars", {}).items():
            kind, _, axis = tag.partition(".")
            builtin = {"blockIdx": "gl_WorkGroupID", "threadIdx": "gl_LocalInvocationID"}.get(kind)
            if builtin is None or axis not in _AXES:
                raise BuildError(f"{self.where}: thread tag {tag!r} has no GLSL counterpart")
            name = self.names.of(var, tag.replace(".", "_"))
            self.emit(f"int {name} = int({builtin}.{axis});")
            ext = launch.get(tag)
            if ext is not None:
                self.ana.bind(var, Range(E.IntImm("int32", 0), ext))
        self.stmt(k.body)
        preamble = ["#version 430", f"// kernel {k.name}: one work group per block, one invocation per thread"]
        return shader_source(preamble, head, self.helpers, self.lines), bindings, scalars


def _const_count(s, where):
    n = 1
    for x in s.extents:
        if not isinstance(x, (int, E.IntImm)):
            raise BuildError(f"{where}: buffer {s.buffer_var.name} has symbolic size {x}; GLSL arrays need "
                             "a constant size")
        n *= x if isinstance(x, int) else x.value
    return n


def _host_steps(host):
    """(temporaries [(Var, dtype, extents)], launched kernel names in order) from the host function."""
    temps, names = [], []

    def walk(s):
        if isinstance(s, SeqStmt):
            for x in s.seq:
                walk(x)
        elif isinstance(s, Allocate):
            temps.append((s.buffer_var, s.dtype, tuple(s.extents)))
            walk(s.body)
        elif isinstance(s, AttrStmt):
            walk(s.body)
        elif isinstance(s, Evaluate):
            v = s.value
            if isinstance(v, E.Call) and v.op == "launch_kernel":
                names.append(v.args[0].value)
            elif not is_no_op(s):
                raise BuildError(f"{host.name}: the host code evaluates {v}, which the OpenGL runtime cannot run")
        elif isinstance(s, LetStmt):
            raise BuildError(f"{host.name}: the host code binds {s.var.name}; the OpenGL runtime runs only "
                             "kernel launches")
        else:
            raise BuildError(f"{host.name}: the host code has a {type(s).__name__} around the kernel launches; "
                             "the OpenGL runtime runs only a sequence of launches")
    walk(host.body)
    return temps, names


def compute_module(mod):
    """Build every host function of a module from ``lower_for_device`` into GLFunctions."""
    split = getattr(mod, "device_split", None)
    if split is None:
        raise BuildError("target 'opengl -compute' needs a module lowered for the device; build it with "
                         "tvm.build(s, args, 'opengl -compute') or tvm.lower(s, args, target='opengl -compute')")
    host = split.host
    check_dtypes(host, "the OpenGL compute target")
    spec, bufs, keys = params_of(host)
    temps_ir, order = _host_steps(host)
    refs = {v: ("param", i) for v, i in bufs.items()}
    dtypes = {b.data: b.dtype for b in host.buffer_map.values()}
    dtypes.update({p: host.buffer_map[p].dtype for p in host.params if p in host.buffer_map})
    temps = []
    for var, dtype, extents in temps_ir:
        refs[var] = ("temp", len(temps))
        dtypes[var] = dtype
        temps.append(TempSpec(var.name, dtype, size_fn(extents, keys, f"{host.name}: intermediate {var.name}")))
    kernels = {k.name: k for k in split.kernels}
    launches = {l.name: l for l in split.launches}
    limits = _limits()
    steps, texts, written = [], [], set()
    for name in order:
        k = kernels.get(name)
        if k is None:
            raise BuildError(f"{host.name}: launches {name}, which the lowering did not produce")
        launch = launches[name] if name in launches else None
        grid = launch.grid() if launch is not None else _axes(k.attrs.get("launch", {}), "blockIdx")
        block = launch.block() if launch is not None else _axes(k.attrs.get("launch", {}), "threadIdx")
        local = []
        for axis, ext in zip(_AXES, block):
            if not isinstance(ext, E.IntImm):
                raise BuildError(f"{name}: threadIdx.{axis} has extent {ext}; a compute shader's work-group "
                                 "size must be a constant (split the axis by a constant factor)")
            local.append(ext.value)
        _check_limits(name, local, k.attrs.get("shared_bytes", 0), limits)
        kdtypes = dict(dtypes)
        for p in k.params:
            b = k.buffer_map.get(p)
            if p.dtype == "handle" and b is not None:
                kdtypes[p] = b.dtype
            if p.dtype == "handle" and p not in refs:
                raise BuildError(f"{name}: buffer parameter {p.name} is neither an argument nor an "
                                 "intermediate of the host function")
        src, bindings, scalars = ComputeWriter(k, [v for v in keys]).write(local, kdtypes, keys)
        groups = [size_fn((g,), keys, f"{name}: blockIdx extent") for g in grid]
        for p, _, w in bindings:
            if w and refs[p][0] == "param":
                written.add(refs[p][1])
        steps.append(ComputeStep(name, src, [(refs[p], b, w) for p, b, w in bindings], scalars,
                                 _grid_fn(groups)))
        texts.append(src)
    if not steps:
        raise BuildError(f"{host.name}: no kernel to run for the OpenGL compute target")
    host_text = [f"// {host.name}: {spec.signature()}"]
    for st in steps:
        host_text.append(f"//   dispatch {st.name}")
    fn = GLFunction(spec, steps, temps, written)
    fn.device_split = split        # the kernels as AST3, for the thread-level simulator
    return fn, texts, "\n".join(host_text) + "\n", host.name


def _grid_fn(groups):
    def grid(env):
        return tuple(g(env) for g in groups)
    return grid


def _axes(launch, kind):
    return tuple(launch.get(f"{kind}.{a}", E.IntImm("int32", 1)) for a in _AXES)


def _limits():
    """The device's compute limits, or None when there is no device (build-only)."""
    if not glc.available():
        return None
    ctx = glc.context()
    if not ctx.compute:
        return None
    return ctx


def _check_limits(name, local, shared_bytes, ctx):
    if ctx is None:
        return
    total = local[0] * local[1] * local[2]
    if total > ctx.max_work_group_invocations:
        raise BuildError(f"{name}: {total} threads per block ({' x '.join(map(str, local))}); this OpenGL "
                         f"device runs at most {ctx.max_work_group_invocations} invocations per work group")
    for axis, n, m in zip(_AXES, local, ctx.max_work_group_size):
        if n > m:
            raise BuildError(f"{name}: threadIdx.{axis} extent {n} exceeds this OpenGL device's limit {m}")
    if shared_bytes > ctx.max_shared_memory:
        raise BuildError(f"{name}: {shared_bytes} bytes of shared memory; this OpenGL device allows "
                         f"{ctx.max_shared_memory} per work group")
