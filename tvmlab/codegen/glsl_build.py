"""build_opengl: AST3 -> GLSL shaders -> a runtime module that runs them on the OpenGL device.

Target spellings:
  ``"opengl"``           fragment-shader mode (TVM's OpenGL design): every stage
                         scheduled with ``s[X].opengl()`` is one pass that renders
                         one pixel per output element into a texture.
  ``"opengl -compute"``  compute-shader mode (GLSL 430): the GPU lowering's
                         kernels (thread bindings, shared memory, barriers) as
                         compute shaders over storage buffers.

``mod.get_source()`` (and ``mod.imported_modules[0].get_source()``) give the
GLSL of every pass; ``get_source("host")`` the order of passes and the
textures/buffers each one reads and writes.  Shaders are compiled at build
time when the device exists, so GLSL errors are BuildErrors there; without
a device the build still succeeds and calling raises DeviceError.
"""
from __future__ import annotations

from ..errors import BuildError, LoweringError
from ..lower.glsl_passes import split_passes
from ..lower.verify_gpu import DEFAULT_LIMITS
from ..runtime.opengl_module import FragmentStep, GLFunction, GLModule, TempSpec
from .glsl_fragment import VERTEX_SHADER, FragmentWriter, check_dtypes
from .common import functions_of, refuse_vector_elements
from .glsl_params import params_of, size_fn
from .registry import Target, register_target

_OPTIONS = ("compute",)
_IGNORED = ("keys", "tag", "model")


def fragment_function(func):
    """GLFunction and GLSL text of ``func`` in fragment mode."""
    check_dtypes(func, "the OpenGL target")
    spec, bufs, keys = params_of(func)
    try:
        prog = split_passes(func)
    except LoweringError as e:
        raise BuildError(str(e)) from None
    dtypes = {b.data: b.dtype for b in func.buffer_map.values()}
    temps, refs = [], {}
    for var, dtype, extents in prog.intermediates:
        refs[var] = ("temp", len(temps))
        dtypes[var] = dtype
        temps.append(TempSpec(var.name, dtype, size_fn(extents, keys, f"{func.name}: intermediate {var.name}")))
    for v, i in bufs.items():
        refs[v] = ("param", i)
    if not prog.passes:
        raise BuildError(f"{func.name}: nothing to compute for the OpenGL target")
    steps, texts, written = [], [], set()
    scalars = list(keys)
    for p in prog.passes:
        info = FragmentWriter(func, p, dtypes, scalars).write()
        for b in info.outputs:
            if b not in refs:
                raise BuildError(f"{func.name}: pass {p.name} writes {b.name}, which is neither an argument nor "
                                 "an intermediate tensor")
            if refs[b][0] == "param":
                written.add(refs[b][1])
        steps.append(FragmentStep(
            info.name, VERTEX_SHADER, info.source, [refs[b] for b in info.outputs],
            [(refs[b], s, w) for b, s, w in info.textures],
            [(keys[v], u, v.dtype) for v, u in info.scalars], info.out_width))
        texts.append(info.source)
    host = _host_text(func, steps, temps, spec)
    return GLFunction(spec, steps, temps, written), texts, host


def _host_text(func, steps, temps, spec):
    names = {("param", i): p.name for i, p in enumerate(spec.params)}
    names.update({("temp", k): t.name for k, t in enumerate(temps)})
    lines = [f"// {func.name}: {spec.signature()}"]
    for t in temps:
        lines.append(f"//   intermediate texture {t.name}: {t.dtype}")
    for k, st in enumerate(steps):
        ins = ", ".join(names[r] for r, _, _ in st.textures) or "nothing"
        outs = ", ".join(names[r] for r in st.outputs)
        lines.append(f"//   pass {k}: draw {outs} from {ins}")
    return "\n".join(lines) + "\n"


def build_opengl(mod, target="opengl"):
    """Compile an AST3 IRModule for the OpenGL device; returns a runtime module."""
    target = Target(target)
    if target.kind != "opengl":
        raise BuildError(f"build_opengl builds for target 'opengl', got {str(target)!r}")
    compute = target.options.get("compute", False)
    if compute not in (True, False, "1", "0", "true", "false"):
        raise BuildError(f"-compute takes no value (or true/false), got {compute!r}")
    compute = compute in (True, "1", "true")
    known = _OPTIONS + (tuple(DEFAULT_LIMITS) if compute else ())
    unknown = [k for k in target.options if k not in known and k not in _IGNORED]
    if unknown:
        raise BuildError(f"unknown option(s) {', '.join('-' + k for k in unknown)} for target {str(target)!r}; "
                         f"the opengl target knows {', '.join('-' + k for k in known)}"
                         + ("" if compute else " (and, with -compute, the GPU limits such as "
                            "-max_threads_per_block)"))
    refuse_vector_elements(_prim_funcs(mod), "opengl")
    functions, texts, hosts = {}, [], []
    if compute:
        from .glsl_compute import compute_module
        fn, texts, host, name = compute_module(mod)
        functions[name], hosts = fn, [host]
    else:
        for name, f in functions_of(mod, "build_opengl").items():
            fn, srcs, host = fragment_function(f)
            functions[name] = fn
            texts += srcs
            hosts.append(host)
    glsl = "\n".join(texts)
    sources = {"glsl": glsl, "host": "\n".join(hosts)}
    aliases = {"": "glsl", "opengl": "glsl", "frag" if not compute else "comp": "glsl"}
    return GLModule(functions, next(iter(functions)), sources, aliases, {"glsl": glsl})


def _prim_funcs(mod):
    """The PrimFuncs of ``mod``: an IRModule or PrimFunc, or a GPU-lowered module's host/device split."""
    split = getattr(mod, "device_split", None)
    if split is not None:
        return [split.host, *split.kernels]
    return list(functions_of(mod, "build_opengl").values())


def _device_lowering(target):
    """Compute mode goes through the GPU lowering (host/device split); fragment mode does not."""
    return target.options.get("compute", False) in (True, "1", "true")


build_opengl.device_lowering = _device_lowering
register_target("opengl", build_opengl, keys=("opengl", "gpu"), override=True)
