"""Running compiled OpenGL functions: fragment passes and compute dispatches.

A ``GLFunction`` is a list of steps over the function's buffers (its tensor
arguments and the intermediate tensors, which it allocates per call size):
a ``FragmentStep`` draws one triangle over the output texture(s) with its
program, inputs bound as textures; a ``ComputeStep`` dispatches work groups
with buffers bound as shader storage.  Arguments are checked against the
``FuncSpec`` before any GL call: count, NDArray on the OpenGL device, dtype,
shape (symbolic dims bound from the first array that has them), and written
buffers not aliased with another argument.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BuildError, DeviceError, RuntimeArgError
from . import opengl_context as glc
from .device import Device
from .module import ArgBinder, Module
from .opengl_ndarray import GLArray


@dataclass
class TempSpec:
    """An intermediate tensor: its name, dtype and element count as ``size(env) -> int``."""
    name: str
    dtype: str
    size: object


@dataclass
class FragmentStep:
    """One fragment pass.  Buffers are refs: ("param", index) or ("temp", index)."""
    name: str
    vertex: str
    fragment: str
    outputs: list
    textures: list = field(default_factory=list)   # (ref, sampler uniform, width uniform)
    scalars: list = field(default_factory=list)    # (var key, uniform name, dtype)
    out_width: str = "tl_out_width"
    program: int = 0
    locations: dict = field(default_factory=dict)


@dataclass
class ComputeStep:
    """One compute dispatch: ``groups(env) -> (x, y, z)`` work groups of the shader's local size."""
    name: str
    source: str
    buffers: list                                  # (ref, binding, written)
    scalars: list = field(default_factory=list)    # (var key, uniform name, dtype)
    groups: object = None
    program: int = 0
    locations: dict = field(default_factory=dict)


def _compile(GL, sources, what):
    """Link a program from [(shader type enum, source)]; BuildError with the driver's log on failure."""
    prog = GL.glCreateProgram()
    shaders = []
    try:
        for kind, src in sources:
            sh = GL.glCreateShader(kind)
            GL.glShaderSource(sh, src)
            GL.glCompileShader(sh)
            if not GL.glGetShaderiv(sh, GL.GL_COMPILE_STATUS):
                log = GL.glGetShaderInfoLog(sh)
                log = log.decode(errors="replace") if isinstance(log, bytes) else str(log)
                GL.glDeleteShader(sh)
                numbered = "\n".join(f"{k + 1:4d}  {line}" for k, line in enumerate(src.splitlines()))
                raise BuildError(f"{what}: the GLSL compiler rejected the shader:\n{log.strip()}\n{numbered}")
            GL.glAttachShader(prog, sh)
            shaders.append(sh)
        GL.glLinkProgram(prog)
        if not GL.glGetProgramiv(prog, GL.GL_LINK_STATUS):
            log = GL.glGetProgramInfoLog(prog)
            log = log.decode(errors="replace") if isinstance(log, bytes) else str(log)
            raise BuildError(f"{what}: linking the GLSL program failed: {log.strip()}")
    except BaseException:
        GL.glDeleteProgram(prog)
        raise
    finally:
        for sh in shaders:
            GL.glDetachShader(prog, sh)
            GL.glDeleteShader(sh)
    return int(prog)


