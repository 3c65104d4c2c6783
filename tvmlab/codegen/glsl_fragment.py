"""GLSL fragment shaders (``#version 330 core``) for the passes of an ``opengl()`` schedule.

One shader per pass.  The fragment at pixel (x, y) of the output's texture
computes flat element ``y * width + x`` (pixels past the end are discarded):
inputs are textures read with ``texelFetch`` through one small load function
per tensor, scalars and shape variables are uniforms, and each output is a
local variable copied to its render target (``layout(location = k) out``) at
the end, so a reduction can read and update its own element.  Reading any
other element of a tensor the pass writes is impossible for a fragment
shader and is reported as a BuildError.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BuildError
from ..ir import dtype as dt
from ..ir import expr as E
from ..ir.arith import Analyzer
from ..ir.arith.interval import POS_INF, IntervalSet
from ..ir.functor import IRVisitor
from ..ir.tensor import Range
from ..lower.glsl_passes import is_pixel_index
from .glsl_expr import Names, glsl_type, shader_source
from .glsl_stmt import StmtWriter

VERTEX_SHADER = """#version 330 core
// One triangle that covers the viewport; the fragment shader does the work.
void main() {
    vec2 p = vec2(float((gl_VertexID & 1) << 2) - 1.0, float((gl_VertexID & 2) << 1) - 1.0);
    gl_Position = vec4(p, 0.0, 1.0);
}
"""

_SAMPLERS = {"float": "sampler2D", "int": "isampler2D", "uint": "usampler2D"}


@dataclass
class ShaderInfo:
    """What the runtime needs to run one pass."""
    name: str
    source: str
    outputs: list                                   # buffer Vars, render target k = position
    textures: list = field(default_factory=list)    # (buffer Var, sampler uniform, width uniform)
    scalars: list = field(default_factory=list)     # (Var, uniform name)
    out_width: str = "tl_out_width"


class _Loads(IRVisitor):
    def __init__(self):
        super().__init__()
        self.buffers = []
        self.vars = []

    def visit_Load(self, e):
        if e.buffer_var not in self.buffers:
            self.buffers.append(e.buffer_var)
        self.generic_visit(e)

    def visit_Var(self, v):
        if v not in self.vars:
            self.vars.append(v)


class FragmentWriter(StmtWriter):
    """Writes the fragment shader of one pass."""

    def __init__(self, func, fpass, dtypes, scalars):
        self.func, self.p = func, fpass
        self.where = f"{func.name}, OpenGL pass {fpass.name}"
        self.dtypes = dtypes            # buffer Var -> element dtype
        self.scalar_vars = scalars      # Vars that are uniforms (parameters, shape variables)
        self.names = Names()
        self.ana = Analyzer()
        self.helpers = set()
        self.lines = []
        self.indent = 1
        self.locals = {}                # local Allocate var -> GLSL array name
        self.outs = {}                  # output buffer Var -> local variable name
        for v in scalars:
            if _is_shape(func, v):      # array dimensions are never negative
                self.ana.bind(v, IntervalSet(E.IntImm("int32", 0), POS_INF))

    # ------------------------------------------------------------ loads
    def load(self, e):
        b = e.buffer_var
        if b in self.outs:
            if not is_pixel_index(e.index, self.p.pixel, self.ana):
                raise BuildError(f"{self.where}: reads {b.name}[{e.index}], an element this pass is writing "
                                 "other than its own; a fragment shader can only read back its own pixel "
                                 "(make the read a separate stage, or use target 'opengl -compute')")
            return self.outs[b]
        if b in self.locals:
            return f"{self.locals[b]}[{self.expr(e.index)}]"
        name = self.names.get(b)
        if name is None:
            raise BuildError(f"{self.where}: buffer {b.name} is read but is not an input of the pass")
        return f"tl_load_{name}({self.expr(e.index)})"

    def check_loop(self, s):
        if s.kind == "vectorized":
            raise BuildError(f"{self.where}: loop {s.loop_var.name} is vectorized; the OpenGL target has no "
                             "vector lanes, do not vectorize for it")
        if s.kind == "thread_binding":
            raise BuildError(f"{self.where}: loop {s.loop_var.name} is bound to a thread; use target "
                             "'opengl -compute' for thread bindings")
        if s.annotation("pragma_opengl") is not None:
            raise BuildError(f"{self.where}: stage loop {s.loop_var.name} is nested inside another pass; "
                             "each opengl() stage must be computed at the root")

    def _s_Store(self, s):
        b = s.buffer_var
        if b in self.locals:
            self.emit(f"{self.locals[b]}[{self.expr(s.index)}] = {self.expr(s.value)};")
            return
        if b not in self.outs:
            raise BuildError(f"{self.where}: writes {b.name}, which is not an output of the pass")
        if not is_pixel_index(s.index, self.p.pixel, self.ana):
            raise BuildError(f"{self.where}: writes {b.name}[{s.index}], not the element of its own pixel "
                             f"({self.p.pixel.name if self.p.pixel is not None else 0}); schedule the stage "
                             "with s[X].opengl() and no other loop transformations of its data axes")
        if s.predicate is not None and not (isinstance(s.predicate, E.IntImm) and s.predicate.value):
            raise BuildError(f"{self.where}: predicated stores are not supported by the OpenGL target")
        self.emit(f"{self.outs[b]} = {self.expr(s.value)};")

    def _s_Allocate(self, s):
        if s.scope not in ("local", "warp") and s.scope != "":
            raise BuildError(f"{self.where}: buffer {s.buffer_var.name} of scope {s.scope!r} inside a pass; "
                             "fragment passes keep only 'local' arrays (use target 'opengl -compute' for "
                             "shared memory)")
        n = 1
        for x in s.extents:
            if not isinstance(x, E.IntImm):
                raise BuildError(f"{self.where}: local buffer {s.buffer_var.name} has symbolic size {x}; "
                                 "GLSL arrays need a constant size")
            n *= x.value
        t = glsl_type(s.dtype, f"{self.where}: local buffer {s.buffer_var.name}")
        name = self.names.of(s.buffer_var, s.buffer_var.name)
        self.locals[s.buffer_var] = name
        self.emit(f"{t} {name}[{n}];")
        self.stmt(s.body)

    # ------------------------------------------------------------ the shader
    def write(self):
        p = self.p
        info = ShaderInfo(p.name, "", list(p.outputs))
        loads = _Loads()
        loads.visit(p.body)
        for _, value in p.lets:
            loads.visit(value)
        loads.visit(p.extent)
        head = []
        for v in self.scalar_vars:
            if v in loads.vars:
                name = self.names.of(v, v.name)
                head.append(f"uniform {glsl_type(v.dtype, f'{self.where}: scalar {v.name}')} {name};")
                info.scalars.append((v, name))
        for b in loads.buffers:
            if b in p.outputs or b not in self.dtypes:
                continue
            t = glsl_type(self.dtypes[b], f"{self.where}: tensor {b.name}")
            name = self.names.of(b, b.name)
            width = self.names.fresh(f"{name}_width")
            head.append(f"uniform {_SAMPLERS[t]} {name};")
            head.append(f"uniform int {width};")
            head.append(f"{t} tl_load_{name}(int i) {{ return texelFetch({name}, ivec2(i % {width}, "
                        f"i / {width}), 0).r; }}")
            info.textures.append((b, name, width))
        outs = []
        for k, b in enumerate(p.outputs):
            t = glsl_type(self.dtypes[b], f"{self.where}: output {b.name}")
            local = self.names.of(b, b.name)
            target = self.names.fresh(f"{local}_out")
            self.outs[b] = local
            head.append(f"layout(location = {k}) out {t} {target};")
            outs.append((t, local, target))
        pixel = self.names.of(p.pixel, p.pixel.name) if p.pixel is not None else self.names.fresh("pixel")
        if p.pixel is not None:
            self.ana.bind(p.pixel, Range(E.IntImm("int32", 0), p.extent))
        self.emit(f"int {pixel} = int(gl_FragCoord.y) * tl_out_width + int(gl_FragCoord.x);")
        self.emit(f"if ({pixel} >= {self.expr(p.extent)}) discard;")
        for t, local, _ in outs:
            self.emit(f"{t} {local} = {t}(0);")
        for var, value in p.lets:
            name = self.names.of(var, var.name)
            self.emit(f"{glsl_type(var.dtype, f'{self.where}: let {var.name}')} {name} = {self.expr(value)};")
        self.stmt(p.body)
        for _, local, target in outs:
            self.emit(f"{target} = {local};")
        preamble = ["#version 330 core", f"// pass {p.name}: one fragment per element of "
                    f"{', '.join(b.name for b in p.outputs)}", "precision highp float;",
                    "precision highp int;", "uniform int tl_out_width;"]
        info.source = shader_source(preamble, head, self.helpers, self.lines)
        return info


def _is_shape(func, v):
    for buf in func.buffer_map.values():
        for d in buf.shape:
            if d is v:
                return True
    return False


def check_dtypes(func, what):
    """Every tensor argument must have a GLSL type: BuildError naming the first one that does not."""
    for buf in func.buffer_map.values():
        if dt.canonical(buf.dtype) not in ("float32", "int32", "uint32"):
            raise BuildError(f"{func.name}: tensor {buf.name} has dtype {buf.dtype}; {what} supports "
                             "float32, int32 and uint32 tensors")