class GLFunction(ArgBinder):
    """A compiled OpenGL function; call it with NDArrays on ``tvmlab.opengl(0)``."""
    _device_type = "opengl"
    _device_text = "opengl(0)"
    _wrap = "tvmlab.nd.array(x, tvmlab.opengl(0))"

    def __init__(self, spec, steps, temps, written):
        self.spec = spec
        self.name = spec.name
        self.steps = list(steps)
        self.temps = list(temps)
        self.written = set(written)        # indices of parameters the function writes
        self._written = sorted(self.written)
        self._all = list(range(len(spec.params)))
        self._temp_cache = {}
        self._compiled = False
        self.device = Device("opengl", 0)
        if self.device.exist:
            self.compile()

    def __repr__(self):
        return f"<GLFunction {self.spec.signature()}, {len(self.steps)} step(s)>"

    def compile(self):
        if self._compiled:
            return
        with glc.gl() as ctx:
            GL = ctx.GL
            for st in self.steps:
                what = f"{self.name}, pass {st.name}"
                if isinstance(st, FragmentStep):
                    if len(st.outputs) > ctx.max_draw_buffers:
                        raise BuildError(f"{what} writes {len(st.outputs)} tensors; this device renders to at "
                                         f"most {ctx.max_draw_buffers}")
                    if len(st.textures) > ctx.max_texture_units:
                        raise BuildError(f"{what} reads {len(st.textures)} tensors; this device binds at most "
                                         f"{ctx.max_texture_units} textures per pass")
                    st.program = _compile(GL, [(GL.GL_VERTEX_SHADER, st.vertex),
                                               (GL.GL_FRAGMENT_SHADER, st.fragment)], what)
                    names = [st.out_width] + [s for _, s, _ in st.textures] + [w for _, _, w in st.textures]
                else:
                    if not ctx.compute:
                        raise BuildError(f"{what}: compute shaders need OpenGL 4.3; this device has "
                                         f"{ctx.version}")
                    st.program = _compile(GL, [(GL.GL_COMPUTE_SHADER, st.source)], what)
                    names = []
                names += [u for _, u, _ in st.scalars]
                st.locations = {n: GL.glGetUniformLocation(st.program, n) for n in names}
        self._compiled = True

    # ------------------------------------------------------------ arguments
    def _native(self, a):
        return a

    def _check(self, args):
        """(arrays by parameter index, env {var key: int}) after checking every argument."""
        cargs, env = self._bind(args, full_env=True)
        return {i: cargs[i] for i, p in enumerate(self.spec.params) if p.kind == "buffer"
                and cargs[i] is not None}, env

    def _temporaries(self, env):
        out = []
        for k, t in enumerate(self.temps):
            try:
                n = int(t.size(env))
            except KeyError as e:
                raise RuntimeArgError(f"{self.name}: the size of {t.name} uses {e.args[0]}, which no argument "
                                      "determines") from None
            if n < 0:
                raise RuntimeArgError(f"{self.name}: intermediate {t.name} would have {n} elements")
            key = (k, n)
            arr = self._temp_cache.get(key)
            if arr is None:
                arr = self._temp_cache[key] = GLArray((n,), t.dtype, self.device)
            out.append(arr)
        return out

    # ------------------------------------------------------------ running
    def __call__(self, *args):
        self.prepare(*args)()

    def prepare(self, *args):
        """Check ``args`` once; return a zero-argument callable that runs the function."""
        self.device.require()
        self.compile()
        bufs, env = self._check(args)
        temps = self._temporaries(env)

        def resolve(ref):
            return bufs[ref[1]] if ref[0] == "param" else temps[ref[1]]
        plan = [(st, [resolve(r) for r in (st.outputs if isinstance(st, FragmentStep) else
                                           [b[0] for b in st.buffers])],
                 [resolve(r) for r, _, _ in st.textures] if isinstance(st, FragmentStep) else None)
                for st in self.steps]
        for st, outs, _ in plan:
            if isinstance(st, FragmentStep) and len({o.layout for o in outs}) > 1:
                raise RuntimeArgError(f"{self.name}: the outputs of pass {st.name} have different texture "
                                      f"layouts {[o.layout for o in outs]} (made under different "
                                      "set_texture_width settings)")

        def run():
            with glc.gl() as ctx:
                for st, arrays, textures in plan:
                    if isinstance(st, FragmentStep):
                        self._draw(ctx, st, arrays, textures, env)
                    else:
                        self._dispatch(ctx, st, arrays, env)
                ctx.GL.glUseProgram(0)
        return run

    def _uniforms(self, GL, st, env):
        for key, name, dtype in st.scalars:
            loc = st.locations[name]
            if loc < 0:
                continue
            v = env[key]
            if dtype == "float32":
                GL.glUniform1f(loc, float(v))
            elif dtype == "uint32":
                GL.glUniform1ui(loc, int(v))
            else:
                GL.glUniform1i(loc, int(v))

    def _draw(self, ctx, st, outs, textures, env):
        GL = ctx.GL
        GL.glUseProgram(st.program)
        for unit, ((_, sampler, width), arr) in enumerate(zip(st.textures, textures)):
            GL.glActiveTexture(GL.GL_TEXTURE0 + unit)
            GL.glBindTexture(GL.GL_TEXTURE_2D, arr.texture(ctx))
            GL.glUniform1i(st.locations[sampler], unit)
            GL.glUniform1i(st.locations[width], arr.layout[0])
        w, h = outs[0].layout
        GL.glUniform1i(st.locations[st.out_width], w)
        self._uniforms(GL, st, env)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, ctx.fbo)
        n_attached = max(len(outs), getattr(ctx, "attached", 0))
        for k in range(n_attached):
            tex = outs[k]._tex if k < len(outs) else 0
            GL.glFramebufferTexture2D(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0 + k, GL.GL_TEXTURE_2D, tex, 0)
        ctx.attached = len(outs)
        GL.glDrawBuffers(len(outs), _draw_buffers(GL, len(outs)))
        status = GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER)
        if status != GL.GL_FRAMEBUFFER_COMPLETE:
            raise DeviceError(f"{self.name}, pass {st.name}: the output textures cannot be rendered to "
                              f"(framebuffer status {int(status):#x})")
        GL.glViewport(0, 0, w, h)
        GL.glDisable(GL.GL_BLEND)
        GL.glDisable(GL.GL_DITHER)
        GL.glBindVertexArray(ctx.vao)
        GL.glDrawArrays(GL.GL_TRIANGLES, 0, 3)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        for unit in range(len(textures)):
            GL.glActiveTexture(GL.GL_TEXTURE0 + unit)
            GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        GL.glActiveTexture(GL.GL_TEXTURE0)
        for o in outs:
            o.wrote("tex")

    def _dispatch(self, ctx, st, arrays, env):
        GL = ctx.GL
        groups = tuple(int(g) for g in st.groups(env))
        if any(g <= 0 for g in groups):
            for (_, _, written), arr in zip(st.buffers, arrays):
                if written:
                    arr.buffer(ctx)
                    arr.wrote("buf")
            return
        limit = ctx.max_work_group_count
        if any(g > m for g, m in zip(groups, limit)):
            raise DeviceError(f"{self.name}, kernel {st.name}: {groups} work groups exceed this device's "
                              f"limit {limit}")
        GL.glUseProgram(st.program)
        for (_, binding, _), arr in zip(st.buffers, arrays):
            GL.glBindBufferBase(GL.GL_SHADER_STORAGE_BUFFER, binding, arr.buffer(ctx))
        self._uniforms(GL, st, env)
        GL.glDispatchCompute(*groups)
        GL.glMemoryBarrier(GL.GL_SHADER_STORAGE_BARRIER_BIT | GL.GL_TEXTURE_UPDATE_BARRIER_BIT
                           | GL.GL_PIXEL_BUFFER_BARRIER_BIT | GL.GL_BUFFER_UPDATE_BARRIER_BIT)
        for (_, _, written), arr in zip(st.buffers, arrays):
            if written:
                arr.wrote("buf")


_DRAW_BUFFERS = {}


def _draw_buffers(GL, n):
    """The enum array for glDrawBuffers (made once: PyOpenGL converts lists slowly)."""
    arr = _DRAW_BUFFERS.get(n)
    if arr is None:
        arr = _DRAW_BUFFERS[n] = np.array([GL.GL_COLOR_ATTACHMENT0 + k for k in range(n)], dtype=np.uint32)
    return arr


class GLModule(Module):
    """The module of an OpenGL build: functions, GLSL source, and the GLSL device module imported."""

    def __init__(self, functions, entry_name, sources, aliases, device_sources):
        super().__init__("opengl", functions, entry_name, sources, aliases)
        self.imported_modules = [Module("glsl", {}, None, device_sources, {"": "glsl"})]


__all__ = ["GLFunction", "GLModule", "FragmentStep", "ComputeStep", "TempSpec"]
